"""``render --check``'s "up to date", kept while nothing it rests on has changed (issue 43: start-up).

Why: a check that finds every file up to date loads the spec, imports every renderer and renders
everything (more than half of its ~190 ms) to learn what the last identical check learned. A check
that passes, run as the program, leaves a record in the cache folder (``$NODEWEAVE_CACHE_DIR``, else
``$XDG_CACHE_HOME/nodeweave``, else ``~/.cache/nodeweave``; ``render-check/``, one file per spec,
--out and arguments) of everything its answer rests on; the next identical check prints the same plan from it
(through the same report) only when all of it is proven unchanged:

- the call: its arguments, working folder, the spec and --out resolved, the interpreter (executable,
  version, ``sys.path``, flags), every environment variable (hashed, never stored), which of stdin, stdout
  and stderr are terminals, the user;
- nodeweave's own package folder: every file's path, size and mtime (modules, templates, the zipapp's
  sources, imported or not);
- every other module loaded (size and mtime of its file: typer, jinja2, PyYAML, the standard library);
- every file the check opened for reading (seen through an audit hook, whoever opened it: the spec and
  what it names, each rendered file, the render record, the caches): its bytes (sha256), or that it was
  absent;
- every folder it listed, every folder it read a file from outside the cache and every folder on the
  way to a file the render record names: the names in it (a file that appears beside one that was read,
  such as a user's .dockerignore, or a recorded file that comes back, is noticed; nodeweave's own
  folders are in its stamp above, ``__pycache__`` folders are Python's).

A check that started a process, opened a socket, read a pipe or a device, printed a note or found
anything stale keeps nothing, nor one during which a file it read or nodeweave's code changed; the
record is only ever a proof of "up to date", never of "stale": any difference, a damaged or
unreadable record, means the full check. Called as a library (``nodeweave.cli.main(argv)``: tests,
which may patch code in memory) the memo is off.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import NamedTuple

from nodeweave.cachedir import cache_root
from nodeweave.entrypoint import bounded

VERSION = 1
# events after which what a check printed may rest on something no file shows (another program, the network)
_UNKEPT_EVENTS = ("subprocess.", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.system", "socket.",
                  "os.startfile", "pty.")


def package_root() -> Path:
    import nodeweave

    return Path(nodeweave.__file__).resolve().parent


class Call(NamedTuple):
    """One check: its record's file (one per spec, --out and arguments) and the digest of all that makes the call."""

    record: Path
    key: str


def this_call(argv: "list[str]", spec_path: Path, out_dir: Path) -> "Call | None":
    """This check as a :class:`Call`; None when the spec is not a plain file (``-``, a pipe: never kept)."""
    try:
        if str(spec_path) == "-" or not stat.S_ISREG(os.stat(spec_path).st_mode):  # - is standard input
            return None
        where = [str(spec_path.resolve()), str(out_dir), list(argv)]
        call = {"where": where, "cwd": os.getcwd(),
                "python": [sys.executable, sys.version, list(sys.path), list(sys.flags)],
                "env": sorted(os.environ.items()), "terminals": [os.isatty(fd) for fd in (0, 1, 2)],
                "user": [os.getuid(), os.getgid()], "package": str(package_root())}
    except (OSError, ValueError):
        return None
    name = hashlib.sha256(json.dumps(where).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    key = hashlib.sha256(json.dumps(call, sort_keys=True).encode("utf-8", "surrogateescape")).hexdigest()
    return Call(cache_root() / "render-check" / f"{name}.json", key)


# ---- what a check rests on ---------------------------------------------------------------------------------

class Watch:
    """What the process opened for reading and listed while it watched, and whether it did anything else."""

    def __init__(self, call: Call) -> None:
        self.call = call  # the check whose answer it is
        package = str(package_root())  # the code as it was when the check began: an edit during it keeps nothing
        self.package = (package, _tree(Path(package)), _module_files(package))
        self.opened: "dict[str, list | None]" = {}  # each file opened for reading: its stamp when first opened
        self.listed: "set[str]" = set()
        self.unkept = False


_watching: "list[Watch]" = []  # the one Watch the audit hook fills now (a hook cannot be removed: it checks this)
_hooked: "list[bool]" = []


def _audit(event: str, args: tuple) -> None:
    if not _watching:
        return
    watch = _watching[-1]
    try:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            writes = (any(c in mode for c in "wax+") if isinstance(mode, str)
                      else bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC)))
            if not writes:
                name = os.path.abspath(os.fsdecode(path))
                if name not in watch.opened:
                    watch.opened[name] = _stamp(name, changed=True)
        elif event in ("os.listdir", "os.scandir"):  # glob and pathlib list through these
            path = args[0]
            if isinstance(path, int):
                watch.unkept = True  # a folder by descriptor: cannot be named again
            else:
                watch.listed.add(os.path.abspath(os.fsdecode(path if path is not None else ".")))
        elif event.startswith(_UNKEPT_EVENTS):
            watch.unkept = True
    except Exception:  # an audit hook must never fail the call it watches: nothing is kept instead
        watch.unkept = True


def watch(call: Call) -> Watch:
    """Start watching what this process reads for ``call`` (until :func:`stop`)."""
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked.append(True)
    found = Watch(call)
    _watching.append(found)
    return found


def stop(found: Watch) -> None:
    if found in _watching:
        _watching.remove(found)


def _content(path: str) -> str:
    """A file's sha256 (a link's: marked as one), or what stands in its place ("absent", "not a file")."""
    try:
        link = "link " if os.path.islink(path) else ""
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return "not a file"
            digest = hashlib.sha256()
            for chunk in iter(lambda: handle.read(1 << 20), b""):  # a regular file, hashed in bounded chunks
                digest.update(chunk)
            return link + digest.hexdigest()
    except FileNotFoundError:
        return "absent"
    except OSError as err:
        return f"unreadable {err.errno}"


def _names(folder: str) -> str:
    try:
        return hashlib.sha256("\0".join(sorted(os.listdir(folder))).encode("utf-8", "surrogateescape")).hexdigest()
    except FileNotFoundError:
        return "absent"
    except OSError as err:
        return f"unreadable {err.errno}"


def _stamp(path: str, changed: bool = False):
    """(size, mtime) of a file, None when absent; ``changed``: with its inode change time and number too."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino] if changed else [info.st_size,
                                                                                                info.st_mtime_ns]


def _tree(root: Path) -> str:
    """Every file under nodeweave's package folder (``__pycache__`` aside): path, size, mtime, as one digest."""
    digest = hashlib.sha256()
    folders = [str(root)]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name == "__pycache__":
                    continue
                if entry.is_dir():
                    folders.append(entry.path)
                    digest.update(f"d {entry.path}\n".encode("utf-8", "surrogateescape"))
                else:
                    info = entry.stat()
                    digest.update(f"f {entry.path} {info.st_size} {info.st_mtime_ns}\n"
                                  .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _module_files(package: str) -> "dict[str, list]":
    """Each loaded module's file outside nodeweave's folder (which :func:`_tree` stamps whole), with its stamp."""
    found = {}
    for module in list(sys.modules.values()):
        for name in (getattr(module, "__file__", None), getattr(module, "__cached__", None)):
            if isinstance(name, str) and not _inside(os.path.abspath(name), package):
                found[os.path.abspath(name)] = _stamp(name)
    return found


# ---- keeping and answering -----------------------------------------------------------------------------------

def keep(seen: Watch, plan) -> None:
    """After a check that found nothing stale and said nothing else: the record of what it rests on and printed.
    Nothing is kept when it did something no file shows; a cache folder that cannot be written keeps nothing."""
    stop(seen)
    if seen.unkept:
        return
    package, tree, loaded = seen.package
    modules = _module_files(package)
    for path, stamp in modules.items():  # each module's file as it was when loaded: before the check, or read in it
        if path in loaded:
            before = loaded[path]
        elif path in seen.opened:
            before = seen.opened[path][:2] if seen.opened[path] else None
        else:
            continue  # loaded without an open the audit sees (an extension module): stamped as it is now
        if stamp != before:
            return
    if _tree(Path(package)) != tree:
        return
    cache = str(cache_root().resolve())
    files, folders = {}, set(seen.listed)
    for path in sorted(seen.opened):
        if path in modules or _inside(path, package) or path.endswith(".pyc"):
            continue  # code: stamped above
        files[path] = _content(path)
        if files[path] == "not a file" or _stamp(path, changed=True) != seen.opened[path]:
            return  # a pipe or a device, or a file changed since the check read it: its bytes are not what it saw
        if not _inside(path, cache):
            folders.add(os.path.dirname(path))
    (phase,) = plan.phases
    for rel, *_ in phase.recorded:  # a file the render record names may come back (then it is obsolete: stale)
        folder = Path(phase.out, rel).parent
        while _inside(str(folder), phase.out):
            folders.add(str(folder))
            folder = folder.parent
    folders = {f for f in folders if not _inside(f, package) and os.path.basename(f) != "__pycache__"}
    record = {"version": VERSION, "call": seen.call.key, "package": tree,
              "modules": sorted(modules.items()), "files": sorted(files.items()),
              "folders": sorted((folder, _names(folder)) for folder in folders),
              "plan": {"verb": plan.verb, "where": plan.where, "notes": list(plan.notes), "what": phase.what,
                       "out": phase.out, "targets": list(phase.targets), "prune": phase.prune, "job": phase.job,
                       "files": [[f.path, f.status, f.size, f.sha256, f.target] for f in phase.files],
                       "recorded": [list(r) for r in phase.recorded]}}
    where = seen.call.record
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        scratch = where.with_name(f".{where.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(scratch, where)
    except OSError:
        pass


def answer(call: Call):
    """The plan the last identical check printed, when everything it rested on is unchanged; else None."""
    try:
        record = json.loads(bounded.read_own(call.record, bounded.RECORD_CAP, "a render check record"))
        if not isinstance(record, dict) or record.get("version") != VERSION or record.get("call") != call.key:
            return None
        if any(_content(path) != digest for path, digest in record["files"]):
            return None
        if any(_names(folder) != digest for folder, digest in record["folders"]):
            return None
        if any(_stamp(path) != stamp for path, stamp in record["modules"]):
            return None
        if record["package"] != _tree(package_root()):
            return None
        return _plan(record["plan"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _plan(kept: dict):
    from nodeweave.plan import Plan, RenderedFile, RenderFilesPhase

    files = tuple(RenderedFile(path, status, size, sha256, target) for path, status, size, sha256, target
                  in kept["files"])
    phase = RenderFilesPhase(kept["what"], out=kept["out"], targets=tuple(kept["targets"]), files=files,
                             prune=kept["prune"], job=kept["job"], recorded=tuple(map(tuple, kept["recorded"])))
    return Plan(kept["verb"], kept["where"], (phase,), tuple(kept["notes"]))
