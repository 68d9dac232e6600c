"""walk6's findings on files and folders a user owns and where nodeweave writes (issue 43, /work/wt/walk6-report.md
rows W17, W23, W24, W34, W35, W36, W40, W41), each fixed as a class and walked over every member the code's own
registries list. Each test fails on the code before these fixes. No container is started.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- W35: --prune removes only the exact names a target renders, never a user's file inside a rendered folder ------

# files a user makes inside the rendered folders: the filled-in env file the rendered .env.example asks for, an
# overlay of their own (cluster.md: "a kustomize folder of your own"), notes; one per folder every target writes in
USERS_FILES = {
    "compose/.env": "compose", "compose/mine.yaml": "compose", "images/README.md": "images",
    "images/mine/Dockerfile": "images", "images/cpu/requirements.lock": "images",
    "manifests/overlays/mine/kustomization.yaml": "manifests", "manifests/base/extra-configmap.yaml": "manifests",
    "entrypoint/README.md": "entrypoint", "slurm/my-job.sbatch": "slurm", "openshift/notes.txt": "openshift-build",
    "kubeflow/mine.yaml": "trainjob", "jobset/mine.yaml": "jobset",
}


def _forge(folder: Path, rel: str, target: str) -> None:
    """A record entry for ``rel`` with its real digest, as a bad merge or a copied .nodeweave/ leaves."""
    path = folder / ".nodeweave" / "rendered.json"
    data = json.loads(path.read_text())
    digest = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
    data["files"][rel] = {"job": "team", "sha256": digest, "target": target}
    path.write_text(json.dumps(data))


def test_every_target_declares_a_file_of_a_users_own_in_its_folders_as_not_its_own():
    from nodeweave.targets.registry import RENDERERS

    assert set(USERS_FILES.values()) == set(RENDERERS)  # every target has a case below
    for rel, target in USERS_FILES.items():
        assert not RENDERERS[target].makes(rel), (target, rel)


def test_prune_never_removes_a_users_file_inside_a_rendered_folder_whatever_the_record_lists(capsys, team):
    assert run_cli(capsys, "render", "all")[0] == 0
    clean = (team / ".nodeweave" / "rendered.json").read_text()
    for rel, target in USERS_FILES.items():
        (team / rel).parent.mkdir(parents=True, exist_ok=True)
        (team / rel).write_text("HF_TOKEN=hf_secret\n" if rel.endswith(".env") else f"# mine: {rel}\n")
    users = {rel: (team / rel).read_bytes() for rel in USERS_FILES}
    for rel, target in USERS_FILES.items():
        (team / ".nodeweave" / "rendered.json").write_text(clean)
        _forge(team, rel, target)
        for argv in (["render", "all", "--prune", "--dry-run"], ["render", "all", "--prune"],
                     ["render", target, "--prune"], ["render", target]):
            code, out, err = run_cli(capsys, *argv)
            line = one_line(err)
            assert code == EXIT_USAGE and repr(rel) in line and "rendered.json" in line, (argv, rel, line)
            assert "remove" not in out, (argv, rel, out)
        assert {r: (team / r).read_bytes() for r in USERS_FILES} == users, rel


def test_render_beside_a_users_dockerignore_reads_its_own_record_again(capsys, team):
    """render's own rules beside the user's .dockerignore (images/nodeweave.dockerignore) are a name images renders:
    the record listing them stays readable, and --prune keeps the user's file."""
    (team / ".dockerignore").write_text("*.ckpt\n")
    for argv in (["render", "images"], ["render", "images"], ["render", "all", "--prune"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 0, (argv, err)
    assert (team / "images" / "nodeweave.dockerignore").is_file()
    assert (team / ".dockerignore").read_text() == "*.ckpt\n"


def test_prune_still_removes_what_a_target_rendered_and_renders_no_more(capsys, team):
    """The exact names are enough for prune's own work: hosts dropped from the spec lose compose/hosts."""
    spec = team / "nodeweave.yaml"
    plain = spec.read_text()
    spec.write_text(plain + "hosts: [gpu01, gpu02]\n")
    assert run_cli(capsys, "render", "compose")[0] == 0
    assert (team / "compose" / "hosts").is_file()
    spec.write_text(plain)
    code, out, _ = run_cli(capsys, "render", "compose", "--prune")
    assert code == 0 and not (team / "compose" / "hosts").exists(), out


# -- W40: up -t hosts never writes over the team's own compose/node.yaml (or compose/hosts), here or on a host -------

HOSTS_UP = ("up", "-t", "hosts", "--host", "gpu01", "--host", "gpu02", "--remote-dir", "/srv/job", "--dry-run")


@pytest.mark.parametrize("name", ["node.yaml", "hosts"])
def test_up_on_hosts_refuses_when_the_workspace_holds_its_own_compose_file(capsys, team, name):
    spec = team / "nodeweave.yaml"
    spec.write_text(spec.read_text() + "hosts: [gpu01, gpu02]\n")
    assert run_cli(capsys, *HOSTS_UP)[0] == 0  # nothing of the team's there: planned
    (team / "compose").mkdir(exist_ok=True)
    (team / "compose" / name).write_text("# the team's own\nservices: {}\n")
    code, out, err = run_cli(capsys, *HOSTS_UP)
    line = one_line(err)
    assert code == EXIT_USAGE and f"compose/{name}" in line and "yours" in line, line
    assert "send compose" not in out
    assert run_cli(capsys, "render", "compose")[0] == EXIT_USAGE  # the rule render applies, the same file


def test_the_write_on_a_host_refuses_a_file_without_nodeweaves_header(tmp_path):
    """The shell `up` runs on each host (over ssh), run here as it is: a host's own file survives it."""
    import subprocess

    from nodeweave.cluster.backends.hosts import WRITE_RENDERED

    def write(text):
        argv = [*WRITE_RENDERED, str(tmp_path / "compose"), "node.yaml", "compose/node.yaml"]
        return subprocess.run(argv, input=text, capture_output=True, text=True)

    rendered = "# Rendered by nodeweave from the cluster spec\nservices: {}\n"
    assert write(rendered).returncode == 0  # none there: written
    assert write(rendered.replace("{}", "{a: 1}")).returncode == 0  # nodeweave's: replaced
    assert (tmp_path / "compose" / "node.yaml").read_text().endswith("{a: 1}\n")
    (tmp_path / "compose" / "node.yaml").write_text("services: {mine: {}}\n")
    done = write(rendered)
    assert done.returncode == 3 and "node.yaml" in done.stderr and "yours" in done.stderr, done.stderr
    assert (tmp_path / "compose" / "node.yaml").read_text() == "services: {mine: {}}\n"


# -- W36: sync --delete never empties a shared file system's mount point ---------------------------------------------


@pytest.fixture
def team_with_hosts(team):
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    return team


@pytest.mark.parametrize("dest", ["/scratch", "/data", "/lustre", "/gpfs", "/nfs", "/mnt/nfs", "/media/usb",
                                  "/projects"])
def test_sync_delete_refuses_a_top_level_folder_or_a_mount_under_mnt(capsys, team_with_hosts, dest):
    for argv in (["sync", ".", dest, "--hosts-file", "hosts.txt", "--delete", "--dry-run"],
                 ["sync", ".", dest, "--hosts-file", "hosts.txt", "--delete"]):
        code, out, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == EXIT_USAGE and repr(dest) in line and "--delete" in line and f"{dest}/" in line, line
        assert "push" not in out


def test_sync_delete_still_takes_a_folder_inside_and_the_specs_workspace():
    from nodeweave.remote import check_delete_dest

    for dest in ("/scratch/me/proj", "/mnt/nfs/team/proj", "/workspace", "~/proj", "/tmp/x"):
        assert check_delete_dest(dest, "/workspace") == dest
    assert check_delete_dest("/job", "/job") == "/job"  # the spec's own workspace.path


def test_the_agent_deletes_nothing_on_a_mount_point():
    """The target's own check (os.path.ismount), run here on a real mount point: a file there survives."""
    import os
    import tempfile

    from nodeweave.sync.node import agent

    shm = "/dev/shm"
    if not (os.path.ismount(shm) and os.access(shm, os.W_OK)):
        pytest.skip("no writable mount point /dev/shm here")
    fd, path = tempfile.mkstemp(dir=shm, prefix="nodeweave-walk6-")
    os.close(fd)
    try:
        errors = []
        agent._delete(shm, [os.path.basename(path)], [], errors)
        assert os.path.exists(path) and errors and "mount point" in errors[0], errors
    finally:
        os.unlink(path)


# -- W17: recovery.checkpoint_dir is never the script, nodeweave's state, the runs, a rendered tree, the workspace ---

REC = "recovery: {{enabled: true, spares: 1, checkpoint_dir: {folder}}}\n"


def _owned_folders():
    from nodeweave.targets.registry import RENDERERS

    rendered = sorted({root.strip("/") for row in RENDERERS.values() for root in row.roots if root.endswith("/")})
    return [".", "./", "/workspace", ".nodeweave", ".nodeweave/ck", "runs", "runs/x", "/workspace/runs",
            "train.py", "train.py/x", "requirements.txt", *rendered, *(f"/workspace/{r}/ck" for r in rendered)]


@pytest.mark.parametrize("folder", _owned_folders())
def test_checkpoint_dir_that_is_nodeweaves_or_the_workspace_or_a_file_is_refused(capsys, team, folder):
    (team / "requirements.txt").write_text("numpy==1.26.4\n")  # a file of the workspace
    spec = team / "nodeweave.yaml"
    spec.write_text(spec.read_text() + REC.format(folder=folder))
    for argv in (["validate"], ["up", "--dry-run"], ["run", "--dry-run"]):
        code, _, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == EXIT_USAGE and "recovery.checkpoint_dir" in line and repr(folder) in line, (argv, line)


@pytest.mark.parametrize("folder", ["checkpoints", "ck/run1", "/workspace/ckpt", "/shared/ckpt", "runsave"])
def test_checkpoint_dir_of_the_scripts_own_is_taken(capsys, team, folder):
    spec = team / "nodeweave.yaml"
    extra = "volumes: [{name: shared, path: /shared, host_path: /tmp}]\n" if folder.startswith("/shared") else ""
    spec.write_text(spec.read_text() + REC.format(folder=folder) + extra)
    code, _, err = run_cli(capsys, "validate")
    assert code == 0, err


# -- W41: --runs-dir is never the checkpoint folder nor inside it; the workspace itself is noted ----------------------


@pytest.mark.parametrize("verb", ["run", "check"])
@pytest.mark.parametrize("folder, runs_dir", [("checkpoints", "checkpoints"), ("checkpoints", "checkpoints/r"),
                                              ("/workspace/ck", "ck"), ("ck/a", "ck/a/b")])
def test_runs_dir_in_the_checkpoint_folder_is_refused(capsys, team, verb, folder, runs_dir):
    spec = team / "nodeweave.yaml"
    spec.write_text(spec.read_text() + REC.format(folder=folder))
    code, out, err = run_cli(capsys, verb, "--dry-run", "--runs-dir", runs_dir)
    line = one_line(err)
    assert code == EXIT_USAGE and f"--runs-dir {runs_dir}" in line and "recovery.checkpoint_dir" in line, line
    assert not (team / runs_dir).exists()


def test_runs_dir_apart_from_the_checkpoints_is_taken_and_the_workspace_itself_noted(capsys, team):
    spec = team / "nodeweave.yaml"
    spec.write_text(spec.read_text() + REC.format(folder="checkpoints"))
    code, _, err = run_cli(capsys, "run", "--dry-run", "--runs-dir", "myruns")
    assert code == 0 and "checkpoint_dir" not in err, err
    code, _, err = run_cli(capsys, "run", "--dry-run", "--runs-dir", ".")
    assert code == 0 and "is the workspace itself" in err, err


# -- W23: init takes the folder's only Python file as the script, or names the candidates ---------------------------


@pytest.fixture
def bare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    return tmp_path


def _script_of(folder: Path) -> str:
    import yaml

    return yaml.safe_load((folder / "nodeweave.yaml").read_text())["launcher"]["script"]


def test_init_takes_the_only_python_file_and_says_so(capsys, bare):
    (bare / "main.py").write_text("print(1)\n")
    (bare / "setup.py").write_text("")  # never a training script
    code, _, err = run_cli(capsys, "init")
    assert code == 0 and "launcher.script: main.py" in err and "No such file" not in err, err
    assert _script_of(bare) == "main.py"
    assert run_cli(capsys, "validate")[0] == 0


def test_init_names_the_candidates_when_several_and_keeps_train_py_when_there(capsys, bare):
    (bare / "main.py").write_text("")
    (bare / "run.py").write_text("")
    code, _, err = run_cli(capsys, "init")
    assert code == 0 and "main.py, run.py" in err and "--script" in err, err
    assert _script_of(bare) == "train.py"
    (bare / "train.py").write_text("")
    assert run_cli(capsys, "init", "--force")[0] == 0 and _script_of(bare) == "train.py"
    assert run_cli(capsys, "init", "--force", "--script", "run.py")[0] == 0 and _script_of(bare) == "run.py"


# -- W24: a script that is a folder, a pipe or a device, and a requirements.txt that is no file, are said -----------


def _not_files(folder: Path):
    import os

    yield "a folder", lambda p: p.mkdir()
    yield "a named pipe", lambda p: os.mkfifo(p)
    if os.path.exists("/dev/null"):
        yield "a character device", lambda p: p.symlink_to("/dev/null")


@pytest.mark.parametrize("kind", ["a folder", "a named pipe", "a character device"])
def test_a_script_that_is_no_file_is_noted_by_init_validate_and_run(capsys, bare, kind):
    """Every node would fail to run it: init writes no spec with it, validate refuses it and run's dry run says the
    real run would (exit 2; issue 43 A16: it was a note, then `valid` and exit 0)."""
    from team_folder import SPEC

    make = dict(_not_files(bare))[kind]
    make(bare / "train.py")
    code, out, err = run_cli(capsys, "init")
    assert code == EXIT_USAGE and f"train.py in the workspace {bare} is {kind}" in err, (out, err)
    assert not (bare / "nodeweave.yaml").exists()
    (bare / "nodeweave.yaml").write_text(SPEC)
    for argv, exit_code in ((["validate"], EXIT_USAGE), (["run", "--dry-run"], 0)):
        code, out, err = run_cli(capsys, *argv)
        assert code == exit_code and f"train.py in the workspace {bare} is {kind}" in out + err, (argv, out, err)


@pytest.mark.parametrize("kind", ["a folder", "a named pipe"])
def test_init_names_a_requirements_file_that_is_no_file(capsys, bare, kind):
    (bare / "train.py").write_text("")
    dict(_not_files(bare))[kind](bare / "requirements.txt")
    code, _, err = run_cli(capsys, "init")
    assert code == 0 and f"requirements.txt is {kind}" in err and "left out" in err, err


# -- W34: image build --dry-run names the --wheelhouse given, the link the build makes, and what pip may use --------


@pytest.fixture
def rendered_team(capsys, team):
    assert run_cli(capsys, "render", "all")[0] == 0
    return team


def test_build_plan_names_the_given_wheelhouse_and_what_pip_uses(capsys, rendered_team, tmp_path_factory):
    from nodeweave.resolve import resolve
    from nodeweave.spec import load_spec

    given = tmp_path_factory.mktemp("whs")
    (given / "numpy-1.26.4-py3-none-any.whl").write_bytes(b"")
    # what the image installs by name, which an offline build finds in the wheelhouse or refuses (walk9 A5)
    pins = resolve(load_spec(rendered_team / "nodeweave.yaml"), "cpu").variant.pip_requirements
    for pin in pins:
        name, _, version = pin.partition("==")
        (given / f"{name}-{version}-py3-none-any.whl").write_bytes(b"")
    house = rendered_team / "wheelhouse"
    for extra, pip in ((["--offline"], "pip looks nowhere else (--offline)"), ([], "then the index")):
        code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--wheelhouse", str(given), *extra)
        line = next((ln for ln in out.splitlines() if "wheelhouse:" in ln), "")
        assert code == 0 and str(given) in line and f"({1 + len(pins)} wheel" in line and str(house) in line \
            and pip in line, (out, err)
        assert "pip uses the index" not in out
    assert not house.exists()  # a dry run links nothing


def test_build_takes_note_of_a_wheelhouse_without_wheels_and_refuses_it_offline(capsys, rendered_team,
                                                                               tmp_path_factory):
    empty = tmp_path_factory.mktemp("nowheels")
    (empty / "notes.txt").write_text("x\n")
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--wheelhouse", str(empty))
    assert code == 0 and f"--wheelhouse {empty} holds no wheel" in out + err, out
    (rendered_team / "wheelhouse").mkdir()
    (rendered_team / "wheelhouse" / "numpy-1.26.4-py3-none-any.whl").write_bytes(b"")  # the context has one
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--wheelhouse", str(empty), "--offline")
    line = one_line(err)
    assert code == EXIT_USAGE and f"--wheelhouse {empty} holds none" in line, line


def test_the_rendered_trees_the_spec_rules_know_are_the_ones_the_renderers_write():
    """ownfolders names them without loading the renderers (which load the spec): the two lists stay one."""
    from nodeweave.entrypoint.ownfolders import RENDERED_TREES
    from nodeweave.targets.registry import RENDERERS

    written = {root.strip("/").split("/")[0] for row in RENDERERS.values() for root in row.roots if root.endswith("/")}
    assert set(RENDERED_TREES) == written
