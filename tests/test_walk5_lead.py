"""The fifth walk's rows fixed by the lead, one test per class (issue 43)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeweave.build import prepare_build
from nodeweave.spec import load_spec

TEAM_SPEC = """name: team
image: {variant: cpu, requirements: requirements.txt}
launcher: {script: train.py}
"""


def _team(tmp_path, dockerignore=None):
    from nodeweave.targets import zipapp

    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "requirements.txt").write_text("einops==0.8.2\n")
    (tmp_path / "nodeweave.yaml").write_text(TEAM_SPEC)
    pyz = tmp_path / zipapp.PATH
    pyz.parent.mkdir(parents=True, exist_ok=True)
    pyz.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    if dockerignore is not None:
        (tmp_path / ".dockerignore").write_text(dockerignore)
    return load_spec(tmp_path / "nodeweave.yaml")


@pytest.mark.parametrize("lines", [
    "node_modules/\n",                       # a team's own file that names nothing the image reads (W65)
    "# my own\n*.ckpt\ndata/\n",
    "*\n!requirements.txt\n!entrypoint/\n!wheelhouse/\n",  # an allow-list of one's own, in Docker's words
    "*.txt\n!requirements.txt\n",            # out, then back in: the last matching line decides
])
def test_a_dockerignore_that_lets_the_requirements_in_is_not_said_to_keep_them_out(tmp_path, lines):
    spec = _team(tmp_path, lines)
    assert prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True).plan.variant == "cpu"


@pytest.mark.parametrize("lines", ["*.txt\n", "requirements*\n", "**/requirements.txt\n", "!requirements.txt\n*\n"])
def test_a_dockerignore_of_ones_own_that_keeps_them_out_is_named_with_the_line_that_mends_it(tmp_path, lines):
    from nodeweave.errors import UsageError

    spec = _team(tmp_path, lines)
    with pytest.raises(UsageError, match=r"keeps 'requirements.txt' out of the build; add the line "
                                         r"'!requirements.txt' at its end"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)


@pytest.mark.parametrize("argv", [
    ["run", "--dry-run", "--runs-dir", "/"], ["run", "--dry-run", "--runs-dir", "/etc"],
    ["run", "--dry-run", "--runs-dir", "/usr/lib"], ["run", "--dry-run", "--runs-dir", "/proc"],
    ["run", "--dry-run", "--runs-dir", ".nodeweave"], ["check", "--dry-run", "--runs-dir", "/sys"],
    ["render", "all", "--dry-run", "--out", "/"], ["render", "all", "--dry-run", "--out", "/etc"],
    ["render", "all", "--dry-run", "--out", "/proc"], ["render", "all", "--dry-run", "--out", ".nodeweave/x"],
])
def test_a_folder_nodeweave_writes_into_is_never_the_root_a_system_or_kernel_folder_or_its_own_state(
        tmp_path, monkeypatch, capsys, argv):
    """W69, W70: every flag naming a folder nodeweave fills goes through one judge, which the dry run asks too."""
    from cli_run import in_process, one_line

    _team(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = in_process(capsys, *argv)
    line = one_line(err)
    assert code == 2, err
    assert argv[-1] in line and ("system folder" in line or "kernel file system" in line or "state folder" in line)


def test_render_never_writes_its_record_through_a_link_in_place_of_the_state_folder(tmp_path, monkeypatch, capsys):
    """W68: render refuses .nodeweave as a link, as up does, instead of writing rendered.json where it leads."""
    from cli_run import in_process, one_line

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    team = tmp_path / "team"
    team.mkdir()
    _team(team)
    (team / ".nodeweave").symlink_to(elsewhere)
    monkeypatch.chdir(team)
    code, _, err = in_process(capsys, "render", "all")
    assert code == 2 and ".nodeweave is a symbolic link" in one_line(err)
    assert list(elsewhere.iterdir()) == []


def test_a_runs_link_is_never_written_through_and_the_refusal_names_the_folder_to_give(tmp_path):
    """W68's other half: runs/ as a link (to a bigger disk) is read, never written through; the line names the
    --runs-dir that keeps the runs there."""
    from nodeweave.cli.habits.output import runs_parent
    from nodeweave.errors import UsageError

    big = tmp_path / "big"
    big.mkdir()
    team = tmp_path / "team"
    team.mkdir()
    _team(team)
    (team / "runs").symlink_to(big)
    with pytest.raises(UsageError, match=f"symbolic link .* accepted: --runs-dir {big.resolve()}"):
        runs_parent(None, team / "nodeweave.yaml", writes=True)
    assert runs_parent(None, team / "nodeweave.yaml", writes=False) == team / "runs"


def test_no_folder_inside_a_system_tree_is_a_destination_a_remote_dir_a_runs_dir_or_a_render_out(tmp_path):
    """replay N6 (dangerous): sync --delete into /etc/ssh, /usr/lib/python3, /var/lib/containers ... was accepted.
    Every tree of the one table, for every judge of a folder nodeweave writes: DEST and --remote-dir
    (remote.check_dest) and --runs-dir / render --out (failures.writable_dir)."""
    from nodeweave.errors import UsageError
    from nodeweave.failures import writable_dir
    from nodeweave.remote.names import check_dest
    from nodeweave.systemdirs import SYSTEM_TREES

    for tree in SYSTEM_TREES:
        for path in (tree, f"{tree}/job", f"{tree}/a/b"):
            said = f"inside {tree}|system (directory|folder)" if path == tree else f"inside {tree}"
            with pytest.raises(UsageError, match=said):
                check_dest(path, home=True)
            if not tree.startswith(("/proc", "/sys", "/dev")):  # those are named as kernel file systems first
                real = os.path.realpath(tree)  # /bin is /usr/bin on a merged-/usr system: named where it leads
                with pytest.raises(UsageError, match=f"{said}|inside {real}"):
                    writable_dir(Path(path), "--runs-dir")
    # a user's own folders stay accepted, and a home's own etc/ or lib/ is not the system's
    for fine in ("/workspace", "/opt/proj", "/usr/local/proj", "/home/me/proj", "/data/x"):
        assert check_dest(fine) == fine
    for home in ("~/etc/x", "~/lib", "~/usr/lib/x"):
        assert check_dest(home, home=True) == home
    assert writable_dir(tmp_path / "runs", "--runs-dir") == tmp_path / "runs"


@pytest.mark.parametrize("kind", ["folder", "pipe", "dangling link"])
def test_a_dockerignore_that_is_not_a_file_is_refused_by_the_build_and_its_dry_run(tmp_path, kind):
    """replay N9: a .dockerignore folder passed the build's dry run; the engine fails on it or sends the whole
    context unfiltered (the sibling of .nodeweaveignore's W67)."""
    from nodeweave.errors import UsageError

    spec = _team(tmp_path)
    ignore = tmp_path / ".dockerignore"
    {"folder": ignore.mkdir, "pipe": lambda: os.mkfifo(ignore),
     "dangling link": lambda: ignore.symlink_to(tmp_path / "gone")}[kind]()
    with pytest.raises(UsageError, match=r"\.dockerignore is a (folder|named pipe|link to nothing), not a file"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)


def test_check_refuses_nccl_on_a_job_whose_image_has_no_gpu_stack(tmp_path, monkeypatch, capsys):
    """replay of W75: bench refused --backend nccl without a GPU, check planned it on the cpu variant."""
    from cli_run import in_process, one_line

    _team(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = in_process(capsys, "check", "--dry-run", "--backend", "nccl")
    assert code == 2 and "--backend nccl: the job's image variant cpu has no GPU stack" in one_line(err), err
    code, out, err = in_process(capsys, "check", "--dry-run", "--backend", "gloo")
    assert code == 0, err



def test_the_home_note_suggests_only_a_spelling_that_is_accepted(monkeypatch, capsys):
    """replay N7: '/root/../home/me' got the note "write '~/../home/me'", which is refused in turn."""
    from nodeweave.cli.habits.clusteropts import note_local_home
    from nodeweave.remote.names import check_dest

    monkeypatch.setenv("HOME", "/home/me")
    for value in ("/home/me/../other", "/home/me/./proj", "/home/me//proj/../x"):
        note_local_home("DEST", value)
        assert capsys.readouterr().err == ""
    note_local_home("DEST", "/home/me/proj")
    said = capsys.readouterr().err
    suggested = said.rsplit("'", 2)[1]  # the quoted spelling at the end
    assert suggested == "~/proj" and check_dest(suggested, home=True) == "~/proj"


def test_a_misspelt_variable_whose_near_name_only_the_nodes_read_says_so(monkeypatch, capsys):
    """replay N8: NODEWEAVE_HOSTS_FILE got "did you mean NODEWEAVE_HOSTFILE?", a variable the CLI never reads (the
    entrypoint's DeepSpeed hostfile): the hint now says where the name it suggests is read."""
    from cli_run import in_process

    monkeypatch.setenv("NODEWEAVE_HOSTS_FILE", "hosts.txt")
    _, _, err = in_process(capsys, "image", "variants")  # a verb that acts: --help runs no start-up check (B1)
    assert "did you mean NODEWEAVE_HOSTFILE, which nodeweave-entrypoint reads in the nodes, not this command?" in err
    monkeypatch.delenv("NODEWEAVE_HOSTS_FILE")
    monkeypatch.setenv("NODEWEAVE_IMAEG", "x")
    _, _, err = in_process(capsys, "image", "variants")
    assert "did you mean NODEWEAVE_IMAGE?)" in err


def test_run_with_launcher_command_names_a_bare_workspace_script_exec_cannot_find(tmp_path, monkeypatch, capsys):
    """replay of W72: the entrypoint warned on the node (command-not-found), `run --dry-run --launcher command --
    train.py` said nothing; the plan now notes it, and leaves ./train.py and python train.py alone."""
    from cli_run import in_process

    _team(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = in_process(capsys, "run", "--dry-run", "--launcher", "command", "--", "train.py")
    assert code == 0 and "execs 'train.py' through PATH" in out and "write ./train.py" in out, (out, err)
    for fine in (["./train.py"], ["python", "train.py"]):
        code, out, err = in_process(capsys, "run", "--dry-run", "--launcher", "command", "--", *fine)
        assert "through PATH" not in out + err, fine


def test_a_spec_read_from_a_pipe_reads_its_relative_paths_from_this_folder(tmp_path, monkeypatch):
    """walk5 W76: `--spec <(envsubst < nodeweave.yaml)` read requirements.txt from /dev/fd; a stream has no folder
    of its own, so its relative paths are read from this one, as `--spec -` reads them."""
    import shlex

    import cli_run

    _team(tmp_path)
    command = shlex.join([*cli_run.NODEWEAVE, "validate", "--spec"]) + " <(cat nodeweave.yaml)"
    done = cli_run.run(["bash", "-c", command], cwd=tmp_path)
    assert done.returncode == 0 and "valid: team" in done.stdout, done.stdout + done.stderr
