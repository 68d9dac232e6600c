"""Issue 41: one way through every start. Recovery off is the policy "one generation, then stop" of the loop
recovery on runs for many (``entrypoint/loop.py``); each start step is called from that loop alone, so the
two ways cannot drift apart again (they had: recovery skipped the rank-0 self-check, the replan after the
wait, and the word to node 0 of a worker that could not plan)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ENTRYPOINT = SRC / "nodeweave" / "entrypoint"
LOOP = ENTRYPOINT / "loop.py"

# the start steps, by the name they are called with: each is called in the loop's module and nowhere else
STEPS = ("CheckIn", "wait_for", "check_master_is_self", "tell_node_0", "write_files", "record_run", "attach",
         "watch_alone", "run_supervised", "execve")
# where a step's name is also called for something that is no start: the stall watch attaches itself to a
# watch of its own (stall/local.py), the supervisor's child execs the launcher it was handed, and the plan asks the
# rank-0 self-check the start makes to say it as a warning (core._start_refusals, walk8 B24: one check for both)
ELSEWHERE = {("attach", "stall/local.py"), ("execve", "running/supervise.py"), ("check_master_is_self", "core.py")}


def callers(name):
    """(module relative to entrypoint/, enclosing function) of every call of ``name`` under entrypoint/."""
    found = []
    for path in sorted(ENTRYPOINT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Call):
                    called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                    if called == name:
                        found.append((path.relative_to(ENTRYPOINT).as_posix(), func.name))
    return found


@pytest.mark.parametrize("step", STEPS)
def test_every_start_step_is_called_from_the_loop_alone(step):
    """Before: ``__main__.run`` and ``recovery/generations.Generations`` each ran the sequence (down to the same
    ``wait_for`` call). A start step called from anywhere but ``loop.py`` is a second start path growing back."""
    seen = callers(step)
    outside = sorted({(module, func) for module, func in seen if module != "loop.py"
                      and (step, module) not in ELSEWHERE})
    assert outside == [], f"{step} is called outside entrypoint/loop.py: {outside}"
    assert any(module == "loop.py" for module, _ in seen), f"{step} is no longer called from loop.py"


def test_main_hands_every_start_to_the_loop():
    """``__main__.run`` is the loop's door, not a sequence of its own: it calls one function."""
    tree = ast.parse((ENTRYPOINT / "__main__.py").read_text(encoding="utf-8"))
    run = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run")
    calls = [node for node in ast.walk(run) if isinstance(node, ast.Call)]
    assert len(calls) == 1, ast.unparse(run)


@pytest.mark.parametrize("recovery", ["off", "on"])
def test_recovery_on_and_off_refuse_a_second_rank_0_before_the_check_in(tmp_path, recovery):
    """Rank 0 whose MASTER_ADDR is another host (two nodes claim rank 0) is refused with exit 3 before any
    launcher or gather, recovery on as off. Before, recovery's own copy of the start had no self-check: node 0
    gathered the job until its deadline and refused it for a missing node instead. 192.0.2.1 (TEST-NET-1) is
    not on this machine; nothing is sent to it."""
    (tmp_path / "train.py").write_text("")
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"  # the launcher on PATH, as in a node
    env = {"PATH": path, "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path),
           "NODEWEAVE_WAIT_TIMEOUT": "5", "NODEWEAVE_RECOVERY": recovery}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--launcher", "torchrun", "--nnodes", "2",
                          "--node-rank", "0", "--master-addr", "192.0.2.1", "--", "train.py"],
                         timeout=120, cwd=tmp_path, env=env)
    assert out.returncode == 3, out.stderr
    assert "not an address of this node" in out.stderr and "check-in refused" not in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
