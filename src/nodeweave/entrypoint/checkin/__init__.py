"""The check-in: every node meets node 0 before the launch, then a heartbeat while it runs.

Owns the wire format (``wire.py``), the hub and the client (``exchange.py``),
each node's fingerprint (``fingerprint.py``), the one verdict every node prints
(``verdict.py``), the heartbeat (``heartbeat.py``) and the steps around one
launch (``session.py``: ``CheckIn``, ``--status``, what ``--explain`` shows).
May import the standard library, ``..errors``, ``..model``, ``..detection``
and ``..planning`` (the contract's allowances, the exchange's plan);
``session.py`` calls ``..core.build_plan`` lazily for ``--status``.
"""

GATHERS = []  # callables told of every gather node 0 begins on its hub, when a heartbeat follows (metrics/: node 0
# serves /metrics and /status.json from its first check-in on, showing whom it waits for; walk12b B13)
HUB_WATCHES = []  # callables told of every heartbeat.HubWatch node 0 makes (metrics/: the job's live picture)
LINK_WATCHES = []  # and of every LinkWatch another node makes; each returns what rides on its beats, or None
# (metrics/: the node's GPU readings; ``LinkWatch.beat_extra``)
