"""The seeds' daily loops, the parts that broke (issue 27, items 1-5), through the real command line.

- ``sync`` follows the target ``up`` recorded (hosts: the ``--remote-dir``
  workspace over ssh), not the spec's StatefulSet pods;
- bare hosts (``--engine none``) with a spec ``hosts`` list get that list
  sent by ``up`` and pointed at by ``NODEWEAVE_HOSTFILE``; a node whose plan
  fails makes ``status`` exit 1;
- ``launcher.mode: hold`` holds the StatefulSet only; the batch workloads run;
- dry runs list the live replica count, and a StatefulSet scaled to 0 is
  "scaled down", not bad input;
- accelerate's ``--rdzv_backend`` is the user's (nodeweave never passes it).

A kubectl stand-in (a shell script answering ``get statefulset``) gives the
replica count; no cluster runs here.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest
import yaml

from plan_parts import up_files, up_steps
from nodeweave.spec import parse_spec
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = """name: seed
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
kubernetes: {namespace: ml}
"""


def nodeweave(spec_path: Path, *args: str, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess:
    return cli_run.run([*cli_run.NODEWEAVE, *args, "--spec", str(spec_path)], cwd=spec_path.parent, env={"COLUMNS": "200", "PATH": path, "HOME": home_beside(spec_path.parent),
                                                     **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}})


@pytest.fixture
def spec_path(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "train.py").write_text("print('hi')\n")
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC + "workspace: {host_path: ws}\n")
    return path


# --- 1. sync follows up ------------------------------------------------------------------------------

def test_sync_sends_to_the_hosts_workspace_that_up_recorded(spec_path):
    from nodeweave.sync import request as rq

    up = nodeweave(spec_path, "up", "--target", "hosts", "--engine", "none", "--host", "gpu01", "--host", "me@gpu02",
                   "--remote-dir", "/srv/seed", "--no-wait")
    # these hosts do not exist: up asks them first and records nothing (walk9 A36)
    assert up.returncode == 3 and "nothing was started or recorded" in up.stderr, up.stderr
    # what an up that reached them records before its steps
    from nodeweave.cluster.options import ClusterOptions, save_state

    save_state(spec_path, "seed", ClusterOptions(target="hosts", engine="none", hosts=("gpu01", "me@gpu02"),
                                                 remote_dir="/srv/seed").checked())
    req = rq.build_request(None, None, rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(dry_run=True), spec_path)
    assert [t.label for t in req.targets] == ["ssh:gpu01", "ssh:me@gpu02"]
    assert req.dest == "/srv/seed" and req.src == (spec_path.parent / "ws").resolve()
    assert not req.options.shared


def test_sync_to_a_hosts_file_defaults_to_the_recorded_workspace_not_the_container_path(spec_path, tmp_path):
    from nodeweave.sync import request as rq

    nodeweave(spec_path, "up", "--target", "hosts", "--engine", "docker", "--host", "gpu01", "--remote-dir",
              "/srv/seed", "--dry-run")  # a dry run remembers nothing
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("gpu01\ngpu02\n")
    with pytest.raises(Exception, match="DEST"):  # nothing recorded, relative host_path: the hosts' folder is unknown
        rq.build_request(None, None, rq.TargetArgs(hosts_file=hosts), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    # what `up --target hosts --remote-dir /srv/seed` records before its steps (it needs ssh, so recorded here)
    from nodeweave.cluster.options import ClusterOptions, save_state

    save_state(spec_path, "seed", ClusterOptions(target="hosts", engine="docker", hosts=("gpu01", "gpu02"),
                                                 remote_dir="/srv/seed").checked())
    req = rq.build_request(None, None, rq.TargetArgs(hosts_file=hosts), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    assert [t.label for t in req.targets] == ["ssh:gpu01", "ssh:gpu02"] and req.dest == "/srv/seed"


def test_sync_follows_the_local_target_to_its_containers(spec_path, monkeypatch):
    from nodeweave.cluster.backends.local import LocalCluster
    from nodeweave.cluster.base import NodeState, PlatformState
    from nodeweave.cluster.options import ClusterOptions, save_state
    from nodeweave.errors import EnvironmentProblem
    from nodeweave.sync import request as rq

    save_state(spec_path, "seed", ClusterOptions(target="local", engine="docker").checked())
    # no docker here: nothing can be up on it, and the one line names the program (exit 3), not a sync to plan
    monkeypatch.setenv("PATH", str(spec_path.parent / "empty-bin"))
    with pytest.raises(EnvironmentProblem, match="docker is not on PATH; the local target reaches its nodes"):
        rq.build_request(None, None, rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    # a docker that knows no such container, whatever this machine has installed (docker's own words and exit 1)
    bin_dir = spec_path.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text("#!/bin/sh\nfor a; do last=$a; done\n"
                                    "echo \"Error: No such object: $last\" >&2\nexit 1\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(EnvironmentProblem, match="seed is not up on docker .*no node mounts it yet; "
                                                 "`nodeweave up --hold` starts it, then `nodeweave run`"):
        rq.build_request(None, None, rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    running = PlatformState(NodeState.RUNNING, "running")
    monkeypatch.setattr(LocalCluster, "states", lambda self, nodes: {n.index: running for n in nodes})  # both ran
    # the workspace itself: the nodes mount it from here, so there is nothing to send (walk5 W36)
    with pytest.raises(rq.NothingToSend, match="nothing to send"):
        rq.build_request(None, None, rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    # a folder the nodes do not mount from here: sent to each container
    req = rq.build_request(None, "/data/seed", rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(), spec_path)
    assert [t.label for t in req.targets] == ["docker:seed-0", "docker:seed-1"] and req.dest == "/data/seed"


# --- 2. bare hosts get the hosts list ---------------------------------------------------------------

def test_bare_hosts_with_a_spec_hosts_list_get_the_list_and_point_at_it(tmp_path):
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC.replace("nodes: 2\n", "hosts: [desk1, desk2]\n") + "workspace: {host_path: /srv/lan}\n")
    out = nodeweave(path, "up", "--engine", "none", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "send the hosts list to desk1 as /srv/lan/.nodeweave/hosts" in out.stdout and "send the hosts list to desk2" in out.stdout
    assert "/srv/lan/.nodeweave" in out.stdout
    run = nodeweave(path, "run", "--engine", "none", "--dry-run")
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if not line.startswith("#")]
    assert len(lines) == 2 and all("NODEWEAVE_HOSTFILE=/srv/lan/.nodeweave/hosts" in line for line in lines)
    assert "/etc/nodeweave/hosts" not in run.stdout


def test_the_sent_hosts_list_gives_each_bare_host_its_rank(tmp_path):
    """The file up sends, read by the real entrypoint under the variables a bare host gets."""
    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.entrypoint import make_plan

    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC.replace("nodes: 2\n", "hosts: [desk1, desk2]\n") + "workspace: {host_path: /srv/lan}\n")
    spec = parse_spec(path.read_text(), str(path))
    backend = open_backend(spec, path, ClusterOptions(target="hosts", engine="none", hosts=spec.hosts).checked())
    (writes,) = up_steps(backend, "run", None)
    hostfile = tmp_path / "hosts"
    hostfile.write_text(writes[0].stdin)
    node = backend.nodes()[1]
    from test_entrypoint_contract import with_hostname

    env = {**dict(node.env), "NODEWEAVE_HOSTFILE": str(hostfile)}
    plan = make_plan(["--no-wait", "--", "train.py"], env=env, sysroot=with_hostname(tmp_path, "hgx-h100", "desk2"))
    assert plan.topology.node_rank.value == 1 and plan.topology.master_addr.value == "desk1"


def test_status_exits_1_when_a_nodes_plan_fails():
    from nodeweave.cluster.status import problems

    rows = [{"node": "node-0", "up": True, "plan_hash": None, "plan_errors": ["cannot read hostfile /x"]},
            {"node": "node-1", "up": True, "plan_hash": "ab", "plan_errors": []}]
    assert problems(rows) == ["node-0's plan fails: cannot read hostfile /x"]


# --- 3. launcher.mode per workload ------------------------------------------------------------------

def test_hold_holds_the_statefulset_and_the_batch_workloads_run(tmp_path):
    from nodeweave.rendering import render_targets

    spec = parse_spec(SPEC.replace("launcher: {script: train.py}", "launcher: {script: train.py, mode: hold}"), "s")
    files = render_targets(spec, ("manifests", "jobset", "trainjob"))

    def mode_of(rel, find):
        docs = [d for d in yaml.safe_load_all(files[rel]) if d]
        env = find(docs[0])
        return {e["name"]: e.get("value") for e in env}["NODEWEAVE_MODE"]

    pod = lambda d: d["spec"]["template"]["spec"]["containers"][0]["env"]  # noqa: E731
    assert mode_of("manifests/base/statefulset.yaml", pod) == "hold"
    assert mode_of("manifests/job/job.yaml", pod) == "run"
    assert mode_of("jobset/jobset.yaml",
                   lambda d: d["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
                   ["env"]) == "run"
    assert mode_of("kubeflow/trainjob.yaml", lambda d: d["spec"]["trainer"]["env"]) == "run"


# --- 4. scaling -------------------------------------------------------------------------------------

@pytest.fixture
def kubectl(tmp_path):
    """A kubectl stand-in: ``get statefulset`` answers the replica count in ``replicas``; the rest is refused."""
    folder = tmp_path / "bin"
    folder.mkdir()
    count = tmp_path / "replicas"
    (folder / "kubectl").write_text(f"""#!/bin/sh
case "$*" in "get "*" statefulset "*) cat {count}; exit 0;; esac
echo "stand-in: $*" >&2; exit 1
""")
    (folder / "kubectl").chmod(0o755)
    return count, f"{folder}:/usr/bin:/bin"


def test_dry_runs_list_every_live_replica(spec_path, kubectl):
    count, path = kubectl
    count.write_text("6")
    for verb in ("run", "stop"):
        out = nodeweave(spec_path, verb, "--target", "kubernetes", "--dry-run", path=path)
        assert out.returncode == 0, out.stderr
        assert [line for line in out.stdout.splitlines() if line.startswith("# node-")][-1].split()[1] == "node-5"


def test_a_statefulset_scaled_to_zero_is_scaled_down_not_bad_input(spec_path, kubectl):
    count, path = kubectl
    count.write_text("0")
    status = nodeweave(spec_path, "status", "--target", "kubernetes", "--json", path=path)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["nodes"] == [] and "scaled down" in data["where"]
    run = nodeweave(spec_path, "run", "--target", "kubernetes", path=path)
    assert run.returncode == 3 and "scaled to zero" in run.stderr and "not accepted" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


# --- 5. accelerate --rdzv_backend -------------------------------------------------------------------

def test_accelerates_rdzv_backend_is_the_users_and_its_parser_reads_it():
    accelerate = pytest.importorskip("accelerate.commands.launch")
    from nodeweave.entrypoint import make_plan

    spec = parse_spec(SPEC.replace("launcher: {script: train.py}", "launcher: {type: accelerate, script: train.py, "
                                   "options: [--rdzv_backend, c10d]}"), "s")
    env = {"NODEWEAVE_LAUNCHER": "accelerate", "NODEWEAVE_LAUNCHER_OPTIONS": shlex.join(spec.launcher.options),
           "NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "hgx-a00"}
    plan = make_plan(["--no-wait", "--", "train.py"], env=env,
                     sysroot=str(Path(__file__).parent / "fixtures" / "synthetic" / "hgx-h100"))
    args = accelerate.launch_command_parser().parse_args(plan.launch.argv[2:])
    assert (args.rdzv_backend, args.machine_rank, args.num_machines) == ("c10d", 1, 2)


# --- 11. the Kubernetes dry run's tree, and -t openshift -----------------------------------------------

def test_the_kube_dry_run_keeps_its_tree_under_dot_nodeweave_and_openshift_means_oc(spec_path):
    out = nodeweave(spec_path, "up", "-t", "openshift", "--hold", "--dry-run")
    assert out.returncode == 0, out.stderr
    tree = spec_path.parent / ".nodeweave" / "seed" / "kube"
    apply = [line for line in out.stdout.splitlines() if " apply " in line and not line.startswith("#")]
    assert apply == [f"oc apply -n ml -k {tree}/manifests/nodeweave-up"], out.stdout
    planned = [line for line in out.stdout.splitlines() if line.startswith("# would write .nodeweave/seed/kube/")]
    assert any("manifests/nodeweave-up/kustomization.yaml" in line for line in planned), out.stdout
    assert any("manifests/base/statefulset.yaml" in line and "sha256:" in line for line in planned), out.stdout
    assert not tree.exists()  # a dry run writes nothing: the real up writes the tree it lists, kept to inspect
    again = nodeweave(spec_path, "down", "-t", "openshift", "--dry-run")
    assert again.returncode == 0 and "oc delete" in again.stdout and str(tree) in again.stdout, again.stdout


# --- 10. an overlay of the team's own (the single-pod test variant), no second spec --------------------

def test_up_applies_an_overlay_folder_of_the_users_own(spec_path):
    """``--overlay deploy/one-pod``: the team's kustomization over the rendered base (replicas: 1), held as usual."""
    import shutil as sh

    folder = spec_path.parent
    render = nodeweave(spec_path, "render", "manifests")
    assert render.returncode == 0, render.stderr
    mine = folder / "deploy" / "one-pod"
    mine.mkdir(parents=True)
    (mine / "kustomization.yaml").write_text(
        "resources: [../../manifests/base]\n"
        "patches:\n- target: {kind: StatefulSet, name: seed}\n"
        "  patch: '[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 1}]'\n")
    out = nodeweave(spec_path, "up", "-t", "kubernetes", "--overlay", "deploy/one-pod", "--hold", "--dry-run")
    assert out.returncode == 0, out.stderr
    overlay = folder / ".nodeweave/seed/kube/manifests/nodeweave-up"
    assert not overlay.exists()  # the dry run writes nothing; the files it lists, written as the real up does:
    from test_cluster_argv import backend, write_planned

    write_planned(up_files(backend(spec_path, target="kubernetes", overlay="deploy/one-pod"), "hold"), spec_path)
    assert yaml.safe_load((overlay / "kustomization.yaml").read_text())["resources"] == ["../../../../../deploy/one-pod"]
    kubectl = sh.which("kubectl")
    if kubectl:  # kubectl's own kustomize builds the kept overlay over the team's folder
        assert "until 1 node(s) hold: pod:ml/seed-0[trainer]\n" in out.stdout  # up waits for the overlay's one pod
        built = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
        assert built.returncode == 0, built.stderr
        sts = next(d for d in yaml.safe_load_all(built.stdout) if d and d["kind"] == "StatefulSet")
        assert sts["spec"]["replicas"] == 1 and sts["metadata"]["namespace"] == "ml"
        env = {e["name"]: e.get("value") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["NODEWEAVE_MODE"] == "hold"
    bad = nodeweave(spec_path, "up", "-t", "kubernetes", "--overlay", "deploy/none", "--dry-run")
    assert bad.returncode == 2 and "--overlay 'deploy/none'" in bad.stderr and "kustomization.yaml" in bad.stderr
    if not kubectl:
        pytest.skip("kubectl is not installed: its kustomize did not build the overlay (the rest was checked)")
