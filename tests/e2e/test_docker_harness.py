"""The docker harness's skip reason names what is missing (no engine is needed to check it)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import docker_harness

REPO = Path(__file__).resolve().parents[2]


def test_with_no_docker_client_the_reason_says_none_is_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no docker on PATH
    monkeypatch.setattr(docker_harness, "DEBIAN_CLIENT", tmp_path / "absent" / "docker")
    setup, reason = docker_harness.find_docker(tmp_path / "work")
    assert setup is None
    assert reason.startswith("no docker client is installed") and "setup-docker.sh" in reason, reason
    assert "lacks buildx" not in reason, reason  # nothing was tried, so nothing lacks anything


def test_a_client_without_buildkit_is_named_with_its_version():
    reason = docker_harness.no_client_reason(["/usr/local/bin/docker 28.1.1"])
    assert "tried: /usr/local/bin/docker 28.1.1; each lacks buildx and is 23.0 or newer" in reason, reason


def test_without_dockerd_the_docker_tests_skip_before_any_wheelhouse_is_made(tmp_path):
    """Where dockerd does not answer, every docker-path test skips with the reason and nothing is set up
    for it first: the session's ``wheelhouse`` (``.ci/wheelhouse.sh`` filling the checkout's wheelhouse/, a
    failure offline) waits for ``docker``. pytest's --setup-show lists each fixture it sets up."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI",) and not k.startswith("PYTEST_")}
    env["NODEWEAVE_DOCKER_HOST"] = f"unix://{tmp_path}/no-dockerd.sock"  # whatever client is here, no daemon
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-rs", "-p", "no:cacheprovider",
                          "--setup-show", "tests/e2e/test_docker_path.py"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]
    summary = out.stdout.strip().splitlines()[-3:]
    assert any(re.fullmatch(r"\d+ skipped in [\d.]+s( \(.*\))?", line.strip("= ")) for line in summary), summary
    set_up = [line.split()[2] for line in out.stdout.splitlines() if line.strip().startswith("SETUP")]
    assert "wheelhouse" not in set_up and "docker_base" not in set_up, set_up


def test_a_daemon_that_does_not_answer_is_named_with_the_clients_words(tmp_path, monkeypatch):
    """A stand-in client that fails as docker 28's does on a dead socket: the daemon line, then the
    --format template's complaint. The reason quotes the daemon line."""
    client = tmp_path / "docker"
    client.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///nowhere.sock. Is the docker "
                      "daemon running?' >&2\necho 'template: :1:2: executing \"\" at <.ServerVersion>: reflect: "
                      "indirection through nil pointer' >&2\nexit 1\n")
    client.chmod(0o755)
    monkeypatch.setattr(docker_harness, "UNAVAILABLE", tmp_path / "no-such-note")
    reason = docker_harness.daemon_problem(client, "unix:///nowhere.sock")
    assert "(Cannot connect to the Docker daemon at unix:///nowhere.sock" in reason and "template" not in reason, reason
