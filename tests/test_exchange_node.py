"""One node's part in the exchange: its fingerprint, and a supervised launcher under the heartbeat."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.checkin.fingerprint import distributions_digest, local_fingerprint, workspace
from nodeweave.entrypoint.running.supervise import how_it_ended
from nodeweave.entrypoint.detection.sysfs import Root
from nodeweave.entrypoint.planning.settings import parse

FIX = Path(__file__).parent / "fixtures" / "synthetic"


def test_versions_come_from_installed_distributions(tmp_path):
    """torch, the launcher and NCCL's wheel are read from *.dist-info names under the root's site-packages."""
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(FIX / "hgx-h100"), str(root)], check=True)
    site = root / "usr/local/lib/python3.11/site-packages"
    for dist in ("torch-2.13.0", "deepspeed-0.19.8", "nvidia_nccl_cu12-2.26.2", "numpy-2.3.1"):
        (site / f"{dist}.dist-info").mkdir(parents=True)
    argv = ["--launcher", "deepspeed", "--nnodes", "2", "--node-rank", "1", "--master-addr", "hgx-a00",
            "--nproc-per-node", "8", "--", "t.py"]
    plan = make_plan(argv, {}, sysroot=str(root))
    fp = local_fingerprint(plan, Root(str(root)), parse(argv, {}), cwd=str(tmp_path))
    assert (fp["torch"], fp["launcher_version"]) == ("2.13.0", "0.19.8")
    assert fp["gpu_vendor"] == "nvidia" and fp["gpu_count"] == 8 and fp["nproc"] == 8
    assert fp["rank"] == 1 and fp["nnodes"] == "2" and fp["launcher"] == "deepspeed"
    assert fp["interface"] == plan.node.interface and fp["address"] == plan.node.local_ipv4
    assert fp["image_digest"] and fp["distributions"] >= 4
    json.dumps(fp)  # what crosses the wire


def test_the_fingerprint_names_the_image_reference_and_variant():
    """Both, as docs/entrypoint.md says (a crammed line once left the variant inside a comment)."""
    argv = ["--nnodes", "2", "--node-rank", "1", "--master-addr", "hgx-a00", "--", "t.py"]
    plan = make_plan(argv, {}, sysroot=str(FIX / "hgx-h100"))
    env = {"NODEWEAVE_IMAGE_REF": "ghcr.io/example/llama:cuda12", "NODEWEAVE_IMAGE_VARIANT": "cuda12"}
    fp = local_fingerprint(plan, Root(str(FIX / "hgx-h100")), parse(argv, env))
    assert (fp["image_ref"], fp["image_variant"]) == ("ghcr.io/example/llama:cuda12", "cuda12")


def test_nccl_from_the_wheel_on_a_live_root():
    """The live root reads this venv's distributions: the same digest twice, torch's real version."""
    from one_machine import one_machine_env  # here: _child's processes import this module with tests/ alone

    argv = ["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--", "t.py"]
    plan = make_plan(argv, one_machine_env())
    fp = local_fingerprint(plan, Root("/"), parse(argv, {}))
    from importlib.metadata import version

    assert fp["torch"] == version("torch")
    assert fp == local_fingerprint(plan, Root("/"), parse(argv, {}))


def test_a_fingerprint_always_carries_the_fault_settings_node_0_compares():
    """Made from the settings, never a bare environment: a node (or the test's attacker) that built one without
    its fault settings was refused as acting otherwise on a fault (CI stop 50)."""
    argv = ["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--", "t.py"]
    fp = local_fingerprint(make_plan(argv, {}), Root("/"), parse(argv, {}))
    assert fp["faults"] and fp["faults"]["recovery"] is False and "stall_timeout" in fp["faults"], fp["faults"]


def test_distribution_digest_changes_with_any_version():
    assert distributions_digest({"torch": "2.13.0"}) != distributions_digest({"torch": "2.13.1"})
    assert distributions_digest({}) is None


def test_workspace_prefers_the_sync_stamp_then_git(tmp_path):
    assert workspace(str(tmp_path))["commit"] is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "x"], check=True, env=env)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert workspace(str(tmp_path))["commit"] == head
    subprocess.run(["git", "-C", str(tmp_path), "pack-refs", "--all"], check=True)
    assert workspace(str(tmp_path))["commit"] == head  # from packed-refs
    (tmp_path / ".nodeweave-sync.json").write_text(json.dumps({"commit": "c" * 40, "digest": "d1"}))
    assert workspace(str(tmp_path)) == {"commit": "c" * 40, "digest": "d1",
                                        "source": f"sync stamp {tmp_path}/.nodeweave-sync.json"}


class RecordingWatch:
    """A heartbeat stand-in: may stop the launcher after ``stop_after`` seconds (SIGKILL ``grace`` s later);
    records how it ended."""

    def __init__(self, stop_after=None, grace=5.0):
        self.stop_after, self.grace, self.ended = stop_after, grace, None
        self.thread = None  # not beating yet: run_supervised starts it with the launcher's stop

    def launch_with(self, stop, stop_signalled=None):  # run_supervised hands its launcher's stop (heartbeat.Watch.launch_with)
        self.start(stop)

    def silent_since_verdict(self):  # run_supervised asks before it launches (heartbeat.LinkWatch, walk15b B13)
        return None

    def start(self, stop):
        if self.stop_after is not None:
            timer = threading.Timer(self.stop_after, stop, args=(self.grace,))
            timer.daemon = True
            timer.start()

    def say_launcher_failed(self, how):  # the watch's own line for its launcher's failure (walk9 A3)
        self.said = how

    def finish(self, code, how, tail, peer_gone=None, error=None, **stopped):
        self.ended = (code, how, tail, peer_gone)
        return 5 if self.stop_after is not None else None


def _child(script, watch, grace=5.0):
    """Run run_supervised in a subprocess (it installs signal handlers), report what the watch saw."""
    code = (
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_exchange_node import RecordingWatch\n"
        "from nodeweave.entrypoint.running.supervise import run_supervised\n"
        "watch = RecordingWatch(%r, %r)\n"
        "rc = run_supervised('/bin/sh', ['sh', '-c', %r], {'PATH': '/bin:/usr/bin'}, watch=watch)\n"
        "print('RESULT ' + json.dumps([rc, watch.ended]), file=sys.stderr)\n"
    ) % (str(Path(__file__).parent), watch, grace, script)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=150)


def test_the_launchers_output_passes_through_and_its_tail_is_reported():
    out = _child("echo to-stdout; echo to-stderr >&2; exit 3", None)
    result = json.loads(out.stderr.split("RESULT ", 1)[1])
    assert out.stdout == "to-stdout\n" and out.stderr.startswith("to-stderr\n")
    assert result[0] == 3
    code, how, tail, peer_gone = result[1]
    assert code == 3 and how == "sh exited 3"
    assert sorted(tail) == ["to-stderr", "to-stdout"] and peer_gone is None


def test_a_launcher_whose_ranks_only_saw_a_peer_go_says_so_in_its_report():
    """The report carries the peer-gone line found in the launcher's output (node 0 then judges, heartbeat.py)."""
    # one stream: two pipes' pumps may interleave in any order under load, and the line could land in the tail
    out = _child("echo '[rank0]: RuntimeError: Read error [10.0.0.2]:4242: Connection reset by peer.'; "
                 "i=0; while [ $i -lt 300 ]; do echo step $i; i=$((i+1)); done; exit 1", None)
    code, how, tail, peer_gone = json.loads(out.stderr.split("RESULT ", 1)[1])[1]
    assert code == 1 and "Connection reset by peer" not in " ".join(tail)  # beyond the 20-line tail
    assert peer_gone == "[rank0]: RuntimeError: Read error [10.0.0.2]:4242: Connection reset by peer."


def test_the_watch_can_stop_the_launcher_and_choose_the_exit_code():
    """The stop reaches the launcher's group: SIGTERM ends it within seconds, not after its 120 s sleep."""
    started = time.monotonic()
    out = _child("trap 'exit 143' TERM; sleep 120 & wait", 0.5)
    took = time.monotonic() - started
    result = json.loads(out.stderr.split("RESULT ", 1)[1])
    assert result[0] == 5, out.stderr  # the watch's code
    assert result[1][:2] == [143, "sh exited 143"], result  # ended by the SIGTERM trap, not by sleep's end
    assert took < 30, f"the stop took {took:.1f} s: the launcher ran on (supervise._stopper did nothing?)"


def test_a_launcher_that_ignores_sigterm_is_killed_after_the_grace():
    started = time.monotonic()
    out = _child("trap '' TERM; while :; do sleep 1; done", 0.5, grace=1.0)
    took = time.monotonic() - started
    result = json.loads(out.stderr.split("RESULT ", 1)[1])
    assert result[0] == 5 and result[1][1] == "sh was killed by SIGKILL", result
    assert took < 30, f"SIGKILL came {took:.1f} s after the start, the grace was 1 s"


def test_how_it_ended_names_signals():
    import signal

    assert how_it_ended("torchrun", 9, []) == "torchrun was killed by SIGKILL"
    assert how_it_ended("torchrun", 1 << 8, [signal.SIGTERM]) == "torchrun exited 1 after SIGTERM"


def test_a_hostfile_with_uneven_slots_is_fine_when_the_nodes_check_in(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{os.uname().nodename} slots=2\nother slots=1\n")
    plan = make_plan(["--hostfile", str(hostfile), "--launcher", "deepspeed", "--", "t.py"], {})
    assert plan.exchange["enabled"] and plan.topology.nproc_per_node.value == 2
    from nodeweave.entrypoint.errors import EntrypointError

    try:
        make_plan(["--hostfile", str(hostfile), "--", "t.py"], {"NODEWEAVE_EXCHANGE": "off"})
    except EntrypointError as err:
        assert err.exit_code == 3 and "exchange that shares them is off (switched off by NODEWEAVE_EXCHANGE)" in str(err)
    else:
        raise AssertionError("uneven slots without the check-in must be refused")


def test_apply_counts_writes_every_nodes_slots_and_the_real_world_size(tmp_path):
    from nodeweave.entrypoint.planning.launch import apply_counts

    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{os.uname().nodename} slots=2\nother slots=1\n")
    plan = make_plan(["--hostfile", str(hostfile), "--launcher", "deepspeed", "--", "t.py"], {"TMPDIR": str(tmp_path)})
    apply_counts(plan, {"decision": "start", "procs": [2, 1]})
    assert list(plan.launch.files.values()) == [f"{os.uname().nodename} slots=2\nother slots=1\n"]
    world = next(v for v in plan.env if v.name == "WORLD_SIZE")
    assert world.value == "3" and "2+1" in world.reason and plan.topology.world_size == 3


POD_PENDING = {"kind": "Pod", "status": {"phase": "Pending", "conditions": [
    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
     "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]}}


def test_a_missing_pod_is_described_by_what_the_api_says():
    """A real HTTP server standing in for the API server answers pods/<name> (the Role grants get on pods)."""
    import http.server

    from nodeweave.entrypoint.detection.kube import pod_phase

    seen = []

    class Api(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            found = self.path.endswith("/pods/llama-3")
            body = json.dumps(POD_PENDING if found else {"kind": "Status", "code": 404}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"NODEWEAVE_KUBE_API": f"http://127.0.0.1:{server.server_address[1]}"}
        root = Root(str(FIX / "sts-h100-roce"))
        assert pod_phase(root, env, "llama-3") == ("pod llama-3 is Pending: Unschedulable: 0/4 nodes are available: "
                                                   "4 Insufficient nvidia.com/gpu.")
        assert seen[0] == "/api/v1/namespaces/training/pods/llama-3"
        assert pod_phase(root, env, "llama-9") == "pod llama-9: the API answered 404 (does it exist?)"
        assert pod_phase(root, {"NODEWEAVE_KUBE_API": "http://127.0.0.1:9"}, "llama-3") is None
    finally:
        server.shutdown()
