"""``nodeweave runs ls|show|compare``: the run folders of past runs and sweeps, listed, shown, compared.

Reads only the folders ``nodeweave run`` wrote (no cluster, no engine): like ``sky queue`` for
what ran, with the metric of each run, sweep point and node side by side and charted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.base import NodeweaveTyper, find_spec, spec_option
from nodeweave.cli.habits.spec_path import reader_spec
from nodeweave.cli.habits.output import checked, complete_run_ids, runs_folder_read, data_format, emit, emit_names, json_option, output_file, output_option
from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.quoting import as_typed
from nodeweave.errors import UsageError

runs_app = NodeweaveTyper(help="List, show and compare past runs and sweeps (the run folders).", no_args_is_help=True)

RUNS_DIR = typer.Option(None, "--runs-dir", callback=runs_folder_read, help="Where run folders are (default: runs/ beside the spec, found as "
                                                 "every verb finds it: --spec, else the nearest nodeweave.yaml)")
# the spec whose runs/ these read, as `run --spec` wrote them there (walk7 A9: runs took no --spec at all)
SPEC = spec_option("The spec beside which run folders are (runs/) and whose job `last` means")
METRIC = typer.Option(None, "--metric", help="REGEX whose first group is read from each node's log, e.g. "
                                             "'samples/s ([0-9.]+)' (a sweep's: the one it was run with)")


def _parent(runs_dir: Optional[Path], spec_path: Optional[Path]) -> Path:
    from nodeweave.cli.habits.output import runs_parent

    # a given one was judged as the command line was read (habits.output.runs_folder_read); runs/ beside the
    # spec by the same rule (absent until the first run: "no runs yet")
    return runs_dir if runs_dir is not None else runs_parent(None, reader_spec(spec_path), writes=False)


def _job(spec_path: Optional[Path]) -> Optional[str]:
    """The spec's job, whose last run ``last`` means (None with no spec here)."""
    from nodeweave.cli.habits.output import spec_job

    return spec_job(reader_spec(spec_path))


def _console():
    from nodeweave.cli.habits.clusteropts import console

    return console()




@runs_app.command("ls")
def ls_command(
    runs_dir: Optional[Path] = RUNS_DIR,
    spec_path: Optional[Path] = SPEC,
    job: Optional[str] = typer.Option(None, "--job", help="Only this job's runs (a job's name, a DNS label as the spec's name is; none of its runs there: the jobs there are named)"),
    output: str = output_option(names="ls"),
    as_json: bool = json_option(),
) -> None:
    """One row per run or sweep, oldest first: id, job, start, result, seconds, nodes, command."""
    from nodeweave.tables import Table

    from nodeweave.runs.history import list_runs

    parent = _parent(runs_dir, spec_path)
    if job is not None:
        _judge_job(job)
    every = list_runs(parent)
    rows = [e.summary() for e in list_runs(parent, job)] if job is not None else [e.summary() for e in every]
    output = data_format(as_json, output)
    _note_stores_below(parent, every)
    if emit_names((row.get("run") for row in rows), output):  # walk11 A10: the ids alone, for a script's loop
        return
    if emit(rows, output):
        return
    table = Table(title=f"runs in {parent}", title_justify="left")
    columns = ["run", "job", "started", "state", "seconds", "nodes", "command"] + (["folder"] if output == "wide" else [])
    for column in columns:
        table.add_column(column, no_wrap=column in ("run", "started", "folder"), overflow="fold")
    for row in rows:
        table.add_row(*["-" if row.get(c) is None else str(row.get(c)) for c in columns])
    _console().print(table)
    if not rows:
        typer.echo(f"nodeweave: {_none_listed(parent, job, every)}", err=True)


def _note_stores_below(parent: Path, every) -> None:
    """A folder in ``parent`` that is no run but holds runs of its own (a ``--runs-dir runs/sub`` an older nodeweave
    took), named on stderr: its runs are listed nowhere else (walk16a A30; ``failures.in_runs_store`` now refuses
    such a --runs-dir)."""
    import os
    import shlex

    from nodeweave.runs.history import list_runs

    listed = {entry.path for entry in every}
    for folder in sorted(p for p in parent.iterdir() if p.is_dir() and p not in listed) if parent.is_dir() else ():
        count = len(list_runs(folder))
        if count:
            typer.echo(f"nodeweave: note: {folder} is no run: it holds {count} run(s) of its own, not listed here; "
                       f"`nodeweave runs ls --runs-dir {shlex.quote(os.path.relpath(folder))}` lists them", err=True)


def _judge_job(job: str) -> None:
    """--job is a job's name, judged as a spec's ``name`` is (a DNS label): ``TEAM`` or an empty value can match no
    run, and an empty value never means every job (walk7 A47)."""
    from nodeweave.spec.rules import DNS_LABEL

    if not DNS_LABEL.check(job):
        raise UsageError(f"--job {job!r} is not accepted: a job's name (the spec's name), {DNS_LABEL.accepted}")


def _none_listed(parent: Path, job: Optional[str], every) -> str:
    """Why the table is empty: no run at all (`nodeweave run` makes them), or none of --job among those there."""
    if not every:
        return f"no runs under {parent} yet (`nodeweave run` makes them)"
    jobs = ", ".join(dict.fromkeys(str(e.summary().get("job") or "-") for e in every))
    return f"no run of job {job} among the {len(every)} under {parent} (their jobs: {jobs})"


@runs_app.command("show")
def show_command(
    run: str = typer.Argument("last", autocompletion=complete_run_ids, help="A run id (`nodeweave runs ls`), a unique prefix, a folder (a run's, or a job's folder a node keeps: $TMPDIR/nodeweave/jobs/<job>-<port>), or last"),
    runs_dir: Optional[Path] = RUNS_DIR,
    spec_path: Optional[Path] = SPEC,
    metric: Optional[str] = METRIC,
    output: str = output_option(), as_json: bool = json_option(),
) -> None:
    """One run: every node's result, seconds, sync commit and last line, its generations and where its wall time
    went (goodput); a sweep: every point, charted."""
    from nodeweave.runs.goodput import run_goodput
    from nodeweave.runs.history import find_run, is_job_folder, record_problems

    output = data_format(as_json, output)
    if metric is not None:  # judged before anything is printed, as compare judges it (walk5, W74)
        from nodeweave.cluster.sweep import compile_metric

        compile_metric(metric)
    if is_job_folder(Path(run)):  # a job started without `nodeweave run`: its node's own record (walk18b B1)
        shown = _job_folder(Path(run))
        if not emit(shown, output):
            _print_run(shown, output == "wide")
        return
    entry = find_run(_parent(runs_dir, spec_path), run, _job(spec_path))
    if entry.kind == "sweep":
        _compare([entry], *sweep_ranking([entry], metric, False), None, output)
        return
    data = entry.data
    nodes = [{"node": n.get("node"), "exit_code": n.get("exit_code"), "seconds": _span(n),
              "commit": (n.get("sync") or {}).get("commit"), "last_line": _last_line(entry.path / n["log"])
              if n.get("log") else None,
              "cause": _cause(entry.path / n["log"]) if n.get("log") and n.get("exit_code") not in (0, None) else None}
             for n in data.get("nodes") or []]
    if entry.stopped is not None and data.get("exit_code") != 0:
        nodes = [_stopped_node(entry, n, shown) for n, shown in zip(data.get("nodes") or [], nodes)]
    shown = {"run": entry.run_id, "state": entry.state, "command": data.get("command"), "env": data.get("env"),
             "target": data.get("target"), "started": data.get("started"), "seconds": data.get("seconds"),
             "summary": data.get("summary"), "folder": str(entry.path), "nodes": nodes,
             "recovery": data.get("recovery"), "goodput": run_goodput(entry),
             "problems": record_problems(entry.path)}  # a damaged goodput.json, heat.json...: said, not dropped
    if emit(shown, output):
        return
    _print_run(shown, output == "wide")
    if metric:
        _compare([entry], metric, False, None, "table")


@runs_app.command("compare")
def compare_command(
    runs: List[str] = typer.Argument(..., autocompletion=complete_run_ids, help="Run or sweep ids (`nodeweave runs ls` names them; a sweep: each of its points), oldest first"),
    runs_dir: Optional[Path] = RUNS_DIR,
    spec_path: Optional[Path] = SPEC,
    metric: Optional[str] = METRIC,
    lower_is_better: bool = typer.Option(False, "--lower-is-better", help="The best run has the lowest metric"),
    chart: Optional[Path] = typer.Option(None, "--chart", callback=output_file, help="Also write the chart to this .png or .svg "
                                         "(needs the plot extra: pip install 'nodeweave\\[plot]')"),
    force: bool = typer.Option(False, "--force", help="replace an earlier chart at --chart; without it an existing "
                               "one is refused, never lost"),
    output: str = output_option(), as_json: bool = json_option(),
) -> None:
    """Runs side by side: result, seconds, goodput, the metric per run and per node, the best marked, charted."""
    from nodeweave.runs.history import find_run

    from nodeweave.errors import UsageError
    from nodeweave.runs.metrics import runs_of

    output = data_format(as_json, output)
    if chart is not None:  # judged before any run is read or table printed
        from nodeweave.cli.habits.replace import refuse_foreign_file
        from nodeweave.runs.chart import check_chart_path, require_matplotlib

        check_chart_path(chart, library=False)
        refuse_foreign_file(chart, "--chart", "chart", force=force)
        require_matplotlib(chart, "--chart")
    if metric is not None:  # judged before any run is read, as the chart
        from nodeweave.cluster.sweep import compile_metric

        compile_metric(metric)
    from nodeweave.runs.history import sweep_not_started

    parent = _parent(runs_dir, spec_path)
    job = _job(spec_path)
    entries = [find_run(parent, text, job) for text in runs]
    ids = [e.run_id for e in runs_of(entries)]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise UsageError(f"run {twice[0]} is given {ids.count(twice[0])} times ({', '.join(runs)}): compare distinct "
                         "runs, each once")
    if len(ids) < 2 and any(map(sweep_not_started, entries)):  # not one run: points that have not started yet
        raise UsageError(f"nothing to compare yet: {next(filter(None, map(sweep_not_started, entries)))}")
    if len(ids) < 2:
        raise UsageError(f"{' '.join(runs)} is one run ({ids[0] if ids else 'none'}): compare needs two or more runs "
                         f"or a sweep; `nodeweave runs show {runs[0]}` shows one")
    given_order = lower_is_better
    metric, lower_is_better = sweep_ranking(entries, metric, lower_is_better)
    if chart is not None and not metric:
        raise UsageError("--chart draws the metric: give --metric REGEX too")
    if given_order and not metric:  # as `run` refuses it; a sweep's own metric ranks its points
        raise UsageError("--lower-is-better does nothing without --metric (it is which way --metric's values rank "
                         "the runs; a sweep compared brings its own): give --metric REGEX too, or leave "
                         "--lower-is-better out")
    _compare(entries, metric, lower_is_better, chart, output, force)


def sweep_ranking(entries, metric, lower_is_better: bool):
    """(metric, lower_is_better) for ``entries``: as given, else the first sweep's own, as its sweep.json keeps
    them from its start (walk12 C10: a detached sweep's `runs show` said "no --metric" while its first point ran,
    and its --lower-is-better was never kept)."""
    if metric:
        return metric, lower_is_better
    own = next((e.data for e in entries if e.kind == "sweep" and e.data.get("metric")), None)
    if own is None:
        return None, lower_is_better
    return own["metric"], lower_is_better or own.get("lower_is_better") is True


def _compare(entries, metric, lower_is_better: bool, chart, output: str, force: bool = False) -> None:
    from nodeweave.tables import Table

    from nodeweave.cluster.sweep import compile_metric
    from nodeweave.runs.chart import file_chart, terminal_chart
    from nodeweave.runs.goodput import percent
    from nodeweave.cluster.sweep import best_mark, metric_text, ranking_note, ranking_words
    from nodeweave.runs.metrics import best, run_metric, runs_of, unranked

    from nodeweave.runs.history import record_problems, sweep_not_started

    pattern = compile_metric(metric)
    compared = runs_of(entries)
    rows = [run_metric(pattern, e) for e in compared]
    for entry in compared:  # its goodput column shows "-": why is said, as runs show says it (walk6 W14)
        for problem in record_problems(entry.path):
            typer.echo(f"nodeweave: warning: {entry.run_id}/{problem}; not shown", err=True)
    for note in filter(None, map(sweep_not_started, entries)):
        typer.echo(f"nodeweave: note: {note}", err=True)
    won = best(rows, lower_is_better)
    backwards = ranking_note(metric, lower_is_better)
    if backwards and rows:
        typer.echo(f"nodeweave: note: {backwards}", err=True)
    if len(won) > 1:
        typer.echo(f"nodeweave: note: {len(won)} runs tie for the best mean ({', '.join(won)}): none is named best",
                   err=True)
    waiting = [r["run"] for r in rows if unranked(r)]
    if waiting:
        typer.echo(f"nodeweave: note: not ranked, as they did not end ok: {', '.join(waiting)} (a run still running "
                   "or cut off has no final number)", err=True)
    if metric and all(r["mean"] is None for r in rows):
        typer.echo(f"nodeweave: warning: --metric {as_typed(metric)} matches no line of any node's log in these runs; "
                   "check the regex against a log (`nodeweave logs --run ID`): its first group is the number",
                   err=True)
    elif not metric and rows:
        typer.echo("nodeweave: note: no --metric, so no mean to compare: give --metric REGEX, whose first group "
                   "is read from each node's log, e.g. --metric 'samples/s ([0-9.]+)'", err=True)
    # best: the one run that leads, else null (none ranked, or a tie: "leaders" lists every tied run)
    if emit({"metric": metric, "best": won[0] if len(won) == 1 else None, "leaders": won, "runs": rows},
            checked(output)):
        return
    if not rows:  # only sweeps with no point yet: their notes said so
        return
    table = Table(title="runs side by side" + (f": {metric}{ranking_words(lower_is_better)}" if metric else ""),
                  title_justify="left")
    for column in ("run", "point", "state", "seconds", "goodput", "mean", "per node"):
        table.add_column(column, no_wrap=column in ("run",), overflow="fold")
    for row in rows:
        mark = best_mark(row["run"], won) + unranked(row)
        table.add_row(row["run"], row["label"], row["state"], "-" if row["seconds"] is None else f"{row['seconds']:g}",
                      "unknown" if (row.get("goodput") or {}).get("unknown") else  # no step line read (walk14 A4)
                      percent((row.get("goodput") or {}).get("productive")),
                      ("-" if row["mean"] is None else metric_text(row["mean"])) + mark,
                      " ".join("-" if v is None else metric_text(v) for v in row["per_node"]))
    out = _console()
    out.print(table)
    if metric and any(r["mean"] is not None for r in rows):
        out.print(terminal_chart(rows, metric))

    if chart is not None:
        if not metric:
            from nodeweave.errors import UsageError

            raise UsageError("--chart draws the metric: give --metric REGEX too")
        from nodeweave.cli.habits.replace import may_replace

        written = file_chart(rows, metric, chart, may_replace("--chart", "chart", force))
        typer.echo(f"nodeweave: chart written to {written}", err=True)


def _job_folder(folder: Path) -> dict:
    """What a job's folder of a node's own shows, as ``runs show`` shows a run: node 0's goodput.json (its
    generations and goodput) and recovery.json (the generations' faults and restarts), as run.json would keep
    them under `nodeweave run`; the command, target and each node's line are in no record there."""
    from nodeweave.cluster.job import recovery_summary
    from nodeweave.runs.goodput import run_goodput
    from nodeweave.runs.history import RunEntry, load_record, record_problems
    from nodeweave.cluster.runfolder import iso

    book, _ = load_record(folder, "recovery.json")
    timeline, _ = load_record(folder, "goodput.json")
    timeline = timeline or {}
    launched, ended = timeline.get("launched"), timeline.get("ended")
    state = "ended" if ended is not None else "running (or cut off)"
    return {"run": folder.name, "state": f"{state}; a job's folder of a node's own (no run.json: started without "
                                         "`nodeweave run`)",
            "command": None, "env": None, "target": None, "started": iso(launched) if launched else None,
            "seconds": round(ended - launched, 3) if launched is not None and ended is not None else None,
            "summary": None, "folder": str(folder), "nodes": [],
            "recovery": recovery_summary(book) if isinstance(book, dict) else None,
            "goodput": run_goodput(RunEntry(path=folder, kind="run")), "problems": record_problems(folder)}


def _span(node: dict):
    start, end = node.get("started_s"), node.get("ended_s")
    return round(end - start, 3) if start is not None and end is not None else None


# The end of a log that holds its last line; a line longer than LAST_LINE_CHARS is shown cut, marked with "…"
# (walk17a A7: it was cut at 200 characters unmarked, in a pipe and in JSON too, dropping the log path a stop line
# ends with).
LAST_LINE_BYTES = 64 * 1024
LAST_LINE_CHARS = 2000


def _whole(line: str) -> str:
    """``line`` as a reader gets it: whole, or cut past LAST_LINE_CHARS with the cut marked."""
    return line if len(line) <= LAST_LINE_CHARS else line[:LAST_LINE_CHARS - 1] + "…"


def _last_line(log: Path) -> Optional[str]:
    """The log's last line that says something (``symptoms.last_said``: never a banner rule, walk15a A12)."""
    from nodeweave.entrypoint.running.symptoms import last_said

    try:
        said = last_said(bounded.read_tail(log, LAST_LINE_BYTES, own=True))
    except bounded.NotOwnFile as err:  # shown as what it is, never read through (as logs --run refuses it)
        return f"({log.name} {err.strerror})"
    except OSError:
        return None
    return _whole(said) if said else None


STOP_LINE = re.compile(r"nodeweave-entrypoint: stopped on SIG[A-Z]+")  # a node's own word on a stop it was sent


def _stopped_node(entry, node: dict, shown: dict) -> dict:
    """A node of a run `nodeweave stop` ended: its shown line is the stop (its entrypoint's own line on it, else
    the stop and the exit it gave), never a peer's echo of it (gloo's "Connection reset by peer", "node 0 ...
    failed: its exchange closed", walk11 A11, replay11 C11) nor a cause: nothing failed. The log's own last line
    stays in ``log_last_line``."""
    from nodeweave.cluster.runner import exit_text

    own = None
    if node.get("log"):
        try:
            tail = bounded.read_tail(entry.path / node["log"], LAST_LINE_BYTES, own=True)
        except OSError:
            tail = ""
        own = next((_whole(line.strip()) for line in reversed(tail.splitlines()) if STOP_LINE.search(line)), None)
    from nodeweave.cluster.stop import stopped_nodes

    at = str((entry.stopped or {}).get("at", "?"))[11:19]
    code = node.get("exit_code")
    named = stopped_nodes(entry.stopped, entry.data)
    why = f"ended because nodeweave stop stopped {', '.join(named)} at {at} UTC" \
        if named and str(node.get("node")) not in named else f"stopped by nodeweave stop at {at} UTC"
    said = (own if not named or str(node.get("node")) in named else None) or why + (
        f" ({exit_text(code)})" if isinstance(code, int) else "")
    return {**shown, "last_line": said, "log_last_line": shown["last_line"], "cause": None}


def _cause(log: Path) -> Optional[str]:
    """A failed node's worker's own error line in its log's end (``symptoms.cause``: not torchrun's frames, walk9
    A3), or None."""
    from nodeweave.entrypoint.running.symptoms import cause

    try:
        return cause(bounded.read_tail(log, LAST_LINE_BYTES, own=True))
    except OSError:  # NotOwnFile too: _last_line says what it is
        return None


def _print_run(shown: dict, wide: bool) -> None:
    from nodeweave.tables import Table

    from nodeweave.runs.goodput import lines as goodput_lines

    out = _console()
    from nodeweave.usertext import cell as known  # a record not written by `nodeweave run` lacks fields, a run
    # still going has no exit code or seconds yet: "-", never Python's None

    command = shown["command"]
    command = " ".join(command) if isinstance(command, list) else command
    out.print(f"{shown['run']}: {shown['state']}; {command or '-'} on {known(shown['target'])} "
              f"(started {known(shown['started'])}, {known(shown['seconds'])} s)", highlight=False, markup=False)
    table = Table(title_justify="left")
    columns = ["node", "exit_code", "seconds", "commit", "last_line"] + (["cause"] if wide else [])
    for column in columns:
        table.add_column(column.replace("_", " "), overflow="fold", no_wrap=column == "commit" and wide)
    for node in shown["nodes"]:
        commit = node["commit"] or "-"
        if wide:  # every column (replay11 B23: wide was the table, byte for byte): the last line and the cause apart
            table.add_row(*[known(node["node"]), known(node["exit_code"]), known(node["seconds"]), commit,
                            node["last_line"] or "-", node.get("cause") or "-"])
            continue
        table.add_row(*[known(node["node"]), known(node["exit_code"]), known(node["seconds"]), commit[:12],
                        f"the cause: {node['cause']}" if node.get("cause") else node["last_line"] or "-"])
    if shown["nodes"]:  # a job's folder of a node's own keeps no node's line
        out.print(table)
    if wide:  # the record's fields the table leaves out
        env = shown.get("env") or {}
        shown_env = " ".join(f"{k}={v}" for k, v in env.items()) if isinstance(env, dict) else known(env)
        out.print(f"env: {shown_env or '-'}; summary: {known(shown.get('summary'))}", highlight=False, markup=False)
    for line in _recovery_lines(shown.get("recovery")):
        out.print(line, highlight=False, markup=False)
    for line in goodput_lines(shown.get("goodput")):
        out.print(line, highlight=False, markup=False)
    for problem in shown.get("problems") or []:
        out.print(f"not shown: {problem}", highlight=False, markup=False)
    out.print(f"folder {shown['folder']}", highlight=False, markup=False)


def _recovery_lines(recovery: Optional[dict]) -> List[str]:
    """The run's generations (docs/recovery.md): each fault, the node left out, the time to recover, the
    checkpoint resumed; and the folders the checkpoint finder could not judge (``checkpoint_unjudged``)."""
    if not recovery:
        return []
    lines = [f"recovery: {recovery.get('generations')} generation(s), {recovery.get('restarts')} restart(s), "
             f"{recovery.get('decision')}; training nodes {recovery.get('members')}, spares {recovery.get('spares')}"]
    for item in recovery.get("history") or []:
        lines.append(f"  generation {item.get('generation')} ended: {item.get('why')}; left out node "
                     f"{item.get('node') if item.get('node') is not None else '-'}; relaunched in "
                     f"{item.get('recover_s')} s" + _resumed(item))
    unjudged = recovery.get("checkpoint_unjudged") or []
    for text in unjudged[:UNJUDGED_SHOWN]:
        lines.append(f"  checkpoint not judged, never handed out: {text}")
    if len(unjudged) > UNJUDGED_SHOWN:
        lines.append(f"  and {len(unjudged) - UNJUDGED_SHOWN} more folder(s) not judged (checkpoint_unjudged in "
                     "the run's recovery.json)")
    return lines


UNJUDGED_SHOWN = 5  # folders the checkpoint finder could not judge, named one a line


def _resumed(item: dict) -> str:
    """'; resumed from step 1200, 14.2 s of training after that checkpoint lost' (what the restart threw away)."""
    if item.get("resume_from") is None:
        return "; no checkpoint: started again from the beginning" if "resume_from" in item else ""
    step = f"step {item['resumed_step']}" if item.get("resumed_step") is not None else item["resume_from"]
    lost = item.get("work_lost_s")
    return f"; resumed from {step}" + (f", {lost} s of training after that checkpoint lost" if lost is not None else "")


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")
