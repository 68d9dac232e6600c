"""Rows B3, B8, B17, B1, B7 of the thirteenth walk (walk13b, issue 43), each fixed as a class. Each test fails on the
code before its fix; each docstring starts with the row ids it covers."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "entrypoint"
SPEC_VERBS = ("nodeweave status", "nodeweave stop")


# --- B3, B8: every hint names what works where the entrypoint was started ------------------------------------------

def _printed_strings(path):
    """Every string constant of a module but its docstrings (what it prints, raises or helps with)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


MODULES = sorted(p for p in ENTRY.rglob("*.py") if p.name != "hints.py")


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(ENTRY)))
def test_b3_b8_no_entrypoint_line_names_a_spec_verb_alone(module):
    """B3, B8: a second start was told "`nodeweave stop` ends it", node 0's SIGTERM "Ctrl-C node 0 or `nodeweave
    stop`", stall and straggler reports `nodeweave status --stacks/--ranks`: each verb refuses where the nodes were
    started by hand (no spec). Every such hint is made by entrypoint/hints.py, which names both; no other module
    spells a spec-level verb in what it prints unless it names the entrypoint's own beside it."""
    alone = [s for s in _printed_strings(module)
             if any(v in s for v in SPEC_VERBS) and "nodeweave-entrypoint" not in s]
    assert not alone, alone


def test_b3_a_second_start_names_what_stops_the_live_run_by_hand(tmp_path):
    """B3: the refusal of a second run names `nodeweave-entrypoint --node stop --run ID` and `kill -INT PID` beside
    `nodeweave stop`."""
    from nodeweave.entrypoint.errors import EXIT_BUSY, EntrypointError
    from nodeweave.entrypoint.running.runstate import proc_stat, refuse_second_run, write_json

    class _Settings:
        env = {"TMPDIR": str(tmp_path)}

        def get(self, key):
            return "myrun2" if key == "run_id" else None

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_json(str(tmp_path / "nodeweave" / "runs" / "myrun1" / "run.json"),
                   {"schema": "nodeweave.run/1", "run_id": "myrun1", "pid": sleeper.pid,
                    "starttime": proc_stat(sleeper.pid)[3], "started": 0, "state": "launched", "command": ["t.py"]})
        with pytest.raises(EntrypointError) as refused:
            refuse_second_run(_Settings())
        said = str(refused.value)
        assert refused.value.exit_code == EXIT_BUSY
        assert "`nodeweave stop` (a spec's cluster)" in said, said
        assert "`nodeweave-entrypoint --node stop --run myrun1`" in said and f"`kill -INT {sleeper.pid}`" in said
    finally:
        sleeper.kill()
        sleeper.wait()


def test_b8_node_0_stopped_by_sigterm_names_what_ends_the_job_by_hand():
    """B8: node 0's SIGTERM under recovery says how to end the job now on nodes started by hand too."""
    from nodeweave.entrypoint.checkin.heartbeat import HubWatch

    watch = HubWatch.__new__(HubWatch)
    watch.recovery, watch.own_stop, watch.hub_wait_s = True, "SIGTERM", 600
    watch.stop_asked = lambda: None
    line = watch._after_own_stop()
    assert "`nodeweave stop` (a spec's cluster)" in line and "each other node's entrypoint" in line, line


@pytest.mark.parametrize("flag,by_hand", [("--stacks", "--status --stacks"), ("--ranks", "--status"),
                                          ("--fingerprints", "--status"), ("", "--status")])
def test_b3_b8_every_status_hint_names_the_entrypoints_question(flag, by_hand):
    """B3, B8: `nodeweave status FLAG` hints name `nodeweave-entrypoint --status ...`, which answers the same on
    nodes started by hand; the straggler report's is one of them."""
    from nodeweave.entrypoint.hints import STATUS_BY_HAND, status_hint
    from nodeweave.entrypoint.stall.report import straggler_lines

    assert STATUS_BY_HAND[flag] == by_hand
    assert f"`nodeweave-entrypoint {by_hand}`" in status_hint(flag)
    named = [{"node": n, "host": f"h{n}", "rank": n, "gap": 1.0, "per_s": 0.2, "ref_s": 0.1} for n in range(20)]
    lines = straggler_lines(named, {n: 1.0 for n in range(20)}, 30)
    assert "`nodeweave-entrypoint --status`" in lines[0], lines[0]


# --- B17: every path handed to the ranks is absolute ---------------------------------------------------------------

@pytest.mark.parametrize("name", __import__("nodeweave.entrypoint.model", fromlist=["x"]).PATHS_FOR_RANKS)
def test_b17_each_path_for_the_ranks_is_made_absolute(name, tmp_path, monkeypatch):
    """B17: NODEWEAVE_RESUME_FROM reached the ranks as `ck_hf/checkpoint-60`, relative to the entrypoint's folder: a
    script that changed folder first (Hydra's job.chdir) opened outputs/.../ck_hf/checkpoint-60. Each path the
    entrypoint hands its ranks is absolute, from this node's working folder; an empty value stays empty."""
    from nodeweave.entrypoint.loop import absolute_for_ranks

    monkeypatch.chdir(tmp_path)
    given = {name: "ck/checkpoint-60", "OTHER": "rel/x", "EMPTY": ""}
    made = absolute_for_ranks(given)
    assert made[name] == str(tmp_path / "ck" / "checkpoint-60")
    assert made["OTHER"] == "rel/x" and made["EMPTY"] == ""
    assert absolute_for_ranks({name: "/abs/ck"})[name] == "/abs/ck"


def test_b17_a_rank_sees_the_stall_watchs_folder_absolute(tmp_path):
    """B17: a rank (one node, torchrun) reads NODEWEAVE_RANKWATCH_DIR absolute (the checkpoint paths take the same
    step, ``loop.absolute_for_ranks``). A relative TMPDIR, which this test once gave, is refused at start since
    walk14b B15 (tests/test_walk14_fix16f.py)."""
    pytest.importorskip("torch")
    import cli_run

    script = tmp_path / "envp.py"
    script.write_text("import os\nprint('SEEN', os.environ.get('NODEWEAVE_RANKWATCH_DIR'))\n")
    (tmp_path / "t").mkdir()
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="1", NODEWEAVE_LAUNCHER="torchrun", TMPDIR=str(tmp_path / "t"),
               NODEWEAVE_NPROC_PER_NODE="1", MASTER_PORT="39731",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    run = cli_run.entrypoint("--", script.name, cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    seen = [line.split() for line in run.stdout.splitlines() if line.startswith("SEEN")]
    assert seen and seen[0][1].startswith(str(tmp_path / "t") + "/"), run.stdout + run.stderr


# --- B1: a member stopped on purpose is a stop, judged at once -----------------------------------------------------

@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_b1_a_member_stopped_by_its_user_is_judged_a_stop_and_not_waited_for(tmp_path, how):
    """B1: under recovery, Ctrl-C of a training node's entrypoint was judged "its launcher failed (torchrun exited 1
    after SIGINT)", node 0 waited ~30 s for it to "check in again", and the end line named a failure. A member sent
    a stop signal (Ctrl-C, a SIGTERM such as `--node stop`'s) has exited: node 0 judges it `stopped`, names the
    signal, never waits for it, and (no spare, no minimum) ends the job at once saying so."""
    pytest.importorskip("torch")
    import signal
    import time

    from recovery_harness import finish, start, stop, wait_for_step

    nodes = start(tmp_path, ["--steps", "400", "--interval", "0.2", "--save-every", "5"])
    try:
        wait_for_step(nodes[0], 6, limit=150)
        began = time.monotonic()
        nodes[1].proc.send_signal(getattr(signal, how))
        assert nodes[1].wait(60) == 128 + getattr(signal, how)
        assert nodes[0].wait(60) == 8, nodes[0].text()
        took = time.monotonic() - began
        text = nodes[0].text()
        said = "SIGINT, Ctrl-C" if how == "SIGINT" else "SIGTERM"
        assert f"generation 0 ended: node 1: it was stopped ({said}: " in text, text
        assert f"the job ends: node 1: it was stopped ({said}: " in text, text
        assert "its launcher failed" not in text and "check in again" not in text, text
        assert took < 25, took  # not the 30 s STOP_WAIT_S nor the regather's wait for a node that has exited
    finally:
        stop(nodes)
        finish(nodes, limit=5)


# --- B7: node 0 sitting a generation out still watches the members' ranks ------------------------------------------

def test_b7_node_0_left_out_lists_the_ranks_and_counts_the_training(tmp_path):
    """B7: with node 0 left out (hub only) and node 1 training alone, node 0's `--status` had no ranks, no stall
    was judged, and goodput counted node 1's training as recovery (the generation's first collective never seen).
    Node 0 watches the members' ranks while it sits out: `--status` lists node 1's ranks, goodput's generation 1
    has its first collective (training counted from it)."""
    pytest.importorskip("torch")
    import json
    import time

    import cli_run
    from recovery_harness import ENTRY, finish, start, stop, steps

    nodes = start(tmp_path, ["--steps", "2000", "--interval", "0.1", "--save-every", "5", "--fault", "exit",
                             "--fault-node", "0", "--fault-gen", "0", "--fault-step", "8"],
                  env={"NODEWEAVE_NNODES": "1:2", "NODEWEAVE_STALL_WARN": "120", "NODEWEAVE_METRICS": "off"})
    try:
        until = time.monotonic() + 240
        while time.monotonic() < until and not any(g == 1 and s >= 20 for g, s, _ in steps(nodes[1])):
            time.sleep(0.5)
        assert any(g == 1 for g, _, _ in steps(nodes[1])), nodes[0].text() + nodes[1].text()
        assert "this node is LEFT OUT" in nodes[0].text() or "training node(s) 1;" in nodes[0].text(), nodes[0].text()
        argv, env, cwd = nodes[0].how
        port = argv[argv.index("--master-port") + 1]
        asked = cli_run.run([*ENTRY, "--status", "--master-addr", "127.0.0.1", "--master-port", port], env=env,
                            cwd=cwd, timeout=60)
        answer = json.loads(asked.stdout)
        ranks = (answer.get("ranks") or {}).get("ranks") or []
        assert [r.get("node") for r in ranks] == [1], asked.stdout + asked.stderr
        time.sleep(6)  # goodput.json is saved every 5 s
        [timeline] = list((tmp_path / "n0" / "nodeweave" / "jobs").glob("*/goodput.json"))
        gens = {g["generation"]: g for g in json.loads(timeline.read_text())["generations"]}
        assert gens[1]["node_0_trains"] is False and gens[1]["first"] is not None, gens[1]
    finally:
        stop(nodes)
        finish(nodes, limit=5)
