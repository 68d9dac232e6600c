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
# What the launcher sets for each process it starts, from the plan (nodes, processes per node, each node's rank):
# a user value makes every node refuse its start (consistency.py, exit 3) or is replaced, so it is refused up front.
LAUNCHER_ENV = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                "ROLE_WORLD_SIZE")
# The image's search path a PATH must keep: nodeweave-entrypoint is in /usr/local/bin, python and the launchers
# in /opt/venv/bin (images/<variant>/Dockerfile); `env PATH=...` looks the entrypoint up in the new value.
IMAGE_PATH = ("/opt/venv/bin", "/usr/local/bin")
PATH_ACCEPTED = ("a PATH that keeps " + " and ".join(IMAGE_PATH) + ", e.g. /opt/mytools:" + ":".join(IMAGE_PATH)
                 + ":/usr/bin:/bin, or extend it in launcher.setup: export PATH=/opt/mytools:$PATH")
# NODEWEAVE_* variables no spec field sets: the user's to give (the check-in secret's file, a mounted Secret).
USER_NODEWEAVE_ENV = ("NODEWEAVE_JOB_TOKEN_FILE",)
# Where each reserved name's value comes from, for the one sentence that refuses it.
SET_FROM = {"NODE_RANK": "each node's rank", "NNODES": "the spec's nodes", "MASTER_ADDR": "node 0's address",
            "MASTER_PORT": "launcher.master_port", "POD_NAME": "Kubernetes (the pod's name)",
            "POD_NAMESPACE": "Kubernetes (the pod's namespace)", "POD_IP": "Kubernetes (the pod's address)"}


def is_reserved(name: str) -> bool:
    """Whether ``name`` is nodeweave's or the platform's to set, under any spelling: every NODEWEAVE_* the
    entrypoint contract owns, NNODES/NODE_RANK/MASTER_ADDR/..., torchrun's PET_* names for them, and what the
    launcher sets for each process (WORLD_SIZE, RANK, LOCAL_RANK, ...).

    The one rule for every place a variable is taken (the spec's ``env:``, ``run -e``, ``exec -e``,
    ``--sweep``), so no spelling slips past one of them.
    """
    if name.upper().startswith("NODEWEAVE_"):  # nodeweave_recovery too: the prefix in any case (walk18b B12)
        return name not in USER_NODEWEAVE_ENV
    return name in RESERVED_ENV or name in TORCHRUN_ENV or name in LAUNCHER_ENV


# The platform's and the launcher's reserved names a spec field sets (the NODEWEAVE_* ones: the contract's rows).
SPEC_FIELD_OF = {"NNODES": "nodes", "PET_NNODES": "nodes", "MASTER_PORT": "launcher.master_port",
                 "PET_MASTER_PORT": "launcher.master_port", "PET_NPROC_PER_NODE": "gpus_per_node",
                 "LOCAL_WORLD_SIZE": "gpus_per_node", "WORLD_SIZE": "nodes and gpus_per_node",
                 "GROUP_WORLD_SIZE": "nodes", "ROLE_WORLD_SIZE": "nodes and gpus_per_node",
                 "PET_RDZV_ID": "name", "PET_MAX_RESTARTS": "launcher.max_restarts"}
# Reserved names no spec field sets, with what the spec offers instead (a refusal never sends a user to look for a
# field that does not exist: walk6 W16).
NO_FIELD_INSTEAD = {
    "NODEWEAVE_STRAGGLER_FAULT": ("no spec field sets another count: recovery.straggler_is_fault: true makes a "
                                  "straggler named 10 checks in a row a fault"),
}


def instead(name: str) -> str:
    """What to change instead of giving reserved ``name`` (the spec field that sets it, read from the entrypoint's
    contract, or what sets it when no field does): the one remedy every refusal of a reserved name ends with."""
    from .contract import SETTINGS  # the table of spec fields; only read on a refusal

    meant = unknown_meant(name)
    if meant is not None:  # a typo: what the name meant, and what sets that (walk6 M1)
        if not meant:
            return "`nodeweave-entrypoint --help` lists the NODEWEAVE_* variables"
        from .variables import OUTPUT_MEANT

        if meant in OUTPUT_MEANT:  # near a name only set for the ranks: what to do instead (walk15b B7)
            return OUTPUT_MEANT[meant]
        if meant in USER_NODEWEAVE_ENV:  # the one a user sets: its own spelling, nothing else to set instead
            return f"did you mean {meant}? (the one NODEWEAVE_* variable a user sets)"
        then = instead(meant.split(" ")[0]) if meant.split(" ")[0] in _known() else ""
        return f"did you mean {meant}? {then}" if then else f"did you mean {meant}?"
    row = next((row for row in SETTINGS if row.variable == name), None)
    if name in NO_FIELD_INSTEAD:
        return NO_FIELD_INSTEAD[name]
    if row is not None and row.spec:
        return f"set the spec's {row.spec} instead"
    if row is not None:
        return (f"no spec field sets it: nodeweave sets it itself, or it is the entrypoint's {row.flag} for a "
                "node started by hand")
    if name in SPEC_FIELD_OF:
        return f"set the spec's {SPEC_FIELD_OF[name]} instead"
    if name.startswith("NODEWEAVE_"):
        return "no spec field sets it: nodeweave sets it itself"
    return "no spec field sets it: each node's plan (or the platform) gives it"


def _known():
    from .variables import KNOWN

    return KNOWN


def unknown_meant(name: str):
    """For a NODEWEAVE_* name nodeweave neither reads nor sets: the name it likely meant, or '' when none is near;
    None for any other name. The one table (``variables.KNOWN``) that judges the name exported in the shell too,
    so a typo given to ``-e`` or the spec's ``env:`` is called a typo there as well, never "nodeweave sets it"."""
    from .variables import unknown_variables

    found = unknown_variables({name: ""}) if name.upper().startswith("NODEWEAVE_") else []
    return (found[0][1] or "") if found else None


def value_problem(name: str, value: str):
    """Why ``name=value``, a name the user may set, would stop every node's start (a PATH without the image's
    entrypoint and python), or None. The value is taken as is: no ``$PATH`` in it is expanded."""
    if name != "PATH":
        return None
    missing = [folder for folder in IMAGE_PATH if folder not in value.split(":")]
    if not missing:
        return None
    return (f"PATH={value} replaces the image's search path and leaves out {' and '.join(missing)}, where every "
            "node finds nodeweave-entrypoint, python and the launcher (the value is taken as is: no $PATH in it "
            "is expanded)")


def reserved_reason(name: str):
    """Why ``name`` is not the user's to set (one clause naming where its value comes from), or None when it is.

    The spec's ``env:`` and ``run -e``/``exec -e``/``--sweep`` say the same words, so a refusal reads alike wherever
    the variable was given.
    """
    if not is_reserved(name):
        return None
    if unknown_meant(name) is not None:
        return (f"{name} is not a variable nodeweave reads, and the NODEWEAVE_ prefix is reserved for nodeweave's "
                "own settings")
    if name.startswith("NODEWEAVE_"):
        return (f"{name} is in the NODEWEAVE_ prefix, reserved by nodeweave for its own settings (each set by a "
                "spec field or an entrypoint flag; NODEWEAVE_JOB_TOKEN_FILE is the one a user sets)")
    if name in TORCHRUN_ENV:
        flag = "--" + name[len("PET_"):].lower().replace("_", "-")
        return f"{name} is torchrun's spelling of {flag}, which is set by nodeweave from each node's plan"
    if name in LAUNCHER_ENV:
        return (f"{name} is set for each process by the launcher from nodeweave's plan (the spec's nodes and "
                "gpus_per_node, each node's rank)")
    return f"{name} is set on every node by nodeweave from {SET_FROM[name]}"
