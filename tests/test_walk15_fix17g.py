"""walk15a/walk15b rows fixed by fix17g: sync's lists and errors, rendered text true for its target, the job
token's owner. Each test fails on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from cli_run import in_process as run_cli

# A podman stand-in: every "container" is this machine, so a sync's agent runs here (as nobody where the test runs
# as root, so a folder it may not write refuses it as on a real node).
FAKE_PODMAN = """#!/bin/sh
case "$1" in
  version) echo 4.3.1 ;;
  inspect) echo true ;;
  exec) shift; while [ "$1" != "${1#-}" ]; do shift; done; shift
        if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; fi
        exec "$@" ;;
esac
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project of 30 files, its own state and a credential, and the podman stand-in on PATH."""
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("needs setpriv to run the stand-in's agent as another user")
    if not shutil.which("python3"):
        pytest.skip("the sync agent needs python3 on the target")
    src = tmp_path / "proj"
    (src / "compose").mkdir(parents=True)
    for i in range(30):
        (src / f"f{i:02}.py").write_text(f"x = {i}\n")
    (src / "compose" / "local.yaml").write_text("services: {}\n")
    (src / ".nodeweave" / "train").mkdir(parents=True)
    (src / ".nodeweave" / "train" / "cluster.json").write_text("{}\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "podman").write_text(FAKE_PODMAN)
    (fake / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    monkeypatch.chdir(src)
    dest = Path(tempfile.mkdtemp(prefix="walk15-fix17g-"))  # where the stand-in's user reaches it (pytest's is 0700)
    dest.chmod(0o777)
    yield src, dest
    for folder, _, _ in os.walk(dest):
        os.chmod(folder, 0o755)
    shutil.rmtree(dest)


# -- A5: the held-back hint names the pattern that sends what it holds back -----------------------------------------

def test_the_held_back_hint_names_the_pattern_that_sends_the_folders_held(tmp_path):
    """A5: `held back as nodeweave's own state: .nodeweave/ (a `-x '!runs/'` pattern sends such a folder anyway)`:
    `!runs/` sends nothing of .nodeweave/. The pattern named is the one that sends each folder held back."""
    from dataclasses import replace

    from nodeweave.sync.filters import build_filter
    from nodeweave.sync.request import SyncOptions
    from nodeweave.sync.syncplan import SyncWork, held_back

    src = tmp_path / "proj"
    for folder in (".nodeweave/train", "sub/.nodeweave"):
        (src / folder).mkdir(parents=True)
        (src / folder / "state.json").write_text("{}\n")
    (src / "train.py").write_text("pass\n")
    fileset = build_filter(src).walk(src)
    work = SyncWork(str(src), "/ws", 1, 5, None, None, False, (), tuple(fileset.held_back_state), (), (), "id",
                    SyncOptions())
    said = held_back(work)
    assert "`-x '!/.nodeweave/' -x '!/sub/.nodeweave/'` sends them anyway" in said, said
    assert "!runs/" not in said, said
    sent = build_filter(src, extra_excludes=["!/.nodeweave/", "!/sub/.nodeweave/"]).walk(src)
    assert {".nodeweave/train/state.json", "sub/.nodeweave/state.json"} <= set(sent.files) and not sent.swept_in
    swept = held_back(replace(work, held_back_state=(), swept_in=((".nodeweave/", "-x '!*'"),)))
    assert "`-x '!/.nodeweave/'` to send it on purpose" in swept and "!runs/" not in swept, swept


# -- A31: every list a dry run cuts has its full form -----------------------------------------------------------------

def test_a_dry_run_lists_every_path_under_wide_and_json(capsys, project):
    """A31: the dry run listed 20 changes and `... and 13 more`, -o wide the same, -o json no file name at all."""
    src, dest = project
    code, out, err = run_cli(capsys, "sync", ".", str(dest), "--node", "podman:node-0", "--dry-run")
    assert code == 0, err
    assert "... and 12 more (-o wide lists every one)" in out + err, out + err
    code, out, err = run_cli(capsys, "sync", ".", str(dest), "--node", "podman:node-0", "--dry-run", "-o", "wide")
    assert code == 0, err
    listed = [line.split()[-1] for line in (out + err).splitlines() if line.startswith("  <f")]
    assert len(listed) == 31 and "f29.py" in listed and "compose/local.yaml" in listed, out + err
    assert "more" not in out + err, out + err
    code, out, err = run_cli(capsys, "sync", ".", str(dest), "--node", "podman:node-0", "--dry-run", "-o", "json")
    assert code == 0, err
    document = json.loads(out)
    (target,) = document["would_move"]
    assert target["target"] == "podman:node-0" and len([c for c in target["changes"] if c.startswith("<f")]) == 31
    assert document["phases"][0]["request"]["files"] == 31
    assert not list(dest.iterdir()), "a dry run writes nothing"


# -- A32: credential-like names people keep ---------------------------------------------------------------------------

def test_env_files_by_any_name_and_password_files_are_held_back(tmp_path):
    """A32: `secrets.env` (AWS_SECRET_ACCESS_KEY=...) was sent; `.env` and `.env.*` only were held back."""
    from nodeweave.sync.filters import build_filter

    src = tmp_path / "proj"
    held = ["secrets.env", "deploy/prod.env", ".pgpass", ".my.cnf", "client_secret_123.json",
            ".streamlit/secrets.toml"]
    sent = ["train.py", "example.env", "environment.yml", "deploy/prod.env.example"]
    for rel in held + sent:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("AWS_SECRET_ACCESS_KEY=x\n")
    fileset = build_filter(src, use_gitignore=False).walk(src)
    assert sorted(fileset.held_back_secrets) == sorted(held), fileset.held_back_secrets
    assert set(fileset.files) == set(sent)
    assert sorted(build_filter(src, include_secrets=True, use_gitignore=False).walk(src).files) == sorted(held + sent)


# -- A21: a file a target could not write is said as such, not as ssh never reaching it -------------------------------

def test_a_write_refused_on_a_container_is_said_as_that_not_as_ssh(capsys, project):
    """A21: `nothing synced to train-0: ssh cannot reach train-0 (permission denied) ...`, exit 3, to a podman
    target whose compose/ folder its user could not write, every other file written."""
    src, dest = project
    (dest / "compose").mkdir()
    (dest / "compose").chmod(0o555)
    code, out, err = run_cli(capsys, "sync", ".", str(dest), "--node", "podman:node-0")
    assert code == 1, (out, err)
    assert "ssh" not in err, err
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    line = next((line for line in err.splitlines() if "podman:node-0: cannot write" in line), err)
    assert f"cannot write {dest}/compose/local.yaml: permission denied for uid {uid}" in line, line
    assert "the other 30 file(s) were written there" in line, line
    assert (dest / "f29.py").read_text() == "x = 29\n"

    from nodeweave.failures import ssh_unreached

    assert ssh_unreached("rsync: [receiver] mkstemp \"/ws/.a.x\" failed: Permission denied (13)") is None
    assert ssh_unreached("me@gpu1: Permission denied (publickey,password).") == "permission denied"


# -- B8: the recovery StatefulSet says nothing of an API read it never makes -----------------------------------------

@pytest.mark.parametrize("nodes, recovery", [("2", "recovery: {enabled: true, spares: 1}\n"), ('"2:4"', "")])
def test_a_statefulset_told_its_node_count_carries_no_replica_read(nodes, recovery):
    """B8: a StatefulSet with NODEWEAVE_NNODES set (recovery's spares; elastic) kept the plain one's `CKV_K8S_38=the
    entrypoint reads .spec.replicas ...` and a Role granting get on the StatefulSet."""
    import yaml

    from nodeweave.spec import parse_spec
    from nodeweave.targets.kubernetes import render_files

    spec = parse_spec(f"name: job\nimage: {{variant: cpu}}\nlauncher: {{script: train.py}}\nnodes: {nodes}\n"
                      + recovery, "nodeweave.yaml")
    files = render_files(spec)
    sts = yaml.safe_load(files["manifests/base/statefulset.yaml"])
    env = {e["name"] for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "NODEWEAVE_NNODES" in env
    said = json.dumps(sts["metadata"].get("annotations", {}))
    assert ".spec.replicas of its StatefulSet from the API" not in said, said
    assert "CKV_K8S_38=node 0 asks the API why a node's pod did not check in" in said, said
    rules = yaml.safe_load(files["manifests/base/role.yaml"])["rules"]
    assert [rule["resources"] for rule in rules] == [["pods"]], rules


# -- B18: --engine none's plan and hosts file say what bare hosts get ------------------------------------------------

def test_bare_hosts_plan_and_hosts_file_name_what_they_get(tmp_path):
    """B18: `# send compose/hosts to gpu01` while `/srv/rjob/.nodeweave/hosts` is written, and the file's header
    `# compose/node.yaml mounts this file ...` where --engine none has no compose file."""
    from plan_parts import up_steps

    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.spec import parse_spec

    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text("name: rjob\nimage: {variant: cpu}\nlauncher: {script: train.py}\n"
                         "hosts: [gpu01, gpu02, gpu03]\nrecovery: {enabled: true, spares: 1}\n")
    options = ClusterOptions(target="hosts", hosts=("gpu01", "gpu02", "gpu03"), engine="none", remote_dir="/srv/rjob")
    backend = open_backend(parse_spec(spec_path.read_text(), str(spec_path)), spec_path, options.checked())
    steps = [step for phase in up_steps(backend, "hold", None) for step in phase]
    sends = [step for step in steps if "hosts list" in step.what]
    assert [step.what for step in sends] == [f"send the hosts list to gpu0{i} as /srv/rjob/.nodeweave/hosts"
                                             for i in (1, 2, 3)]
    assert not [step.what for step in steps if "compose" in step.what]
    text = sends[0].stdin
    assert "compose" not in text.replace("no compose file", ""), text
    assert "NODEWEAVE_HOSTFILE names it" in text and text.endswith("gpu01\ngpu02\ngpu03\n"), text


# -- A15: the job token is never handed to a host account by UID -----------------------------------------------------

def test_the_job_token_is_no_host_accounts(tmp_path, capsys, monkeypatch):
    """A15: as root `up` chowned the job token to UID 1000, on the host an account of its own (`cloudsdk`), which
    read it; so did the hosts' write over ssh. Now root's, group 0, 0440: the images' user (`USER 1000:0`) reads it
    through group 0, and a host account group 0 holds besides root is named."""
    from nodeweave.cluster import token

    assert "chown 1000" not in " ".join(token.REMOTE_WRITE)
    monkeypatch.setattr(token, "group_readers", lambda gid=0: ["alice"])
    token.warn_group_readers(Path("/p/.nodeweave/job/job-token"))
    err = capsys.readouterr().err
    assert "the job token /p/.nodeweave/job/job-token is group 0's to read" in err and "held by alice" in err, err
    if os.geteuid() != 0:
        return  # the token is chowned only when up runs as root
    path = token.write_token(tmp_path / ".nodeweave" / "job" / "job-token", "secret", token.mounted_mode())
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (0, 0, 0o440)
    assert "held by alice" in capsys.readouterr().err
    remote = tmp_path / "host"
    subprocess.run([*token.REMOTE_WRITE, str(remote), "job-token"], input="secret\n", text=True, check=True)
    info = (remote / "job-token").stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (0, 0, 0o440)
    assert (remote / "job-token").read_text() == "secret\n"
