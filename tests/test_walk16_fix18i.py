"""fix18i (walk16 rows B7, B8, B11, B14, B16, B17, A26): what the entrypoint says about a job's ports, its own
traces, the variables it keeps, the master's source and the launcher the held nodes were made with.

Each test is one class: --status's diagnostics guessing; the pre-flight reading the running job's own traces as
another job's; a refusal without the way to do what was meant; provenance worded for one platform; a run whose
held nodes were made with another launcher than the spec now says.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import entrypoint as run_entrypoint
from port_standins import PortStandIn
from free_ports import free_ports

import nodeweave

SRC = str(Path(nodeweave.__file__).resolve().parents[1])  # the nodeweave this test imports, in the entrypoints too


def entrypoint(argv, env, timeout=60):
    """A real ``nodeweave-entrypoint`` process: (exit code, stdout, stderr)."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": SRC, **env}
    done = run_entrypoint(*argv, env=full, timeout=timeout)
    return done.returncode, done.stdout, done.stderr




def _status(master_port, tmp_path, **extra):
    env = {"TMPDIR": str(tmp_path), "NODEWEAVE_MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "je",
           "NODEWEAVE_MASTER_PORT": str(master_port), **extra}
    return entrypoint(["--status"], env)


@pytest.mark.parametrize("case", ["node 0 stopped", "off by two", "the metrics port as master port"])
def test_status_says_what_answers_without_guessing_the_program_behind_a_port(case, tmp_path):
    """B11: a stopped node 0's own exchange (accepts, silent) was named torchrun's store; B16: the job's exchange
    one below the master port given was never asked (no hint); B17: the node's own NODEWEAVE_METRICS_PORT equal
    to the master port given refused --status, which listens on nothing."""
    base = free_ports(8)  # the job: master base (silent store), exchange base + 1; metrics base + 6
    listeners = []
    try:
        if case == "node 0 stopped":
            listeners = [PortStandIn(base, "silent"), PortStandIn(base + 1, "silent")]
            code, _, err = _status(base, tmp_path)
            assert code == 4, err
            assert "node 0's entrypoint is not running (stopped" in err, err
            assert "torchrun" not in err, err
        elif case == "off by two":
            listeners = [PortStandIn(base, "silent"), PortStandIn(base + 1, "exchange")]
            code, _, err = _status(base + 2, tmp_path)
            assert code == 4, err
            assert f"node 0's check-in exchange answers at port {base + 1}" in err, err
            assert f"give MASTER_PORT={base}" in err, err
        else:
            listeners = [PortStandIn(base, "silent"), PortStandIn(base + 1, "exchange"), PortStandIn(base + 6, "metrics")]
            code, _, err = _status(base + 6, tmp_path, NODEWEAVE_METRICS_PORT=str(base + 6))
            assert code == 4, err
            assert "metrics port" in err and "give the job's master port" in err, err
    finally:
        for listener in listeners:
            listener.close()


def _explain(env, tmp_path):
    (tmp_path / "train.py").write_text("")
    full = {"TMPDIR": str(tmp_path), **env}
    done = run_entrypoint("--explain", "--", "train.py", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                             "PYTHONPATH": SRC, **full}, cwd=tmp_path, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_a_variable_kept_for_the_ranks_says_how_to_do_what_was_meant(tmp_path):
    """B7: NODEWEAVE_RESUME_FROM set by a user (a save of their choice) drew only 'not passed to them'; an empty
    one drew the same. Now the line says how to start from a save of one's choice (docs/recovery.md), and one set
    but empty is just ignored, for every variable nodeweave sets for the ranks (``variables.SET_FOR_RANKS``)."""
    from nodeweave.entrypoint.planning.variables import SET_FOR_RANKS

    env = {"NODEWEAVE_NNODES": "1", "NODEWEAVE_RESUME_FROM": "/ck/ckpt_200.pt",
           **{name: "" for name in SET_FOR_RANKS if name != "NODEWEAVE_RESUME_FROM"}}
    code, out = _explain(env, tmp_path)
    assert code == 0, out
    assert ("NODEWEAVE_RESUME_FROM=/ck/ckpt_200.pt in this node's environment is nodeweave's to set for the ranks"
            in out and "load it in the script yourself at generation 0 (NODEWEAVE_RESTART_COUNT=0)" in out), out
    for name in SET_FOR_RANKS:
        if name != "NODEWEAVE_RESUME_FROM":
            assert f"{name}= in this node's environment is set but empty: ignored" in out, out


def test_the_masters_source_is_worded_as_the_platform_names_it(tmp_path):
    """B14: a JobSet's (an Indexed Job's) pod without MASTER_ADDR planned the master as 'StatefulSet pod 0 of ...'
    (in the plan and the export's comment); now 'the pod of index 0 of Job ...', a StatefulSet's still its own."""
    jobset = {"JOB_COMPLETION_INDEX": "1", "POD_NAME": "rjob-node-0-1", "NODEWEAVE_SERVICE": "rjob",
              "POD_NAMESPACE": "ml", "NODEWEAVE_NNODES": "2", "NODEWEAVE_EXCHANGE": "off"}
    code, out = _explain(jobset, tmp_path)
    assert code == 0, out
    assert "StatefulSet" not in out, out
    assert out.count("the pod of index 0 of Job 'rjob-node-0' (Indexed Job / JobSet) behind Service 'rjob'") == 2, out
    sts = {"POD_NAME": "llama-1", "NODEWEAVE_SERVICE": "llama", "POD_NAMESPACE": "ml", "NODEWEAVE_NNODES": "2",
           "NODEWEAVE_EXCHANGE": "off"}
    code, out = _explain(sts, tmp_path)
    assert code == 0 and "StatefulSet pod 0 of 'llama' behind Service 'llama'" in out, out


@pytest.fixture
def team(tmp_path, monkeypatch):
    from team_folder import make_team

    (tmp_path / "bob").mkdir()
    return make_team(tmp_path / "bob", monkeypatch)


def test_a_run_on_nodes_made_with_another_launcher_says_so_and_the_way_to_the_spec_s(capsys, team, monkeypatch):
    """A26: nodes held with `launcher.type: command`, the spec then edited to torchrun: the run judged the command
    for torchrun, the nodes ran it with command, and node 0 said 'use launcher torchrun', which the spec already
    did. Now the run is refused before any node (a dry run says it would be), naming the launcher the nodes were
    made with and what applies the spec's; --launcher given for the run is the run's own choice."""
    from cli_run import in_process as run_cli, one_line
    from team_folder import SPEC, fake_engines
    from team_folder import made_by_up

    fake_engines(team, monkeypatch, "podman")
    made_by_up(team, SPEC.replace("type: torchrun", "type: command"))
    (team / "nodeweave.yaml").write_text(SPEC)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "train.py")
    said = out + err
    assert "nodes were made with launcher command" in said and "applies the spec's torchrun" in said, said
    assert "the real run would end with exit 2" in said, said
    code, out, err = run_cli(capsys, "run", "--", "train.py")
    assert code == 2 and "nodes were made with launcher command" in one_line(err), (out, err)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--launcher", "torchrun", "--", "train.py")
    assert "nodes were made with launcher" not in out + err, (out, err)


def test_explain_on_a_node_of_the_running_job_reads_its_traces_as_its_own(tmp_path):
    """B8: --explain on the spare and on node 0 of a running job (job w16d, saves step-20 and step-40) said its
    saves were 'from before this job ... (another run's)', its claim 'in use by another job now: job w16d' and its
    master port held by 'another job, a leftover torchrun'. Now the same job id is recognised in each trace: the
    job runs now, its saves are its own (a fault resumes from step-40), and node 0's start here would be a second
    node 0 of it."""
    import json
    import time

    base = free_ports(2)
    work = tmp_path / "ws"
    import zipfile

    (work / "ck").mkdir(parents=True)
    for step in (20, 40):  # torch.save's zip layout
        with zipfile.ZipFile(work / "ck" / f"step-{step}.pt", "w") as save:
            save.writestr(f"step-{step}/data.pkl", b"x")
    (work / "train.py").write_text("print(1)\n")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # the running node 0
    listeners = [PortStandIn(base, "silent"), PortStandIn(base + 1, "exchange", job="w16d")]
    try:
        (work / "ck" / ".nodeweave-claim").write_text(json.dumps(
            {"job": "w16d", "run": None, "host": socket.gethostname(), "pid": holder.pid, "since": time.time() - 60}))
        env = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "PYTHONPATH": SRC,
               "TMPDIR": str(tmp_path), "NODEWEAVE_JOB_ID": "w16d", "MASTER_ADDR": "127.0.0.1",
               "NODEWEAVE_MASTER_PORT": str(base), "NODEWEAVE_NNODES": "2", "NODEWEAVE_SPARES": "1",
               "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": "ck"}
        said = {}
        for rank in ("0", "2"):
            done = run_entrypoint("--node-rank", rank, "--explain", "--", "train.py", env=env, cwd=work, timeout=60)
            said[rank] = done.stdout + done.stderr
    finally:
        holder.kill()
        holder.wait()
        for listener in listeners:
            listener.close()
    for rank, out in said.items():
        assert "another run's" not in out and "another job" not in out and "leftover torchrun" not in out, out
        assert "job 'w16d' runs now" in out, out
        assert "step-40" in out and "is its own: a fault now resumes from it" in out, out
    assert "second node 0" in said["0"] and "master port" in said["0"] and "held by this job's own node 0" in said["0"], \
        said["0"]
