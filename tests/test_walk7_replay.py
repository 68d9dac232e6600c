"""The seventh walk's replay (issue 43): what it found still open after the fixes, each as its class."""

import os

import cli_run
import pytest

from nodeweave.cachedir import cache_dir_problem


@pytest.mark.parametrize("marker", ["nodeweave.yaml", ".nodeweave"])
@pytest.mark.parametrize("inside", ["", "cache", "deep/er"])
def test_a_cache_folder_inside_a_project_is_refused(tmp_path, marker, inside):
    """A28: NODEWEAVE_CACHE_DIR=$PWD in the project put jinja/ and zipapp/ beside train.py, and sync sent them."""
    project = tmp_path / "team"
    project.mkdir()
    (project / marker).mkdir() if marker.startswith(".") else (project / marker).write_text("name: team\n")
    given = str(project / inside) if inside else str(project)
    problem = cache_dir_problem({"NODEWEAVE_CACHE_DIR": given})
    assert problem and f"inside the project {project}" in problem and marker in problem, problem
    assert cache_dir_problem({"NODEWEAVE_CACHE_DIR": str(tmp_path / "elsewhere")}) is None


def test_the_cli_refuses_it_before_any_cache_is_made(tmp_path):
    project = tmp_path / "team"
    project.mkdir()
    (project / "nodeweave.yaml").write_text("name: team\nimage: {variant: cpu}\nlauncher: {script: t.py}\n")
    done = cli_run.nodeweave("render", "all", "--check", cwd=project,
                             env=dict(os.environ, NODEWEAVE_CACHE_DIR=str(project)))
    assert done.returncode == 2 and "NODEWEAVE_CACHE_DIR" in done.stderr and "inside the project" in done.stderr
    assert not (project / "jinja").exists() and not (project / "zipapp").exists()


@pytest.mark.parametrize("folder, root", [("/data", "/data/proj"), ("/", "/workspace"),
                                          ("/tmp/b6/outer", "/tmp/b6/outer/rec"), ("/data/", "/data/proj/sub")])
def test_a_checkpoint_folder_that_holds_the_workspace_is_refused(folder, root):
    """B6: an absolute checkpoint_dir above the workspace made node 0 scan the whole job's tree (and a link in it
    into /tmp) as saves and hand out whichever had the highest step."""
    from nodeweave.entrypoint.ownfolders import checkpoint_dir_problem

    assert "which holds the workspace" in checkpoint_dir_problem(folder, root)
    assert checkpoint_dir_problem("/data/ckpt", "/data/proj") == ""  # beside it: a mount of its own


def test_the_spec_and_the_node_refuse_it_alike(tmp_path):
    from nodeweave.spec import parse_spec
    from nodeweave.spec.nodes import SpecErrors

    text = ("name: rec\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\nworkspace: {path: /data/proj}\n"
            "recovery: {enabled: true, spares: 1, checkpoint_dir: /data}\n")
    with pytest.raises(SpecErrors) as err:
        parse_spec(text, str(tmp_path / "nodeweave.yaml"))
    assert "holds the workspace /data/proj" in str(err.value)
    work = tmp_path / "outer" / "rec"
    work.mkdir(parents=True)
    (work / "train.py").write_text("print(1)\n")
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR=str(tmp_path / "outer"))
    done = cli_run.entrypoint("--explain", "--", "train.py", cwd=work, env=env)
    assert done.returncode == 2 and "which holds the workspace" in done.stdout + done.stderr, done.stdout + done.stderr


def _nw(cwd, *argv):
    return cli_run.nodeweave(*argv, cwd=cwd, timeout=180)


def test_a_hand_edited_dockerfile_is_named_as_yours_not_sent_back_to_render(tmp_path):
    """N1: image build said "`nodeweave render` refreshes it" of a Dockerfile render refuses to overwrite (no
    header: the user's), a hint that sent the user round between the two verbs."""
    (tmp_path / "train.py").write_text("print(1)\n")
    assert _nw(tmp_path, "init").returncode == 0 and _nw(tmp_path, "render", "all").returncode == 0
    dockerfile = tmp_path / "images" / "cpu" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("\nFROM ", "\n# a line of mine\nFROM ", 1))
    stale = _nw(tmp_path, "image", "build", "cpu", "--dry-run")
    assert stale.returncode == 0 and "`nodeweave render images` refreshes it" in stale.stdout, stale.stdout + stale.stderr
    dockerfile.write_text("# Dockerfile by me\nFROM x\n")
    mine = _nw(tmp_path, "image", "build", "cpu", "--dry-run")
    assert mine.returncode == 0, mine.stderr
    assert "no nodeweave header, so it is yours and is not built" in mine.stdout, mine.stdout
    assert "refreshes it" not in mine.stdout and "`nodeweave render images --force` replaces it" in mine.stdout
    assert dockerfile.read_text() == "# Dockerfile by me\nFROM x\n"


def test_a_link_out_of_the_checkpoint_folder_is_never_handed_out(tmp_path):
    """N3 (B5's sibling one level down): a link inside checkpoint_dir to another job's folder, or to one of its
    files under a higher step's name, handed out that job's save; it is passed over, saying why."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import scan

    mine, theirs = tmp_path / "ck", tmp_path / "other-job"
    mine.mkdir()
    theirs.mkdir()
    torch.save({"step": 5}, mine / "ckpt_5.pt")
    torch.save({"step": 70}, theirs / "ckpt_70.pt")
    (mine / "other").symlink_to(theirs)
    (mine / "ckpt_99.pt").symlink_to(theirs / "ckpt_70.pt")
    (mine / "last.pt").symlink_to(mine / "ckpt_5.pt")  # a link inside the folder stays what it was
    found = scan(str(mine))
    assert found.newest().path == str(mine / "ckpt_5.pt"), found.newest()
    passed = dict(found.stepless)
    for name in ("other", "ckpt_99.pt"):
        assert "a link leading out of the checkpoint folder" in passed[str(mine / name)], passed
    linked = tmp_path / "ck-link"  # the checkpoint folder itself a link (to shared storage): its own saves count
    linked.symlink_to(mine)
    assert scan(str(linked)).newest().path == str(linked / "ckpt_5.pt")
