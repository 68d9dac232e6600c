"""The docker harness's skip reason names what is missing (no engine is needed to check it)."""

import docker_harness


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
