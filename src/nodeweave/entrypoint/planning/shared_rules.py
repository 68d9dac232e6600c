"""The rules a setting obeys wherever it is given: the spec (``nodeweave validate``) and the entrypoint's flags
and variables alike, declared once so the two cannot drift.

Why: each side had its own copy, and they had drifted: the entrypoint took ``NODEWEAVE_CHECKPOINT_DIR=/``,
``../../etc``, ``--spares`` without recovery and recovery with the exchange off, all of which the spec refused
(issue 43). A rule reads the settings by their contract key (``contract.SETTINGS``: one row names the spec
field, the flag and the variable) and names them through a :class:`Naming`, so the spec's message says
``recovery.spares`` and the entrypoint's ``NODEWEAVE_SPARES``. Each rule carries ``bad`` examples;
tests/test_shared_rules.py walks every one through both sides. Stdlib only, like the whole entrypoint.
"""


from ..durations import DURATION_UNITS
from ..systemfolders import IN_SYSTEM_FOLDER_ACCEPTED, path_problem, per_container
from .contract import METRICS_PORT, RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, STALL_TIMEOUT_S

def inside_workspace_accepted(example, absolute_example=None):
    """What a path read relative to ``workspace.path`` may be, with examples of the field's own kind."""
    relative = f"a path inside workspace.path (relative, without '..' leading out of it, e.g. {example})"
    if absolute_example is None:
        return relative
    return (f"{relative}, or an absolute folder that is not / nor a system folder (/etc, /usr, /tmp, ...) nor "
            f"inside /proc, /sys, /dev or one of the system's trees (/etc/ssh, /usr/lib/x), e.g. {absolute_example}")


CHECKPOINT_DIR_ACCEPTED = inside_workspace_accepted("checkpoints", "/data/checkpoints (on storage every node "
                                                    "mounts)") + "; " + IN_SYSTEM_FOLDER_ACCEPTED
SCRIPT_ACCEPTED = inside_workspace_accepted("train.py")


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
    # node 0's /metrics start on its heartbeat watch, which the exchange runs (docs/observability.md; walk6 W45)
    # and what it alone reads: its listening address, and the straggler fault node 0 names over its heartbeat
    # (with it off each node sees its own ranks only: docs/stalls.md; walk9 B19)
    "exchange": {"exchange_port": None, "exchange_allow": (), "exchange_bind": "any", "straggler_fault": 0,
                 "metrics": False, "metrics_port": METRICS_PORT},
}
SWITCH_DEFAULTS = {"recovery": False, "metrics": True, "exchange": True}


def metrics_unserved(exchange_off, heartbeat):
    """Why node 0 serves no /metrics although they are on, or None: the endpoint starts on node 0's heartbeat
    watch, which the check-in exchange runs, for a supervised launcher (a plain command is exec'd). The one
    wording for the entrypoint's plan (``faults.py``) and the spec's summary (``Spec.starts``; walk6 W43-W45).
    ``exchange_off``: why the exchange is off, or None."""
    if exchange_off:
        return f"the check-in exchange is off ({exchange_off}), and the endpoint rides on its heartbeat"
    if not heartbeat:
        return "a plain command is exec'd with no heartbeat, which the endpoint rides on"
    return None


def _unset(value, idle):
    if isinstance(value, (list, tuple)) or isinstance(idle, tuple):
        return tuple(value or ()) == tuple(idle or ())
    return value == idle


def switch_off(values, switch, naming):
    """What keeps ``switch`` off, as (the setting that does, the way to turn it on, what is off), or None while
    it is on. The check-in exchange has three ways off, one rule for each (walk14b B3): its switch, a wait timeout
    of 0 (nothing waits, nothing checks in) and the entrypoint's ``--no-wait`` (``values["no_wait"]``: its name)."""
    if switch == "exchange" and values.get("exchange", True) is not False:
        if values.get("wait_timeout") == 0:
            return (f"{naming.name('wait_timeout')} 0", f"{naming.name('wait_timeout')} above 0 (default 600)",
                    "the exchange")
        if values.get("no_wait"):
            return values["no_wait"], f"leave {values['no_wait']} out", "the exchange"
        return None
    if values.get(switch, SWITCH_DEFAULTS[switch]):
        return None
    return naming.turned_off(switch), naming.turned_on(switch), "it"


def switched_off(values, given, naming):
    """A setting given while its switch is off."""
    found = []
    for switch, dependents in SWITCHED.items():
        off = switch_off(values, switch, naming)
        if off is None:
            continue
        for key, idle in dependents.items():
            if key in given and not _unset(values.get(key, idle), idle):
                cause = off[0] if off[2] == "it" else f"{off[0]}, which switches the check-in exchange off"
                problem = f"{naming.shown(values[key])} does nothing with {cause} (read only while {off[2]} is " \
                          f"{naming.on})"
                found.append(Problem(key, problem, f"{off[1]}, or leave {naming.name(key)} out"))
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


def recovery_needs_supervised_launcher(values, given, naming):
    """Recovery relaunches the ranks each generation and hears of a fault through the heartbeat of the launcher it
    supervises: a plain ``command`` is exec'd in place of the entrypoint, so nothing is left to relaunch or to beat
    (walk7 B44: explain and validate passed it, every node then stopped at start)."""
    if values.get("recovery") and values.get("launcher") == "command":
        return [Problem("launcher", f"'command' with {naming.turned_on('recovery')}: a plain command is exec'd in "
                                    "place of the entrypoint, with no heartbeat, so no fault is heard and no "
                                    "generation can be relaunched",
                        f"{naming.name('launcher')} torchrun, deepspeed or accelerate (the ranks run as a watched "
                        f"child), or {naming.turned_off('recovery')}")]
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


def brake_within_budget(values, given, naming):
    """The no-progress brake stops the job after N restarts without a newer checkpoint (exit 9), the budget after
    max_restarts restarts (exit 8): a brake set above the budget never acts, the budget ends the job first
    (walk7 B20). Only a brake the user set is refused: the default brake under a small budget is no one's choice."""
    brake = values.get("no_progress_restarts")
    budget = values.get("recovery_max_restarts")
    budget = RECOVERY_RESTARTS if budget is None else budget
    if (not values.get("recovery") or "no_progress_restarts" not in given or not isinstance(brake, int)
            or not isinstance(budget, int) or not brake or not budget or brake <= budget):
        return []
    return [Problem("no_progress_restarts",
                    f"{brake} is above {naming.name('recovery_max_restarts')} {budget}: the restart budget ends the "
                    f"job (exit 8) at restart {budget + 1}, before {brake} restarts without a newer checkpoint "
                    "could stop it (exit 9), so the brake never acts",
                    f"1 to {budget} (the budget), or 0 (no brake)")]


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


SECONDS_KEYS = ("stall_warn", "stall_timeout", "wait_timeout")  # read as the spec's seconds fields (durations)


def in_range(values, given, naming):
    """A whole number the spec would refuse as out of its range; a seconds setting says its unit and the
    durations it takes, as the spec's field does (``NODEWEAVE_STALL_WARN=25h`` is 90000 seconds)."""
    return [Problem(key, f"{values[key]}{' seconds' if key in SECONDS_KEYS else ''} is out of range",
                    f"an integer from {low} to {high}" + (f", in seconds, or {DURATION_UNITS}" if key in SECONDS_KEYS
                                                          else ""))
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
                        {"exchange": False, "exchange_port": 30000}, {"exchange": False, "exchange_allow": ["nccl"]},
                        {"exchange": False, "metrics": True}, {"exchange": False, "metrics_port": 9500},
                        {"wait_timeout": 0, "exchange_port": 30000}]),
    Rule(in_range, [{"recovery": True, "spares": 2000}, {"recovery": True, "recovery_max_restarts": 100001},
                    {"recovery": True, "no_progress_restarts": 100001}, {"max_restarts": 1001},
                    {"stall_warn": 86401, "stall_timeout": 0}, {"stall_timeout": 604801},
                    {"wait_timeout": 86401}]),
    Rule(recovery_needs_exchange, [{"recovery": True, "exchange": False}, {"recovery": True, "wait_timeout": 0}]),
    Rule(recovery_needs_supervised_launcher, [{"recovery": True, "launcher": "command"}]),
    Rule(straggler_needs_stall_watch, [{"recovery": True, "straggler_is_fault": True, "stall_warn": 0}]),
    Rule(recovery_needs_another_node, [{"recovery": True, "nnodes": 1}]),
    Rule(brake_within_budget, [{"recovery": True, "recovery_max_restarts": 2, "no_progress_restarts": 9},
                               {"recovery": True, "no_progress_restarts": 6}]),
    Rule(checkpoint_dir_inside, [{"recovery": True, "checkpoint_dir": "/"}, {"recovery": True, "checkpoint_dir":
                                 "../../etc"}, {"recovery": True, "checkpoint_dir": "/etc"},
                                 {"recovery": True, "checkpoint_dir": "~/ckpt"},
                                 {"recovery": True, "checkpoint_dir": "$HOME/ckpt"},
                                 {"recovery": True, "checkpoint_dir": "checkpoints/*"},
                                 {"recovery": True, "checkpoint_dir": "/proc/1"}]),
)


# Every setting a rule reads (contract keys): the spec's loader reads each from its field.
KEYS = ({key for rule in RULES for bad in rule.bad for key in bad} | set(SWITCHED)
        | {key for dependents in SWITCHED.values() for key in dependents})


def problems(values, given, naming):
    """Every problem of every rule, for ``values`` (contract key -> value; ``given``: the keys set by the user)."""
    return [problem for rule in RULES for problem in rule.check(values, given, naming)]


# What the "see the job" side loses with the stall watch (docs/observability.md: the rank series need it).
RANK_SERIES_OFF = ("the rank series go with it: `top` and the dashboard show no ranks and no heat map, /metrics no "
                   "per-rank collective rate or straggler ratio, and goodput splits start-up from training by step "
                   "lines only")


LOOSE_ESCAPES = ("\\w", "\\S", "\\W", "\\D")  # what lets a step group match a non-digit, with '.' and [^...]


def _tokens(text, start):
    """(index, token, in_class) of ``text`` from ``start``: an escape (``\\d``) is one token."""
    i, in_class = start, False
    while i < len(text):
        token = text[i:i + 2] if text[i] == "\\" else text[i]
        yield i, token, in_class
        if in_class and token == "]":
            in_class = False
        elif not in_class and token == "[":
            in_class = True
            if text.startswith("]", i + 1) or text.startswith("^]", i + 1):  # a leading ] is a literal
                yield i + 1, text[i + 1], True
                i += 1
        i += len(token)


def step_group_loose(pattern):
    """The body of ``pattern``'s step group (``(?P<step>...)``, else its first group) when it can match more than
    digits (``\\w+``, ``.+``, ``\\S+``, ``[^ ]+``), else None. Read off the text (no ``re`` internals)."""
    if not pattern:
        return None
    named = pattern.find("(?P<step>")
    body_at = named + len("(?P<step>") if named >= 0 else next(
        (i + 1 for i, token, in_class in _tokens(pattern, 0) if token == "(" and not in_class
         and not pattern.startswith("(?", i)), None)
    if body_at is None:
        return None
    depth, loose = 1, False
    for i, token, in_class in _tokens(pattern, body_at):
        if in_class:
            loose = loose or token in LOOSE_ESCAPES or (token == "^" and pattern[i - 1] == "[")
            continue
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if not depth:
                return pattern[body_at:i] if loose else None
        loose = loose or token in LOOSE_ESCAPES or token == "."
    return None


def notes(values, given=(), naming=None):
    """What is allowed but likely not meant, as (key, line): a checkpoint folder each node keeps to itself, more
    spares than training nodes (``nnodes`` a count, when known), and a 0 that switches off more than its own
    setting (``stall_warn`` 0 takes ``stall_timeout``'s stop with it; the caller writes the setting's name in front
    of that line)."""
    found = []
    folder = values.get("checkpoint_dir")
    where = values.get("checkpoint_where") or folder  # where it is on a node (a link followed), or as written
    inside = per_container(where) if values.get("recovery") and folder else None
    if inside:
        shown = folder if where == folder else f"{folder} (on this node {where})"
        found.append(("checkpoint_dir", f"{shown} is in {inside}, which each container has to itself (an emptyDir "
                                        "on Kubernetes): node 0 sees only its own saves, and a replaced node none; "
                                        "put checkpoints on storage every node mounts (a volume, or a path inside "
                                        "workspace.path)"))
    brake = values.get("no_progress_restarts", RECOVERY_NO_PROGRESS)
    budget = values.get("recovery_max_restarts", RECOVERY_RESTARTS)
    given_folder = values.get("checkpoint_given", bool(folder))  # the spec's, when a mount answered its own note
    if values.get("recovery") and not given_folder and brake and (not budget or brake <= budget):
        name = naming.name if naming else (lambda key: key)  # walk11b B20: two rows, never said together
        found.append(("no_progress_restarts", f"{name('no_progress_restarts')} {brake} with no "
                      f"{name('checkpoint_dir')}: no checkpoint can count as progress, so restart {brake} in a row "
                      "ends the job (exit 9) however many spares wait, even for a script that resumes from a folder "
                      f"of its own; set {name('checkpoint_dir')} to the folder the script saves in, or "
                      f"{name('no_progress_restarts')} 0"))
    spares, nnodes = values.get("spares") or 0, values.get("nnodes")
    if values.get("recovery") and isinstance(nnodes, int) and spares > nnodes:
        name = naming.name if naming else (lambda key: key)
        found.append(("spares", f"{spares} is more than {name('nnodes')} {nnodes}: one generation gives a place to "
                                f"at most {nnodes} spare(s), one per training node, so {spares - nnodes} or more "
                                f"wait with their GPUs idle until {nnodes + 1} or more nodes have been lost (were the "
                                f"two numbers swapped?); {name('spares')} {nnodes} or fewer"))
    fewest = values.get("nnodes_min", nnodes)
    if values.get("recovery") and isinstance(nnodes, int) and nnodes >= 2 and not spares and fewest == nnodes:
        name = naming.name if naming else (lambda key: key)  # walk8 B33: one node is refused for this reason
        found.append(("recovery", f"{naming.on if naming else 'on'} with {nnodes} nodes, no spares and no minimum below {nnodes}: a node at "
                                  "fault can be neither replaced nor left out, so every fault with a culprit (a "
                                  "crash, a lost or stalled node, a straggler) ends the job (exit 8) after node 0 "
                                  f"waits for the nodes back; {name('spares')} 1 or more, or a minimum below "
                                  f"{nnodes} (recovery.min_nodes, or NODEWEAVE_NNODES MIN:MAX on the entrypoint)"))
    if "stall_warn" in given and values.get("stall_warn") == 0 and "stall_timeout" not in given:
        name = naming.name if naming else (lambda key: key)
        line = (f"0 switches the stall watch off, and with it {name('stall_timeout')}'s "
                f"default stop after {values.get('stall_timeout') or STALL_TIMEOUT_S} s (exit 7): a hung job runs "
                "on until someone stops it")
        if values.get("recovery"):
            line += ", and recovery never sees a stall as a fault"
        line += f"; {RANK_SERIES_OFF}"
        found.append(("stall_warn", line))
    loose = step_group_loose(values.get("step_pattern"))
    if loose:  # walk8 B16: a step group that matches words reads no step from the lines it was written for
        found.append(("step_pattern", f"its step group '{loose}' can match more than digits: a line it matches "
                                      "with a word there gives no step (the line is skipped, the common loggers' "
                                      "formats are not tried for it); write the group as (?P<step>\\d+)"))
    for key, loss, default in NODE_0_PORTS:  # walk7 B39 (metrics), walk9 B28 (every port node 0 binds)
        port = values.get(key)
        if key == "metrics_port" and values.get("metrics") is False:
            continue
        if isinstance(port, int) and 0 < port < 1024:
            found.append((key, f"{port} is below 1024: node 0 runs as the image's user, which cannot bind it "
                               "without NET_BIND_SERVICE (and on the host network it may be a service of the "
                               f"host's, e.g. 22 sshd, 80 a web server), so {loss}; a port from 1024 to 65535 "
                               f"(default {default})"))
    return found


# Every port node 0 listens on: (key, what is lost when it cannot bind it, its default)
NODE_0_PORTS = (
    ("master_port", "the launcher's rendezvous store could not start and the job would not start", 29500),
    ("exchange_port", "node 0's check-in exchange could not listen and no node would check in",
     "the master port + 1"),
    ("metrics_port", "the job would run with no metrics", METRICS_PORT),
)
