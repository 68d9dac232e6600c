"""The one folder nodeweave keeps its caches in (the zipapp, compiled templates, ``render --check``'s records).

``$NODEWEAVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/nodeweave``, else ``~/.cache/nodeweave``. Each cache once
read the variable itself, and a value that was no folder to keep a cache in went unsaid: a file meant "no
cache" silently, a relative path made ``relative/dir/`` in whatever folder the command ran in, the project,
where ``sync`` and the image's build context meet it (walk6, W66). :func:`cache_dir_problem` is the rule the
CLI applies at start-up (with the empty value's, ``cli/habits/variables.py``), before any cache is opened; unset,
the default folder is judged by the same rule, said of ``XDG_CACHE_HOME`` or ``HOME`` (walk13 A13, A14).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping, Optional

CACHE_ENV = "NODEWEAVE_CACHE_DIR"
ACCEPTED = "an absolute path of a folder of your own (made if missing), or unset it for $XDG_CACHE_HOME/nodeweave " \
           "(~/.cache/nodeweave)"


def cache_root() -> Path:
    """The cache folder (it may not exist yet)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    return user_cache_base() / "nodeweave"


def user_cache_base(environ: Optional[Mapping[str, str]] = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``$HOME/.cache`` (the passwd home when HOME is unset): the folder every default
    of nodeweave's caches lies in (this module's, and sync's digests and residents), judged at start-up by
    :func:`cache_dir_problem` (walk13 A13, A14)."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CACHE_HOME", "")
    if xdg:
        return Path(xdg)
    return Path(_home(environ)) / ".cache"


def _home(environ: Mapping[str, str]) -> str:
    """The home folder as ``Path.home()`` reads it (HOME as written, even empty or relative; else passwd's)."""
    if "HOME" in environ:
        return environ["HOME"]  # "" is said as empty before anything reads it as a folder
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return os.path.expanduser("~")


def cache_dir_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The line refusing ``NODEWEAVE_CACHE_DIR`` when it is set to what cannot hold a cache: a relative path, or
    something other than a folder (a file, a device); unset or empty (the empty rule's), the default folder it
    stands for (:func:`default_cache_problem`); None when fine."""
    environ = os.environ if environ is None else environ
    given = environ.get(CACHE_ENV, "")
    if not given.strip():
        return default_cache_problem(environ)
    if given.startswith("~"):
        return (f"{CACHE_ENV}={given} starts with a ~ no shell expanded (nodeweave reads it as written, a folder "
                f"named ~ here); accepted: {ACCEPTED}")
    if not os.path.isabs(given):
        return (f"{CACHE_ENV}={given} is a relative path: the caches would be made in whatever folder the command "
                f"runs in (the project, which sync and the image's build context send); accepted: {ACCEPTED}")
    from nodeweave.failures import own_folder_problem  # the rule of every folder nodeweave writes into

    problem = own_folder_problem(Path(os.path.abspath(given)))
    if problem is not None and not problem.endswith("is not a directory"):  # a file: said below, in its words
        return f"{CACHE_ENV}={given}: {problem}; accepted: {ACCEPTED}"
    try:
        mode = os.stat(given).st_mode
    except FileNotFoundError:
        return _inside_a_project(given)  # made on first use
    except NotADirectoryError:
        return f"{CACHE_ENV}={given} goes through a file, not a folder; accepted: {ACCEPTED}"
    except OSError as err:
        return f"{CACHE_ENV}={given} cannot be looked at ({err.strerror or err}); accepted: {ACCEPTED}"
    if not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else "a device, a pipe or a socket"
        return f"{CACHE_ENV}={given} is {kind}, not a folder; accepted: {ACCEPTED}"
    return _inside_a_project(given)


def default_cache_problem(environ: Mapping[str, str]) -> Optional[str]:
    """The line refusing the default cache folder (``NODEWEAVE_CACHE_DIR`` unset) by the rule that judges the
    variable, said of the variable it comes from: ``XDG_CACHE_HOME`` when set (walk6 M6; relative or with a ``~``,
    walk13 A13), else ``HOME`` (walk13 A14: ``HOME=/nonexistent``, a service account's, made ``/nonexistent/``
    directly in ``/``; a relative or empty ``HOME`` made ``rel/.cache/`` in the project, even from a dry run).
    None: the default is a folder of the user's."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    name, value = ("XDG_CACHE_HOME", xdg) if xdg else ("HOME", _home(environ))
    folder = user_cache_base(environ) / "nodeweave"
    fix = (f"{name} an absolute folder of your own, or {CACHE_ENV} set to {ACCEPTED.split(', or unset')[0]}")
    if value.startswith("~"):
        return (f"{name}={value} starts with a ~ no shell expanded: the caches would go into {folder}, a folder "
                f"named ~ in whatever folder the command runs in; accepted: {fix}")
    if not value.strip():  # HOME= (Path.home() then reads it as /): no home to keep caches in
        return f"{name} is set but empty: there is no home folder to keep the caches in; accepted: {fix}"
    if not os.path.isabs(value):
        return (f"{name}={value} is a relative path: the caches would go into {folder} in whatever folder the "
                f"command runs in (the project, which sync and the image's build context send); accepted: {fix}")
    from nodeweave.failures import own_folder_problem  # the rule of every folder nodeweave writes into

    problem = own_folder_problem(Path(os.path.abspath(folder)))
    if problem is not None:
        return f"{name}={value}: the caches would go into {folder}, and {problem}; accepted: {fix}"
    return None


def _inside_a_project(given: str) -> Optional[str]:
    """The refusal of a cache folder in a project's tree (walk7 A28), or None."""
    project = _project_holding(Path(os.path.abspath(given)))
    if project is not None:
        return (f"{CACHE_ENV}={given} is inside the project {project} (it holds {_marker(project)}): the caches "
                f"(the zipapp, compiled templates) would land among the job's files, which `nodeweave sync` sends "
                f"to every node and the image's build context copies; accepted: {ACCEPTED}, outside any project")
    return None


PROJECT_MARKERS = ("nodeweave.yaml", ".nodeweave")  # a spec, or the state folder every used project has


def _marker(folder: Path) -> str:
    return next(name for name in PROJECT_MARKERS if (folder / name).exists())


def _project_holding(folder: Path) -> Optional[Path]:
    """The project folder ``folder`` is, or lies in (walk7 A28: ``NODEWEAVE_CACHE_DIR=$PWD`` typed in the project
    put jinja/ and zipapp/ beside train.py, and sync sent them), looking up to the home folder, not past it (a
    spec in a home folder leaves ~/.cache alone); None when there is none."""
    home = Path.home()
    for candidate in (folder, *folder.parents):
        if candidate == home or candidate == candidate.parent:
            return None
        if any((candidate / name).exists() for name in PROJECT_MARKERS):
            return candidate
    return None
