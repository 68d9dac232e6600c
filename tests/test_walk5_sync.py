"""walk5's findings in sync, nodeweave's state files and ``render --prune`` (issue 43, /work/wt/walk5-report.md rows
W9-W12, W33-W36, W46), each fixed as a class and walked here over every member the code's own registries list. Each
test fails on the code before these fixes. No container is started.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line

SPEC = """\
name: team
image:
  variant: cpu
  requirements: requirements.txt
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
"""


@pytest.fixture
def team(tmp_path, monkeypatch):
    """The README's "your own project" folder: a spec, a script, a pinned requirements file; not a git checkout."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    return tmp_path


# -- W33: --prune removes only what a target renders, whatever the record lists -----------------------------------


def _forge(folder: Path, rel: str, target: str) -> None:
    """A record entry for ``rel`` with its real digest, as a bad merge or a copied .nodeweave/ leaves."""
    path = folder / ".nodeweave" / "rendered.json"
    data = json.loads(path.read_text())
    digest = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
    data["files"][rel] = {"job": "team", "sha256": digest, "target": target}
    path.write_text(json.dumps(data))


def test_prune_never_removes_a_path_its_target_does_not_render(capsys, team):
    from nodeweave.targets.registry import RENDERERS

    assert run_cli(capsys, "render", "all")[0] == 0
    clean = (team / ".nodeweave" / "rendered.json").read_text()
    users = {rel: (team / rel).read_bytes() for rel in ("nodeweave.yaml", "train.py", "requirements.txt")}
    for target in [*RENDERERS, "no-such-target"]:
        for rel in users:
            (team / ".nodeweave" / "rendered.json").write_text(clean)
            _forge(team, rel, target)
            for argv in (["render", "all", "--prune", "--dry-run"], ["render", "all", "--prune"],
                         ["render", target if target in RENDERERS else "images", "--prune"]):
                code, out, err = run_cli(capsys, *argv)
                line = one_line(err)
                assert code == EXIT_USAGE and rel in line and "rendered.json" in line, (argv, target, rel, line)
                assert f"remove" not in out
            assert {r: (team / r).read_bytes() for r in users} == users


def test_prune_never_removes_the_specs_own_files_even_under_a_rendered_tree(capsys, team):
    """image.requirements kept under images/: the user's file all the same (since walk6 W35 the record's entry is
    refused as a name images never renders, before the spec's own files are looked at)."""
    (team / "images").mkdir()
    (team / "requirements.txt").rename(team / "images" / "requirements.txt")
    (team / "nodeweave.yaml").write_text(SPEC.replace("requirements: requirements.txt",
                                                      "requirements: images/requirements.txt"))
    assert run_cli(capsys, "render", "images")[0] == 0
    _forge(team, "images/requirements.txt", "images")
    code, _, err = run_cli(capsys, "render", "images", "--prune")
    line = one_line(err)
    assert code == EXIT_USAGE and "images/requirements.txt" in line, line
    assert (team / "images" / "requirements.txt").read_text() == "numpy==1.26.4\n"


def test_every_renderer_writes_only_under_its_declared_roots():
    """The roots bound --prune; a renderer writing elsewhere is caught on every render (render_targets checks)."""
    from nodeweave.spec import load_spec
    from nodeweave.targets.registry import RENDERERS

    repo = Path(__file__).resolve().parents[1]
    for spec_file in [repo / "nodeweave.yaml", *sorted((repo / "examples").glob("*.yaml"))]:
        spec = load_spec(spec_file)
        for name, row in RENDERERS.items():
            for path in row(spec):
                assert row.makes(path), (spec_file.name, name, path, row.roots)


# -- W10: nodeweave's own state (.nodeweave/, run folders, the job token) is never workspace to send ---------------


def _state(folder: Path) -> "dict[str, str]":
    """Every kind of file nodeweave writes beside a spec, and where (rel path -> what)."""
    made = {".nodeweave/team/job-token": "the check-in token", ".nodeweave/team/up.log": "a state file",
            ".nodeweave/rendered.json": "the render record", "out/.nodeweave/rendered.json": "another --out's record",
            "runs/20261129T200000Z-team/node-0.log": "a run's log", "runs/20261129T200000Z-team/run.json": "a run",
            "runs/20261129T200000Z-bench.json": "bench's report"}
    for rel in made:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("x\n")
    return made


@pytest.mark.parametrize("git", [False, True])
def test_sync_never_sends_nodeweaves_own_state(capsys, team, git):
    import subprocess

    from nodeweave.sync.filters import build_filter
    from nodeweave.sync.request import run_folders

    if git:  # with git, and with git's view turned off: the same answer
        subprocess.run(["git", "init", "-q", str(team)], check=True)
    made = _state(team)
    for use_gitignore in (True, False):
        fileset = build_filter(team, use_gitignore=use_gitignore,
                               state=run_folders(team, team / "nodeweave.yaml")).walk(team)
        sent = sorted(set(made) & set(fileset.files))
        assert not sent, sent
        assert {".nodeweave/", "runs/", "out/.nodeweave/"} <= set(fileset.held_back_state), fileset.held_back_state
    code, out, err = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "-o", "json")  # not the nodes' mount
    assert out, (code, err)
    request = json.loads(out)["phases"][0]["request"]
    assert code == 0 and request["files"] == 3, (request, err)  # the spec, the script, the requirements
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run")
    assert "held back as nodeweave's own state: .nodeweave/, out/.nodeweave/, runs/" in out, out


def test_sending_state_takes_an_explicit_pattern_and_the_token_stays_a_secret(team):
    from nodeweave.sync.filters import build_filter
    from nodeweave.sync.request import run_folders

    made = _state(team)
    runs = run_folders(team, team / "nodeweave.yaml")
    fileset = build_filter(team, extra_excludes=["!runs/", "!.nodeweave/"], state=runs).walk(team)
    assert "runs/20261129T200000Z-team/run.json" in fileset.files and ".nodeweave/team/up.log" in fileset.files
    assert ".nodeweave/team/job-token" not in fileset.files
    assert fileset.held_back_secrets == [".nodeweave/team/job-token"], fileset.held_back_secrets
    fileset = build_filter(team, extra_excludes=["!.nodeweave/"], include_secrets=True, state=runs).walk(team)
    assert ".nodeweave/team/job-token" in fileset.files and not set(made) & set(fileset.files) - {
        ".nodeweave/team/job-token", ".nodeweave/team/up.log", ".nodeweave/rendered.json",
        "out/.nodeweave/rendered.json"}


# -- W12: a plan that deletes says so in its first line, even when the targets cannot be asked ----------------------


def test_a_delete_sync_plan_says_it_deletes(capsys, team):
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run")
    assert code == 0 and "delete on each target" not in out, out
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "--delete")
    first = next(line for line in out.splitlines() if line.startswith("# push"))
    assert code == 0 and "delete on each target what SRC lacks" in first, out
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "--delete", "-o", "json")
    assert "delete on each target" in json.loads(out)["phases"][0]["what"]


# -- W9: a file nodeweave writes itself that is a link, a pipe, a device or a folder is named so, in one line --------


def _not_a_file(path: Path, kind: str) -> str:
    """Make ``path`` the ``kind`` of thing that is not a regular file; what the message should call it."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "pipe":
        os.mkfifo(path)
        return "is a named pipe"
    if kind == "folder":
        path.mkdir()
        return "is a folder"
    target = "/dev/zero" if kind == "device link" else "/etc/hostname"
    path.symlink_to(target)
    return f"is a symbolic link (to {target})"


KINDS = ("pipe", "folder", "file link", "device link")
RECORDS = {  # a record nodeweave writes -> the command that reads it
    "runs/20261129T200000Z-team/run.json": ("runs", "show", "20261129T200000Z-team"),
    "runs/20261129T200000Z-team-sweep/sweep.json": ("runs", "show", "20261129T200000Z-team-sweep"),
    ".nodeweave/rendered.json": ("render", "images", "--dry-run"),
    ".nodeweave/team/cluster.json": ("status",),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rel", sorted(RECORDS))
def test_a_record_that_is_not_a_file_is_named_in_one_line(capsys, team, rel, kind):
    said = _not_a_file(team / rel, kind)
    code, _, err = run_cli(capsys, *RECORDS[rel])
    line = one_line(err)
    assert code == EXIT_USAGE and rel.rsplit("/", 1)[-1] in line and said in line, line
    assert "not a file nodeweave" in line and "<(cmd)" not in line and "being written" not in line, line


@pytest.mark.parametrize("kind", KINDS)
def test_runs_ls_lists_a_run_whose_record_is_not_a_file_with_why(capsys, team, kind):
    said = _not_a_file(team / "runs" / "20261129T200000Z-team" / "run.json", kind)
    code, out, _ = run_cli(capsys, "runs", "ls", "-o", "json")
    (row,) = json.loads(out)
    assert row["state"] == f"unreadable: run.json {said}, not a file nodeweave wrote; move the folder out of runs/"


def test_every_record_read_refuses_what_is_not_a_regular_file():
    """Each read of a record nodeweave writes (RECORD_CAP) goes through bounded.read_own, so a new record is covered;
    the cluster state file refuses a link itself before reading (jobstate.in_the_way), and the two reads of a
    stream (a sysfs capture, node 0's status answer) are not files nodeweave wrote."""
    import re

    src = Path(__file__).resolve().parents[1] / "src" / "nodeweave"
    allowed = {"entrypoint/bounded.py", "entrypoint/detection/sysfs.py", "cluster/top.py", "cluster/options.py"}
    loose = [f"{path.relative_to(src)}:{text[:80]}" for path in sorted(src.rglob("*.py"))
             if str(path.relative_to(src)) not in allowed
             for text in re.findall(r"bounded\.read_(?:text|bytes)\([^)]*RECORD_CAP[^\n]*", path.read_text())]
    assert not loose, loose


# -- W11: exclude rules that leave nothing to send are refused, naming them; so is a SRC with nothing in it -----------


@pytest.mark.parametrize("rules, ignore_file, named", [
    (["*"], "", "--exclude '*'"),
    (["**"], "", "--exclude '**'"),
    (["/*"], "", "--exclude '/*'"),
    (["*.py", "*.txt", "*.yaml"], "", "--exclude '*.py'"),
    ([], "# everything\n*\n", ".nodeweaveignore:2 '*'"),
])
def test_excludes_that_leave_nothing_to_send_are_refused(capsys, team, rules, ignore_file, named):
    if ignore_file:
        (team / ".nodeweaveignore").write_text(ignore_file)
    for extra in ([], ["--delete"], ["--check"]):
        code, _, err = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", *extra,
                               *[f"--exclude={rule}" for rule in rules])
        line = one_line(err)
        assert code == EXIT_USAGE and named in line and "nothing would be sent" in line, line


def test_a_src_with_nothing_to_send_is_refused(capsys, team, tmp_path):
    empty = tmp_path / "empty"
    (empty / ".nodeweave").mkdir(parents=True)
    code, _, err = run_cli(capsys, "sync", str(empty), "/workspace", "--node", "podman:team-0", "--dry-run", "--delete")
    line = one_line(err)
    assert code == EXIT_USAGE and "holds no file to send" in line and ".nodeweave/" in line, line


# -- W34, W35: a flag that does nothing with another's value, or undoes what another asks, is refused ---------------


def _value_cases():
    from cli_run import leaves
    from nodeweave.cli.habits.conflicts import IDLE_WITH_VALUE

    cases = []
    for words, command in leaves():
        flags = {name for p in command.params if p.param_type_name == "option" for name in p.opts}
        for (flag, option), values in IDLE_WITH_VALUE.items():
            if flag in flags and option in flags:
                cases += [(words, [flag, option, value]) for value in values]
                cases += [(words, [flag, f"{option}={value}"]) for value in values]
    return cases


def test_the_value_walk_finds_sync():
    assert ["sync"] in [words for words, _ in _value_cases()]


@pytest.mark.parametrize("words, argv", _value_cases(), ids=lambda x: " ".join(x))
def test_a_flag_idle_with_an_options_value_is_refused(capsys, team, words, argv):
    code, _, err = run_cli(capsys, *words, *argv, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"{argv[0]} does nothing with {argv[1].split('=')[0]} " in line, line


@pytest.mark.parametrize("argv, said", [
    (["--include-secrets", "--relay"], "--include-secrets and --relay contradict"),
    (["-z", "--tar"], "--compress does nothing with --tar"),
    (["--relay", "--check"], "--relay does nothing with --check"),
    (["--shared", "--check"], "--shared does nothing with --check"),
])
def test_sync_flags_that_undo_each_other_are_refused(capsys, team, argv, said):
    code, _, err = run_cli(capsys, "sync", "--dry-run", *argv)
    assert code == EXIT_USAGE and said in one_line(err), err


def test_the_flags_that_do_work_together_still_do(capsys, team):
    for argv in (["-z", "--method", "rsync"], ["-z"], ["--include-secrets", "--no-relay"], ["--include-secrets"]):
        code, _, err = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", *argv)
        assert code == 0, (argv, err)


# -- W46: the verbs that prepare a run say `nodeweave up --hold` when nothing is up, as run's and check's do ----------


@pytest.mark.parametrize("mode", ["run", "hold"])
def test_every_verb_that_goes_into_held_nodes_hints_a_holding_up(mode):
    """Every verb of NOTHING (the table of what a verb finds nothing of) gets its hint from start_hint: the verbs
    that prepare or start a run in held nodes never hint a run-mode `up`, whose nodes would start the script."""
    from nodeweave.cluster.base import HELD_VERBS, NOTHING, start_hint
    from nodeweave.spec import parse_spec

    spec = parse_spec(SPEC.replace("script: train.py", f"script: train.py\n  mode: {mode}"), "nodeweave.yaml")
    assert {"run", "check", "sync", "exec", "shell", "status"} <= set(HELD_VERBS.values())
    for verb in {*NOTHING, *HELD_VERBS}:
        hint = start_hint(verb, spec)
        if verb in HELD_VERBS:
            up = "`nodeweave up` (launcher.mode: hold)" if mode == "hold" else "`nodeweave up --hold`"
            assert hint.startswith(f"{up} starts it, then `nodeweave {HELD_VERBS[verb]}`"), (verb, hint)
        else:
            assert hint == "`nodeweave up` starts it", (verb, hint)


@pytest.mark.skipif(__import__("shutil").which("podman") is None, reason="podman is not installed "
                    "(.ci/setup-engine.sh installs it): it answers 'missing' for nodes not up")
@pytest.mark.parametrize("argv, verb", [(["sync"], "run"), (["exec", "--", "ls"], "exec"), (["shell"], "shell"),
                                        (["status"], "status")])  # sync: the team's nodes mount it (walk6, W27)
def test_the_preparing_verbs_hint_up_hold_when_nothing_is_up(capsys, team, argv, verb):
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 3 and f"`nodeweave up --hold` starts it, then `nodeweave {verb}`" in line, line


# -- W36: a DEST the nodes bind-mount from this machine is never written through the nodes ---------------------------


def test_sync_never_writes_a_folder_the_nodes_mount_from_this_machine(capsys, team, tmp_path, monkeypatch):
    """Every bind mount of the local target (its host_mounts: workspace, cache, each volume with a host_path): SRC
    itself there is "nothing to send" (exit 0, the dry run's plan says why, a real sync moves nothing); any other
    SRC is refused (exit 2), before the nodes are asked, with or without --delete."""
    from nodeweave.cluster import open_backend
    from nodeweave.cluster.options import ClusterOptions, spec_default
    from nodeweave.spec import load_spec

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache's host folder (~/.cache/nodeweave) in here
    data = tmp_path / "shared-data"
    data.mkdir()
    (data / "x.bin").write_text("1\n")
    (team / "nodeweave.yaml").write_text(SPEC + f"volumes:\n  - {{name: data, path: /data, host_path: {data}}}\n")
    spec = load_spec(team / "nodeweave.yaml")
    backend = open_backend(spec, team / "nodeweave.yaml", spec_default(ClusterOptions(), spec).checked())
    mounts = backend.host_mounts()
    assert {inside for _, inside in mounts} >= {"/workspace", "/data", spec.cache.path}, mounts
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.py").write_text("print(1)\n")
    for host, inside in mounts:
        host.mkdir(parents=True, exist_ok=True)
        if not any(host.iterdir()):
            (host / "f.txt").write_text("x\n")
        code, out, err = run_cli(capsys, "sync", str(host), inside, "--dry-run", "-o", "json")
        plan = json.loads(out)
        assert code == 0 and plan["phases"] == [] and any(f"mount {host} at {inside}" in note and "nothing to send"
                                                          in note for note in plan["notes"]), (inside, out, err)
        for extra in ([], ["--delete"], ["--dry-run"]):
            before = sorted(p.name for p in host.iterdir())
            code, _, err = run_cli(capsys, "sync", str(other), inside, *extra)
            line = one_line(err)
            assert code == EXIT_USAGE and f"mount {host} at {inside}" in line and "over your files" in line, line
            assert sorted(p.name for p in host.iterdir()) == before
    code, _, err = run_cli(capsys, "sync", str(other), "/workspace/sub", "--dry-run")
    assert code == EXIT_USAGE and f"DEST /workspace/sub is {team / 'sub'}" in one_line(err), err


# -- W49: a DEST that is a home, a mount root or a credential folder is refused, as / and /root are -------------------


@pytest.mark.parametrize("dest", ["/home/me", "/Users/me", "/var/home/me", "/mnt", "/media", "/media/usb",
                                  "/run/media/me", "/home/me/.ssh", "~/.ssh", "/srv/job/.aws", "~/.kube/x",
                                  "/home/me/.gnupg", "/opt/job/.docker"])
def test_a_dest_whose_delete_would_wipe_a_home_or_credentials_is_refused(capsys, team, dest):
    """The one DEST rule (remote.check_dest) serves sync's DEST and up's --remote-dir alike."""
    from nodeweave.remote.names import CREDENTIAL_FOLDERS

    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, _, err = run_cli(capsys, "sync", ".", dest, "--hosts-file", "hosts.txt", "--delete", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"DEST {dest!r} is not accepted" in line, line
    code, _, err = run_cli(capsys, "up", "--target", "hosts", "--host", "gpu01", "--host", "gpu02",
                           "--remote-dir", dest, "--dry-run")
    assert code == EXIT_USAGE and f"{dest!r} is not accepted" in one_line(err), err
    assert {".ssh", ".aws", ".kube", ".gnupg", ".docker"} <= set(CREDENTIAL_FOLDERS)


@pytest.mark.parametrize("dest", ["/home/me/project", "/mnt/data/job", "~/project", "/workspace", "/media/usb/job"])
def test_a_workspace_folder_under_them_is_still_taken(capsys, team, dest):
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, _, err = run_cli(capsys, "sync", ".", dest, "--hosts-file", "hosts.txt", "--dry-run")
    assert code == 0, err


# -- W67: a .nodeweaveignore that is not a file of patterns is named, never skipped ----------------------------------


@pytest.mark.parametrize("kind", ["pipe", "folder", "device link"])
def test_an_ignore_file_that_is_not_a_file_is_refused(capsys, team, kind):
    said = _not_a_file(team / ".nodeweaveignore", kind)
    said = "is a character device" if kind == "device link" else said  # a link to a file is the user's choice
    code, _, err = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and ".nodeweaveignore" in line and said in line, line


# -- W68: render never writes its record through a link, as up never writes a job's state through one ---------------


@pytest.mark.parametrize("argv", [["render", "all"], ["render", "all", "--dry-run"], ["render", "compose", "--prune"]])
def test_render_refuses_a_state_folder_that_is_a_link(capsys, team, tmp_path, argv):
    elsewhere = tmp_path / "otherproj"
    elsewhere.mkdir()
    (team / ".nodeweave").symlink_to(elsewhere)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and f".nodeweave is a symbolic link (to {elsewhere})" in line, line
    assert list(elsewhere.iterdir()) == []


# -- W66: a sync that leaves out the spec's own files (launcher.script, image.requirements) says so ------------------


@pytest.mark.parametrize("how", [["-x", "train.py"], ["-x", "*.py"], [".nodeweaveignore", "*.py\n"]])
def test_a_sync_that_leaves_out_the_script_says_so(capsys, team, how):
    if how[0] == ".nodeweaveignore":
        (team / ".nodeweaveignore").write_text(how[1])
        how = []
    code, out, err = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "-o", "json", *how)
    notes = json.loads(out)["notes"]
    assert code == 0 and any("leaves out launcher.script train.py" in note for note in notes), notes
    (team / ".nodeweaveignore").unlink(missing_ok=True)
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "-x", "*.txt")
    assert "leaves out image.requirements requirements.txt" in out, out
    code, out, _ = run_cli(capsys, "sync", ".", "/opt/work", "--dry-run", "-o", "json")
    assert not [n for n in json.loads(out)["notes"] if "leaves out" in n]
    # SRC, DEST and the targets all typed (no word of them reads the spec): the folder's spec still names its files
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, _ = run_cli(capsys, "sync", ".", "/data/job", "--hosts-file", "hosts.txt", "--dry-run", "-x", "*.py")
    assert code == 0 and "leaves out launcher.script train.py" in out, out


# -- W53: the folder's other job's damaged record is named (a renamed job down cannot reach), never skipped ----------


@pytest.mark.parametrize("argv", [["status"], ["down", "--dry-run"]])
def test_a_damaged_record_of_another_job_in_the_folder_is_named(capsys, team, argv):
    (team / ".nodeweave" / "old").mkdir(parents=True)
    (team / ".nodeweave" / "old" / "cluster.json").write_text('{"target": "local", "made": "x"}')
    _, _, err = run_cli(capsys, *argv)
    said = [line for line in err.splitlines() if ".nodeweave/old/cluster.json" in line]  # once (replay N4: twice)
    assert len(said) == 1 and 'field made is "x"' in said[0], err
    assert "`nodeweave down` cannot reach it" in said[0] and "put `name: old` back" in said[0]


# -- W70: an output root is never /, a system folder or a kernel file system (failures.writable_dir, every user) -----


@pytest.mark.parametrize("folder", ["/", "/etc", "/usr/lib", "/proc", "/sys/x", "/dev"])
@pytest.mark.parametrize("argv", [["render", "all", "--dry-run", "--out"], ["run", "--dry-run", "--runs-dir"]])
def test_an_output_root_that_is_a_system_folder_is_refused(capsys, team, folder, argv):
    tail = ["--", "train.py"] if argv[0] == "run" else []
    code, _, err = run_cli(capsys, *argv, folder, *tail)
    line = one_line(err)
    assert code == EXIT_USAGE and folder in line and ("system folder" in line or "kernel file system" in line), line


@pytest.mark.parametrize("argv", [["run", "--dry-run", "--", "train.py"], ["check", "--dry-run"],
                                  ["run", "--", "train.py"]])
def test_a_run_never_writes_its_folder_through_a_runs_link(capsys, team, tmp_path, argv):
    """W68's other half: runs/ beside the spec as a link is refused by every verb that writes a run folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (team / "runs").symlink_to(elsewhere)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "is a symbolic link" in line and f"--runs-dir {elsewhere}" in line, line
    assert list(elsewhere.iterdir()) == []
