"""walk18a rows fixed by fix21d: a dry run ends as the real verb would, nodeweave's do-nothing flag after `--` stops
everything, down and status wait on the job's lock as the other verbs do, and an up that recreates nothing leaves a
run alone. Each test fails on the code before its fix."""

from __future__ import annotations

from cli_run import in_process as run_cli
from team_folder import flat, proj_folder
from test_walk17_fix19f import HOLDER  # a process holding job proj's lock as `up` does

import pytest


@pytest.fixture
def proj(tmp_path, monkeypatch):
    return proj_folder(tmp_path, monkeypatch)


# -- class 2: nodeweave's own do-nothing flag after `--`, and another verb's option before it ---------------------
@pytest.mark.parametrize("argv, fixed", [
    (["run", "--", "train.py", "--steps", "1", "--dry-run"], "nodeweave run --dry-run -- train.py --steps 1"),
    (["exec", "--node", "0", "--", "ls", "--dry-run"], "nodeweave exec --node 0 --dry-run -- ls"),
], ids=["run", "exec"])
def test_a_dry_run_flag_after_the_dashes_is_refused_before_anything_starts(proj, capsys, argv, fixed):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "", (out, err)
    said = flat(err)
    assert "--dry-run comes after `--`" in said and "nothing is started" in said and fixed in said, err
    assert not (proj / "runs").exists() and not (proj / ".nodeweave").exists()


def test_another_verbs_option_is_said_as_that_verbs_not_sent_after_the_dashes(proj, capsys):
    code, out, err = run_cli(capsys, "run", "--check", "--dry-run", "--threshold", "10")
    said = flat(err)
    assert code == 2 and "`nodeweave check --threshold 10` first, then `nodeweave run`" in said, err
    assert "go after `--`" not in said
    code, out, err = run_cli(capsys, "exec", "--threshold", "3")
    assert code == 2 and "it is an option of `nodeweave check`" in flat(err), err


# -- class 3: down, its dry run, and status while an up holds the job's lock ---------------------------------------


def test_down_and_status_while_up_changes_the_job_say_so(proj, capsys):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(proj)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for verb in (["down"], ["down", "--dry-run"], ["status"]):
            code, out, err = run_cli(capsys, *verb)
            said = flat(err)
            assert code == 3, (verb, out, err)
            assert f"`nodeweave up` (pid {holder.pid}, since" in said and "is changing job proj's nodes" in said, err
            assert "nothing to take down" not in flat(out + err) and "is not up" not in said, (verb, out, err)
    finally:
        holder.kill()
        holder.wait()


# -- class 4: up's guard of a run in progress asks whether this up recreates anything ------------------------------
RUN_LINE = "run 20261201T192814Z-proj is in progress on node-0, node-1 since 19:28:16 UTC"


@pytest.mark.parametrize("unchanged", [True, False], ids=["nothing-recreated", "recreated"])
def test_an_up_that_recreates_nothing_leaves_the_run_alone(proj, capsys, monkeypatch, unchanged):
    import nodeweave.cli.habits.clusteropts as clusteropts
    import nodeweave.cluster.onbackend as onbackend
    from nodeweave.cluster.backends.local import LocalCluster

    monkeypatch.setattr(clusteropts, "first_refusal", lambda backend: None)
    busy = f"{RUN_LINE}: {onbackend.BUSY_CONSEQUENCE['up']}; `nodeweave stop` ends it"
    monkeypatch.setattr(onbackend, "up_over", lambda backend: (busy, backend.nodes(dry_run=True)))
    monkeypatch.setattr(LocalCluster, "up_unchanged", lambda self, nodes, mode, image: unchanged)
    monkeypatch.setattr(LocalCluster, "image_problem", lambda self, image: None)  # the image built
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    said = flat(out + err)
    if unchanged:
        assert code == 0 and "nothing recreated" in said and "would end with exit 3" not in said, said
        assert f"{RUN_LINE}: nothing recreated, so it goes on" in said, said
    else:
        assert code == 3 and f"the real up would end with exit 3: {RUN_LINE}" in said, said


# -- class 1: the one dry-run rule: a refusal the dry run found ends it with the real exit ----------------------------
FAKE_PODMAN = """#!/bin/sh
# podman whose store holds no image and which knows no container; `exec` answers as a node lacking the program
case "$*" in
  "version --format"*) echo 5.0.0 ;;
  "image inspect"*) echo "Error: image not known" >&2; exit 125 ;;
  exec*) case "$*" in *nosuch*) echo 'Error: no container with name or ID "nosuch" found: no such container' >&2
                                exit 125 ;; esac
         echo nodeweave-lacks ;;
  inspect*|ps*) echo "Error: no such object" >&2; exit 125 ;;
  *) exit 0 ;;
esac
"""


def _fake_podman(folder, monkeypatch):
    import os

    bin_dir = folder / "fakebin"
    bin_dir.mkdir()
    for tool, text in (("podman", FAKE_PODMAN), ("podman-compose", "#!/bin/sh\nexit 0\n")):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")


@pytest.mark.parametrize("argv, code, said", [
    (["doctor", "--cluster", "--dry-run", "--node", "podman:nosuch"], 1,
     "the real doctor --cluster would end with exit 1: podman:nosuch: Error: no container"),
    (["sync", "--dry-run", "--node", "podman:nosuch"], 1, "the real sync would end with exit 1: podman:nosuch"),
    (["run", "--launcher", "command", "--dry-run", "--", "nvidia-smi"], 2,
     "the real run would end with exit 2: launcher command execs 'nvidia-smi', but node-0's image has no nvidia-smi"),
], ids=["doctor-node", "sync-node", "command-program"])
def test_a_dry_run_that_found_the_real_refusal_ends_with_its_exit(proj, capsys, monkeypatch, argv, code, said):
    _fake_podman(proj, monkeypatch)
    if "nvidia-smi" in argv:  # the nodes up and idle: node 0's image is asked for the program
        import nodeweave.cluster.onbackend as onbackend

        monkeypatch.setattr(onbackend, "down_line", lambda *a, **k: None)
        monkeypatch.setattr(onbackend, "busy_line", lambda *a, **k: None)
    got, out, err = run_cli(capsys, *argv)
    assert said in flat(out + err), out + err
    assert got == code, out + err
