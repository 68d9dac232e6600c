"""Replay of walk 6's last rows (issue 43, replay6b): M3, N8, M1, M2, M4..M7, each as a class.

M3: a checkpoint folder that is a symbolic link is judged where it leads, by one resolver
(``entrypoint.ownfolders.link_leads``) on the spec's side and a node's alike, with every check the plain value gets;
a remedy for a link acts on the folder it leads to.

N8: every ownership remedy (``cluster.writable``) works pasted by whom it names: the ``sudo`` half by root, the chmod
half by the folder's owner, named, without a ``chgrp 0`` only root could run; docs/cluster.md says the same.

M1: a NODEWEAVE_* name is judged by one table wherever it is given (shell, -e, --sweep, env:): a typo is a typo.

M2: a refusal naming `nodeweave run FLAG VALUE` names one run takes on that spec and cluster: pasted, accepted.

M4, M5, M6: every folder nodeweave writes into that the user names (--out, --runs-dir, --wheelhouse, --context,
doctor --capture, NODEWEAVE_CACHE_DIR, XDG_CACHE_HOME) is judged by one rule, saying truly if a missing one is made.

M7: a folder this machine mounts into the containers that does not exist is said once, naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_run import in_process as run_cli

BASE = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
NODE0 = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1",
         "NODEWEAVE_RECOVERY": "on"}


def _links_out(tmp_path) -> Path:
    """A workspace whose links lead out of it: to another disk, to its parent, to /etc, to nothing."""
    work = tmp_path / "proj"
    work.mkdir()
    (work / "train.py").write_text("print('training')\n")
    bigdisk = tmp_path / "bigdisk"
    bigdisk.mkdir()
    (tmp_path / "other" / "checkpoints").mkdir(parents=True)  # another project's saves, one level up
    (work / "ckb").symlink_to(bigdisk)
    (work / "ckp").symlink_to("..")
    (work / "cke").symlink_to("/etc")
    (work / "ckd").symlink_to("nowhere")
    return work


LED_OUT = [("ckb", "on no mount of the spec"), ("ckp", "leaves workspace.path"), ("cke", "system folder"),
           ("ckd", "a link to nothing")]


@pytest.mark.parametrize("folder,what", LED_OUT)
def test_the_spec_judges_a_link_out_of_the_workspace_where_it_leads(tmp_path, monkeypatch, capsys, folder, what):
    work = _links_out(tmp_path)
    (work / "nodeweave.yaml").write_text(BASE + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n")
    monkeypatch.chdir(work)
    for verb in (("validate",), ("up", "--dry-run")):
        code, out, err = run_cli(capsys, *verb)
        assert code == 2 and "recovery.checkpoint_dir" in err and what in err, (verb, err)
        assert "a file, not a folder" not in err


@pytest.mark.parametrize("folder,what", [row for row in LED_OUT if row[0] != "ckb"])
def test_a_node_judges_a_link_out_of_the_workspace_where_it_leads(tmp_path, folder, what):
    from cli_run import entrypoint

    work = _links_out(tmp_path)
    done = entrypoint("--explain", "--", "train.py", cwd=work, env={**NODE0, "NODEWEAVE_CHECKPOINT_DIR": folder})
    text = done.stdout + done.stderr
    assert done.returncode == 2 and "NODEWEAVE_CHECKPOINT_DIR" in text and what in text, text
    assert "now:" not in text  # no save handed out from the parent's projects


def test_an_absolute_link_back_into_the_workspace_is_judged_as_the_containers_follow_it(tmp_path, monkeypatch,
                                                                                       capsys):
    """``ck -> /home/me/proj/saves`` comes back into the workspace here, but a container follows the link's own text,
    a path it does not mount; ``ck -> saves`` works in both."""
    work = _links_out(tmp_path)
    (work / "saves").mkdir()
    (work / "cka").symlink_to(work / "saves")
    (work / "ckr").symlink_to("saves")
    monkeypatch.chdir(work)
    for folder, code_wanted in (("cka", 2), ("ckr", 0)):
        (work / "nodeweave.yaml").write_text(BASE + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n")
        code, out, err = run_cli(capsys, "validate")
        assert code == code_wanted and (code == 0 or "on no mount of the spec" in err), err


def test_a_link_onto_a_mounted_volume_is_taken(tmp_path, monkeypatch, capsys):
    work = _links_out(tmp_path)
    shared = tmp_path / "bigdisk"
    (work / "nodeweave.yaml").write_text(
        BASE + f"volumes: [{{name: ck, host_path: {shared}, path: {shared}}}]\n"
        "recovery: {enabled: true, checkpoint_dir: ckb}\n")
    monkeypatch.chdir(work)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err


def test_the_ownership_remedy_for_a_link_acts_on_its_target(tmp_path):
    from nodeweave.cluster.writable import HostUser

    real = tmp_path / "saves"
    real.mkdir(mode=0o755)
    (tmp_path / "ck").symlink_to("saves")
    fix = HostUser(4242, 4242, rootless=False).fix(tmp_path / "ck")
    assert str(real) in fix and f"{tmp_path / 'ck'} " not in fix and not fix.endswith(f"{tmp_path / 'ck'}`"), fix


# N8: every ownership remedy the plan prints (``cluster.writable``: a folder to hand over, one to make) works when
# pasted by the one it is meant for: the ``sudo`` half by root, the chmod half by the folder's owner, who may not
# be root nor in group 0 (``chgrp 0`` by uid 1001 was refused). Each is run here as that uid, then the image's user
# (uid 1000, group 0) writes into the folder.
def _as(uid: int, gid: int, command: str) -> "subprocess.CompletedProcess[str]":
    import subprocess

    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "sh", "-c", command],
                          capture_output=True, text=True, timeout=30)


needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"),
                                reason="running a remedy as another uid needs root and setpriv")


def _owned_tree(owner: int, group: int, setgid: bool = False) -> Path:
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="nw-n8-", dir="/tmp"))
    base.chmod(0o755)
    project = base / "proj"
    project.mkdir()
    (project / "checkpoints").mkdir()
    for folder in (project, project / "checkpoints"):
        os.chown(folder, owner, group)
        folder.chmod(0o2755 if setgid else 0o755)
    return project


def _primary_group(uid: int) -> int:
    """The group a login of ``uid`` runs with: its passwd entry's, else (no entry) its own number."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid


def _commands(remedy: str) -> "list[str]":
    import re

    return re.findall(r"`([^`]+)`", remedy)


@needs_root
@pytest.mark.parametrize("owner,group,setgid", [(1001, 1001, False), (1001, 1001, True), (0, 0, False),
                                                (1001, 0, False), (0, 1001, False)])
@pytest.mark.parametrize("half", ["as root", "as the owner"])
def test_every_ownership_remedy_works_pasted_by_whom_it_names(owner, group, setgid, half):
    import shutil

    from nodeweave.cluster.writable import HostUser, can_write

    user = HostUser(1000, 0, rootless=False)
    for made in (False, True):
        project = _owned_tree(owner, group, setgid)
        try:
            folder = project / ("outputs" if made else "checkpoints")
            remedy = user.make(folder) if made else user.fix(folder)
            first, alternative = _commands(remedy)[:2]
            if half == "as root":
                done = _as(0, 0, first.replace("sudo ", ""))
            else:
                assert "chgrp" not in alternative, remedy
                assert owner == 0 or f"uid {owner}" in remedy, remedy  # who runs it, named
                done = _as(owner, _primary_group(owner), alternative)
            assert done.returncode == 0, (remedy, done.stderr)
            assert can_write(folder, user), (remedy, oct(folder.stat().st_mode), folder.stat().st_gid)
            wrote = _as(1000, 0, f"touch {folder}/saved")
            assert wrote.returncode == 0, (remedy, wrote.stderr)
        finally:
            shutil.rmtree(project.parent)


def test_the_plan_and_the_docs_name_the_same_remedy():
    text = (Path(__file__).resolve().parents[1] / "docs" / "cluster.md").read_text()
    assert "chgrp" not in text
    assert "as its owner" in text


# M1: a NODEWEAVE_* name is judged by one table (``planning.variables``) wherever it is given: exported in the
# shell, in `-e`, `--sweep` or the spec's env:. A typo is a typo everywhere ("did you mean"), never "nodeweave sets
# it itself"; a known name keeps the field that sets it.
TYPOS = [("NODEWEAVE_STALL_TIMEOUTS", "NODEWEAVE_STALL_TIMEOUT"), ("NODEWEAVE_IFNAME", "NODEWEAVE_INTERFACES"),
         ("NODEWEAVE_FOO", None)]


def _team(tmp_path, monkeypatch, extra=""):
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "nodeweave.yaml").write_text(BASE + extra)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name,meant", TYPOS)
def test_a_mistyped_variable_is_a_typo_wherever_it_is_given(tmp_path, monkeypatch, capsys, name, meant):
    _team(tmp_path, monkeypatch)
    said = []
    for argv in (("run", "--dry-run", "-e", f"{name}=1", "--", "train.py"),
                 ("run", "--dry-run", "--sweep", f"{name}=1,2", "--", "train.py")):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2, err
        said.append(err)
    (tmp_path / "nodeweave.yaml").write_text(BASE + f"env: {{{name}: '1'}}\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 2, err
    said.append(err)
    monkeypatch.setenv(name, "1")
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    code, out, err = run_cli(capsys, "validate")
    said.append(err)
    for text in said:
        assert f"{name} is not a variable nodeweave reads" in text, text
        assert "nodeweave sets it itself" not in text, text
        if meant:
            assert f"did you mean {meant}" in text, text


def test_a_known_variable_still_names_the_field_that_sets_it(tmp_path, monkeypatch, capsys):
    _team(tmp_path, monkeypatch)
    code, out, err = run_cli(capsys, "run", "--dry-run", "-e", "NODEWEAVE_STALL_TIMEOUT=5", "--", "train.py")
    assert code == 2 and "launcher.stall_timeout" in err and "not a variable nodeweave reads" not in err, err


# M2: a refusal that names `nodeweave run FLAG VALUE` names one this run takes on this spec and cluster: pasted,
# it is not refused (exit 2); a value it would refuse is said with the flag's own refusal, never offered.
@pytest.mark.parametrize("spec", [BASE, BASE + "recovery: {enabled: true, spares: 1}\n"])
@pytest.mark.parametrize("given", ["-e NODEWEAVE_NNODES=3", "-e NODEWEAVE_NNODES=1", "-e NNODES=2",
                                   "--sweep NODEWEAVE_NNODES=1,2", "-e NODEWEAVE_NPROC_PER_NODE=0",
                                   "-e NODEWEAVE_NPROC_PER_NODE=2", "-e NODEWEAVE_LAUNCHER=deepspeed",
                                   "-e NODEWEAVE_LAUNCHER=mpirun", "-e NODEWEAVE_PROFILE=nsys"])
def test_a_run_flag_offered_instead_of_a_variable_is_one_run_takes(tmp_path, monkeypatch, capsys, spec, given):
    import re
    import shlex

    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "nodeweave.yaml").write_text(spec)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "run", "--dry-run", *given.split(), "--", "train.py")
    assert code == 2 and "this run's own flag sets it" in err, err
    offered = re.findall(r"`nodeweave run ([^`]+)`", err)
    for words in offered:
        if "VALUE" in words or "..." in words:
            continue
        code, out, pasted = run_cli(capsys, "run", "--dry-run", *shlex.split(words), "--", "train.py")
        assert code != 2, (err, words, pasted)


# M4, M5, M6: every folder nodeweave writes into that the user names is judged by --out's one rule
# (``failures.own_folder_problem``): a system folder is refused, nothing is made there, and the refusal says truly
# whether the option makes a missing folder. The system trees are stood in for by a folder of the test's own (the
# table the rule reads, extended), so code that would take the folder writes into tmp_path, never /etc.
@pytest.fixture
def fake_etc(tmp_path, monkeypatch):
    from nodeweave import systemdirs

    etc = tmp_path / "sysetc"
    etc.mkdir()
    monkeypatch.setattr(systemdirs, "SYSTEM_TREES", {**systemdirs.SYSTEM_TREES, str(etc): "the system's configuration"})
    return etc


FOLDER_WRITERS = [
    (("doctor", "--capture", "{etc}/cap"), {}, "created if missing"),
    (("render", "all", "--dry-run", "--out", "{etc}/out"), {}, "created if missing"),
    (("run", "--dry-run", "--runs-dir", "{etc}/runs", "--", "train.py"), {}, "created if missing"),
    (("image", "build", "cpu", "--dry-run", "--offline", "--wheelhouse", "{etc}/wh"), {}, "makes no folder"),
    (("image", "build", "cpu", "--dry-run", "--context", "{etc}"), {}, "that exists"),
    (("validate",), {"NODEWEAVE_CACHE_DIR": "{etc}/cache"}, "made if missing"),
    (("validate",), {"XDG_CACHE_HOME": "{etc}"}, "made if missing"),
]


@pytest.mark.parametrize("argv,env,missing", FOLDER_WRITERS)
def test_every_folder_nodeweave_writes_into_is_refused_in_a_system_tree(tmp_path, monkeypatch, capsys, fake_etc,
                                                                         argv, env, missing):
    _team(tmp_path, monkeypatch)
    (tmp_path / "requirements.txt").write_text("")
    (fake_etc / "wh").mkdir()
    if "--wheelhouse" in argv:  # the build needs its rendered files before it reads the wheelhouse
        assert run_cli(capsys, "render", "all")[0] == 0
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(etc=fake_etc))
    before = sorted(p.name for p in fake_etc.rglob("*"))
    code, out, err = run_cli(capsys, *[word.format(etc=fake_etc) for word in argv])
    assert code == 2 and "the system's configuration" in err and missing in err, err
    assert sorted(p.name for p in fake_etc.rglob("*")) == before


def test_a_missing_wheelhouse_is_not_made_and_its_refusal_says_so(tmp_path, monkeypatch, capsys, fake_etc):
    _team(tmp_path, monkeypatch)
    (tmp_path / "requirements.txt").write_text("")
    assert run_cli(capsys, "render", "all")[0] == 0
    for folder in (fake_etc / "wh", tmp_path / "nowh"):
        code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--offline", "--wheelhouse",
                                 str(folder))
        assert code == 2 and "created if missing" not in err, err
        assert not folder.exists()


# M7: a folder of this machine the spec mounts into every container (workspace.host_path, volumes[].host_path) that
# does not exist is said once, naming it, by validate and by up's dry run, before the engine would make it empty.
@pytest.mark.parametrize("verb", [("validate",), ("up", "--dry-run"), ("up", "--hold", "--dry-run")])
def test_a_missing_mounted_folder_is_said_once_naming_it(tmp_path, monkeypatch, capsys, verb):
    _team(tmp_path, monkeypatch, f"workspace: {{host_path: wsx}}\n"
                                 f"volumes: [{{name: data, host_path: {tmp_path}/nodata, path: /data}}]\n")
    code, out, err = run_cli(capsys, *verb)
    text = out + err
    assert code == 0, text
    for field, folder in (("workspace.host_path", tmp_path / "wsx"), ("volumes[0].host_path", tmp_path / "nodata")):
        lines = [line for line in text.splitlines() if str(folder) in line and "does not exist" in line]
        assert len(lines) == 1 and field in lines[0], text
    assert "is not in the workspace" not in text, text
    assert not (tmp_path / "wsx").exists() and not (tmp_path / "nodata").exists()


# M5's sibling: a file an option names (init --out, bench --json-out, --plot, hosts probe --write-hostfile) is not
# written into a system tree either; a file in a folder of your own (or /tmp) still is.
@pytest.mark.parametrize("argv", [("init", "--dry-run", "--out", "{etc}/nodeweave.yaml"),
                                  ("bench", "--dry-run", "--json-out", "{etc}/bench/numbers.json")])
def test_a_file_option_is_refused_in_a_system_tree(tmp_path, tmp_path_factory, monkeypatch, capsys, fake_etc, argv):
    _team(tmp_path, monkeypatch)
    code, out, err = run_cli(capsys, *[word.format(etc=fake_etc) for word in argv])
    assert code == 2 and "the system's configuration" in err, err
    assert not any(fake_etc.iterdir())
    mine = tmp_path_factory.mktemp("mine")  # a folder of your own outside the team's (init refuses one below a
    code, out, err = run_cli(capsys, *[word.format(etc=mine) for word in argv])  # spec: walk7 A37)
    assert code != 2, err
