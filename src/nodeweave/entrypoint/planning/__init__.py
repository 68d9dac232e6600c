"""Planning: from settings and a detected ``Node`` to a ``Plan`` (rank, environment, launcher).

Owns the renderer-to-entrypoint contract (``contract.py``: every
``NODEWEAVE_*`` setting), the command line (``settings.py``,
``launcher_options.py``), the rank sources (``sources.py``, with ``slurm.py``),
the topology and its cross-checks (``topology.py``, ``consistency.py``; the
Kubernetes facts arrive as data, read by ``..detection.kube``), the NCCL/RCCL rules and environment (``rules.py``,
``policy.py``), the launcher's command line (``launch.py``) and whether the
check-in runs (``exchange_plan.py``). Pure decisions: may import the standard
library, ``..errors``, ``..model``, ``..world`` (the world size and rank
offsets), ``..switch``, ``..detection`` and (lazily, for the argv it wraps)
``..running``; never ``..checkin``.
"""
