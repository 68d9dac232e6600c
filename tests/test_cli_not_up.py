"""Nothing up, or no engine: the same answer from every verb that acts on the nodes.

Exit 3, one line on stderr naming the job and what to type (`nodeweave up`, or `nodeweave up --hold` for the
verbs that go into held nodes), said as a person would ("no logs to show", never "nothing to logs"), no run
folder left behind; and each verb's dry run notes what the real one would meet (README, exit codes).
"""

from __future__ import annotations

import re
import shutil

import pytest

from nodeweave.cli import main
from nodeweave.cluster.base import HELD_VERBS
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = "name: demo\nnodes: 2\ngpus_per_node: 1\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: train.py}\n"

# every verb that acts on the nodes, as a new user types it
ACTING = {
    "run": ["run", "--", "train.py"],
    "exec": ["exec", "--", "hostname"],
    "logs": ["logs"],
    "logs -f": ["logs", "-f"],
    "stop": ["stop"],
    "shell": ["shell", "--node", "1"],
    "check": ["check"],
    "sync": ["sync"],
    "status": ["status"],
    "status --fingerprints": ["status", "--fingerprints"],
    "top": ["top", "--once"],  # the fresh walk: exit 1, "no live picture from node-0: list index out of range"
    "dashboard": ["dashboard"],
    "status --ranks": ["status", "--ranks"],
    "doctor --cluster": ["doctor", "--cluster"],  # walk2 U7: was exit 1, "single node" against a 2-node spec
    "doctor --cluster --node 1": ["doctor", "--cluster", "--node", "1"],
}
HELD = set(HELD_VERBS.values())  # their hint starts the nodes holding (walk5 W46: sync, exec, shell, status too)
DRY_RUNS = {"run": ["run", "--dry-run", "--", "train.py"], "exec": ["exec", "--dry-run", "--", "hostname"],
            "stop": ["stop", "--dry-run"], "shell": ["shell", "--dry-run"], "check": ["check", "--dry-run"],
            "up": ["up", "--dry-run"], "down": ["down", "--dry-run"], "sync": ["sync", "--dry-run"],
            "doctor --cluster": ["doctor", "--cluster", "--dry-run"]}


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home_beside(tmp_path))
    monkeypatch.delenv("NODEWEAVE_ENGINE", raising=False)
    return tmp_path


def _call(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_answer(name, code, err, folder):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 3, f"`nodeweave {name}`: exit {code}: {err!r}"
    assert len(lines) == 1 and lines[0].startswith("nodeweave: error: "), f"`nodeweave {name}`: {err!r}"
    assert not re.search(r"nothing to (logs|shell|exec|sync|read|open)", err), f"`nodeweave {name}`: {err!r}"
    assert not (folder / "runs").exists(), f"`nodeweave {name}` left a run folder with nothing up"
    return lines[0]


@pytest.mark.parametrize("name", sorted(ACTING))
def test_no_engine_is_one_answer_on_every_verb(name, folder, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(folder / "no-tools"))
    code, _, err = _call(ACTING[name], capsys)
    line = _one_answer(name, code, err, folder)
    assert "podman" in line, f"`nodeweave {name}` does not name the missing engine: {line}"


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman answers 'missing' for containers that are not up")
@pytest.mark.parametrize("name", sorted(ACTING))
def test_nothing_up_is_one_answer_on_every_verb(name, folder, capsys):
    code, _, err = _call(ACTING[name], capsys)
    line = _one_answer(name, code, err, folder)
    assert "demo is not up" in line, line  # one wording on every verb, status too
    wanted = "`nodeweave up --hold` starts it" if name.split()[0] in HELD else "`nodeweave up` starts it"
    assert wanted in line, f"`nodeweave {name}`: {line}"
    assert "refusal" not in line and "()" not in line, line


@pytest.mark.parametrize("name", sorted(DRY_RUNS))
def test_every_dry_run_notes_what_the_real_run_would_meet(name, folder, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(folder / "no-tools"))
    argv = DRY_RUNS[name]
    at = argv.index("--") if "--" in argv else len(argv)
    code, out, err = _call([*argv[:at], "-o", "json", *argv[at:]], capsys)
    assert code == 0, err
    import json

    notes = json.loads(out)["notes"]
    assert any("would end with exit 3" in n and "podman" in n for n in notes), (name, notes)
    assert not (folder / "runs").exists() and not (folder / ".nodeweave").exists()


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman answers 'missing' for containers that are not up")
@pytest.mark.parametrize("name", sorted(set(DRY_RUNS) - {"up", "down"}))  # down: "nothing to take down" (below)
def test_a_dry_run_with_nothing_up_notes_it(name, folder, capsys):
    code, out, err = _call(DRY_RUNS[name], capsys)
    assert code == 0, err
    assert re.search(r"^# the real .* would end with exit 3: demo is not up", out, re.M), out


REFUSING_KUBECTL = """#!/bin/sh
echo "E1129 couldn't get current server API group list: Get \\"http://localhost:8080/api\\": dial tcp 127.0.0.1:8080: connect: connection refused" >&2
echo "The connection to the server localhost:8080 was refused - did you specify the right host or port?" >&2
echo call >> "$(dirname "$0")/calls"
exit 1
"""


def test_sync_to_pods_with_no_api_is_one_line_exit_3_without_retries(folder, capsys, monkeypatch):
    """kubectl cannot reach the API at all: one cause for every pod, said once (exit 3), and no retry."""
    tools = folder / "kbin"
    tools.mkdir()
    (tools / "kubectl").write_text(REFUSING_KUBECTL)
    (tools / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    code, _, err = _call(["sync", ".", "/workspace", "--statefulset", "demo", "--replicas", "2"], capsys)
    lines = [line for line in err.splitlines() if line.startswith("nodeweave: ")]
    assert code == 3 and len(lines) == 1 and "the Kubernetes API cannot be reached" in lines[0], err
    assert len((tools / "calls").read_text().split()) == 1, "a refused API connection was retried"
