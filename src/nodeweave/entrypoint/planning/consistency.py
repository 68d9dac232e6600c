"""Values that contradict each other or the machine are never silently accepted.

:mod:`topology` makes every field's claims agree; this module holds the
checks that weigh one value against another kind of fact:

- the hostname ordinal against the rank the other sources give (a
  StatefulSet or Indexed Job pod's ordinal *is* its index);
- ``WORLD_SIZE`` and ``RANK`` against every node's processes (their sum; the counts before this node are its
  first global rank: :mod:`world`) and the node rank;
- a defaulted single node against anything that says there are more nodes;
- Slurm's or MPI's tasks per node against one launcher per node;
- ``*_VISIBLE_DEVICES`` and the chosen socket interfaces against the node.

A malformed value is exit 2 (UsageError), a contradiction exit 3
(TopologyError); each message names the variable, its value and what would
be accepted.
"""

import os

from .contract import read_host, read_int
from ..detection.host import host_networking
from ..errors import TopologyError
from ..model import FLAG, HOSTNAME
from .rules import emit
from .. import world

LAUNCHERS_WITH_WORKERS = ("torchrun", "deepspeed", "accelerate")


def weigh_ordinal(rank, rank_claim, ordinal, claims, scene, warnings):
    """(rank, source): the decided rank checked against the hostname ordinal, or the ordinal when none.

    A ``<name>-<N>`` hostname that survived the host-networking test was given
    to this container (a StatefulSet or Indexed Job pod, a compose service),
    so ``N`` is its index, and a variable that says otherwise is baked into a
    template that every node shares. Only a platform that names its pods its
    own way (a row's ``own_naming``: Kubeflow's master/worker pods, LWS,
    SageMaker's ``algo-N``, Slurm, MPI, a hostfile, ...) or a flag may differ from it; where that naming gives
    a rank by a rule of its own (a row's ``rank_of``: Kubeflow's worker N is node rank N+1 beside a master pod),
    the rank is weighed against that rule, never "agrees" by a coincidence of numbers.
    """
    if ordinal is None:
        return rank, rank_claim.source if rank_claim else None
    number = int(ordinal.value)
    if rank is None:
        return number, ordinal.source
    source = rank_claim.source
    if rank_claim.tier == FLAG and "node_rank" in scene.settings.flag_sources:
        return rank, source  # recovery's own rank for a derived plan (a spare's place): no pod's ordinal to weigh
    prefix = next(c.value for c in claims["prefix"])
    owner = next((c.origin for c in claims["node_rank"] if c.tier != HOSTNAME and c.origin.own_naming(prefix)),
                 None)
    named = owner.rank_of(prefix, number, scene.env) if owner else (number, "")
    if named is None:  # a platform whose pod names give no rank: no "agrees" by a coincidence of numbers
        scene.notes.append(f"node rank: the {ordinal.source} is no rank under {owner.name}, which names its pods "
                           "its own way")
        return rank, source
    implied, rule = named
    if rank == implied:
        scene.notes.append(f"node rank: {ordinal.source} agrees with {source}" +
                           (f" (under {owner.name}, {rule})" if owner else ""))
    elif rank_claim.tier == FLAG:
        emit(warnings, "flag-overrides-source", f"node rank: {source} ({rank}) overrides the {ordinal.source}")
    elif owner:
        raise TopologyError(
            f"node rank sources disagree: {source} but {scene.name_source} {scene.pod_name!r} is node rank {implied} "
            f"under {owner.name} ({rule}); a rank baked into a template every pod shares gives them all rank "
            f"{rank}; remove {source.partition('=')[0]} (the operator sets it), or pass --node-rank to override")
    else:
        raise TopologyError(
            f"node rank sources disagree: {source} but {scene.name_source} {scene.pod_name!r} has ordinal {number}, "
            f"this {'pod' if scene.kube else 'container'}'s index (a rank baked into a template every node shares "
            f"gives them all rank {rank}); remove {source.partition('=')[0]}, or pass --node-rank to override")
    return rank, source


def _is_local(host, node):
    from ..hostport import host_key

    short = host_key(host).split(".")[0]  # VM is vm (hostport.host_key; walk13 B4)
    return (host_key(host) in ("localhost", "::1") or host.startswith("127.")
            or short == host_key(node.hostname).split(".")[0] or any(host in iface.ipv4 for iface in node.interfaces))


def multi_node_signal(claims, node, nproc):
    """What says this is one node of several, when no node count does; None when nothing does."""
    for claim in claims.get("rank", ()):
        if read_int(0)(claim.value, "rank", claim.source) >= nproc:
            return f"{claim.source} is a rank beyond this node's {nproc} process(es)"
    for claim in claims.get("world_size", ()):
        if read_int(1)(claim.value, "world size", claim.source) > nproc:
            return f"{claim.source} counts more processes than this node's {nproc}"
    for claim in claims.get("master_addr", ()):
        if not _is_local(read_host(claim.value, "master address", claim.source), node):
            return f"{claim.source} names another host as the master"
    return None


def _job(lo, hi, nproc, nproc_source, procs):
    """How the plan counts the job's processes, for a refusal: ``2 node(s) x 4 process(es) per node (...)`` or
    the uneven counts' sum."""
    if procs is not None and not world.even(procs):
        return f"{world.described(procs)} = {world.world_size(procs)} (this node {nproc}, {nproc_source})"
    nodes = str(hi) if lo == hi else f"{lo}..{hi}"
    return f"{nodes} node(s) x {nproc} process(es) per node ({nproc_source})"


def check_processes(claims, rank, lo, hi, nproc, nproc_source, procs=None, counts=None):
    """``WORLD_SIZE`` must count this job (processes, or pods as older Kubeflow does); ``RANK`` must be this node's.
    ``procs``: every node's processes (a fixed-size job, :mod:`world`), whose sum is the world size and whose
    counts before this node are its first global rank; None (elastic): ``nodes x nproc`` for each count.
    ``counts``: the node counts the job may be said to have (:func:`job_counts`; ``lo..hi`` when None)."""
    counts = counts or list(range(lo, hi + 1))
    totals = _totals(counts, nproc, procs)
    for claim in claims.get("world_size", ()):
        value = read_int(1)(claim.value, "world size", claim.source)
        if value not in set(totals) | set(counts):
            raise TopologyError(
                f"{claim.source} contradicts {_job(lo, hi, nproc, nproc_source, procs)}; accepted: "
                f"{_either(totals, counts, hi)}, or unset it: nodeweave exports WORLD_SIZE")
    for claim in claims.get("rank", ()):
        value = read_int(0)(claim.value, "rank", claim.source)
        ranks = world.ranks_of(procs, rank) if procs is not None else range(rank * nproc, rank * nproc + nproc)
        if value != rank and value not in ranks:
            before = ("" if procs is None or world.even(procs) else
                      f", the {ranks[0]} process(es) of the nodes before it first")
            raise TopologyError(
                f"{claim.source} contradicts node rank {rank} with {nproc} process(es) on this node{before}; "
                f"accepted: {rank} (this pod's rank) or {ranks[0]}..{ranks[-1]} (its processes' global ranks), "
                "or unset it")


def job_counts(lo, hi, training=None):
    """The node counts a platform's count variable (``WORLD_SIZE``, ``ROLE_WORLD_SIZE``, ``GROUP_WORLD_SIZE``) may
    name: ``lo..hi``; under recovery with spares, whose plan counts every container (``hi``), the ``training``
    nodes too: a platform counts every pod (Kubeflow's PyTorchJob), nodeweave exports the training nodes'. They
    are judged once, on the plan a node checks in with; a generation's plan, or ``--explain``'s of generation 0,
    leaves them out (``recovery.setup.derived``: walk16b B19-B21, where 2 was refused before the check-in and 3
    after it)."""
    return sorted(set(range(lo, hi + 1)) | ({training} if training else set()))


def _totals(counts, nproc, procs):
    """The processes of each node count in ``counts``: the first nodes' slots summed when they differ."""
    if procs is not None:
        return sorted({world.world_size(procs[:n]) for n in counts if n <= len(procs)})
    return sorted({n * nproc for n in counts})


def _either(totals, counts, hi):
    """What a count variable may say: ``4 (processes) or 2 (pods)``; with the training nodes apart from every
    container (recovery's spares), which is which."""
    if len(counts) == 2 and counts[-1] == hi and totals == counts:
        return (f"{counts[0]} (the training nodes, as nodeweave exports it) or {counts[1]} (every container, spares "
                "too: the platform's count)")
    if len(counts) == 2 and counts[-1] == hi and len(totals) == 2:
        return (f"{totals[0]} (the training nodes' processes, as nodeweave exports it), {totals[1]} (every "
                f"container's, spares too: the platform's count) or {counts[0]} or {counts[1]} (pods)")
    return f"{max(totals)} (processes) or {hi} (pods)"


def _worker_values(rank, lo, hi, nproc, procs=None, counts=None):
    """What each per-process variable of torchrun's (and the unread NPROC_PER_NODE) may hold in this plan."""
    counts = counts or list(range(lo, hi + 1))
    ranks = world.ranks_of(procs, rank) if procs is not None else range(rank * nproc, rank * nproc + nproc)
    return {
        "LOCAL_WORLD_SIZE": ([nproc], "processes per node"),
        "NPROC_PER_NODE": ([nproc], "processes per node"),
        "LOCAL_RANK": (list(range(nproc)), "a process's index on its node"),
        "GROUP_RANK": ([rank], "this node's rank"),
        "GROUP_WORLD_SIZE": (counts, "nodes"),
        "ROLE_RANK": (list(ranks), "a process's global rank on this node"),
        "ROLE_WORLD_SIZE": (_totals(counts, nproc, procs), "processes in the job"),
    }


def _accepted(values):
    if len(values) == 1:
        return str(values[0])
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return " or ".join(str(value) for value in values)


def check_worker_variables(env, rank, lo, hi, nproc, nproc_source, notes, procs=None, counts=None):
    """torchrun's per-process variables (``LOCAL_WORLD_SIZE``, ``LOCAL_RANK``, ``GROUP_RANK``, ``ROLE_*``) set
    for the node, and ``NPROC_PER_NODE`` (which neither torchrun nor nodeweave reads): a value the plan
    contradicts is refused as ``WORLD_SIZE`` is (exit 3, walk2 M6); one that fits is noted as replaced."""
    for name, (values, what) in _worker_values(rank, lo, hi, nproc, procs, counts).items():
        text = env.get(name, "").strip()
        if not text:
            continue
        value = read_int(0)(text, what, f"{name}={text}")
        if value not in values:
            fix = ("set the count with --nproc-per-node (NODEWEAVE_NPROC_PER_NODE, the spec's gpus_per_node)"
                   if name == "NPROC_PER_NODE" else "the launcher sets it for each process it starts")
            raise TopologyError(
                f"{name}={text} contradicts {_job(lo, hi, nproc, nproc_source, procs)}, node rank {rank}; accepted "
                f"({what}): {_accepted(values)}, or unset it: {fix}")
        notes.append(f"{name}={text} fits the plan; "
                     + ("nothing reads it (the count is --nproc-per-node)" if name == "NPROC_PER_NODE" else
                        "the launcher replaces it for each process it starts"))


def check_tasks(claims, launcher):
    """One launcher per node: a scheduler's extra tasks on a node (Slurm, MPI) would each start a whole launcher."""
    for claim in claims.get("tasks_per_node", ()):
        if int(claim.value) > 1 and launcher in LAUNCHERS_WITH_WORKERS:
            origin = claim.origin
            raise TopologyError(
                f"{claim.source}: {origin.name} starts {claim.value} tasks on a node and each would start its own "
                f"{launcher}, {claim.value} times the processes; nodeweave runs one launcher per node, which starts "
                f"the processes: {origin.one_task} (launcher command runs one command per task)")


def hidden_by_empty(node, env):
    """A ``*_VISIBLE_DEVICES`` set but empty on a node with GPUs (``-e HIP_VISIBLE_DEVICES=$DEVS`` with DEVS
    unset): the runtimes read it as "no GPU", so the node would train on its CPU; said, since every other empty
    variable is read as unset (walk7 B23)."""
    from ..detection.gpu import visible_layers

    gpus = node.gpus
    if not gpus or not gpus.devices:
        return []
    return [f"{name} is set but empty: the runtime then sees no GPU, so this node's {len(gpus.devices)} x "
            f"{gpus.devices[0].model or 'GPU'} would train on its CPU with gloo; unset it or give the indices "
            f"(0..{len(gpus.devices) - 1})" for name, value in visible_layers(gpus, env) if not value.strip()]


def check_machine(node, settings):
    """Settings that name hardware this node does not have."""
    gpus = node.gpus
    if gpus and gpus.visible_invalid:
        from ..detection.gpu import visible_layers

        value = settings.env.get(gpus.visible_env, "")
        total = len(gpus.devices)
        layers = visible_layers(gpus, settings.env)
        before = layers[:[name for name, _ in layers].index(gpus.visible_env)] if gpus.visible_env in dict(layers) \
            else []
        if before:  # ROCm: HIP_VISIBLE_DEVICES indexes what ROCR_VISIBLE_DEVICES left (walk7 B24)
            from ..detection.gpu import visible_entries

            name, first = before[-1]
            left = len(visible_entries(gpus, first)[0])
            raise TopologyError(
                f"{gpus.visible_env}={value}: {', '.join(gpus.visible_invalid)} indexes past the {left} GPU(s) "
                f"{name}={first} leaves (ROCm applies {name} first, then {gpus.visible_env} over what it left), so "
                "the runtime would drop it and every entry after it, silently shrinking the job; accepted: "
                + (f"indices 0..{left - 1} (of what {name} leaves)" if left else f"none: {name} leaves no GPU")
                + f", or unset one of the two")
        raise TopologyError(
            f"{gpus.visible_env}={value}: {', '.join(gpus.visible_invalid)} names no GPU of this node, which has "
            f"{total}; the runtime would drop it and every entry after it, silently shrinking the job; accepted: "
            f"indices 0..{total - 1} or these GPUs' UUIDs")
    chosen = settings.get("interfaces") or []
    names = [iface.name for iface in node.interfaces]
    missing = [name for name in chosen if name not in names]
    if missing and names:
        raise TopologyError(
            f"{settings.source('interfaces')}={','.join(chosen)}: {', '.join(missing)} is not an interface of "
            f"this node; accepted: {', '.join(names)} (names under /sys/class/net)")


# Programs a command may start with that a launcher with workers would be handed as its Python script (the one
# table: ``nodeweave run``'s habit, cli/habits/dashes.py, reads its shells and programs from here).
PROGRAMS = {**dict.fromkeys(("sh", "bash", "zsh", "dash", "ksh", "fish"), "a shell"), "env": "a program",
            "uv": "a program", **dict.fromkeys(LAUNCHERS_WITH_WORKERS, "a launcher")}


def program_not_script(word):
    """What ``word`` (a command's first word) names when it is an interpreter or launcher, not a script: "the
    Python interpreter", "a shell", ...; None for anything else."""
    name = word.rsplit("/", 1)[-1]
    for python in ("python", "pypy"):
        if name.startswith(python) and set(name[len(python):]) <= set("0123456789."):
            return "the Python interpreter"
    return PROGRAMS.get(name)


def script_kind(path):
    """What the script at ``path`` is when it is no Python file a launcher can run with ``python``: "a shell
    script (#!/bin/bash)", "an executable program (ELF)", "a Jupyter notebook"; None for a Python file (or one
    that cannot be read: the launcher says why)."""
    if path.endswith(".ipynb"):
        return "a Jupyter notebook (export it: jupyter nbconvert --to script)"
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if head.startswith(b"\x7fELF"):
        return "an executable program (ELF)"
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if first.startswith("#!") and "python" not in first and not _python_source(path):
        # judged by content, whatever the name (walk9 B18: a .py holding `#!/bin/bash` was taken, and every rank
        # died of a SyntaxError): a .py whose shebang names another program but which is Python
        # (`#!/usr/bin/env -S uv run --script`: a comment to python) is run
        return f"a script for another interpreter ({first})"
    if not first.startswith("#!") and path.endswith((".sh", ".bash")):
        return "a shell script (.sh)"
    return None


SOURCE_READ_MAX = 1 << 20  # a script longer than this is not compiled to judge it: taken as Python


def _python_source(path):
    """Whether the file at ``path``, named ``.py``, compiles as Python (its shebang a comment); False for any
    other name, whose shebang says what runs it."""
    if not path.endswith(".py"):
        return False
    try:
        with open(path, "rb") as handle:
            source = handle.read(SOURCE_READ_MAX + 1)
    except OSError:
        return True
    if len(source) > SOURCE_READ_MAX:
        return True
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    except (ValueError, TypeError):  # a NUL byte: no Python either
        return False
    return True


def no_script(launcher, command, script=None, verb="nodeweave run"):
    """Why a launcher with workers would be given no script, or None: the command starts with an option the
    launcher does not take (``--lr 1e-3``, a script's own flags given without the script), so every node's
    launcher reads it as its own and exits 2 (walk6 W12). The one rule for the entrypoint's start and plan and
    for ``nodeweave run`` (``cli/habits/dashes.launcher_command``); ``script``: the spec's, to name in the fix."""
    if launcher not in LAUNCHERS_WITH_WORKERS or not command:
        return None
    own = own_option(launcher, command, verb)
    if own is not None:
        return own
    program = program_not_script(command[0])
    if program:  # walk8 B12: `-- python train.py`, copied from a single-GPU README or a container CMD
        import shlex

        rest = " ".join(shlex.quote(word) for word in command[1:]) or "SCRIPT"
        fix = (f"a shell script runs with NODEWEAVE_LAUNCHER=command (launcher.type: command): {verb} -- "
               f"{shlex.quote(command[0])} {rest}" if program == "a shell" else
               f"{'nodeweave starts the launcher itself on every node; ' if program == 'a launcher' else ''}give the "
               f"script first: {verb} -- {rest}")
        return (f"the command starts with {command[0]!r}, {program}, not a script: {launcher} runs the script with "
                f"Python itself, so every rank would run `python {command[0]} ...`; {fix}")
    if not command[0].startswith("-") or command[0] == "-":
        return None
    from .launcher_table import OPTIONS

    if command[0].split("=", 1)[0] in OPTIONS.get(launcher, ()):
        return None  # the launcher's own (torchrun -m pkg.module, --no-python): it reads the script after it
    import shlex

    given = " ".join(shlex.quote(word) for word in command)
    if command[0].endswith(SCRIPT_SUFFIXES):  # a file named -x.py (walk15 A6): its path, written so no launcher
        fixed = " ".join(shlex.quote(word) for word in ["./" + command[0], *command[1:]])  # reads it as an option
        return (f"the command {given!r} starts with {command[0]!r}, which {launcher} would read as its own option "
                f"and exit 2 on every node; a script whose name starts with '-' is given as its path: {verb} -- "
                f"{fixed}")
    return (f"the command {given!r} starts with {command[0]!r}, an option {launcher} does not take, and names no "
            f"script: {launcher} would read it as its own option and exit 2 on every node; the command after `--` "
            f"is the script, then its arguments: {verb} -- {shlex.quote(script) if script else 'SCRIPT'} {given}")


# The names of a script file, never of an option: a first word ending so that starts with '-' is a file named so.
SCRIPT_SUFFIXES = (".py", ".sh")


def own_option(launcher, command, verb="nodeweave run"):
    """Why the command's launcher options set one nodeweave passes the launcher itself, or None: the launcher
    takes the last of the two, so the plan's count, rank or master would say one thing and the job do another
    (walk6 N7). Read from ``launcher_options``' table, as the spec's launcher.options are."""
    from .launcher_options import RUN_FLAGS, command_clash, own_option_field

    found = command_clash(launcher, command)
    if found is None:
        return None
    import shlex

    word, own = found
    index = command.index(word)
    takes_value = "=" not in word and index + 1 < len(command) and not command[index + 1].startswith("-") \
        and not command[index + 1].endswith(".py")
    rest = command[:index] + command[index + (2 if takes_value else 1):]
    value = word.split("=", 1)[1] if "=" in word else command[index + 1] if takes_value else ""
    flag = RUN_FLAGS.get(word.split("=", 1)[0])
    field = own_option_field(own)
    instead = (f"; for one run: {verb} {flag} {value} -- {' '.join(shlex.quote(w) for w in rest)}"
               if flag and verb == "nodeweave run" and value.isdigit() else "")
    spec_field = ":" not in field  # a field of the spec, not the node's plan or its rendezvous
    from .contract import SETTINGS

    variables = [row.variable for row in SETTINGS if row.spec and row.spec in field.split(" and ")]
    named = f"{field} ({', '.join(variables)} on a node)" if variables else field
    change = f"set the spec's {named} instead, and leave it out" if spec_field else "leave it out"
    return (f"the command's {word!r} sets {launcher}'s {own}, which nodeweave passes {launcher} itself (from "
            f"{'the spec' + chr(39) + 's ' if spec_field else ''}{field}): {launcher} would take the command's, while "
            f"the plan (WORLD_SIZE, ranks, the check-in) keeps its own; {change} of the command: {verb} -- "
            f"{' '.join(shlex.quote(w) for w in rest)}{instead}")


def start_problem(launch, settings, cwd):
    """The error the start stops with before any wait (the script the launcher would start is not here, the
    launcher itself would not start), or None. ``--explain`` says the same: the script as an error (exit 2), the
    launcher as the ``command-not-found`` warning (the plan is often read off the node, where the image's
    launcher is not installed)."""
    from ..errors import EntrypointError, UsageError
    from .programs import launcher_missing

    if launch is None:
        return None
    problem = missing_script(launch.launcher, settings.command, cwd)
    if problem:
        return UsageError(problem)
    missing = launcher_missing(launch.launcher, settings.command, settings)
    if not missing and settings.get("profile"):
        from ..running.profile import profiler_missing

        missing = profiler_missing(settings)
    return EntrypointError(*missing) if missing else None


# Programs that are never a Python script, by name at any path: a shell, env (`/usr/bin/env python train.py` hands
# env to Python), uv: PROGRAMS' rows that are not launchers (one table).
SHELLS = tuple(name for name, kind in PROGRAMS.items() if kind != "a launcher")


def is_a_program(word, is_file):
    """Whether ``word``, the first word after ``--`` that a Python launcher (torchrun, deepspeed, accelerate) would
    hand its Python, names a program rather than a script: a shell or env by name (any path), or a bare name with
    no ``.py`` suffix that ``is_file`` (the workspace's files) does not find: ``nvidia-smi``, which the image holds
    and this machine may not (issue 43 A30). An option (``-m pkg``, ``--no-python``) is the launcher's, never one.
    The one rule for ``nodeweave run`` and the entrypoint's start and plan."""
    if not word or word.startswith("-"):
        return False
    if word.rsplit("/", 1)[-1] in SHELLS:
        return True
    return "/" not in word and not word.endswith(".py") and not is_file(word)


def program_problem(launcher, word, verb, run_as_given):
    """The one line refusing program ``word`` under Python launcher ``launcher``; ``run_as_given``: how this verb
    runs a command as given (``--launcher command`` for ``nodeweave run``)."""
    return (f"`{word}` is a program, not a Python script: {launcher} starts what follows `--` with the image's "
            f"Python (`python {word} ...`), and {word} is no .py and no file of the workspace, so every rank would "
            f"fail whatever the image holds; run a command as given with {run_as_given}, or on every node with "
            f"`nodeweave exec -- ...`; for a script, give its path in the workspace ({verb} -- train.py ARGS)")


def script_slip(script):
    """The script word's own slip, by the rules paths and values follow (``systemfolders``): white space at an
    edge (a YAML string's), or ``$NAME``/``~`` no shell expanded (a quoted ``"$SCRIPT"`` in a compose command); None
    when it has none. Asked only of a word that names no file here."""
    from ..systemfolders import unexpanded

    if script != script.strip():
        where = "ends" if script[-1:].isspace() else "starts"
        return f"{script!r} {where} in white space, which names another file: write it as {script.strip()!r}"
    return unexpanded(script)


def _is_file_in(folder, name):
    return os.path.isfile(os.path.join(folder, name))


def script_word(launcher, command):
    """The word of ``command`` that names the Python script every rank runs, or None: the first word under a
    launcher with workers (unless an option: the launcher's own), the word after ``python`` under
    ``launcher: command``. The one reading: the start's check that it is there and the check-in's digest of it."""
    if launcher in LAUNCHERS_WITH_WORKERS and command and not command[0].startswith("-"):
        return command[0]
    if launcher == "command" and len(command) > 1 and command[0].rsplit("/", 1)[-1].startswith("python") \
            and not command[1].startswith("-"):
        return command[1]
    return None


def missing_script(launcher, command, cwd):
    """The one-line reason a Python script the launcher would start on every rank is not there, or None."""
    first = no_script(launcher, command, verb="nodeweave-entrypoint")
    if first:
        return first
    script = script_word(launcher, command)
    if script is None:
        return None
    if os.path.isfile(os.path.join(cwd, script)):
        kind = script_kind(os.path.join(cwd, script)) if launcher in LAUNCHERS_WITH_WORKERS else None
        if kind:  # walk8 B11: each rank died with a SyntaxError at the shebang's next line, after the check-in
            return (f"script {script!r} is {kind}, which launcher {launcher} would run with Python on every rank; "
                    "accepted: a Python file, or NODEWEAVE_LAUNCHER=command (launcher.type: command) for a program "
                    "that starts its own processes")
        return None
    slip = script_slip(script)  # before "a program" or "not there": the slip itself (walk11b B17)
    if slip:
        return (f"script {slip} (launcher {launcher} would start it on every rank as written); accepted: the "
                "script's path in the working directory, e.g. train.py")
    if launcher in LAUNCHERS_WITH_WORKERS and is_a_program(script, lambda word: _is_file_in(cwd, word)):
        return program_problem(launcher, script, "nodeweave-entrypoint",
                               "launcher.type command (NODEWEAVE_LAUNCHER=command)")
    try:
        mode = os.stat(os.path.join(cwd, script)).st_mode  # a link followed: the script may live elsewhere
    except OSError:
        mode = None
    if mode is None and os.path.islink(os.path.join(cwd, script)):  # there, leading nowhere (walk8 B39)
        return (f"script {script!r} in the working directory {cwd} is a link to "
                f"{os.readlink(os.path.join(cwd, script))!r}, which does not exist (launcher {launcher} would start "
                "it on every rank); accepted: a Python file, or a link to one: fix the link or launcher.script")
    if mode is not None:  # there, but no file: copying it there again cannot help (walk7 B36)
        from ..bounded import file_kind

        return (f"script {script!r} in the working directory {cwd} is {file_kind(mode)}, not a file (launcher "
                f"{launcher} would start it on every rank); accepted: a Python file, e.g. train.py: fix "
                "launcher.script / the container's command")
    return (f"script {script!r} is not in the working directory {cwd} (launcher {launcher} would start it on every "
            "rank); copy it there (nodeweave sync), or fix launcher.script / the container's command")



def script_notes(launcher, command, cwd):
    """Warnings on a script that is there but will not do what a job needs (walk8 B39): outside the working
    directory (nodeweave sync copies that folder alone: every other node runs whatever its own machine holds at
    that path), or empty (every rank exits 0 at once and the job "succeeds")."""
    if launcher not in LAUNCHERS_WITH_WORKERS or not command or command[0].startswith("-"):
        return []
    script = command[0]
    path = os.path.join(cwd, script)
    found = []
    inside = os.path.realpath(path).startswith(os.path.realpath(cwd).rstrip(os.sep) + os.sep)
    if not inside and os.path.isfile(path):
        found.append(f"script {script!r} is outside the working directory {cwd}: nodeweave sync does not copy it, "
                     "so every other node must hold it at that very path; copy it into the working directory")
    try:
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            found.append(f"script {script!r} is empty: every rank would exit 0 at once and the job end as if it "
                         "had trained")
    except OSError:
        pass
    return found


def peers_elsewhere(topo, node, master_ip, root):
    """Why some node of this multi-node job is on another machine, in words, or None where nothing shows it: the
    master's address is not this machine's, or a name of the job's node list (a hostfile, a scheduler's node
    list) resolves to an address neither loopback nor this machine's. A name that does not resolve here proves
    nothing (a one-machine test's extra node names). Peers elsewhere cannot reach this node's loopback (walk6
    W7, W39)."""
    if topo.nnodes_max <= 1:
        return None
    if master_ip and not is_loopback(master_ip) and node.interface != "lo" and master_ip != node.local_ipv4:
        return f"the master {topo.master_addr.value} ({topo.master_addr.source}) is another machine"
    from ..detection.net import resolve

    from ..hostport import host_key

    own = host_key(node.hostname).split(".")[0]
    here = {address for iface in node.interfaces for address in iface.ipv4}
    others = [name for name in named_hosts(topo) if name and not is_loopback(name)
              and host_key(name).split(".")[0] != own]
    unresolved = []
    for name in others[:PEERS_RESOLVED]:
        address, how = resolve(root, name)
        if address and not is_loopback(address) and address not in here:
            return f"the job's nodes include {name} ({address}, {how}), another machine"
        if not address:
            unresolved.append(name)
    return Unresolved(unresolved[0]) if unresolved else None


HERE_BY_LOOPBACK = "is this host by its loopback"  # the note that takes "every node runs here"'s place (policy)


class Unresolved(str):
    """No proof, only a node name that resolves nowhere here: maybe another machine, maybe a one-machine test's."""


PEERS_RESOLVED = 8  # names of the node list looked up, at most: a start never waits on a thousand lookups


def _loopback_interfaces(node, names):
    """Those of ``names`` that are loopback here (``lo``, or an interface whose every address is 127.x)."""
    by_name = {iface.name: iface for iface in node.interfaces}
    return [name for name in names if name == "lo" or name in by_name and by_name[name].ipv4 and
            all(is_loopback(address) for address in by_name[name].ipv4)]


def _socket_choices(settings):
    """(where, interface names) of each socket interface choice the user made: the flag/variable/spec's
    interfaces, and GLOO_SOCKET_IFNAME set by hand (exact names). A hand-set NCCL_SOCKET_IFNAME is judged by
    its own rule (``rules.ifname_loopback``, which knows its prefixes and ``^``), as doctor reads it."""
    found = []
    chosen = settings.get("interfaces") or []
    if chosen:
        found.append((f"{settings.source('interfaces')}={','.join(chosen)}", list(chosen)))
    text = settings.env.get("GLOO_SOCKET_IFNAME") or ""  # NCCL_SOCKET_IFNAME: rules.ifname_loopback's
    if text:
        found.append((f"GLOO_SOCKET_IFNAME={text}", [name for name in text.split(",") if name]))
    return found


def check_reachable_sockets(topo, node, settings, master_ip, root, routes_default, warnings):
    """This node's sockets never sit on loopback while a peer is on another machine (walk6 W7, W39).

    A socket interface the user chose that is loopback is refused where the master is another machine (every
    peer's connection to it would fail at the first collective) and warned where only the node names say so.
    A master name that resolves to loopback here (a Debian ``127.0.1.1 <hostname>`` line in /etc/hosts) while
    the job spans other hosts is not "every node runs here": the default route's interface carries the sockets
    instead, and the plan says why. ``routes_default``: (interface, address) of the default route."""
    choices = _socket_choices(settings)
    if topo.nnodes_max <= 1 or node.interface != "lo" and not any(
            _loopback_interfaces(node, names) for _, names in choices):
        return  # nothing on loopback: nothing to look up
    elsewhere = peers_elsewhere(topo, node, master_ip, root)
    if isinstance(elsewhere, Unresolved):
        if node.interface == "lo" and not any(names for _, names in choices):
            how = (node.interface_reason or "").split("; loopback")[0]
            topo.notes.append(f"the master {topo.master_addr.value} {HERE_BY_LOOPBACK} ({how})")
            emit(warnings, "master-name-loopback", f"{topo.master_addr.value} resolves to loopback here ({how}), "
                 f"and the job's nodes include {elsewhere}, which does not resolve here: if it is another machine, "
                 f"it cannot reach this node's loopback; {_loopback_master_remedy(topo)}")
        return
    if elsewhere is None:
        return
    for where, names in choices:
        looped = _loopback_interfaces(node, names)
        if not looped:
            continue
        others = [f"{i.name} ({', '.join(i.ipv4)})" for i in node.interfaces if i.ipv4 and i.operstate != "down" and
                  not _loopback_interfaces(node, [i.name])]
        text = (f"{where}: {', '.join(looped)} is loopback, but {elsewhere}: peers cannot reach this node's "
                f"127.0.0.1, so Gloo's and NCCL's connections to it would fail at the first collective; accepted: "
                f"an interface with a route to the other nodes ({', '.join(others) or 'none here but loopback'})")
        if elsewhere.startswith("the master") and not where.startswith("GLOO_SOCKET_IFNAME"):
            raise TopologyError(text)  # nodeweave's own choice; the user's Gloo variable is judged, not refused
        emit(warnings, "loopback-sockets", text + ", unless every node really runs on this machine")
    if node.interface != "lo" or any(names for _, names in choices):
        return
    iface, local = routes_default
    how = (node.interface_reason or "").split("; loopback")[0]  # not its "the master runs on this host"
    said = f"{topo.master_addr.value} resolves to loopback here ({how}), but {elsewhere}"
    if iface and iface != "lo":
        node.interface, node.local_ipv4 = iface, local
        node.interface_reason = f"{said}: the default route's interface, which peers can reach"
    emit(warnings, "master-name-loopback", f"{said}: peers cannot reach this node's loopback; " + (
         f"its sockets use {iface} ({local or 'no IPv4'}), the default route's" if iface and iface != "lo" else
         "there is no other route here") + f"; {_loopback_master_remedy(topo)}")


def _loopback_master_remedy(topo):
    """What fixes a loopback master on a job of several machines. A name (a Debian ``127.0.1.1 <hostname>``
    line) is mapped to the host's real address; a literal address (``127.0.0.1`` on a hostfile's first line) or
    ``localhost`` is loopback on every node, so each other node dials its own: only node 0's reachable address
    where it was written helps (walk15b B4: /etc/hosts and NODEWEAVE_INTERFACES were offered for an address)."""
    value, source = topo.master_addr.value, topo.master_addr.source
    if is_loopback(value):  # 127.x, ::1, localhost: not a name /etc/hosts may map to this host's address
        return (f"{value} is loopback on every node, so each other node dials itself: write node 0's reachable "
                f"address in its place ({source})")
    return "set NODEWEAVE_INTERFACES, or map the name to the host's real address in /etc/hosts"


LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def is_loopback(address):
    text = str(address or "").strip().lower()
    return text in LOOPBACK_NAMES or text.startswith("127.") or text == "::1"


def check_loopback_master(topo, node, settings, contained, warnings=None):
    """A multi-node job whose master is loopback, in a container with a network namespace of its own (only
    virtual interfaces, and ``contained``: a container's marker file or a pod): each node would reach only
    itself, and every node would wait out the deadline. One machine running every node (its own NICs) may be
    meant (a test), so a worker there is warned, not refused: it waits for node 0 on its own loopback, and a
    node 0 on another machine is never reached (walk5 W48: node 1 of 2 waited 600 s without a word)."""
    if topo.nnodes_max <= 1 or not is_loopback(topo.master_addr.value):
        return
    if "address" in (settings.get("exchange_allow") or []):
        return
    if not contained or host_networking(node):
        if topo.node_rank.value and warnings is not None:
            from .rules import emit

            emit(warnings, "loopback-master", f"master address {topo.master_addr.value} ({topo.master_addr.source})"
                 f" names this machine itself, and this is node {topo.node_rank.value} of {topo.nnodes.value}: only "
                 "a node 0 on this same machine is reached; on several machines give node 0's name or address")
        return
    raise TopologyError(
        f"master address {topo.master_addr.value} is this container's own loopback ({topo.master_addr.source}), "
        f"but this is node {topo.node_rank.value} of {topo.nnodes.value} and the container has a network namespace "
        "of its own (only virtual interfaces): no other node can reach it, nor it them; set MASTER_ADDR to node 0's "
        f"name or address on its network (in compose: <name>-0), or {_all_here(node, settings)}")


def _all_here(node, settings):
    """The way out where every node runs in this one container. The allow is refused with the exchange off (it
    does nothing to a check-in that never happens), so there the master is the container's own address."""
    if settings.get("exchange") is not False:
        return "NODEWEAVE_EXCHANGE_ALLOW=address if every node runs in this one container"
    own = [f"{address} ({i.name})" for i in node.interfaces if i.kind != "loopback" for address in i.ipv4]
    return ("if every node runs in this one container, to this container's own address, " +
            (", ".join(own) if own else "which it has none of but loopback here") +
            f" (with the exchange off by {settings.source('exchange')}, NODEWEAVE_EXCHANGE_ALLOW=address is refused)")


def placeholder_names(count):
    """The names a job gets where nothing names its nodes: labels, not hosts."""
    return [f"node-{i}" for i in range(count)]


def named_hosts(topo):
    """The job's node names where something named them (a host list, the hostname's prefix), else []."""
    names = list(topo.node_names or ())
    return [] if names == placeholder_names(len(names)) else names
