"""The source side of a sync: what runs here, on the machine that holds the tree.

Owns one sync job's state (``job.py``), the run over every target
(``runner.py``), grouping targets that share one payload (``group.py``), the
delivery of each group (``deliver.py``), the head's tunnel link
(``headlink.py``) and what is known of each node's resident agent
(``registry.py``). May import ``nodeweave.remote``, ``..transport``, ``..node``
(shared constants) and the sync leaves (``..request``, ``..filters``,
``..verify``, ``..outcome``); only ``..display`` and the CLI import it.
"""
