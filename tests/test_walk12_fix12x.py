"""fix12x (issue 43): two rows this session's fixers left: walk12c C3 (a `stop --node N` read as a failure) and
left12a's A17 neighbour (hosts with a container engine after `down`), one test per class, docstrings prefixed with
the row id. The hosts are reached through the ssh stand-in (tests/ssh_standin.py), as tests/test_left12a.py does."""

from __future__ import annotations

import pytest

from nodeweave.cluster.options import ClusterOptions, save_state

from test_cli_not_up import ACTING  # every verb that acts on the nodes, as a new user types it
from test_left12a import bare_hosts_in
from test_plan_record import HOSTS, SPEC, _port, nodeweave

# --- A17 neighbour: hosts with a container engine, after `down` ----------------------------------------------------

# Each host's engine as it answers once `down` removed the node container: `inspect` says there is no such
# container (docker's words and exit 1; podman's are the same with exit 125), compose's `down` has nothing left to
# do; anything else run there is a test failure, told apart by its exit 99 (a verb that went on into the engine's
# `exec` on a container that is not there).
ENGINE_AFTER_DOWN = """#!/bin/sh
if [ "$1" = compose ] || [ "$0" != "${{0%podman-compose}}" ]; then
  case " $* " in *" down "*) exit 0;; esac
fi
if [ "$1" = inspect ]; then
  for last; do :; done
  echo "Error: No such container: $last" >&2
  exit {code}
fi
echo "{engine} (stand-in): asked $* on a host whose node container is gone" >&2
exit 99
"""


@pytest.fixture(params=[("docker", 1), ("podman", 125)], ids=["docker", "podman"])
def engine_hosts_after_down(request, tmp_path):
    """Two hosts over the ssh stand-in whose engine (docker or podman) holds no node container of the job, and
    the job's record as `down` leaves it (the target's flags kept, nothing made): (folder, env)."""
    engine, code = request.param
    env, _ = bare_hosts_in(tmp_path, SPEC.format(port=_port()).replace("nodes: 3", "nodes: 2"), hosts=HOSTS[:2])
    fake = tmp_path / "bin" / engine
    fake.write_text(ENGINE_AFTER_DOWN.format(code=code, engine=engine))
    fake.chmod(0o755)
    if engine == "podman":
        (tmp_path / "bin" / "podman-compose").symlink_to(fake)
    # what `up` was told, kept by `down` in the job's record (made: null), as after a real up and down
    save_state(tmp_path / "nodeweave.yaml", "planrec", ClusterOptions(
        target="hosts", engine=engine, hosts=tuple(HOSTS[:2]), remote_dir=str(tmp_path)), made=None)
    return tmp_path, env


@pytest.mark.parametrize("name", sorted(ACTING))
def test_a17n_after_down_on_hosts_with_an_engine_every_verb_says_not_up(engine_hosts_after_down, name):
    """A17 neighbour: on the hosts target with a container engine, once the node containers are gone (`down`),
    every verb that acts on the nodes says the job is not up, exit 3, in one line naming the missing containers,
    as on every other target; none goes on into the engine's exec on a container that is not there."""
    folder, env = engine_hosts_after_down
    got = nodeweave(folder, env, *ACTING[name], timeout=120)
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert got.returncode == 3, f"`nodeweave {name}`: exit {got.returncode}\n{got.stdout}\n{got.stderr}"
    assert len(lines) == 1 and "planrec is not up on 2 hosts over ssh" in lines[0], (name, got.stderr)
    assert "missing" in lines[0] and "stand-in" not in got.stderr, lines[0]
    assert not (folder / "runs").exists() or not any((folder / "runs").iterdir()), name
