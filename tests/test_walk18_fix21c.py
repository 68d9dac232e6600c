"""walk18b rows 1, 6, 9, 12, 15, 18, 19: the entrypoint's reading of its input and its hints, one test a class."""

import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py)


def _field(out, name):
    """The value of ``name``'s row in an --explain plan."""
    line = next(line for line in out.splitlines() if line.strip().startswith(name + " "))
    return line.split()[len(name.split())]


def test_names_derived_from_an_ordinal_keep_its_zero_padding(entrypoint):
    """B6: a group trainer-00..03 has no host trainer-0: the master (and every member's name) keeps the padding,
    with a Service as without; an unpadded ordinal (a StatefulSet's) stays as it was."""
    cases = [({"POD_NAME": "trainer-00"}, "trainer-00"), ({"POD_NAME": "trainer-03"}, "trainer-00"),
             ({"POD_NAME": "trainer-003", "NODEWEAVE_SERVICE": "trainer"}, "trainer-000.trainer"),
             ({"POD_NAME": "trainer-3", "NODEWEAVE_SERVICE": "trainer"}, "trainer-0.trainer"),
             ({"POD_NAME": "trainer-12"}, "trainer-0")]
    for env, master in cases:
        code, out, err = entrypoint(["--explain", "--", "train.py"], dict(env, NODEWEAVE_NNODES="16"))
        assert code == 0, err
        assert _field(out, "master") == master, (env, out)


def test_the_unknown_variable_check_reads_nodeweave_names_in_any_case(entrypoint):
    """B12: nodeweave_recovery=on (a .env file or an env: list typed in lower case) left recovery silently off;
    it now gets the "did you mean" every misspelt upper-case name gets, in the nodes' plan and in the CLI."""
    from nodeweave.entrypoint.planning.variables import unknown_lines

    code, out, err = entrypoint(["--explain", "--", "train.py"],
                                {"nodeweave_recovery": "on", "Nodeweave_Spare": "1", "NODEWEAVE_SPARES": "0"})
    assert code == 0, err
    assert "nodeweave_recovery is not a variable nodeweave reads, so it is ignored (did you mean NODEWEAVE_RECOVERY?)" \
        in out, out
    assert "Nodeweave_Spare is not a variable nodeweave reads, so it is ignored (did you mean NODEWEAVE_SPARES?)" \
        in out, out
    assert unknown_lines({"nodeweave_spec": "x", "NODEWEAVE_SPEC": "y", "nodeweave": "z"}) == [
        "nodeweave_spec is not a variable nodeweave reads, so it is ignored (did you mean NODEWEAVE_SPEC?)"]
    # the spec's env: and run -e take the same rule: the prefix reserved in any case, the name meant said
    from nodeweave.entrypoint.planning.reserved import instead, is_reserved

    assert is_reserved("nodeweave_recovery") and not is_reserved("NODEWEAVE_JOB_TOKEN_FILE")
    assert instead("nodeweave_recovery") == "did you mean NODEWEAVE_RECOVERY? set the spec's recovery.enabled instead"


def test_hostfile_slots_on_a_node_without_gpus_are_said_as_the_platforms_gpu_counts_are(entrypoint, tmp_path):
    """B15: a DeepSpeed hostfile's slots=8 on a node whose GPUs did not reach the container started 8 CPU
    processes on gloo, silently; a platform's GPU count is refused for it (exit 3). An MPI hostfile's slots may be
    CPU slots on purpose, so a warning; --nproc-per-node (CPU processes on purpose) silences it."""
    import socket

    (tmp_path / "hf").write_text(f"{socket.gethostname()} slots=8\n10.0.0.9 slots=8\n")
    env = {"NODEWEAVE_HOSTFILE": "hf", "CUDA_VISIBLE_DEVICES": ""}
    code, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert code == 0, err
    assert f"slots of {socket.gethostname()} in hostfile hf is 8, DeepSpeed's GPUs per host, but this node sees no " \
           "GPU: the job would run 8 CPU processes on gloo" in out, out
    code, out, err = entrypoint(["--explain", "--nproc-per-node", "8", "--", "train.py"], env)
    assert code == 0 and "DeepSpeed's GPUs per host" not in out, out


def test_a_worker_meeting_another_jobs_exchange_names_the_port_fix_never_joining_it(tmp_path):
    """B19: node 0 of job 'held' on the port; a worker of job 'mine' was told "give every node the same job
    (NODEWEAVE_JOB_ID)", which reads as "set NODEWEAVE_JOB_ID=held": join another team's job. It now says that
    another job holds the port, that this job's node 0 may not be up, and names the port fix node 0 names."""
    import os
    import subprocess
    import sys

    import cli_run
    from free_ports import free_port_pair

    port = free_port_pair()
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, PATH=os.pathsep.join([os.path.dirname(sys.executable), cli_run.CLEAN["PATH"]]),
               NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT=str(port),
               NODEWEAVE_WAIT_TIMEOUT="6", NODEWEAVE_METRICS="off", TMPDIR=str(tmp_path))
    held = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=dict(env, NODE_RANK="0", NODEWEAVE_JOB_ID="held"),
                         cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        worker = cli_run.entrypoint("--", "train.py", env=dict(env, NODE_RANK="1", NODEWEAVE_JOB_ID="mine"),
                                    cwd=tmp_path, timeout=60)
    finally:
        held.terminate()
        held.communicate(timeout=60)
    line = next((line for line in worker.stderr.splitlines() if ": error: " in line), worker.stderr)
    assert worker.returncode == 3 and "Traceback" not in worker.stderr, worker.stderr
    assert f"node 0's exchange at 127.0.0.1:{port + 1} belongs to job 'held', this node to 'mine': another job holds " \
           "that port, so this job's node 0 may not be up" in line, line
    assert "NODEWEAVE_EXCHANGE_PORT, or another NODEWEAVE_MASTER_PORT" in line, line
    assert "NODEWEAVE_JOB_ID=held" not in line and "give every node the same job" not in line, line


def test_kill_int_stops_a_node_started_with_sigint_ignored_during_its_check_in_wait(tmp_path):
    """B18: nodes started from a script with `&` inherit SIGINT ignored; the hint's `kill -INT PID` did nothing
    while node 0 waited at its check-in (its handler was kept off for an inherited ignore), and worked once a
    launcher had run. A stop is handled from the start now; only nohup's ignored SIGHUP stays ignored."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    import cli_run
    from free_ports import free_port_pair

    port = free_port_pair()
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, PATH=os.pathsep.join([os.path.dirname(sys.executable), cli_run.CLEAN["PATH"]]),
               NODEWEAVE_NNODES="2", NODE_RANK="0", MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT=str(port),
               NODEWEAVE_WAIT_TIMEOUT="60", NODEWEAVE_METRICS="off", TMPDIR=str(tmp_path))

    def as_from_a_script():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)

    node = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=env, cwd=tmp_path, preexec_fn=as_from_a_script,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        until = time.monotonic() + 30
        while time.monotonic() < until and node.poll() is None:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port + 1)) == 0:
                    break
            time.sleep(0.2)
        os.kill(node.pid, signal.SIGINT)
        out, _ = node.communicate(timeout=20)
    finally:
        if node.poll() is None:
            node.kill()
            node.communicate()
    assert node.returncode == 130 and "stopped by SIGINT with no launcher running (exit 130)" in out, out


def test_every_message_bounds_the_values_it_quotes(entrypoint, capsys):
    """B9: a value 100,000 characters long (a variable expanded into itself, a file pasted) made the start's one
    error line 200 KB (the value twice) and --explain 400 KB; a pod log cuts such a line before its reason. The
    printers of both programs clip every word past 300 characters to its first 40, '...' and its length."""
    from cli_run import in_process

    long = "a" * 100000
    for name in ("NODEWEAVE_MASTER_ADDR", "NODEWEAVE_LAUNCHER_OPTIONS", "NODEWEAVE_NNODES"):
        for argv in (["--", "train.py"], ["--explain", "--", "train.py"]):
            code, out, err = entrypoint(argv, {name: long})
            assert code != 0 and len(out) + len(err) < 6000, (name, argv, len(out), len(err))
            assert "...(1000" in out + err and " characters)" in out + err, (out + err)[:2000]
    code, out, err = entrypoint(["--", "train.py"], {"NODEWEAVE_MASTER_ADDR": long})
    assert err.rstrip().endswith("an IPv4 address or an IPv6 address, without a port"), err[-300:]
    code, out, err = in_process(capsys, "runs", "show", long)
    assert code != 0 and len(err) < 1000, len(err)


def test_runs_show_reads_a_job_folder_a_node_keeps(tmp_path, capsys):
    """B1: a job started the way Slurm and Kubernetes start it (no `nodeweave run`) keeps goodput.json and
    recovery.json in node 0's $TMPDIR/nodeweave/jobs/<job>-<port>; `runs show` refused that folder (no run.json),
    so its generations and goodput were out of reach. It shows them as it shows a run's."""
    import json

    from cli_run import in_process

    folder = tmp_path / "nodeweave" / "jobs" / "w1-29731"
    folder.mkdir(parents=True)
    (folder / "goodput.json").write_text(json.dumps({
        "schema": "nodeweave.goodput/1", "launched": 1000.0, "ended": 1100.0, "generations": [
            {"generation": 0, "first": 1010.0, "last": 1040.0, "steps": [[1011.0, 1], [1030.0, 50], [1040.0, 70]],
             "fault": {"at": 1045.0, "resumed_step": 50}},
            {"generation": 1, "first": 1055.0, "last": 1095.0, "resumed_step": 50, "ended": 1100.0}]}))
    (folder / "recovery.json").write_text(json.dumps({
        "generation": 1, "restarts": 1, "decision": "start", "members": [0, 2], "spares": [], "left_out": [1],
        "history": [{"generation": 0, "node": 1, "cause": "lost", "why": "node 1 is gone: no heartbeat for 10s",
                     "recover_s": 10.2, "resume_from": "/ckpt/step_50", "resumed_step": 50, "work_lost_s": 10.0}]}))
    code, out, err = in_process(capsys, "runs", "show", str(folder))
    assert code == 0, err
    text = " ".join(out.split())
    assert "w1-29731: ended; a job's folder of a node's own" in text, out
    assert "recovery: 2 generation(s), 1 restart(s)" in text and "generation 0 ended: node 1 is gone" in text, out
    assert "goodput: 60.0% of 100 s productive" in text and "generation 1: training 40 s, recovery 15 s" in text, out
    code, out, err = in_process(capsys, "runs", "show", str(folder), "-o", "json")
    assert code == 0 and json.loads(out)["goodput"]["productive"] == 0.6, err
    code, out, err = in_process(capsys, "runs", "show", str(tmp_path / "nodeweave"))
    assert code == 2 and f"`nodeweave runs show {folder}` shows what one holds" in err, err
