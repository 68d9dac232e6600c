"""The stall watch: is every rank making progress, and which one is not.

Owns the ranks' hook (``rankhook/``: a ``sitecustomize`` on the ranks'
``PYTHONPATH`` that counts collectives in a per-rank mmap, dumps stacks on
a signal and reads torch's flight recorder), each node's view of its ranks
(``ranks.py``), node 0's judgement (``judge.py``), the grouped stacks
(``stacks.py``), the flight recorder's lines (``flight.py``), the one report
every node prints (``report.py``), its messages on the heartbeat
(``exchange.py``, ``watcher.py``), a node's watch without a heartbeat
(``local.py``) and the launch-time set-up (``setup.py``). May import the
standard library, ``..errors`` and ``..model`` (never ``..checkin``, which
imports this room for the heartbeat's messages); never torch
(the hook touches torch only inside the rank, after the script imported it).
"""
