"""Issue 43, the walk-7 rows still open after its replay (A14, A30, A54, N2, N4): each a class, one test per class."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from cli_run import ENTRYPOINT, in_a_folder_with_train_py, nodeweave, run
from nodeweave.errors import EXIT_USAGE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SPEC = "name: team\nnodes: 2\nimage: {variant: cpu}\nlauncher:\n  type: torchrun\n  script: train.py\n"


def _project(folder, spec=SPEC):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nodeweave.yaml").write_text(spec)
    (folder / "train.py").write_text("print('training')\n")
    return folder


def test_a14_a_second_spec_rendered_into_the_first_specs_folder_is_refused(tmp_path):
    """Two specs in one folder: the second's render refuses to take over the first's files (exit 2, nothing
    written, the dry run too), names the other job and its spec, and gives --out or --force; --check of the first
    then still passes. A spec renamed in place (no other spec names the old job) re-renders as before."""
    folder = tmp_path / "ex"
    folder.mkdir()
    for name in ("lan-desktops.yaml", "rocm-bare-hosts.yaml", "train.py"):
        shutil.copy(EXAMPLES / name, folder / name)
    assert nodeweave("render", "all", "--spec", "lan-desktops.yaml", cwd=folder).returncode == 0
    node = (folder / "compose" / "node.yaml").read_bytes()
    for extra in ([], ["--dry-run"], ["--dry-run", "-o", "json"]):
        done = nodeweave("render", "all", "--spec", "rocm-bare-hosts.yaml", *extra, cwd=folder)
        assert done.returncode == EXIT_USAGE, done.stderr
        said = done.stderr.strip().splitlines()
        assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "holds the render of job lan-llm (lan-desktops.yaml names it)" in said[0]
        assert "--out" in said[0] and "--force" in said[0]
    assert (folder / "compose" / "node.yaml").read_bytes() == node
    assert nodeweave("render", "all", "--check", "--spec", "lan-desktops.yaml", cwd=folder).returncode == 0
    assert nodeweave("render", "all", "--spec", "rocm-bare-hosts.yaml", "--out", "build/b", cwd=folder).returncode == 0
    renamed = (folder / "lan-desktops.yaml").read_text().replace("name: lan-llm", "name: lan-llm-v2")
    (folder / "lan-desktops.yaml").write_text(renamed)  # a rename in place: no spec names lan-llm any more
    assert nodeweave("render", "all", "--spec", "lan-desktops.yaml", cwd=folder).returncode == 0
    taken = nodeweave("render", "all", "--spec", "rocm-bare-hosts.yaml", "--force", cwd=folder)
    assert taken.returncode == 0, taken.stderr
    assert nodeweave("render", "all", "--check", "--spec", "rocm-bare-hosts.yaml", cwd=folder).returncode == 0


@pytest.mark.parametrize("command", [["nvidia-smi"], ["nvidia-smi", "-L"], ["train"], ["rocm-smi", "--showuse"]])
def test_a30_a_bare_name_no_script_under_a_python_launcher_is_a_program_wherever_it_lives(tmp_path, command):
    """A bare name with no .py that is no file of the workspace is a program, whether or not this machine's PATH
    has it (``nvidia-smi`` lives in the image): refused with the remedy for a program, by `run` and by the
    entrypoint's plan; the launcher's module form and a script the workspace holds are not."""
    project = _project(tmp_path / "team")
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # no nvidia-smi here: the image's
    done = nodeweave("run", "--dry-run", "--", *command, cwd=project, env=env)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"`{command[0]}` is a program, not a Python script: torchrun starts" in done.stderr
    assert "--launcher command" in done.stderr and "nodeweave exec" in done.stderr
    assert "not in the workspace" not in done.stderr
    assert nodeweave("run", "--dry-run", "--launcher", "command", "--", *command, cwd=project).returncode == 0
    for taken in (["-m", "pkg.module"], ["--no-python", "nvidia-smi"], ["train.py"]):
        done = nodeweave("run", "--dry-run", "--", *taken, cwd=project, env=env)
        assert done.returncode == 0 and "is a program" not in done.stderr + done.stdout, (taken, done.stderr)
    (project / "train").write_text("print('a script without the suffix')\n")
    assert nodeweave("run", "--dry-run", "--", "train", cwd=project, env=env).returncode == 0
    spec = (project / "nodeweave.yaml").read_text().replace("script: train.py", "script: nvidia-smi")
    (project / "nodeweave.yaml").write_text(spec)
    noted = nodeweave("validate", cwd=project, env=env)  # refused, as every node refuses it (issue 43 A8)
    assert noted.returncode == EXIT_USAGE and "launcher.script 'nvidia-smi' is a program" in noted.stderr


@pytest.mark.parametrize("command", [["nvidia-smi"], ["bash", "-c", "true"]])
def test_a30_the_entrypoints_plan_refuses_a_program_as_run_does(tmp_path, command):
    env = {**os.environ, "NODEWEAVE_LAUNCHER": "torchrun", "NODEWEAVE_NNODES": "1"}
    done = run([*ENTRYPOINT, "--explain", "--", *command], cwd=tmp_path, env=env)
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    said = done.stdout + done.stderr
    # a bare program is named as one; a shell by walk8 B12's earlier rule, from the same table (consistency.PROGRAMS)
    named = (f"`{command[0]}` is a program, not a Python script" in said
             or f"the command starts with '{command[0]}', a shell, not a script" in said)
    assert named and "NODEWEAVE_LAUNCHER=command" in said, said
    assert "is not in the working directory" not in said
    module = run([*ENTRYPOINT, "--explain", "--", "-m", "pkg.module"], cwd=tmp_path, env=env)
    assert "is a program" not in module.stdout + module.stderr


@pytest.mark.parametrize("target, folder, given", [
    (["-t", "slurm", "--remote-dir", "/tmp/job"], "/tmp/job", "--remote-dir"),
    (["-t", "slurm", "--remote-dir", "/var/tmp/job"], "/var/tmp/job", "--remote-dir"),
    (["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/tmp/job"], "/tmp/job", "--remote-dir"),
    (["-t", "hosts", "--host", "a", "--host", "b"], "/tmp/job", "workspace.host_path"),
])
def test_a54_a_folder_on_the_nodes_that_each_machine_clears_is_warned_on_every_multi_node_target(
        tmp_path, target, folder, given):
    """A folder on the nodes under /tmp or /var/tmp (--remote-dir, or the hosts target's absolute
    workspace.host_path) is each node's own and cleared: up's plan warns, as Slurm's plan warns of a workspace
    under /tmp; a folder that lasts gets no such word."""
    spec = SPEC + ("workspace: {host_path: /tmp/job}\n" if given == "workspace.host_path" else "")
    project = _project(tmp_path / "team", spec)
    done = nodeweave("up", *target, "--dry-run", cwd=project)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stdout.splitlines() + done.stderr.splitlines()
              if f"{given} {folder} is in /" in line]
    assert len(warned) == 1 and "warning:" in warned[0] and "clears" in warned[0], done.stdout
    assert "--remote-dir /scratch/team" in warned[0]
    lasting = [word.replace(folder, "/srv/job") for word in target] if given == "--remote-dir" else \
        [*target, "--remote-dir", "/srv/job"]
    kept = nodeweave("up", *lasting, "--dry-run", cwd=project)
    assert kept.returncode == 0 and "keeps to itself" not in kept.stdout + kept.stderr, kept.stderr


@pytest.mark.parametrize("extra", [[], ["--dry-run", "-o", "json"], ["--check"]])
@pytest.mark.parametrize("given", ["--out", "--spec", "--out-relative"])
def test_n2_a_name_the_rendered_headers_quote_that_is_not_utf8_is_named_with_its_option(tmp_path, given, extra):
    """Every rendered file's header quotes the spec's file name and --out: a byte there that is not UTF-8 is refused
    in one line naming the option and the name as the shell writes it, never Python's codec text."""
    project = _project(tmp_path / "team")
    odd = os.fsdecode(b"o\xff")
    if given == "--spec":
        (project / f"spec{odd}.yaml").write_text(SPEC)
        argv, shown = ["--spec", f"spec{odd}.yaml"], "--spec speco$'\\xff'.yaml: the file's name is not UTF-8 text"
    elif given == "--out":
        argv, shown = ["--out", str(tmp_path / odd)], f"--out {tmp_path}/o$'\\xff': the folder's name is not UTF-8"
    else:
        argv, shown = ["--out", f"../{odd}"], "--out ../o$'\\xff': the folder's name is not UTF-8"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = nodeweave("render", "all", *argv, *extra, cwd=project, env=env, text=False)
    said = done.stderr.decode("utf-8", "replace")
    assert done.returncode == EXIT_USAGE, said
    assert said.count("\n") == 1 and shown in said, said
    assert "codec" not in said and "Traceback" not in said
    assert ("rename the spec" if given == "--spec" else "give another --out") in said
    assert not (tmp_path / odd).exists() and not (project / "compose").exists()


RECOVERY = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1"}
entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


def _slurm(nodes):
    nodelist = f"gpu[01-0{nodes}]"
    return {"SLURM_JOB_ID": "99", "SLURM_NODEID": "0", "SLURM_NNODES": str(nodes), "SLURM_JOB_NODELIST": nodelist,
            "SLURM_STEP_NODELIST": nodelist}


def _hostfile(nodes):
    path = Path(os.getcwd()) / "hosts"
    path.write_text("".join(f"{name}\n" for name in [socket.gethostname(), "peer1", "peer2"][:nodes]))
    return {"NODEWEAVE_HOSTFILE": str(path)}


@pytest.mark.parametrize("scheduler, short, count, remedy", [
    (_slurm, "SLURM_NNODES=2", "SLURM_NNODES=3", "sbatch --nodes 3"),
    (_hostfile, "hosts in hostfile", "hosts in hostfile", "a hosts file of 3 hosts"),
    (lambda nodes: {"PET_NNODES": str(nodes), "PET_NODE_RANK": "0", "MASTER_ADDR": "gpu01"}, "PET_NNODES=2",
     "PET_NNODES=3", "numNodes: 3"),
])
def test_n4_under_recovery_the_schedulers_count_is_weighed_against_every_container_once(
        entrypoint, scheduler, short, count, remedy):
    """With spares, a scheduler's node count is every container: one short of nodes + spares is refused (its remedy
    in that scheduler's words) and no note of the same plan calls it agreeing with the training count; a right one is
    said to agree with nodes + spares, never warned as overridden by the training count."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], {**RECOVERY, **scheduler(2)})
    said = out + err
    assert code == 3, said
    assert f"node count sources disagree: {short}" in said and "recovery's containers are 3" in said
    assert remedy in said and ("sbatch" not in said or scheduler is _slurm), said
    assert not [line for line in said.splitlines() if "nnodes:" in line and "agrees" in line], said
    code, out, err = entrypoint(["--explain", "--", "train.py"], {**RECOVERY, **scheduler(3)})
    said = out + err
    assert "disagree" not in said, said
    agreeing = [line for line in said.splitlines() if "nnodes:" in line and "agrees" in line]
    assert agreeing and all("agrees with recovery's containers, 3 (2 training + 1 spare(s))" in line
                            for line in agreeing), said
    assert any(count in line for line in agreeing), said
    assert not [line for line in said.splitlines() if "nnodes:" in line and "overrides" in line], said
