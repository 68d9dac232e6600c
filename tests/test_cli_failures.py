"""A missing tool, a cluster that is not up, an unreachable API, an unwritable --out: one line, a documented exit.

Each case replays a mistake from issue 20 through the real command (a subprocess, the real
podman/kubectl/ssh where the case needs them) and checks the exit code, that stderr is one
line naming what to do, and that no traceback or raw tool log line is all the user sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.errors import EXIT_ENVIRONMENT, EXIT_USAGE
from nodeweave.failures import from_os_error, tool_message, writable_dir
from nodeweave.errors import EnvironmentProblem, UsageError
from nodeweave.remote import make_target
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = """name: nwcli-absent
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
kubernetes: {namespace: nwcli-none}
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    return tmp_path


def nodeweave(project, *args, path="/usr/bin:/bin:/usr/local/bin", **env):
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=project, timeout=120,
                          env={"COLUMNS": "200", "PATH": path, "HOME": home_beside(project), **env})


def one_line(done) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("nodeweave: error: "), lines[0]
    return lines[0]


def test_no_engine_on_path_is_exit_3_before_anything_is_announced(project):
    done = nodeweave(project, "run", "--", "train.py", path=str(Path(sys.executable).parent))
    assert done.returncode == EXIT_ENVIRONMENT, done.stderr
    assert "neither podman nor docker" in one_line(done)
    assert done.stdout == "" and not (project / "runs").exists()


def test_a_dry_run_without_an_engine_still_prints_the_commands(project):
    done = nodeweave(project, "run", "--dry-run", path=str(Path(sys.executable).parent))
    assert done.returncode == 0, done.stderr
    assert "exec nwcli-absent-0 nodeweave-entrypoint" in done.stdout


@pytest.mark.parametrize("verb", ["run", "logs", "stop", "shell"])
@pytest.mark.engine
def test_a_verb_before_up_names_nodeweave_up(project, verb):
    done = nodeweave(project, verb, "--engine", "podman")
    assert done.returncode == EXIT_ENVIRONMENT, done.stderr
    line = one_line(done)
    assert "nwcli-absent is not up" in line and "`nodeweave up" in line and "no such container" not in line
    assert not (project / "runs").exists()


@pytest.mark.engine
def test_status_of_a_down_cluster_says_down_not_the_engines_words(project):
    done = nodeweave(project, "status", "--engine", "podman")
    assert done.returncode == EXIT_ENVIRONMENT, done.stderr  # nothing up: exit 3, as every verb (issue 43, row 22)
    assert "no such container" not in done.stdout + done.stderr
    # every node down: no table, one line naming them as ranges (walk6 W4/W5)
    line = one_line(done)
    assert done.stdout == "" and "node-0 (missing), node-1 (missing)" in line, done.stdout + done.stderr
    assert "`nodeweave up --hold` starts it, then `nodeweave status`" in line  # walk5 W46


def test_status_without_a_kubernetes_cluster_is_one_line_without_klog(project):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (`bash .ci/setup-tools.sh` installs it, as CI does)")
    done = nodeweave(project, "status", "-t", "kubernetes", KUBECONFIG=str(project / "no-kubeconfig"))
    assert done.returncode == EXIT_ENVIRONMENT, done.stderr
    line = one_line(done)
    assert "memcache.go" not in line and "cannot reach a Kubernetes cluster" in line


def test_kubectls_klog_lines_become_their_error_text():
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (`bash .ci/setup-tools.sh` installs it, as CI does)")
    env = {**os.environ, "KUBECONFIG": "/nonexistent/kubeconfig"}
    raw = subprocess.run(["kubectl", "get", "pods"], capture_output=True, text=True, env=env, timeout=60).stderr
    assert "memcache.go" in raw  # the real tool's real words: the case this guards against
    message = tool_message(raw)
    assert "memcache.go" not in message and "E1" not in message[:3]
    assert "refused" in message


@pytest.mark.parametrize("out", ["/proc/nw", "{file}/x", "/sys/nw"])
def test_render_into_an_unusable_out_is_exit_2_and_writes_nothing(project, out):
    (project / "a-file").write_text("mine\n")
    target = out.format(file=project / "a-file")
    done = nodeweave(project, "render", "compose", "--out", target)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "--out" in one_line(done) and done.stdout == ""
    assert (project / "a-file").read_text() == "mine\n"


def test_an_unwritable_folder_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("this user (root) can write a 0500 folder")
    with pytest.raises(UsageError, match="not writable"):
        writable_dir(locked / "out", "--out")


def test_an_unresolvable_ssh_host_is_not_retried():
    if shutil.which("ssh") is None:
        pytest.skip("ssh is not installed")
    node = make_target("ssh", "nosuchhost.invalid")
    done = subprocess.run(node.exec_argv(["true"], stdin=False), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 255 and "resolve" in done.stderr.lower()
    assert not node.transient(done.returncode, done.stderr)
    assert node.transient(255, "Connection closed by 10.0.0.2 port 22")  # a dropped link still is


def test_a_program_that_cannot_start_is_a_missing_tool_and_a_path_is_usage():
    try:
        subprocess.run(["nodeweave-no-such-tool"])
    except OSError as err:
        problem = from_os_error(err)
    assert isinstance(problem, EnvironmentProblem) and "nodeweave-no-such-tool is not on PATH" in str(problem)
    try:
        open("/nonexistent-dir/file", "w")
    except OSError as err:
        problem = from_os_error(err)
    assert isinstance(problem, UsageError) and "/nonexistent-dir/file" in str(problem)
