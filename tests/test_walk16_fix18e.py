"""walk16 rows fixed by fix18e, one test per class: narrow-terminal tables, one concept spelt per verb, a hint's
pointer that holds what it promises, a metric's best read the user's way, --dry-run reaching no host, and --help
running no start-up check."""

import io


def test_a6_a_narrow_table_never_cuts_an_id_and_names_the_columns_it_leaves_out():
    """A6: at 60 columns `runs ls` cut the run id to `20261201T…` and every other column to a letter; `status` the
    same. A key column (the id, the node, its address) is never cut: columns that do not fit are left out whole,
    and a caption names them."""
    from nodeweave.tables import Table
    from nodeweave.usertext import console

    run_id = "20261201T122459Z-proj-01-OMP_NUM_THREADS-1"
    runs = Table(title="runs")
    for column in ("run", "job", "started", "state", "seconds", "nodes", "command"):
        runs.add_column(column, no_wrap=column in ("run", "started"), overflow="fold")
    runs.add_row(run_id, "proj", "2026-12-01T12:24:59.719Z", "running (2 nodes)", "14.5", "2", "train.py")
    status = Table(title="proj")
    status.add_column("node", no_wrap=True)
    status.add_column("reached as", no_wrap=True, min_width=13)
    for column in ("state", "mode", "rank", "plan", "run in progress", "GPU use, memory"):
        status.add_column(column, overflow="fold")
    status.add_row("node-0", "podman:proj-0", "up (running)", "hold", "0", "f793a3c", "-", "-")
    for table, key, cells in ((runs, run_id, ()), (status, "podman:proj-0", ("node-0",))):
        for width in (60, 80):
            out = console(file=io.StringIO(), width=width, color_system=None)
            out.print(table)
            text = out.file.getvalue()
            assert all(len(line) <= width for line in text.splitlines()), text
            row = next(line for line in text.splitlines() if key in line)  # the id whole, on one line
            assert all(cell in row for cell in cells), text
            assert "…" not in row.split("│")[1], text
            missing = [str(c.header) for c in table.columns if str(c.header)[:6] not in text.splitlines()[2]]
            if missing:
                assert f"not shown in {width} columns: {', '.join(missing)}" in " ".join(text.split()), text
                assert not any(len(cell.strip()) <= 2 and "…" in cell for cell in row.split("│")), text  # "u…"


def test_a7_a22_another_verbs_spelling_of_the_hosts_is_answered_with_this_verbs(capsys):
    """A7, A22: `hosts probe --host gpu01` (init, up, sync and check spell the hosts --host), `hosts probe --hots x`
    and `init --hosts-file hosts.txt` said only "no such option". On every verb that names hosts, another verb's
    spelling of them (--host, --node, --hosts-file), or a near typo of one, gets this verb's."""
    from cli_run import in_process, leaves

    from nodeweave.cli import NO_NODE
    spellings = {"--host", "--node", "--hosts-file"}
    code, _, err = in_process(capsys, "hosts", "probe", "--hots", "x")
    assert code == 2 and "did you mean --node?" in err and "--host is another verb's spelling" in err, err
    tried = 0
    for words, command in leaves():
        mine = {flag for param in command.params for flag in getattr(param, "opts", ())}
        if not mine & spellings:
            continue
        for typed in sorted(spellings - mine):
            if typed == "--node" and words[-1] in NO_NODE:
                continue  # that verb's own word on picking one node
            code, _, err = in_process(capsys, *words, typed, "gpu01")
            assert code == 2 and "did you mean --" in err and f"{typed} is another verb's spelling" in err, \
                (words, typed, err)
            tried += 1
    assert tried >= 2  # hosts probe --host, init --node


def test_a15_the_unknown_variable_warning_points_at_a_list_holding_this_commands_variables():
    """A15: `NODEWEAVE_DEBUG=1 nodeweave validate` pointed at `nodeweave-entrypoint --help`, which names none of
    the variables the CLI reads, and `nodeweave --help` named only NODEWEAVE_SPEC; NODEWEAVE_RECORD was offered the
    nodes' NODEWEAVE_RECOVERY, not the CLI's NODEWEAVE_PLAN_RECORD. The place the warning names lists every
    variable this command reads."""
    import re

    from cli_run import nodeweave

    from nodeweave.cli.habits.variables import CLI_VARIABLES

    warned = nodeweave("--version", env={"PATH": "/usr/bin:/bin", "NODEWEAVE_DEBUG": "1", "NODEWEAVE_RECORD": "x"})
    lines = warned.stderr.splitlines()
    debug = next(line for line in lines if "NODEWEAVE_DEBUG" in line)
    pointed = re.findall(r"`(nodeweave[-\w]* --help)`", debug)
    assert pointed and pointed[0] == "nodeweave --help", debug  # this command's own list first
    helped = nodeweave("--help", env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"}).stdout
    assert all(name in helped for name in CLI_VARIABLES), helped
    record = next(line for line in lines if "NODEWEAVE_RECORD" in line)
    assert "did you mean NODEWEAVE_PLAN_RECORD?" in record, record


def test_b1_help_runs_no_start_up_check(capsys, monkeypatch):
    """B1: with a local job's node variables exported, `nodeweave status --help` printed its usage and then one
    warning per variable (`top --help` the same). Help only prints help, on every verb and however it is asked
    for; the verb that acts still says them."""
    from cli_run import in_process, leaves

    for name, value in (("NODEWEAVE_NNODES", "2"), ("NODEWEAVE_RECOVERY", "on"), ("NODEWEAVE_DEBUG", "1"),
                        ("NODEWEAVE_SPEC", "")):
        monkeypatch.setenv(name, value)
    asked = [[*words, "--help"] for words, _ in leaves()] + [["status", "-h"], ["help", "top"], ["--help"]]
    for argv in asked:
        code, out, err = in_process(capsys, *argv)
        assert code == 0 and "Usage" in out and err == "", (argv, err)
    code, _, err = in_process(capsys, "runs", "ls")
    assert code == 2 and "NODEWEAVE_SPEC is set but empty" in err  # the verb that acts: still judged
    said = [line for line in err.splitlines() if "NODEWEAVE_NNODES" in line or "NODEWEAVE_RECOVERY" in line]
    assert len(said) == 1 and "NODEWEAVE_NNODES=2" in said[0] and "NODEWEAVE_RECOVERY=on" in said[0], err  # once


def test_a16_a_metric_named_a_loss_ranked_by_its_highest_is_said(tmp_path, monkeypatch, capsys):
    """A16: `runs compare A B --metric "final_loss=([0-9.]+)"` marked the run with the higher loss best, without a
    word that best meant highest. Every ranking (runs compare, run --sweep) says which way it ranks, and a metric
    whose words say loss, error or time is noted, pointing to --lower-is-better."""
    from cli_run import in_process
    from test_cli_runs import SPEC, run_json

    from nodeweave.cluster.runfolder import RunFolder

    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    ids = []
    for suffix, loss in (("-a", "0.54725"), ("-b", "0.5173")):
        folder = RunFolder.create(tmp_path / "runs", "nwruns", SPEC, suffix=suffix)
        run_json(folder, {}, 0, 10.0)
        for i in range(2):
            folder.log_path(f"node-{i}").write_text(f"final_loss={loss}\n")
        ids.append(folder.run_id)
    metric = "final_loss=([0-9.]+)"
    code, out, err = in_process(capsys, "runs", "compare", *ids, "--metric", metric)
    assert code == 0 and "0.54725 (best)" in out, out
    assert "(best: highest)" in out and "--lower-is-better" in err, (out, err)
    code, out, err = in_process(capsys, "runs", "compare", *ids, "--metric", metric, "--lower-is-better")
    assert "0.5173 (best)" in out and "(best: lowest)" in out and "--lower-is-better" not in err, (out, err)
    code, out, err = in_process(capsys, "runs", "compare", *ids, "--metric", "samples/s ([0-9.]+)")
    assert "--lower-is-better" not in err, err  # a throughput: best at its highest, nothing to say
    _, _, err = in_process(capsys, "run", "--sweep", "LR=1,2", "--metric", "val_loss ([0-9.]+)", "--dry-run")
    assert "--lower-is-better" in err, err


def test_a21_a_dry_run_that_probes_hosts_reaches_none(tmp_path, monkeypatch, capsys):
    """A21: `init --force --host gpu01 --dry-run` ran ssh for real and failed (exit 1, "could not resolve
    hostname"), while `hosts probe --node gpu01 --dry-run` printed the probe and reached no host. Both dry runs
    print the same probe, exit 0, and run no ssh (an ssh on PATH that records being run proves it); A22: init reads
    --hosts-file as the other verbs that reach hosts do."""
    from cli_run import in_process

    called = tmp_path / "called"
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ssh").write_text(f"#!/bin/sh\necho \"$@\" >> {called}\nexit 255\n")
    (tools / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(project)
    (project / "hosts.txt").write_text("gpu01 slots=8\n")
    probes = []
    for argv in (["hosts", "probe", "--node", "gpu01", "--dry-run"], ["init", "--host", "gpu01", "--dry-run"],
                 ["init", "--hosts-file", "hosts.txt", "--dry-run"]):  # A22: init reads a hosts file as they do
        code, out, err = in_process(capsys, *argv)
        assert code == 0, (argv, err)
        probes.append([line for line in out.splitlines() if "gpu01" in line and "ssh" in line])
    assert probes[0] and probes[0] == probes[1] == probes[2], probes
    assert not called.exists(), called.read_text()
    assert not (project / "nodeweave.yaml").exists()
