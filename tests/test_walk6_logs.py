"""Walk 6, W49: ``logs --tail N`` and ``--since DURATION`` (the kubectl / docker / podman habit), with and without
``--run``: the containers' logs take the tool's own window (a day's log is not read to show its end), a run
folder's logs their last N lines per node; ``--since`` where lines carry no time is refused, never ignored."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.cluster.logs import log_window
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.remote import parse_target

SPEC = "name: team\nimage:\n  variant: cpu\nnodes: 2\ngpus_per_node: 1\nlauncher:\n  type: torchrun\n  script: train.py\n"
RUN = "20261129T120000Z-team"


@pytest.fixture
def run_folder(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    nodes = []
    for n in (0, 1):
        (folder / f"node-{n}.log").write_text("".join(f"node{n} line {i}\n" for i in range(50_000)) + f"node{n} tail")
        nodes.append({"node": n, "exit_code": 0, "log": f"node-{n}.log"})
    (folder / "run.json").write_text(json.dumps({"job": "team", "run_id": RUN, "command": ["train.py"],
                                                 "started": "2026-11-29T12:00:00Z", "seconds": 3, "exit_code": 0,
                                                 "nodes": nodes}))
    monkeypatch.chdir(tmp_path)
    return folder


def _lines(out):
    return [line for line in out.splitlines() if line.startswith("[node-")]


@pytest.mark.parametrize("count", [0, 1, 3])
def test_tail_of_a_run_folder_is_each_nodes_last_lines(capsys, run_folder, count):
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--tail", str(count))
    assert code == 0, err
    lines = _lines(out)
    for n in (0, 1):
        mine = [line.split("] ", 1)[1] for line in lines if line.startswith(f"[node-{n}]")]
        assert mine == ([f"node{n} line {i}" for i in range(50_000 - count + 1, 50_000)] + [f"node{n} tail"]
                        if count else []), mine  # the last line, still without its newline, is one of the N


def test_without_tail_every_line_is_shown(capsys, run_folder):
    code, out, _ = run_cli(capsys, "logs", "--run", "last", "--node", "0")
    assert code == 0 and len(_lines(out)) == 50_001


@pytest.mark.parametrize("since", ["5 minutes", "-1m", "1d", "10x"])  # plain seconds, 10, is 10s (walk9 A12)
def test_a_since_that_is_no_duration_is_refused(capsys, run_folder, since):
    code, _, err = run_cli(capsys, "logs", "--since", since)
    assert code == EXIT_USAGE and "is not accepted: a number of seconds (300, 2.5), or one with a unit" in one_line(err)


def test_since_on_a_run_folder_is_refused_not_ignored(capsys, run_folder):
    code, _, err = run_cli(capsys, "logs", "--run", "last", "--since", "10m")
    line = one_line(err)
    assert code == EXIT_USAGE and "lines carry no time" in line and "--tail N there" in line


@pytest.mark.parametrize("target, before_name", [("podman:team-0", "team-0"), ("docker:team-0", "team-0"),
                                                 ("pod:team-0", "team-0"), ("ssh+podman:h1/team-0", "team-0")])
def test_every_container_log_takes_the_tools_own_window(target, before_name):
    window = log_window(100, "1h30m")
    assert window == ("--tail", "100", "--since", "1h30m")
    argv = parse_target(target).logs_argv(True, window)
    joined = " ".join(argv)
    assert "--tail 100 --since 1h30m" in joined and joined.index("--tail") < joined.rindex(before_name), argv
    assert log_window(None, None) == ()
    with pytest.raises(UsageError):
        log_window(None, "soon")


@pytest.mark.parametrize("text, count, kept", [(b"a\nb\nc\nd\ne", 7, b"a\nb\nc\nd\ne"), (b"a\nb\n", 1, b"b\n"),
                                              (b"a\nb\n", 5, b"a\nb\n"), (b"", 3, b""), (b"a\nb", 1, b"b")])
def test_last_lines_of_short_files(tmp_path, text, count, kept):
    from nodeweave.cluster.logs import _last_lines

    (tmp_path / "log").write_bytes(text)
    with open(tmp_path / "log", "rb") as handle:
        assert _last_lines(handle, count, block=2) == kept
        assert handle.read() == b""
