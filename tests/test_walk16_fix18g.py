"""walk16 rows fixed by fix18g, one test per class (the row's class, not the row)."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line


def test_a_line_quoted_from_a_node_holds_no_control_sequence(tmp_path):
    """walk16a A24: a rank's coloured last line (rich, loguru, colorama) was the "last line" of `runs show` raw,
    `\\x1b[32mOK\\x1b[0m` in the table and the JSON, replaying any escape a rank printed into the user's terminal.
    Every pick of a node's line (last line, cause, script error, peer gone, the tail relayed) reads it plain."""
    from nodeweave.cli.runs import _last_line
    from nodeweave.entrypoint.checkin.heartbeat import describe
    from nodeweave.entrypoint.running import symptoms

    log = tmp_path / "node-0.log"
    log.write_text("\x1b[32mOK\x1b[0m\n" + "=" * 60 + "\n\n" + "-" * 60 + "\n")
    assert _last_line(log) == "OK"
    raised = "Traceback (most recent call last):\n\x1b[31mValueError: bad \x1b]0;owned\x07value\x1b[0m\n"
    assert symptoms.cause(raised) == "ValueError: bad value"
    assert symptoms.script_error(raised)["line"] == "ValueError: bad value"
    assert symptoms.secondary("\x1b[1mRuntimeError: Connection reset by peer\x1b[0m") == \
        "RuntimeError: Connection reset by peer"
    assert describe({"how": "exited 1", "tail": ["\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x07done"]}) == \
        ["exited 1", "its last output:", "  | link done"]


@pytest.mark.parametrize("words, said", [
    (("exec", "--timeout", "5", "m", "--", "true"), "'m' after --timeout 5: a duration is one word, its number and "
                                                    "unit together; write --timeout 5m"),
    (("exec", "--timeout=5", "s", "true"), "write --timeout 5s"),
    (("logs", "--since", "2", "h"), "'h' after --since 2: a duration is one word"),
    (("exec", "--node", "1", "2", "--", "true"), "'2' follows `--node 1` before `--`"),
])
def test_a_stray_word_after_an_option_value_is_no_program(capsys, monkeypatch, tmp_path, words, said):
    """walk16a A27: `exec --timeout 5 m -- true` offered `nodeweave exec [OPTIONS] -- m true`, a program `m` on every
    node, composed from the duration's stray unit (and `exec --timeout 5 m true` took `m` as the program). A word
    after an option's value is said as what it is; no command is composed from it."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *words)
    assert code == 2 and said in one_line(err), err
    assert "-- m" not in err and "-- 2" not in err and "[OPTIONS]" not in err


@pytest.mark.parametrize("words, said", [
    (("status", "-a"), "`nodeweave status` already lists every node of the spec, a stopped or missing one too"),
    (("down", "--remove-orphans"), "`nodeweave down` takes down the nodes and network `up` made"),
    (("logs", "--until=1m"), "--since DURATION takes the last DURATION"),
    (("diff",), "`nodeweave render --diff`"),
])
def test_other_tools_words_are_answered_and_render_diffs(capsys, monkeypatch, tmp_path, repo_root, words, said):
    """walk16a A25: `render --diff` (kubectl diff), `status -a`, `down --remove-orphans`, `logs --until` were each
    "no such option" with no hint, and `render --dry-run` said "changed" but nothing showed what. Each is answered
    from the habits table; `render --diff` prints the unified diff of each file it would change, writing nothing."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *words)
    assert code == 2 and said in one_line(err), err
    (tmp_path / "nodeweave.yaml").write_text((repo_root / "nodeweave.yaml").read_text())
    assert run_cli(capsys, "render", "compose")[0] == 0
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(spec.read_text().replace("name: ", "name: diffed-", 1))
    before = {p: p.read_bytes() for p in (tmp_path / "compose").rglob("*") if p.is_file()}
    code, out, err = run_cli(capsys, "render", "compose", "--diff")
    assert code == 0, err
    assert "--- a/compose/" in out and "+++ b/compose/" in out and "\n+" in out and "diffed-" in out, out
    assert "nothing written (--diff)" in err
    assert before == {p: p.read_bytes() for p in (tmp_path / "compose").rglob("*") if p.is_file()}
    code, out, err = run_cli(capsys, "render", "compose", "--dry-run")
    assert code == 0 and "`nodeweave render --diff` shows what changes" in err, err


def test_the_shipped_demo_says_what_it_needs_outside_its_checkout(tmp_path):
    """walk16a A28: examples/ copied into a project of one's own (README's "Your own project"), `bash
    examples/demo.sh` ran until bash met what only the checkout has: `.venv/bin/nodeweave` or `.ci/make-base-image.sh:
    No such file or directory`, exit 127. It says what it needs first, exit 3, with what to do instead."""
    import shutil
    import subprocess
    import sys

    from cli_run import REPO

    project = tmp_path / "project"
    shutil.copytree(REPO / "examples", project / "examples")
    shutil.copy2(REPO / "nodeweave.yaml", project / "nodeweave.yaml")
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("bash", "dirname"):
        (tools / name).symlink_to(shutil.which(name))
    (tools / "podman").write_text("#!/bin/sh\nexit 0\n")  # an engine that answers
    (tools / "podman").chmod(0o755)
    env = {"PATH": str(tools), "HOME": str(tmp_path)}
    done = subprocess.run(["bash", "examples/demo.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3 and ".venv/bin/nodeweave not found" in done.stderr and "make cli" in done.stderr, \
        done.stderr
    venv = project / ".venv" / "bin"
    venv.mkdir(parents=True)
    for name, module in (("nodeweave", "nodeweave"), ("nodeweave-entrypoint", "nodeweave.entrypoint")):
        (venv / name).write_text(f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m {module} "$@"\n')
        (venv / name).chmod(0o755)
    done = subprocess.run(["bash", "examples/demo.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3 and "is no nodeweave checkout (.ci/ not found)" in done.stderr, done.stderr
    assert "nodeweave init" in done.stderr and "No such file" not in done.stderr and not done.stdout.strip()


@pytest.mark.parametrize("words, said", [
    (("run", "--runs-dir", "runs/sub", "--dry-run", "--", "train.py"), "--runs-dir runs/sub: it is inside"),
    (("check", "--runs-dir", "runs/sub", "--dry-run"), "--runs-dir runs/sub: it is inside"),
    (("bench", "--json-out", "runs/sub/x.json", "--dry-run"), "--json-out runs/sub/x.json: it is inside"),
    (("render", "--out", "runs/sub", "--dry-run"), "runs/sub: it is inside"),
])
def test_one_rule_for_a_path_inside_the_run_store(capsys, monkeypatch, tmp_path, repo_root, words, said):
    """walk16a A30: `run --runs-dir runs/sub` was taken, and a run there never listed by `runs ls`, while `render --out
    runs/x` was refused and `bench --json-out runs/sub/x.json` called runs/sub "a run folder". One rule
    (``failures.in_runs_store``) refuses a path inside runs/ for every option, naming the folder as what it is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text((repo_root / "nodeweave.yaml").read_text())
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "runs" / "sub").mkdir(parents=True)
    code, out, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == 2 and said in line and "in the folder sub (`nodeweave runs ls` reads each folder there as one run" \
        in line and "run folder" not in line.replace("run folders' store", ""), line
    assert not (tmp_path / "runs" / "sub" / ".gitignore").exists() and not list((tmp_path / "runs" / "sub").iterdir())
    made = tmp_path / "runs" / "sub" / "20261201T122241Z-proj"  # one an older nodeweave took: named, not hidden
    made.mkdir()
    (made / "run.json").write_text('{"run_id": "20261201T122241Z-proj", "job": "llama-pretrain", "nodes": []}')
    code, out, err = run_cli(capsys, "runs", "ls", "-o", "json")
    assert code == 0 and "runs/sub is no run: it holds 1 run(s) of its own" in err and \
        "`nodeweave runs ls --runs-dir runs/sub` lists them" in err, err
