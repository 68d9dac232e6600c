"""The rules a setting obeys wherever it is given: the spec (``nodeweave validate``) and the entrypoint's flags
and variables alike, declared once so the two cannot drift.

Why: each side had its own copy, and they had drifted: the entrypoint took ``NODEWEAVE_CHECKPOINT_DIR=/``,
``../../etc``, ``--spares`` without recovery and recovery with the exchange off, all of which the spec refused
(issue 43). A rule reads the settings by their contract key (``contract.SETTINGS``: one row names the spec
field, the flag and the variable) and names them through a :class:`Naming`, so the spec's message says
``recovery.spares`` and the entrypoint's ``NODEWEAVE_SPARES``. Each rule carries ``bad`` examples;
tests/test_shared_rules.py walks every one through both sides. Stdlib only, like the whole entrypoint.
"""

import posixpath

from .contract import METRICS_PORT, RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, STALL_TIMEOUT_S

# Folders of the image a mount at them, or above them, would hide: the system's, and those nodeweave puts there.
SYSTEM = {
    "/bin": "the system's programs", "/boot": "the boot files", "/dev": "the devices", "/etc": "the system's "
    "configuration", "/home": "the image user's home", "/lib": "the system's libraries", "/lib32": "the system's "
    "libraries", "/lib64": "the system's libraries", "/proc": "the kernel's process files", "/root": "root's home",
    "/run": "the runtime's files", "/sbin": "the system's programs", "/sys": "the kernel's files", "/tmp": "the "
    "temporary folder (pods mount their own there)", "/usr": "the installed software", "/usr/bin": "the "
    "installed programs", "/usr/lib": "the installed libraries", "/usr/local": "the image's own software",
    "/usr/local/bin": "nodeweave-entrypoint and the launchers", "/var": "the system's state",
    "/run/nodeweave": "the job token nodeweave mounts", "/etc/nodeweave": "the hosts file nodeweave mounts",
}  # fmt: skip
# Folders whose inside is the kernel's or nodeweave's own: nothing of the spec's is mounted or kept in them.
FILLED = {"/proc": "the kernel fills", "/sys": "the kernel fills", "/dev": "the kernel and runtime fill",
          "/run/nodeweave": "nodeweave fills", "/etc/nodeweave": "nodeweave fills"}
# Folders each container has to itself (an emptyDir, the image's own layer): what a node writes there the others
# never see, and it is gone with the container.
PER_CONTAINER = ("/tmp", "/var/tmp", "/run")  # /dev/shm: refused outright (inside /dev)


def inside_workspace_accepted(example, absolute_example=None):
    """What a path read relative to ``workspace.path`` may be, with examples of the field's own kind."""
    relative = f"a path inside workspace.path (relative, without '..' leading out of it, e.g. {example})"
    if absolute_example is None:
        return relative
    return (f"{relative}, or an absolute folder that is not / nor a system folder (/etc, /usr, /tmp, ...) nor "
            f"inside /proc, /sys or /dev, e.g. {absolute_example}")


CHECKPOINT_DIR_ACCEPTED = inside_workspace_accepted("checkpoints", "/data/checkpoints (on storage every node "
                                                    "mounts)")
SCRIPT_ACCEPTED = inside_workspace_accepted("train.py")


def path_problem(text, absolute_too=True):
    """Why ``text``, read relative to ``workspace.path``, is not a folder of the job's own, or None: a relative
    path stays inside the workspace; with ``absolute_too`` an absolute one is not a system folder. ``~`` and
    ``$VAR`` are refused: no shell reads the path, so they would name a folder ``~`` or ``$HOME`` in the workspace."""
    if text.startswith("~") or "$" in text:
        return (f"{text!r} holds {'~' if text.startswith('~') else '$'}, which nothing expands here (the path is "
                "used as written: a folder of that name inside workspace.path)")
    if not text.startswith("/"):
        normal = posixpath.normpath(text)
        if normal == ".." or normal.startswith("../"):
            return f"{text!r} leaves workspace.path (it is read relative to it)"
        return None
    if not absolute_too:
        return None
    normal = posixpath.normpath(text)
    if normal == "/" or normal == "//":
        return "/ is the whole file system"
    for folder, what in FILLED.items():
        if normal.startswith(folder + "/"):
            return f"{normal} is inside {folder}, which {what}"
    for folder, what in SYSTEM.items():
        if folder == normal:
            return f"{normal} is a system folder ({what})"
        if folder.startswith(normal.rstrip("/") + "/"):
            return f"{normal} holds the system folder {folder} ({what})"
    return None


def per_container(text):
    """The per-container folder ``text`` lies in (``/tmp/ckpt``: ``/tmp``), or None."""
    normal = posixpath.normpath(text) if text.startswith("/") else ""
    return next((folder for folder in PER_CONTAINER if normal == folder or normal.startswith(folder + "/")), None)


class Naming:
    """How one side names a setting and its states: the spec's field (``recovery.spares``, ``true``) or the
    entrypoint's source (``NODEWEAVE_SPARES``, ``on``)."""

    def __init__(self, name, on="on", off="off", assign="="):
        self.name, self.on, self.off, self.assign = name, on, off, assign

    def shown(self, value):
        """A value as this side writes it: a switch in its words, a list comma-joined, a text quoted."""
        if isinstance(value, bool):
            return self.on if value else self.off
        if isinstance(value, (list, tuple)):
            return repr(",".join(value))
        return repr(value) if isinstance(value, str) else str(value)

    def turned_on(self, key):
        return f"{self.name(key)}{self.assign}{self.on}"

    def turned_off(self, key):
        return f"{self.name(key)} {self.off}"


class Problem:
    __slots__ = ("key", "problem", "accepted")

    def __init__(self, key, problem, accepted):
        self.key, self.problem, self.accepted = key, problem, accepted

    def __repr__(self):
        return f"Problem({self.key!r}, {self.problem!r})"


# Settings that do something only while their switch is on, each with the value that means "not set": a value
# other than that, given while the switch is off, does nothing and is refused (a flag that would do nothing is).
SWITCHED = {
    "recovery": {"spares": 0, "recovery_max_restarts": RECOVERY_RESTARTS,
                 "no_progress_restarts": RECOVERY_NO_PROGRESS, "checkpoint_dir": None,
                 "straggler_is_fault": False, "warm_start": True},
    # (not step_pattern: node 0's goodput timeline reads the step lines with metrics off too: metrics/live.py)
    "metrics": {"metrics_port": METRICS_PORT},
    "exchange": {"exchange_port": None, "exchange_allow": ()},
}
SWITCH_DEFAULTS = {"recovery": False, "metrics": True, "exchange": True}


def _unset(value, idle):
    if isinstance(value, (list, tuple)) or isinstance(idle, tuple):
        return tuple(value or ()) == tuple(idle or ())
    return value == idle


def switched_off(values, given, naming):
    """A setting given while its switch is off."""
    found = []
    for switch, dependents in SWITCHED.items():
        if values.get(switch, SWITCH_DEFAULTS[switch]):
            continue
        for key, idle in dependents.items():
            if key in given and not _unset(values.get(key, idle), idle):
                problem = f"{naming.shown(values[key])} does nothing with {naming.turned_off(switch)} (read only " \
                          f"while it is {naming.on})"
                found.append(Problem(key, problem, f"{naming.turned_on(switch)}, or leave {naming.name(key)} out"))
    return found


def recovery_needs_exchange(values, given, naming):
    """Recovery runs on the check-in exchange: node 0 gathers the nodes and hears of faults through it."""
    if values.get("recovery") and values.get("exchange", True) is False:
        return [Problem("recovery", f"{naming.on} with {naming.turned_off('exchange')}: recovery runs on the "
                                    "check-in exchange (node 0 gathers the nodes, hears of faults and decides each "
                                    "generation), so a node stops at start with exit 2",
                        f"{naming.turned_on('exchange')} (the default; leave it out), or "
                        f"{naming.turned_off('recovery')}")]
    if values.get("recovery") and values.get("wait_timeout") == 0:  # 0: no wait, so no exchange
        return [Problem("wait_timeout", f"0 with {naming.turned_on('recovery')}: a wait timeout of 0 switches the "
                                        "check-in exchange off too (nothing waits for node 0, nothing checks in), and "
                                        "recovery runs on it",
                        f"{naming.name('wait_timeout')} above 0 (default 600), or {naming.turned_off('recovery')}")]
    return []


def recovery_needs_another_node(values, given, naming):
    """Recovery watches a node from another and replaces it with a spare: one node without spares has neither.
    ``nnodes`` is the training count's maximum, when known (the entrypoint: only from NODEWEAVE_NNODES/--nnodes)."""
    nnodes = values.get("nnodes")
    if values.get("recovery") and nnodes is not None and nnodes < 2 and not values.get("spares"):
        return [Problem("recovery", f"{naming.on} with one node ({naming.name('nnodes')} {nnodes}) and no "
                                    f"spares: there is no other node to watch it or take its place",
                        f"{naming.name('nnodes')} of 2 or more, or {naming.name('spares')} 1 or more")]
    return []


def straggler_needs_stall_watch(values, given, naming):
    """Stragglers are named by the stall watch (its hook on the ranks): with ``stall_warn`` 0 none is ever named,
    so none is ever a fault."""
    if values.get("recovery") and values.get("straggler_is_fault") and values.get("stall_warn") == 0:
        return [Problem("straggler_is_fault", f"{naming.on} with {naming.name('stall_warn')} 0: stall_warn 0 "
                                              "switches the stall watch off, and the watch is what names a "
                                              "straggler, so none is ever a fault",
                        f"{naming.name('stall_warn')} above 0 (default 60), or leave "
                        f"{naming.name('straggler_is_fault')} out")]
    return []


def checkpoint_dir_inside(values, given, naming):
    """The checkpoint folder is the job's own: inside the workspace, or an absolute folder that is no system one."""
    folder = values.get("checkpoint_dir")
    problem = path_problem(folder) if folder else None
    return [Problem("checkpoint_dir", problem, CHECKPOINT_DIR_ACCEPTED)] if problem else []


# The range of each whole-number setting the spec bounds: beyond it a typo is likelier than a job (the spec's
# sections read their fields with these bounds; the entrypoint's readers only know the minimum).
RANGES = {"spares": (0, 1024), "recovery_max_restarts": (1, 100000), "no_progress_restarts": (0, 100000),
          "max_restarts": (0, 1000), "stall_warn": (0, 86400), "stall_timeout": (0, 604800),
          "wait_timeout": (0, 86400)}  # 0: do not wait (no check-in), in the spec as on the entrypoint


def in_range(values, given, naming):
    """A whole number the spec would refuse as out of its range."""
    return [Problem(key, f"{values[key]} is out of range", f"an integer from {low} to {high}")
            for key, (low, high) in RANGES.items()
            if key in given and isinstance(values.get(key), int) and not low <= values[key] <= high]


class Rule:
    __slots__ = ("check", "bad")

    def __init__(self, check, bad):
        self.check, self.bad = check, bad  # bad: settings (key -> spec value) each of which the rule refuses


RULES = (
    Rule(switched_off, [{"spares": 1}, {"checkpoint_dir": "ckpt"}, {"recovery_max_restarts": 9},
                        {"no_progress_restarts": 0}, {"straggler_is_fault": True}, {"warm_start": False},
                        {"metrics": False, "metrics_port": 9000},
                        {"exchange": False, "exchange_port": 30000}, {"exchange": False, "exchange_allow": ["nccl"]}]),
    Rule(in_range, [{"recovery": True, "spares": 2000}, {"recovery": True, "recovery_max_restarts": 100001},
                    {"recovery": True, "no_progress_restarts": 100001}, {"max_restarts": 1001},
                    {"stall_warn": 86401, "stall_timeout": 0}, {"stall_timeout": 604801},
                    {"wait_timeout": 86401}]),
    Rule(recovery_needs_exchange, [{"recovery": True, "exchange": False}, {"recovery": True, "wait_timeout": 0}]),
    Rule(straggler_needs_stall_watch, [{"recovery": True, "straggler_is_fault": True, "stall_warn": 0}]),
    Rule(recovery_needs_another_node, [{"recovery": True, "nnodes": 1}]),
    Rule(checkpoint_dir_inside, [{"recovery": True, "checkpoint_dir": "/"}, {"recovery": True, "checkpoint_dir":
                                 "../../etc"}, {"recovery": True, "checkpoint_dir": "/etc"},
                                 {"recovery": True, "checkpoint_dir": "~/ckpt"},
                                 {"recovery": True, "checkpoint_dir": "$HOME/ckpt"},
                                 {"recovery": True, "checkpoint_dir": "/proc/1"}]),
)


# Every setting a rule reads (contract keys): the spec's loader reads each from its field.
KEYS = ({key for rule in RULES for bad in rule.bad for key in bad} | set(SWITCHED)
        | {key for dependents in SWITCHED.values() for key in dependents})


def problems(values, given, naming):
    """Every problem of every rule, for ``values`` (contract key -> value; ``given``: the keys set by the user)."""
    return [problem for rule in RULES for problem in rule.check(values, given, naming)]


def notes(values, given=(), naming=None):
    """What is allowed but likely not meant, as (key, line): a checkpoint folder each node keeps to itself, and a
    0 that switches off more than its own setting (``stall_warn`` 0 takes ``stall_timeout``'s stop with it; the
    caller writes the setting's name in front of that line)."""
    found = []
    folder = values.get("checkpoint_dir")
    inside = per_container(folder) if values.get("recovery") and folder else None
    if inside:
        found.append(("checkpoint_dir", f"{folder} is in {inside}, which each container has to itself (an emptyDir "
                                        "on Kubernetes): node 0 sees only its own saves, and a replaced node none; "
                                        "put checkpoints on storage every node mounts (a volume, or a path inside "
                                        "workspace.path)"))
    if "stall_warn" in given and values.get("stall_warn") == 0 and "stall_timeout" not in given:
        name = naming.name if naming else (lambda key: key)
        line = (f"0 switches the stall watch off, and with it {name('stall_timeout')}'s "
                f"default stop after {values.get('stall_timeout') or STALL_TIMEOUT_S} s (exit 7): a hung job runs "
                "on until someone stops it")
        if values.get("recovery"):
            line += ", and recovery never sees a stall as a fault"
        found.append(("stall_warn", line))
    return found
