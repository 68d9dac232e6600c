"""Replay of walk 6 (issue 43), fixr6b's rows: W48, N1-N5, N8, N9.

Each test fails on the code before its fix; each drives the real CLI or the real module a user's command reaches.
"""

from __future__ import annotations

import re

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_w48_recovery_md_says_a_saved_over_model_pt_is_never_handed_out(tmp_path):
    """W48: recovery.md said node 0 judges a saved-over model.pt by its age; the scan never hands it out at all."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery import checkpoints

    torch.save({"w": torch.zeros(3)}, tmp_path / "model.pt")
    assert checkpoints.newest_complete(tmp_path) is None
    assert [Path(path).name for path, _ in checkpoints.scan(tmp_path).stepless] == ["model.pt"]
    torch.save({"w": torch.zeros(3), "step": 200}, tmp_path / "step-200.pt")  # the name the doc's snippet saves
    assert Path(checkpoints.newest_complete(tmp_path).path).name == "step-200.pt"

    section = (REPO / "docs" / "recovery.md").read_text().split("## What the training script sees", 1)[1]
    paragraph = next(p for p in section.split("\n\n") if "`model.pt`" in p)
    flat = " ".join(paragraph.split())
    assert "age is all" not in flat
    assert "nothing handed back" in flat and "starts from scratch" in flat, flat


SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("record, text, argv", [
    (".nodeweave/rendered.json",
     '{"version": 1, "files": {"compose/.env": {"sha256": "ab", "target": "compose", "job": "team"}}}',
     ("render", "all", "--prune", "--dry-run")),
    (".nodeweave/team/cluster.json", "[]", ("status",)),
])
def test_n3_a_damaged_records_remedy_names_the_record_not_the_users_file(team, capsys, record, text, argv):
    """N3: "remove the file" after a line naming compose/.env (a file of the user's) was read as that file."""
    from cli_run import in_process as run_cli, one_line
    from nodeweave.errors import EXIT_USAGE

    (team / record).parent.mkdir(parents=True, exist_ok=True)
    (team / record).write_text(text)
    (team / "compose").mkdir(exist_ok=True)
    (team / "compose" / ".env").write_text("HF_TOKEN=secret\n")
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE, line
    assert f"remove the file {team / record}" in line, line
    assert (team / "compose" / ".env").is_file()


# bench's default (runs/<UTC time>-bench.json, walk10 A27) never names a file that is there: tests/test_walk10_fix10a3.py
@pytest.mark.parametrize("argv, default", [(("init", "--force"), "nodeweave.yaml")])
def test_n1_a_refusal_names_no_flag_the_user_did_not_type(tmp_path, monkeypatch, capsys, argv, default):
    """N1: `init --force` (no --out typed) over a linked spec read "--out nodeweave.yaml: is a symbolic link"; the
    same refusal with --out typed still names it, and a file that is not ours at the default says so the same way."""
    from cli_run import in_process as run_cli, one_line
    from nodeweave.errors import EXIT_USAGE

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    (tmp_path / "shared.yaml").write_text("name: team\n")
    (tmp_path / default).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / default).symlink_to(tmp_path / "shared.yaml")
    flag = "--out" if argv[0] == "init" else "--json-out"
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and f"{flag} {default}" not in line, line
    shown = default if argv[0] == "init" else tmp_path / default  # bench's default is beside the spec, said whole
    assert line.startswith(f"nodeweave: error: {shown} (where {argv[0]} writes without {flag}): is a symbolic link"), line
    code, _, err = run_cli(capsys, *argv, flag, default)
    assert code == EXIT_USAGE and f"error: {flag} {default}: is a symbolic link" in one_line(err)

    (tmp_path / default).unlink()
    (tmp_path / default).write_text("mine, not nodeweave's\n")
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and f"{default} (where {argv[0]} writes without {flag}): the file exists" in line, line


@pytest.mark.parametrize("image, shown", [("{variant: cpu, requirements: requirements.txt}", "'requirements.txt'"),
                                          ("{variant: cpu, project: {source: third_party/lib}}", "'third_party/lib'")])
def test_n2_a_missing_file_the_spec_names_says_which_folder_was_looked_in(tmp_path, monkeypatch, capsys, image,
                                                                         shown):
    """N2: with the spec a link into ../shared, "does not exist ... relative to the spec's directory" left the very
    question open: the folder holding the link is named, in full."""
    from cli_run import in_process as run_cli, one_line
    from nodeweave.errors import EXIT_USAGE

    (tmp_path / "shared").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "shared" / "team-spec.yaml").write_text(SPEC.replace("{variant: cpu}", image))
    (tmp_path / "proj" / "nodeweave.yaml").symlink_to("../shared/team-spec.yaml")
    (tmp_path / "proj" / "train.py").write_text("print('the training script')\n")
    monkeypatch.chdir(tmp_path / "proj")
    code, _, err = run_cli(capsys, "validate")
    line = one_line(err)
    assert code == EXIT_USAGE, line
    assert f"{shown} does not exist in {(tmp_path / 'proj').resolve()} (the spec's folder)" in line, line


@pytest.mark.parametrize("house, why", [("/etc", "/etc is / or a system folder"),
                                        ("/usr/share/wheels-n4", "inside /usr/share"),
                                        (".nodeweave/wheels", "nodeweave's own state folder")])
def test_n4_a_fill_hint_never_names_a_folder_its_own_rule_refuses(team, capsys, house, why):
    """N4: `--wheelhouse /etc --offline` was told `python -m pip download -d /etc ...`: the folder the hint writes
    into is judged as every folder nodeweave writes into, and refused as one; a folder of the user's keeps its hint."""
    from cli_run import in_process as run_cli, one_line
    from nodeweave.errors import EXIT_USAGE

    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--offline", "--wheelhouse", house)
    line = one_line(err)
    assert code == EXIT_USAGE and why in line, line
    offered = re.search(r"pip download -d (\S+)", line)  # walk15 A4: a missing one is "does not exist", its pip
    assert offered is None or house.lstrip(".") not in offered.group(1), line  # line for a folder of the user's own
    (team / "mine").mkdir()
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--offline", "--wheelhouse", "mine")
    assert code == EXIT_USAGE and "`python -m pip download -d mine " in one_line(err)


def test_n4_the_render_hint_is_left_out_for_a_context_render_refuses(team, capsys):
    """N4's sibling: `--context /usr/share/doc` was told `nodeweave render entrypoint --out /usr/share/doc`, which
    `render` itself refuses (a system tree)."""
    from cli_run import in_process as run_cli, one_line
    from nodeweave.errors import EXIT_USAGE

    code, _, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--context", "/usr/share/doc")
    line = one_line(err)
    # fixr6c (M4-M6): the build writes <context>/wheelhouse/, so a context in a system tree is refused first,
    # by --out's own rule; either way no hint names a folder render refuses
    assert code == EXIT_USAGE and "--context /usr/share/doc" in line and "/usr/share" in line, line
    assert "--out /usr/share/doc" not in line, line
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--dry-run")  # the user's own folder keeps it
    assert f"render entrypoint --out {team}" in one_line(err)


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="hands the workspace to another uid (chown): root only")
@pytest.mark.parametrize("owner, chmod", [(1001, ", as uid 1001, the owner of {team}: `mkdir -p {outputs} && chmod go+w"),
                                          (0, " `mkdir -p {outputs} && chmod g+w")])
def test_n8_a_folder_to_make_gets_a_chmod_that_names_its_group_where_it_is_not_settled(team, capsys, owner, chmod):
    """N8: a workspace of 1001:1001 was offered `mkdir -p outputs && chmod g+w outputs`: made by its owner, the
    folder's group is 1001 and g+w gives the image's uid 1000, group 0 nothing. The chmod is for the workspace's
    owner, named, and judged on the group that owner's mkdir gives (replay6b: a `chgrp 0` it could not run; uid
    1001 has no passwd entry here, so its group is not known: go+w); a workspace of root's needs g+w."""
    import os

    from cli_run import in_process as run_cli

    for path in (team, *team.iterdir()):
        os.chown(path, owner, owner)
    team.chmod(0o755)
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    said = next(line for line in (out + err).splitlines() if "is read-only to the image's user" in line)
    assert f"`mkdir -p {team}/outputs && sudo chown 1000:0 {team}/outputs`" in said, said
    chmod = chmod.format(outputs=f"{team}/outputs", team=team)
    assert f"(or{chmod} {team}/outputs`)" in said, said


DRY_RUNS = [("validate",), ("init", "--dry-run", "--force", "--out", "other.yaml"), ("render", "all", "--dry-run"),
            ("up", "--dry-run"), ("up", "--hold", "--dry-run"), ("run", "--dry-run"), ("check", "--dry-run"),
            ("exec", "--dry-run", "--", "ls"), ("sync", ".", "/srv/job", "--node", "podman:a", "--dry-run"),
            ("image", "build", "cpu", "--dry-run"), ("down", "--dry-run"), ("stop", "--dry-run"), ("status",),
            ("logs",), ("runs", "ls"), ("bench", "--dry-run"), ("up", "-t", "kubernetes", "--dry-run"),
            ("up", "-t", "slurm", "--dry-run")]


@pytest.mark.parametrize("owner", [0, 1001])
def test_n5_every_line_a_verb_writes_on_stderr_carries_the_prefix(team, capsys, owner):
    """N5: `check --dry-run` wrote its workspace note as a bare "note: ..." (and render its counts, bench its CPU
    note, `hosts probe` its "wrote"): every line a verb's dry run writes on stderr starts with ``nodeweave:``.
    A workspace the image's user cannot write (another owner) brings the ownership notes out."""
    import os

    from cli_run import in_process as run_cli

    if owner and os.geteuid() != 0:
        pytest.skip("hands the workspace to another uid (chown): root only")
    for path in (team, *team.iterdir()):
        os.chown(path, owner, owner)
    team.chmod(0o755)
    bare = []
    for argv in DRY_RUNS:
        _, _, err = run_cli(capsys, *argv)
        bare += [f"{' '.join(argv)}: {line}" for line in err.splitlines() if line.strip()
                 and not line.startswith("nodeweave: ")]
    assert not bare, "\n".join(bare)


def _a_run(folder, run_id, job="team"):
    import json

    run = folder / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run_id, "job": job, "started": "2026-11-29T12:00:00Z",
                                              "ended": "2026-11-29T12:05:00Z", "exit_code": 0, "nodes": []}))
    (run / "node-0.log").write_text(f"{run_id}'s line\n")
    return run


def test_n9_last_passes_over_an_empty_sweep_for_every_reader(team, capsys):
    """N9: with the job's newest folder a sweep none of whose points has started, `dashboard --run last` took the
    sweep and refused it ("is a sweep; accepted: one run"). last is the newest run with something to show, the same
    for logs, runs show and the dashboard; the empty sweep passed over is said in a note."""
    import json

    from cli_run import in_process as run_cli
    from nodeweave.cli.dashboard import _finished_run
    from nodeweave.errors import NodeweaveError
    from nodeweave.runs.history import find_run

    _a_run(team, "20261129T120000Z-team")
    sweep = team / "runs" / "20261129T130000Z-team-sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"job": "team", "points": []}))

    assert find_run(team / "runs", "last", "team").run_id == "20261129T120000Z-team"
    assert _finished_run("last", None, None)[0].name == "20261129T120000Z-team"
    code, out, err = run_cli(capsys, "logs", "--run", "last")
    assert code == 0 and "20261129T120000Z-team's line" in out, (out, err)
    assert "nodeweave: note: last passes over 20261129T130000Z-team-sweep" in err, err
    code, out, err = run_cli(capsys, "runs", "show", "last", "-o", "json")
    assert code == 0 and json.loads(out)["run"] == "20261129T120000Z-team", out

    # its first point started: last is the sweep again, and each reader of one run shows that point
    point = _a_run(team, "20261129T130000Z-team-sweep-p0")
    point.rename(sweep / point.name)
    (sweep / "sweep.json").write_text(json.dumps({"job": "team", "points": [{"run": point.name, "env": {}}]}))
    assert find_run(team / "runs", "last", "team").run_id == sweep.name
    assert _finished_run("last", None, None)[0] == sweep / point.name
    code, out, err = run_cli(capsys, "logs", "--run", "last")
    assert code == 0 and f"{point.name}'s line" in out, (out, err)

    # the empty sweep alone: said as logs says it, not taken for one run
    import shutil

    shutil.rmtree(team / "runs")
    sweep.mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps({"job": "team", "points": []}))
    with pytest.raises(NodeweaveError, match="is a sweep and none of its points has started yet"):
        _finished_run("last", None, None)
