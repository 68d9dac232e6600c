"""fix12x (issue 43): two rows this session's fixers left: walk12c C3 (a `stop --node N` read as a failure) and
left12a's A17 neighbour (hosts with a container engine after `down`), one test per class, docstrings prefixed with
the row id. The hosts are reached through the ssh stand-in (tests/ssh_standin.py), as tests/test_left12a.py does."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

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


# --- C3: `stop --node N` during a run reads as a stop of that node, for every reader ------------------------------


@pytest.fixture(scope="module")
def node_stopped_run(tmp_path_factory):
    """Two bare hosts (--engine none) over the ssh stand-in; the long job run detached, and once it trained a while
    `nodeweave stop --node 1`; the run's record once the detached `nodeweave run` wrote it: (folder, env, run id)."""
    from test_left12a import STOP_SPEC, _trained

    folder = tmp_path_factory.mktemp("c3")
    env, flags = bare_hosts_in(folder, STOP_SPEC.format(port=_port(), metrics=_port()), hosts=HOSTS[:2])
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    started = nodeweave(folder, env, "run", "--detach")
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = started.stdout.strip().splitlines()[-1]
    _trained(folder / "runs" / run_id / "node-0.log", 20)
    stop = nodeweave(folder, env, "stop", "--node", "1")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    deadline = time.monotonic() + 120
    while json.loads((folder / "runs" / run_id / "run.json").read_text()).get("ended") is None:
        assert time.monotonic() < deadline, "the stopped run was never recorded as ended"
        time.sleep(1)
    yield folder, env, run_id
    nodeweave(folder, env, "down")


def test_c3_a_stop_of_one_node_reads_as_that_nodes_stop_for_every_reader(node_stopped_run):
    """C3: after `nodeweave stop --node 1` during a run, the run record's summary, `runs ls`, `runs show` and the
    dashboard's run page say node-1 was stopped by nodeweave stop and the others ended because of it: never
    "node-1 ... failed first", never "failed"; node 0's recorded exit is the one its entrypoint announced."""
    from nodeweave.cluster.dashboard import run_state

    folder, env, run_id = node_stopped_run
    data = json.loads((folder / "runs" / run_id / "run.json").read_text())
    assert "failed" not in data["summary"], data["summary"]
    assert "node-1" in data["summary"] and "stopped by nodeweave stop --node" in data["summary"], data["summary"]
    assert "the others ended because of it: node-0" in data["summary"], data["summary"]
    listed = nodeweave(folder, env, "runs", "ls", "-o", "json")
    state = next(r["state"] for r in json.loads(listed.stdout) if r["run"] == run_id)
    assert state.startswith("stopped by nodeweave stop at") and "node-1" in state, state
    assert "the others ended because of it" in state and "failed" not in state, state
    shown = json.loads(nodeweave(folder, env, "runs", "show", run_id, "-o", "json").stdout)
    lines = {n["node"]: n["last_line"] for n in shown["nodes"]}
    assert "ended because nodeweave stop stopped node-1" in lines["node-0"], lines
    assert "failed" not in json.dumps(shown["summary"]) and shown["state"] == state, shown
    # node 0 ended as its entrypoint said it would (exit 5: another node was stopped), not cut short by a stop sent
    # from the host (137 or 143 in the record while its log said 5)
    said = re.findall(r"\(exit (\d+): another node was stopped\)",
                      (folder / "runs" / run_id / "node-0.log").read_text(errors="replace"))
    assert said and {n["node"]: n["exit_code"] for n in data["nodes"]}["node-0"] == int(said[-1]), (said, data)
    page = run_state(folder / "runs" / run_id, data, None, None)
    states = {n["node"]: n["state"] for n in page["live"]["nodes"]}
    assert states["node-1"].startswith("stopped by nodeweave stop"), states
    assert states["node-0"].startswith("ended because nodeweave stop stopped node-1"), states


def test_c3_the_after_stop_output_a_nodes_stop_line_names_is_kept_in_the_run_folder(node_stopped_run):
    """C3: the file each node's stop line names for its launcher's output after the stop (the stopped node's own
    line and its peer's, each a path on the node: inside the container on a container target, gone at `down`) is
    in the run folder beside the spec under the same name, so it can be read after `down`."""
    folder, _, run_id = node_stopped_run
    logs = "".join((folder / "runs" / run_id / f"node-{i}.log").read_text(errors="replace") for i in (0, 1))
    named = {p.rstrip(".,;)") for p in re.findall(
        r"(?:its output from here on|the launcher's output after the signal \(its traceback of it\)): (\S+)", logs)}
    assert len(named) == 2, logs[-3000:]  # node 0's line (a peer was stopped) and node 1's own (stopped)
    for path in sorted(named):
        kept = folder / "runs" / run_id / Path(path).name
        assert kept.is_file(), (path, sorted(p.name for p in kept.parent.iterdir()))
        assert kept.read_text() == Path(path).read_text(), path  # the stand-in's "node" is this machine
