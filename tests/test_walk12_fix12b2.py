"""Rows B1-B4, B15, B16, B20 of walk 12b (issue 43), each fixed as a class.

Checkpoints as the real libraries write them (``torch.save``, DeepSpeed's tag layout with ``latest``), real
entrypoints; each test fails on the code before its fix.
"""

import json
import os

import pytest

import cli_run


def _deepspeed_tags(folder, torch, steps=(100, 200, 300)):
    for step in steps:
        tag = folder / f"global_step{step}"
        tag.mkdir(parents=True)
        torch.save({"module": {"w": torch.ones(2)}, "dp_world_size": 1, "mp_world_size": 1, "global_steps": step},
                   str(tag / "mp_rank_00_model_states.pt"))


def _megatron_iters(folder, torch, steps=(100, 200)):
    for step in steps:
        rank = folder / f"iter_{step:07d}" / "mp_rank_00"
        rank.mkdir(parents=True)
        torch.save({"iteration": step}, str(rank / "model_optim_rng.pt"))


# every pointer file a library reads for its own resume (checkpoints._pointers_to_nothing's table), each naming a
# save that is not there or naming none
POINTERS = [("latest", "global_step400\n"), ("latest", ""),
            ("latest_checkpointed_iteration.txt", "3000"), ("latest_checkpointed_iteration.txt", "")]


@pytest.mark.parametrize("pointer, text", POINTERS, ids=["latest-missing", "latest-empty", "tracker-missing",
                                                         "tracker-empty"])
def test_b4_a_pointer_file_is_no_save_and_never_cut_off(tmp_path, pointer, text):
    """B4: DeepSpeed's `latest` naming a tag not in the folder was counted as a save before the job that was cut off
    (`already holds 3 save(s) ..., 1 cut off (latest)`, `before_job.cut_off: ["latest"]`) while every save was
    whole. A pointer file (DeepSpeed's `latest`, Megatron's tracker) is said as a pointer, passed over, and never
    listed among the saves cut off."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import already_saved
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    folder = tmp_path / "ck"
    (_deepspeed_tags if pointer == "latest" else _megatron_iters)(folder, torch)
    (folder / pointer).write_text(text)
    saved = already_saved(str(folder))
    assert saved.cut_off == [], saved.cut_off
    passed = []
    newest_checkpoint(str(folder), lambda line: None, passed_over=passed)
    assert [why for path, why in passed if path.endswith(pointer)], passed  # still said, as passed over

    (tmp_path / "train.py").write_text("print(1)\n")
    out = cli_run.entrypoint("--explain", "--json", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                             "127.0.0.1", "--recovery", "on", "--spares", "1", "--checkpoint-dir", "ck", "--",
                             "train.py", cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)),
                             capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["faults"]["checkpoint_dir"]
    assert row["scan"]["before_job"]["cut_off"] == [], row["scan"]
    assert "cut off" not in row["meaning"].split("already holds", 1)[1].split(";", 1)[0], row["meaning"]
    assert any(entry["path"] == pointer for entry in row["scan"]["passed_over"]), row["scan"]


@pytest.mark.parametrize("suffix", [".tmp", ".partial", ".part", ".incomplete"])
def test_b20_a_save_that_never_reached_its_rename_is_named_by_the_file_there(tmp_path, suffix):
    """B20: `ckpt_500.pt.tmp` alone (no `ckpt_500.pt`) was named `ckpt_500.pt` in `passed_over` and
    `before_job.cut_off`: a path not in the folder. Every temporary suffix the finder knows (listing.TEMP_SUFFIXES)
    is named by the file that is there, the save's name said in the why."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import already_saved, scan
    from nodeweave.entrypoint.recovery.listing import TEMP_SUFFIXES

    assert suffix in TEMP_SUFFIXES
    torch.save({"w": torch.ones(2)}, str(tmp_path / "ckpt_100.pt"))
    torch.save({"w": torch.ones(2)}, str(tmp_path / f"ckpt_500.pt{suffix}"))
    paths = [path for path, _ in scan(str(tmp_path)).incomplete] + [path for path, _ in
                                                                      already_saved(str(tmp_path)).cut_off]
    assert paths == [str(tmp_path / f"ckpt_500.pt{suffix}")] * 2, paths
    assert all(os.path.exists(path) for path in paths)
    assert "ckpt_500.pt never reached its rename" in scan(str(tmp_path)).incomplete[0][1]


def _dcp_save(folder, torch):
    import torch.distributed.checkpoint as dcp

    dcp.save({"w": torch.ones(4)}, checkpoint_id=str(folder), no_dist=True)


def _deepspeed_save(folder, torch):
    folder.mkdir(parents=True)
    torch.save({"module": {"w": torch.ones(2)}, "dp_world_size": 1, "mp_world_size": 1, "global_steps": 7},
               str(folder / "mp_rank_00_model_states.pt"))


# one folder name per layout the finder knows by name, step 100 (checked against its table, _NAME_PATTERNS)
NAMED = {"hf-trainer": "checkpoint-100", "dcp": "step-100", "deepspeed": "global_step100",
         "megatron": "iter_0000100", "accelerate": "checkpoint_100"}


@pytest.mark.parametrize("kind, name", sorted(NAMED.items()))
def test_b15_a_save_is_judged_and_named_by_what_it_holds_not_its_folder_name(tmp_path, kind, name):
    """B15: a plain torch.distributed.checkpoint save cut short in `step-15` was said as `torchtitan: no .metadata`:
    the layout named after the folder's name. The class: every folder named like a layout was judged by that name's
    rule alone, so a whole DCP save in `checkpoint-100` was refused as a Trainer's without trainer_state.json, and a
    whole DeepSpeed tag in `step-100` as `no .metadata`. A folder is judged, and named, by the layout its files
    show (the format's name, `dcp`, never TorchTitan's); its name's rule only when its files show none."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import _NAME_PATTERNS, scan

    assert dict(_NAME_PATTERNS)[kind].fullmatch(name) and {k for k, _ in _NAME_PATTERNS} == set(NAMED)
    held = "deepspeed" if kind == "dcp" else "dcp"
    (_deepspeed_save if held == "deepspeed" else _dcp_save)(tmp_path / name, torch)
    found = scan(str(tmp_path))
    if kind == "megatron":  # Megatron's torch_dist iteration is a DCP save: its own rule judges it (metadata.json)
        assert found.complete == [] and found.incomplete[0][1].startswith("megatron: "), found.incomplete
        return
    assert [(c.layout, os.path.basename(c.path)) for c in found.complete] == [(held, name)], found.incomplete
    # cut short: said by the format it is, named as the library the user called
    (tmp_path / name / (".metadata" if held == "dcp" else "mp_rank_00_model_states.pt")).unlink()
    if held == "dcp":
        why = scan(str(tmp_path)).incomplete[0][1]
        assert why.startswith("dcp: ") and "torch.distributed.checkpoint" in why and "torchtitan" not in why, why


def _make(kind, path):
    import socket

    if kind == "named pipe":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


def _refusals(tmp_path, name):
    """Every refusal of a path that should be a folder, as each member says it."""
    from pathlib import Path

    from nodeweave.entrypoint.faults import _resume_from
    from nodeweave.runs.history import _no_run_path
    from nodeweave.spec.sections.job import workspace_folder_problem

    class Settings:
        sysroot = "/"

    (tmp_path / "train.py").write_text("print(1)\n")
    node = cli_run.entrypoint("--explain", "--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                              "--recovery", "on", "--spares", "1", "--checkpoint-dir", name, "--", "train.py",
                              cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)), capture_output=True,
                              text=True, timeout=60)
    assert node.returncode == 2, node.stderr
    return {"--checkpoint-dir": node.stderr,
            "--explain scan": _resume_from(Settings(), str(tmp_path / name))[0],
            "workspace.path": workspace_folder_problem(tmp_path, name),
            "runs show PATH": _no_run_path(Path(tmp_path / name), str(tmp_path / name))}


@pytest.mark.parametrize("kind", ["named pipe", "socket"])
def test_b16_a_path_that_is_no_folder_is_said_as_what_is_there(tmp_path, kind):
    """B16: `--checkpoint-dir ckfifo` was refused as `... which is a file, not a folder` of a named pipe. Every
    refusal of a non-folder where a folder belongs (the checkpoint folder, --explain's scan, the spec's
    workspace.path, a path given to `runs show`) says what is there, by the one rule (bounded.what_is_there)."""
    _make(kind, tmp_path / "x")
    for member, said in _refusals(tmp_path, "x").items():
        assert f"a {kind}" in said and "a file," not in said, (member, said)


# generation 2 of the walker's job j1: node 3 trains as rank 1, node 1 (left out once, back) as rank 2, node 2 out
BOOK = {"generation": 2, "members": [0, 3, 1], "spares": [], "left_out": {"1": 1, "2": 1}, "restarts": 2}


def test_b2_the_worst_nodes_of_status_are_keyed_by_node_not_rank():
    """B2: `summary.worst` rows were keyed `'rank': 3` for node 3, which trained as rank 1 (the stall line beside
    them says `rank 2 (node 2, vm)`, ranks and nodes apart). A node's index is `node`."""
    from nodeweave.entrypoint.checkin.summary import nodes_summary

    nodes = [{"fp": {"rank": 0}, "own": True, "state": "running"},
             {"fp": {"rank": 3, "hostname": "vm"}, "own": False, "state": "running", "silent_s": 1.0}]
    worst = nodes_summary(nodes, None)["worst"]
    assert worst == [{"node": 3, "hostname": "vm", "seen": None, "state": "running", "flagged": False,
                      "silent_s": 1.0}], worst


def _views_of_left_out(tmp_path, monkeypatch):
    """Every view that says which nodes are left out of the current generation, as each says it."""
    from nodeweave.entrypoint.nodeinfo import _recovery
    from nodeweave.entrypoint.metrics import collect
    from test_metrics_collect import live_of

    job = tmp_path / "nodeweave" / "jobs" / "j1-29600"
    job.mkdir(parents=True)
    (job / "recovery.json").write_text(json.dumps(BOOK))
    live = live_of(tmp_path, None)
    monkeypatch.setattr(live, "book", lambda: BOOK)
    gauge = [samples for name, _, _, samples in collect.families(live) if name == "nodeweave_nodes_left_out"]
    return {"--node report": len(_recovery({"TMPDIR": str(tmp_path)})["left_out"]), "/metrics": gauge[0][0][1]}


def test_b2_left_out_names_only_the_nodes_left_out_now(tmp_path, monkeypatch):
    """B2: `recovery.left_out` of `--status` said `{'1': 1, '2': 1}` while node 1 trained: the book's count of
    every time a node was left out, read as who is out now; the `nodeweave_nodes_left_out` gauge ("nodes left out
    of the current generation") and `--node report`'s recovery counted it the same way. Each view names the nodes
    left out now (news.left_out_now), the counts under `times_left_out`."""
    from nodeweave.entrypoint.news import left_out_now

    assert left_out_now(BOOK) == [2]
    views = _views_of_left_out(tmp_path, monkeypatch)
    assert views == {"--node report": 1, "/metrics": 1}, views


def _hub_of_walk(spare=3):
    """Node 0's Hub with nodes 1-3 checked in in the walker's order (3, 2, 1), node ``spare`` a spare."""
    from test_exchange_linear import hub_with

    hub = hub_with(4)
    hub.peers.reverse()
    next(p for p in hub.peers if p.fp["rank"] == spare).role = "spare"
    return hub


def test_b1_every_view_of_the_nodes_is_in_node_order_and_says_a_spare_waits(tmp_path):
    """B1: top and /status.json listed the nodes 0, 3, 2, 1 (by arrival) and the spare as `running`, while
    --status said `spare (waiting)`. Every view (--status, /status.json, /metrics' node_up state label) lists the
    nodes by index and says a waiting node by the one word (news.waiting)."""
    from nodeweave.entrypoint.metrics import collect, exposition
    from test_metrics_collect import live_of

    hub = _hub_of_walk()
    status = [(n["fp"]["rank"], n["state"]) for n in hub.status()["nodes"]]
    # no verdict yet: the nodes in are "checked in" (walk12b B13), a spare waits all the same
    assert status == [(0, "gathering"), (1, "checked in"), (2, "checked in"), (3, "spare (waiting)")], status
    from test_metrics_collect import Watch

    watch = Watch(1, 1)
    watch.hub.peers = hub.peers  # the real Hub's peers, in the order they arrived
    live = live_of(tmp_path, watch)
    shown = [(n["node"], n["state"]) for n in collect.status(live)["nodes"]]
    assert shown == [(0, "running"), (1, "running"), (2, "running"), (3, "spare (waiting)")], shown
    text = exposition.render(collect.families(live))
    assert 'node="3"' in text and 'state="spare (waiting)"' in text, text


def test_b3_a_generation_says_the_node_by_its_identity_and_its_training_rank_apart():
    """B3: node 1, training as rank 2 in generation 4, said `generation 4: node 2 of 3, ...`, the words node 0's
    lines use for node 2. A recovery generation's launch line names the node as node 0 does and its training rank
    beside it (`node 1 (training rank 2 of 3)`); a start outside recovery says `node N of M` as before."""
    import types

    from nodeweave.entrypoint.announce import summary

    value = types.SimpleNamespace
    plan = value(topology=value(nproc_per_node=value(value=1), world_size=None, node_rank=value(value=2),
                                nnodes=value(value=3), master_addr=value(value="127.0.0.1"),
                                master_port=value(value=29600), node_procs=None),
                 launch=value(launcher="torchrun", argv=["torchrun"]), env=[])
    assert summary(plan, identity=1).startswith("node 1 (training rank 2 of 3), 1 process(es) each"), \
        summary(plan, identity=1)
    assert summary(plan).startswith("node 2 of 3, "), summary(plan)


@pytest.mark.parametrize("identity, expected", [(1, "node-1"), (None, "node-2")], ids=["recovery", "plain"])
def test_b3_a_nodes_rank_folder_and_its_files_are_named_by_the_node_itself(tmp_path, identity, expected):
    """B3, the other member: node 1 training as rank 2 kept its ranks' folder, and its launcher's output once
    stopped, as `ranks/j1-29600/node-2/launcher-after-stop-node-2.log`; node 3's disk held a `node-1/`. Under
    recovery both are named by the node's own index; the ranks' views still carry the launch's node rank."""
    import types

    from nodeweave.entrypoint.stall.setup import FOLDER_VARIABLE, attach

    value = types.SimpleNamespace
    got = []
    watch = value(use_stall=got.append)
    plan = value(topology=value(job_id="j1", master_port=value(value=29600), node_rank=value(value=2)),
                 node=value(hostname="vm", gpus=None))
    settings = value(env={"TMPDIR": str(tmp_path)}, get=lambda key, default=None: default)
    environ = attach(watch, plan, settings, {}, lambda line: None, identity=identity)
    assert os.path.basename(environ[FOLDER_VARIABLE]) == expected, environ[FOLDER_VARIABLE]
    [stall] = got
    assert stall.folder.node == 2 and stall.aside_path().endswith(f"{expected}/launcher-after-stop-{expected}.log")
