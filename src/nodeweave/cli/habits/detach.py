"""``nodeweave run --detach``: the same run in a background process of its own; its id printed at once.

Why a re-run of the command and not a thread: the run engine already writes every node's output,
exit codes and run.json into the run folder as they happen, and ``logs -f --run ID`` follows that
folder until run.json says the run ended. So the detached run is this very command without
``--detach`` in a new session (Ctrl-C or a closed terminal do not reach it), quiet, and the
folder it creates is the only thing the foreground waits for: the child names it in a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer

from nodeweave.errors import NodeweaveError

ANNOUNCE_ENV = "NODEWEAVE_RUN_ANNOUNCE"  # the file a detached run writes its folder's path into
DETACH_FLAGS = ("--detach", "-d")
WAIT_S = 60.0


def announce(folder: Path) -> None:
    """In a detached run: tell the waiting foreground which folder this run writes (else nothing)."""
    target = os.environ.get(ANNOUNCE_ENV)
    if target:
        Path(target).write_text(str(folder), encoding="utf-8")


def detach_run(parent: Path, as_json: bool) -> None:
    """Start this command again without --detach in its own session; print the run id once its folder exists."""
    from nodeweave.cli.habits.invocation import invoked_argv

    argv = invoked_argv()
    cut = argv.index("--") if "--" in argv else len(argv)
    argv = [a for a in argv[:cut] if a not in DETACH_FLAGS] + ["--quiet"] + argv[cut:]
    with tempfile.TemporaryDirectory(prefix="nodeweave-detach-") as scratch:
        note = Path(scratch) / "folder"
        log = Path(scratch) / "output"
        with open(log, "wb") as output:
            child = subprocess.Popen([sys.executable, "-m", "nodeweave.cli", *argv], stdin=subprocess.DEVNULL,
                                     stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, ANNOUNCE_ENV: str(note)})
        folder = _wait_for(note, child, log)
    run_id = folder.name
    if as_json:
        typer.echo(json.dumps({"run_id": run_id, "folder": str(folder), "pid": child.pid, "detached": True}))
        return
    typer.echo(detached_line(run_id, child.pid), err=True)
    typer.echo(run_id)


def detached_line(run_id: str, pid: int) -> str:
    """What a detached run says: how to follow it, read its result, and end it. `nodeweave stop` ends the run in
    progress on the nodes (recorded as stopped) and a sweep then starts no further point (walk10 C22); `kill PID`
    is the detached process's Ctrl-C (SIGTERM, handled as SIGINT): every node stopped, recorded as interrupted."""
    return (f"nodeweave: run {run_id} detached (pid {pid}); follow it: nodeweave logs -f --run {run_id}; "
            f"its result: nodeweave runs show {run_id}; end it: nodeweave stop (recorded as stopped; a sweep starts "
            f"no further point), or kill {pid} (as Ctrl-C: every node stopped, recorded as interrupted)")


def _wait_for(note: Path, child: "subprocess.Popen", log: Path) -> Path:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if note.exists() and note.read_text(encoding="utf-8"):
            return Path(note.read_text(encoding="utf-8"))
        if child.poll() is not None:
            said = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            raise NodeweaveError(f"the detached run ended before its folder was made (exit {child.returncode}): "
                                 + (said[-1] if said else "no output"), exit_code=child.returncode or 1)
        time.sleep(0.05)
    raise NodeweaveError(f"the detached run (pid {child.pid}) made no run folder within {WAIT_S:.0f} s")
