"""left12a (issue 43): operator-side rows the last walks left open (walk11a A17, A11 with replay11 C11, replay11
C22), one test per class, on real processes: bare hosts through the ssh stand-in (tests/ssh_standin.py: each host
runs its real entrypoint on this machine), as tests/test_plan_record.py reaches them."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from cli_run import home_beside
from one_machine import one_machine_env
from test_cli_not_up import ACTING  # every verb that acts on the nodes, as a new user types it
from test_plan_record import HERE, HOSTS, SPEC, SSH_STANDIN, _port, nodeweave

# --- A17: after `down` on bare hosts the job is not up for any verb -------------------------------------------


@pytest.fixture(scope="module")
def downed_hosts(tmp_path_factory):
    """Three bare hosts (--engine none) brought up, one real run of the spec's job, then `nodeweave down`:
    (folder, env, down's result)."""
    folder = tmp_path_factory.mktemp("a17")
    (folder / "nodeweave.yaml").write_text(SPEC.format(port=_port()))
    shutil.copy(HERE.parent / "examples" / "train.py", folder / "train.py")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {SSH_STANDIN} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    root = folder / "hosts"
    root.mkdir()
    (root / "hosts.json").write_text(json.dumps({h: one_machine_env({"TMPDIR": str(root / f"tmp-{h}")})
                                                 for h in HOSTS}))
    for host in HOSTS:
        (root / f"tmp-{host}").mkdir()
    import os

    env = {"PATH": f"{bin_dir}:{Path_parent()}:/usr/bin:/bin", "STANDIN_SSH_ROOT": str(root), "COLUMNS": "200",
           "HOME": home_beside(folder), **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    flags = ["--target", "hosts", "--engine", "none", "--remote-dir", str(folder), *(f"--host={h}" for h in HOSTS)]
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    ran = nodeweave(folder, env, "run")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    down = nodeweave(folder, env, "down")
    return folder, env, down


def Path_parent() -> str:
    from pathlib import Path

    return str(Path(sys.executable).parent)


def test_a17_down_on_bare_hosts_ends_the_record_as_every_targets_down(downed_hosts):
    """A17: `down` on bare hosts says the job is down and drops what `up` made from cluster.json (the flags stay,
    as on every target: `up` alone brings the same cluster back); a second `down` has nothing to take down,
    exit 0, as after a local job's down."""
    folder, env, down = downed_hosts
    assert down.returncode == 0, down.stdout + down.stderr
    assert "planrec is down (3 hosts over ssh" in down.stdout + down.stderr
    record = json.loads((folder / ".nodeweave" / "planrec" / "cluster.json").read_text())
    assert record["made"] is None and record["target"] == "hosts" and record["engine"] == "none", record
    again = nodeweave(folder, env, "down")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "planrec is not up on 3 hosts over ssh" in again.stdout and "nothing to take down" in again.stdout, \
        again.stdout + again.stderr
    assert "take this folder's mark back" not in again.stdout + again.stderr


@pytest.mark.parametrize("name", sorted(ACTING))
def test_a17_after_down_on_bare_hosts_every_verb_says_not_up(downed_hosts, name):
    """A17: after `down` on bare hosts every verb that needs the job up says it is not up, exit 3, one line, with a
    hint that works there (`nodeweave up`: --hold is refused on bare hosts), as after any other target's down; no
    command ran on a host and no run folder was added."""
    folder, env, _ = downed_hosts
    before = sorted(p.name for p in (folder / "runs").iterdir())
    got = nodeweave(folder, env, *ACTING[name], timeout=120)
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert got.returncode == 3, f"`nodeweave {name}`: exit {got.returncode}\n{got.stdout}\n{got.stderr}"
    assert len(lines) == 1 and "planrec is not up on 3 hosts over ssh" in lines[0], (name, got.stderr)
    assert "no job mark" in lines[0] and "--hold" not in lines[0] and "`nodeweave up`" in lines[0], lines[0]
    assert sorted(p.name for p in (folder / "runs").iterdir()) == before, name
