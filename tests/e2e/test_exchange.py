"""The check-in exchange and the heartbeat on real containers from the rendered ``compose/local.yaml``.

Each refusal case runs three nodes of which one differs the way a real
cluster's node would — another NCCL wheel installed, another workspace
commit, a copied rank, a firewall that lets only the master port in, an
interface that advertises loopback — and every node must exit 3 with the same
table. Then a training script that fails mid-run while the other node waits in
a collective, and uneven process counts under torchrun and DeepSpeed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_harness import Cluster, compose_cluster, container_pid, prepare_workdir, records, run_node_service

pytestmark = pytest.mark.engine

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: {procs}
launcher: {{type: {launcher}, script: allreduce.py, args: [{args}], wait_timeout: 120}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
kubernetes: {{grace_period: 30}}
"""
SITE = "/opt/venv/lib/python3.11/site-packages"
GIT = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]


def _cluster(engine, image, tmp_path, name, nodes=3, procs=1, launcher="torchrun", args='"--timeout", "60"'):
    spec_path = prepare_workdir(tmp_path, SPEC.format(name=name, nodes=nodes, procs=procs, launcher=launcher,
                                                      args=args))
    cluster = compose_cluster(engine, spec_path, image)
    cluster.remove()
    return cluster


def _refused_everywhere(cluster, needles, timeout=200):
    codes = cluster.wait_exit(timeout=timeout)
    logs = cluster.all_logs()
    assert all(code == 3 for code in codes.values()), f"exit codes {codes}\n{logs}"
    for name in cluster.names:
        log = cluster.logs(name)
        assert "check-in refused the job" in log, log
        for needle in needles:
            assert needle in log, f"{name} lacks {needle!r}\n{log}"
        assert "Traceback" not in log, log
    return logs


def test_another_nccl_on_one_node_is_refused_on_every_node(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xnccl")
    dist = tmp_path / "nvidia_nccl_cu12-2.26.2.dist-info"  # what `pip install nvidia-nccl-cu12==2.26.2` leaves
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.26.2\n")
    for path in (dist, dist / "METADATA"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    try:
        cluster.up(services=["e2e-xnccl-0", "e2e-xnccl-1"])
        cluster.run_like("e2e-xnccl-1", "e2e-xnccl-2", volumes={f"{SITE}/{dist.name}": str(dist)})
        logs = _refused_everywhere(cluster, ["refuse nccl", "2.26.2 *", "node 2 (e2e-xnccl-2)"])
        assert "refuse image" in logs  # another distribution installed is another image, too
    finally:
        cluster.remove()


def _git_workspace(path: Path, message: str) -> str:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-qm", message], check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(path)], check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_another_workspace_commit_is_refused_on_every_node(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xcommit")
    shared = _git_workspace(tmp_path, "the job's commit")
    other = tmp_path.parent / f"{tmp_path.name}-other"
    shutil.copytree(tmp_path, other, symlinks=True)
    (other / "allreduce.py").write_text((other / "allreduce.py").read_text() + "\n# an edit nobody synced\n")
    changed = _git_workspace(other, "an edit nobody synced")
    try:
        cluster.up(services=["e2e-xcommit-0", "e2e-xcommit-1"])
        cluster.run_like("e2e-xcommit-1", "e2e-xcommit-2", volumes={"/workspace": str(other)})
        # the table's cells hold 24 characters: 23 of a commit and an ellipsis
        _refused_everywhere(cluster, ["refuse workspace", shared[:23] + "…", changed[:23] + "… *"])
    finally:
        cluster.remove()
        shutil.rmtree(other, ignore_errors=True)


def test_a_copied_rank_is_refused_on_every_node(engine, cpu_image, tmp_path):
    """Per-host compose (node.yaml), NODE_RANK from each host's .env: two hosts got the same one."""
    from nodeweave.targets.compose import render_files
    from nodeweave.spec import load_spec

    spec_path = prepare_workdir(tmp_path, SPEC.format(name="e2e-xdup", nodes=3, procs=1, launcher="torchrun",
                                                      args='"--timeout", "60"'))
    node_yaml = render_files(load_spec(spec_path))["compose/node.yaml"]
    network = "e2e-xdup-net"
    cluster = Cluster(engine=engine, names=["e2e-xdup-a", "e2e-xdup-b", "e2e-xdup-c"], networks=[network])
    cluster.remove()
    try:
        subprocess.run([engine.kind, "network", "create", network], check=True, capture_output=True, timeout=60)
        for host, rank in zip(cluster.names, ("0", "1", "1")):
            run_node_service(engine, node_yaml, host, network, cpu_image, tmp_path,
                             {"NODE_RANK": rank, "MASTER_ADDR": "e2e-xdup-a", "NNODES": "3"})
        _refused_everywhere(cluster, ["refuse rank: two nodes claim the same node rank", "node 1 (e2e-xdup-b)",
                                      "node 1 (e2e-xdup-c)"])
    finally:
        cluster.remove()


NFT_MASTER_PORT_ONLY = """table inet nodeweave_e2e {
  chain input {
    type filter hook input priority 0; policy drop;
    iif lo accept
    ct state established,related accept
    tcp dport 29500 accept
  }
}
"""


def _only_master_port(engine, container):
    """A firewall in the container's network namespace, set from the host (nsenter), as on a locked-down host."""
    if shutil.which("nsenter") is None or shutil.which("nft") is None:
        pytest.skip("nsenter and nft are needed on the host (bash .ci/setup-engine.sh installs nftables)")
    pid = container_pid(engine.kind, container)
    subprocess.run(["nsenter", "-t", pid, "-n", "nft", "-f", "-"], input=NFT_MASTER_PORT_ONLY, text=True,
                   check=True, timeout=30)


def test_a_firewall_open_only_on_the_master_port_is_refused_on_every_node(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xfw")
    try:
        cluster.up(services=["e2e-xfw-1"])  # waits for node 0, as does the next one
        cluster.run_like("e2e-xfw-1", "e2e-xfw-2")
        cluster.wait_log("e2e-xfw-2", "waiting for node 0's check-in exchange", timeout=120)
        _only_master_port(engine, "e2e-xfw-2")
        cluster.up(services=["e2e-xfw-0"])
        _refused_everywhere(cluster, ["refuse connect-back", "node 2 (e2e-xfw-2)", "timed out"])
    finally:
        cluster.remove()


def test_an_address_that_is_loopback_is_refused_on_every_node(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xlo")
    try:
        cluster.up(services=["e2e-xlo-0", "e2e-xlo-1"])
        cluster.run_like("e2e-xlo-1", "e2e-xlo-2", env={"NODEWEAVE_INTERFACES": "lo"})
        # node 2 refuses its own start (lo cannot reach the master, another container) and tells node 0, which
        # names it once, by rank: never as a node that did not check in as well
        codes = cluster.wait_exit(timeout=200)
        assert set(codes.values()) == {3}, f"exit codes {codes}\n{cluster.all_logs()}"
        own = cluster.logs("e2e-xlo-2")
        assert "told node 0" in own and "NODEWEAVE_INTERFACES=lo: lo is loopback" in own, own
        for name in ("e2e-xlo-0", "e2e-xlo-1"):
            log = cluster.logs(name)
            assert "check-in refused the job" in log and "refused-start" in log, log
            assert "node 2: e2e-xlo-2" in log and "NODEWEAVE_INTERFACES=lo: lo is loopback" in log, log
            assert "refuse missing" not in log and "did not check in" not in log, log
    finally:
        cluster.remove()


def test_a_failure_mid_run_ends_the_whole_job_within_30_s_and_names_the_node(engine, cpu_image, tmp_path):
    """Rank 2 (node 1) exits 1 at step 10 while node 0's ranks are stuck for 600 s in that step (gloo's
    timeout is 600 s too): only the heartbeat can tell node 0 in time."""
    args = ('"--steps", "100000", "--interval", "0.2", "--timeout", "600", "--fail-rank", "2", "--fail-step", "10", '
            '"--stall-ranks", "0,1", "--stall-step", "10", "--stall-for", "600"')
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xhb", nodes=2, procs=2, args=args)
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=240)
        logs0, logs1 = cluster.logs("e2e-xhb-0"), cluster.logs("e2e-xhb-1")
        assert codes == {"e2e-xhb-0": 5, "e2e-xhb-1": 1}, f"{codes}\n{cluster.all_logs()}"
        failed_at = float(logs1.split("NODEWEAVE-FAIL rank=2 at=", 1)[1].split(":", 1)[0])
        ended_at = cluster.state("e2e-xhb-0").finished_at.timestamp()
        assert ended_at - failed_at < 30, f"node 0 ended {ended_at - failed_at:.1f} s after the failure\n{logs0}"
        assert "node 1 (e2e-xhb-1) failed: torchrun exited 1" in logs0, logs0
        assert "last output:" in logs0 and "exit 5: another node failed" in logs0, logs0
        assert "NODEWEAVE-STALL rank=0" in logs0  # node 0 was stuck, not failing by itself
    finally:
        cluster.remove()


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed"])
def test_uneven_process_counts_run_with_the_real_world_size(engine, cpu_image, tmp_path, launcher):
    """Node 0 runs 2 processes, node 1 one: the world is 3, checked inside the script."""
    name = {"torchrun": "e2e-xun-t", "deepspeed": "e2e-xun-d"}[launcher]
    cluster = _cluster(engine, cpu_image, tmp_path, name, nodes=2, procs=2, launcher=launcher,
                       args='"--expect-world", "3"')
    try:
        cluster.up(services=[f"{name}-0"])
        cluster.run_like(f"{name}-0", f"{name}-1", env={"NODEWEAVE_NPROC_PER_NODE": "1"})
        codes = cluster.wait_exit(timeout=300)
        logs = cluster.all_logs()
        assert all(code == 0 for code in codes.values()), f"{codes}\n{logs}"
        found = records(logs)
        assert sorted(r["rank"] for r in found) == [0, 1, 2], logs
        assert all(r["world"] == 3 and r["sum"] == 6.0 for r in found), found
        assert [r["host"] for r in sorted(found, key=lambda r: r["rank"])] == [f"{name}-0", f"{name}-0", f"{name}-1"]
        assert "world size 3" in cluster.logs(f"{name}-0") and "world size 3" in cluster.logs(f"{name}-1"), logs
    finally:
        cluster.remove()


def test_doctor_cluster_asked_through_a_node_shows_every_node(engine, cpu_image, tmp_path):
    """`nodeweave doctor --cluster --node podman:<node>` on the host: the node's --status reaches node 0."""
    import json
    import sys

    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xdoc", nodes=2,
                       args='"--steps", "100000", "--interval", "0.5", "--timeout", "60"')
    cli = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))"]
    try:
        cluster.up()
        cluster.wait_log("e2e-xdoc-0", "NODEWEAVE-STEP", timeout=240)
        out = subprocess.run([*cli, "doctor", "--cluster", "--node", f"{engine.kind}:e2e-xdoc-1", "--json"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        view = json.loads(out.stdout)
        assert view["source"] == f"node 0's check-in exchange (asked on {engine.kind}:e2e-xdoc-1), running"
        assert view["table"]["nodes"] == ["node 0 (e2e-xdoc-0)", "node 1 (e2e-xdoc-1)"]
        assert view["findings"] == [] and view["verdict"]["decision"] == "start"
        seen = next(row for row in view["table"]["rows"] if row["field"] == "node 0 sees")
        advertised = next(row for row in view["table"]["rows"] if row["field"] == "advertises")
        assert seen["values"][1] == advertised["values"][1]  # node 0 sees node 1 where it says it is
    finally:
        cluster.remove()


def test_doctor_cluster_without_a_running_exchange_reads_each_node(engine, cpu_image, tmp_path):
    """Node 1 up, waiting for a node 0 that never comes: --status cannot answer, each node's --explain does."""
    import json
    import sys

    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-xdoc0", nodes=2)
    cli = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))"]
    try:
        cluster.up(services=["e2e-xdoc0-1"])
        cluster.wait_log("e2e-xdoc0-1", "waiting for node 0's check-in exchange", timeout=120)
        out = subprocess.run([*cli, "doctor", "--cluster", "--node", f"{engine.kind}:e2e-xdoc0-1", "--json"],
                             capture_output=True, text=True, timeout=180)
        view = json.loads(out.stdout)
        assert view["source"] == "each node's nodeweave-entrypoint --explain --json"
        assert view["table"]["nodes"] == [f"node 1 (e2e-xdoc0-1) [{engine.kind}:e2e-xdoc0-1]"]
        assert view["findings"][0]["code"] == "cluster-not-running", view["findings"]
        assert "e2e-xdoc0-0" in view["findings"][0]["message"]  # why --status failed: node 0 is not there
    finally:
        cluster.remove()
