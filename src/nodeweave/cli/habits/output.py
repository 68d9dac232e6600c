"""``-o/--output table|wide|json|yaml`` for the verbs that print data, as kubectl spells it.

Why one helper: the same flag, values and stdout discipline on every data-printing verb (the data
on stdout, notes on stderr), so scripts can rely on ``-o json`` anywhere it is offered.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nodeweave.errors import UsageError

OUTPUTS = ("table", "wide", "json", "yaml")


def output_option():
    return typer.Option("table", "--output", "-o", autocompletion=complete_from(*OUTPUTS), help="table (default), wide (every column), json or yaml "
                                                        "(the data on stdout, as kubectl -o)")


def checked(output: str) -> str:
    if output not in OUTPUTS:
        raise UsageError(f"--output {output!r} is not accepted: {', '.join(OUTPUTS)}")
    return output


def emit(data, output: str) -> bool:
    """Print ``data`` as JSON or YAML and return True; False for table/wide (the verb draws its table)."""
    if output == "json":
        typer.echo(json.dumps(data, indent=2, default=str))
        return True
    if output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False).rstrip())
        return True
    return False


def complete_from(*values: str):
    """A shell completion for an option of fixed choices: the values that start with what was typed."""
    def complete(incomplete: str):
        return [value for value in values if value.startswith(incomplete)]
    complete.choices = values  # the fixed list, for checks of the values named in docs and hints
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
    from nodeweave.cli.habits.spec_path import find_spec
    from nodeweave.cluster.runfolder import RUNS

    given = (ctx.params or {}).get("runs_dir")
    parent = Path(given) if given else find_spec(None).resolve().parent / RUNS
    try:
        names = sorted(p.name for p in parent.iterdir() if p.is_dir())
    except OSError:
        names = []
    return [name for name in ["last", *names] if name.startswith(incomplete)]


def json_option():
    """``--json``, on every verb that takes ``-o``: the same as ``-o json`` (scripts use it; README)."""
    return typer.Option(False, "--json", help="Print the data as JSON on stdout (the same as -o json)")


def data_format(as_json: bool, output: str) -> str:
    """The format a verb prints its data in: ``--json`` (kept: scripts use it) is ``-o json``; with another
    ``-o`` it is refused, not silently resolved."""
    fmt = checked(output)
    if as_json and fmt not in ("table", "json"):
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
    problem = not_a_file_to_write(Path(value), makes_folders=flag in MAKES_FOLDERS)
    if problem:
        raise UsageError(f"{flag} {value}: {problem}; accepted: a regular file (replaced with --force where the verb "
                         "asks for it) or a new path in an existing folder")
    return value


# The output files whose verb makes their missing folders (bench's default is runs/nodeweave-bench.json); every
# other one's folder must exist, judged before anything runs, so a dry run is refused as its real run would be.
MAKES_FOLDERS = ("--json-out", "--plot")


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
    exists, or that the verb makes: ``makes_folders``)."""
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
    return value


def runs_folder_written(ctx: typer.Context, param: typer.CallbackParam, value: "Path | None") -> "Path | None":
    """The callback of every ``--runs-dir`` a verb writes a run folder into (``run``, ``check``): a folder, or one
    that can be made, judged before anything runs, so ``--dry-run`` is refused as the real run would be."""
    if value is None:
        return value
    from nodeweave.failures import writable_dir

    why = runs_dir_problem(writable_dir(value, "--runs-dir"))
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


def runs_parent(runs_dir: "Path | None", spec_path: Path, writes: bool) -> Path:
    """The folder of run folders every verb reads or writes: ``--runs-dir`` as given (judged as the command line
    was read), else ``runs/`` beside the spec (a link to a folder: where it leads), judged by the same rule (a file, a link to one, a device or a
    dangling link there is refused in one line, exit 2, by the dry run as by the real verb; absent: made by the
    first run, "no runs yet" to a reader)."""
    if runs_dir is not None:
        return runs_dir
    import os

    from nodeweave.cluster.runfolder import RUNS

    parent = spec_path.resolve().parent / RUNS
    if writes and parent.is_symlink() and parent.is_dir():  # never written through a link (W68); said how to keep it
        raise UsageError(f"runs/ beside the spec ({parent}) is a symbolic link (to {os.readlink(parent)}), not a "
                         "folder nodeweave made, and it never writes through a link; accepted: --runs-dir "
                         f"{parent.resolve()} to keep the runs there, or a folder runs/ of its own")
    if parent.is_dir():
        if writes and not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"runs/ beside the spec ({parent}) is not writable by this user, and a run's folder "
                             "goes there; accepted: a folder you can write, or --runs-dir DIR")
        return parent
    if not parent.is_symlink() and not parent.exists():
        if writes:
            from nodeweave.failures import writable_dir

            writable_dir(parent, "runs/ beside the spec:")
        return parent
    if parent.exists():
        kind = "a file" if parent.is_file() else \
            not_a_file_to_write(parent).removeprefix("is ").removesuffix(", not a file")
        link = f" (a link to {os.readlink(parent)})" if parent.is_symlink() else ""
    else:
        kind, link = f"a link to {os.readlink(parent)}, which does not exist", ""
    raise UsageError(f"runs/ beside the spec ({parent}) is {kind}{link}, not a folder: nodeweave keeps its run "
                     "folders there; accepted: a folder (move that one away), or --runs-dir DIR")
