"""Warm start (``running/warm.py``): the next launcher started ahead and held, its imports done.

The launcher here is a Python console script shaped like pip's ``torchrun`` (a shebang naming this Python, its
imports, then a ``__main__`` guard) whose one import takes a second and records the process and time it ran in;
``run_supervised``, the held process and its hand-over are the real ones, each run in a child Python (it
installs signal handlers). Recovery's own use, under real torchrun, is in tests/test_recovery_processes.py.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nodeweave.entrypoint.running.warm import WarmStart, interpreter, startup

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[0] / "src"

SLOW_MODULE = textwrap.dedent("""\
    import os, time
    time.sleep(1.0)
    AT = time.time()
    with open(os.environ["MARKS"], "a") as f:
        f.write(f"{os.getpid()} {AT}\\n")
""")
LAUNCHER = textwrap.dedent("""\
    #!{python}
    import json, os, sys, time
    import slowmod
    if __name__ == '__main__':
        print("LAUNCH " + json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "gen": os.environ.get("GEN"),
                                       "pid": os.getpid(), "imported_at": slowmod.AT, "now": time.time(),
                                       "path0": sys.path[0], "warnings": os.environ.get("PYTHONWARNINGS")}}),
              flush=True)
        time.sleep(float(os.environ.get("SLEEP", "0")))
        sys.exit(int(os.environ.get("EXIT", "0")))
""")
DRIVER = textwrap.dedent("""\
    import json, os, sys, time
    sys.path[:0] = [{tests!r}, {src!r}]
    from test_exchange_node import RecordingWatch
    from nodeweave.entrypoint.running.supervise import run_supervised
    from nodeweave.entrypoint.running.warm import WarmStart
    log = lambda m: print("LOG " + m, file=sys.stderr, flush=True)
    warm = WarmStart({launcher!r}, log, after_s={after_s!r})
    results = []
    for argv, env in json.loads(sys.argv[1]):
        if env.get("KILL_HELD") and warm.held is not None:  # the held process ends before the launch
            os.kill(warm.held.pid, 9)
            time.sleep(0.5)
        began = time.time()
        code = run_supervised({exe!r}, argv, env, watch=RecordingWatch(), warm=warm)
        results.append({{"began": began, "code": code, "held": warm.held.pid if warm.held else None}})
    warm.discard()
    try:
        left = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        left = None
    print("RESULT " + json.dumps({{"launches": results, "children_left": left}}), file=sys.stderr, flush=True)
""")


@pytest.fixture
def launcher(tmp_path):
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE)
    exe = tmp_path / "torchrun"
    exe.write_text(LAUNCHER.format(python=sys.executable))
    exe.chmod(0o755)
    return exe


def drive(tmp_path, exe, launches, launcher="torchrun", after_s=0.0):
    """Run each (argv, extra env) through run_supervised with one WarmStart; (launch lines, results, stderr)."""
    base = {"PATH": f"{tmp_path}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "MARKS": str(tmp_path / "marks")}
    plan = [(argv, dict(base, **env)) for argv, env in launches]
    code = DRIVER.format(tests=str(HERE), src=str(SRC), launcher=launcher, after_s=after_s, exe=str(exe))
    out = subprocess.run([sys.executable, "-c", code, json.dumps(plan)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert "RESULT " in out.stderr, out.stderr
    lines = [json.loads(line[len("LAUNCH "):]) for line in out.stdout.splitlines() if line.startswith("LAUNCH ")]
    return lines, json.loads(out.stderr.split("RESULT ", 1)[1]), out.stderr


def imports(tmp_path):
    """{pid: time} of every import of the slow module."""
    rows = [line.split() for line in (tmp_path / "marks").read_text().splitlines()]
    return {int(pid): float(at) for pid, at in rows}


def _import_lines(tmp_path):
    return [int(line.split()[0]) for line in (tmp_path / "marks").read_text().splitlines()]


def test_the_held_launcher_takes_the_next_launch_with_its_imports_already_done(tmp_path, launcher):
    lines, result, err = drive(tmp_path, launcher, [(["torchrun", "--first"], {"GEN": "1", "SLEEP": "2.5"}),
                                                    (["torchrun", "--second", "x"], {"GEN": "2", "EXIT": "3"})])
    first, second = lines
    assert [r["code"] for r in result["launches"]] == [0, 3]  # the held launcher's exit status is the launch's
    assert "LOG warm start: torchrun held ready for" in err and "(its imports done) takes this launch" in err
    # the second launch ran in the process held during the first, which had imported before it was asked
    assert second["pid"] == result["launches"][0]["held"]
    assert imports(tmp_path)[second["pid"]] < result["launches"][1]["began"] < second["now"]
    assert _import_lines(tmp_path).count(second["pid"]) == 1, "the held launcher imported again"
    # what a cold exec of the script would have seen: argv, the environment and folder of its own launch
    assert second["argv"] == [str(launcher), "--second", "x"] == [first["argv"][0], "--second", "x"]
    assert (second["gen"], second["cwd"], second["path0"]) == ("2", str(tmp_path), str(tmp_path))
    assert result["children_left"] is None  # the one held after the second launch was reaped at discard


def test_a_launch_asking_for_other_start_up_variables_starts_cold_and_reaps_the_held_one(tmp_path, launcher):
    lines, result, err = drive(tmp_path, launcher, [(["torchrun"], {"SLEEP": "2.5"}),
                                                    (["torchrun"], {"PYTHONWARNINGS": "error"})])
    assert "warm start: the held torchrun is not used (PYTHONWARNINGS changed since it started); starting it cold" \
        in err
    second = lines[1]
    assert second["pid"] != result["launches"][0]["held"] and second["warnings"] == "error"
    assert second["imported_at"] > result["launches"][1]["began"]  # imported in its own cold start
    assert result["children_left"] is None


def test_a_request_before_the_delay_runs_at_once_without_a_preload(tmp_path, launcher):
    """Held with a delay longer than the first launch: the second launch finds it not yet imported."""
    lines, result, err = drive(tmp_path, launcher, [(["torchrun"], {}), (["torchrun", "--now"], {"EXIT": "4"})],
                               after_s=60.0)
    assert "(still importing) takes this launch" in err
    assert [r["code"] for r in result["launches"]] == [0, 4] and lines[1]["argv"][1:] == ["--now"]
    assert len(imports(tmp_path)) == 2  # each launch imported once


def test_only_the_known_launchers_are_held(tmp_path, launcher):
    """A user's own command may run code before any __main__ guard: it is never started twice."""
    lines, result, err = drive(tmp_path, launcher, [(["torchrun"], {"SLEEP": "1.5"})] * 2, launcher="command")
    assert [r["held"] for r in result["launches"]] == [None, None] and "warm start" not in err
    assert len({line["pid"] for line in lines}) == 2


def test_the_held_launchers_output_reaches_the_entrypoints_streams_once_it_launches(tmp_path, launcher):
    lines, result, _ = drive(tmp_path, launcher, [(["torchrun"], {"SLEEP": "2.5"}), (["torchrun", "--out"], {})])
    assert [line["argv"][1:] for line in lines] == [[], ["--out"]]


def test_a_held_launcher_ends_with_the_entrypoint_that_held_it(tmp_path, launcher):
    """The parent-death signal, as for the launcher itself: a killed entrypoint leaves no held process behind."""
    code = textwrap.dedent(f"""\
        import os, sys, time
        sys.path.insert(0, {str(SRC)!r})
        from nodeweave.entrypoint.running.warm import WarmStart
        warm = WarmStart("torchrun", print, after_s=0.0)
        warm.hold({str(launcher)!r}, {{"PATH": "/usr/bin:/bin", "PYTHONPATH": {str(tmp_path)!r},
                                       "MARKS": {str(tmp_path / "marks")!r}}})
        print("HELD", warm.held.pid, flush=True)
        while not warm.held.poll_ready():
            time.sleep(0.05)
        os.kill(os.getpid(), 9)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL
    held = int(out.stdout.split("HELD ")[1].split()[0])
    deadline = time.monotonic() + 10
    while _running(held) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(held), "the held launcher outlived its entrypoint"


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@pytest.mark.parametrize("head, found", [
    ("#!{python}\nimport sys\nif __name__ == '__main__':\n    pass\n", "{python}"),
    ('#!/usr/bin/env {name}\nif __name__ == "__main__":\n    pass\n', "{python}"),
    ("#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\nif __name__ == '__main__':\n    pass\n", "{python}"),
    ("#!{python} -u\nif __name__ == '__main__':\n    pass\n", None),       # options a cold exec keeps exactly
    ("#!{python}\nimport sys\nsys.exit(main())\n", None),                  # no guard: its code runs at import
    ("#!/bin/sh\nexec python3 -m torch.distributed.run \"$@\"\n", None),   # a shell wrapper
    ("\x7fELF\x02\x01\x01", None),                                          # a binary
])
def test_which_launcher_files_can_be_held(tmp_path, head, found):
    python = Path(sys.executable)
    path = tmp_path / "launcher"
    path.write_text(head.format(python=python, name=python.name))
    expected = None if found is None else found.format(python=python)
    assert interpreter(str(path), str(python.parent)) == expected


def test_the_ranks_hook_on_pythonpath_is_not_a_start_up_difference():
    hook = "/x/stall/rankhook"
    assert startup({"PYTHONPATH": f"{hook}:/app", "LANG": "C.UTF-8", "PATH": "/a"}, (hook,)) == \
        startup({"PYTHONPATH": "/app", "LANG": "C.UTF-8", "PATH": "/b"}, (hook,)) == \
        {"PYTHONPATH": "/app", "LANG": "C.UTF-8"}
    assert startup({"PYTHONPATH": hook}, (hook,)) == startup({}, (hook,)) == {}


def test_warm_start_off_holds_nothing(tmp_path, launcher):
    warm = WarmStart("torchrun", print, enabled=False)
    warm.hold(str(launcher), {"PATH": "/usr/bin"})
    assert warm.held is None and warm.take(str(launcher), ["torchrun"], {}, str(tmp_path)) is None


def test_a_held_launcher_that_ended_before_the_launch_is_reaped_and_the_launch_starts_cold(tmp_path, launcher):
    lines, result, err = drive(tmp_path, launcher, [(["torchrun"], {"SLEEP": "2.5"}),
                                                    (["torchrun", "--again"], {"KILL_HELD": "1", "EXIT": "2"})])
    assert "warm start: the held torchrun is not used (it had ended); starting it cold" in err
    assert [r["code"] for r in result["launches"]] == [0, 2] and lines[1]["argv"][1:] == ["--again"]
    assert lines[1]["pid"] != result["launches"][0]["held"] and result["children_left"] is None
