"""Rows B15, B14, B9, B13 of the fourteenth walk (walk14b, issue 43), each fixed as a class. Each test fails on the
code before its fix; each docstring starts with the row ids it covers."""

import os

import pytest

import cli_run
from cli_run import one_line

# --- B15, B14: the folder a node keeps its records in ($TMPDIR/nodeweave) is judged at start -----------------------


def _tmpdirs(tmp_path):
    """Every kind of TMPDIR the rule refuses, as (TMPDIR, words the refusal holds)."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "nodeweave").write_text("x")
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "nodeweave").symlink_to(tmp_path / "nowhere")
    return {
        "tilde": ("~/x", "holds ~"),
        "relative": ("rel", "relative path"),
        "missing-above": (str(tmp_path / "nonexistent" / "tmp"), "nor does the folder above it"),
        "made-in-root": ("/nonexistent-walk14b", "would be made directly in /"),
        "made-in-system-folder": ("/usr/nonexistent-walk14b", "system folder /usr"),
        "device": ("/dev/null", "/dev"),
        "kernel": ("/proc", "the kernel fills"),
        "file": (str(tmp_path / "afile"), "is a file"),
        "space": (" " + str(tmp_path), "white space"),
        "nodeweave-a-file": (str(tmp_path / "taken"), "nodeweave's folder in it, is a file"),
        "nodeweave-a-dangling-link": (str(tmp_path / "dangling"), "a link to nothing"),
    }


KINDS = ["tilde", "relative", "missing-above", "made-in-root", "made-in-system-folder", "device", "kernel", "file", "space", "nodeweave-a-file",
         "nodeweave-a-dangling-link"]
PATHS = [  # every path of the entrypoint that reads or writes $TMPDIR/nodeweave
    ("start", ["--launcher", "command", "--", "true"], {"NODEWEAVE_RUN_ID": "r1"}),
    ("start-recovery", ["--nnodes", "1", "--spares", "1", "--recovery", "on", "--checkpoint-dir", "ck", "--metrics", "off",
                        "--master-addr", "127.0.0.1", "--", "train.py"], {}),
    ("hold", ["--mode", "hold", "--nnodes", "1"], {}),
    ("explain", ["--explain", "--", "train.py"], {}),
    ("node-status", ["--node", "status"], {}),
]


@pytest.mark.parametrize("path", PATHS, ids=[p[0] for p in PATHS])
@pytest.mark.parametrize("kind", KINDS)
def test_b15_b14_a_tmpdir_that_is_no_folder_of_the_nodes_is_refused_before_anything_is_written(
        tmp_path, kind, path):
    """B15, B14: TMPDIR='~/x', a relative one or /nonexistent started the node silently, making ./~/x/nodeweave,
    ./rel/nodeweave in the workspace or /nonexistent/nodeweave in /; /dev/null or /proc ended in a traceback
    (NotADirectoryError from makedirs). One rule (systemfolders.state_root_problem) judges the folder at every start,
    --explain and --node: one line naming TMPDIR and what is accepted, exit 2, nothing written."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print('hi')\n")
    value, words = _tmpdirs(tmp_path)[kind]
    name, argv, extra = path
    env = dict(extra, PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(tmp_path), TMPDIR=value)
    done = cli_run.entrypoint(*argv, cwd=work, env=env, capture_output=True, text=True, timeout=60)
    code, out, err = done.returncode, done.stdout, done.stderr
    line = one_line(err)
    assert code == 2, (code, out, err)
    assert line.startswith(f"nodeweave-entrypoint: error: TMPDIR={value}:") and words in line, line
    assert "accepted: TMPDIR set to the absolute path of a folder this user may write" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["train.py"], "something was written in the workspace"
    assert not (tmp_path / "nonexistent").exists() and not os.path.exists("/nonexistent-walk14b")
    assert not os.path.exists("/usr/nonexistent-walk14b")


def test_b15_a_good_tmpdir_and_an_unset_one_pass(tmp_path):
    """B15: the rule passes what a node is meant to run with: an absolute folder of its own (nodeweave/ in it or
    not yet; one still to be made in a folder of its own, as the CLI makes its cache folder), and TMPDIR unset or
    empty (/tmp)."""
    from nodeweave.entrypoint.systemfolders import state_root_problem

    assert state_root_problem({"TMPDIR": str(tmp_path)}) is None
    assert state_root_problem({"TMPDIR": str(tmp_path / "n0")}) is None  # made at first use, in a folder of ours
    (tmp_path / "nodeweave").mkdir()
    assert state_root_problem({"TMPDIR": str(tmp_path)}) is None
    if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK):
        assert state_root_problem({}) in (None, state_root_problem({"TMPDIR": ""}))


# --- B9: every number top and the dashboard read from node 0's /status.json is judged by one rule -----------------

def _picture():
    """A picture as node 0 writes it (collect.status), one of each row."""
    from nodeweave.entrypoint.metrics.shape import SCHEMA

    return {"schema": SCHEMA, "now": 1.7e9, "job": "j", "book": {"generation": 1, "restarts": 1},
            "nodes": [{"node": 0, "host": "vm", "state": "running", "role": "hub", "heartbeat_age_s": 0.5}],
            "ranks": [{"node": 1, "rank": 0, "host": "vm", "seq": 16, "collectives": 16, "state": "sleeping",
                       "collectives_per_s": 0.88, "inside_s": 0.07, "outside_s": 19.6, "straggler_ratio": 1.0}],
            "gpus": [{"index": 0, "util_ratio": 0.5, "mem_used_bytes": 2 ** 30, "mem_total_bytes": 2 ** 34,
                      "power_watts": 300.0, "xid_errors": 0}],
            "node_gpus": [{"node": 1, "source": "nvml", "gpus": [{"index": 0, "util_ratio": 0.5,
                                                                  "mem_used_bytes": 2 ** 30,
                                                                  "mem_total_bytes": 2 ** 34,
                                                                  "power_watts": 300.0, "xid_errors": 0}]}],
            "waiting": {"expected": 2, "checked_in": 1, "deadline_in_s": 10.0},
            "verdicts": {"stall": {"for_s": 3.0}, "stragglers": []},
            "step": ["train", 783, 1.7e9], "steps_per_s": 2.0,
            "goodput": {"wall_s": 43.84, "buckets": {"training": 8.45, "startup": 35.39, "recovery": 0.0,
                                                     "redone": 0.0, "stalled": 0.0, "idle": 0.0},
                        "productive": 0.1928}}


def _set(picture, place, value):
    """``picture`` with the number at ``place`` (a row of shape.LIMITS: ``ranks[].seq``) set to ``value``."""
    import re

    parts = [p for p in re.split(r"\.|(\[\])", place) if p]
    target = picture
    for i, part in enumerate(parts[:-1]):
        target = target[0] if part == "[]" else target[part]
    last = parts[-1]
    if last == "[]":
        target[1] = value  # step[]: its number
    else:
        target[last] = value
    return picture


def _limit_places():
    from nodeweave.entrypoint.metrics import shape

    return sorted(getattr(shape, "LIMITS", {"(no LIMITS table)": None}))  # collected on any code, failing there


@pytest.mark.parametrize("place", _limit_places())
def test_b9_every_number_of_the_picture_out_of_its_range_is_refused_in_one_phrase(place):
    """B9: goodput.buckets.training 1e308 (or 1e20) ended `nodeweave top --url` in an OverflowError traceback;
    wall_s 0 / -5 drew `goodput 19.3% of -5s`, productive 1e308 `goodput inf%`. Every number the drawings read
    (shape.LIMITS, the product's table) is judged by live_problem, the one check top, the dashboard's poll and
    `--node live` run: beyond 2**53, or below / above its field's range, it is one phrase naming the field."""
    from nodeweave.cluster.top import picture
    from nodeweave.entrypoint.metrics.shape import LIMITS, live_problem

    assert live_problem(_picture()) is None
    picture(_picture())
    low, high = LIMITS[place]
    bad = [10 ** 400, 1e308, -1e20]
    if low is not None:
        bad.append(low - 1)
    if high is not None:
        bad.append(high + 0.5)
    for value in bad:
        problem = live_problem(_set(_picture(), place, value))
        assert problem is not None, (place, value)
        named = ("step[1]", "step.number") if place == "step[]" else (place.replace("[]", "[0]"),)
        assert any(name in problem for name in named) or "goodput.buckets" in problem, (place, value, problem)
        assert len(problem) < 200, problem


def test_b9_every_number_field_of_the_type_tables_has_its_range():
    """B9: the ranges cover every field the type tables say holds a number (a new field gets its row too)."""
    from nodeweave.entrypoint.metrics import shape

    tables = {"": shape._TOP, "book.": shape._BOOK, "waiting.": shape._WAITING, "nodes[].": shape._NODE,
              "ranks[].": shape._RANK, "gpus[].": shape._GPU, "node_gpus[].gpus[].": shape._GPU,
              "verdicts.stall.": shape._STALL, "goodput.": shape._GOODPUT}
    numbers = [where + name for where, table in tables.items() for name, types in table.items()
               if (int in (types if isinstance(types, tuple) else (types,))
                   or float in (types if isinstance(types, tuple) else (types,)))]
    assert numbers and not [n for n in numbers if n not in shape.LIMITS]


@pytest.mark.parametrize("wall, buckets", [(0, {"training": 8.45}), (10.0, {"training": 6.0, "startup": 6.0}),
                                           (346.7, {"training": 1e15})])
def test_b9_goodput_buckets_never_exceed_the_wall_time_they_share(wall, buckets):
    """B9: a bucket over the wall time drew a bar wider than the terminal (1e20: an index-sized-integer
    OverflowError); buckets share goodput.wall_s (goodput.account), so none, nor their sum, may exceed it."""
    from nodeweave.entrypoint.metrics.shape import live_problem

    live = _picture()
    live["goodput"]["wall_s"] = wall
    live["goodput"]["productive"] = None
    live["goodput"]["buckets"] = dict(dict.fromkeys(live["goodput"]["buckets"], 0.0), **buckets)
    problem = live_problem(live)
    assert problem is not None and "goodput.wall_s" in problem and "goodput.buckets" in problem, problem


# --- B13: a file nodeweave writes whole leaves nothing behind when it cannot be written ------------------------------

def _writers():
    from nodeweave.entrypoint import announce
    from nodeweave.entrypoint.running import claim, runstate

    return {
        "runstate.write_json": lambda path: runstate.write_json(path, {"a": 1}),
        "claim._write": lambda path: claim._write(path, claim._mine("j", None)),
        "announce.write_files": lambda path: announce.write_files({path: "x"}),
        "runstate.write_whole": lambda path: runstate.write_whole(path, "x"),
    }


@pytest.mark.parametrize("writer", ["runstate.write_json", "claim._write", "announce.write_files",
                                    "runstate.write_whole"])
def test_b13_a_write_whose_rename_fails_removes_its_temporary_file(tmp_path, writer):
    """B13: with a folder where `.nodeweave-claim` goes, every start left `.nodeweave-claim.<pid>.tmp` in the
    user's checkpoint folder. Every whole-file write of the node (runstate.write_whole: records, the claim, the
    check-in verdict, the launcher's files) removes its temporary file when the write or rename fails."""
    from nodeweave.entrypoint.errors import EntrypointError

    target = tmp_path / "record.json"
    target.mkdir()
    with pytest.raises((OSError, EntrypointError)):
        _writers()[writer](str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_b13_every_atomic_write_of_the_entrypoint_goes_through_the_one_rule():
    """B13: os.replace appears only in runstate.write_whole (and the rank hook's copy of it, which imports nothing
    of the node's): no other write can leave its temporary file behind."""
    from pathlib import Path

    entry = Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "entrypoint"
    users = sorted(str(p.relative_to(entry)) for p in entry.rglob("*.py") if "os.replace(" in p.read_text())
    assert users == ["running/runstate.py", "stall/rankhook/nodeweave_flight.py"], users


@pytest.mark.parametrize("what", ["folder", "link", "fifo"])
def test_b13_the_claims_path_taken_by_something_else_is_named_and_left_alone(tmp_path, what):
    """B13: `cannot claim checkpoint_dir c1 (Is a directory)` named no path; what lies where nodeweave's claim
    file goes is said with its path and what to do, and left as it is (the user's)."""
    from nodeweave.entrypoint.running import claim

    folder = tmp_path / "c1"
    folder.mkdir()
    path = folder / claim.NAME
    if what == "folder":
        path.mkdir()
    elif what == "link":
        path.symlink_to(tmp_path / "elsewhere" / "x")
    else:
        os.mkfifo(path)
    said = []
    assert claim.take(str(folder), "j", None, said.append) is None
    kind = {"folder": "a folder", "link": "a link", "fifo": "a device, a pipe or a socket"}[what]
    assert len(said) == 1 and f"{path} is {kind}, not nodeweave's claim file" in said[0], said
    assert "remove it" in said[0] and "a second job started over the same folder would not be refused" in said[0]
    assert sorted(p.name for p in folder.iterdir()) == [claim.NAME]
