"""How the source reaches a target's agent and how a payload travels: the wire of a sync.

Owns one target's session with its agent (``session.py``: the exec, the line
protocol, ``AGENT_PROGRAM`` assembled from ``..node``'s module sources), what
the agent reports it holds (``plan.py``: ``Manifest``), the tar payload and
its pipes (``payload.py``), node-to-node relay (``relay.py``), rsync's command
line (``rsync.py``) and the plain ``tar``/``find`` method for a target without
python3 (``plain.py``). May import ``nodeweave.remote``, ``..node`` and the
sync leaves ``..filters`` and ``..verify``; never ``..source``, ``..outcome``
or ``..display``.
"""
