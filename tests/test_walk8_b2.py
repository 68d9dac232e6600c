"""Walk 8, part B, rows B18 and later (issue 43): each class of surprise a new user met on the node side, with a
test that failed before its fix."""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cli_run
import pytest
from free_ports import free_port_pair

LIVE = {"schema": "nodeweave.live/1", "now": 10.0, "job": "m3", "book": {"generation": 0, "restarts": 0},
        "nodes": [{"node": 0, "host": "a", "state": "running", "role": "hub", "heartbeat_age_s": 0.0}],
        "ranks": [], "verdicts": {}, "gpus": [], "node_gpus": [], "step": None, "goodput": None, "timeline": {}}


@pytest.fixture
def exchange_like():
    """A port that greets every connection as node 0's check-in exchange does: a JSON challenge line, no HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b'{"t":"challenge","nonce":"abc","job":"m3"}\n')
                try:
                    conn.recv(4096)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


@pytest.fixture
def metrics_port():
    """node 0's metrics port as metrics/server.py answers: /status.json and /metrics, a 404 elsewhere."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.path == "/status.json":
                data = json.dumps(LIVE).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self.send_error(404, "only /metrics and /status.json")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


# B31: top --url at a port that answers no HTTP at all (the exchange's challenge) was a 40-line traceback
def test_b31_top_at_the_exchange_port_is_one_line_naming_it(exchange_like):
    cli = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{exchange_like}", "--once", timeout=60)
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode == 1 and "check-in exchange" in line and "job m3" in line and "metrics.port" in line, line


def test_b31_entrypoint_node_live_at_a_port_without_http_names_it(exchange_like):
    cli = cli_run.entrypoint("--node", "live", "--port", str(exchange_like), timeout=60)
    assert "Traceback" not in cli.stderr, cli.stderr
    answer = json.loads(cli.stdout.strip().splitlines()[-1])
    assert answer["live"] is None and cli.returncode != 0 and "check-in exchange" in answer["error"]


# B32: the URL Prometheus scrapes (…/metrics), pasted into top, was read as …/metrics/status.json (a 404)
@pytest.mark.parametrize("path", ["", "/", "/metrics", "/metrics/", "/status.json"])
def test_b32_top_reads_status_json_from_any_url_of_the_metrics_port(metrics_port, path):
    cli = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{metrics_port}{path}", "-o", "json", timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["job"] == "m3"


def _with_venv():
    """PATH with this Python's folder first: its torchrun, as on a node whose image has it."""
    import os
    import sys

    return os.pathsep.join([os.path.dirname(sys.executable), cli_run.CLEAN["PATH"]])




def _node0(tmp_path, job, folder, **extra):
    port = free_port_pair()
    (tmp_path / "train.py").write_text("print('step 1')\n")
    import os
    import sys

    path = os.pathsep.join([os.path.dirname(sys.executable), cli_run.CLEAN["PATH"]])
    return dict(cli_run.CLEAN, PATH=path, NODE_RANK="0", NODEWEAVE_NNODES="2", NODEWEAVE_SPARES="1", MASTER_ADDR="127.0.0.1",
                NODEWEAVE_RECOVERY="on", NODEWEAVE_CHECKPOINT_DIR=str(folder), NODEWEAVE_WAIT_TIMEOUT="40",
                NODEWEAVE_JOB_ID=job, NODEWEAVE_MASTER_PORT=str(port), NODEWEAVE_METRICS_PORT=str(free_port_pair()),
                TMPDIR=str(tmp_path), **extra)


# B25 (dangerous): a second job over one checkpoint_dir handed out the first job's saves after a fault
def test_b25_a_second_job_over_a_claimed_checkpoint_dir_is_refused_before_checkin(tmp_path):
    import subprocess
    import time

    folder = tmp_path / "shared"
    first = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=_node0(tmp_path, "ja", folder),
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        claim = folder / ".nodeweave-claim"
        deadline = time.monotonic() + 60
        while not claim.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        assert claim.exists(), first.communicate(timeout=5)[0] if first.poll() is not None else "no claim"
        started = time.monotonic()
        second = cli_run.entrypoint("--", "train.py", env=_node0(tmp_path, "jb", folder), cwd=tmp_path, timeout=60)
        assert second.returncode == 3 and time.monotonic() - started < 20, second.stderr
        line = [ln for ln in second.stderr.splitlines() if "error:" in ln]
        assert line and "in use by another job now: job 'ja'" in line[0] and "own folder" in line[0], second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.communicate(timeout=60)


def test_b25_a_claim_whose_writer_is_gone_is_taken_over(tmp_path):
    """node 0 started again in its own job (a restarted container), or a job that ended without removing it."""
    import os

    from nodeweave.entrypoint.running import claim

    folder = tmp_path / "ck"
    folder.mkdir()
    gone = cli_run.run(["/bin/sh", "-c", "echo $$"]).stdout.strip()
    (folder / claim.NAME).write_text(json.dumps({"job": "other", "host": socket.gethostname(), "pid": int(gone)}))
    held = claim.take(str(folder), "mine", None, print)
    assert held is not None and json.loads((folder / claim.NAME).read_text())["pid"] == os.getpid()
    held.release()
    assert not (folder / claim.NAME).exists()


def test_b25_a_save_moments_old_at_the_start_warns_of_a_writer_now():
    from nodeweave.entrypoint.recovery.checkpoints import Saved
    from nodeweave.entrypoint.recovery.setup import earlier_saves

    assert "another program may be saving here now" in earlier_saves("ck", Saved(1, 1000.0, 500), now=1000.5)
    assert "saving here now" not in earlier_saves("ck", Saved(1, 1000.0, 500), now=5000.0)


def _explain(tmp_path, *args, env=None, **extra):
    (tmp_path / "train.py").write_text("print('step 1')\n")
    full = dict(cli_run.CLEAN, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", **(env or {}))
    full.update(extra)
    return cli_run.entrypoint("--explain", *args, "--", "train.py", env=full, cwd=tmp_path, timeout=120)


# B18: a setup line written as one writes it (no quotes) became one line per word: bash ran `source` alone
@pytest.mark.parametrize("value", ["source /opt/venv/bin/activate", "conda activate myenv", "module load cuda/12.4",
                                   "'source' /opt/venv/bin/activate"])
def test_b18_a_setup_line_split_into_words_is_refused_with_the_quoted_form(tmp_path, value):
    cli = _explain(tmp_path, NODEWEAVE_SETUP=value)
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode == 2 and "NODEWEAVE_SETUP" in line and "one quoted word per line" in line, line


def test_b18_quoted_lines_and_the_spec_rendered_form_pass(tmp_path):
    from nodeweave.entrypoint.planning.contract import read_setup_lines, setup_text

    lines = ["nvidia-smi", "hostname", "source /opt/venv/bin/activate"]
    assert read_setup_lines(setup_text(lines), "setup", "NODEWEAVE_SETUP") == lines
    cli = _explain(tmp_path, NODEWEAVE_SETUP="'module load cuda' 'source /opt/venv/bin/activate'")
    assert cli.returncode == 0 and "launcher.setup (2 line(s)" in cli.stdout, cli.stdout + cli.stderr


# B19: the typed-count typo bound (2,048) refused a scheduler's own 8,192-node allocation
def test_b19_a_schedulers_count_past_2048_is_taken_a_typed_one_refused_with_the_way(tmp_path):
    slurm = {"SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "gpu[00001-08192]", "SLURM_NNODES": "8192",
             "SLURM_NODEID": "8191"}
    (tmp_path / "train.py").write_text("print(1)\n")
    cli = cli_run.entrypoint("--explain", "--", "train.py", env=dict(cli_run.CLEAN, **slurm), cwd=tmp_path)
    assert cli.returncode == 0 and "WORLD_SIZE=8192" in cli.stdout, cli.stdout[-2000:] + cli.stderr
    typed = _explain(tmp_path, NODEWEAVE_NNODES="8192")
    line = cli_run.one_line(typed.stderr)
    assert typed.returncode == 2 and "at most 2048" in line and "SLURM_NNODES" in line, line


def test_b19_a_big_hostfile_without_this_host_is_named_in_one_short_line(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"h{i:05d}\n" for i in range(8192)))
    (tmp_path / "train.py").write_text("print(1)\n")
    cli = cli_run.entrypoint("--", "train.py", env=dict(cli_run.CLEAN, NODEWEAVE_HOSTFILE=str(hostfile)),
                             cwd=tmp_path)
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode == 3 and "and 8184 more" in line and len(line) < 400, line[:500]


# B20: a DeepSpeed `latest` / Megatron tracker naming a save that is not there: the plan showed no disagreement
@pytest.mark.parametrize("layout", ["deepspeed", "megatron"])
def test_b20_a_pointer_to_a_missing_save_is_passed_over_and_said(tmp_path, layout):
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import scan

    folder = tmp_path / "ck"
    if layout == "deepspeed":
        for tag in (100, 200):
            (folder / f"global_step{tag}").mkdir(parents=True)
            torch.save({"dp_world_size": 1, "mp_world_size": 1, "global_steps": tag,
                        "ds_config": {"zero_optimization": {"stage": 0}}},
                       folder / f"global_step{tag}" / "mp_rank_00_model_states.pt")
        (folder / "latest").write_text("global_step300\n")
        pointer, newest = "latest", 200
    else:
        (folder / "iter_0000100" / "mp_rank_00").mkdir(parents=True)
        torch.save({"iteration": 100}, folder / "iter_0000100" / "mp_rank_00" / "model_optim_rng.pt")
        (folder / "latest_checkpointed_iteration.txt").write_text("3000")
        pointer, newest = "latest_checkpointed_iteration.txt", 100
    found = scan(str(folder))
    assert found.newest() is not None and found.newest().step == newest
    said = [why for path, why in found.pointers if path.endswith(pointer)]
    assert said and "not in the folder" in said[0] and "would fail" in said[0], found.pointers


# B21: --max-restarts through the launcher options reached torchrun under recovery without a word
def test_b21_a_restart_count_in_the_launcher_options_is_judged_as_the_variable(tmp_path):
    recovery = _explain(tmp_path, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
                        NODEWEAVE_LAUNCHER_OPTIONS="--max-restarts 3")
    # dropped from the launch and said, as the variable is (walk11b B1: it was refused, the variable warned)
    assert recovery.returncode == 0, recovery.stdout[-1500:]
    assert "'--max-restarts 3' (from NODEWEAVE_LAUNCHER_OPTIONS) is not passed to torchrun under recovery" in \
        recovery.stdout, recovery.stdout[-1500:]
    plain = _explain(tmp_path, NODEWEAVE_LAUNCHER_OPTIONS="--max-restarts=2")
    assert plain.returncode == 0 and "'--max-restarts=2' (NODEWEAVE_LAUNCHER_OPTIONS): torchrun's static " \
        "rendezvous" in plain.stdout, plain.stdout[-1500:]


# B22: a refused port clash drew the rest of the plan as if the exchange were off (a second, false problem)
@pytest.mark.parametrize("variable, value", [("NODEWEAVE_METRICS_PORT", "29501"), ("NODEWEAVE_EXCHANGE_PORT", "29500"),
                                             ("NODEWEAVE_METRICS_PORT", "29500")])
def test_b22_a_refused_port_draws_the_exchange_as_the_settings_make_it(tmp_path, variable, value):
    cli = _explain(tmp_path, **{variable: value})
    assert cli.returncode == 2 and f"(from {variable})" in cli.stdout, cli.stdout[-1500:]
    assert "Check-in" in cli.stdout and "heartbeat  on" in cli.stdout, cli.stdout
    assert "the check-in exchange is off" not in cli.stdout, cli.stdout


# B23: '*' in the refusal kinds got the device lists' glob reason and no list of the kinds
@pytest.mark.parametrize("value", ["*", "all", "nccl,*"])
def test_b23_a_wide_word_in_exchange_allow_is_named_against_the_kinds(tmp_path, value):
    cli = _explain(tmp_path, NODEWEAVE_EXCHANGE_ALLOW=value)
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode == 2 and "no refusal kind" in line and "accepted: vendor, nccl" in line, line
    assert "device or interface" not in line, line


# B24 / B35: --explain on the node did not say what its start refuses on this machine (rank 0 whose master is
# another host: the start exits 3), or exited 127 itself for a missing profiler: one rule, the start refuses,
# the plan warns (it is often read off the node)
def test_b24_explain_on_rank_0_warns_that_the_start_refuses_another_hosts_master(tmp_path):
    cli = _explain(tmp_path, MASTER_ADDR="192.0.2.250")
    assert cli.returncode == 0, cli.stdout[-1500:]
    assert "! this node" in cli.stdout and "not an address of this node" in cli.stdout and \
        "a start here stops with exit 3 before any check-in" in cli.stdout, cli.stdout[-2000:]
    start = cli_run.entrypoint("--", "train.py", cwd=tmp_path, env=dict(
        cli_run.CLEAN, PATH=_with_venv(), NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="192.0.2.250"), timeout=60)
    assert start.returncode == 3 and "not an address of this node" in start.stderr, start.stderr


def test_b35_a_missing_profiler_is_the_start_refusal_and_the_plans_warning(tmp_path):
    env = {"NODE_RANK": "1", "NODEWEAVE_PROFILE": "nsys", "NODEWEAVE_WAIT_TIMEOUT": "3"}
    cli = _explain(tmp_path, **env)
    assert cli.returncode == 0, cli.stdout[-1500:]
    assert "! profiler 'nsys' (from NODEWEAVE_PROFILE) is not on PATH on this node" in cli.stdout and \
        "exit 127 before any check-in" in cli.stdout, cli.stdout[-1500:]
    full = dict(cli_run.CLEAN, NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", **env)
    full["PATH"] = _with_venv()
    start = cli_run.entrypoint("--", "train.py", cwd=tmp_path, env=full, timeout=60)
    assert start.returncode == 127 and "not on PATH on this node" in cli_run.one_line(start.stderr), start.stderr


# B30: master addresses no node can dial (0.0.0.0, ::), a URL, or a number that is no IPv4 address
@pytest.mark.parametrize("value, says", [("0.0.0.0", "unspecified"), ("::", "unspecified"),
                                         ("http://10.0.0.1", "holds a URL scheme (http://): give the host alone "
                                                             "(10.0.0.1)"),
                                         ("10.0.0.256", "is not an IPv4 address (256 > 255)"),
                                         ("10.0.0", "is not an IPv4 address (3 parts, not 4)")])
def test_b30_a_master_address_no_node_can_dial_is_refused_naming_why(tmp_path, value, says):
    cli = _explain(tmp_path, NODE_RANK="1", MASTER_ADDR=value)
    assert cli.returncode == 2 and says in cli.stdout, cli.stdout[-1500:]


@pytest.mark.parametrize("value", ["10.0.0.1", "gpu01", "node-0.svc.cluster.local", "fd00::1", "::1"])
def test_b30_real_addresses_and_names_pass(tmp_path, value):
    cli = _explain(tmp_path, NODE_RANK="1", MASTER_ADDR=value)
    assert cli.returncode == 0, cli.stdout[-1500:]


# B34: NODEWEAVE_INTERFACES silently lost to NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME left in the environment
def test_b34_interfaces_overridden_by_library_variables_is_said(tmp_path):
    cli = _explain(tmp_path, NODEWEAVE_INTERFACES="eth0", GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="docker0")
    assert "NODEWEAVE_INTERFACES=eth0 is not applied: NCCL_SOCKET_IFNAME=docker0 and GLOO_SOCKET_IFNAME=lo" \
        in cli.stdout, cli.stdout[-2500:]
    same = _explain(tmp_path, NODEWEAVE_INTERFACES="eth0", GLOO_SOCKET_IFNAME="eth0", NCCL_SOCKET_IFNAME="=eth0")
    assert "is not applied" not in same.stdout, same.stdout[-2500:]


# B33: recovery on 2 nodes with no spare and no minimum can recover from no fault with a culprit: not a word
def test_b33_recovery_that_can_replace_no_node_is_warned_on_the_entrypoint(tmp_path):
    cli = _explain(tmp_path, NODE_RANK="1", NODEWEAVE_RECOVERY="on")
    assert "! NODEWEAVE_RECOVERY on with 2 nodes, no spares and no minimum below 2" in cli.stdout and \
        "NODEWEAVE_SPARES 1 or more" in cli.stdout, cli.stdout[-2500:]
    for fine in ({"NODEWEAVE_SPARES": "1"}, {"NODEWEAVE_NNODES": "1:2"}):
        other = _explain(tmp_path, NODE_RANK="1", NODEWEAVE_RECOVERY="on", **fine)
        assert "no spares and no minimum" not in other.stdout, (fine, other.stdout[-2500:])


def test_b33_and_in_validate(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    spec = "name: t\nnodes: 2\nimage:\n  variant: cpu\nlauncher:\n  script: train.py\nrecovery:\n  enabled: true\n"
    (tmp_path / "nodeweave.yaml").write_text(spec)
    cli = cli_run.nodeweave("validate", cwd=tmp_path)
    assert cli.returncode == 0 and "recovery.enabled: true with 2 nodes, no spares and no minimum" in cli.stderr, \
        cli.stdout + cli.stderr
    (tmp_path / "nodeweave.yaml").write_text(spec.replace("nodes: 2", "nodes: 3") + "  min_nodes: 2\n")
    cli = cli_run.nodeweave("validate", cwd=tmp_path)
    assert cli.returncode == 0 and "no minimum" not in cli.stdout + cli.stderr, cli.stdout + cli.stderr


# B38 / B43: the stall and straggler lines said what happens without recovery (exit 7; "no recovery engine
# took it", a hook's name) whatever the job was: one rule, the line says what this job does
def test_b38_the_stall_reports_end_says_what_recovery_does_instead_of_exit_7():
    from nodeweave.entrypoint.stall.report import stall_lines

    finding = {"culprits": [{"rank": 3, "node": 1, "host": "vm", "state": "S", "seq": 11, "inside": False,
                             "since_s": 9.0, "name": "all_reduce", "pid": 7}],
               "waiting": [{"rank": 0}], "for_s": 9.0, "where": "all_reduce #12"}
    plain = stall_lines(finding, [], 3, 8, 7)
    assert plain[-1].strip() == "the job is stopped after stall_timeout 8s (exit 7)"
    under = stall_lines(finding, [], 3, 8, 7, recovery=True)
    assert "a fault for recovery, not exit 7: its next generation starts without node 1" in under[-1], under[-1]


def test_b43_a_straggler_fault_not_taken_says_what_to_set():
    from nodeweave.entrypoint.stall.report import fault_line

    fault = {"node": 1, "host": "vm", "ranks": [1], "gap": 3.95, "checks": 3}
    off = fault_line(fault, False)
    assert "recovery is off (NODEWEAVE_RECOVERY=on with NODEWEAVE_STRAGGLER_IS_FAULT=on" in off and \
        "on_straggler_fault" not in off, off
    assert "NODEWEAVE_STRAGGLER_IS_FAULT off" in fault_line(fault, False, recovery=True)
    assert fault_line(fault, True).endswith("handed to recovery")


# B41: with --url the hint sent the user to `nodeweave status` and "the spec's metrics.port" (there may be no spec)
def test_b41_top_url_with_nothing_listening_names_what_applies_to_a_url():
    port = free_port_pair()
    cli = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{port}", "--once", timeout=60)
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode != 0 and "connection refused" in line and "NODEWEAVE_METRICS_PORT" in line and \
        "nodeweave status" not in line, line


# B42: the manual's exit table lacked codes README's has (130, 141, a full disk's 1)
def test_b42_the_manuals_exit_table_holds_every_code_readmes_does():
    import re

    def codes(text, heading):
        part = text.split(heading, 1)[1].split("\n## ", 1)[0]
        return {c for row in re.findall(r"^\| ([0-9+N /]+) \|", part, re.M) for c in re.split(r"\s*/\s*", row.strip())}

    readme = codes((cli_run.REPO / "README.md").read_text(), "## Exit codes of `nodeweave-entrypoint`")
    manual = codes((cli_run.REPO / "docs" / "entrypoint.md").read_text(), "## Exit codes")
    assert {"130", "141"} <= readme and readme <= manual, (readme, manual)


# B45: ~ and $NAME left unexpanded in a path variable met only the OS error ("No such file")
@pytest.mark.parametrize("variable, value", [("NODEWEAVE_HOSTFILE", "~/hosts"), ("NODEWEAVE_SYSROOT", "~/cap"),
                                             ("NODEWEAVE_JOB_TOKEN_FILE", "$SECRET_PATH"),
                                             ("NODEWEAVE_HOSTFILE", "$HOME/hosts")])
def test_b45_every_path_variable_names_an_unexpanded_tilde_or_variable(tmp_path, variable, value):
    cli = _explain(tmp_path, **{variable: value})
    assert cli.returncode == 2, cli.stdout[-1500:] + cli.stderr
    said = cli.stdout + cli.stderr
    assert "which nothing expands here: give the path itself" in said and variable in said, said[-1500:]


# B44: a checkpoint folder holding $TMPDIR/nodeweave (node 0's own state) passed; .nodeweave/ and runs/ are refused
@pytest.mark.parametrize("folder", ["scratch", "scratch/nodeweave", "scratch/nodeweave/ck"])
def test_b44_a_checkpoint_folder_holding_or_inside_the_nodes_state_is_refused(tmp_path, folder):
    (tmp_path / "scratch" / "nodeweave").mkdir(parents=True)
    cli = _explain(tmp_path, NODE_RANK="1", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
                   NODEWEAVE_CHECKPOINT_DIR=folder, TMPDIR=str(tmp_path / "scratch"))
    line = cli_run.one_line(cli.stderr)
    assert cli.returncode == 2 and "this node's own state" in line and "NODEWEAVE_CHECKPOINT_DIR" in line, line
    apart = _explain(tmp_path, NODE_RANK="1", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
                     NODEWEAVE_CHECKPOINT_DIR="ck", TMPDIR=str(tmp_path / "scratch"))
    assert apart.returncode == 0, apart.stdout[-1000:] + apart.stderr


# B36: --explain --json printed nothing on stdout when a value was refused as it was read
@pytest.mark.parametrize("variable, value", [("NODEWEAVE_NNODES", "-2"), ("NODEWEAVE_RECOVERY", "yes"),
                                             ("NODEWEAVE_STALL_WARN", "86401")])
def test_b36_explain_json_is_always_one_json_object(tmp_path, variable, value):
    cli = _explain(tmp_path, "--json", **{variable: value})
    document = json.loads(cli.stdout)
    assert cli.returncode == 2 and document["schema"] == "nodeweave.entrypoint/1", cli.stdout
    assert document["errors"][0]["exit_code"] == 2 and variable in document["errors"][0]["message"], document


# B29: a platform found on the node that lacks a value: the refusal named a generic (or Kubernetes) remedy
def test_b29_volcano_with_a_master_and_a_worker_task_is_no_node_rank(tmp_path):
    env = dict(cli_run.CLEAN, VC_TASK_INDEX="1", VC_WORKER_HOSTS="w-0.j,w-1.j", VC_MASTER_HOSTS="m-0.j")
    (tmp_path / "train.py").write_text("print(1)\n")
    cli = cli_run.entrypoint("--explain", "--", "train.py", env=env, cwd=tmp_path)
    assert cli.returncode == 3 and "VC_TASK_INDEX counts within one task" in cli.stdout, cli.stdout[-1500:]
    given = cli_run.entrypoint("--explain", "--", "train.py", cwd=tmp_path,
                               env=dict(env, NODE_RANK="2", NODEWEAVE_NNODES="3", MASTER_ADDR="m-0.j"))
    assert given.returncode == 0, given.stdout[-1500:]


def test_b29_an_aws_batch_child_without_the_main_nodes_address_names_that_variable(tmp_path):
    env = dict(cli_run.CLEAN, AWS_BATCH_JOB_NODE_INDEX="0", AWS_BATCH_JOB_NUM_NODES="2",
               AWS_BATCH_JOB_MAIN_NODE_INDEX="1")
    (tmp_path / "train.py").write_text("print(1)\n")
    cli = cli_run.entrypoint("--explain", "--", "train.py", env=env, cwd=tmp_path)
    assert cli.returncode == 3 and "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS is unset on this child node" in \
        cli.stdout and "StatefulSet" not in cli.stdout.split("Errors")[-1], cli.stdout[-1500:]


# B28: the StatefulSet count through the API: Python's words (unknown url type, Expecting value, None), and a
# lookup skipped without a word when no namespace is known
@pytest.fixture
def kube_api():
    """A stand-in API server: ``answer[0]`` is the body of every GET."""
    answer = ["{}"]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = answer[0].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], answer
    server.shutdown()


def _statefulset_pod(tmp_path, **extra):
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, POD_NAME="llama-1", NODEWEAVE_SERVICE="llama", **extra)
    return cli_run.entrypoint("--explain", "--", "train.py", env=env, cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("body, says", [("<html>login</html>", "not JSON (an HTML page"),
                                        ('{"spec": {}}', ".spec.replicas is missing")])
def test_b28_an_api_answer_that_is_no_statefulset_is_named(tmp_path, kube_api, body, says):
    port, answer = kube_api
    answer[0] = body
    cli = _statefulset_pod(tmp_path, NODEWEAVE_KUBE_API=f"http://127.0.0.1:{port}", POD_NAMESPACE="ml")
    assert cli.returncode == 3 and says in cli.stdout, cli.stdout[-1500:]


@pytest.mark.parametrize("value, says", [("127.0.0.1:49200", "is not a URL; accepted: http(s)://host:port"),
                                         ("", "NODEWEAVE_KUBE_API is set but empty")])
def test_b28_a_malformed_api_url_is_bad_input(tmp_path, value, says):
    cli = _statefulset_pod(tmp_path, NODEWEAVE_KUBE_API=value, POD_NAMESPACE="ml")
    assert cli.returncode == 2 and says in cli.stdout, cli.stdout[-1500:]


def test_b28_no_namespace_says_why_the_api_was_not_asked(tmp_path):
    cli = _statefulset_pod(tmp_path, NODEWEAVE_KUBE_API="http://127.0.0.1:1")
    assert cli.returncode == 3 and "no namespace" in cli.stdout and "POD_NAMESPACE" in cli.stdout, cli.stdout[-1500:]


# B39: a dangling link was "not in the working directory"; a script outside it, or empty, passed silently
def test_b39_the_script_check_names_a_dangling_link_and_warns_outside_or_empty(tmp_path):
    (tmp_path / "dang.py").symlink_to("nowhere.py")
    cli = _explain(tmp_path, NODE_RANK="1")
    (tmp_path / "empty.py").write_text("")
    other = tmp_path.parent / f"{tmp_path.name}-other"
    other.mkdir()
    (other / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, NODE_RANK="1", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1")
    dangling = cli_run.entrypoint("--explain", "--", "dang.py", env=env, cwd=tmp_path)
    assert dangling.returncode == 2 and "is a link to 'nowhere.py', which does not exist" in dangling.stdout
    empty = cli_run.entrypoint("--explain", "--", "empty.py", env=env, cwd=tmp_path)
    assert empty.returncode == 0 and "! script 'empty.py' is empty" in empty.stdout, empty.stdout[-1500:]
    outside = cli_run.entrypoint("--explain", "--", str(other / "train.py"), env=env, cwd=tmp_path)
    assert outside.returncode == 0 and "is outside the working directory" in outside.stdout, outside.stdout[-1500:]
    assert cli.returncode == 0 and "outside the working directory" not in cli.stdout


# B37: a hostfile with no line for the spare passed (the spare had no host); the count-less refusal named the
# spec's field and gave no example
def test_b37_a_hostfile_counts_every_container_as_a_slurm_allocation_does(tmp_path):
    here = socket.gethostname().split(".")[0]
    (tmp_path / "hosts").write_text(f"gpu01 slots=1\ngpu02 slots=1\n{here} slots=1\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, NODEWEAVE_HOSTFILE="hosts", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1")
    three = cli_run.entrypoint("--explain", "--", "train.py", env=dict(env, NODEWEAVE_NNODES="3"), cwd=tmp_path)
    assert three.returncode == 3 and "hosts in hostfile hosts (3) but recovery's containers are 4" in \
        three.stdout and "a hosts file of 4 hosts" in three.stdout, three.stdout[-1500:]
    none = cli_run.entrypoint("--explain", "--", "train.py", env=env, cwd=tmp_path)
    assert none.returncode == 3 and "NODEWEAVE_SPARES 1 needs the training node count" in none.stdout and \
        "accepted: NODEWEAVE_NNODES=2" in none.stdout, none.stdout[-1500:]


# B40: node 0 started twice on its machine: "set NODEWEAVE_EXCHANGE_PORT to a free port" (a second hub for the job)
def test_b40_a_second_node_0_of_the_same_job_is_told_so(tmp_path):
    import subprocess
    import time

    port = free_port_pair()
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, PATH=_with_venv(), NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1",
               NODEWEAVE_JOB_ID="z0", NODEWEAVE_MASTER_PORT=str(port), NODEWEAVE_WAIT_TIMEOUT="40",
               NODEWEAVE_METRICS="off", TMPDIR=str(tmp_path))
    first = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port + 1)) == 0:
                    break
            time.sleep(0.2)
        second = cli_run.entrypoint("--", "train.py", env=dict(env, TMPDIR=str(tmp_path / "b")), cwd=tmp_path,
                                    timeout=60)
        line = cli_run.one_line(second.stderr)
        assert second.returncode == 3 and "node 0 of job 'z0' is already running on this machine" in line, line
        other = cli_run.entrypoint("--", "train.py", cwd=tmp_path, timeout=60,
                                   env=dict(env, NODEWEAVE_JOB_ID="other", TMPDIR=str(tmp_path / "c")))
        line = cli_run.one_line(other.stderr)
        assert other.returncode == 4 and "another job ('z0')" in line and "(''," not in line, line
    finally:
        first.terminate()
        first.communicate(timeout=60)


# B26: a node started with another job id reached node 0, which heard nothing and named it only "missing"
def test_b26_node_0_logs_and_names_a_node_of_another_job_id(tmp_path):
    import subprocess

    port = free_port_pair()
    (tmp_path / "train.py").write_text("print(1)\n")
    env = dict(cli_run.CLEAN, PATH=_with_venv(), NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1",
               NODEWEAVE_MASTER_PORT=str(port), NODEWEAVE_WAIT_TIMEOUT="8", NODEWEAVE_METRICS="off",
               TMPDIR=str(tmp_path))
    node0 = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=dict(env, NODE_RANK="0", NODEWEAVE_JOB_ID="x2"),
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    node1 = cli_run.entrypoint("--", "train.py", env=dict(env, NODE_RANK="1", NODEWEAVE_JOB_ID="x2b"), cwd=tmp_path,
                               timeout=60)
    said, _ = node0.communicate(timeout=90)
    assert node1.returncode == 3 and "belongs to job 'x2'" in node1.stderr, node1.stderr
    assert node0.returncode == 3 and "turned away: not a node of this job: it belongs to job 'x2b'" in said, said
    assert "node 1 (a node from 127.0.0.1" in said and "with job id 'x2b')" in said, said


# B27: a spare up after the deadline (a Pending pod) refused the whole job as "missing"
def test_b27_a_spare_late_for_the_deadline_does_not_keep_the_job_from_starting(tmp_path):
    import subprocess

    from recovery_harness import heard_until, held_lines, release, wait_up

    port = free_port_pair()
    # the ranks hold until the test has heard the late spare: it comes after the generation started, however
    # slowly a loaded machine starts the two nodes, and before their training ends
    (tmp_path / "train.py").write_text("print('step 1', flush=True)\n" + held_lines(tmp_path))
    env = dict(cli_run.CLEAN, PATH=_with_venv(), NODEWEAVE_NNODES="2", NODEWEAVE_SPARES="1", NODEWEAVE_RECOVERY="on",
               MASTER_ADDR="127.0.0.1", NODEWEAVE_JOB_ID="l2", NODEWEAVE_WAIT_TIMEOUT="5",
               NODEWEAVE_MASTER_PORT=str(port), NODEWEAVE_METRICS="off")
    nodes = [cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=dict(env, NODE_RANK=str(i), TMPDIR=str(tmp_path / f"t{i}")))
             for i in (0, 1)]
    try:
        wait_up(tmp_path, 2, nodes)  # the generation started without the spare (the 5 s deadline passed)
        spare = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=dict(env, NODE_RANK="2", TMPDIR=str(tmp_path / "t2")))
        heard = heard_until(spare.stderr, "came after the generation started")  # where it stands
    finally:
        release(tmp_path)
    said = [node.communicate(timeout=120)[0] for node in nodes]
    spare_err = heard + spare.communicate(timeout=90)[1]
    assert [node.returncode for node in nodes] == [0, 0], said
    assert re.search(r"spare\(s\) 2 have not checked in within \d+s after the training nodes were in: the job "
                     "starts without them", said[0]), said[0]
    assert spare.returncode == 0 and "came after the generation started" in spare_err, spare_err
