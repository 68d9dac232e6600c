"""``nodeweave.remote``: the exact argv of every transport, its names and its table.

No cluster, engine or sshd is needed: each class only builds argv. The
kubectl/oc rsync wrapper runs under real rsync in tests/test_sync_engine.py.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from nodeweave.errors import UsageError
from nodeweave.remote import (ALIASES, KINDS, RemoteOptions, cluster_kind, engine_kind, kind_class, make_target,
                              parse_target, pod_kind)
from nodeweave.remote.rsh import rewrite

OPTS = RemoteOptions(python="/opt/py/bin/python")
SSH_O = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=15",
         "-o", "ServerAliveCountMax=4"]
SHELL = ["sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -l; exec sh -l"]


def test_the_table_holds_every_kind_and_alias():
    assert list(KINDS) == ["podman", "docker", "kubectl", "oc", "ssh", "ssh+podman", "ssh+docker", "srun"]
    assert ALIASES == {"container": "podman", "pod": "kubectl", "k8s": "kubectl", "kube": "kubectl",
                       "openshift": "oc"}
    for alias, kind in ALIASES.items():
        assert kind_class(alias) is KINDS[kind]
    with pytest.raises(UsageError, match="target kind 'ftp' is not accepted: one of podman, docker"):
        kind_class("ftp")


@pytest.mark.parametrize("kind", ["podman", "docker"])
def test_engine_exec_logs_and_shell(kind):
    t = make_target(kind, "trainer-0")
    assert t.exec_argv(["tar", "-x", "-C", "/workspace"]) == [
        kind, "exec", "-i", "trainer-0", "tar", "-x", "-C", "/workspace"]
    assert t.exec_argv(["true"], stdin=False) == [kind, "exec", "trainer-0", "true"]
    assert t.shell_argv() == [kind, "exec", "-i", "-t", "trainer-0", *SHELL]
    assert t.logs_argv() == [kind, "logs", "-f", "trainer-0"]
    assert t.logs_argv(follow=False) == [kind, "logs", "trainer-0"]
    assert t.rsh() == f"{kind} exec -i" and t.rsync_host == "trainer-0"
    assert t.label == f"{kind}:trainer-0" and t.host == "trainer-0"
    assert t.unreachable(125, "") and not t.transient(125, "Error: container is not running")


def test_srun_is_a_one_task_step_beside_the_others():
    t = make_target("srun", "1234/gpu07")
    assert t.exec_argv(["tar", "-x"]) == ["srun", "--jobid=1234", "--overlap", "--nodes=1", "--ntasks=1",
                                          "--nodelist=gpu07", "--quiet", "tar", "-x"]
    assert t.exec_argv(["true"], stdin=False)[-2:] == ["--input=none", "true"]
    assert "--pty" in t.shell_argv() and t.label == "srun:1234/gpu07" and (t.job, t.host) == ("1234", "gpu07")
    with pytest.raises(UsageError, match="rsync cannot reach"):
        t.rsh()
    with pytest.raises(UsageError, match="srun target 'gpu07' is not accepted: JOBID/NODE"):
        make_target("srun", "gpu07")


@pytest.mark.parametrize("kind", ["kubectl", "oc"])
def test_kube_exec_puts_namespace_container_and_double_dash(kind):
    t = make_target(kind, "llama-1", namespace="ml", container="trainer", options=OPTS)
    assert t.exec_argv(["cat", "--", "/workspace/x"]) == [
        kind, "exec", "-i", "-n", "ml", "-c", "trainer", "llama-1", "--", "cat", "--", "/workspace/x"]
    assert t.shell_argv() == [kind, "exec", "-i", "-t", "-n", "ml", "-c", "trainer", "llama-1", "--", *SHELL]
    assert t.logs_argv() == [kind, "logs", "-f", "-n", "ml", "-c", "trainer", "llama-1"]
    assert t.rsh() == f"/opt/py/bin/python -m nodeweave.remote.rsh {kind} exec -i -n ml -c trainer ::"
    # each the address that reaches it (replay11 R2: an oc pod is oc:..., not kubectl's pod:...)
    assert t.label == f"{'pod' if kind == 'kubectl' else 'oc'}:ml/llama-1[trainer]" and t.host == "llama-1"
    assert t.transient(1, "error: unable to upgrade connection: EOF")
    assert not t.transient(1, 'Error from server (NotFound): pods "llama-1" not found')
    assert t.unreachable(1, 'Error from server (NotFound): pods "llama-1" not found')


def test_kube_context_comes_before_the_verb():
    t = make_target("kubectl", "llama-0", namespace="ml",
                    options=RemoteOptions(kube_context="prod-east", python="/py"))
    assert t.exec_argv(["true"])[:4] == ["kubectl", "--context", "prod-east", "exec"]
    assert t.logs_argv()[:4] == ["kubectl", "--context", "prod-east", "logs"]
    assert kind_class("oc").cli_argv("get", t.options, "ml") == ["oc", "--context", "prod-east", "get",
                                                                 "-n", "ml"]


def test_the_rsh_wrapper_puts_the_pod_and_double_dash_where_kubectl_wants_them():
    assert rewrite(["kubectl", "exec", "-i", "-n", "ml", "::", "llama-0", "rsync", "--server", "."]) == [
        "kubectl", "exec", "-i", "-n", "ml", "llama-0", "--", "rsync", "--server", "."]
    assert rewrite(["oc", "exec", "-i", "::", "-l", "me", "llama-0", "rsync"]) == [
        "oc", "exec", "-i", "llama-0", "--", "rsync"]
    out = subprocess.run([sys.executable, "-m", "nodeweave.remote.rsh", "kubectl", "exec"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "expected '::'" in out.stderr


def test_rsync_quotes_a_python_path_with_spaces_its_own_way():
    t = make_target("kubectl", "llama-0", options=RemoteOptions(python="/home/me/my env/bin/python"))
    assert t.rsh().startswith("'/home/me/my env/bin/python' -m nodeweave.remote.rsh")


def test_ssh_joins_the_remote_command_with_shlex_quoting():
    t = make_target("ssh", "me@gpu01")
    argv = t.exec_argv(["sh", "-c", "echo $1", "sh", "/work space"])
    assert argv[:-3] == ["ssh", *SSH_O] and argv[-3:-1] == ["me@gpu01", "--"]
    assert shlex.split(argv[-1]) == ["sh", "-c", "echo $1", "sh", "/work space"]
    assert t.exec_argv(["true"], stdin=False) == ["ssh", *SSH_O, "-n", "me@gpu01", "--", "true"]
    assert t.shell_argv() == ["ssh", *SSH_O, "-t", "me@gpu01"]
    assert t.rsh() == " ".join(["ssh", *SSH_O]) and t.rsync_host == "me@gpu01"
    assert t.host == "gpu01" and t.label == "ssh:me@gpu01"
    assert t.transient(255, "") and t.unreachable(255, "") and not t.transient(127, "")
    with pytest.raises(UsageError, match="ssh:me@gpu01 is a host, not a container"):
        t.logs_argv()


def test_ssh_options_come_first_and_are_checked():
    t = make_target("ssh", "gpu01", options=RemoteOptions(ssh_options=("ConnectTimeout=3",)))
    assert t.rsh().index("ConnectTimeout=3") < t.rsh().index("ConnectTimeout=10")  # ssh keeps the first
    with pytest.raises(UsageError, match="--ssh-option 'ProxyCommand=sh -c x'"):
        RemoteOptions(ssh_options=("ProxyCommand=sh -c x",))
    with pytest.raises(UsageError, match="--kube-context 'a b'"):
        RemoteOptions(kube_context="a b")


@pytest.mark.parametrize("kind", ["ssh+podman", "ssh+docker"])
def test_a_container_on_a_host_over_ssh(kind):
    engine = kind.split("+")[1]
    t = parse_target(f"{kind}:me@gpu01/trainer")
    argv = t.exec_argv(["python3", "-c", "print('a b')"])
    assert argv[:-1] == ["ssh", *SSH_O, "me@gpu01", "--"]
    assert shlex.split(argv[-1]) == [engine, "exec", "-i", "trainer", "python3", "-c", "print('a b')"]
    shell = t.shell_argv()
    assert shell[:-1] == ["ssh", *SSH_O, "-t", "me@gpu01", "--"]
    assert shlex.split(shell[-1]) == [engine, "exec", "-i", "-t", "trainer", *SHELL]
    logs = t.logs_argv()
    assert logs[:-1] == ["ssh", *SSH_O, "-n", "me@gpu01", "--"]
    assert shlex.split(logs[-1]) == [engine, "logs", "-f", "trainer"]
    # rsync appends "trainer rsync --server ...": ssh runs `<engine> exec -i trainer rsync --server ...`
    assert t.rsh() == " ".join(["ssh", *SSH_O, "me@gpu01", engine, "exec", "-i"])
    assert t.rsync_host == "trainer" and t.host == "gpu01" and t.label == f"{kind}:me@gpu01/trainer"
    assert t.unreachable(125, "") and t.transient(255, "") and not t.transient(125, "")
    for bad in ("gpu01", "gpu01/", "gpu;01/trainer", "gpu01/-it"):
        with pytest.raises(UsageError, match="is not accepted"):
            parse_target(f"{kind}:{bad}")


def test_pod_and_engine_kinds_are_checked_by_the_table():
    assert pod_kind("oc") == "oc" and pod_kind("pod") == "kubectl"
    assert cluster_kind(openshift=True) == "oc" and cluster_kind(openshift=False) == "kubectl"
    assert engine_kind("docker") == "docker" and engine_kind("container") == "podman"
    with pytest.raises(UsageError, match="--kube-cli 'ssh' is not accepted: kubectl or oc"):
        pod_kind("ssh")
    with pytest.raises(UsageError, match="--engine 'lxc' is not accepted: podman or docker"):
        engine_kind("lxc")
