"""walk18a rows 2, 16, 18-20, 22-25, 27: one test per class of fix21f's brief."""

from cli_run import in_process, one_line
from team_folder import make_team


def test_output_refusals_name_what_the_verb_takes(tmp_path, monkeypatch, capsys):
    """walk18a A20, A22: an -o refused lists the verb's own formats (name too on status, runs ls, image variants),
    and a flag that does nothing with -o name (status --fingerprints, --ranks, --stacks) is refused as README says
    such flags are."""
    make_team(tmp_path, monkeypatch)
    for verb in (["status"], ["runs", "ls"], ["image", "variants"]):
        code, _, err = in_process(capsys, *verb, "-o", "xml")
        assert code == 2 and "is not accepted: table, wide, json, yaml, name" in one_line(err), err
    code, _, err = in_process(capsys, "render", "-o", "xml")
    assert code == 2 and "is not accepted: table, wide, json, yaml" in err and "yaml, name" not in err, err
    for flag in ("--fingerprints", "--ranks", "--stacks"):
        code, out, err = in_process(capsys, "status", "-o", "name", flag)
        assert code == 2 and f"{flag} does nothing with --output name" in one_line(err), err


def test_a_dash_value_refusal_offers_the_working_form_on_every_path_option(tmp_path, monkeypatch, capsys):
    """walk18a A18: `init --script -x.py` was offered no working form (its `--script=-x.py` is then told to write
    ./-x.py); every option naming a file or folder offers `OPTION ./-x`, which each of them takes."""
    make_team(tmp_path, monkeypatch)
    (tmp_path / "-x.py").write_text("print(1)\n")
    for words in (["init", "--script", "-x.py", "--dry-run"], ["logs", "--run", "-x.py"],
                  ["render", "compose", "--out", "-x.py", "--dry-run"], ["hosts", "probe", "--hosts-file", "-x.py"],
                  ["image", "build", "--dry-run", "--context", "-x.py"], ["runs", "ls", "--runs-dir", "-x.py"]):
        code, _, err = in_process(capsys, *words)
        assert code == 2, (words, err)
        option = words[words.index("-x.py") - 1]
        assert f"{option} ./-x.py" in one_line(err), (words, err)
    (tmp_path / "nodeweave.yaml").unlink()
    code, out, err = in_process(capsys, "init", "--script", "./-x.py", "--dry-run")
    assert code == 0 and "-x.py" in out, err


def test_a_boolean_where_a_string_is_wanted_is_refused_as_a_number_is(tmp_path, monkeypatch, capsys):
    """walk18a A23: `name: true` was the job "true", `image.registry: true` valid, while `name: 12` was refused;
    every field of a name or path refuses a YAML boolean with the quoted form, as it refuses a number."""
    make_team(tmp_path, monkeypatch)
    for field, text in (("name", "name: true\nimage: {variant: cpu}\n"),
                        ("image.registry", "name: team\nimage: {variant: cpu, registry: false}\n"),
                        ("launcher.script", "name: team\nimage: {variant: cpu}\n"),
                        ("workspace.host_path", "name: team\nimage: {variant: cpu}\nworkspace: {host_path: on}\n")):
        script = "false" if field == "launcher.script" else "train.py"
        (tmp_path / "b.yaml").write_text(f"{text}nodes: 2\nlauncher: {{script: {script}}}\n")
        code, _, err = in_process(capsys, "validate", "--spec", "b.yaml")
        assert code == 2 and f"{field}: got the boolean " in err and "in quotes if that text is meant" in err, err


def test_a_tilde_host_path_is_this_users_home_to_every_reader(tmp_path, monkeypatch, capsys):
    """walk18a A25: sync's default SRC took `workspace.host_path: ~/w18a-lan` as a folder named `~` beside the spec,
    while validate and up expanded it: one function (specpath.host_folder) for every reader."""
    project = tmp_path / "p"
    project.mkdir()
    make_team(project, monkeypatch)
    home = tmp_path / "home"
    (home / "lan").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    spec = (project / "nodeweave.yaml").read_text() + "workspace: {host_path: ~/lan}\n"
    (project / "nodeweave.yaml").write_text(spec)
    code, out, err = in_process(capsys, "sync", "--dry-run")
    assert "does not exist" not in err and str(home / "lan") in out + err, (code, out, err)
    from nodeweave.specpath import host_folder

    assert host_folder("~/lan", project) == home / "lan" and host_folder("w", project) == project / "w"


def test_validate_judges_the_spec_for_the_target_its_verbs_use(tmp_path, monkeypatch, capsys):
    """walk18a A24: validate told an OpenShift spec (and a slurm: one) what the local target leaves out, while every
    verb of it plans kubernetes (slurm); the note stays for a spec whose target is local."""
    make_team(tmp_path, monkeypatch)
    base = (tmp_path / "nodeweave.yaml").read_text() + "network: {rdma: true}\n"
    for extra, noted in (("", True), ("slurm: {partition: gpu}\n", False),
                         ("kubernetes: {openshift: true}\n", False)):
        (tmp_path / "nodeweave.yaml").write_text(base + extra)
        code, out, err = in_process(capsys, "validate")
        assert code == 0 and ("not applied on the local target" in out + err) == noted, (extra, out, err)


def _record(folder, run_id, summary="node-0 exit 0", code=0):
    import json

    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "schema": "nodeweave.runfolder/1", "run_id": run_id, "job": "team", "command": ["train.py"], "env": {},
        "target": "podman", "started": "2026-12-01T10:00:00Z", "ended": "2026-12-01T10:01:00Z", "seconds": 3.0,
        "exit_code": code, "summary": summary,
        "nodes": [{"node": "node-0", "exit_code": 143 if code else 0, "started_s": 0.1, "ended_s": 3.0,
                   "log": "node-0.log"}]}))
    (folder / "node-0.log").write_text("step 1\n")


def test_run_records_are_found_refused_and_said_as_readme_says(tmp_path, monkeypatch, capsys):
    """walk18a A16, A19, A2: a run folder that is a symbolic link in runs/ is listed with why and refused by runs
    show (never read through); a sweep's point is found by a unique prefix of its id, as by its whole id; what
    interrupted a run (a reader gone, SIGTERM, Ctrl-C) is kept in its record and said by runs ls."""
    import json

    from types import SimpleNamespace

    from nodeweave import endings
    from nodeweave.cluster.runner import Runner

    make_team(tmp_path, monkeypatch)
    runs = tmp_path / "runs"
    _record(tmp_path / "elsewhere" / "20261201T090000Z-team", "20261201T090000Z-team")
    runs.mkdir()
    (runs / "linkrun").symlink_to(tmp_path / "elsewhere" / "20261201T090000Z-team")
    sweep = runs / "20261201T100000Z-team-sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"job": "team", "points": []}))
    _record(sweep / "20261201T100005Z-team-02-FOO-2", "20261201T100005Z-team-02-FOO-2")

    code, out, err = in_process(capsys, "runs", "ls", "-o", "json")
    rows = {row["run"]: row for row in json.loads(out)}
    assert code == 0 and "symbolic link" in rows["linkrun"]["state"], (out, err)
    code, out, err = in_process(capsys, "runs", "show", "linkrun")
    assert code == 2 and "is a symbolic link" in one_line(err) and "step 1" not in out, (out, err)

    code, out, err = in_process(capsys, "runs", "show", "20261201T100005Z", "-o", "json")
    assert code == 0 and json.loads(out)["run"] == "20261201T100005Z-team-02-FOO-2", (out, err)

    runner = Runner.__new__(Runner)
    runner.interrupted, runner.runs = True, [SimpleNamespace(node=SimpleNamespace(name="node-0"), code=143)]
    monkeypatch.setattr(endings, "CAUSES", [endings.READER_WENT])
    summary = runner._outcome()
    assert summary.startswith("interrupted by its output's reader going away"), summary
    _record(runs / "20261201T110000Z-team", "20261201T110000Z-team", summary=summary, code=130)
    code, out, err = in_process(capsys, "runs", "ls", "-o", "json")
    assert [r["state"] for r in json.loads(out) if r["run"] == "20261201T110000Z-team"] == \
        ["interrupted by its output's reader going away (stdout closed by `| head` or a closed terminal) "
         "(nodes exit 143)"], out
    monkeypatch.setattr(endings, "CAUSES", [])
    assert runner._outcome().startswith("interrupted by Ctrl-C: node-0 exit 143"), runner._outcome()


def test_a_rendered_file_edited_since_the_last_render_is_said_and_kept(tmp_path, monkeypatch, capsys):
    """walk18a A27: `render all` replaced a compose/local.yaml edited since the last render (header kept) without a
    word, though the record holds the bytes it wrote: now a warning names it and the edit is kept aside."""
    make_team(tmp_path, monkeypatch)
    code, _, err = in_process(capsys, "render", "compose")
    assert code == 0, err
    local = tmp_path / "compose" / "local.yaml"
    local.write_text(local.read_text() + "# edited by me\n")
    code, _, err = in_process(capsys, "render", "compose", "--dry-run")
    assert code == 0 and "compose/local.yaml was edited since the last render" in err and "would be" in err, err
    assert "edited by me" in local.read_text()
    code, _, err = in_process(capsys, "render", "compose")
    kept = tmp_path / ".nodeweave" / "_edited" / "compose" / "local.yaml"
    assert code == 0 and "compose/local.yaml was edited since the last render" in err and str(kept) in err, err
    assert "edited by me" not in local.read_text() and "edited by me" in kept.read_text()
    code, _, err = in_process(capsys, "render", "compose")
    assert code == 0 and "edited" not in err, err
