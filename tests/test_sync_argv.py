"""Argv built for every transport: exact lists, no shell strings, names checked first."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from nodeweave.errors import UsageError
from nodeweave.sync.rsh import rewrite
from nodeweave.sync.targets import make_target
from nodeweave.sync.transport import (RsyncOptions, TransportOptions, probe_argv, remote_argv,
                                      rsh_command, rsync_argv, tar_extract_argv)

OPTS = TransportOptions(python="/opt/py/bin/python")


def test_podman_and_docker_exec_pass_argv_untouched():
    for kind in ("podman", "docker"):
        t = make_target(kind, "trainer-0")
        assert remote_argv(t, ["tar", "-x", "-C", "/workspace"]) == [
            kind, "exec", "-i", "trainer-0", "tar", "-x", "-C", "/workspace"]
        assert rsh_command(t) == f"{kind} exec -i"


def test_kubectl_and_oc_put_namespace_container_and_double_dash():
    for kind in ("kubectl", "oc"):
        t = make_target(kind, "llama-1", namespace="ml", container="trainer")
        assert remote_argv(t, ["cat", "--", "/workspace/x"], OPTS) == [
            kind, "exec", "-i", "-n", "ml", "-c", "trainer", "llama-1", "--", "cat", "--", "/workspace/x"]


def test_kube_context_comes_before_exec():
    t = make_target("kubectl", "llama-0", namespace="ml")
    opts = TransportOptions(kube_context="prod-east", python="/py")
    assert remote_argv(t, ["true"], opts)[:4] == ["kubectl", "--context", "prod-east", "exec"]


def test_kubectl_rsh_goes_through_the_wrapper_that_inserts_double_dash():
    t = make_target("kubectl", "llama-0", namespace="ml", container="trainer")
    assert rsh_command(t, OPTS) == (
        "/opt/py/bin/python -m nodeweave.sync.rsh kubectl exec -i -n ml -c trainer ::")
    # what rsync appends after the rsh: [-l user] host command...
    assert rewrite(["kubectl", "exec", "-i", "-n", "ml", "::", "llama-0", "rsync", "--server", "."]) == [
        "kubectl", "exec", "-i", "-n", "ml", "llama-0", "--", "rsync", "--server", "."]
    assert rewrite(["oc", "exec", "-i", "::", "-l", "me", "llama-0", "rsync"]) == [
        "oc", "exec", "-i", "llama-0", "--", "rsync"]


def test_rsh_wrapper_refuses_a_malformed_call_with_exit_2():
    out = subprocess.run([sys.executable, "-m", "nodeweave.sync.rsh", "kubectl", "exec"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "expected '::'" in out.stderr


def test_rsync_quotes_a_python_path_with_spaces_its_own_way():
    t = make_target("kubectl", "llama-0")
    rsh = rsh_command(t, TransportOptions(python="/home/me/my env/bin/python"))
    assert rsh.startswith("'/home/me/my env/bin/python' -m nodeweave.sync.rsh")


def test_ssh_joins_the_remote_command_with_shlex_quoting():
    t = make_target("ssh", "me@gpu01")
    argv = remote_argv(t, ["sh", "-c", "echo $1", "sh", "/work space"])
    assert argv[0] == "ssh" and "BatchMode=yes" in argv
    assert argv[-3:-1] == ["me@gpu01", "--"]
    assert shlex.split(argv[-1]) == ["sh", "-c", "echo $1", "sh", "/work space"]


def test_ssh_options_are_checked():
    rsh = rsh_command(make_target("ssh", "gpu01"), TransportOptions(ssh_options=("ConnectTimeout=3",)))
    assert rsh.index("ConnectTimeout=3") < rsh.index("ConnectTimeout=10")  # ssh keeps the first value
    with pytest.raises(UsageError, match="--ssh-option 'ProxyCommand=sh -c x'"):
        TransportOptions(ssh_options=("ProxyCommand=sh -c x",))


def test_rsync_argv_for_a_container():
    t = make_target("podman", "nw-0")
    argv = rsync_argv(t, "/src/proj", "/workspace", ["--filter=- *.pt"],
                      RsyncOptions(delete=True, dry_run=True))
    assert argv[0] == "rsync"
    assert argv[argv.index("--rsh") + 1] == "podman exec -i"
    for flag in ("--recursive", "--links", "--perms", "--times", "--blocking-io", "--stats",
                 "--itemize-changes", "--whole-file", "--delete", "--dry-run", "--filter=- *.pt"):
        assert flag in argv
    assert "--archive" not in argv and "-a" not in argv  # no owners/groups: pods can't chown
    assert argv[-2:] == ["/src/proj/", "nw-0:/workspace/"]


def test_rsync_argv_defaults_are_safe_and_ssh_keeps_delta_transfer():
    argv = rsync_argv(make_target("ssh", "gpu01"), "/src", "/workspace", [])
    assert "--delete" not in argv and "--dry-run" not in argv and "--whole-file" not in argv
    assert argv[-1] == "gpu01:/workspace/"
    with pytest.raises(UsageError, match="absolute"):
        rsync_argv(make_target("ssh", "gpu01"), "src", "/workspace", [])


def test_probe_and_tar_keep_dest_as_its_own_argument():
    t = make_target("docker", "c1")
    argv = probe_argv(t, "/workspace")
    assert argv[:4] == ["docker", "exec", "-i", "c1"]
    assert argv[4:6] == ["sh", "-c"] and argv[-3:] == ["sh", "/workspace", "make"]
    assert "/workspace" not in argv[6]  # the script is constant; DEST is $1
    assert probe_argv(t, "/workspace", dry_run=True)[-1] == "dry"  # a dry run creates nothing
    assert tar_extract_argv(t, "/workspace") == [
        "docker", "exec", "-i", "c1", "tar", "-x", "-o", "-f", "-", "-C", "/workspace"]
