"""The thirteenth walk's rows A5, A7, A12 (walk13a) and B6 (walk13b), one test per class (fix15d)."""

from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.checkin.fingerprint import local_fingerprint
from nodeweave.entrypoint.checkin.verdict import Entry, REFUSE, WARN, judge, render_table
from nodeweave.entrypoint.detection.sysfs import Root
from nodeweave.entrypoint.planning.contract import EXCHANGE_ALLOWABLE
from nodeweave.entrypoint.planning.settings import parse

FIX = Path(__file__).parent / "fixtures" / "synthetic"


def _node_fp(tmp_path, rank, folder, command, script_text, launcher="torchrun"):
    work = tmp_path / folder
    work.mkdir(exist_ok=True)
    script = "train.py" if launcher != "command" else command[1]
    (work / script).write_text(script_text)
    argv = ["--launcher", launcher, "--nnodes", "2", "--node-rank", str(rank), "--master-addr", "hgx-a00",
            "--"] + list(command)
    plan = make_plan(argv, {}, sysroot=str(FIX / "hgx-h100"))
    return local_fingerprint(plan, Root(str(FIX / "hgx-h100")), parse(argv, {}), cwd=str(work))


# What each node runs, member by member: (node 1's command, node 1's script text), node 0 running
# `train.py --lr 1` from its own folder with `Linear(4,1)`. No git and no sync stamp in either folder.
APART = {
    "arguments": (["train.py", "--lr", "9"], "model = Linear(4,1)\n"),
    "script content": (["train.py", "--lr", "1"], "model = Linear(8,1)\n"),
    "both": (["train.py", "--lr", "9"], "model = Linear(8,1)\n"),
}


@pytest.mark.parametrize("member", sorted(APART))
@pytest.mark.parametrize("launcher", ["torchrun", "command"])
def test_the_check_in_compares_what_each_node_runs(tmp_path, member, launcher):
    """B6: two nodes given two scripts or two argument lists from two working folders (no git, no sync stamp)
    checked in as one job ("2 node(s) agree"); the fingerprint carries the command and its script's digest and
    node 0 refuses `command` (allowable, as `workspace` is), naming the node apart; equal ones still start."""
    command, text = APART[member]
    prefix = ["python"] if launcher == "command" else []
    fp0 = _node_fp(tmp_path, 0, "A", prefix + ["train.py", "--lr", "1"], "model = Linear(4,1)\n", launcher)
    fp1 = _node_fp(tmp_path, 1, "B", prefix + command, text, launcher)
    assert fp0["workspace_commit"] is None and fp0["workspace_digest"] is None
    assert fp0["script_digest"] and fp0["command"].endswith("train.py --lr 1")
    entries = [Entry(fp0, seen="127.0.0.1", own=True), Entry(fp1, seen="127.0.0.1", probe="ok")]
    verdict = judge(entries, 2, 2, launcher, reachability=False)
    found = [p for p in verdict["problems"] if p["check"] == "command"]
    assert verdict["decision"] == "refuse" and found and found[0]["severity"] == REFUSE, verdict["problems"]
    assert found[0]["nodes"] == ["node 1 (hgx-a00)"] or found[0]["nodes"][0].startswith("node 1 ")
    table = "\n".join(render_table(verdict))
    assert " *" in table and "NODEWEAVE_EXCHANGE_ALLOW=command starts anyway" in table, table
    allowed = judge(entries, 2, 2, launcher, allow=("command",), reachability=False)
    assert allowed["decision"] == "start" and [p["severity"] for p in allowed["problems"]
                                               if p["check"] == "command"] == [WARN]
    same = _node_fp(tmp_path, 1, "C", prefix + ["train.py", "--lr", "1"], "model = Linear(4,1)\n", launcher)
    ok = judge([entries[0], Entry(same, seen="127.0.0.1", probe="ok")], 2, 2, launcher, reachability=False)
    assert ok["decision"] == "start" and not [p for p in ok["problems"] if p["check"] == "command"]
    assert "command" in EXCHANGE_ALLOWABLE


def test_the_script_digest_reads_no_pipe_and_a_bounded_part(tmp_path):
    """B6: the script is hashed with a bounded read of a regular file only: a named pipe is never opened for a
    blocking read (the start would hang), a large file costs at most SCRIPT_READ_MAX bytes."""
    import os

    from nodeweave.entrypoint.checkin import fingerprint

    os.mkfifo(str(tmp_path / "train.py"))
    assert fingerprint.program("torchrun", ["train.py"], str(tmp_path))["script_digest"] is None
    big = tmp_path / "big"
    big.mkdir()
    (big / "train.py").write_bytes(b"#" * (fingerprint.SCRIPT_READ_MAX + 10))
    first = fingerprint.program("torchrun", ["train.py"], str(big))["script_digest"]
    with open(str(big / "train.py"), "ab") as f:
        f.write(b"x")
    assert first and fingerprint.program("torchrun", ["train.py"], str(big))["script_digest"] != first  # size


# --- A7: a dry run's note is the real verb's line -------------------------------------------------------------------

SLURM_SPEC = ("name: p8\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
              "slurm: {runtime: host}\n")
DRY_VERBS = {"run": [], "stop": [], "check": [], "shell": [], "exec": ["--", "hostname"]}


def _main(capsys, folder, *argv):
    from nodeweave.cli import main

    code = main([argv[0], "--spec", str(folder / "nodeweave.yaml"), *argv[1:]])  # before any `--`
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("verb", sorted(DRY_VERBS))
def test_a_dry_run_notes_the_line_the_real_verb_ends_with_where_placeholders_stand_in(capsys, tmp_path, monkeypatch,
                                                                                      verb):
    """A7: with no Slurm allocation recorded, `run/stop/check/shell/exec --dry-run` noted "p8 is not up on Slurm
    allocation (none yet) (...): node-0 (gone), node-1 (gone)", placeholders never started called gone, while the
    real verb ends with "p8 is not up: no Slurm allocation is recorded for it; ...": the note is that line."""
    (tmp_path / "nodeweave.yaml").write_text(SLURM_SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    head, tail = [verb], DRY_VERBS[verb]
    code, out, err = _main(capsys, tmp_path, *head, "--dry-run", *tail)
    assert code == 0, (out, err)
    real_code, real_out, real_err = _main(capsys, tmp_path, *head, *tail)
    real = [line for line in real_err.splitlines() if line.startswith("nodeweave: error: ")]
    assert real_code == 3 and real, (real_out, real_err)
    said = real[0][len("nodeweave: error: "):]
    assert f"# the real {verb} would end with exit 3: {said}" in out.splitlines(), out
    assert "(gone)" not in out and "(none yet)" not in out


# --- A12: a path typed in a subfolder of the workspace, read on the nodes from its root -----------------------------

LOCAL_SPEC = "name: p9\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
# (verb, the command typed in sub/a, what the plan must say): each word that names a file from sub/a
TYPED_HERE = {
    "exec bare script": (["exec"], ["hi.py"], "`nodeweave exec -- python sub/a/hi.py` runs it once per node"),
    "exec python script": (["exec"], ["python", "hi.py"], "from there hi.py is sub/a/hi.py; "
                                                           "`nodeweave exec -- python sub/a/hi.py`"),
    "exec ./program": (["exec"], ["./hi.py"], "from there ./hi.py is sub/a/hi.py; `nodeweave exec -- sub/a/hi.py`"),
    "exec ../ path": (["exec"], ["python", "../a/hi.py"], "from there ../a/hi.py is sub/a/hi.py"),
    "exec a data file": (["exec", "--node", "0"], ["cat", "conf.yaml"],
                         "`nodeweave exec --node 0 -- cat sub/a/conf.yaml`"),
    "run a script's argument": (["run"], ["hi.py", "--config", "conf.yaml"], "from there conf.yaml is sub/a/conf.yaml"),
    "run --launcher command": (["run", "--launcher", "command"], ["bash", "go.sh"], "from there go.sh is sub/a/go.sh"),
}


@pytest.mark.parametrize("member", sorted(TYPED_HERE))
def test_a_path_typed_in_a_subfolder_is_named_from_the_workspace_root(capsys, tmp_path, monkeypatch, member):
    """A12: in a subfolder of the workspace, `exec -- hi.py`'s note suggested `exec -- python hi.py`, which runs in
    the workspace's root where there is no hi.py, and `exec -- python hi.py` had no note at all; every word of the
    command that names a file from here (exec's, and a run's arguments besides the script run already maps) is said
    with its path from the root (`run.from_root`, the one reading), with the line to type."""
    verb, command, said = TYPED_HERE[member]
    (tmp_path / "nodeweave.yaml").write_text(LOCAL_SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    sub = tmp_path / "sub" / "a"
    sub.mkdir(parents=True)
    for name in ("hi.py", "conf.yaml", "go.sh"):
        (sub / name).write_text("print(2)\n" if name.endswith(".py") else "x\n")
    monkeypatch.chdir(sub)
    code, out, err = _main(capsys, tmp_path, *verb, "--dry-run", "--", *command)
    assert code == 0, (out, err)
    assert said in out + err, out + err
    assert "workspace's root (/workspace)" in out + err or "python sub/a/hi.py` runs it" in out


def test_a_path_typed_at_the_root_or_of_no_file_here_gets_no_note(capsys, tmp_path, monkeypatch):
    """A12: from the workspace's root (the path is the same there) nothing is said."""
    (tmp_path / "nodeweave.yaml").write_text(LOCAL_SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = _main(capsys, tmp_path, "exec", "--dry-run", "--", "python", "train.py", "missing.py")
    assert code == 0 and "where every node starts" not in out + err, out + err


# --- A5: a symbolic link at a rendered path, or on its way -------------------------------------------------------

RENDER_SPEC = "name: p5\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def _rendered(capsys, tmp_path, target):
    """A project rendered for ``target``: (its folder, the files the render wrote, relative)."""
    from nodeweave.rendering import record

    project = tmp_path / "p"
    project.mkdir()
    (project / "nodeweave.yaml").write_text(RENDER_SPEC)
    (project / "train.py").write_text("print(1)\n")
    code, out, err = _main(capsys, project, "render", target)
    if code != 0:
        pytest.skip(f"{target} does not render for this spec: {err.strip()[:200]}")
    files = sorted(record.read(project))
    assert files, out
    return project, files


@pytest.mark.parametrize("target", ["images", "compose", "manifests", "entrypoint", "slurm", "trainjob", "jobset"])
@pytest.mark.parametrize("how", ["file linked", "folder linked"])
def test_a_link_at_a_rendered_path_is_refused_naming_where_it_leads(capsys, tmp_path, monkeypatch, target, how):
    """A5: a rendered file replaced by a link to a shared file was silently unlinked (the link gone, the shared file
    left old), and a rendered folder linked elsewhere was written and `--prune`d through (files outside the project
    deleted); every render target, dry run and real, refuses it in one line naming the link and where it leads
    (the one rule nodeweave's own files follow: jobstate.in_the_way), exit 2, and nothing behind it changes."""
    project, files = _rendered(capsys, tmp_path, target)
    monkeypatch.chdir(project)
    rel = next((f for f in files if "/" in f), files[0]) if how == "folder linked" else files[-1]
    shared = tmp_path / "shared"
    if how == "file linked" or "/" not in rel:
        moved = project / rel
        shared.mkdir()
        (shared / moved.name).write_bytes(moved.read_bytes())
        moved.unlink()
        moved.symlink_to(shared / moved.name)
        link, leads = rel, shared / moved.name
    else:
        top = rel.split("/")[0]
        (project / top).rename(shared)
        (project / top).symlink_to(shared)
        link, leads = top, shared
    with open(project / rel, "ab") as edited:  # what the render writes differs from what is there: "changed"
        edited.write(b"\n# edited in the shared copy\n")
    before = {p: p.read_bytes() for p in shared.rglob("*") if p.is_file()} if shared.is_dir() else {}
    (project / "nodeweave.yaml").write_text(RENDER_SPEC.replace("nodes: 2", "nodes: 3"))
    for argv in (["render", target, "--dry-run"], ["render", target], ["render", target, "--prune"]):
        code, out, err = _main(capsys, project, *argv)
        assert code == 2, (argv, out, err)
        lines = [line for line in err.splitlines() if line.startswith("nodeweave: error:")]
        assert len(lines) == 1 and f"{link} is a symbolic link (to {leads})" in lines[0], err
        assert "Traceback" not in err
    assert (project / link).is_symlink()
    assert {p: p.read_bytes() for p in shared.rglob("*") if p.is_file()} == before


def test_the_build_never_refreshes_a_rendered_zipapp_through_a_link(tmp_path):
    """A5: the build's refresh of a stale rendered entrypoint zipapp (build/context.refresh_entrypoint) replaced a
    link there as render did; it refuses it by the same rule."""
    from nodeweave.build.context import refresh_entrypoint
    from nodeweave.errors import UsageError
    from nodeweave.targets import zipapp

    shared = tmp_path / "shared.pyz"
    shared.write_bytes(b"#!/usr/bin/env python3\n# Rendered by nodeweave, old\n\0zip")
    target = tmp_path / zipapp.PATH
    target.parent.mkdir(parents=True)
    target.symlink_to(shared)
    with pytest.raises(UsageError, match="is a symbolic link"):
        refresh_entrypoint(tmp_path, write=False)
    with pytest.raises(UsageError, match="is a symbolic link"):
        refresh_entrypoint(tmp_path)
    assert target.is_symlink() and shared.read_bytes().endswith(b"\0zip")
