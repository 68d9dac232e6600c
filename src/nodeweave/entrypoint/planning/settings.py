"""Command line and ``NODEWEAVE_*`` variables → :class:`Settings`.

A hand-written parser instead of argparse: it keeps start-up small and lets
the command after the options (the container's CMD: ``train.py --lr 3e-4``)
pass through untouched, with or without a ``--`` in front of it. Flags win over
variables; topology flags are kept raw so :mod:`topology` can weigh them
against the other rank sources and report where each value came from.
"""

import os

from .contract import BY_FLAG, BY_KEY, LAUNCHERS, READ_VARIABLES, SETTINGS, TOPOLOGY_KEYS, padded_refusal, read_int
from ..errors import EntrypointError, UsageError
from ..model import NEW_DICT, Record, Value

FLAGS = {
    "--explain": ("explain", "print what was found and decided, then exit without exec'ing"),
    "--json": ("json", "with --explain: the plan as JSON (schema nodeweave.entrypoint/1)"),
    "--status": ("status", "ask node 0's check-in exchange for every node's fingerprint and the verdict (JSON)"),
    "--stacks": ("stacks", "with --status: also every rank's Python stack, grouped into classes (nothing is stopped)"),
    "--all": ("all_rows", "with --status: every node and every rank even past 64 nodes (else a summary first: "
                          "counts by state, the worst nodes and ranks)"),
    "--no-wait": ("no_wait", "do not wait for node 0 (nor check in with it) before exec'ing"),
}
__all__ = ["LAUNCHERS", "TOPOLOGY_KEYS", "FLAGS", "Settings", "parse", "parse_int", "usage"]


class Settings(Record):
    FIELDS = (
        ("command", ()),        # the script/command and its arguments
        ("flags", NEW_DICT),       # topology key → value given as a flag
        ("flag_sources", NEW_DICT),  # topology key → what set it when recovery did, not the user (``with_flags``)
        ("options", NEW_DICT),     # other key → Value(value, source)
        ("explain", False),
        ("json", False),
        ("status", False),
        ("stacks", False),
        ("all_rows", False),
        ("no_wait", False),
        ("sysroot", "/"),
        ("env", None),          # the environment the plan reads (a dict)
    )

    def get(self, key, default=None):
        value = self.options.get(key)
        return value.value if value is not None else default

    def source(self, key):
        value = self.options.get(key)
        return value.source if value is not None else "default"


def usage():
    lines = [
        "usage: nodeweave-entrypoint [options] [--] SCRIPT [ARGS...]",
        "",
        "Detects the node (GPUs, RDMA NICs, interfaces, limits), finds its rank, node",
        "count and master, sets the few NCCL/RCCL variables NCCL cannot get right alone,",
        "then execs torchrun / deepspeed / accelerate / the command. Flags win over the",
        "variables named in brackets. See docs/entrypoint.md.",
        "",
        "options:",
    ]
    rows = [("{} VALUE".format(row.flag), "{} [{}]".format(row.help, row.variable)) for row in SETTINGS]
    rows += [(flag, text) for flag, (_, text) in FLAGS.items()]
    from .contract import NODE_USAGES

    rows += [("-h, --help", "show this help and exit"), ("--version", "print the version and exit"),
             ("--node ACTION", f"{' | '.join(NODE_USAGES)}: what nodeweave asks a node (JSON; first argument only): "
                               f"{'; '.join(NODE_USAGES.values())}")]
    width = max(len(left) for left, _ in rows) + 4  # the longest flag still leaves two spaces before its text
    lines += [("  " + left).ljust(width) + text for left, text in rows]
    return "\n".join(lines)


class HelpRequested(Exception):
    pass


class VersionRequested(Exception):
    pass


def parse(argv, env):
    """Parse ``argv`` (without the program name) with ``env`` as the variables."""
    flags, options, switches = {}, {}, {}
    given = {}  # key -> (the flag as typed, its value): each takes one value
    command = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            command = list(argv[i + 1:])
            break
        if arg in ("-h", "--help"):
            raise HelpRequested()
        if arg == "--version":
            raise VersionRequested()
        if not arg.startswith("-") or arg == "-":
            command = list(argv[i:])
            break
        name, eq, inline = arg.partition("=")
        if name in FLAGS:
            if eq:
                raise UsageError(f"{name} takes no value (got {arg!r})")
            switches[FLAGS[name][0]] = True
            i += 1
            continue
        row = BY_FLAG.get(name)
        if name == FIRST_ONLY:  # a real option, in the wrong place: never "unknown", never another's hint (B5)
            raise UsageError(f"{name} must be the first argument: it asks this node (what nodeweave status, stop "
                             f"and run ask) and starts nothing, so it takes no other option before it; accepted: "
                             f"nodeweave-entrypoint {name} ACTION [the action's own options] (e.g. {name} "
                             "status), with nothing before it")
        if row is None:
            import difflib

            known = sorted(list(BY_FLAG) + list(FLAGS) + ["--help", "--version", FIRST_ONLY])
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(
                f"unknown option {name!r}{hint}; put the training command after the options "
                f"(or after --). Options: {', '.join(known)}"
            )
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value: {row.help}")
            value = argv[i + 1]
            taken = _option_as_value(value, getattr(row.read, "words", False))
            if taken is not None:
                raise UsageError(f"{name} expected a value, got {taken}; accepted: {name} VALUE, or {name}=VALUE "
                                 "for a value that is itself '--' or one of these options")
            i += 2
        if row.key in given:
            # `--nnodes=2 --nnodes=3` kept the last silently (walk5 W8), as nodeweave's own options no longer do
            first, before = given[row.key]
            raise UsageError(f"{name} is given twice ({first} {before!r}, {name} {value!r}) and takes one value "
                             "(only the last would count); give it once")
        given[row.key] = (name, value)
        if not value.strip() and not getattr(row.read, "words", False):
            # `--checkpoint-dir ""` turned recovery's folder off silently (walk2 M2); a word list's empty value
            # is its own explicit "none" (`nodeweave check` clears the spec's options with --launcher-options '')
            raise UsageError(f"{name} is given an empty value: {row.help}; leave the option out for its default")
        padded = padded_refusal(name, value, flag=True)  # one rule for every option and variable (replay N3)
        if padded is not None:
            raise padded
        if row.topology:
            flags[row.key] = value
    unread = []  # the first value refused: raised once the settings read so far are built (they carry it)

    def read(row, text, source):
        try:
            options[row.key] = Value(value=row.read(text, row.what, source), source=source)
        except EntrypointError as err:
            unread.append(err)

    for key, (name, value) in given.items():  # read once every flag is known: twice is refused before a value
        row = BY_KEY[key]
        if not row.topology:
            read(row, value, f"flag {name}")
    if command and not command[0].strip():  # `-- ""`: planned as `exec ''` (walk2 M3), as `nodeweave run -- ""` is not
        unread.insert(0, UsageError("the training command's program is empty (''): give the script or program "
                                    "after --"))
    unread += [refusal for refusal in (padded_refusal(name, env[name]) for name in READ_VARIABLES if name in env)
               if refusal is not None]
    for row in SETTINGS:
        if row.topology or row.key in options:
            continue
        if row.variable in env and not env[row.variable].strip() and not getattr(row.read, "words", False):
            # the flag's rule for its variable (walk12b B7): `-e NODEWEAVE_CHECKPOINT_DIR=$CKPT` with CKPT unset
            # started a recovering job whose every generation began from step 0, behind one warning
            unread.append(UsageError(
                f"{row.variable} is set but empty ({env[row.variable]!r}): {row.help}; unset it for its default "
                f"(an unset variable in `-e {row.variable}=$VALUE` or the compose file?)"))
            continue
        if env.get(row.variable, "") != "":
            read(row, env[row.variable], row.variable)
    settings = Settings(
        command=tuple(command),
        flags=flags,
        options=options,
        explain=switches.get("explain", False),
        json=switches.get("json", False),
        status=switches.get("status", False),
        stacks=switches.get("stacks", False),
        all_rows=switches.get("all_rows", False),
        no_wait=switches.get("no_wait", False),
        env=env,
    )
    settings.sysroot = settings.get("sysroot", "/") or "/"
    try:
        _check_mode(settings, list(given))  # what was typed, a value refused too (--status --spares abc)
        if unread:
            raise unread[0]
        _check_stall_limits(options)
        _check_shared_rules(options, flags, env, switches.get("no_wait", False))
        _check_checkpoint_dir(settings)
        _check_idle(settings)
    except EntrypointError as err:
        # what was read carries the refusal, so a starting node can still tell node 0 why it will not start
        # (``checkin/refusal.tell_node_0``: node 0 would otherwise wait out its deadline; walk7 B48)
        err.settings = settings
        raise
    return settings


FIRST_ONLY = "--node"  # read only as the first argument (``__main__``): --node ACTION, or --node=ACTION


def _option_as_value(word, words=False):
    """What ``word``, the word after an option that takes a value, is when it is no value but the separator or
    another option of this parser (``--checkpoint-dir $CKPT -- train.py`` with CKPT unset; walk13 B18), or None.
    One rule for every option, as argparse's: the separator, a flag, a switch, --help/--version and --node
    (``--nnodes``, ``--nnodes=2``) are never read as a value. Any other word is the value, even one that starts
    with a dash (--launcher-options '--tee 3'); ``--option=--`` gives such a value on purpose. A word list's value
    (``words``: --launcher-options, --setup, --profile-options) holds another program's options, so there a word
    with its own value (``--max-restarts=3``, torchrun's) is that program's, not this parser's."""
    if word == "--":
        return "the separator '--' (an empty or unset shell variable before it?)"
    name, eq, _ = word.partition("=")
    if eq and words:
        return None
    if name in BY_FLAG or name in FLAGS or name in ("-h", "--help", "--version", FIRST_ONLY):
        return f"{word!r}, another option of nodeweave-entrypoint (an empty or unset shell variable before it?)"
    return None


def _check_checkpoint_dir(settings):
    """The checkpoint folder by the spec's rule for recovery.checkpoint_dir (``ownfolders``): not nodeweave's
    folders, the workspace itself, the training script nor a file, a link judged where it leads. The workspace is
    the folder the node runs in; its disk is looked at on a live node only (a captured tree has none)."""
    from ..ownfolders import CHECKPOINT_DIR_ACCEPTED, checkpoint_dir_problem

    folder = settings.get("checkpoint_dir")
    if not folder or not settings.get("recovery"):
        return
    _check_checkpoint_dir_mounted(settings, folder)
    here = os.getcwd()
    if here == os.sep:
        return  # not a workspace: every rendered node runs in workspace.path (compose, pods, Slurm's --chdir)
    script = settings.command[0] if settings.command and not settings.command[0].startswith("-") else None
    what = checkpoint_dir_problem(folder, here, script, here if settings.sysroot in ("/", "") else None)
    if not what and settings.sysroot in ("/", ""):
        what = _holds_node_state(folder, here, settings.env)
    if what:
        raise UsageError(f"{_named(settings, 'checkpoint_dir')}: {folder!r} is {what}; accepted: "
                         + CHECKPOINT_DIR_ACCEPTED)


def _check_checkpoint_dir_mounted(settings, folder):
    """A checkpoint folder in a system folder (/opt, /srv, /var/lib ...) is taken only on a mount of its own, as
    /proc/self/mountinfo lists this node's (under --sysroot for a captured tree): the table's rule, which validate
    applies to recovery.checkpoint_dir with the spec's volumes and the host's verbs to their folders (replay11
    B21/B22: NODEWEAVE_CHECKPOINT_DIR=/var/lib/ck was taken where --runs-dir refused it)."""
    from ..systemfolders import in_system_folder, mount_points
    from .shared_rules import CHECKPOINT_DIR_ACCEPTED

    if not folder.startswith("/"):
        return
    points = mount_points(settings.sysroot or "/")
    what = in_system_folder(folder, points, "of this node (/proc/self/mountinfo lists none at or above it)"
                            if points else "known (/proc/self/mountinfo could not be read)")
    if what:
        raise UsageError(f"{_named(settings, 'checkpoint_dir')}: {what}; accepted: {CHECKPOINT_DIR_ACCEPTED}")


def _holds_node_state(folder, here, env):
    """What the checkpoint folder is when it holds, or is inside, ``$TMPDIR/nodeweave``: node 0's own state (the
    recovery book, check-in records, run folders, flight dumps), which it would scan for saves at every restart,
    as ``.nodeweave/`` and ``runs/`` are refused in the workspace (walk8 B44). '' when apart."""
    from ..running.runstate import state_root

    state = os.path.realpath(state_root(env))
    real = os.path.realpath(os.path.join(here, folder))
    if real == state or state.startswith(real.rstrip(os.sep) + os.sep) or real.startswith(state + os.sep):
        how = "holds" if state.startswith(real.rstrip(os.sep) + os.sep) else "is in"
        return (f"a folder that {how} this node's own state ({state}: $TMPDIR/nodeweave, the recovery book, check-in "
                "records and run folders), which node 0 would read as the script's saves at every restart")
    return ""


def _named(settings, key):
    """Where a setting came from, as the user typed it: ``--profile-options`` or ``NODEWEAVE_PROFILE_OPTIONS``."""
    source = settings.source(key)
    return source[len("flag "):] if source.startswith("flag ") else source


# What --status reads of its flags (docs/entrypoint.md: "from any shell: no node count or rank needed"): where node
# 0's exchange is (its master's address, or the service names that make it; the port; a captured tree's own), the
# job it asks (its id) and how large an answer to take (the node count: ``wire.frame_limit``). Each other flag
# plans a node --status does not start.
STATUS_READS = ("master_addr", "service", "cluster_domain", "hostfile", "master_port", "exchange", "exchange_port",
                "job_id", "nnodes", "sysroot")


def mode_problems(settings, typed=None):
    """What the mode this entrypoint runs in (``--status``, ``--explain``) does not read, as ``idle_problems``'s
    (message, accepted): checked before any value or rule of a setting the mode would not read, so the first
    refusal is the one a person acts on (walk16b B22: ``--status --spares 1`` was told to add ``--recovery on``,
    then that ``--spares`` does nothing with ``--status``). ``typed``: the keys of the flags typed (parse's), else
    those of the settings."""
    found = []
    for flag, wanted in (("--all", settings.all_rows), ("--stacks", settings.stacks)):
        if wanted and not settings.status:
            found.append((f"{flag} does nothing without --status (it shapes --status's answer)",
                          f"--status {flag}, or leave {flag} out"))
    if settings.status and settings.explain:
        found.append(("--explain and --status do two different things (this node's plan; node 0's view of the "
                      "running job): give one", "--explain, or --status"))
    if settings.json and not settings.explain:
        found.append(("--json does nothing without --explain" + (" (--status answers in JSON already)"
                                                                  if settings.status else ""),
                      "--explain --json, or leave --json out"))
    if settings.status and settings.command:
        # a command beside --status was ignored without a word (walk13 B12): --status only asks, it starts nothing
        command = " ".join(settings.command)
        found.append((f"--status takes no command: it asks node 0 of the running job and starts nothing, so "
                      f"{command!r} would do nothing", f"--status alone, or leave '{command}' out"))
    if settings.status:
        # walk14b B10: --node-rank, --launcher, --metrics-port beside --status were dropped without a word, and
        # --spares with --recovery on planned recovery for a query (exit 3): a flag it does not read is refused
        if typed is None:
            typed = [key for key in settings.flags if key not in settings.flag_sources] + \
                [key for key, value in settings.options.items() if value.source.startswith("flag ")]
        unread = [key for key in typed if key not in STATUS_READS]
        if unread:
            flag = BY_KEY[unread[0]].flag  # a flag typed, each one
            reads = ", ".join(BY_KEY[key].flag for key in STATUS_READS)
            found.append((f"{flag} does nothing with --status: it asks node 0's check-in exchange of the running "
                          "job and plans no node here, so it reads only where that exchange is, which job it is "
                          f"and how many nodes it has ({reads})", f"--status with those only, or leave {flag} out"))
    return found


def idle_problems(settings):
    """Every flag or variable that does nothing given the others, as (message, accepted): each is refused in
    one line naming both, as the spec's switched-off fields are (``shared_rules.SWITCHED``, which holds the
    settings that are spec fields too; these are the entrypoint's own). A variable the container's environment
    set is not the mistake where a flag turned its switch off over it (``nodeweave check`` runs a node so)."""
    from .exchange_plan import switched_off

    found = mode_problems(settings)
    if settings.status and not settings.explain:
        why = switched_off(settings) if settings.sysroot in ("/", "", None) else None
        if why:
            found.append((f"--status asks node 0's check-in exchange, which is off here ({why}): there is nothing "
                          "to ask", "--status without turning the exchange off (leave --exchange off, --no-wait "
                          "and --wait-timeout 0 out)"))
    if settings.no_wait and settings.source("wait_timeout").startswith("flag "):
        found.append((f"--wait-timeout {settings.get('wait_timeout')} does nothing with --no-wait (nothing is "
                      "waited for)", "--no-wait, or --wait-timeout N"))
    if settings.get("profile_options") and not settings.get("profile"):
        name = _named(settings, "profile_options")
        found.append((f"{name} does nothing without NODEWEAVE_PROFILE (--profile): no profiler runs to read them",
                      f"--profile nsys or rocprofv3 beside it, or leave {name} out"))
    from .contract import FAULT_CHECKS

    if settings.get("straggler_is_fault") and settings.get("straggler_fault") == 0 \
            and settings.source("straggler_fault") != "default":
        name = _named(settings, "straggler_fault")
        switch = _named(settings, "straggler_is_fault")
        found.append((f"{name} 0 (never a straggler fault) contradicts {switch} on (recovery replaces a lasting "
                      "straggler's node)", f"{name} above 0, or leave {name} out for {FAULT_CHECKS} checks in a row, "
                      f"or {switch} off"))
    watch_off = settings.get("stall_warn") == 0
    if watch_off and settings.get("straggler_fault"):
        name = _named(settings, "straggler_fault")
        found.append((f"{name} {settings.get('straggler_fault')} does nothing with {_named(settings, 'stall_warn')} 0 "
                      "(the stall watch, which names stragglers, is off)",
                      f"a stall_warn above 0 (default 60), or leave {name} out"))
    return found


def check_no_wait(settings):
    """--no-wait with recovery on: the third way to the exchange off, refused like NODEWEAVE_EXCHANGE=off and
    NODEWEAVE_WAIT_TIMEOUT=0 are (``shared_rules.recovery_needs_exchange``; walk7 B33). Checked where a node
    starts or explains its start, not in ``parse``: ``nodeweave doctor`` parses a recovery node's environment with
    --no-wait of its own, to plan without waiting."""
    if settings.no_wait and settings.get("recovery"):
        name = _named(settings, "recovery")
        raise UsageError(f"--no-wait with {name} on: --no-wait switches the check-in exchange off too (nothing "
                         f"waits for node 0, nothing checks in), and recovery runs on it; accepted: leave --no-wait "
                         f"out, or turn {name} off")


def _check_mode(settings, typed):
    found = mode_problems(settings, typed)
    if found:
        message, accepted = found[0]
        raise UsageError(f"{message}; accepted: {accepted}")


def _check_idle(settings):
    found = idle_problems(settings)
    if found:
        message, accepted = found[0]
        raise UsageError(f"{message}; accepted: {accepted}")


def _check_shared_rules(options, flags, env, no_wait=False):
    """The rules the spec's fields obey (``shared_rules``), on the flags and variables: the first one broken is
    refused, naming where it came from (a spec that passes validate renders nothing that breaks one)."""
    from . import shared_rules

    def name(key):
        source = sources[key].source if key in sources else BY_KEY[key].variable
        return source[len("flag "):] if source.startswith("flag ") else source

    values = {key: value.value for key, value in options.items()}
    if no_wait:
        values["no_wait"] = "--no-wait"
    given = set(options)
    # what the flags alone turn off (every switch on where no flag speaks): that is the flags' doing
    by_flags = dict({switch: True for switch in shared_rules.SWITCHED}, no_wait=values.get("no_wait"),
                    **{key: value.value for key, value in options.items() if value.source.startswith("flag ")})
    plain = shared_rules.Naming(str)
    for switch, dependents in shared_rules.SWITCHED.items():
        if shared_rules.switch_off(by_flags, switch, plain):
            # a flag that turns a switch off over the container's environment (`nodeweave check` runs a recovery
            # job's nodes with --recovery off, doctor with --no-wait): the variables that environment set for it
            # are not the mistake. Only off: a flag turning a switch on leaves every variable to the rules, as the
            # same setting given as a flag is (walk14b B1, B2: NODEWEAVE_SPARES=5000 with --recovery on was taken)
            given -= {key for key in dependents if key in options and not options[key].source.startswith("flag ")}
    nnodes = flags.get("nnodes") or env.get("NODEWEAVE_NNODES", "")  # as given: ' 2' is refused, not read as 2
    if nnodes.strip():
        from .topology import normalize_nnodes

        # the one parser of the count, before any rule reads it: a malformed count (01, a full-width 1, 2-4) is
        # named as malformed, never read loosely as 1 and blamed on a rule (walk7 B10)
        source = "flag --nnodes" if flags.get("nnodes") else "NODEWEAVE_NNODES"
        from .slurm import training_most_of
        from .sources import hostfile_lines

        most = training_most_of(env, values.get("recovery"), values.get("spares"),
                                hostfile_lines(values.get("hostfile")))  # B9, B8
        values["nnodes"] = normalize_nnodes(nnodes, name_of(source), most)[2]  # the count's maximum
        given.add("nnodes")
        sources = dict(options, nnodes=Value(value=nnodes, source=source))
    else:
        sources = options
    found = shared_rules.problems(values, given, shared_rules.Naming(name))
    if found:
        problem = found[0]
        raise UsageError(f"{name(problem.key)}: {problem.problem}; accepted: {problem.accepted}")


def name_of(source):
    """A source as the user typed it: ``--nnodes`` for ``flag --nnodes``."""
    return source[len("flag "):] if source.startswith("flag ") else source


def _check_stall_limits(options):
    """The stall warning and stop given together must both be able to happen (``stall_problem``)."""
    from .contract import STALL_TIMEOUT_S, STALL_WARN_S, stall_problem

    warn, timeout = options.get("stall_warn"), options.get("stall_timeout")
    problem = stall_problem(warn.value if warn else STALL_WARN_S, timeout.value if timeout else STALL_TIMEOUT_S,
                            timeout is not None)
    if problem is not None and (warn or timeout):
        given = ", ".join(f"{v.value} (from {v.source})" for v in (warn, timeout) if v)
        raise UsageError(f"{problem[0]} ({given}); accepted: {problem[1]}")


def parse_int(text, what, source, minimum=0):
    """An integer ≥ minimum, or a UsageError naming the value and its source."""
    return read_int(minimum)(text, what, source)
