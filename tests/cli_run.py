"""The one way tests run ``nodeweave`` and ``nodeweave-entrypoint``, so they always test this checkout's code.

A subprocess started without ``<checkout>/src`` first on PYTHONPATH runs whatever nodeweave is installed in the
venv instead, and a test passes against code nobody changed; ``test_cli_run_is_the_one_way`` keeps every test on
these helpers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
# The console script's own entry (Ctrl-C while loading, shell completion) where the test is about that.
PROGRAM = [sys.executable, "-c", "import sys; from nodeweave.start import main; sys.exit(main())"]
ENTRYPOINT = [sys.executable, "-m", "nodeweave.entrypoint"]
# A clean environment: no user PATH tools, a wide terminal so lines are not wrapped.
CLEAN = {"PATH": "/usr/bin:/bin", "COLUMNS": "200"}


def home_beside(folder) -> str:
    """A home folder of the test's own beside ``folder``, made: never the project folder itself, whose spec would
    then lie directly in the home, which every verb refuses as a workspace (walk9 A27, left10)."""
    home = Path(folder).parent / f"{Path(folder).name}.home"
    home.mkdir(parents=True, exist_ok=True)
    return str(home)


def checkout_env(env: Optional[Mapping[str, str]] = None, **extra: str) -> "dict[str, str]":
    """``env`` (None: this process's environment) plus ``extra``, with this checkout's src first on PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    out.update(extra)
    rest = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(SRC)]
    out["PYTHONPATH"] = os.pathsep.join([str(SRC), *rest])
    return out


def run(argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None, timeout: float = 120,
        **kwargs) -> "subprocess.CompletedProcess[str]":
    """``argv`` to the end with its output captured (unless stdout/stderr are given) as text (unless ``text=False``),
    and the checkout's env."""
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    kwargs.setdefault("text", True)
    return subprocess.run(list(argv), env=checkout_env(env), timeout=timeout, **kwargs)


def popen(argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None, **kwargs) -> subprocess.Popen:
    """``argv`` started in the background with the checkout's env; the caller waits and reads."""
    kwargs.setdefault("text", True)
    return subprocess.Popen(list(argv), env=checkout_env(env), **kwargs)


def nodeweave(*args: str, **kwargs) -> "subprocess.CompletedProcess[str]":
    """``nodeweave ARGS`` in a subprocess; keyword arguments as for :func:`run`."""
    return run([*NODEWEAVE, *args], **kwargs)


def entrypoint(*args: str, **kwargs) -> "subprocess.CompletedProcess[str]":
    """``nodeweave-entrypoint ARGS`` in a subprocess; keyword arguments as for :func:`run`."""
    return run([*ENTRYPOINT, *args], **kwargs)


def in_process(capsys, *argv: str) -> "tuple[int, str, str]":
    """``nodeweave ARGV`` through ``main`` in this process (fast): exit code, stdout, stderr."""
    from nodeweave.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(text: str) -> str:
    """The one non-blank line of ``text`` (a refusal is one line, never a traceback)."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def leaves() -> "list[tuple[list[str], object]]":
    """Every runnable command of ``nodeweave``: (its words, the click command), for tests that walk every verb."""
    import typer.main

    from nodeweave.cli import app
    from nodeweave.cli.habits.lazy import LazyVerbs, every_command

    def walk(command, words):
        below = every_command(command) if isinstance(command, LazyVerbs) else getattr(command, "commands", None)
        if not below:
            yield words, command
            return
        for name, sub in sorted(below.items()):
            yield from walk(sub, [*words, name])
    return list(walk(typer.main.get_command(app), []))


def ctrl_c_reaches_it() -> None:
    """``preexec_fn`` for a child a test stops with SIGINT: the default action back. A test run started in the
    background (``cmd &`` in a script, as a CI runner may) ignores SIGINT, the child inherits that, and its
    Ctrl-C would never arrive: the test would then depend on how the run around it was started."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def entrypoint_in_process(folder, monkeypatch, capsys):
    """``nodeweave-entrypoint ARGV`` in this process, in ``folder`` (made the working folder) with only ``env`` of
    the caller's set beside PATH, HOME and TMPDIR: ``run(argv, env=None) -> (exit code, stdout, stderr)``."""
    from nodeweave.entrypoint.__main__ import main as entrypoint_main

    monkeypatch.chdir(folder)
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "TMPDIR": str(folder)}

    def run(argv, env=None):
        monkeypatch.setattr(os, "environ", dict(base, **(env or {})))
        code = entrypoint_main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def in_a_folder_with_train_py(tmp_path, monkeypatch, capsys):
    """``nodeweave-entrypoint ARGV`` in this process, in a folder holding train.py: (exit code, stdout, stderr).
    The body of the ``entrypoint`` fixture the entrypoint walks share (each file: ``entrypoint =
    pytest.fixture(in_a_folder_with_train_py)``)."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    return entrypoint_in_process(tmp_path, monkeypatch, capsys)
