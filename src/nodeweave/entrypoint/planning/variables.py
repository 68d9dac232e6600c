"""Every NODEWEAVE_* variable either program reads or sets, in one list both read: a name outside it is a typo.

Stdlib only (the entrypoint's zipapp carries it). ``nodeweave`` warns at start-up and
``nodeweave-entrypoint`` in its plan's warnings (``--explain``, doctor, the start-up line), one line
per unknown name with the nearest known one, as a mistyped flag gets ("did you mean"): a
``NODEWEAVE_SEPC`` or ``NODEWEAVE_IFNAME`` was silently ignored (walk2, M4). tests/test_walk3_classes.py
fails when the sources name a NODEWEAVE_* variable this list lacks.
"""

from ..model import SET_FOR_RANKS  # what the entrypoint sets for its ranks itself (walk7 B18)


# What the CLI and the entrypoint read, and what the renderers and the CLI set in the containers.
KNOWN = frozenset((
    "NODEWEAVE_CACHE_DIR",
    "NODEWEAVE_CHECKPOINT_DIR",
    "NODEWEAVE_CHECK_REPORT",
    "NODEWEAVE_CLUSTER_DOMAIN",
    "NODEWEAVE_ENGINE",
    "NODEWEAVE_EXCHANGE",
    "NODEWEAVE_EXCHANGE_ALLOW",
    "NODEWEAVE_EXCHANGE_BIND",
    "NODEWEAVE_EXCHANGE_PORT",
    "NODEWEAVE_EXCLUDE_HCAS",
    "NODEWEAVE_HOSTFILE",
    "NODEWEAVE_IMAGE",
    "NODEWEAVE_IMAGE_REF",
    "NODEWEAVE_IMAGE_VARIANT",
    "NODEWEAVE_INTERFACES",
    "NODEWEAVE_JOB_ID",
    "NODEWEAVE_JOB_TOKEN",
    "NODEWEAVE_JOB_TOKEN_FILE",
    "NODEWEAVE_JOB_TOKEN_HOST",
    "NODEWEAVE_KUBE_API",
    "NODEWEAVE_LAUNCHER",
    "NODEWEAVE_LAUNCHER_OPTIONS",
    "NODEWEAVE_MASTER_ADDR",
    "NODEWEAVE_MASTER_PORT",
    "NODEWEAVE_MAX_RESTARTS",
    "NODEWEAVE_METRICS",
    "NODEWEAVE_METRICS_PORT",
    "NODEWEAVE_MODE",
    "NODEWEAVE_NCCL_VERSION",
    "NODEWEAVE_NNODES",
    "NODEWEAVE_NODE_RANK",
    "NODEWEAVE_NO_PROGRESS_RESTARTS",
    "NODEWEAVE_NPROC_PER_NODE",
    "NODEWEAVE_PLAN_RECORD",
    "NODEWEAVE_POD_INDEX",
    "NODEWEAVE_PROFILE",
    "NODEWEAVE_PROFILE_OPTIONS",
    "NODEWEAVE_RANKWATCH_DIR",
    "NODEWEAVE_RANKWATCH_PID",
    "NODEWEAVE_RCCL_VERSION",
    "NODEWEAVE_RECOVERY",
    "NODEWEAVE_RECOVERY_MAX_RESTARTS",
    "NODEWEAVE_RENDERED",
    "NODEWEAVE_RESTART_COUNT",
    "NODEWEAVE_RESUME_FROM",
    "NODEWEAVE_RICH_HELP",
    "NODEWEAVE_RUNTIME",
    "NODEWEAVE_RUN_ANNOUNCE",
    "NODEWEAVE_RUN_ID",
    "NODEWEAVE_SERVICE",
    "NODEWEAVE_SETUP",
    "NODEWEAVE_SPARES",
    "NODEWEAVE_SPEC",
    "NODEWEAVE_STALL_TIMEOUT",
    "NODEWEAVE_STALL_WARN",
    "NODEWEAVE_STEP_PATTERN",
    "NODEWEAVE_STRAGGLER_FAULT",
    "NODEWEAVE_STRAGGLER_IS_FAULT",
    "NODEWEAVE_SYNC_BIND",
    "NODEWEAVE_SYSROOT",
    "NODEWEAVE_WAIT_TIMEOUT",
    "NODEWEAVE_WARM_START",
))
# The project's own make, CI and test knobs (README, docs/): a developer's shell is not warned about them.
DEVELOPMENT = frozenset((
    "NODEWEAVE_CHECKOV", "NODEWEAVE_CHECK_HEALTHY_RUNS", "NODEWEAVE_CI_DISK_GB", "NODEWEAVE_DASHBOARD_SHOTS",
    "NODEWEAVE_DOCKER_BUILD_CACHE", "NODEWEAVE_DOCKER_HOST", "NODEWEAVE_E2E_REGISTRY", "NODEWEAVE_SHARED_DIR",
    "NODEWEAVE_UPDATE_GOLDEN", "NODEWEAVE_VENV",
))
DEVELOPMENT_PREFIX = "NODEWEAVE_TEST_"
# A name near one the entrypoint only sets for its ranks (``SET_FOR_RANKS``): what to do instead of naming it
OUTPUT_MEANT = {
    "NODEWEAVE_RESUME_FROM": "NODEWEAVE_RESUME_FROM is nodeweave's to set for the ranks, never read: to start from "
                             "a save of your choice, load it in the script yourself (its own resume option), as "
                             "docs/recovery.md 'Only this job's saves' says",
    "NODEWEAVE_RESTART_COUNT": "NODEWEAVE_RESTART_COUNT is nodeweave's to set for the ranks (each generation's "
                               "number), never read; the restarts allowed are NODEWEAVE_RECOVERY_MAX_RESTARTS",
    "NODEWEAVE_RANKWATCH_DIR": "NODEWEAVE_RANKWATCH_DIR is nodeweave's to set for the ranks (the stall watch's), "
                               "never read",
    "NODEWEAVE_RANKWATCH_PID": "NODEWEAVE_RANKWATCH_PID is nodeweave's to set for the ranks (the stall watch's), "
                               "never read",
}
PREFIX = "NODEWEAVE_"
# What a user who set one of ``SET_FOR_RANKS`` meant, and the way to it (walk16b B7: the warning said only no)
INSTEAD = {
    "NODEWEAVE_RESUME_FROM": "; to start from a save of your choice, load it in the script yourself at generation 0 "
                             "(NODEWEAVE_RESTART_COUNT=0), e.g. from a variable of your own (docs/recovery.md "
                             "'Only this job's saves')",
    "NODEWEAVE_RESTART_COUNT": "; the restarts allowed are NODEWEAVE_RECOVERY_MAX_RESTARTS",
}


def inherited_output_lines(env):
    """One sentence per ``SET_FOR_RANKS`` variable already in ``env``: not passed to the ranks (``Plan.environ``
    drops it), and why."""
    from ..model import given

    return [f"{name}= in this node's environment is set but empty: ignored" if not given(env, name) else
            f"{name}={env[name]} in this node's environment is nodeweave's to set for the ranks (each generation's "
            + ("checkpoint node 0 judged complete" if name == "NODEWEAVE_RESUME_FROM" else
               "number" if name == "NODEWEAVE_RESTART_COUNT" else "stall watch") + "): not passed to them"
            + (INSTEAD[name] if name in INSTEAD else "")
            for name in SET_FOR_RANKS if name in env]


def unknown_variables(env, read_here=None):
    """``(name, nearest known name or None)`` for each NODEWEAVE_* name in ``env`` (in any case) that nodeweave
    neither reads nor sets, sorted; a name near one of ``read_here`` (the calling program's own) is that one (walk16a A15:
    the CLI's NODEWEAVE_RECORD was offered the nodes' NODEWEAVE_RECOVERY, not its own NODEWEAVE_PLAN_RECORD)."""
    found = []
    for name in sorted(env):
        upper = name.upper()  # nodeweave_recovery (a .env file, a YAML env: list typed in lower case) is as
        if not upper.startswith(PREFIX):  # ignored as a misspelt NODEWEAVE_ name: recovery silently off (walk18b B12)
            continue
        if upper != name and (upper in KNOWN or upper in DEVELOPMENT):
            found.append((name, upper))
            continue
        if name in KNOWN or name in DEVELOPMENT or upper.startswith(DEVELOPMENT_PREFIX):
            continue
        import difflib  # only for a name to suggest for: it imports re, which the start-up path does without

        # what the entrypoint only sets for its ranks is no name to set instead: it is just as ignored (walk15b B7:
        # NODEWEAVE_RESUME_FORM was offered NODEWEAVE_RESUME_FROM, which the plan then dropped as nodeweave's own):
        # the nearest being one, unknown_lines and reserved.instead say OUTPUT_MEANT's remedy, never "did you mean"
        known = sorted(known[len(PREFIX):] for known in KNOWN)
        own = sorted(known[len(PREFIX):] for known in read_here or ())
        stems = (difflib.get_close_matches(upper[len(PREFIX):], own, n=1, cutoff=0.6)  # the shared prefix is no
                 or difflib.get_close_matches(upper[len(PREFIX):], known, n=1, cutoff=0.6))  # likeness
        found.append((name, _aliases().get(upper) or (PREFIX + stems[0] if stems else None)))
    return found


def _aliases():
    """A variable named after a flag means that flag's variable: ``NODEWEAVE_RDZV_ID`` (``--rdzv-id``) is
    ``NODEWEAVE_JOB_ID``, ``NODEWEAVE_IFNAME`` (the older ``--ifname``) ``NODEWEAVE_INTERFACES``; the nearest
    name by spelling pointed elsewhere (walk5 W39: ``NODEWEAVE_RUN_ID``). Read from the contract only when a
    name is unknown (start-up stays cheap)."""
    from nodeweave.entrypoint.planning.contract import SETTINGS

    def named(flag):
        return PREFIX + flag.lstrip("-").replace("-", "_").upper()

    found = {named(alias): row.variable for row in SETTINGS for alias in row.aliases if row.variable}
    found.update({named(row.flag): f"{row.variable} ({row.flag})" for row in SETTINGS
                  if row.variable and named(row.flag) != row.variable})
    # a variable named after the spec's field (walk11b B8: NODEWEAVE_MIN_NODES for recovery.min_nodes, as
    # recovery.spares is NODEWEAVE_SPARES): the field's whole path, and its last part where no other field ends so
    for name, meant in spec_field_names().items():
        found.setdefault(name, meant)
    return found


def spec_field_names():
    """``{NODEWEAVE_<field>: what to write instead}`` for each field of the spec, as a person would name its
    variable (``NODEWEAVE_RECOVERY_MIN_NODES``, ``NODEWEAVE_MIN_NODES``), from the contract's rows and the fields
    folded into another's value (``FOLDED_FIELDS``). Only names nodeweave does not read are ever looked up."""
    from nodeweave.entrypoint.planning.contract import FOLDED_FIELDS, SETTINGS

    fields = {row.spec: f"{row.variable} ({row.spec})" for row in SETTINGS if row.spec and row.variable}
    fields.update(FOLDED_FIELDS)
    lasts = [path.rsplit(".", 1)[-1] for path in fields]
    found = {}
    for path, meant in fields.items():
        found[PREFIX + path.replace(".", "_").upper()] = meant
        last = path.rsplit(".", 1)[-1]
        if lasts.count(last) == 1:
            found.setdefault(PREFIX + last.upper(), meant)
    return found


ENTRYPOINT_LIST = "`nodeweave-entrypoint --help` lists the NODEWEAVE_* variables"


def unknown_lines(env, read_here=None, listed=ENTRYPOINT_LIST):
    """One sentence per unknown NODEWEAVE_* variable: that it is ignored, and the name meant, else where the
    variables are listed (``listed``: the calling program's own list, walk16a A15). ``read_here``: the names the
    calling program reads (the CLI's), when a name meant that it does not read is only the nodes'."""
    def meant(close):
        if close in OUTPUT_MEANT:
            return f" ({OUTPUT_MEANT[close]})"
        elsewhere = read_here is not None and close not in read_here
        return f" (did you mean {close}" + (", which nodeweave-entrypoint reads in the nodes, not this command?)"
                                            if elsewhere else "?)")

    return [f"{name} is not a variable nodeweave reads, so it is ignored"
            + (meant(close) if close else " ({})".format(listed))
            for name, close in unknown_variables(env, read_here)]
