"""Every verb that acts plans with the one plan type, ``nodeweave.plan.Plan`` (issue 41, item 5: "the plan is what runs").

Each verb's ``--dry-run -o json`` is run as a user runs it (a real process; bare hosts reached through the ssh
stand-in, tests/ssh_standin.py) and must print a ``Plan``'s ``to_dict()``: its verb, where, notes and phases,
each phase of a kind ``nodeweave.plan.KINDS`` knows. ``render`` had a plan type of its own (``RenderPlan``, with
its own document and its own write) until it became a ``Plan`` of one ``render`` phase run by the one executor;
the second test holds that type gone. The third: ``up``'s files, like ``render``'s, are written all or none.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.plan import KINDS
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

HERE = Path(__file__).parent
SRC = HERE.parent / "src" / "nodeweave"
STANDIN = HERE / "ssh_standin.py"
SPEC = """name: everyverb
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""
HOSTS = ["--target", "hosts", "--engine", "none", "--host", "desk1", "--host", "desk2"]
# each verb that acts, the words after it for its dry run ({remote}: a folder under the test's own)
VERBS = {
    "render": ["render", "all"],
    "image build": ["image", "build"],
    "up": ["up", *HOSTS, "--remote-dir", "{remote}"],
    "down": ["down", *HOSTS, "--remote-dir", "{remote}"],
    "run": ["run", *HOSTS, "--remote-dir", "{remote}"],
    "check": ["check", *HOSTS, "--remote-dir", "{remote}"],
    "sync": ["sync", "src", "{remote}/synced", "--node", "ssh:desk1", "--node", "ssh:desk2"],
    "stop": ["stop", *HOSTS, "--remote-dir", "{remote}"],
    "exec": ["exec", *HOSTS, "--remote-dir", "{remote}", "--dry-run", "-o", "json", "--", "true"],
    "shell": ["shell", *HOSTS, "--remote-dir", "{remote}"],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A spec folder rendered once (``image build`` reads the rendered entrypoint), ssh as the stand-in."""
    root = tmp_path_factory.mktemp("everyverb")
    (root / "nodeweave.yaml").write_text(SPEC)
    (root / "train.py").write_text("print('train')\n")
    (root / "src").mkdir()
    (root / "src" / "data.txt").write_text("data\n")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin",
           "STANDIN_SSH_ROOT": str(root / "hosts"), "COLUMNS": "200", "HOME": home_beside(root)}
    env.pop("NODEWEAVE_PLAN_RECORD", None)
    done = cli_run.run([*cli_run.NODEWEAVE, "render", "all"], cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return root, env


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_that_acts_prints_a_plan_for_its_dry_run(folder, verb):
    root, env = folder
    words = [w.format(remote=root / "job") for w in VERBS[verb]]
    if "--dry-run" not in words:
        words += ["--dry-run", "-o", "json"]
    done = cli_run.run([*cli_run.NODEWEAVE, *words], cwd=root, env=env, timeout=300)
    assert done.returncode == 0, f"{words}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    plan = json.loads(done.stdout)
    # image: what up's nodes run, where they run one; would_move: what sync's dry run found each target needs, every
    # path (walk15 A31: the text cut it to 20, with no full form)
    assert set(plan) - {"image", "would_move"} == {"verb", "where", "notes", "phases"}, \
        f"{verb}'s dry run is no nodeweave.plan.Plan: {plan}"
    assert "would_move" not in plan or verb == "sync", plan
    # `down` on hosts no `up` marked does nothing, and its plan says so instead of listing steps (walk11 A17)
    nothing = verb == "down" and any("nothing to take down" in note for note in plan["notes"])
    assert plan["verb"] == verb and (plan["phases"] or nothing), plan
    assert {phase["kind"] for phase in plan["phases"]} <= set(KINDS), plan["phases"]


def test_render_has_no_plan_type_of_its_own():
    """No module names ``RenderPlan`` (render's plan is a ``Plan``), and the render CLI hands its plan to the one
    executor instead of writing it itself."""
    naming = sorted(str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
                    if any(isinstance(node, (ast.Name, ast.Attribute, ast.ClassDef, ast.alias))
                           and "RenderPlan" in {getattr(node, "id", None), getattr(node, "attr", None),
                                                getattr(node, "name", None)}
                           for node in ast.walk(ast.parse(path.read_text()))))
    assert naming == [], f"RenderPlan is still named in {naming}"
    tree = ast.parse((SRC / "cli" / "render.py").read_text())
    called = {node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
              for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert "execute" in called and not called & {"write", "write_rendered", "write_all"}, called


def test_ups_files_are_written_all_or_none(tmp_path):
    """``up``'s files phase (the job's compose file, its .env, ...) stopped by its second file (a file where its
    folder must go) leaves the first unwritten too: the same staged write as ``render``'s."""
    from nodeweave.cluster.execute import Execution
    from nodeweave.plan import FilesPhase, PlannedFile

    (tmp_path / "blocked").write_text("a file where a folder must go\n")
    phase = FilesPhase("the job's files", files=(PlannedFile("job/compose.yaml", "the compose file", b"a: 1\n"),
                                                  PlannedFile("blocked/.env", "the env file", b"B=2\n")))
    said = []
    from nodeweave.errors import NodeweaveError

    with pytest.raises((OSError, NodeweaveError)):  # today refused before any write: a file where a folder goes
        phase.run(Execution(tmp_path, said.append))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["blocked"] and said == []
