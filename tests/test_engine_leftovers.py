"""The end-of-run sweep of the images a test run built, on real podman.

Other test groups use podman meanwhile, so the engine here sees only this
test's own images (``localhost/nwl-*``, one of the suite's names): the same
start-then-finish logic the run's sweep uses.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

import engine_leftovers

sys.path.insert(0, str(Path(__file__).parent / "e2e"))
from e2e_harness import REGISTRY  # noqa: E402


def _podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120)


def _import_image(ref: str) -> str:
    """A one-file image, made in a second with ``podman import``; its content differs with ``ref``; its id."""
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        data = ref.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out = subprocess.run(["podman", "import", "-", ref], input=payload.getvalue(), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return _podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()


class OwnImagesOnly(engine_leftovers.Engine):
    """podman, listing only the images whose ids this test made: other groups' stay out of its sight."""

    def __init__(self) -> None:
        super().__init__("podman", ["podman"])
        self.mine: set = set()

    def images(self):
        every = super().images()
        return None if every is None else {ident: names for ident, names in every.items() if ident in self.mine}


def _exists(ident: str) -> bool:
    return _podman("image", "exists", ident).returncode == 0


def test_the_sweep_knows_the_names_the_tests_build_under():
    assert engine_leftovers.REGISTRY == REGISTRY
    sys.path.insert(0, str(Path(__file__).parent))
    from test_plan_record import SLEEPER
    from test_zipapp_image import IMAGE as BYO
    for name in (f"{REGISTRY}/e2e:cpu", f"{REGISTRY}/e2e-contents:contents-test", SLEEPER, BYO,
                 "127.0.0.1:43635/team/pushed:cpu-16f49b61946e", "ghcr.io/example/llama-pretrain:cpu"):
        assert engine_leftovers.suite_made(name), name
    for name in ("localhost/nodeweave-base:bookworm", "docker.io/library/python:3.11", "localhost/my-job:cpu",
                 "localhost/nodeweave-e2e-00000000/e2e:cpu", "<none>:<none>"):
        assert not engine_leftovers.suite_made(name), name


@pytest.mark.engine
def test_the_images_the_run_made_go_and_those_there_before_stay(monkeypatch):
    monkeypatch.delenv(engine_leftovers.KEEP_VARIABLE, raising=False)
    engine = OwnImagesOnly()
    monkeypatch.setattr(engine_leftovers, "engines", lambda: [engine])
    mine = f"localhost/nwl-{uuid.uuid4().hex[:10]}"
    outside = f"localhost/not-the-suites-{uuid.uuid4().hex[:10]}:cpu"
    made = []
    try:
        made.append(_import_image(f"{mine}/e2e:cpu"))
        engine.mine.update(made)
        sweep = engine_leftovers.Sweep()
        sweep.start()
        assert sweep.before["podman"] == {made[0]}
        made.append(_import_image(f"{mine}/e2e:new"))
        made.append(_import_image(f"{mine}/e2e:moved"))
        made.append(_import_image(f"{mine}/e2e:moved-again"))
        _podman("tag", f"{mine}/e2e:moved-again", f"{mine}/e2e:moved")  # a rebuild moves the tag
        _podman("untag", made[3], f"{mine}/e2e:moved-again")
        made.append(_import_image(outside))
        engine.mine.update(made)
        untagged = json.loads(_podman("image", "inspect", made[2]).stdout)[0]
        assert not untagged.get("RepoTags"), "the image the moved tag left is untagged, known by its history"

        line = sweep.finish()

        assert line is not None and line.startswith("removed the images this run built (podman 3)"), line
        assert not any(_exists(ident) for ident in made[1:4])
        assert _exists(made[0]), "an image there before the run stays"
        assert _exists(made[4]), "an image under a name the suite does not use stays"
    finally:
        _podman("rmi", "-f", *made)


@pytest.mark.engine
def test_a_run_that_built_nothing_removes_nothing(monkeypatch):
    monkeypatch.delenv(engine_leftovers.KEEP_VARIABLE, raising=False)
    engine = OwnImagesOnly()
    monkeypatch.setattr(engine_leftovers, "engines", lambda: [engine])
    ident = _import_image(f"localhost/nwl-{uuid.uuid4().hex[:10]}/e2e:cpu")
    engine.mine.add(ident)
    try:
        sweep = engine_leftovers.Sweep()
        sweep.start()
        assert sweep.finish() is None
        assert _exists(ident)
    finally:
        _podman("rmi", "-f", ident)


def test_with_the_variable_set_the_images_are_kept(monkeypatch):
    monkeypatch.setenv(engine_leftovers.KEEP_VARIABLE, "1")
    assert engine_leftovers.Sweep().finish() == f"the images this run built are kept ({engine_leftovers.KEEP_VARIABLE}=1)"


def test_the_header_names_the_free_space_where_the_engines_write():
    line = engine_leftovers.disk_line()
    assert line.startswith("disk: ") and " GB free for the engines (/var/lib/containers)" in line


# A run joining the others from its own process: it holds the runs' lock until told to leave.
CHILD_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import engine_leftovers
runs = engine_leftovers.Runs(engine_leftovers.Path(sys.argv[2]))
runs.join(lambda: {"podman": {sys.argv[3]}})
print("joined", flush=True)
sys.stdin.readline()
with runs.leaving() as (last, before):
    print(json.dumps([last, sorted(before["podman"]) if before else None]), flush=True)
"""


def _child_run(directory: Path, name: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", CHILD_RUN, str(Path(__file__).parent), str(directory), name],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "joined\n"
    return child


def test_a_run_that_ends_while_another_goes_on_sweeps_nothing_and_the_last_gets_the_first_ones_start(tmp_path):
    first = _child_run(tmp_path, "first's start")
    later = engine_leftovers.Runs(tmp_path)
    later.join(lambda: pytest.fail("a run that joins others must not take its own snapshot"))
    ended, _ = first.communicate("leave\n", timeout=60)
    assert json.loads(ended) == [False, None], "the first run ended while the later one went on"
    with later.leaving() as (last, before):
        assert last and before == {"podman": {"first's start"}}
    assert not (tmp_path / "snapshot.json").exists()


def test_a_killed_run_holds_no_one_up(tmp_path):
    killed = _child_run(tmp_path, "killed")
    killed.kill()
    killed.wait(timeout=60)
    runs = engine_leftovers.Runs(tmp_path)
    runs.join(lambda: {"podman": {"mine"}})
    with runs.leaving() as (last, before):
        assert last and before == {"podman": {"mine"}}, "the killed run's lock went with its process"


@pytest.mark.engine
def test_overlapping_runs_leave_each_others_images_and_the_last_removes_them_all(monkeypatch, tmp_path):
    """What broke stop 39's CI: test_ci_gate.py's one-test pytest ended while test_push.py built, and took
    the image it had just built."""
    monkeypatch.delenv(engine_leftovers.KEEP_VARIABLE, raising=False)
    engine = OwnImagesOnly()
    monkeypatch.setattr(engine_leftovers, "engines", lambda: [engine])
    mine = f"localhost/nwl-{uuid.uuid4().hex[:10]}"
    made = []
    try:
        suite = engine_leftovers.Sweep(engine_leftovers.Runs(tmp_path))
        nested = engine_leftovers.Sweep(engine_leftovers.Runs(tmp_path))
        suite.start()
        made.append(_import_image(f"{mine}/e2e:suites"))
        nested.start()
        made.append(_import_image(f"{mine}/pushed:while-nested-ran"))
        engine.mine.update(made)

        line = nested.finish()

        assert line is not None and "left to the test run still going" in line, line
        assert all(_exists(ident) for ident in made), "a run that ends first takes nothing"
        assert suite.finish().startswith("removed the images this run built (podman 2)")
        assert not any(_exists(ident) for ident in made)
    finally:
        _podman("rmi", "-f", *made)
