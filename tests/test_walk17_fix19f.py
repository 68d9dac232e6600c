"""walk17a rows fixed by fix19f: a cluster verb checks what it needs before it touches the nodes, and says truly
where it stood. Each test fails on the code before its fix."""

from __future__ import annotations

import os

from cli_run import in_process as run_cli
from team_folder import flat, proj_folder

import pytest

FAKE_PODMAN = """#!/bin/sh
# podman whose store holds no image, whose registries have none, and which knows no container; every call logged
echo "podman $*" >> "$ENGINE_LOG"
case "$*" in
  "version --format"*) echo 5.0.0 ;;
  "image inspect"*) echo "Error: nosuch:tag: image not known" >&2; exit 125 ;;
  pull*) echo "Trying to pull docker.io/library/nosuch:tag..." >&2
         echo "Error: initializing source docker://nosuch:tag: reading manifest tag: manifest unknown" >&2; exit 125 ;;
  inspect*|ps*) echo "Error: no such object" >&2; exit 125 ;;
  *) exit 0 ;;
esac
"""


@pytest.fixture
def proj(tmp_path, monkeypatch):
    return proj_folder(tmp_path, monkeypatch)


one_line = flat


def fake_podman(folder, monkeypatch):
    bin_dir = folder / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(FAKE_PODMAN)
    (bin_dir / "podman-compose").write_text('#!/bin/sh\necho "podman-compose $*" >> "$ENGINE_LOG"\nexit 0\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    log = folder.parent / "engine.log"
    log.write_text("")
    monkeypatch.setenv("ENGINE_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    return log


# -- class 1: up checks the image before it removes or recreates any node -----------------------------------------
def test_up_pulls_an_image_the_store_lacks_before_any_node_is_touched(proj, capsys, monkeypatch):
    log = fake_podman(proj, monkeypatch)
    for given in (["--image", "nosuch:tag"], []):  # the flag, and NODEWEAVE_IMAGE (the compose file reads it too)
        if not given:
            monkeypatch.setenv("NODEWEAVE_IMAGE", "ghcr.io/example/nosuch:1")
        ref = "nosuch:tag" if given else "ghcr.io/example/nosuch:1"
        code, out, err = run_cli(capsys, "up", "--hold", "--dry-run", *given)
        assert code == 0 and f"image {ref} is not in podman's store: the real up pulls it before any node is " \
            "removed or recreated" in one_line(out + err), out + err
        log.write_text("")
        code, out, err = run_cli(capsys, "up", "--hold", *given)
        assert code == 3, out + err
        assert f"image {ref} could not be found or pulled (`podman pull {ref}`: Error: initializing source" in \
            one_line(err), err
        assert "no node was touched" in one_line(err)
        assert "podman-compose" not in log.read_text(), log.read_text()  # nothing recreated, nothing removed
        assert f"podman pull {ref}" in log.read_text()


# -- class 2: the verbs that use the nodes wait for an up or down changing them -----------------------------------
HOLDER = """import sys, time
from pathlib import Path
from nodeweave.jobstate import hold_job
hold_job(Path(sys.argv[1]), "proj", "up")
print("held", flush=True)
time.sleep(60)
"""


def test_verbs_using_the_nodes_are_refused_while_up_changes_them(proj, capsys):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(proj)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for verb in (["run", "--", "train.py"], ["run", "--dry-run"], ["exec", "--", "true"], ["sync"],
                     ["check"], ["stop"], ["shell", "--dry-run"]):
            code, out, err = run_cli(capsys, *verb)
            assert code == 3, (verb, out, err)
            assert f"`nodeweave up` (pid {holder.pid}, since" in one_line(err), (verb, err)
            assert f"is changing job proj's nodes from this folder (.nodeweave/proj/changing is locked): " \
                f"`nodeweave {verb[0]}` now would land in nodes being removed or recreated" in one_line(err), err
        assert not (proj / "runs").exists()  # no run folder for a run that never reached a node
        code, out, err = run_cli(capsys, "logs")  # only reads: not the lock's business
        assert "is changing job" not in err
    finally:
        holder.kill()
        holder.wait()


# -- class 3: an interrupted up says where each node truly stood --------------------------------------------------
def test_an_up_interrupted_in_its_wait_says_the_nodes_were_started(capsys):
    from types import SimpleNamespace

    from nodeweave.cluster.base import NodeState, PlatformState
    from nodeweave.cluster.execute import execute
    from nodeweave.plan import NodeCommand, Plan, WaitPhase

    def wait_until_up(phase):  # the Ctrl-C of row 13: the containers started, not yet holding
        raise KeyboardInterrupt

    nodes = [SimpleNamespace(index=i, name=f"node-{i}") for i in range(2)]
    backend = SimpleNamespace(nodes=lambda **_: nodes,
                              states=lambda ns: {n.index: PlatformState(NodeState.RUNNING, "running") for n in ns})
    job = SimpleNamespace(say=lambda line: None, backend=backend, nodes=nodes, wait_until_up=wait_until_up,
                          outcomes={})
    wait = WaitPhase("until 2 node(s) hold: podman:p-0, podman:p-1",
                     nodes=tuple(NodeCommand(f"node-{i}", f"podman:p-{i}", ()) for i in range(2)))
    with pytest.raises(KeyboardInterrupt):
        execute(Plan("up", "podman on this machine", (wait,)), job)
    err = one_line(capsys.readouterr().err)
    assert "interrupted: up stopped at step 1 of 1 (until 2 node(s) hold" in err, err
    assert "not started" not in err and "each node now: node-0 (running), node-1 (running)" in err, err


# -- class 4: an engine said in the shell or a flag against the one up recorded -----------------------------------
@pytest.mark.parametrize("argv", [["status"], ["logs"], ["run", "--dry-run"], ["down", "--dry-run"],
                                  ["exec", "--dry-run", "--", "true"], ["status", "--engine", "docker"]],
                         ids=lambda a: "-".join(a))
def test_an_engine_said_against_the_record_is_said_as_that(proj, capsys, monkeypatch, argv):
    import json

    from team_folder import fake_engines

    fake_engines(proj, monkeypatch, "podman")  # docker's daemon does not answer: the row's "start it" line
    folder = proj / ".nodeweave" / "proj"
    folder.mkdir(parents=True)
    made = {"job": "proj", "target": "local", "project": "proj-1234abcd", "where": "podman on this machine",
            "engine": "podman", "engine_host": None}
    (folder / "cluster.json").write_text(json.dumps({"target": "local", "made": made}))
    if "--engine" not in argv:
        monkeypatch.setenv("NODEWEAVE_ENGINE", "docker")
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 3, (out, err)
    assert "records proj brought up on podman (podman on this machine)" in line, line
    said = "--engine docker" if "--engine" in argv else "NODEWEAVE_ENGINE=docker in this environment"
    assert f"{said} asks for docker, where it is not" in line, line
    assert "systemctl start docker" not in line


# -- class 5: the processes this machine holds, counted alike at up and at run ------------------------------------
def test_run_counts_the_processes_of_every_node_as_up_does(proj, capsys, monkeypatch):
    from nodeweave.cli.habits import clusteropts
    from nodeweave.cluster.backends import local

    monkeypatch.setattr(local, "torch_processes_fit", lambda cpus=None, memory=None: (8, 2, 24 << 30))
    spec = (proj / "nodeweave.yaml").read_text()
    (proj / "nodeweave.yaml").write_text(spec.replace("nodes: 2", "nodes: 10"))
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "train.py")  # nothing up: up says it, not run
    assert code == 0 and "fit here" not in out + err, out + err
    monkeypatch.setattr(clusteropts, "would_fail", lambda backend, nodes, verb: [])  # the 10 nodes up, answering
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "train.py")  # 10 x 1: said, as up says it
    assert code == 0 and "warning: 10 node containers on this machine (2 CPU(s), 24 GiB): each imports torch " \
        "(~0.5 GiB), so about 8 fit here" in one_line(out + err), out + err
    code, out, err = run_cli(capsys, "run", "--dry-run", "--nproc-per-node", "2", "--", "train.py")
    assert code == 2 and "accepted: fewer nodes (nodes: in nodeweave.yaml, then `nodeweave up`)" in one_line(err), err
    assert "1 to 1" not in err  # a range itself past the limit is offered no more
    (proj / "nodeweave.yaml").write_text(spec)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--nproc-per-node", "5", "--", "train.py")
    assert code == 2 and "accepted: --nproc-per-node 1 to 4 for 2 node(s)" in one_line(err), err
    code, out, err = run_cli(capsys, "run", "--dry-run", "--nproc-per-node", "4", "--", "train.py")
    assert code == 0 and "fit here" not in out + err, out + err


# -- class 6: spec fields the local target leaves out, said by validate and up ------------------------------------
def test_network_fields_the_local_target_leaves_out_are_said(proj, capsys):
    spec = (proj / "nodeweave.yaml").read_text()
    (proj / "nodeweave.yaml").write_text(spec + "network: {interfaces: [eth9], exclude_hcas: [mlx5_9]}\n"
                                         "env: {FOO_W17A: bar}\n")
    said = ("network.interfaces (eth9), network.exclude_hcas (mlx5_9) are not applied on the local target: its "
            "simulated nodes have one interface (eth0) and no HCA or RDMA device")
    for verb in (["validate"], ["up", "--hold", "--dry-run"]):
        code, out, err = run_cli(capsys, *verb)
        assert said in one_line(out + err), (verb, out, err)
    (proj / "nodeweave.yaml").write_text(spec + "env: {FOO_W17A: bar}\n")  # nothing left out: nothing said
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and "not applied on the local target" not in out + err


# -- class 7: a dry run ends with the real exit where the refusal is certain from what it read ---------------------
def test_a_dry_run_ends_with_the_real_exit_of_a_certain_refusal(proj, capsys, monkeypatch):
    from nodeweave.cli.habits import clusteropts
    from nodeweave.cluster.backends import local

    monkeypatch.setattr(local, "torch_processes_fit", lambda cpus=None, memory=None: (8, 2, 24 << 30))
    spec = (proj / "nodeweave.yaml").read_text()
    (proj / "nodeweave.yaml").write_text(spec + "gpus_per_node: 5\n")  # up reads nothing on nodes: certain
    code, out, err = run_cli(capsys, "up", "--run", "--dry-run")
    assert code == 2 and "the real up would end with exit 2: nodeweave.yaml: gpus_per_node: 5" in one_line(out + err)
    (proj / "nodeweave.yaml").write_text(spec.replace("train.py", "missing.py"))
    code, out, err = run_cli(capsys, "up", "--run", "--dry-run")
    assert code == 2 and "the real up would end with exit 2" in one_line(out + err), (code, out, err)
    (proj / "nodeweave.yaml").write_text(spec)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "missing.py")  # nothing up: the real run ends on
    assert code == 0 and "the real run would end with exit 3" in one_line(out + err), (code, out, err)  # that, a note
    monkeypatch.setattr(clusteropts, "would_fail", lambda backend, nodes, verb: [])  # the nodes up and answering
    for argv, said in ((["run", "--dry-run", "--", "missing.py"], "the real run would end with exit 2"),
                       (["shell", "--dry-run"], "the real shell would end with exit 2: shell's input is not a "
                                                "terminal")):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and said in one_line(out + err), (argv, code, out, err)
