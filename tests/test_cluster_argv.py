"""The cluster verbs' exact commands for every target, their options, and their memory of `up`.

Everything here is what ``--dry-run`` prints and what a real run executes
(the same Step objects); the engine tests run them for real.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
import yaml

from plan_parts import down_files, down_steps, up_files, up_steps
from nodeweave.cluster import ClusterOptions, open_backend
from nodeweave.cluster.options import load_state, save_state
from nodeweave.cluster.runner import RunRequest
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

SPEC = """name: job
image: {variant: cpu, registry: localhost/t}
nodes: 2
gpus_per_node: 2
launcher: {script: train.py, args: ["--steps", "5"]}
env: {OMP_NUM_THREADS: "1"}
kubernetes: {namespace: ml, grace_period: 30}
"""


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC)
    return path


def backend(spec_path, **options):
    spec = parse_spec(spec_path.read_text(), str(spec_path))
    return open_backend(spec, spec_path, ClusterOptions(**options).checked())


def texts(phases):
    return [[step.text() for step in phase] for phase in phases]


def test_local_up_and_down_are_compose_with_the_mode_in_the_environment(spec_path):
    b = backend(spec_path, engine="podman")
    up_files(b, "hold")
    (up,), = up_steps(b, "hold", "localhost/t/job:cpu")
    assert up.argv[-5:] == ("-f", str(spec_path.parent / ".nodeweave/job/compose.yaml"), "up", "-d", "--force-recreate")
    assert up.argv[0].endswith("podman-compose")
    assert dict(up.env) == {"NODEWEAVE_MODE": "hold", "NODEWEAVE_IMAGE": "localhost/t/job:cpu",
                            "NODEWEAVE_JOB_TOKEN_HOST": str(spec_path.parent / ".nodeweave/job/job-token"),
                            "NODEWEAVE_JOB_TOKEN_FILE": "/run/nodeweave/job-token"}
    assert not (spec_path.parent / ".nodeweave/job/job-token").exists()  # a dry run makes no token
    (down,), = down_steps(b, False)
    assert down.argv[-4:] == (str(spec_path.parent / ".nodeweave/job/compose.yaml"), "down", "-t", "30")
    assert [n.remote.label for n in b.nodes()] == ["podman:job-0", "podman:job-1"]
    docker = backend(spec_path, engine="docker")
    assert up_steps(docker, "run", None)[0][0].argv[:2] == ("docker", "compose")


def test_local_up_renders_the_jobs_own_compose_file_and_rotates_its_token(spec_path):
    from nodeweave.cluster import token

    b = backend(spec_path)
    mode = token.mounted_mode()  # as root: root's and group 0's, never UID 1000's (walk15a A15)
    kept = ", root's and group 0's: the images' user reads it by its group 0" if os.geteuid() == 0 else ""
    token_line = (f".nodeweave/job/job-token (a new random job token ({mode:04o}{kept}), mounted at "
                  "/run/nodeweave/job-token in every node)")
    assert [f"{f.path} ({f.what})" for f in up_files(b, "hold")] == [
        ".nodeweave/job/compose.yaml (new: rendered from nodeweave.yaml)", token_line]
    compose = spec_path.parent / ".nodeweave" / "job" / "compose.yaml"
    assert not compose.exists()
    write_planned(up_files(b, "hold"), spec_path)
    text = compose.read_text()
    assert "NODEWEAVE_MODE: ${NODEWEAVE_MODE:-run}" in text
    assert f"- {spec_path.parent.resolve()}:/workspace" in text  # host paths absolute: it lives in the state folder
    assert not (spec_path.parent / "compose").exists()  # render's compose/local.yaml is not up's business
    token_file = spec_path.parent / ".nodeweave" / "job" / "job-token"
    first = token_file.read_text()
    assert token_file.stat().st_mode & 0o777 == mode and len(first.strip()) >= 40
    assert [f"{f.path} ({f.what})" for f in up_files(b, "hold")] == [token_line]  # the compose file is unchanged
    write_planned(up_files(b, "hold"), spec_path)
    assert token_file.read_text() != first  # every up rotates the token
    assert first.strip() not in compose.read_text()


def test_two_specs_in_one_folder_never_touch_each_others_job(spec_path):
    """Issue 34: after `up --spec b.yaml`, `down --spec a.yaml` brought down job b (one compose/local.yaml, one token)."""
    other = spec_path.parent / "b.yaml"
    other.write_text(spec_path.read_text().replace("name: job", "name: other"))
    a, b = backend(spec_path), backend(other)
    write_planned(up_files(a, "run"), spec_path)
    a_token = (spec_path.parent / ".nodeweave/job/job-token").read_text()
    write_planned(up_files(b, "run"), spec_path)
    assert (spec_path.parent / ".nodeweave/job/job-token").read_text() == a_token  # b's up did not re-key a
    write_planned(down_files(a, False), spec_path)
    (down,), = down_steps(a, False)
    used = Path(down.argv[down.argv.index("-f") + 1])
    assert used == spec_path.parent / ".nodeweave/job/compose.yaml"
    project = down.argv[down.argv.index("-p") + 1]  # compose's project: job a's of this folder, never b's
    assert yaml.safe_load(used.read_text())["name"] == project == a.mark.project != b.mark.project
    assert project.startswith("job-") and project != "job-local"
    assert set(yaml.safe_load(used.read_text())["services"]) == {"job-0", "job-1"}


def test_run_argv_goes_through_the_nodes_entrypoint(spec_path):
    b = backend(spec_path, engine="podman")
    request = RunRequest(run_id="r1", command=["train.py", "--lr", "3e-4"], env={"NCCL_MAX_NCHANNELS": "16"},
                         profile="nsys")
    argv = b.nodes()[1].entrypoint_argv(request.entrypoint_args(), request.env)
    assert argv == ["podman", "exec", "job-1", "env", "NCCL_MAX_NCHANNELS=16", "nodeweave-entrypoint", "--mode", "run",
                    "--run-id", "r1", "--profile", "nsys", "--", "train.py", "--lr", "3e-4"]


def test_hosts_up_sends_the_compose_file_and_generates_each_hosts_rank(spec_path):
    b = backend(spec_path, target="hosts", hosts=("gpu01", "me@gpu02"), remote_dir="/srv/job")
    writes, starts = up_steps(b, "hold", None)
    tokens, writes = writes[:2], writes[2:]
    assert [t.stdin for t in tokens][0] == tokens[1].stdin and len(tokens[0].stdin.strip()) >= 40  # one per job
    assert all(t.stdin.strip() not in " ".join(step.text() for step in writes + starts + tokens) for t in tokens)
    assert shlex.split(tokens[1].argv[-1])[-2:] == ["/srv/job/.nodeweave/job", "job-token"]
    assert "umask 077" in tokens[1].argv[-1]
    assert writes[1].stdin.startswith("# Generated by nodeweave") and "node:" in writes[1].stdin
    from nodeweave.cluster.backends.hosts import WRITE_RENDERED

    assert writes[1].argv[-3:-1] == ("me@gpu02", "--")  # the write that keeps a host's own file (walk6, W40)
    assert shlex.split(writes[1].argv[-1]) == [*WRITE_RENDERED, "/srv/job/compose", "node.yaml", "compose/node.yaml"]
    remote = shlex.split(starts[1].argv[-1])
    assert starts[1].argv[starts[1].argv.index("--") - 1] == "me@gpu02"
    assert remote == ["env", "NODE_RANK=1", "MASTER_ADDR=gpu01", "NNODES=2", "NODEWEAVE_MODE=hold",
                      "NODEWEAVE_IMAGE=localhost/t/job:cpu",  # the spec's, never a host's own NODEWEAVE_IMAGE
                      "NODEWEAVE_JOB_TOKEN_HOST=/srv/job/.nodeweave/job/job-token",
                      "NODEWEAVE_JOB_TOKEN_FILE=/run/nodeweave/job-token", "docker", "compose",
                      "-p", b.mark.project, "-f", "/srv/job/compose/node.yaml", "up", "-d", "--force-recreate"]
    sent = yaml.safe_load(writes[0].stdin)  # this folder's project, its container labelled with job and folder
    assert sent["name"] == b.mark.project and b.mark.project.startswith("job-")
    assert sent["services"]["node"]["labels"] == b.mark.labels(), sent["services"]
    assert [n.remote.label for n in b.nodes()] == ["ssh+docker:gpu01/job-node", "ssh+docker:me@gpu02/job-node"]
    downs, removals = down_steps(b, False)  # the job token up sent goes once the node is down (fix20a)
    assert shlex.split(downs[0].argv[-1])[-3:] == ["down", "-t", "30"]
    assert shlex.split(removals[1].argv[-1]) == ["rm", "-f", "/srv/job/.nodeweave/job/job-token"]


def test_bare_hosts_get_the_compose_environment_and_a_working_directory(spec_path):
    b = backend(spec_path, target="hosts", hosts=("10.0.0.1", "10.0.0.2"), engine="none", remote_dir="/srv/job")
    (steps,) = up_steps(b, "hold", None)
    assert [t.what for t in steps] == ["send a new job token to node-0 (ssh:10.0.0.1)", "send a new job token to "
                                       "node-1 (ssh:10.0.0.2)", "mark node-0 (ssh:10.0.0.1) as this folder's job",
                                       "mark node-1 (ssh:10.0.0.2) as this folder's job"]
    assert json.loads(steps[3].stdin) == b.mark.labels() and steps[3].argv[-1].endswith("/srv/job/.nodeweave/job "
                                                                                          "owner.json")
    assert down_steps(b, False) == []
    node = b.nodes()[1]
    argv = node.entrypoint_argv(["--node", "status"])
    remote = shlex.split(argv[-1])
    assert remote[:6] == ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", "/srv/job", "env"]
    env = dict(item.split("=", 1) for item in remote[6:remote.index("nodeweave-entrypoint")])
    assert env["NODE_RANK"] == "1" and env["MASTER_ADDR"] == "10.0.0.1" and env["NODEWEAVE_NNODES"] == "2"
    assert env["NODEWEAVE_LAUNCHER"] == "torchrun" and env["OMP_NUM_THREADS"] == "1"
    assert env["NODEWEAVE_JOB_TOKEN_FILE"] == "/srv/job/.nodeweave/job/job-token"
    with pytest.raises(UsageError, match="no container log"):
        b.logs(node, follow=False)


def test_hosts_need_an_absolute_remote_dir_when_the_workspace_is_relative(spec_path):
    """--remote-dir is offered to a verb that has it (up); outside a command (and to doctor --cluster) only the
    spec's workspace.host_path is (left12c: the hint offers the running verb's options only)."""
    from typer._click import Context

    from test_left12c import command_of

    with Context(command_of(["up"])), pytest.raises(UsageError, match="--remote-dir"):
        backend(spec_path, target="hosts", hosts=("gpu01",))
    with pytest.raises(UsageError, match="workspace.host_path") as said:
        backend(spec_path, target="hosts", hosts=("gpu01",))
    assert "--remote-dir" not in str(said.value)


def write_planned(files, spec_path):
    """What the plan executor does with a plan's files phase."""
    from nodeweave.cluster.execute import write_files
    from nodeweave.plan import FilesPhase

    write_files(FilesPhase("the job's files", files=tuple(files)), spec_path.parent, lambda line: None)


def test_kubernetes_up_applies_an_overlay_that_holds_and_down_keeps_the_claim(spec_path):
    b = backend(spec_path, target="kubernetes")
    planned = up_files(b, "hold")
    assert not (spec_path.parent / ".nodeweave/job/kube").exists()  # planned, not written: a dry run writes nothing
    write_planned(planned, spec_path)
    (drop_old,), (apply,) = up_steps(b, "hold", None)
    assert drop_old.argv[-4:] == ("secret", "-l", "app.kubernetes.io/instance=job,app.kubernetes.io/component=job-token",
                                  "--ignore-not-found")
    overlay = Path(apply.argv[-1])
    assert list(apply.argv[:4]) == ["kubectl", "apply", "-n", "ml"] and apply.argv[4] == "-k"
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["../base"] and kustomization["namespace"] == "ml"
    patch = yaml.safe_load((overlay / "patch-0.yaml").read_text())
    assert patch["spec"]["template"]["spec"]["containers"] == [
        {"name": "trainer", "env": [{"name": "NODEWEAVE_MODE", "value": "hold"}]}]
    assert (overlay.parent / "base" / "statefulset.yaml").exists()
    (generator,) = kustomization["secretGenerator"]
    assert generator["name"] == "job-job-token" and generator["files"] == ["job-token"]
    token = (overlay / "job-token").read_text().strip()
    assert (overlay / "job-token").stat().st_mode & 0o777 == 0o600 and len(token) >= 40
    mount = yaml.safe_load((overlay / "patch-1.yaml").read_text())["spec"]["template"]["spec"]
    assert mount["volumes"] == [{"name": "job-token", "secret": {"secretName": "job-job-token", "defaultMode": 0o440}}]
    assert mount["containers"][0]["env"] == [{"name": "NODEWEAVE_JOB_TOKEN_FILE", "value": "/run/nodeweave/job-token"}]
    assert all(token not in p.read_text() for p in overlay.parent.rglob("*.yaml"))
    assert overlay.exists() and overlay == spec_path.parent / ".nodeweave/job/kube/manifests/nodeweave-up"  # kept
    (delete,), (tokens,) = down_steps(b, False)
    write_planned(down_files(b, False), spec_path)
    assert tokens.argv[-3:-1] == ("-l", "app.kubernetes.io/instance=job,app.kubernetes.io/component=job-token")
    claim_patch = yaml.safe_load((Path(delete.argv[5]) / "patch-0.yaml").read_text())
    assert claim_patch["kind"] == "PersistentVolumeClaim" and claim_patch["$patch"] == "delete"
    assert list(delete.argv) == ["kubectl", "delete", "-n", "ml", "-k", delete.argv[5], "--ignore-not-found"]
    phases = down_steps(b, True)
    assert phases[-1][0].argv[-4:] == ("pvc", "-l", "app.kubernetes.io/instance=job", "--ignore-not-found")


def test_openshift_specs_reach_pods_with_oc_and_pods_by_name(spec_path):
    spec_path.write_text(SPEC.replace("grace_period: 30}", "grace_period: 30, openshift: true}"))
    b = backend(spec_path, target="openshift", kube_context="prod")
    b._replicas = lambda: 3  # the live StatefulSet's count, without a cluster to ask
    nodes = b.nodes()
    # an oc pod is named by the address that reaches it with oc (replay11 R2: oc:..., not kubectl's pod:...)
    assert [n.remote.label for n in nodes] == [f"oc:ml/job-{i}[trainer]" for i in range(3)]
    assert nodes[2].argv(["true"]) == ["oc", "--context", "prod", "exec", "-n", "ml", "-c", "trainer", "job-2",
                                       "--", "true"]
    assert b.logs(nodes[0], follow=True) == ["oc", "--context", "prod", "logs", "-f", "-n", "ml", "-c",
                                             "trainer", "job-0"]


def test_kubernetes_pod_states_come_from_get_pods_json():
    from nodeweave.cluster.backends.kube import pod_state

    ready = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    pulling = {"status": {"phase": "Pending", "containerStatuses": [
        {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}]}}
    unschedulable = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]}}
    from nodeweave.cluster.base import NodeState

    assert pod_state(ready).word == "Running, ready" and pod_state(ready).state is NodeState.RUNNING
    assert pod_state(pulling).word == "Pending: ImagePullBackOff" and pod_state(pulling).state is NodeState.STUCK
    assert pod_state(unschedulable).word.startswith("Pending: Unschedulable (0/4 nodes")
    assert pod_state(unschedulable).state is NodeState.STARTING
    assert pod_state({"status": {"phase": "Failed"}}).state is NodeState.STUCK
    assert pod_state({"status": {"phase": "Succeeded"}}).state is NodeState.UNKNOWN  # asked, as before


@pytest.mark.parametrize("options, message", [
    ({"target": "mars"}, "--target 'mars' is not accepted"),
    ({"target": "hosts"}, "needs its hosts"),
    ({"engine": "none"}, "--engine 'none' is not accepted for target local"),
    ({"hosts": ("-oProxyCommand=x",)}, "--host"),
    ({"target": "kubernetes", "namespace": "Bad_NS"}, "--namespace"),
    ({"target": "kubernetes", "overlay": "../gke"}, "--overlay '../gke'"),
    ({"target": "hosts", "hosts": ("a",), "remote_dir": "relative/dir"}, "--remote-dir"),
])
def test_bad_cluster_options_are_named(options, message):
    with pytest.raises(UsageError, match=message):
        ClusterOptions(**options).checked()


def test_up_remembers_the_cluster_and_flags_still_win(spec_path):
    saved = ClusterOptions(target="hosts", hosts=("a", "b"), engine="none", remote_dir="/srv/x").checked()
    save_state(spec_path, "job", saved)
    assert load_state(spec_path, "job") == saved
    assert ClusterOptions().merged(load_state(spec_path, "job")).checked() == saved
    assert ClusterOptions(target="local").merged(saved).checked().target == "local"
    assert json.loads((spec_path.parent / ".nodeweave" / "job" / "cluster.json").read_text())["hosts"] == ["a", "b"]
    assert load_state(spec_path, "other") == ClusterOptions()


def test_the_old_single_state_file_is_read_and_moved_only_when_up_saves(spec_path):
    """Issue 43 (s8): reading writes nothing (a dry run reads state); the entry moves when state is saved."""
    legacy = spec_path.parent / ".nodeweave" / "cluster.json"
    legacy.parent.mkdir()
    text = json.dumps({"job": {"target": "hosts", "hosts": ["a", "b"], "engine": "none"},
                       "other": {"target": "local", "engine": "podman"}})
    legacy.write_text(text)
    job = load_state(spec_path, "job")
    assert job == ClusterOptions(target="hosts", hosts=("a", "b"), engine="none")
    assert legacy.read_text() == text and not (spec_path.parent / ".nodeweave/job").exists()  # read only
    save_state(spec_path, "job", job)
    assert json.loads((spec_path.parent / ".nodeweave/job/cluster.json").read_text())["hosts"] == ["a", "b"]
    assert set(json.loads(legacy.read_text())) == {"other"}  # moved: the old file keeps only the jobs not saved
    save_state(spec_path, "other", load_state(spec_path, "other"))
    assert not legacy.exists()  # its last entry moved
    assert load_state(spec_path, "job").hosts == ("a", "b")
    assert load_state(spec_path, "other").engine == "podman"


def test_a_target_in_the_state_file_is_named_as_the_files_field(spec_path):
    """Issue 43 (row 30): no "--target 'marsnet' is not accepted" for a flag the user never gave."""
    state = spec_path.parent / ".nodeweave" / "job" / "cluster.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"target": "marsnet"}')
    with pytest.raises(UsageError) as caught:
        load_state(spec_path, "job")
    assert "field target is 'marsnet'" in str(caught.value) and "--target" not in str(caught.value)


@pytest.mark.parametrize("text, words", [
    ("{", "is not JSON"), ("[1]", "its top level is not a mapping"), ('{"hosts": "gpu01"}', 'field hosts is "gpu01"'),
    ('{"target": 3}', "field target is 3"), ('{"tagret": "local"}', "unknown field 'tagret'"),
    ('{"hosts": [1, 2]}', "not a list of text"),
])
def test_a_hand_edited_state_file_is_named_with_its_remedy(spec_path, text, words):
    state = spec_path.parent / ".nodeweave" / "job" / "cluster.json"
    state.parent.mkdir(parents=True)
    state.write_text(text)
    with pytest.raises(UsageError, match="then give the verb the flags `up` was given") as caught:
        load_state(spec_path, "job")
    assert f"remove the file {state}," in str(caught.value) and words in str(caught.value)


def test_a_hand_edited_old_state_file_is_named_too(spec_path):
    legacy = spec_path.parent / ".nodeweave" / "cluster.json"
    legacy.parent.mkdir()
    legacy.write_text('{"job": {"ssh_options": "-v"}}')
    with pytest.raises(UsageError, match=r'cluster.json: field job.ssh_options is "-v", not a list of text'):
        load_state(spec_path, "job")


def test_the_specs_hosts_list_is_the_hosts_target_and_its_file_goes_along(tmp_path):
    from nodeweave.cli.habits.clusteropts import open_cluster
    from nodeweave.cluster.options import ClusterOptions as Given

    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC.replace("nodes: 2\n", "hosts: [gpu01, gpu02]\nworkspace: {host_path: /srv/job}\n"))
    spec, b, options = open_cluster(path, Given())
    assert options.target == "hosts" and options.hosts == ("gpu01", "gpu02")
    writes, _ = up_steps(b, "hold", None)
    writes = writes[2:]  # after the job token to each host
    assert [step.what for step in writes] == ["send compose/node.yaml to gpu01", "send compose/hosts to gpu01",
                                              "send compose/node.yaml to gpu02", "send compose/hosts to gpu02"]
    assert writes[1].stdin.splitlines()[-2:] == ["gpu01", "gpu02"]
    _, _, options = open_cluster(path, Given(hosts=("me@gpu01", "me@gpu02")))
    assert options.hosts == ("me@gpu01", "me@gpu02")
    with pytest.raises(UsageError, match="the spec's hosts are gpu01, gpu02"):
        open_cluster(path, Given(hosts=("gpu02", "gpu01")))


def test_kubernetes_up_pins_the_digest_the_last_push_recorded(spec_path):
    import shutil
    import subprocess

    from nodeweave.build.pushed import record_push, recorded_digest

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (its built-in kustomize builds the tree up applies) is not installed "
                    "(.ci/setup-tools.sh installs it)")

    digest = "sha256:" + "ab" * 32
    record_push(spec_path.parent, {"localhost/t/job:cpu": digest, "localhost/t/job:cpu-0123abc": "sha256:" + "cd" * 32})
    assert recorded_digest(spec_path.parent, "localhost/t/job", "cpu") == digest
    b = backend(spec_path, target="kubernetes")
    write_planned(up_files(b, "run"), spec_path)
    (_,), (apply,) = up_steps(b, "run", None)
    built = subprocess.run(["kubectl", "kustomize", apply.argv[-1]], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    images = {c["image"] for doc in yaml.safe_load_all(built.stdout) if doc and doc["kind"] == "StatefulSet"
              for c in doc["spec"]["template"]["spec"]["containers"]}
    assert images == {f"localhost/t/job@{digest}"}  # kustomize's images transformer: by digest, not the moving tag
    pinned = spec_path.read_text().replace("image: {variant: cpu,", 'image: {variant: cpu, digest: "sha256:' + "ef" * 32 + '",')
    spec_path.write_text(pinned)  # the spec's own digest wins: up adds no images entry
    b = backend(spec_path, target="kubernetes")
    kustomization = [f for f in up_files(b, "run") if f.path.endswith("nodeweave-up/kustomization.yaml")]
    assert "images" not in yaml.safe_load(kustomization[0].content)
