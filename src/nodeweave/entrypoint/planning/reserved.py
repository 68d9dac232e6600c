"""The variables a user may not set: nodeweave's own and the platform's, under every spelling.

Stdlib only and free of the spec, so the spec's ``env:``, ``run -e``, ``exec -e`` and the sweeps of
``run`` and ``bench`` (whose options module also rides in the image's zipapp) share one rule.
"""

# Variables the renderers set from the spec; a user value would silently fight them.
RESERVED_ENV = ("NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT", "POD_NAME", "POD_NAMESPACE", "POD_IP")
# torchrun reads its flags from PET_<FLAG> too: the same settings under another spelling.
TORCHRUN_ENV = tuple(f"PET_{name}" for name in ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
                                                "NPROC_PER_NODE", "RDZV_ENDPOINT", "RDZV_BACKEND", "RDZV_ID",
                                                "MAX_RESTARTS"))
# NODEWEAVE_* variables no spec field sets: the user's to give (the check-in secret's file, a mounted Secret).
USER_NODEWEAVE_ENV = ("NODEWEAVE_JOB_TOKEN_FILE",)


def is_reserved(name: str) -> bool:
    """Whether ``name`` is nodeweave's or the platform's to set, under any spelling: every NODEWEAVE_* the
    entrypoint contract owns, NNODES/NODE_RANK/MASTER_ADDR/..., and torchrun's PET_* names for them.

    The one rule for every place a variable is taken (the spec's ``env:``, ``run -e``, ``exec -e``,
    ``--sweep``), so no spelling slips past one of them.
    """
    if name.startswith("NODEWEAVE_"):
        return name not in USER_NODEWEAVE_ENV
    return name in RESERVED_ENV or name in TORCHRUN_ENV
