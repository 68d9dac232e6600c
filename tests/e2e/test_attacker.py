"""The attacker on the job's network (docs/design.md "Threat model"): refused with the defaults, not without.

Real containers on one podman network (names ``nwsec-*``): node 0 (and node 1)
run the real entrypoint from nodeweave's source on the offline Debian base
(python3 only: the entrypoint is stdlib), exactly as ``nodeweave up`` starts
them where it matters here: the job token is a fresh ``token.rotate`` file,
owned by the image's UID, mounted read-only at /run/nodeweave/job-token and
named by NODEWEAVE_JOB_TOKEN_FILE. A third container, knowing only the job's
name and port, runs tests/e2e/attacker.py: (a) check in as node 1, then
(b) report a forged failure of node 1.

Without the token (nodes started by hand: the derived token) both succeed:
node 0 starts the job with the impostor as node 1 and then stops it, exit 5,
naming the forged failure. With the defaults the impostor is turned away at
the challenge ("its job token differs") and the real job runs to exit 0.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodeweave.cluster import token

pytestmark = [pytest.mark.engine]
SRC = Path(__file__).resolve().parents[2] / "src"
HERE = Path(__file__).resolve().parent
PORT = 29500


def podman(*args, check=True, timeout=120):
    out = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {out.stderr.strip()}")
    return out


# torchrun as the launcher (the heartbeat supervises it); a stand-in that sleeps, as in test_exchange_processes
STANDIN_TORCHRUN = '#!/bin/sh\nexec sleep "${RUN_FOR:-60}"\n'


@pytest.fixture
def job(base_image, tmp_path):
    """A fresh network and a job name; every nwsec container of the test removed afterwards."""
    name = f"nwsec-{secrets.token_hex(3)}"
    work = tmp_path / "job"
    work.mkdir()
    (work / "torchrun").write_text(STANDIN_TORCHRUN)
    (work / "torchrun").chmod(0o755)
    (work / "train.py").write_text("")
    work.chmod(0o755)
    network = f"{name}-net"
    podman("network", "create", network)
    made = []
    yield {"name": name, "network": network, "image": base_image, "made": made, "dir": tmp_path, "work": work}
    for container in made:
        podman("rm", "-f", "-t", "0", container, check=False)
    podman("network", "rm", "-f", network, check=False)


def common(job):
    """Source, the stand-in launcher and the script, as every container of the test sees them."""
    return ["--network", job["network"], "--user", "1000:0", "-v", f"{SRC}:/opt/nw:ro", "-v", f"{job['work']}:/job:ro",
            "-w", "/job", "-e", "PYTHONPATH=/opt/nw", "-e", "PATH=/job:/usr/local/bin:/usr/bin:/bin"]


def start_node(job, rank, run_for, token_file=None):
    name = f"{job['name']}-{rank}"
    argv = ["run", "-d", "--name", name, "--hostname", name, *common(job), "-e", "TMPDIR=/tmp",
            "-e", "NODEWEAVE_WAIT_TIMEOUT=40", "-e", f"RUN_FOR={run_for}"]
    if token_file is not None:  # what compose/local.yaml mounts when `nodeweave up` starts it
        argv += ["-v", f"{token_file}:{token.CONTAINER_PATH}:ro", "-e", f"{token.FILE_VARIABLE}={token.CONTAINER_PATH}"]
    argv += [job["image"], "python3", "-m", "nodeweave.entrypoint", "--launcher", "torchrun", "--nnodes", "2",
             "--node-rank", str(rank), "--master-addr", f"{job['name']}-0", "--master-port", str(PORT), "--",
             "train.py"]
    podman(*argv)
    job["made"].append(name)
    return name


def attack(job):
    name = f"{job['name']}-attacker"
    job["made"].append(name)
    out = podman("run", "--rm", "--name", name, *common(job), "-v", f"{HERE / 'attacker.py'}:/attacker.py:ro",
                 job["image"], "python3", "/attacker.py", "checkin", job["name"], f"{job['name']}-0", str(PORT),
                 check=False, timeout=120)
    steps = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            steps[record["step"]] = record
    return steps, out


def wait_exit(container, timeout=90):
    out = podman("wait", container, timeout=timeout)
    logs = podman("logs", container, check=False)
    return int(out.stdout.strip().splitlines()[-1]), logs.stdout + logs.stderr


def wait_for_exchange(node, timeout=30):
    """Until node 0's log says it is gathering (its exchange port is open)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logs = podman("logs", node, check=False)
        if "check-in" in (logs.stdout + logs.stderr) or "exchange" in (logs.stdout + logs.stderr):
            return
        time.sleep(0.5)


def test_without_the_token_an_impostor_checks_in_and_its_forged_failure_stops_the_job(job):
    node0 = start_node(job, 0, 60)  # started by hand: no token file, the derived token
    wait_for_exchange(node0)
    steps, out = attack(job)
    assert steps.get("checkin", {}).get("ok") is True, out.stdout + out.stderr  # (a) node 0 took it as node 1
    assert steps["checkin"]["decision"] == "start", podman("logs", node0, check=False).stderr[-3000:]
    assert steps.get("forge", {}).get("ok") is True  # (b) its report went in
    code, logs = wait_exit(node0)
    assert code == 5, logs  # node 0 stopped the job for a failure that never happened
    assert "forged by the nwsec attacker" in logs
    assert "derived-job-token" in logs or "derived" in logs  # the warning it printed at the start


def test_with_the_defaults_the_impostor_is_turned_away_and_the_job_runs(job):
    # what `nodeweave up` writes beside the spec for a container to mount: as root, root:0 0440 (walk15a A15)
    token_file, secret = token.rotate(job["dir"] / token.job_file(job["name"]), token.mounted_mode())
    assert token_file.stat().st_mode & 0o777 == token.mounted_mode()
    node0 = start_node(job, 0, 6, token_file)
    wait_for_exchange(node0)
    steps, out = attack(job)
    assert steps.get("checkin", {}).get("ok") is False, out.stdout + out.stderr  # (a) refused
    assert "its job token differs" in steps["checkin"]["error"]
    assert "forge" not in steps  # (b) never got a channel to report on
    node1 = start_node(job, 1, 6, token_file)
    (code0, logs0), (code1, logs1) = wait_exit(node0), wait_exit(node1)
    assert (code0, code1) == (0, 0), logs0 + logs1
    assert "turned away: not a node of this job: its job token differs" in logs0
    assert "derived-job-token" not in logs0 + logs1
    assert secret not in logs0 + logs1


# -- (c), (d): the sync path: a node's resident agent (and, through it, what a relay hop serves) -------------
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
DEST = "/srv/ws"


def resident_of(container):
    out = podman("exec", container, "sh", "-c", 'cat "${TMPDIR:-/tmp}/nodeweave-sync-$(id -u)/resident.json"')
    return json.loads(out.stdout)


def address_of(container, network):
    out = podman("inspect", container, "--format", "{{json .NetworkSettings.Networks}}")
    return json.loads(out.stdout)[network]["IPAddress"]


def attack_resident(job, address, port, key):
    name = f"{job['name']}-attacker"
    out = podman("run", "--rm", "--name", name, *common(job), "-v", f"{HERE / 'attacker.py'}:/attacker.py:ro",
                 job["image"], "python3", "/attacker.py", "resident", address, str(port), DEST, key,
                 check=False, timeout=120)
    return {json.loads(line)["step"]: json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")}, out


@pytest.mark.usefixtures("own_digest_cache")
def test_a_resident_agent_serves_no_one_without_its_key_and_anyone_with_it(job, tmp_path):
    """(c) push a file into a node's workspace, (d) read the workspace's listing, through a resident agent.

    The key is random per resident and only the source holds it (a 0600 state file in the node, the
    source's registry); a head is given per-sync tickets, never the key. The attacker reaches the port
    (no network stands in its way: the same bytes with the key succeed), and without the key gets nothing.
    """
    nodes = []
    for i in range(2):
        name = f"{job['name']}-{i}"
        podman("run", "-d", "--name", name, "--network", job["network"], job["image"], "sleep", "infinity")
        job["made"].append(name)
        nodes.append(name)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text("print('secret recipe')\n")
    (workspace / "notes.txt").write_text("lr 3e-4\n")
    sync = subprocess.run([*NODEWEAVE, "sync", "--json", str(workspace), DEST, *[f"--to=podman:{n}" for n in nodes]],
                          capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr
    state = resident_of(nodes[1])  # what the source was told over its exec channel
    address = address_of(nodes[1], job["network"])

    steps, out = attack_resident(job, address, state["port"], "-")  # with the defaults: a guessed key
    assert steps["read"]["ok"] is False and "does not know this hop's token" in steps["read"]["error"], out.stdout
    assert steps["push"]["ok"] is False, out.stdout
    listing = podman("exec", nodes[1], "ls", DEST).stdout.split()
    assert "nwsec-pushed.txt" not in listing

    steps, out = attack_resident(job, address, state["port"], state["key"])  # an attacker that had the key
    assert steps["read"]["ok"] is True and {"train.py", "notes.txt"} <= set(steps["read"]["names"]), out.stdout
    assert steps["push"]["ok"] is True, out.stdout + out.stderr
    assert podman("exec", nodes[1], "cat", f"{DEST}/nwsec-pushed.txt").stdout == "pushed by the nwsec attacker\n"
