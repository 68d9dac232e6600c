"""Running: what happens at and after the exec, and the record of a run on the node.

Owns the wait for the master (``wait.py``), rank 0's check that the master is
itself (``selfcheck.py``), the supervised launcher as a child (``supervise.py``,
its output tail in ``capture.py``; under recovery the next one held ready,
``warm.py`` and the held process's side in ``warmstart/``), every rank under a profiler
(``profile.py``) and the run records under ``$TMPDIR/nodeweave`` (``runstate.py``).
May import the standard library, ``..errors``, ``..model`` and ``..detection``;
``runstate.py`` loads ``..explain`` lazily to record the plan (``explain``
imports only ``model``). Planning calls down into it (``profile.wrap_ranks``).
"""
