"""fix13c (issue 43): CLI rows left in part, each fixed as a class; docstrings start with the row.

1. walk12c C15: a multi-node verb interrupted mid-way says where each node stood and what re-running does.
2. fix12a1: every CLI writer of a user's file or folder under the one write rule (``newfile.write_new``'s: nothing
   a user owns replaced without asking; two writers at once: one wins, the other exit 2).
3. left12c: a hint names only options the verb printing it takes (click's own params).
4. fix12x: a run ended by `nodeweave stop` reads the same for every reader (runs ls/show, the dashboard's header).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


# --- 4. one reading of a stopped run for every reader ---------------------------------------------------------------


def _stopped_run(tmp_path: Path, nodes=None) -> "tuple[Path, dict]":
    folder = tmp_path / "runs" / "20261130T220000Z-job"
    folder.mkdir(parents=True)
    data = {"job": "job", "run_id": folder.name, "started": "2026-11-30T22:00:00Z", "ended": "2026-11-30T22:01:00Z",
            "seconds": 60.0, "exit_code": 1, "command": ["python", "train.py"],
            "nodes": [{"node": "node-0", "exit_code": 143}, {"node": "node-1", "exit_code": 143}]}
    (folder / "run.json").write_text(json.dumps(data))
    mark = {"at": "2026-11-30T22:00:59Z", "grace_s": 10.0}
    if nodes:
        mark["nodes"] = nodes
    (folder / "stopped.json").write_text(json.dumps(mark))
    return folder, data


@pytest.mark.parametrize("nodes", [None, ["node-1"]], ids=["every node", "stop --node 1"])
def test_4_a_stopped_run_reads_the_same_in_the_dashboard_header_as_in_runs_ls(tmp_path, nodes):
    """fix12x: the dashboard's run page header said the run's `exit 1` while its node rows and `runs show` said
    stopped by nodeweave stop; the page's run carries runs ls/show's state and the header shows it."""
    from nodeweave.cluster.dashboard import PAGE, run_state
    from nodeweave.runs.history import RunEntry

    folder, data = _stopped_run(tmp_path, nodes)
    state = RunEntry(folder, "run", data).state
    assert state.startswith("stopped by nodeweave stop"), state
    page = run_state(folder, data, None, None)
    assert page["run"]["state"] == state, page["run"]
    html = PAGE.read_text()
    assert 'parts.push("exit " + esc(run.exit_code)' not in html  # the header's own reading of the exit code
    assert "run.state" in html


def test_4_a_finished_or_failed_run_reads_the_same_too(tmp_path):
    """fix12x: not stopped: the header says runs ls's "ok" / "exit N" as well."""
    from nodeweave.cluster.dashboard import run_state
    from nodeweave.runs.history import RunEntry

    folder, data = _stopped_run(tmp_path)
    (folder / "stopped.json").unlink()
    assert run_state(folder, data, None, None)["run"]["state"] == RunEntry(folder, "run", data).state == "exit 1"


# --- 3. a hint names only options the verb printing it takes --------------------------------------------------------

HOSTS_SPECS = {  # a hosts spec whose target-level hint names a way out (left12c: relative workspace.host_path)
    "relative host_path": "name: r3job\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: train.py}"
                          "\nhosts: [gpu-a, gpu-b]\nworkspace: {host_path: ./work}\n",
    "three hosts for two nodes": "name: r3job\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\n"
                                 "launcher: {script: train.py}\nhosts: [gpu-a, gpu-b, gpu-c]\n"
                                 "workspace: {host_path: /srv/w}\n",
}
VERBS_ON_NODES = {"doctor --cluster": ["doctor", "--cluster"], "status": ["status"], "logs": ["logs"],
                  "top": ["top", "--once"], "dashboard": ["dashboard"], "stop": ["stop", "--dry-run"],
                  "exec": ["exec", "--dry-run", "--", "true"], "shell": ["shell", "--dry-run"],
                  "run": ["run", "--dry-run"], "check": ["check", "--dry-run"], "up": ["up", "--dry-run"],
                  "down": ["down", "--dry-run"], "sync": ["sync", "--dry-run", ".", "/srv/w"]}


def hint_options(line: str, verb: str) -> "set[str]":
    """The options a line offers the running verb: every --option, leaving out those inside a quoted command of
    another verb (`nodeweave up --target slurm --remote-dir ...` names that verb's own)."""
    import re

    line = re.sub(r"`nodeweave (?!" + re.escape(verb) + r"\b)[^`]*`", "", line)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line))


@pytest.mark.parametrize("spec", sorted(HOSTS_SPECS))
@pytest.mark.parametrize("name", sorted(VERBS_ON_NODES))
def test_3_a_hosts_hint_offers_only_options_of_the_verb_that_prints_it(tmp_path, monkeypatch, capsys, name, spec):
    """left12c: `doctor --cluster` on a hosts spec with a relative workspace.host_path was told `give --remote-dir
    ...`, an option doctor lacks; every verb that reaches the nodes, on every hosts spec refused with a way out,
    is offered only options its click command has."""
    from cli_run import in_process as run_cli
    from test_left12c import command_of, options_of

    (tmp_path / "nodeweave.yaml").write_text(HOSTS_SPECS[spec])
    (tmp_path / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    argv = VERBS_ON_NODES[name]
    code, out, err = run_cli(capsys, *argv)
    said = err + out
    assert code == 2 and "Traceback" not in said, said
    assert "host" in said, said
    extra = hint_options(said, argv[0]) - options_of(command_of(argv[:1]))
    assert not extra, (said, extra)
