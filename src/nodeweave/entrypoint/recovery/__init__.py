"""Recovery: the job survives a failed, stuck or bad node (issue 31).

This room owns what a restart needs to decide: which checkpoint is the newest
*complete* one (``checkpoints.py``, with the per-layout rules in
``layouts.py`` and the DCP ``.metadata`` reader in ``dcp_metadata.py``) and
whether restarts still make checkpoint progress (``progress.py``). The
recovery engine (generations, exclusion, spares, brakes) builds on these.

May import the standard library and the entrypoint's ``..model`` and
``..errors``; nothing above the entrypoint, and never torch: node 0 reads a
checkpoint folder by stat and small files only, before any rank starts.
"""
