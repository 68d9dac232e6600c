"""The CI gate (tests/ci_gate.py): with CI=true a skip for want of a tool .ci/ installs fails, naming it.

The live check runs pytest itself on a real test that needs openssl, with a
PATH that has everything but openssl: off CI it skips with its reason, with
CI=true it fails and the failure names the tool.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ci_gate

REPO = Path(__file__).resolve().parents[1]
OPENSSL_TEST = "tests/test_entrypoint_topology.py::test_statefulset_replicas_over_tls_with_the_service_account_ca"


def path_without(folder: Path, *tools: str) -> str:
    """A PATH of one folder linking every program on this PATH except ``tools``: a machine where they broke."""
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name not in tools and not (folder / name).exists():
                (folder / name).symlink_to(Path(directory) / name)
    return str(folder)


def _pytest(nodeid: str, env: dict) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", nodeid],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def test_a_tool_missing_on_ci_fails_naming_it_and_skips_with_the_reason_elsewhere(tmp_path):
    env = {**os.environ, "PATH": path_without(tmp_path / "bin", "openssl")}
    env.pop("CI", None)
    off_ci = _pytest(OPENSSL_TEST, env)
    assert off_ci.returncode == 0 and "1 skipped" in off_ci.stdout, off_ci.stdout[-2000:]
    on_ci = _pytest(OPENSSL_TEST, {**env, "CI": "true"})
    assert on_ci.returncode == 1 and "1 failed" in on_ci.stdout, on_ci.stdout[-2000:]
    assert "installs what it needs: openssl (.ci/setup-tools.sh)" in on_ci.stdout
    assert "openssl is needed to make a test certificate" in on_ci.stdout  # the skip's own reason is kept


def test_skips_that_are_not_about_a_tool_stay_skips():
    assert ci_gate.tools_for("tests/e2e/test_docker_path.py::test_a_client_from_23_on_without_buildx_is_refused_"
                             "with_the_reason", ["engine", "docker"]) == []
    assert ci_gate.tools_for("tests/test_bench.py::test_plot_is_a_png", []) == []
    assert ci_gate.tools_for("tests/test_gpu_proof.py::test_the_proof_starts_and_skips_every_gpu_step_on_a_cpu_host",
                             []) == []


def test_a_test_names_every_tool_it_needs():
    assert ci_gate.tools_for("tests/e2e/test_docker_path.py::test_compose_local_runs_a_two_node_gloo_job",
                             ["engine", "docker"]) == ["dockerd (.ci/setup-docker.sh)"]
    tools = ci_gate.tools_for("tests/test_sync_ssh.py::test_x", ["engine", "slow"])
    assert [tool.split(" ")[0] for tool in tools] == ["podman", "the", "Debian's"]


def test_only_tests_that_share_the_machines_state_run_one_at_a_time():
    """Engines, their images and networks, netns/nft rules and the one Slurm are shared; a kustomize
    build, checkov or the launchers' parsers are not, and run beside the pure tests."""
    shared = ci_gate.shares_machine_state
    assert shared("tests/test_images.py::test_x", ["engine"]) and shared("tests/e2e/test_elastic.py::test_x", [])
    assert shared("tests/test_slurm_target.py::test_check_on_the_slurm_allocation", [])
    assert shared("tests/e2e/test_exchange.py::test_x", []) and shared("tests/test_sync_ssh.py::test_x", [])
    for nodeid in ("tests/test_manifests.py::test_x", "tests/test_scanners.py::test_checkov_finds_x",
                   "tests/test_properties.py::test_x", "tests/test_launcher_options.py::test_x",
                   "tests/test_slurm.py::test_bash_parses_and_shellcheck_passes_x", "tests/test_cli.py::test_x"):
        assert not shared(nodeid, []), nodeid
    assert set(ci_gate.SHARED_STATE) <= set(ci_gate.CI_TOOLS)


def test_each_file_of_real_tool_tests_is_a_group_and_every_slurm_test_is_one_group():
    """A file's tests share its fixed names and module clusters, so they stay in one worker; different files
    run beside each other; Slurm tests share the one local Slurm wherever they are; a pure test has no group."""
    group = ci_gate.group_of
    local = group("tests/e2e/test_cluster_local.py::test_a", ["engine"])
    assert local == "real-tools:e2e/test_cluster_local"
    assert group("tests/e2e/test_cluster_local.py::test_b[x@y]", ["engine"]) == local
    assert group("tests/e2e/test_stalls.py::test_a", ["engine"]) not in (None, local)
    assert group("tests/test_images.py::test_a@real-tools:test_images", ["engine"]) == "real-tools:test_images"
    slurm = {group("tests/test_slurm_target.py::test_check_on_the_slurm_allocation", []),
             group("tests/test_slurm_runtimes.py::test_apptainer_up_run_status_down_on_slurm", []),
             group("tests/test_slurm.py::test_some_new_one", [], ["tmp_path", "slurm"])}
    assert slurm == {ci_gate.SLURM_GROUP}
    assert group("tests/test_cli.py::test_x", []) is None and group("tests/test_manifests.py::test_x", []) is None
    assert ci_gate.without_group("tests/test_x.py::test_y[a@b]") == "tests/test_x.py::test_y[a@b]"
    assert ci_gate.without_group("tests/test_x.py::test_y[a]@real-tools-slurm") == "tests/test_x.py::test_y[a]"


@pytest.mark.parametrize("value, expected", [("true", True), ("TRUE", True), ("1", True), ("", False),
                                             ("false", False), ("0", False)])
def test_ci_is_read_from_the_environment(value, expected, monkeypatch):
    monkeypatch.setenv("CI", value)
    assert ci_gate.on_ci() is expected


def test_every_pattern_of_the_table_still_names_a_test():
    """A renamed test would silently leave the table: each node-id pattern must match a collected test."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    nodeids = [line for line in out.stdout.splitlines() if "::" in line]
    assert len(nodeids) > 1000, out.stdout[-2000:] + out.stderr[-2000:]
    stale = [(tool, pattern) for tool, pattern in ci_gate.patterns()
             if not pattern.startswith("@") and not any(ci_gate._matches(pattern, nodeid, []) for nodeid in nodeids)]
    assert stale == [], stale
