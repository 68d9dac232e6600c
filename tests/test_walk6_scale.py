"""Issue 43, walk6 W4/W5/W6/W31: what a very large job asks and prints is bounded by one rule each.

W4/W5: every question a verb asks the local engine about the job's containers is one inspect of containers
(``--type container``: without it podman looks each name up as every kind of object, past a minute at 2112
names, and the dry run's "would end with exit 3" verdict was lost to the timeout); a node the platform calls
down is never exec'd into (status asked all 2112 missing containers in turn).
W6: every line that lists nodes writes a run of them as ``first .. last`` (nodelists.py).
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from nodeweave.cli import main
from nodeweave.entrypoint.nodelists import noted_ranges, ranges
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

BIG = """name: team
image: {variant: cuda12}
nodes: %d
gpus_per_node: 8
launcher: {type: torchrun, script: train.py}
recovery: {enabled: true, spares: %d, checkpoint_dir: checkpoints}
"""

# A stand-in engine that knows no container (as podman and docker answer with nothing up) and writes down
# every call it gets, so a test counts what a verb asked.
ENGINE = """#!/bin/sh
echo "$*" >> "$CALLS"
case "$1" in
  inspect) shift; while [ $# -gt 0 ]; do case "$1" in --type|--format) shift;; -*) ;; *) echo "Error: no such container $1" >&2;; esac; shift; done; exit 125;;
  exec) echo "Error: no container with name or ID found: no such container" >&2; exit 125;;
  *) exit 0;;
esac
"""


def _folder(tmp_path, monkeypatch, nodes: int, spares: int):
    (tmp_path / "nodeweave.yaml").write_text(BIG % (nodes, spares))
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints").chmod(0o777)  # the image's user writes it (up refuses a folder it cannot)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home_beside(tmp_path))
    monkeypatch.delenv("NODEWEAVE_ENGINE", raising=False)
    return tmp_path


@pytest.fixture()
def standin(tmp_path, monkeypatch):
    folder = _folder(tmp_path, monkeypatch, 96, 4)
    _engine_on_path(folder, monkeypatch, ENGINE)
    monkeypatch.setenv("CALLS", str(folder / "calls.txt"))
    return folder


def _engine_on_path(folder, monkeypatch, script: str) -> None:
    """``script`` as podman, first on PATH (the machine's own engine out of the way)."""
    tools = folder / "bin"
    tools.mkdir()
    (tools / "podman").write_text(script)
    (tools / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")


def _calls(folder):
    path = folder / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


VERBS = {"status": ["status"], "logs": ["logs"], "run --dry-run": ["run", "--dry-run"],
         "exec --dry-run": ["exec", "--dry-run", "--", "hostname"], "down --dry-run": ["down", "--dry-run"],
         "stop": ["stop"]}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_nothing_up_is_found_by_container_inspects_and_no_exec(verb, standin, capsys):
    main(VERBS[verb])
    captured = capsys.readouterr()
    calls = _calls(standin)
    inspects = [c for c in calls if c.startswith("inspect")]
    assert inspects and all(c.startswith("inspect --type container ") for c in inspects), calls[:3]
    assert len(inspects) <= 3, f"`nodeweave {verb}` asked the engine {len(inspects)} times"
    assert not [c for c in calls if c.startswith("exec")], f"`nodeweave {verb}` exec'd into missing containers"
    text = captured.out + captured.err
    assert "node-0 .. node-99 (missing)" in text or "none of its 100 container(s) exists" in text, text[-600:]
    assert max(map(len, text.splitlines())) < 600, "a line lists every node"


def test_status_with_nothing_up_is_one_line_naming_the_nodes_as_ranges(standin, capsys):
    code = main(["status"])
    captured = capsys.readouterr()
    assert code == 3 and captured.out == "", captured.out[:300]
    assert captured.err.strip().splitlines() == [
        "nodeweave: error: team is not up on podman on this machine (.nodeweave/team/compose.yaml): "
        "node-0 .. node-99 (missing); `nodeweave up --hold` starts it, then `nodeweave status`"]


@pytest.mark.engine
@pytest.mark.skipif(shutil.which("podman") is None, reason="the real engine's answer at 2112 names")
@pytest.mark.parametrize("verb", ["status", "run --dry-run"])
def test_a_2112_node_job_with_nothing_up_answers_in_seconds(verb, tmp_path, monkeypatch, capsys):
    _folder(tmp_path, monkeypatch, 2048, 64)
    started = time.monotonic()
    code = main(VERBS[verb])
    took = time.monotonic() - started
    captured = capsys.readouterr()
    assert took < 40, f"`nodeweave {verb}` took {took:.0f} s with nothing up (it was past 60 s)"
    text = captured.out + captured.err
    first = text.splitlines()[0]
    assert "node-0 .. node-2111 (missing)" in first, first[:300]
    if verb == "run --dry-run":
        assert code == 0 and first.startswith("# the real run would end with exit 3: team is not up"), first[:200]
    else:
        assert code == 3


def test_ranges_shorten_runs_of_one_counting_number():
    assert ranges([f"podman:team-{i}" for i in range(2112)]) == "podman:team-0 .. podman:team-2111"
    assert ranges([f"pod:default/team-{i}[trainer]" for i in range(4)]) == \
        "pod:default/team-0[trainer] .. pod:default/team-3[trainer]"
    assert ranges(["node-1", "node-2", "node-4", "node-5", "node-6"]) == "node-1, node-2, node-4 .. node-6"
    assert ranges(["gpu08", "gpu09", "gpu10"]) == "gpu08 .. gpu10"
    assert ranges(["a1b1", "a1b2", "a2b2"]) == "a1b1, a1b2, a2b2"  # two numbers moving: not one run
    assert ranges(["ssh+podman:h1/c", "ssh+podman:h2/c", "ssh+podman:h3/c"]) == "ssh+podman:h1/c .. ssh+podman:h3/c"
    assert noted_ranges([(f"node-{i}", "exited (1)" if i == 3 else "missing") for i in range(7)]) == \
        "node-0 .. node-2 (missing), node-3 (exited (1)), node-4 .. node-6 (missing)"


LISTING = {"up --dry-run": (["up", "--dry-run"], "until 100 node(s) run: podman:team-0 .. podman:team-95, "
                                                 "podman:team-96 .. podman:team-99 (a spare: "),
           "up -t kubernetes --dry-run": (["up", "-t", "kubernetes", "--dry-run"],
                                          "node(s) run: pod:default/team-0[trainer] .. pod:default/team-95[trainer], "
                                          "pod:default/team-96[trainer] .. pod:default/team-99[trainer] (a spare: "),
           "exec --node 500": (["exec", "--node", "500", "--", "hostname"],
                               "the nodes: node-0 (podman:team-0) .. node-99 (podman:team-99)"),
           "stop": (["stop"], "node-0 .. node-99 (missing)")}


@pytest.mark.parametrize("verb", sorted(LISTING))
def test_every_line_that_lists_the_nodes_writes_them_as_ranges(verb, standin, capsys):
    argv, wanted = LISTING[verb]
    main(argv)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert wanted in text, text[-800:]
    long = [line[:120] for line in text.splitlines() if len(line) > 600 and "team-1" in line]  # a node list
    assert not long, f"`nodeweave {verb}` lists every node in one line: {long}"


def test_how_runs_ended_is_written_as_ranges():
    from types import SimpleNamespace

    from nodeweave.cluster.runner import noted

    runs = [SimpleNamespace(node=SimpleNamespace(name=f"node-{i}"), code=1 if i == 7 else 143) for i in range(100)]
    assert noted(runs) == ("node-0 .. node-6 exit 143 (SIGTERM: stopped), node-7 exit 1, "
                           "node-8 .. node-99 exit 143 (SIGTERM: stopped)")


@pytest.mark.parametrize("nodes, spares, noted", [(1, 1024, True), (2048, 1024, False), (4, 5, True), (4, 4, False),
                                                  (8, 0, False)])
def test_more_spares_than_training_nodes_is_noted_by_validate_and_up(nodes, spares, noted, tmp_path, monkeypatch,
                                                                     capsys):
    _folder(tmp_path, monkeypatch, nodes, spares)
    code = main(["validate"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    line = (f"note: recovery.spares: {spares} is more than nodes {nodes}: one generation gives a place to at most "
            f"{nodes} spare(s)")
    assert (line in captured.err) is noted, captured.err
    if noted:
        assert f"recovery.spares {nodes} or fewer" in captured.err
        from nodeweave.spec import load_spec

        assert any("is more than nodes" in n for n in load_spec(tmp_path / "nodeweave.yaml").notes)


def test_node_0s_recovery_lines_write_the_nodes_as_ranges():
    from nodeweave.entrypoint.recovery.decide import Limits, first, job_error

    book = first(set(range(2112)), Limits(2048, 2048, 5, 3))
    denied = {"line": "PermissionError: [Errno 13] Permission denied: '/ckpt/step-5.pt.tmp'", "lines": ["..."]}
    stopped = job_error(book, list(range(2048)), denied)
    assert stopped.ended.startswith("the job's own error, the same on node(s) 0 .. 2047: PermissionError"), \
        stopped.ended[:200]


SLOW_ENGINE = """#!/bin/sh
case "$1" in
  inspect) sleep 5; exit 0;;
  *) exit 0;;
esac
"""


def test_a_dry_run_says_when_the_engine_gave_no_answer_on_the_nodes(tmp_path, monkeypatch, capsys):
    from nodeweave.cluster.backends import local

    folder = _folder(tmp_path, monkeypatch, 4, 0)
    _engine_on_path(folder, monkeypatch, SLOW_ENGINE)
    monkeypatch.setattr(local, "INSPECT_TIMEOUT_S", 1)
    code = main(["run", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == ("# whether the nodes are up could not be asked: `podman inspect` of the job's 4 "
                                   "container(s) gave no answer in 1 s"), out[:300]
