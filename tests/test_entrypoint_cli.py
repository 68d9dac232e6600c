"""The real ``nodeweave-entrypoint``: exec, exit codes, --explain, stdlib only."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"
SCRIPT = Path(sys.executable).parent / "nodeweave-entrypoint"
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nodeweave.entrypoint"]


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    """The entrypoint runs where the training scripts are (it refuses to start one that is not there)."""
    for name in ("train.py", "t.py"):
        (tmp_path / name).write_text("")
    monkeypatch.chdir(tmp_path)


def run(args, env=None, fixture="cpu-only", timeout=60):
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC)}
    base.update(env or {})
    proc = subprocess.Popen([*ENTRY, "--sysroot", str(FIX / fixture), *args], env=base,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    return proc, out, err


def test_exec_replaces_the_process_and_the_environment_arrives():
    proc, out, err = run(
        ["--launcher", "command", "--nnodes", "2", "--node-rank", "0", "--master-addr", "192.168.1.40", "--",
         "sh", "-c", 'echo "$$ $NODE_RANK $NNODES $MASTER_ADDR $MASTER_PORT $WORLD_SIZE $GLOO_SOCKET_IFNAME $PET_NODE_RANK $KEEP"'],
        env={"KEEP": "user-value"})
    assert proc.returncode == 0, err
    pid, *values = out.split()
    assert int(pid) == proc.pid  # exec, not a child: signals from tini reach the launcher
    assert values == ["0", "2", "192.168.1.40", "29500", "2", "eth0", "0", "user-value"]
    assert "node 0 of 2" in err and "exec sh" in err


def test_launcher_exit_code_is_the_containers():
    proc, _, _ = run(["--launcher", "command", "--", "sh", "-c", "exit 7"])
    assert proc.returncode == 7


def test_torchrun_launcher_via_path(tmp_path):
    fake = tmp_path / "torchrun"
    fake.write_text('#!/bin/sh\necho "$$ $*"\n')
    fake.chmod(0o755)
    proc, out, err = run(["--", "train.py", "--lr", "1"], env={"PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert proc.returncode == 0, err
    pid, rest = out.split(" ", 1)
    assert int(pid) != proc.pid  # torchrun runs as the entrypoint's child (supervise.py)
    assert rest.strip() == "--nnodes 1 --nproc-per-node 1 --node-rank 0 --master-addr 127.0.0.1 --master-port 29500 train.py --lr 1"


def test_deepspeed_hostfile_is_written_before_exec(tmp_path):
    fake = tmp_path / "deepspeed"
    fake.write_text('#!/bin/sh\ncat "$2"\n')
    fake.chmod(0o755)
    proc, out, err = run(["--launcher", "deepspeed", "--", "train.py"],
                         env={"PATH": f"{tmp_path}:{os.environ['PATH']}", "SLURM_NODEID": "0",
                              "SLURM_JOB_NODELIST": "n[1-2]", "NODEWEAVE_WAIT_TIMEOUT": "0"})
    assert proc.returncode == 0, err
    assert out == "n1 slots=1\nn2 slots=1\n"


def test_a_tmpdir_the_hostfile_cannot_go_in_is_refused_at_start(tmp_path):
    """A TMPDIR that is a file once failed writing the DeepSpeed hostfile (exit 1); since walk14b B15 the folder
    every record of the node goes in is judged at start: exit 2, naming TMPDIR."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    proc, _, err = run(["--launcher", "deepspeed", "--", "t.py"], env={"TMPDIR": str(blocked)})
    assert proc.returncode == 2 and f"TMPDIR={blocked}: {blocked} is a file, not a folder" in err
    assert "Traceback" not in err


def test_missing_launcher_is_127_with_a_clear_message():
    proc, out, err = run(["--", "train.py"], env={"PATH": "/nonexistent"})
    assert proc.returncode == 127
    assert "launcher 'torchrun' not found on PATH" in err and "Traceback" not in err


def test_not_executable_launcher_is_126(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    proc, _, err = run(["--launcher", "command", "--", str(script)])
    assert proc.returncode == 126 and "not executable" in err


@pytest.mark.parametrize("args,env,code,needle", [
    (["--node-rank", "x", "--", "t.py"], {}, 2, "node rank must be a whole number, got 'x' (from flag --node-rank)"),
    (["--nnodes", "0", "--", "t.py"], {}, 2, "node count must be a whole number of 1 or more"),
    (["--nnodes", "2", "--node-rank", "2", "--master-addr", "m", "--", "t.py"], {}, 2, "is not below the node count"),
    (["--launcher", "mpirun", "--", "t.py"], {}, 2, "unknown launcher 'mpirun'"),
    (["--bogus", "--", "t.py"], {}, 2, "unknown option '--bogus'"),
    ([], {}, 2, "no training command"),
    (["--", "t.py"], {"NODE_RANK": "0", "SLURM_NODEID": "1", "NNODES": "2"}, 3, "sources disagree"),
    (["--", "t.py"], {"NNODES": "2", "MASTER_ADDR": "m"}, 3, "set NODE_RANK=0..1"),
])
def test_bad_input_one_message_no_traceback(args, env, code, needle):
    proc, out, err = run(args, env=env)
    assert proc.returncode == code, err
    assert needle in err and "Traceback" not in err
    assert err.startswith("nodeweave-entrypoint: error: ") and err.count("\n") == 1


def test_a_missing_training_script_is_one_line_before_any_wait(tmp_path, monkeypatch):
    """Not one failure per rank after the master's wait: the entrypoint stops first, naming path and directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    fake = tmp_path / "torchrun"
    fake.write_text(f"#!/bin/sh\ntouch {tmp_path}/started\n")
    fake.chmod(0o755)
    proc, _, err = run(["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.255.255.1", "--", "train.py", "--lr",
                        "1"], env={"PATH": f"{tmp_path}:{os.environ['PATH']}"}, timeout=30)
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"script 'train.py' is not in the working directory {empty}" in err and "waiting" not in err
    assert not (tmp_path / "started").exists()


def test_a_missing_script_behind_python_for_the_command_launcher(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    proc, _, err = run(["--launcher", "command", "--", "python3", "nope.py"])
    assert proc.returncode == 2 and "script 'nope.py' is not in the working directory" in err
    proc, out, _ = run(["--launcher", "command", "--", "sh", "-c", "echo ran"])  # not a Python script: not judged
    assert proc.returncode == 0 and out == "ran\n"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_explain_of_a_missing_script_on_a_live_root_is_an_error_exit_2(tmp_path, monkeypatch, json_flag):
    """README's exit codes: `--explain -- SCRIPT` with the script missing is one of the plan's errors, exit 2, as the
    start would be (it was a note, exit 0)."""
    monkeypatch.chdir(tmp_path / "..")
    out = subprocess.run([*ENTRY, "--explain", *json_flag, "--", "absent.py"], capture_output=True, text=True,
                         timeout=60, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC)})
    assert out.returncode == 2 and "script 'absent.py' is not in the working directory" in out.stdout
    if not json_flag:
        assert out.stdout.index("Errors") < out.stdout.index("script 'absent.py'")


def test_help():
    proc, out, _ = run(["--help"])
    assert proc.returncode == 0 and "usage: nodeweave-entrypoint" in out and "NODEWEAVE_NNODES" in out


def test_explain_text_does_not_exec():
    proc, out, err = run(["--explain", "--nnodes", "2", "--node-rank", "1", "--master-addr", "hgx-a00", "--", "train.py"],
                         fixture="hgx-h100")
    assert proc.returncode == 0, err
    for needle in ("8 of 8 x NVIDIA H100 80GB HBM3 (nvswitch", "mlx5_8:1", "<- flag --node-rank",
                   "set    NCCL_SOCKET_IFNAME==eno1", "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7", "run    torchrun --nnodes 2",
                   "wait   for hgx-a00:29500"):
        assert needle in out, needle


def test_explain_json_schema():
    proc, out, err = run(["--explain", "--json", "--", "train.py"], fixture="mi300x",
                         env={"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "mi300-00", "NCCL_MAX_NCHANNELS": "16"})
    assert proc.returncode == 0, err
    data = json.loads(out)
    assert data["schema"] == "nodeweave.entrypoint/1"
    assert set(data) == {"schema", "node", "topology", "env", "launch", "warnings", "errors", "exchange", "fingerprint", "role",
                         "faults", "mode"}
    assert data["exchange"] == {"enabled": False, "why": "a captured tree (--sysroot) is not a live node"}
    assert data["fingerprint"]["gpu_vendor"] == "amd" and data["fingerprint"]["rank"] == 1
    node = data["node"]
    assert node["gpus"]["vendor"] == "amd" and node["gpus"]["count"] == 8 and node["gpus"]["arch"] == "gfx942"
    assert node["nics"][0]["device"] == "bnxt_re0" and node["nics"][0]["roce_v2_gid_index"] == 3
    assert node["interface"] == "eno8303"
    assert data["topology"]["node_rank"] == {"value": 1, "source": "NODE_RANK=1"}
    env = {v["name"]: v for v in data["env"]}
    assert env["NCCL_IB_GID_INDEX"]["action"] == "set" and env["NCCL_MAX_NCHANNELS"]["action"] == "kept"
    assert data["launch"]["argv"][0] == "torchrun" and data["launch"]["wait"]["port"] == 29500


def test_explain_json_on_a_bare_host_is_a_single_node_probe():
    proc, out, _ = run(["--explain", "--json", "--", "true"], fixture="hgx-h100")
    data = json.loads(out)
    assert proc.returncode == 0 and data["errors"] == []
    assert data["node"]["gpus"]["count"] == 8 and len(data["node"]["nics"]) == 10


def test_explain_with_an_error_still_shows_the_node():
    proc, out, _ = run(["--explain", "--json", "--", "t.py"], env={"NNODES": "2", "MASTER_ADDR": "m"}, fixture="mi300x")
    data = json.loads(out)
    assert proc.returncode == 3
    assert data["node"]["gpus"]["count"] == 8 and data["topology"] is None
    assert data["errors"][0]["exit_code"] == 3


STDLIB_PROBE = r"""
import sys
sys.path.insert(0, {src!r})
import io, contextlib
from nodeweave.entrypoint.__main__ import main
from nodeweave.entrypoint import explain
from nodeweave.entrypoint.detection import kube
from nodeweave.entrypoint.running import wait
import importlib, pkgutil, nodeweave.entrypoint as package  # every module of every room, not only those a run loads
for info in pkgutil.walk_packages(package.__path__, "nodeweave.entrypoint."):
    importlib.import_module(info.name)
rooms = {{"nodeweave.entrypoint." + room for room in ("detection", "planning", "checkin", "running")}}
assert rooms <= set(sys.modules), rooms - set(sys.modules)
from nodeweave.entrypoint.errors import EntrypointError
from nodeweave.entrypoint.detection.sysfs import Root
fix = {fix!r}
runs = [
    ["--sysroot", fix + "/hgx-h100", "--explain", "--json", "--", "t.py"],
    ["--sysroot", fix + "/mi300x", "--explain", "--nnodes", "2", "--node-rank", "1", "--master-addr", "mi300-00", "--", "t.py"],
    ["--sysroot", fix + "/sts-h100-roce", "--launcher", "deepspeed", "--explain", "--service", "llama", "--", "t.py"],
    ["--sysroot", fix + "/cpu-only", "--launcher", "accelerate", "--explain", "--", "t.py"],
]
for argv in runs:
    with contextlib.redirect_stdout(io.StringIO()):
        main(argv)
try:
    kube.statefulset_replicas(Root(fix + "/sts-h100-roce"), {{"NODEWEAVE_KUBE_API": "http://127.0.0.1:9"}},
                              "llama", "training", timeout=0.5)
except EntrypointError:
    pass
try:
    wait.wait_for("127.0.0.1", 9, 0.2, log=lambda t: None)
except EntrypointError:
    pass
print("\n".join(sorted({{m.split(".")[0] for m in sys.modules}})))
"""


def test_entrypoint_is_stdlib_only_and_never_imports_torch():
    code = STDLIB_PROBE.format(src=str(SRC), fix=str(FIX))
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    top = set(out.stdout.split())
    allowed = set(sys.stdlib_module_names) | {"nodeweave", "__main__"}
    assert "torch" not in top
    assert top - allowed == set(), f"third-party modules imported: {sorted(top - allowed)}"
    assert "nodeweave" in top and "urllib" in top  # the probe really ran the Kubernetes path


HOT_PATH_PROBE = """
import os, sys
sys.path.insert(0, {src!r})
before = set(sys.modules)
os.execve = lambda *args: print("\\n".join(sorted(set(sys.modules) - before))) or sys.exit(0)
from nodeweave.entrypoint.__main__ import main
main(["--sysroot", {fix!r} + "/hgx-h100", "--launcher", "command", "--nnodes", "2", "--node-rank", "0",
      "--master-addr", "hgx-a01", "--", "true"])
"""
SLOW_IMPORTS = {"socket", "signal", "enum", "json", "argparse", "re", "dataclasses", "ctypes", "urllib", "ssl"}


def test_the_start_up_path_imports_nothing_slow():
    """What benchmarks/entrypoint_startup.py measures stays cheap: each of these costs ms."""
    code = HOT_PATH_PROBE.format(src=str(SRC), fix=str(FIX))
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert "nodeweave" in loaded
    assert loaded & SLOW_IMPORTS == set(), sorted(loaded & SLOW_IMPORTS)
