"""The Slurm target: golden scripts, bash's and shellcheck's parsers, and a real Slurm cluster.

A local cluster (tests/slurm_cluster.py: slurmctld + two slurmd "nodes" with
GPU GRES) checks the #SBATCH directives with ``sbatch --test-only`` and runs
a rendered script for real (``NODEWEAVE_RUNTIME=host``): two Slurm nodes each
start the entrypoint, which takes its rank and the node count from Slurm and
runs a 2-node torchrun job. pyxis and Apptainer are not installed here; their
command lines are read back from the script with ``srun``/``apptainer``
replaced by a recorder of their arguments. Goldens:
``NODEWEAVE_UPDATE_GOLDEN=1 pytest tests/test_slurm.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

import slurm_cluster
from test_exchange_processes import free_port_pair
from nodeweave.errors import UsageError
from nodeweave.targets.slurm import SCRIPT, render_files
from nodeweave.spec import load_spec, parse_spec

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "slurm"
CASES = sorted(p.stem for p in (GOLDEN / "specs").glob("*.yaml"))
VENV_BIN = Path(sys.executable).parent


def script_of(case: str) -> str:
    return render_files(load_spec(GOLDEN / "specs" / f"{case}.yaml"))[SCRIPT]


@pytest.mark.parametrize("case", CASES)
def test_golden_scripts(case):
    text, golden = script_of(case), GOLDEN / case / SCRIPT
    if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.is_file(), f"missing {golden}; run with NODEWEAVE_UPDATE_GOLDEN=1"
    assert text == golden.read_text()


@pytest.mark.parametrize("case", CASES)
def test_bash_parses_and_shellcheck_passes(case, tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text(script_of(case))
    parsed = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    checked = subprocess.run(["shellcheck", "--severity=info", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_shellcheck_is_live(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    path = tmp_path / "bad.sbatch"
    path.write_text(script_of("accelerate").replace('"${command[@]}"', "${command[@]}"))
    assert subprocess.run(["shellcheck", str(path)], capture_output=True).returncode != 0


def test_directives_follow_the_spec():
    lines = [line for line in script_of("accelerate").splitlines() if line.startswith("#SBATCH ")]
    assert lines == ["#SBATCH --job-name=accel-sft", "#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=1",
                     "#SBATCH --gpus-per-node=4", "#SBATCH --cpus-per-task=32", "#SBATCH --mem=491520M",
                     "#SBATCH --time=24:00:00", "#SBATCH --partition=gpu", "#SBATCH --account=proj-42",
                     "#SBATCH --qos=normal", "#SBATCH --constraint=h100&ib", "#SBATCH --exclusive"]
    elastic = script_of("apptainer-rocm")
    assert "#SBATCH --nodes=2-4" in elastic and "--exclusive" not in elastic and "--gpus-per-node=8" in elastic
    assert "#SBATCH --nodelist=node01,node02" in script_of("host") and "--gpus-per-node" not in script_of("host")


def test_auto_gpus_take_whole_nodes_and_a_shared_node_needs_a_count():
    spec = parse_spec("name: a\nimage: {variant: cuda12}\nlauncher: {script: t.py}\nslurm: {}\n")
    script = next(text for path, text in render_files(spec).items() if path.endswith(".sbatch"))
    assert "#SBATCH --exclusive" in script and "--gpus-per-node" not in script and "--gres" not in script
    assert "# gpus_per_node: auto: whole nodes (--exclusive), no GPU count asked" in script
    # refused at validate now (issue 43: render refused it after validate passed), naming the field
    with pytest.raises(UsageError, match="slurm.exclusive: false with gpus_per_node auto .* accepted: gpus_per_node "
                                         "as a count"):
        parse_spec("name: a\nimage: {variant: cuda12}\nlauncher: {script: t.py}\nslurm: {exclusive: false}\n")


# -- the command lines each runtime gets (srun/apptainer replaced by an argv recorder) ----------------

RECORDER = """#!/bin/bash
printf '%s\\0' "$(basename "$0")" "$@" >> "$NW_ARGV_LOG"
printf '\\n' >> "$NW_ARGV_LOG"
"""


def recorded_argv(script: str, runtime: str, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("srun", "apptainer"):
        (bin_dir / tool).write_text(RECORDER)
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / f"argv-{runtime}"
    (tmp_path / "job.sbatch").write_text(script)
    for workspace in ("sub mit", "shared/project"):  # the script checks the spec's script is in the workspace
        (tmp_path / workspace).mkdir(parents=True, exist_ok=True)
        (tmp_path / workspace / "train.py").write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/home/u", "SLURM_SUBMIT_DIR": f"{tmp_path}/sub mit",
           "NODEWEAVE_RUNTIME": runtime, "NW_ARGV_LOG": str(log)}
    out = subprocess.run(["bash", str(tmp_path / "job.sbatch")], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    (line,) = [entry for entry in log.read_text().split("\n") if entry]
    return line.rstrip("\0").split("\0")


def test_pyxis_argv(tmp_path):
    argv = recorded_argv(script_of("accelerate"), "pyxis", tmp_path)
    assert argv[:3] == ["srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    assert "--container-image=nvcr.io#example/accel-sft:cuda12" in argv
    assert "--container-mounts=/home/u/projects/sft:/workspace,/scratch/$USER/cache:/cache,/lustre/datasets:/data:ro" in argv
    assert argv[argv.index("--container-workdir=/workspace") + 1:] == [
        "nodeweave-entrypoint", "train.py", "--mixed_precision", "bf16", "--run-name", "it's \"quoted\" ${USER} $(id)"]


def test_apptainer_argv_for_rocm_and_relative_paths(tmp_path):
    argv = recorded_argv(script_of("apptainer-rocm"), "apptainer", tmp_path)
    assert argv[:5] == ["srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "apptainer", "exec"]
    assert argv[5:9] == ["--rocm", "--bind", f"{tmp_path}/sub mit/../shared/project:/workspace,/home/u/.cache/nodeweave:/cache",
                         "--pwd"]
    assert argv[10:] == ["/shared/images/rocm-elastic.sif", "nodeweave-entrypoint", "train.py"]


def test_an_unknown_runtime_is_refused(tmp_path):
    (tmp_path / "job.sbatch").write_text(script_of("host"))
    (tmp_path / "train.py").write_text("")  # submitted from the spec's folder
    out = subprocess.run(["bash", str(tmp_path / "job.sbatch")], env={"PATH": "/usr/bin:/bin", "HOME": "/home/u", "NODEWEAVE_RUNTIME": "docker"},
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2 and "NODEWEAVE_RUNTIME=docker: accepted: pyxis, apptainer or host" in out.stderr


# -- a real Slurm cluster ----------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(slurm_cluster.problem() is not None, reason=str(slurm_cluster.problem()))


@pytest.fixture
def cluster(slurm):
    """The session's local Slurm cluster (tests/conftest.py): one start for every Slurm test file."""
    return slurm


def _render(spec_dir: Path, spec_text: str) -> Path:
    (spec_dir / "nodeweave.yaml").write_text(spec_text)
    out = cli_run.run([*cli_run.NODEWEAVE, "render", "slurm", "--spec", str(spec_dir / "nodeweave.yaml")],
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return spec_dir / SCRIPT


GPU_SPEC = """name: gpu-check
image: {variant: cuda12}
nodes: 2
gpus_per_node: GPUS
launcher: {script: train.py}
resources: {requests: {cpu: "1", memory: 1Gi}}
slurm: {partition: debug, time: "10:00"}
"""


@needs_slurm
@pytest.mark.slow
def test_slurm_accepts_the_directives(cluster, tmp_path):
    """sbatch --test-only: Slurm's own parser and scheduler judge the rendered #SBATCH lines."""
    script = _render(tmp_path, GPU_SPEC.replace("GPUS", "2"))
    out = cluster.run(["sbatch", "--test-only", str(script)], cwd=tmp_path)
    assert "to start at" in out.stderr and slurm_cluster.NODELIST in out.stderr, out.stderr
    too_many = _render(tmp_path, GPU_SPEC.replace("GPUS", "3"))  # each node has 2 GPUs
    refused = cluster.run(["sbatch", "--test-only", str(too_many)], cwd=tmp_path, check=False)
    assert refused.returncode != 0 and "configuration is not available" in refused.stderr, refused.stderr


# Each rendered directive, changed in the spec, changes what Slurm's scheduler says (each node: 2 CPUs, 4000 MB,
# feature ib, 2 GPUs): so the line reached sbatch and was read, not only matched against a golden file.
DIRECTIVES = [
    ("", 0, f"using 2 processors on nodes {slurm_cluster.NODELIST} in partition debug"),
    ('cpu: "1"', 0, "using 2 processors"),
    ('cpu: "2"', 0, "using 4 processors"),  # --cpus-per-task=2 on each node
    ('cpu: "3"', 1, "configuration is not available"),
    ("memory: 3900Mi", 0, "to start at"),
    ("memory: 5Gi", 1, "configuration is not available"),  # 3900Mi fits, 5Gi does not: --mem was read
    ("exclusive: true", 0, "using 4 processors"),  # the whole of both nodes
    ("partition: gpu-nowhere", 1, "invalid partition"),
    ("constraint: ib", 0, "to start at"),
    ("constraint: h100", 1, "Invalid feature specification"),
    (f"nodelist: [{slurm_cluster.NODES[0]}, {slurm_cluster.NODES[1]}]", 0, f"on nodes {slurm_cluster.NODELIST}"),
    (f"nodelist: [{slurm_cluster.NODES[0]}, nw7]", 1, "Invalid node name specified"),
    (f"hosts: [{slurm_cluster.NODES[0]}, nw7]", 0, "to start at"),  # the LAN/ssh list does not pin a Slurm job
    ("nodes: 3", 1, "configuration is not available"),
]
DIRECTIVE_SPEC = """name: {name}
image: {{variant: cuda12}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: train.py}}
resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}
slurm: {{partition: {partition}, time: "10:00", exclusive: {exclusive}{constraint}}}
{hosts}"""


def _directive_spec(change: str) -> str:
    key, _, value = change.partition(": ")
    fields = {"name": "directive-check", "nodes": "2", "cpu": "1", "memory": "1Gi", "partition": "debug",
              "exclusive": "false", "constraint": "", "hosts": ""}
    if key == "cpu":
        fields["cpu"] = value.strip('"')
    elif key == "constraint":
        fields["constraint"] = f", constraint: {value}"
    elif key == "hosts":
        fields["hosts"] = f"hosts: {value}\n"
    elif key == "nodelist":
        fields["constraint"] = f", nodelist: {value}"
    elif key:
        fields[key] = value
    return DIRECTIVE_SPEC.format(**fields)


@needs_slurm
@pytest.mark.slow
def test_slurm_reads_every_directive_the_spec_sets(cluster, tmp_path):
    wrong = []
    for index, (change, refused, says) in enumerate(DIRECTIVES):
        folder = tmp_path / str(index)
        folder.mkdir()
        script = _render(folder, _directive_spec(change))
        out = cluster.run(["sbatch", "--test-only", str(script)], cwd=folder, check=False)
        if (out.returncode != 0) != bool(refused) or says not in out.stderr:
            wrong.append(f"{change or 'as is'}: exit {out.returncode}, {out.stderr.strip()[-300:]!r} (wanted {says!r})")
    assert not wrong, "\n".join(wrong)


def _port() -> int:
    """A free master port whose + 1 (the check-in exchange) is free too, below the kernel's ephemeral range
    (32768-60999): a port the kernel hands out is any other test's next outgoing connection's, and the
    exchange's port was never looked at (a parallel suite's "Address already in use")."""
    return free_port_pair()


RUN_SPEC = """name: slurm-smoke
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
  args: ["--steps", "6", "--log-every", "3", "--expect-world", "2"]
  master_port: {port}
  wait_timeout: 120
slurm: {{runtime: host, partition: debug, time: "10:00", exclusive: false}}
"""


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_a_rendered_script_runs_a_two_node_job_on_slurm(cluster, tmp_path):
    """Two Slurm nodes, one task each: every entrypoint reads its rank from Slurm, torchrun trains, ranks agree."""
    shutil.copy(REPO / "examples" / "train.py", tmp_path / "train.py")
    script = _render(tmp_path, RUN_SPEC.format(port=_port()))
    # No MASTER_ADDR, NODE_RANK or hostfile: the master is the first host of SLURM_JOB_NODELIST (node 0 is
    # named after this machine, a name that reaches it: tests/slurm_cluster.py), the ranks SLURM_NODEID.
    env = {"PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    assert not {"MASTER_ADDR", "NODE_RANK"} & set(cluster.env), "sbatch would export them to the job"
    out = cluster.run(["sbatch", "--wait", f"--output={tmp_path}/slurm-%j.out", str(script)], cwd=tmp_path, env=env,
                      check=False, timeout=600)
    (log,) = tmp_path.glob("slurm-*.out")
    text = log.read_text()
    assert out.returncode == 0, f"sbatch --wait exited {out.returncode}:\n{out.stderr}\n{text[-4000:]}"
    done = [line for line in text.splitlines() if "done: world_size=2" in line]
    assert len(done) == 2 and all(line.endswith(" ok") for line in done), text[-4000:]
    # No NODE_RANK or hostfile anywhere: the ranks 0 and 1 can only have come from Slurm (SLURM_NODEID).
    starts = sorted(line.split(",")[0] for line in text.splitlines()
                    if re.match(r"nodeweave-entrypoint: node \d+ of \d+,", line))
    assert starts == ["nodeweave-entrypoint: node 0 of 2", "nodeweave-entrypoint: node 1 of 2"], text[-4000:]
    masters = [line for line in text.splitlines() if re.match(r"nodeweave-entrypoint: node \d+ of \d+,", line)]
    assert all(f" master {slurm_cluster.NODES[0]}:" in line for line in masters), "\n".join(masters)


ONE_NODE = """name: pinned
image: {variant: cpu}
nodes: NODES
launcher: {script: train.py}
resources: {requests: {cpu: "1", memory: 1Gi}}
slurm: {partition: debug, time: "10:00", nodelist: LIST}
"""


@needs_slurm
@pytest.mark.slow
def test_a_nodelist_longer_than_the_job_is_refused_as_slurm_would_grow_the_job(cluster, tmp_path):
    """sbatch(1): with --nodelist "the job will contain all of these hosts", so a --nodes=1 job listing two hosts
    is never the 1-node job the spec says (Slurm 22.05's sbatch refuses it: "invalid number of nodes (-N 2-1)"; the
    man page's reading grows it to 2): the spec naming more nodes than nodes + spares is refused first (exit 2, one
    line naming slurm.nodelist). A shorter list is left to Slurm (sbatch(1): it adds nodes; this one-host test
    cluster of two slurmd answers "Requested node configuration is not available" to that, so it is not run here)."""
    both = f"[{', '.join(slurm_cluster.NODES)}]"
    script = _render(tmp_path, ONE_NODE.replace("NODES", "1").replace("LIST", f"[{slurm_cluster.NODES[0]}]"))
    grown = cluster.run(["sbatch", "--test-only", f"--nodelist={slurm_cluster.NODELIST}", str(script)], cwd=tmp_path,
                        check=False)
    assert (grown.returncode != 0 and "invalid number of nodes" in grown.stderr) or \
        slurm_cluster.NODELIST in grown.stderr, grown.stderr  # Slurm's answer: no 1-node job
    (tmp_path / "nodeweave.yaml").write_text(ONE_NODE.replace("NODES", "1").replace("LIST", both))
    refused = cli_run.run([*cli_run.NODEWEAVE, "render", "slurm", "--spec", str(tmp_path / "nodeweave.yaml")])
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "slurm.nodelist: names 2 nodes" in lines[0] and "but the job is 1 (nodes: 1)" in lines[0], lines
    exact = _render(tmp_path, ONE_NODE.replace("NODES", "2").replace("LIST", both))
    out = cluster.run(["sbatch", "--test-only", str(exact)], cwd=tmp_path)
    assert slurm_cluster.NODELIST in out.stderr, out.stderr  # as many listed as the job: taken, both nodes
