"""``-o/--output table|wide|json|yaml`` for the verbs that print data, as kubectl spells it.

Why one helper: the same flag, values and stdout discipline on every data-printing verb (the data
on stdout, notes on stderr), so scripts can rely on ``-o json`` anywhere it is offered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from nodeweave.errors import UsageError

OUTPUTS = ("table", "wide", "json", "yaml")
NAMES_ONLY = "name"  # -o name: each item's name alone, one a line (kubectl's -o name)
# The verbs that list things by name, by their command's name, and what -o name prints of them: one table, read by
# their -o's help and completion, by ``checked`` (another verb's refusal names these) and by
# ``conflicts.refuse_two_formats`` (walk11 A10: runs ls; walk12 A7: image variants and status refused it).
NAME_LISTS = {"ls": ("runs ls", "each run's id", "for r in $(nodeweave runs ls -o name)"),
              "variants": ("image variants", "each variant's key", "for v in $(nodeweave image variants -o name)"),
              "status": ("status", "each node that answers, by name", "for n in $(nodeweave status -o name)")}


def output_option(names: "str | None" = None, every: bool = False):
    """``-o/--output``; ``names``: the verb's key in :data:`NAME_LISTS`, whose ``-o name`` it takes; ``every``: the
    option taken before any verb, whose help names the verbs that take ``-o name`` (walk18a A20)."""
    listed = NAME_LISTS.get(names or "")
    them = ", ".join(f"`{verb}`" for verb, _, _ in NAME_LISTS.values())
    also = (f", or name: {listed[1]} alone, one a line ({listed[2]}, as kubectl -o name)" if listed else
            f", or name (the names alone, one a line) on {them}" if every else "")
    return typer.Option("table", "--output", "-o",
                        autocompletion=complete_from(*OUTPUTS, *((NAMES_ONLY,) if listed or every else ())),
                        help=f"table (default), wide (every column), json or yaml (the data on stdout, as kubectl "
                             f"-o){also}")


def _running_command() -> str:
    from typer._click.globals import get_current_context  # typer's own click (>= 0.22): click is not a dependency

    ctx = get_current_context(silent=True)
    return getattr(getattr(ctx, "command", None), "name", "") or ""


def checked(output: str, command: "str | None" = None) -> str:
    """``output`` when the verb takes it; ``-o name`` only on a verb of :data:`NAME_LISTS` (``command``: its
    command's name, default the running one)."""
    command = _running_command() if command is None else command
    if output == NAMES_ONLY and command in NAME_LISTS:
        return output
    if output not in OUTPUTS:  # the verb's own list: name too where it takes it (walk18a A20)
        them = ", ".join(verb for verb, _, _ in NAME_LISTS.values())
        takes = (*OUTPUTS, NAMES_ONLY) if command in NAME_LISTS else OUTPUTS
        raise UsageError(f"--output {output!r} is not accepted: {', '.join(takes)}"
                         + (f" (-o name, the names alone one a line, is taken by {them})"
                            if output == NAMES_ONLY else ""))
    return output


def emit_names(names, output: str) -> bool:
    """Print ``names`` one a line and return True for ``-o name``; False otherwise."""
    if output != NAMES_ONLY:
        return False
    for name in names:
        typer.echo(name)
    return True


def emit(data, output: str) -> bool:
    """Print ``data`` as JSON or YAML and return True; False for table/wide (the verb draws its table)."""
    if output == "json":
        typer.echo(json.dumps(data, indent=2, default=str))
        return True
    if output == "yaml":
        from nodeweave.yamltext import dump_yaml  # the renderers' dumper: a number-like string stays a string

        typer.echo(dump_yaml(json.loads(json.dumps(data, default=str)), sort_keys=False).rstrip())
        return True
    return False


def complete_from(*values: str):
    """A shell completion for an option of fixed choices: the values that start with what was typed."""
    def complete(incomplete: str):
        return [value for value in values if value.startswith(incomplete)]
    complete.choices = values  # the fixed list, for checks of the values named in docs and hints
    return complete


def complete_comma_list(*values: str, alone: "tuple[str, ...]" = ()):
    """A shell completion for a comma list of fixed items (``bench --ops all_reduce,<TAB>``, walk10 A15): the list
    typed so far with each item not in it yet that starts with what follows the last comma; ``alone``: words that
    stand for the whole list (``all``), offered only as the first item."""
    def complete(incomplete: str):
        head, comma, last = incomplete.rpartition(",")
        given = head.split(",") if comma else []
        offered = values if comma else (*values, *alone)
        return [f"{head}{comma}{value}" for value in offered if value.startswith(last) and value not in given]
    complete.choices = (*values, *alone)
    return complete


def complete_variants(incomplete: str):
    """A shell completion for an image variant: the catalogue's keys (`nodeweave image variants`)."""
    from nodeweave.catalogue import VARIANTS

    return [key for key in VARIANTS if key.startswith(incomplete)]


def complete_nodes(ctx: typer.Context, incomplete: str):
    """A shell completion for --node: the indices and names of the nodes of the nearest spec (or --spec)."""
    from nodeweave.cli.habits.spec_path import find_spec

    try:
        from nodeweave.spec import load_spec

        spec = load_spec(find_spec((ctx.params or {}).get("spec_path")))
        count = spec.containers
    except Exception:  # no spec or a bad one: nothing to offer, never a traceback in the shell
        return []
    values = [str(i) for i in range(count)] + [f"node-{i}" for i in range(count)]
    return [value for value in values if value.startswith(incomplete)]


def complete_run_ids(ctx: typer.Context, incomplete: str):
    """A shell completion for a run id: the run and sweep folders under --runs-dir (else runs/ beside the spec)."""
    return _run_ids(ctx, incomplete, sweeps=True)


def complete_single_run_ids(ctx: typer.Context, incomplete: str):
    """A run id where one run is wanted (``dashboard --run``): no sweeps."""
    return _run_ids(ctx, incomplete, sweeps=False)


def _run_ids(ctx: typer.Context, incomplete: str, sweeps: bool):
    """The run (and, with ``sweeps``, sweep) folders as ``find_run`` reads them: a folder that is no run, or whose
    name a terminal cannot show, is never offered (walk6 W67)."""
    from nodeweave.cli.habits.spec_path import find_spec
    from nodeweave.cluster.runfolder import RUNS
    from nodeweave.runs.history import list_runs

    given = (ctx.params or {}).get("runs_dir")
    from nodeweave.specpath import spec_folder

    spec_given = (ctx.params or {}).get("spec_path")  # the command line's --spec, as the verb itself reads it
    parent = Path(given) if given else spec_folder(find_spec(Path(spec_given) if spec_given else None)) / RUNS
    try:
        names = [e.path.name for e in list_runs(parent) if (sweeps or e.kind == "run") and e.path.name.isprintable()]
    except (OSError, UsageError):
        names = []
    return [name for name in ["last", *names] if name.startswith(incomplete)]


def json_option():
    """``--json``, on every verb that takes ``-o``: the same as ``-o json`` (scripts use it; README)."""
    return typer.Option(False, "--json", help="Print the data as JSON on stdout (the same as -o json)")


def data_format(as_json: bool, output: str, typed: bool = False, command: "str | None" = None) -> str:
    """The format a verb prints its data in: ``--json`` (kept: scripts use it) is ``-o json``; with another
    ``-o`` it is refused, not silently resolved: ``-o table`` too when ``typed`` (the user gave it; only the
    default table gives way to --json: ``conflicts.refuse_two_formats`` knows which, as the line is read)."""
    fmt = checked(output, command)
    if as_json and fmt != "json" and (typed or fmt != "table"):
        raise UsageError(f"--json is -o json, and -o {fmt} asks for {fmt}: give one of them")
    return "json" if as_json else fmt


def is_data(fmt: str) -> bool:
    """Whether the data goes to stdout as JSON or YAML (then the tables and notes go to stderr)."""
    return fmt in ("json", "yaml")


FULL_ROWS = 10_000  # columns off a terminal: wide enough that no table row is folded or cut


def table_width() -> "int | None":
    """A table's width: the terminal's (or $COLUMNS) on a terminal; off one (a pipe, a file), every row whole
    on one line, so ``grep`` and ``awk`` see full rows (a table is only as wide as its content), even where
    the shell exports COLUMNS (bash does, for every child)."""
    import sys

    return None if sys.stdout.isatty() else FULL_ROWS


def output_file(ctx: typer.Context, param: typer.CallbackParam, value: "Path | None") -> "Path | None":
    """The callback of every option naming a file nodeweave writes (``init --out``, ``bench --json-out``, ``--plot``,
    ``runs compare --chart``, ``hosts probe --write-hostfile``): a regular file or a new path in a folder, never a
    device, a pipe, a socket or a folder (``init --out /dev/sdb --force`` would write over a disk; a FIFO would
    hang). Judged as the command line is read, before anything runs."""
    if value is None:
        return value
    flag = max(param.opts, key=len) if param.opts else param.name
    problem = file_to_write_problem(Path(value), flag)
    if problem:
        raise UsageError(f"{option_named(param.name, flag, value, ctx)}: {problem}; accepted: a regular file "
                         "(replaced with --force where the verb "
                         "asks for it) or a new path in an existing folder of your own")
    return value


# What each option naming a file nodeweave writes offers instead of a stream (walk12 A3: `init --out /dev/stdout` was
# told to name /proc/self/fd/1, another link, and then the terminal): {flag: the verb's way to its data on stdout}.
STDOUT_WAYS = {
    "--out": "`nodeweave init --dry-run` prints the spec on stdout",
    "--json-out": "`nodeweave bench -o json` prints the result on stdout",
    "--plot": "a chart is an image file: give a .png or .svg path",
    "--chart": "a chart is an image file: give a .png or .svg path (`-o json` prints the data on stdout)",
    "--write-hostfile": "`nodeweave hosts probe -o json` prints the hosts on stdout",
    "--hostfile": "`nodeweave hosts probe -o json` prints the hosts on stdout",
}


def file_to_write_problem(path: Path, flag: str) -> str:
    """Why the option ``flag`` may not write the file ``path`` (:func:`output_file`'s rules), or "": also for a
    verb's own default path, which no callback judges (bench's result beside the spec)."""
    from nodeweave.failures import own_file_problem

    stream = stream_problem(path)
    if stream:
        return f"{stream}: {flag} writes a file; {STDOUT_WAYS.get(flag, 'give a file path')}"
    return (not_a_file_to_write(path, makes_folders=flag in MAKES_FOLDERS) or in_system_tree(path)
            or own_file_problem(path, spec=flag in SPEC_FILES) or "")


_STREAMS = {"0": "standard input", "1": "standard output", "2": "standard error"}


def stream_problem(path: Path) -> str:
    """"is standard output (a stream), not a file" for a path that names one of this process's streams rather than
    a file (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/<pid>/fd/N, /dev/tty), as typed: the link
    behind it leads to whatever the shell connected (a pipe, a terminal, a redirect's file), never a path to
    suggest (walk12 A3). Else ""."""
    import os
    import re

    text = os.path.normpath(os.path.abspath(str(path)))
    named = re.fullmatch(r"/dev/std(in|out|err)", text)
    if named:
        return f"is standard {'input' if named.group(1) == 'in' else named.group(1).replace('out', 'output').replace('err', 'error')} (a stream), not a file"
    fd = re.fullmatch(r"/(?:dev|proc/(?:self|thread-self|\d+))/fd/(\d+)", text)
    if fd:
        return f"is {_STREAMS.get(fd.group(1), 'descriptor ' + fd.group(1))} (a stream), not a file"
    if text == "/dev/tty" or re.fullmatch(r"/dev/pts/\d+", text):
        return "is a terminal, not a file"
    return ""


def in_system_tree(path: Path) -> str:
    """Why the file ``path`` may not be written there: its folder is inside one of the system's trees (``/etc``,
    ``/usr/share``, ...), as written or where links lead, the trees no folder option writes into either (walk6 M5:
    ``failures.own_folder_problem``), or directly in ``/`` or a system folder (``/var/lib``, ``/usr/local``) but the
    scratch ones (``systemdirs.SCRATCH``: walk9 A32), or in a folder not there yet that would be made directly in one
    (``/usr/local/runs/x.json``: replay10 R3); a file in ``/tmp`` or ``/var/tmp`` is fine. Else ""."""
    import os

    from nodeweave.entrypoint.systemfolders import normal_path
    from nodeweave.systemdirs import SCRATCH, SYSTEM_TREES, made_in_system_folder, system_folder, system_tree

    folder = Path(normal_path(os.path.abspath(path))).parent  # //usr/local/x.json: /usr/local (replay11 R4)
    for seen in (folder, folder.resolve()):
        tree = system_tree(str(seen))
        if tree is not None:
            where = tree if str(seen) == tree else f"inside {tree}"
            return f"its folder {seen} is {where} ({SYSTEM_TREES[tree]}), where nodeweave writes nothing"
        if system_folder(str(seen)) and str(seen) not in SCRATCH:  # walk9 A32: /var/lib, /usr/local, /var, /
            return (f"its folder {seen} is / or a system folder, where nodeweave writes nothing (of those, only "
                    f"{' and '.join(SCRATCH)} take a file)")
    return made_in_system_folder(str(folder)) or ""


def tell(line: str) -> None:
    """One line for the user on stderr, with the ``nodeweave:`` prefix every stderr line carries, so a note is told
    from a child's output and from stdout's plan (replay6 N5: check's ownership note was a bare "note: ...")."""
    from nodeweave.usertext import visible  # a character no terminal shows as itself, escaped (replay10 R4)

    typer.echo(f"nodeweave: {visible(line)}", err=True)


def option_named(name: str, flag: str, value, ctx=None) -> str:
    """How a line names an option's value: as typed (``--out x.yaml``) when the user gave the option, else the value
    alone and where it came from, so a refusal never names a flag the user did not type (replay6 N1: ``init
    --force`` in a folder whose nodeweave.yaml is a link read "--out nodeweave.yaml: ...")."""
    from typer._click.globals import get_current_context  # typer's own click (>= 0.22): click is not a dependency

    ctx = ctx or get_current_context(silent=True)  # an option's callback is given its ctx: none is current
    source = ctx.get_parameter_source(name) if ctx is not None else None
    if source is None or getattr(source, "name", "") in ("COMMANDLINE", "ENVIRONMENT"):
        return f"{flag} {value}"
    return f"{value} (where {ctx.info_name} writes without {flag})"


# The output files whose verb makes their missing folders (bench's default is runs/<UTC time>-bench.json); every
# other one's folder must exist, judged before anything runs, so a dry run is refused as its real run would be.
MAKES_FOLDERS = ("--json-out", "--plot")
# The output file that is a spec (``init --out``): its folder becomes the workspace, so not even ``runs/`` itself.
SPEC_FILES = ("--out",)


def refuse_folder_spellings(command, words) -> None:
    """``init --out sub/``: a value spelt as a folder (a trailing /, ``.``, ``..``) for an option naming a file
    nodeweave writes is refused; click's Path drops the slash, so the file would be called ``sub``."""
    judged = [p for p in getattr(command, "params", ())
              if getattr(getattr(p, "callback", None), "__wrapped__", None) is output_file]
    words = list(words)
    words = words[:words.index("--")] if "--" in words else words
    for param in judged:
        for i, word in enumerate(words):
            value = None
            for name in param.opts:
                if word == name and i + 1 < len(words):
                    value = words[i + 1]
                elif name.startswith("--") and word.startswith(name + "="):
                    value = word[len(name) + 1:]
            if value and (value.endswith(("/", "\\")) or Path(value).name in ("", ".", "..")):
                flag = max(param.opts, key=len)
                raise UsageError(f"{flag} {value}: names a folder, not a file; accepted: a file's path, e.g. "
                                 f"{flag} {value.rstrip('/') or '.'}/{param.default.name if isinstance(param.default, Path) else 'FILE'}")


def not_a_file_to_write(path: Path, makes_folders: bool = False) -> str:
    """Why ``path`` cannot be written as a file, or "" (a regular file, or nothing there yet in a folder that
    exists, or that the verb makes: ``makes_folders``). A symbolic link is never written through (W57: ``init
    --force`` replaced a team's shared spec that ``nodeweave.yaml`` linked to): the file behind it is another
    folder's, so it is named and only its own path replaces it."""
    import os
    import stat

    stream = stream_problem(path)
    if stream:
        return stream
    if os.path.islink(path):
        target = os.readlink(path)
        return (f"is a symbolic link to {target}, and nodeweave never writes through a link (the file behind it "
                f"belongs to another folder, and whatever else links it would change too): name that file itself "
                f"({os.path.realpath(path)}) to replace it, or remove the link first")  # its end: never another link
    problem = not_a_file_to_read(path, makes_folders)
    if problem:
        return problem
    from nodeweave.failures import unwritable

    cannot = unwritable(path.absolute().parent)  # a dry run refuses it as the real write would fail (walk8 A10)
    return f"cannot be written: {cannot}" if cannot else ""


def not_a_file_to_read(path: Path, makes_folders: bool = False) -> str:
    """What is at ``path`` when it is not a regular file (a link followed: a script linked from elsewhere is read
    there), or "" (a regular file, or nothing there yet in a folder that exists or the verb makes)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet, or a path through a file
        return _folder_problem(path.absolute().parent, makes_folders)
    except OSError as err:
        return f"cannot be looked at ({err.strerror or err})"
    if stat.S_ISREG(mode):
        return ""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
    return f"is {next((what for test, what in kinds if test(mode)), 'not a regular file')}, not a file"


def _folder_problem(folder: Path, makes_folders: bool) -> str:
    """Why a new file cannot go into ``folder``, or "": a missing folder (unless the verb makes it), or a path
    through something that is not a folder (``/etc/hostname/x``)."""
    nearest = folder
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        return f"goes through {nearest}, which is not a folder"
    if nearest != folder and not makes_folders:
        return f"its folder {folder} does not exist (create it first)"
    return ""


def runs_folder_read(ctx: typer.Context, param: typer.CallbackParam, value: "Path | None") -> "Path | None":
    """The callback of every ``--runs-dir`` a verb reads (``runs``, ``logs --run``, ``dashboard --run``): an existing
    folder, judged before anything runs."""
    if value is None:
        return value
    problem = "does not exist" if not value.exists() else "" if value.is_dir() else "not a folder"
    if problem:
        raise UsageError(f"--runs-dir {value}: {problem}; accepted: a folder of run folders (runs/ beside the spec), "
                         "or leave --runs-dir off")
    refuse_a_run_folder(value)
    return value


def refuse_a_run_folder(value: Path) -> None:
    """``--runs-dir runs/<run>`` (a tab completion one level too deep): a run folder itself (its ``run.json``) is
    no folder of runs; read, it listed nothing ("no runs under ... yet"), written, a run would land inside another
    (walk8 A32). Refused naming the run and the two commands meant. So is a folder one level too high: a project's
    folder whose runs/ holds runs and that holds none itself (walk9 A24), naming its runs/."""
    import shlex

    if (value / "run.json").is_file():
        parent = value.absolute().parent
        raise UsageError(f"--runs-dir {value}: is a run folder (it holds run.json), not a folder of runs; accepted: "
                         f"`nodeweave runs show {shlex.quote(str(value))}` for that run, or --runs-dir "
                         f"{shlex.quote(os.path.relpath(parent))} for the runs beside it")
    # One level too high: a project's folder, whose runs are in its runs/ (walk9 A24: read, it said "no runs under
    # ... yet"; written, a run would land beside the project's spec). Judged only where it holds no run itself.
    from nodeweave.runs.history import list_runs

    below = value / "runs"
    if below.is_dir() and not list_runs(value):
        count = len(list_runs(below))
        if count:
            raise UsageError(f"--runs-dir {value}: holds no run, but its runs/ holds {count}: a project's folder, not "
                             f"a folder of runs; accepted: --runs-dir {shlex.quote(os.path.join(str(value), 'runs'))}")


def runs_folder_written(ctx: typer.Context, param: typer.CallbackParam, value: "Path | None") -> "Path | None":
    """The callback of every ``--runs-dir`` a verb writes a run folder into (``run``, ``check``): a folder, or one
    that can be made, judged before anything runs, so ``--dry-run`` is refused as the real run would be."""
    if value is None:
        return value
    from nodeweave.failures import writable_dir

    refuse_a_run_folder(value)
    why = runs_dir_problem(writable_dir(value, "--runs-dir", runs_ok=True, missing="created if missing; runs/ "
                                        "beside the spec itself, or a store apart from it, such as runs-sub/"))
    if why:
        raise UsageError(f"--runs-dir {value}: {why}; accepted: a folder of your own, such as runs/ beside the spec "
                         "(the default)")
    return value


def runs_dir_problem(folder: Path) -> str:
    """Why ``folder`` may not take run folders ("" when it may), beyond what every folder nodeweave fills is judged
    by (``failures.writable_dir``: not ``/``, a system or kernel folder, nor ``.nodeweave/``): a tree ``render``
    writes beside a spec (``images/``, ``compose/``, ..., which ``render --prune`` manages) (walk5, W69)."""
    import os

    here = Path(os.path.realpath(folder))
    text = str(here)
    from nodeweave.targets.registry import RENDERERS

    folders = {root.strip("/").split("/")[0] for row in RENDERERS.values() for root in row.roots}
    for depth, name in enumerate(here.parts[1:], start=1):
        above = Path(*here.parts[:depth])
        if name in folders and (above / "nodeweave.yaml").is_file():
            return f"{text} is inside {name}/, a tree `nodeweave render` writes beside {above / 'nodeweave.yaml'}"
    return ""


def judge_runs_written(spec, spec_path: Path, runs_dir: "Path | None") -> None:
    """Where a verb that writes a run folder (``run``, ``check``) puts it, judged in ``open_cluster``'s ``judge``:
    before the tools are asked for, so a mistake there (runs/ beside the spec a link, a file, not writable;
    ``--runs-dir`` in the checkpoints) is exit 2 on a machine without the engine or kubectl too, not exit 3."""
    runs_dir_apart(spec, spec_path, runs_dir)
    runs_parent(runs_dir, spec_path, writes=True)


def runs_dir_apart(spec, spec_path: Path, runs_dir: "Path | None") -> None:
    """``--runs-dir`` beside the spec's own folders (walk6, W41; the reverse of W17's ``recovery.checkpoint_dir``
    rule): that is, or is inside, the checkpoint folder is refused (node 0 scans it for saves at every restart, and
    would read run records as saves); the workspace itself gets a note (every run lands in the synced workspace)."""
    import os
    import posixpath

    from nodeweave.entrypoint.systemfolders import normal_path
    from nodeweave.specpath import host_folder, spec_folder

    if runs_dir is None:
        return
    here = Path(os.path.realpath(runs_dir))
    workspace = Path(os.path.realpath(host_folder(spec.workspace.host_path, spec_folder(spec_path))))
    folder = spec.recovery.checkpoint_dir
    if folder:
        normal, root = normal_path(folder), normal_path(spec.workspace.path)
        inside = normal if not normal.startswith("/") else posixpath.relpath(normal, root) \
            if normal == root or normal.startswith(root.rstrip("/") + "/") else None
        saves = Path(os.path.realpath(workspace / inside)) if inside is not None else None
        if saves is not None and (here == saves or saves in here.parents):
            raise UsageError(f"--runs-dir {runs_dir}: {here} is {'' if here == saves else 'inside '}"
                             f"recovery.checkpoint_dir {folder} ({saves}): node 0 scans it for the newest complete "
                             "save at every restart, and would read run records there as saves; accepted: a folder "
                             "of your own apart from it, such as runs/ beside the spec (the default)")
    if here == workspace:
        typer.echo(f"nodeweave: note: --runs-dir {runs_dir} is the workspace itself ({workspace}): every run's folder "
                   "lands among the job's files, and `nodeweave sync` leaves out only runs/ beside the spec; runs/ "
                   "(the default) keeps them apart", err=True)


def image_reference(ctx: typer.Context, param: typer.CallbackParam, value: "str | None") -> "str | None":
    """The callback of every option naming an image (``up --image``, ``image build --base``): the spec's own rule
    (``IMAGE_REFERENCE``, as for ``image.base``), judged before podman is asked or anything is written."""
    if value is None:
        return value
    check_image_reference(value, max(param.opts, key=len) if param.opts else param.name)
    return value


def check_image_reference(value: str, what: str) -> str:
    """``value`` if it is an image reference by the one rule every image field and option uses, else exit 2."""
    from nodeweave.spec.rules import IMAGE_REFERENCE

    if not IMAGE_REFERENCE.check(value):
        lower = " (repository names are lower case)" if value.split(":")[0].split("@")[0] != \
            value.split(":")[0].split("@")[0].lower() else ""
        raise UsageError(f"{what} {value!r} is not accepted{lower}: {IMAGE_REFERENCE.accepted}")
    return value


def spec_job(spec_path: Path) -> "str | None":
    """The job name of the spec at ``spec_path``, which ``--run last`` means the last run of; None where there is
    no readable spec (a --runs-dir read on its own): then ``last`` is the folder's newest run."""
    from nodeweave.spec import load_spec

    if not spec_path.is_file():
        return None
    try:
        return load_spec(spec_path).name
    except UsageError:
        return None


def runs_parent(runs_dir: "Path | None", spec_path: Path, writes: bool, instead: str = "--runs-dir DIR",
                what: str = "a run's folder") -> Path:
    """The folder of run folders every verb reads or writes: ``--runs-dir`` as given (judged as the command line
    was read), else ``runs/`` beside the spec, judged by the same rule (a file, a link to one, a device or a
    dangling link there is refused in one line, exit 2, by the dry run as by the real verb; absent: made by the
    first run, "no runs yet" to a reader). A link to a folder (a bigger disk) is never written through (W68),
    and a reader reads through it with a note saying so and naming the ``--runs-dir`` a writer needs (walk6
    W64: it read there without a word). ``instead``: the option that puts the verb's files elsewhere, and ``what``
    the verb writes there, as every refusal names them (bench: ``--json-out FILE``, its result; replay11 C7: bench
    was offered --runs-dir, which it has not)."""
    if runs_dir is not None:
        return runs_dir
    import os

    from nodeweave.cluster.runfolder import RUNS

    from nodeweave.specpath import spec_folder

    parent = spec_folder(spec_path) / RUNS
    if parent.is_symlink() and parent.is_dir() and not writes:
        import typer

        typer.echo(f"nodeweave: note: runs/ beside the spec is a symbolic link (to {os.readlink(parent)}): read "
                   f"there; a run is never written through it: give --runs-dir {parent.resolve()}", err=True)
        return parent
    if writes and parent.is_symlink() and parent.is_dir():  # never written through a link (W68); said how to keep it
        keep = (f"--runs-dir {parent.resolve()} to keep the runs there" if instead.startswith("--runs-dir") else
                f"{instead} in {parent.resolve()} to keep it there")
        raise UsageError(f"runs/ beside the spec ({parent}) is a symbolic link (to {os.readlink(parent)}), not a "
                         f"folder nodeweave made, and it never writes through a link; accepted: {keep}, or a "
                         "folder runs/ of its own")
    if parent.is_dir():
        from nodeweave.failures import unwritable

        problem = unwritable(parent) if writes else None
        if problem:
            raise UsageError(f"runs/ beside the spec: {problem}, and {what} goes there; accepted: a folder "
                             f"you can write (space freed on a full one), or {instead}")
        return parent
    if not parent.is_symlink() and not parent.exists():
        if writes:
            from nodeweave.failures import writable_dir

            writable_dir(parent, "runs/ beside the spec:", runs_ok=True)
        return parent
    if parent.exists():
        kind = "a file" if parent.is_file() else \
            not_a_file_to_write(parent.resolve()).removeprefix("is ").removesuffix(", not a file")
        link = f" (a link to {os.readlink(parent)})" if parent.is_symlink() else ""
    else:
        kind, link = f"a link to {os.readlink(parent)}, which does not exist", ""
    raise UsageError(f"runs/ beside the spec ({parent}) is {kind}{link}, not a folder: nodeweave keeps {what} "
                     f"there; accepted: a folder (move that one away), or {instead}")
