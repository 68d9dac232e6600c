"""``nodeweave sync`` refuses bad input with a message and a documented exit code, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import cli_run
import pytest
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

pytestmark = pytest.mark.usefixtures("own_digest_cache")



def run(*args: str, cwd=None, env=None) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, "sync", *args], cwd=cwd,
                          env=env, timeout=120)


@pytest.mark.parametrize("args,code,message", [
    (["SRC", "/", "--node", "podman:c1"], 2, "DEST '/' is not accepted"),
    (["SRC", "/etc/", "--node", "podman:c1"], 2, "system directory"),
    (["SRC", "~/work", "--node", "podman:c1"], 2, "absolute path"),
    (["SRC", "/w/../etc", "--node", "podman:c1"], 2, "'..'"),
    (["SRC", "/workspace", "--node", "podman:c1;reboot"], 2, "container name 'c1;reboot' is not accepted"),
    (["SRC", "/workspace", "--node", "-oProxyCommand=x"], 2, "reads as `nodeweave sync`'s option -o with its value joined, not a value"),  # A52
    (["SRC", "/workspace", "--node", "ssh:-oProxyCommand=x"], 2, "is not accepted"),
    (["SRC", "/workspace", "--node", "pod:Bad_Pod"], 2, "DNS-1123 subdomain"),
    (["SRC", "/workspace", "--node", "pod:llama-0", "-n", "Bad"], 2, "namespace 'Bad'"),
    (["SRC", "/workspace", "--node", "ssh:gpu01", "--ssh-option", "ProxyCommand=nc x"], 2, "--ssh-option"),
    (["SRC", "/workspace", "--node", "podman:c1", "--node", "podman:c1"], 2, "--node podman:c1 is given 2 times"),
    (["SRC", "/workspace", "--node", "podman:c1", "--exclude", "/"], 2, "matches nothing useful"),
    (["SRC", "/workspace"], 2, "no targets"),
    (["SRC"], 2, "DEST is missing"),
    (["NOPE", "/workspace", "--node", "podman:c1"], 2, "SRC 'NOPE' does not exist"),
    (["SRC", "/workspace", "--node", "podman:c1", "--statefulset", "Llama", "--replicas", "2"], 2,
     "StatefulSet name 'Llama'"),
    (["SRC", "/workspace", "--node", "podman:c1", "--engine", "lxc", "--compose-project", "p"], 2, "--engine 'lxc'"),
])
def test_bad_input_exits_2_naming_the_value(tmp_path, args, code, message):
    (tmp_path / "SRC").mkdir()
    out = run(*args, cwd=tmp_path)
    assert out.returncode == code, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr


def test_a_bad_ignore_file_line_is_named(tmp_path):
    (tmp_path / ".nodeweaveignore").write_text("ok/\n/\n")
    out = run(str(tmp_path), "/workspace", "--node", "podman:c1", "--dry-run")
    assert out.returncode == 2 and f"{tmp_path / '.nodeweaveignore'}:2" in out.stderr


@pytest.mark.parametrize("args,message", [
    (["SRC", "/workspace", "--node", "podman:c1", "--exclude", "/"], "--exclude: pattern '/'"),
    (["SRC", "/workspace", "--node", "podman:c1;reboot"], "container name 'c1;reboot'"),
    (["SRC", "/workspace", "--node", "ssh:-oProxyCommand=x"], "is not accepted"),
    (["SRC", "/etc", "--node", "podman:c1"], "DEST '/etc' is not accepted"),
    (["SRC", "/workspace", "--node", "podman:c1", "--node", "podman:c1"], "--node podman:c1 is given 2 times"),
    (["SRC", "/workspace", "--node", "podman:c1", "--statefulset", "Llama"], "StatefulSet name 'Llama'"),
])
def test_bad_input_is_judged_before_the_machine_is_asked_for_tools(tmp_path, args, message):
    """Issue 9: with no podman, rsync, kubectl or git on PATH, a mistake is still exit 2, not 3."""
    (tmp_path / "SRC").mkdir()
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": home_beside(tmp_path)}
    out = run(*args, cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr


def test_a_bad_ignore_file_line_beats_a_missing_engine(tmp_path):
    (tmp_path / ".nodeweaveignore").write_text("ok/\n/\n")
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": home_beside(tmp_path)}
    out = run(str(tmp_path), "/workspace", "--node", "podman:c1", env=env)
    assert out.returncode == 2 and f"{tmp_path / '.nodeweaveignore'}:2" in out.stderr, out.stderr


def test_missing_tools_exit_3(tmp_path):
    """rsync is needed here only when asked for: a stream or tar needs just the target's exec channel."""
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": home_beside(tmp_path)}
    (tmp_path / "train.py").write_text("print('train')\n")  # a SRC with nothing to send is refused first (exit 2)
    out = run(str(tmp_path), "/workspace", "--node", "podman:c1", "--method", "rsync", env=env)
    assert out.returncode == 3 and "rsync is not installed" in out.stderr
    for extra in ([], ["--tar"]):
        out = run(str(tmp_path), "/workspace", "--node", "podman:c1", *extra, env=env)
        assert out.returncode == 3 and "podman is not on PATH" in out.stderr and "podman:c1" in out.stderr
    out = run(str(tmp_path), "/workspace", "--node", "podman:c1", "--method", "scp", env=env)
    assert out.returncode == 2 and "--method 'scp' is not accepted: auto | stream | rsync | tar" in out.stderr


def test_with_no_target_sync_goes_where_every_verb_goes(tmp_path):
    """With no target flags and nothing up, the default cluster of every verb: local (here without an engine:
    exit 3 naming it), or for an OpenShift spec the spec's pods; never a different default for sync."""
    spec = tmp_path / "nodeweave.yaml"
    plain = ("name: llama\nimage: {variant: cpu}\nnodes: 3\nlauncher: {script: train.py}\n"
             "workspace: {path: /workspace/llama}\nkubernetes: {namespace: ml%s}\n")
    spec.write_text(plain % "")
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": home_beside(tmp_path), **{k: v for k, v in os.environ.items()
                                                                          if k == "PYTHONPATH"}}
    out = run("--tar", cwd=tmp_path, env=env)
    assert out.returncode == 3, out.stderr
    # the local nodes mount SRC at DEST (nothing to send, walk5 W36), but the missing engine is said first, as up says it
    assert ("no container engine" in out.stderr or "podman is not on PATH" in out.stderr) \
        and out.stderr.count("\n") == 1, out.stderr
    spec.write_text(plain % ", openshift: true")
    out = run("--tar", cwd=tmp_path, env=env)
    assert out.returncode == 3 and "oc" in out.stderr and out.stderr.count("\n") == 1, out.stderr
