"""``--target slurm`` with ``slurm.runtime: pyxis`` and ``apptainer``: every step enters the job's image.

Neither pyxis nor Apptainer exists here (Debian 12 packages neither, and the
local Slurm loads no SPANK plugin), so tests/container_standin.py stands in:
as ``srun`` it checks pyxis's words against pyxis's own option table, hands
every other word to the real srun (whose parser reads them), and runs the task
in a private mount namespace with the asked mounts and folder; as
``apptainer`` it accepts only ``exec``'s grammar. What is proven: the argv
each verb sends, srun's acceptance of the rest of it, the mounts and folder
the entrypoint runs in, and that status and stop steps reach the run's
processes. What is not: the image itself (the host's venv runs), enroot's
import, Apptainer's own namespaces. ``sacct`` is shadowed by a script that
leaves a mark: the verbs never ask Slurm's accounting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import container_standin
import slurm_cluster
from nodeweave.cluster import ClusterOptions, open_backend
from nodeweave.cluster.backends.slurm.step import REPORT_EXIT
from nodeweave.cluster.runner import RunRequest
from nodeweave.spec import parse_spec
from cli_run import NODEWEAVE
from test_slurm_target import _per_node_tmpdir
from free_ports import free_port_pair as free_pair

STANDIN = Path(container_standin.__file__)
SPEC = """name: {name}
image: {{variant: cpu, registry: registry.example.com/team}}
nodes: 2
gpus_per_node: 1
launcher: {{type: torchrun, script: probe.py, master_port: {port}, wait_timeout: 60}}
workspace: {{path: {inside}/workspace}}
cache: {{host_path: ./cache, path: {inside}/cache}}
volumes: [{{name: data, host_path: {outside}/data, path: {inside}/data, read_only: true}}]
slurm: {{runtime: {runtime}, time: "10:00", exclusive: false}}
"""
PROBE = """import os
inside = os.environ["PROBE_INSIDE"]
try:
    open(inside + "/data/written", "w")
    ro = "no"
except OSError:
    ro = "yes"
print(f"probe rank={os.environ['RANK']} node={os.environ['SLURM_NODEID']} cwd={os.getcwd()} "
      f"marker={open(inside + '/data/marker').read().strip()} read-only={ro}", flush=True)
"""


def write_spec(folder: Path, runtime: str, port: int = 29561) -> Path:
    inside = folder / "ctr"  # the container's paths: under the test's folder, as this machine is the "image"
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "marker").write_text("from-the-data-volume\n")
    (folder / "probe.py").write_text(PROBE)
    path = folder / "nodeweave.yaml"
    path.write_text(SPEC.format(name=f"nw{runtime}", port=port, inside=inside, outside=folder, runtime=runtime)
                    + f"env: {{PROBE_INSIDE: {inside}}}\n")
    return path


def test_pyxis_steps_carry_the_image_mounts_folder_and_one_container_name(tmp_path):
    path = write_spec(tmp_path, "pyxis")
    spec = parse_spec(path.read_text(), str(path))
    backend = open_backend(spec, path, ClusterOptions(target="slurm", slurm_job="42").checked())
    nodes = backend._nodes(["gpu07", "gpu09"], "42")
    words = ["--container-image=registry.example.com#team/nwpyxis:cpu",
             f"--container-mounts={tmp_path}:{tmp_path}/ctr/workspace,{tmp_path}/cache:{tmp_path}/ctr/cache,"
             f"{tmp_path}/data:{tmp_path}/ctr/data:ro,/tmp:/tmp",
             f"--container-workdir={tmp_path}/ctr/workspace", "--container-name=nodeweave-nwpyxis",
             "--no-container-mount-home"]
    run = nodes[0].group.argv(RunRequest(run_id="r1", command=["probe.py"]))
    assert run[run.index("--input=none") + 1:][:5] == words and run[run.index("sh", 1) - 1] == words[-1]
    status = nodes[1].entrypoint_argv(["--node", "status"])
    assert status[7:12] == words and f"{tmp_path}/ctr/workspace" in status  # in the container, its folder


def test_apptainer_steps_exec_the_image_with_binds_and_sync_goes_to_the_node(tmp_path):
    path = write_spec(tmp_path, "apptainer")
    spec = parse_spec(path.read_text(), str(path))
    options = ClusterOptions(target="slurm", slurm_job="42", remote_dir="/local/ws").checked()
    backend = open_backend(spec, path, options)
    nodes = backend._nodes(["gpu07"], "42")
    prefix = ["apptainer", "exec", "--bind", f"/local/ws:{tmp_path}/ctr/workspace,{tmp_path}/cache:"
              f"{tmp_path}/ctr/cache,{tmp_path}/data:{tmp_path}/ctr/data:ro", "--pwd", f"{tmp_path}/ctr/workspace",
              "docker://registry.example.com/team/nwapptainer:cpu"]
    run = nodes[0].group.argv(RunRequest(run_id="r1", command=["probe.py"]))
    at = run.index("apptainer")  # inside the step's exit-reporting shell, before the variables and the entrypoint
    assert run[at - len(REPORT_EXIT):at] == list(REPORT_EXIT) and run[at:at + len(prefix)] == prefix
    assert run[at + len(prefix)] == "env" and "--chdir=/local/ws" in run
    status = nodes[0].entrypoint_argv(["--node", "status"])
    assert status[status.index("apptainer"):][:len(prefix)] == prefix
    assert status[:3] == ["srun", "--jobid=42", "--overlap"]
    backend._hosts = lambda: ["gpu07"]  # the allocation's nodes, without asking squeue
    remotes, folder = backend.sync_targets()
    assert folder == "/local/ws" and remotes[0].exec_argv(["true"])[-1:] == ["true"]
    assert "apptainer" not in remotes[0].exec_argv(["true"])  # sync fills the node's folder the image mounts


@pytest.mark.parametrize("argv, says", [
    (["--container-image=localhost/x:1", "true"], "a registry host needs '#'"),
    (["--container-image=x", "--container-mounts=/a:", "true"], "invalid format"),
    (["--container-image=x", "--container-mounts=:/b", "true"], "invalid format"),
    (["--container-image=x", "--container-name=n:sometimes", "true"], "flag must be"),
    (["--container-image=x", "--container-mount-home=1", "true"], "doesn't allow an argument"),
    (["--container-image=x", "--container-wrkdir=/w", "true"], "unrecognized option"),
])
def test_the_pyxis_standin_refuses_what_pyxis_refuses(tmp_path, argv, says):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = container_standin.install(str(bin_dir), "srun")
    env = {**os.environ, "STANDIN_REAL_SRUN": "/bin/echo", "STANDIN_LOG": str(tmp_path / "log")}
    out = subprocess.run([srun, *argv], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and says in out.stderr, out.stderr
    ok = subprocess.run([srun, "--container-image=nvcr.io#nvidia/pytorch:24.05-py3",
                         "--container-mounts=/a:/b:ro+rprivate", "--no-container-mount-home", "--label", "true"],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and ok.stdout.startswith("--label ") and " enter " in ok.stdout, ok.stderr


@pytest.mark.parametrize("argv, says", [
    (["run", "docker://x", "true"], "only `apptainer exec`"),
    (["exec", "--gpu", "docker://x", "true"], "unknown flag"),
    (["exec", "--bind", "a:/b", "docker://x", "true"], "invalid bind"),
    (["exec", "docker://Bad Name", "true"], "could not open image"),
    (["exec", "docker://x"], "needs a command"),
])
def test_the_apptainer_standin_refuses_what_apptainer_refuses(tmp_path, argv, says):
    apptainer = container_standin.install(str(tmp_path), "apptainer")
    out = subprocess.run([apptainer, *argv], capture_output=True, text=True)
    assert out.returncode == 255 and says in out.stderr, out.stderr


# -- the real local Slurm ---------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(slurm_cluster.problem() is not None, reason=str(slurm_cluster.problem()))


def _verbs(slurm, tmp_path: Path, runtime: str):
    """A ``nodeweave`` caller on the local Slurm with the runtime's stand-in and a marking ``sacct`` on PATH."""
    bin_dir = tmp_path / "standins"
    bin_dir.mkdir()
    container_standin.install(str(bin_dir), "srun" if runtime == "pyxis" else "apptainer")
    (bin_dir / "sacct").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/sacct-asked\nexit 1\n")
    (bin_dir / "sacct").chmod(0o755)
    env = {**slurm.env, "PATH": f"{bin_dir}:{_per_node_tmpdir(tmp_path)}", "COLUMNS": "250",
           "STANDIN_REAL_SRUN": shutil.which("srun", path=slurm.env["PATH"]), "STANDIN_LOG": str(tmp_path / "pyxis")}

    def nodeweave(*args, timeout=180):
        return subprocess.run([*NODEWEAVE, *args, "--spec", str(tmp_path / "nodeweave.yaml")], capture_output=True,
                              text=True, cwd=tmp_path, env=env, timeout=timeout)
    return nodeweave, env


def _probe_lines(output: str, tmp_path: Path):
    inside = tmp_path / "ctr"
    for rank in (0, 1):
        line = f"probe rank={rank} node={rank} cwd={inside}/workspace marker=from-the-data-volume read-only=yes"
        assert line in output, output[-3000:]


@contextmanager
def _up_and_run(slurm, tmp_path, runtime):
    """``up --target slurm`` and one ``run`` whose probe lines show every rank inside the container; the
    test's own steps in between; then ``down``, which must pass."""
    write_spec(tmp_path, runtime, port=free_pair())
    nodeweave, env = _verbs(slurm, tmp_path, runtime)
    up = nodeweave("up", "--target", "slurm", "--timeout", "120")
    assert up.returncode == 0 and "2 node(s) up" in up.stdout, up.stdout + up.stderr
    try:
        run = nodeweave("run")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr
        _probe_lines(run.stdout, tmp_path)
        yield nodeweave, env
    finally:
        down = nodeweave("down")
    assert down.returncode == 0, down.stdout + down.stderr


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_pyxis_up_run_status_stop_logs_down_on_slurm(slurm, tmp_path):
    with _up_and_run(slurm, tmp_path, "pyxis") as (nodeweave, env):
        (tmp_path / "sleep.py").write_text("import time\nprint('sleeping', flush=True)\ntime.sleep(300)\n")
        sleeper = subprocess.Popen([*NODEWEAVE, "run", "--spec", str(tmp_path / "nodeweave.yaml"), "--", "sleep.py"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
        for _ in range(120):
            if sum("sleeping" in p.read_text() for p in max((tmp_path / "runs").iterdir()).glob("node-*.log")) == 2:
                break
            time.sleep(0.5)
        rows = json.loads(nodeweave("status", "--json").stdout)["nodes"]
        assert [r["rank"] for r in rows] == [0, 1] and rows[0]["run"]["run_id"] == rows[1]["run"]["run_id"], rows
        stop = nodeweave("stop", "--grace", "5")
        assert stop.returncode == 0 and stop.stdout.count("process(es) stopped") == 2, stop.stdout + stop.stderr
        assert sleeper.wait(timeout=120) == 1
        logs = nodeweave("logs", "--run", max((tmp_path / "runs").iterdir()).name)
        assert logs.returncode == 0 and "[node-1] sleeping" in logs.stdout, logs.stdout + logs.stderr
    steps = [json.loads(line) for line in (tmp_path / "pyxis").read_text().splitlines()]
    assert {s["pyxis"]["container-name"] for s in steps} == {"nodeweave-nwpyxis"} and len(steps) >= 6, steps
    assert not (tmp_path / "sacct-asked").exists(), (tmp_path / "sacct-asked").read_text()


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_apptainer_up_run_status_down_on_slurm(slurm, tmp_path):
    with _up_and_run(slurm, tmp_path, "apptainer") as (nodeweave, _):
        status = nodeweave("status")
        # the title wraps at the table's width, which the folder's name lengthens
        assert status.returncode == 0 and "plans agree" in " ".join(status.stdout.split()), status.stdout + status.stderr
    assert not (tmp_path / "sacct-asked").exists()


def test_pyxis_on_an_srun_without_pyxis_exits_3_naming_it(tmp_path):
    write_spec(tmp_path, "pyxis")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\necho 'Usage: srun [OPTIONS(0)...]'\n")  # srun --help, no plugin
    (bin_dir / "srun").chmod(0o755)
    (tmp_path / ".nodeweave").mkdir()
    # `up` judges the runtime before it takes an allocation (a verb with nothing allocated says that first: W55)
    out = subprocess.run([*NODEWEAVE, "up", "--target", "slurm", "--spec", str(tmp_path / "nodeweave.yaml")],
                         capture_output=True, text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert out.returncode == 3 and "no pyxis" in out.stderr and "Traceback" not in out.stderr, out.stderr
