"""A job is what its own folder started (issue 41 item 4; first-day rows s2, s3, s4).

- Two folders holding a spec with the same ``name`` (two clones, a git worktree): folder A's ``up`` labels
  its containers with the job and A's folder; in folder B every verb refuses them (exit 3) naming A, dry
  runs too, while A's verbs go on. The engine here is a stand-in ``podman`` on PATH that answers the one
  read the verbs make (``podman inspect``) from the containers A's own compose file describes: the
  labels are those of A's ``.nodeweave/<job>/compose.yaml``, written by A's ``up`` code.
  tests/e2e/test_cluster_identity.py does the same with real podman containers.
- Kubernetes through the kubectl stand-in (tests/e2e/kubectl_standin.py): a StatefulSet annotated by
  folder A is not applied over or deleted from folder B; the annotations are what the real kubectl's
  kustomize builds from A's overlay.
- Rename the job (or change ``kubernetes.namespace``) while it is up: ``down`` takes down what ``up`` made,
  ``status`` says the old job is there, ``up`` into another namespace is refused until then.
- ``NODEWEAVE_IMAGE`` left in the shell: ``up``'s plan names the image and the variable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
from plan_parts import up_files, up_steps
import pytest
import yaml
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

KUBECTL_STANDIN = Path(__file__).parent / "e2e" / "kubectl_standin.py"
SPEC = """name: twin
image: {variant: cpu, registry: localhost/t}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""
# A podman that knows the containers of one JSON file ({name: labels}) and answers inspect for them, as podman
# does: one line per container found, exit 125 when one is missing; anything else is refused (exit 2).
PODMAN = r'''#!{python}
import json, os, sys
known = json.load(open(os.environ["STANDIN_CONTAINERS"]))
args = sys.argv[1:]
if args[:3] != ["inspect", "--type", "container"] or args[3] != "--format":
    sys.stderr.write("podman stand-in: not a call nodeweave's verbs make here: %s\n" % args)
    sys.exit(2)
fmt, names = args[4], args[5:]
missing = 0
for name in names:
    if name not in known:
        sys.stderr.write("Error: no such container %s\n" % name)
        missing = 1
    elif fmt.startswith("{{{{json .Name}}}} {{{{json .Config.Labels}}}}"):
        print(json.dumps(name), json.dumps(known[name]))
    else:  # the state read: every known container runs
        print(json.dumps(name), json.dumps("running"), 0)
sys.exit(125 if missing else 0)
'''


def cli(folder: Path, env: dict, *args: str) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=120)


def _env(tmp_path: Path, **extra) -> dict:
    return {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "COLUMNS": "200", "HOME": home_beside(tmp_path),
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}, **extra}


def _folder(path: Path, spec: str = SPEC) -> Path:
    path.mkdir(parents=True)
    (path / "nodeweave.yaml").write_text(spec)
    (path / "train.py").write_text("print('train')\n")
    return path / "nodeweave.yaml"


def _up_files(spec_path: Path):
    """What `up` writes and records in its folder before it starts anything (the job's compose file, the record),
    by the code `up` runs: open_cluster, remember_up, then the backend's files."""
    from nodeweave.cli.habits.clusteropts import open_cluster, remember_up
    from nodeweave.cluster.options import ClusterOptions

    spec, backend, checked = open_cluster(spec_path, ClusterOptions(target="local", engine="podman"))
    remember_up(spec_path, spec, checked, backend)
    from nodeweave.cluster.execute import write_files
    from nodeweave.plan import FilesPhase

    write_files(FilesPhase("the job's files", files=tuple(up_files(backend, "hold"))), backend.spec_dir,
                lambda line: None)
    return backend


@pytest.fixture
def twins(tmp_path, monkeypatch):
    """Folders a and b holding the same spec; a's `up` made containers twin-0 and twin-1 (labels from a's file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(PODMAN.format(python=sys.executable))
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    monkeypatch.setenv("STANDIN_CONTAINERS", str(tmp_path / "none.json"))
    (tmp_path / "none.json").write_text("{}")
    backend = _up_files(a)
    services = yaml.safe_load(backend.compose_file.read_text())["services"]
    containers = {svc["container_name"]: svc.get("labels") or {} for svc in services.values()}
    (tmp_path / "containers.json").write_text(json.dumps(containers))
    return a, b, _env(tmp_path, STANDIN_CONTAINERS=str(tmp_path / "containers.json"))


VERBS = (("run", "--dry-run", "--", "train.py"), ("exec", "--dry-run", "--", "hostname"), ("stop", "--dry-run"),
         ("shell", "--dry-run"), ("down", "--dry-run"), ("up", "--dry-run"), ("check", "--dry-run"),
         ("status",), ("logs",), ("sync", "-t", "local", "--dry-run"))


@pytest.mark.parametrize("verb", VERBS, ids=[v[0] for v in VERBS])
def test_a_verb_in_another_folder_refuses_the_containers_its_up_did_not_make(twins, verb):
    a, b, env = twins
    out = cli(b.parent, env, *verb)
    assert out.returncode == 3, (verb, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"`nodeweave up` in {a.parent} (job twin)" in lines[0], out.stderr
    assert "container twin-0 (and 1 more) was started by" in lines[0] and str(b.parent) in lines[0], lines
    assert "podman exec" not in out.stdout and "podman-compose" not in out.stdout, out.stdout


def test_the_folder_that_made_them_acts_on_them(twins):
    a, _, env = twins
    for verb in (("stop", "--dry-run"), ("exec", "--dry-run", "--", "hostname"), ("down", "--dry-run")):
        out = cli(a.parent, env, *verb)
        assert out.returncode == 0, (verb, out.stdout, out.stderr)
    down = cli(a.parent, env, "down", "--dry-run").stdout
    assert f"-p twin-{_mark(a).owner[:8]} -f {a.parent}/.nodeweave/twin/compose.yaml down" in down, down


def _mark(spec_path: Path):
    from nodeweave.cluster.identity import JobMark

    return JobMark.of(spec_path.parent, "twin")


def test_each_folder_has_its_own_compose_project_and_labels(tmp_path, monkeypatch):
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    env = _env(tmp_path)
    (tmp_path / "bin").mkdir()
    # up's own files are written by the code up runs, which first asks for podman: the stand-in, whatever this
    # machine has installed (it is never called here)
    (tmp_path / "bin" / "podman").write_text(PODMAN.format(python=sys.executable))
    (tmp_path / "bin" / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    plans = [json.loads(cli(f.parent, env, "up", "--dry-run", "-o", "json").stdout) for f in (a, b)]
    argvs = [p["phases"][1]["steps"][0]["argv"] for p in plans]
    projects = [argv[argv.index("-p") + 1] for argv in argvs]
    assert projects[0] != projects[1] and all(p.startswith("twin-") for p in projects), projects
    written = yaml.safe_load(_up_files(a).compose_file.read_text())
    assert written["name"] == projects[0]
    assert written["services"]["twin-1"]["labels"] == {"io.nodeweave.job": "twin", "io.nodeweave.folder":
                                                       str(a.parent.resolve()),
                                                       "io.nodeweave.owner": _mark(a).owner}


def test_rename_while_up_down_takes_down_the_old_job_and_status_names_it(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    spec = _folder(tmp_path / "r", SPEC.replace("name: twin", "name: oldname"))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (bin_dir / "podman").write_text(PODMAN.format(python=sys.executable))
    (bin_dir / "podman").chmod(0o755)
    (tmp_path / "c.json").write_text("{}")
    monkeypatch.setenv("STANDIN_CONTAINERS", str(tmp_path / "c.json"))
    old = _up_files(spec)
    services = yaml.safe_load(old.compose_file.read_text())["services"]
    (tmp_path / "c.json").write_text(json.dumps({s["container_name"]: s["labels"] for s in services.values()}))
    spec.write_text(SPEC.replace("name: twin", "name: newname"))
    env = _env(tmp_path, STANDIN_CONTAINERS=str(tmp_path / "c.json"))
    down = cli(spec.parent, env, "down", "--dry-run")
    assert down.returncode == 0, down.stderr
    old_line = f"-p {old.mark.project} -f {spec.parent}/.nodeweave/oldname/compose.yaml down"
    assert old_line in down.stdout and ".nodeweave/oldname/ records a cluster" in down.stdout, down.stdout
    # nothing is up under the new name: its half is "nothing to take down", nothing planned (walk15 A16, fix17b)
    assert "/.nodeweave/newname/compose.yaml down" not in down.stdout and "nothing to take down" in down.stdout
    status = cli(spec.parent, env, "status", "--json")
    data = json.loads(status.stdout)
    assert data["renamed"] and ".nodeweave/oldname/ records a cluster `nodeweave up` started as job oldname" \
        in data["renamed"][0] and "`nodeweave down` takes it down" in status.stderr, status.stderr
    up = cli(spec.parent, env, "up", "--dry-run")
    assert up.returncode == 0 and "# .nodeweave/oldname/ records a cluster" in up.stdout, up.stdout
    stop = cli(spec.parent, env, "stop")  # the new name has no node: the refusal names the old job too
    assert stop.returncode == 3 and "newname is not up" in stop.stderr and ".nodeweave/oldname/ records a " \
        "cluster `nodeweave up` started as job oldname" in stop.stderr, stop.stderr


def test_a_real_down_forgets_the_old_jobs_record(tmp_path):
    """down's real run drops ``made`` of every job it took down, so status stops naming them."""
    from nodeweave.cluster.options import ClusterOptions, load_made, record_made, recorded_elsewhere

    spec = _folder(tmp_path / "r", SPEC)
    record_made(spec, "oldname", ClusterOptions(target="local"), {"job": "oldname", "spec": "nodeweave.yaml",
                                                                  "target": "local"})
    record_made(spec, "other", ClusterOptions(target="local"), {"job": "other", "spec": "b.yaml", "target": "local"})
    assert [m["job"] for m in recorded_elsewhere(spec, "twin")] == ["oldname"]  # b.yaml's job is b.yaml's
    from nodeweave.cluster.options import forget_allocation

    forget_allocation(spec, "oldname")
    assert load_made(spec, "oldname") is None and recorded_elsewhere(spec, "twin") == []
    assert load_made(spec, "other")["spec"] == "b.yaml"


def test_the_environments_image_is_in_the_plan(tmp_path):
    spec = _folder(tmp_path / "e")
    (tmp_path / "bin").mkdir()
    plain = json.loads(cli(spec.parent, _env(tmp_path), "up", "--dry-run", "-o", "json").stdout)
    step = plain["phases"][1]["steps"][0]
    assert step["env"]["NODEWEAVE_IMAGE"] == "localhost/t/twin:cpu"
    assert "every node runs image localhost/t/twin:cpu: the spec's image (image.registry, name and variant)" in plain["notes"]
    left = cli(spec.parent, _env(tmp_path, NODEWEAVE_IMAGE="localhost/old:debug", DOCKER_HOST="unix:///x.sock"),
               "up", "--dry-run")
    assert left.returncode == 0, left.stderr
    assert ("# every node runs image localhost/old:debug: NODEWEAVE_IMAGE from this environment overrides the "
            "spec's localhost/t/twin:cpu") in left.stdout, left.stdout
    assert "NODEWEAVE_IMAGE=localhost/old:debug " in left.stdout and "# DOCKER_HOST=unix:///x.sock from this " \
        "environment" in left.stdout
    flag = json.loads(cli(spec.parent, _env(tmp_path, NODEWEAVE_IMAGE="localhost/old:debug"), "up", "--image",
                          "localhost/t/twin:cpu-abc", "--dry-run", "-o", "json").stdout)
    assert flag["phases"][1]["steps"][0]["env"]["NODEWEAVE_IMAGE"] == "localhost/t/twin:cpu-abc"
    assert any("--image (over NODEWEAVE_IMAGE=localhost/old:debug" in n for n in flag["notes"]), flag["notes"]


def test_the_steps_set_every_variable_the_compose_file_reads(tmp_path):
    """No ${VAR} of the job's compose file is left to the caller's environment (the class of NODEWEAVE_IMAGE)."""
    from nodeweave.cli.habits.clusteropts import open_cluster
    from nodeweave.cluster.environment import interpolated
    from nodeweave.cluster.options import ClusterOptions

    spec = _folder(tmp_path / "v")
    _, backend, _ = open_cluster(spec, ClusterOptions(target="local", engine="podman"), dry_run=True)
    up_files(backend, "hold")
    (start,), = up_steps(backend, "hold", None)
    from nodeweave.cluster.backends.local import render_up_compose

    read = set(interpolated(render_up_compose(backend.spec, backend.spec_dir, backend.mark)))
    assert read and read <= set(dict(start.env)), (read, start.env)


@pytest.fixture
def kube(tmp_path):
    real = shutil.which("kubectl")
    if real is None:
        pytest.skip("kubectl is not installed (.ci/setup-tools.sh installs it)")
    bin_dir, state = tmp_path / "bin", tmp_path / "standin"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} {KUBECTL_STANDIN} \"$@\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    return _env(tmp_path, STANDIN_STATE=str(state), STANDIN_REAL_KUBECTL=real), state, real


KUBE_SPEC = SPEC + "kubernetes: {namespace: ml}\n"


def _applied_annotations(spec_path: Path, real_kubectl: str) -> dict:
    """The StatefulSet's annotations as the real kubectl's kustomize builds them from the overlay `up` writes."""
    from nodeweave.cluster.execute import write_files
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.cluster import open_backend
    from nodeweave.plan import FilesPhase
    from nodeweave.spec import load_spec

    backend = open_backend(load_spec(spec_path), spec_path, ClusterOptions(target="kubernetes").checked())
    files = up_files(backend, "hold")
    write_files(FilesPhase("tree", files=tuple(files)), backend.spec_dir, lambda line: None)
    from nodeweave.cluster.backends.kube import OVERLAY

    overlay = [f.path for f in files if f.path.endswith(f"{OVERLAY}/kustomization.yaml")][0].rpartition("/")[0]
    built = subprocess.run([real_kubectl, "kustomize", str(backend.spec_dir / overlay)], capture_output=True,
                           text=True, check=True).stdout
    (sts,) = [d for d in yaml.safe_load_all(built) if d and d["kind"] == "StatefulSet"]
    assert sts["spec"]["template"]["metadata"]["annotations"]["nodeweave.io/owner"] == backend.mark.owner
    return sts["metadata"]["annotations"]


def test_kubernetes_refuses_a_statefulset_another_folder_applied(tmp_path, kube):
    env, state, real = kube
    a, b = _folder(tmp_path / "a", KUBE_SPEC), _folder(tmp_path / "b", KUBE_SPEC)
    annotations = _applied_annotations(a, real)
    folder = str(a.parent.resolve())
    shown = folder if len(folder.encode()) <= 63 else "..." + folder[-60:]  # podman kube play's limit on a value
    assert annotations["nodeweave.io/folder"] == shown
    (state / "state.json").write_text(json.dumps({"standin/ml": {"statefulsets": {"twin": {
        "replicas": 2, "annotations": annotations, "pods": {}}}}}))
    for verb in (("up", "-t", "kubernetes", "--dry-run"), ("down", "-t", "kubernetes", "--dry-run"),
                 ("stop", "-t", "kubernetes", "--dry-run")):
        out = cli(b.parent, env, *verb)
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        assert f"StatefulSet twin in namespace ml was started by `nodeweave up` in {shown}" in out.stderr
    mine = cli(a.parent, env, "down", "-t", "kubernetes", "--dry-run")
    assert mine.returncode == 0 and "kubectl delete -n ml -k" in mine.stdout, mine.stderr


def test_kubernetes_refuses_a_claim_another_folders_down_kept(tmp_path, kube):
    """Folder A's `down` (without --delete-claims) keeps its workspace claim; folder B's job of the same name
    would apply over it (its pods mounting A's data) or delete it with `down --delete-claims`, both by the job's
    name alone: every verb of B refuses, naming the claim and A; A's own `down --delete-claims` goes on."""
    env, state, real = kube
    a, b = _folder(tmp_path / "a", KUBE_SPEC), _folder(tmp_path / "b", KUBE_SPEC)
    annotations = _applied_annotations(a, real)
    (state / "state.json").write_text(json.dumps({"standin/ml": {
        "claims": {"twin-workspace": {"app.kubernetes.io/instance": "twin"}},
        "claim_annotations": {"twin-workspace": annotations}}}))
    for verb in (("up", "-t", "kubernetes", "--dry-run"), ("down", "-t", "kubernetes", "--delete-claims"),
                 ("down", "-t", "kubernetes", "--delete-claims", "--dry-run")):
        out = cli(b.parent, env, *verb)
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        assert "claim twin-workspace in namespace ml was started by `nodeweave up` in" in out.stderr, out.stderr
    assert "twin-workspace" in json.loads((state / "state.json").read_text())["standin/ml"]["claims"]
    mine = cli(a.parent, env, "down", "-t", "kubernetes", "--delete-claims", "--dry-run")
    assert mine.returncode == 0 and "delete -n ml pvc -l app.kubernetes.io/instance=twin" in mine.stdout, \
        mine.stdout + mine.stderr


def test_kubernetes_namespace_changed_while_up(tmp_path, kube, monkeypatch):
    env, state, real = kube
    spec = _folder(tmp_path / "k", KUBE_SPEC)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("STANDIN_STATE", env["STANDIN_STATE"])
    from nodeweave.cli.habits.clusteropts import open_cluster, remember_up
    from nodeweave.cluster.options import ClusterOptions

    loaded, backend, checked = open_cluster(spec, ClusterOptions(target="kubernetes"))
    remember_up(spec, loaded, checked, backend)  # what `up -t kubernetes` records
    spec.write_text(KUBE_SPEC.replace("namespace: ml", "namespace: ml2"))
    down = cli(spec.parent, env, "down", "--dry-run")
    assert down.returncode == 0 and "kubectl delete -n ml -k" in down.stdout, down.stdout + down.stderr
    up = cli(spec.parent, env, "up", "--dry-run")
    assert up.returncode == 3 and "records twin up in namespace ml, and this up would start it in ml2" in up.stderr
    recorded = cli(spec.parent, env, "stop", "--dry-run")  # the other verbs keep to what up made
    assert recorded.returncode == 0 and "kubectl exec -n ml " in recorded.stdout, recorded.stdout + recorded.stderr
    given = cli(spec.parent, env, "stop", "-n", "ml2", "--dry-run")  # a flag still wins for them
    assert given.returncode == 0 and "kubectl exec -n ml2 " in given.stdout, given.stdout + given.stderr


def test_a_folder_only_its_owner_may_write_is_read_by_owner_group_and_other_bits(tmp_path):
    from nodeweave.cluster.writable import HostUser, can_write, existing

    folder = tmp_path / "ckpt"
    folder.mkdir()
    found = folder.stat()
    stranger = HostUser(found.st_uid + 4242, found.st_gid + 4242, rootless=False)
    same_group = HostUser(found.st_uid + 4242, found.st_gid, rootless=False)
    owner = HostUser(found.st_uid or 4242, found.st_gid, rootless=False)
    folder.chmod(0o755)
    assert not can_write(folder, stranger) and not can_write(folder, same_group)
    if found.st_uid:
        assert can_write(folder, owner)
    folder.chmod(0o775)
    assert can_write(folder, same_group) and not can_write(folder, stranger)
    folder.chmod(0o757)
    assert can_write(folder, stranger)
    assert existing(folder / "a" / "b") == folder


RECOVERING = SPEC + "recovery: {enabled: true, checkpoint_dir: checkpoints}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="rootful podman maps the image's uid 1000 to this machine's 1000")
def test_up_and_check_refuse_a_checkpoint_folder_the_images_user_cannot_write(tmp_path):
    """Issue 41: a root-owned team folder; every rank failed its first save, recovery burned the spares."""
    spec = _folder(tmp_path / "team", RECOVERING)
    spec.parent.chmod(0o755)
    (tmp_path / "bin").mkdir()
    env = _env(tmp_path)
    for verb in (("up", "--dry-run"), ("check", "--dry-run")):
        out = cli(spec.parent, env, *verb)
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        line = out.stderr.strip().splitlines()[-1]
        assert f"recovery.checkpoint_dir checkpoints is {spec.parent}/checkpoints on this machine (it does not " \
               f"exist; its nearest folder {spec.parent} would hold it), owned by root:root (0:0), mode 0755" in line
        # the folder to make, handed over alone: never a chown -R of the whole project (the fresh walk's hint)
        assert f"`mkdir -p {spec.parent}/checkpoints && sudo chown 1000:0 {spec.parent}/checkpoints`" in line, line
        assert "chown -R" not in line, line
    (spec.parent / "checkpoints").mkdir()
    os.chown(spec.parent / "checkpoints", 1000, 0)
    up = cli(spec.parent, env, "up", "--dry-run")
    assert up.returncode == 0, up.stderr
    assert f"# the workspace {spec.parent} (owned by root:root (0:0), mode 0755) is read-only to the image's " \
           "user" in up.stdout, up.stdout
    (spec.parent / "checkpoints").chmod(0o755)
    os.chown(spec.parent / "checkpoints", 0, 0)
    assert cli(spec.parent, env, "up", "--dry-run").returncode == 3
    (spec.parent / "checkpoints").chmod(0o777)
    assert cli(spec.parent, env, "check", "--dry-run").returncode == 0


def test_kubernetes_and_slurm_plans_name_the_image_and_the_variables_their_tools_read(tmp_path):
    spec = _folder(tmp_path / "k", KUBE_SPEC)
    (tmp_path / "bin").mkdir()
    kube = cli(spec.parent, _env(tmp_path, KUBECONFIG=str(tmp_path / "elsewhere.yaml")), "up", "-t", "kubernetes",
               "--dry-run")
    assert kube.returncode == 0, kube.stderr
    assert "# every pod runs image localhost/t/twin:cpu: the spec's" in kube.stdout
    assert f"# KUBECONFIG={tmp_path / 'elsewhere.yaml'} from this environment is read" in kube.stdout, kube.stdout
    slurm = cli(spec.parent, _env(tmp_path, SALLOC_PARTITION="big"), "up", "-t", "slurm", "--dry-run")
    assert "# SALLOC_PARTITION=big from this environment is read" in slurm.stdout, slurm.stdout + slurm.stderr
    assert "# every node runs image localhost/t/twin:cpu through pyxis (localhost#t/twin:cpu): the spec's" in \
        slurm.stdout, slurm.stdout  # the image each step runs, as every target's plan names it


def test_a_dry_run_reads_the_old_single_state_file_and_writes_nothing(tmp_path):
    """First-day s8: `stop --dry-run` moved the entry of .nodeweave/cluster.json and rewrote the old file."""
    spec = _folder(tmp_path / "old", SPEC)
    (tmp_path / "bin").mkdir()
    legacy = spec.parent / ".nodeweave" / "cluster.json"
    legacy.parent.mkdir()
    text = json.dumps({"twin": {"target": "kubernetes", "namespace": "night"}, "other": {"target": "local"}})
    legacy.write_text(text)
    for verb in (("stop", "--dry-run"), ("up", "--dry-run"), ("down", "--dry-run")):
        out = cli(spec.parent, _env(tmp_path), *verb)
        assert out.returncode == 0 and "kubectl" in out.stdout and "-n night" in out.stdout, (verb, out.stdout,
                                                                                               out.stderr)
        assert legacy.read_text() == text and not (spec.parent / ".nodeweave" / "twin").exists(), verb
    from nodeweave.cluster.options import load_state, save_state

    assert load_state(spec, "twin").namespace == "night"  # a read is a read: the entry stays where it is
    assert legacy.read_text() == text
    save_state(spec, "twin", load_state(spec, "twin"))  # what a real `up` does: the entry moves
    assert json.loads(legacy.read_text()) == {"other": {"target": "local"}}


# docker on a host of the ssh stand-in (tests/ssh_standin.py: each host is a folder, HOME there): compose up and down
# of the file nodeweave's `up` sent there, kept as that host's containers ($HOME/containers.json: name -> labels);
# inspect answers from them as docker does (one line, exit 1 for a missing container); exec answers from a running
# container; anything else is refused (exit 2).
HOST_DOCKER = r'''#!{python}
import json, os, sys
import yaml
kept = os.path.join(os.environ["HOME"], "containers.json")
known = json.load(open(kept)) if os.path.exists(kept) else {{}}
args = sys.argv[1:]
if args[:1] == ["compose"]:
    compose_file, verb = args[args.index("-f") + 1], args[args.index("-f") + 2]
    names = {{s["container_name"]: s.get("labels") or {{}}
              for s in yaml.safe_load(open(compose_file))["services"].values()}}
    if verb == "up":
        known.update(names)
    elif verb == "down":
        known = {{n: labels for n, labels in known.items() if n not in names}}
    json.dump(known, open(kept, "w"))
    sys.exit(0)
if args[:3] == ["inspect", "--type", "container"] and args[3] == "--format" and len(args) == 6:
    if args[5] not in known:
        sys.stderr.write("Error: No such container: %s\n" % args[5])
        sys.exit(1)
    print(json.dumps(known[args[5]]))
    sys.exit(0)
sys.stderr.write("docker stand-in: not a call nodeweave makes here: %s\n" % args)
sys.exit(2)
'''
HOSTS = ("h1", "h2")


@pytest.fixture
def host_twins(tmp_path):
    """Folders a and b holding the same spec for the hosts target (docker compose on each host, over ssh); each
    folder's own remote folder on the hosts; ssh and the hosts' docker are the stand-ins above."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    standin = Path(__file__).parent / "ssh_standin.py"
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {standin} \"$@\"\n")
    (bin_dir / "docker").write_text(HOST_DOCKER.format(python=sys.executable))
    for tool in ("ssh", "docker"):
        (bin_dir / tool).chmod(0o755)
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    env = _env(tmp_path, STANDIN_SSH_ROOT=str(tmp_path / "hosts"))
    env["PATH"] = f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin"

    def flags(folder: Path):
        return ["--target", "hosts", "--engine", "docker", "--remote-dir", str(folder.parent / "remote"),
                *(f"--host={h}" for h in HOSTS)]
    return a, b, env, flags


def test_hosts_containers_carry_the_jobs_mark_and_another_folder_is_refused(host_twins, tmp_path):
    """Issue 41 item 4 on the hosts target: a's real `up` sends each host a compose file whose container carries
    a's labels, in a's own compose project; in folder b every verb refuses those containers (exit 3) naming a,
    while a's verbs go on, and after a's `down` b may start its own job there."""
    a, b, env, flags = host_twins
    up = cli(a.parent, env, "up", *flags(a), "--no-wait")
    assert up.returncode == 0, up.stdout + up.stderr
    for host in HOSTS:
        labels = json.loads((tmp_path / "hosts" / host / "containers.json").read_text())["twin-node"]
        assert labels == {"io.nodeweave.job": "twin", "io.nodeweave.folder": str(a.parent.resolve()),
                          "io.nodeweave.owner": _mark(a).owner}, labels
    for verb in (("up", "--dry-run"), ("down", "--dry-run"), ("down",), ("stop", "--dry-run"),
                 ("exec", "--dry-run", "--", "hostname"), ("run", "--dry-run", "--", "train.py"), ("status",)):
        out = cli(b.parent, env, verb[0], *flags(b), *verb[1:])
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        lines = [line for line in out.stderr.strip().splitlines() if not line.startswith("nodeweave: note:")]
        assert len(lines) == 1 and f"`nodeweave up` in {a.parent} (job twin)" in lines[0], (verb, out.stderr)
        assert "container twin-node on h1 (and 1 more) was started by" in lines[0], lines
    assert json.loads((tmp_path / "hosts" / "h1" / "containers.json").read_text())  # b's down removed nothing
    plan = cli(a.parent, env, "down", "--dry-run")
    assert plan.returncode == 0 and f"-p twin-{_mark(a).owner[:8]} -f {a.parent}/remote/compose/node.yaml down" \
        in plan.stdout, plan.stdout + plan.stderr
    assert cli(a.parent, env, "down").returncode == 0
    assert json.loads((tmp_path / "hosts" / "h1" / "containers.json").read_text()) == {}
    assert cli(b.parent, env, "up", *flags(b), "--dry-run").returncode == 0


def test_bare_hosts_carry_the_jobs_mark_beside_its_token_and_another_folder_is_refused(host_twins, tmp_path):
    """Bare hosts (`--engine none`) start no container: a's `up` leaves a's mark in the remote folder beside the
    job's token; b, sharing that remote folder, is refused on every verb (its `up` would re-key a's nodes), a's
    verbs go on, and a's `down` takes the mark back."""
    a, b, env, _ = host_twins
    remote = tmp_path / "shared"
    flags = ["--target", "hosts", "--engine", "none", "--remote-dir", str(remote), *(f"--host={h}" for h in HOSTS)]
    up = cli(a.parent, env, "up", *flags, "--no-wait")
    assert up.returncode == 0, up.stdout + up.stderr
    mark = remote / ".nodeweave" / "twin" / "owner.json"
    assert json.loads(mark.read_text()) == _mark(a).labels()
    token = (remote / ".nodeweave" / "twin" / "job-token").read_text()
    for verb in (("up",), ("up", "--dry-run"), ("down", "--dry-run"), ("stop", "--dry-run"),
                 ("exec", "--dry-run", "--", "hostname"), ("status",)):
        out = cli(b.parent, env, verb[0], *flags, *verb[1:])
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        lines = [line for line in out.stderr.strip().splitlines() if not line.startswith("nodeweave: note:")]
        assert len(lines) == 1 and f"`nodeweave up` in {a.parent} (job twin)" in lines[0], (verb, out.stderr)
        assert f"the job's mark {mark} on h1 (and 1 more) was started by" in lines[0], lines
    assert (remote / ".nodeweave" / "twin" / "job-token").read_text() == token  # b's up re-keyed nothing
    down = cli(a.parent, env, "down", "--dry-run")
    assert down.returncode == 0 and f"rm -f {mark}" in down.stdout, down.stdout + down.stderr
    assert cli(a.parent, env, "down").returncode == 0
    assert not mark.exists()
    assert cli(b.parent, env, "up", *flags, "--dry-run").returncode == 0
