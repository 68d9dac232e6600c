"""Recovery: a failed, stuck or bad node is left out or replaced and the job goes on as a new generation.

This room owns what happens between generations of one job (docs/recovery.md):
``decide.py`` (node 0's pure decision: who trains next, who waits as a spare,
who is left out, or why the job stops), ``generations.py`` (the entrypoint's
loop on every node: check in, launch, watch, again) and ``checkpoints.py``
(the newest *complete* checkpoint, a separate helper's). It may import the
entrypoint's check-in, heartbeat, running and stall rooms; nothing outside the
entrypoint imports it except through ``__main__.run``. Stdlib only.
"""
