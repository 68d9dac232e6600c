"""What keeps ``nodeweave`` quick to start: no pydantic, no renderer, no rich table where none is needed.

Speed itself is measured by benchmarks/cli_startup.py (docs/benchmarks.md); these tests hold the
causes: which modules a call imports (in a fresh interpreter), and that the plain conversion of
option values that replaces typer's pydantic adapters still refuses bad values the way click does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_USAGE
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

REPO = Path(__file__).resolve().parents[1]
PROBE = ("import json, sys; from nodeweave.cli import main; code = main(sys.argv[1:]); "
         "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")


def imported(*argv, cwd=REPO, path=None):
    home = Path(tempfile.gettempdir()) / "nodeweave-test-home"  # never the checkout: its spec in a home is refused
    home.mkdir(exist_ok=True)
    env = {"PATH": path or "/usr/bin:/bin", "COLUMNS": "100", "HOME": str(home),
           "NODEWEAVE_CACHE_DIR": str(Path(tempfile.gettempdir()) / "nodeweave-test-cache")}  # not in the checkout
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["render", "all", "--check"], ["validate"], ["runs", "ls", "-o", "json"]])
def test_common_calls_import_no_pydantic(argv):
    found = imported(*argv)
    assert found["code"] == 0
    assert "pydantic" not in found["modules"]


def test_status_up_to_the_nodes_imports_no_renderer_nor_pydantic(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: nwst\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    found = imported("status", cwd=tmp_path, path=str(Path(sys.executable).parent))
    assert found["code"] == 3  # no engine on that PATH: refused before any node is asked
    assert not {"pydantic", "jinja2", "nodeweave.rendering", "nodeweave.targets.images"} & set(found["modules"])


def test_help_imports_no_renderer():
    assert not {"nodeweave.rendering", "jinja2", "nodeweave.spec"} & set(imported("--help")["modules"])


def test_the_render_targets_spelled_in_the_cli_are_the_renderers():
    from nodeweave.cli.render import TARGET_NAMES
    from nodeweave.rendering import RENDERERS

    assert TARGET_NAMES == tuple(RENDERERS)


@pytest.mark.parametrize("argv, words", [
    (["up", "--dry-run", "--timeout", "abc"], "--timeout 'abc' is not accepted: a number"),
    (["up", "--dry-run", "--timeout", "0"], "--timeout 0 is not accepted: 1 to 1000000000"),
    (["sync", "--jobs", "1000", "--dry-run"], "--jobs 1000 is not accepted: 1 to 256"),
    (["hosts", "probe", "--jobs", "x"], "--jobs 'x' is not accepted: a whole number"),
    (["render", "bogus"], "render target 'bogus' is not accepted"),
])
def test_bad_values_are_still_refused_in_click_words(capsys, argv, words):
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_values_arrive_converted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text("name: nwconv\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    assert main(["run", "--dry-run", "--json", "--node-never"]) == EXIT_USAGE  # unknown option, one line
    capsys.readouterr()
    assert main(["run", "--dry-run", "--json", "--grace", "2.5", "-e", "A=1", "-e", "B=2"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (run,) = plan["phases"]
    argv = run["nodes"][0]["argv"]
    assert "A=1" in argv and "B=2" in argv and argv[argv.index("--run-id") + 1] == "<run-id>"
    assert run["request"]["grace"] == 2.5 and run["request"]["env"] == {"A": "1", "B": "2"}


def test_help_to_a_pipe_is_plain_and_to_a_terminal_rich(tmp_path):
    import os
    import pty

    plain = imported("up", "--help")
    assert "rich.markdown" not in plain["modules"]
    piped = subprocess.run([sys.executable, "-m", "nodeweave.cli", "up", "--help"], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "COLUMNS": "100"})
    assert "[user@]host over ssh" in piped.stdout and "╭" not in piped.stdout and "\\[" not in piped.stdout
    leader, follower = pty.openpty()  # a terminal: the rich panels
    done = subprocess.run([sys.executable, "-m", "nodeweave.cli", "up", "--help"], stdout=follower,
                          stderr=subprocess.PIPE, timeout=60, env={**os.environ, "COLUMNS": "100"})
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 0 and "╭" in shown.decode() and "[user@]host" in shown.decode()


# ---- what the light paths leave out (speed: benchmarks/cli_startup.py, docs/benchmarks.md) -------

HEAVY = {"rich", "yaml", "jinja2", "jsonschema", "python_on_whales", "pydantic", "markdown_it", "pygments", "ruamel"}


def heavy_in(modules):
    return sorted({m.split(".")[0] for m in modules} & HEAVY)


def verbs_in(modules):
    return sorted(m for m in modules if m.startswith("nodeweave.cli.") and not m.startswith("nodeweave.cli.habits"))


def test_root_help_imports_no_verb_and_nothing_heavy():
    found = imported("--help")
    assert found["code"] == 0
    assert verbs_in(found["modules"]) == [] and heavy_in(found["modules"]) == []


def test_status_up_to_the_nodes_imports_one_verb_module_and_only_yaml(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: nwst\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    found = imported("status", cwd=tmp_path, path=str(Path(sys.executable).parent))
    assert found["code"] == 3
    assert verbs_in(found["modules"]) == ["nodeweave.cli.cluster"]
    assert heavy_in(found["modules"]) == ["yaml"]  # the spec is YAML; no rich before a table is drawn


def test_render_check_imports_the_renderers_only():
    found = imported("render", "all", "--check")
    assert found["code"] == 0
    assert verbs_in(found["modules"]) == ["nodeweave.cli.render"]
    assert heavy_in(found["modules"]) == ["jinja2", "yaml"]


def test_the_root_help_table_is_what_the_modules_register():
    """VERBS (what the root help lists without importing) against the commands really registered."""
    import importlib

    from nodeweave.cli import VERBS
    from nodeweave.cli.habits.lazy import registered

    modules = {verb.module for verb in VERBS.values()}
    really = {name: (module, command) for module in modules for name, command in registered(module).items()}
    assert set(really) == set(VERBS)
    for name, verb in VERBS.items():
        module, command = really[name]
        assert module == verb.module, name
        assert command.get_short_help_str(10_000) == verb.short_help, f"VERBS[{name!r}] differs from its help"
        assert bool(command.hidden) == verb.hidden, name
    cli_modules = {p.stem for p in (REPO / "src/nodeweave/cli").glob("*.py")} - {"__init__", "__main__"}
    assert modules == cli_modules, "a module under nodeweave/cli/ that no verb loads, or the reverse"
    assert all(importlib.util.find_spec(f"nodeweave.cli.{m}") for m in modules)


def test_rich_help_on_a_terminal_leaves_markdown_and_tracebacks_out(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "100", "HOME": home_beside(tmp_path), "NODEWEAVE_RICH_HELP": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, "status", "--help"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "╭" in done.stdout and found["code"] == 0
    assert "rich.markdown" not in found["modules"] and "rich.traceback" not in found["modules"]


def test_the_rich_stand_ins_give_the_real_classes_when_used():
    code = ("import sys; from nodeweave.cli.habits.base import light_rich_help; light_rich_help(); "
            "import typer.rich_utils as r; assert 'rich.markdown' not in sys.modules; "
            "m = r.Markdown('# x'); import rich.markdown, rich.traceback; "
            "assert type(m) is rich.markdown.Markdown and r.Traceback.from_exception.__self__ is rich.traceback.Traceback")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("argv, listed", [([], "  status "), (["hosts"], "  probe ")])
def test_a_group_alone_prints_its_help_as_click_does(capsys, argv, listed):
    """`nodeweave` alone: the help on stderr, one entry a line (it was squashed into one error line), exit 2."""
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("Usage: nodeweave") and "Commands:" in err.splitlines() and listed in err


def test_only_the_program_freezes_its_objects_for_a_quick_exit():
    code = ("import gc, sys; from nodeweave.cli import main; main(['--version']); before = gc.get_freeze_count(); "
            "sys.argv = ['nodeweave', '--version']; main(); print(before, gc.get_freeze_count() > 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split()[-2:] == ["0", "True"]


# ---- render --check answered from its memo (nodeweave.rendering.memo; its correctness: test_render_memo.py) ----

PROGRAM_PROBE = ("import json, sys; from nodeweave.cli import main; sys.argv[0] = 'nodeweave'; code = main(); "
                 "sys.stdout.flush(); sys.stderr.write(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")


@pytest.mark.parametrize("given", [[], ["--spec", "nodeweave.yaml"]], ids=["found", "--spec"])
def test_a_repeated_render_check_loads_neither_the_spec_nor_a_renderer(tmp_path, given):
    """The program's second identical `render all --check`: the typer command line, the plan it prints, the memo.
    With --spec too: its check for a run folder's file (walk9 A9) had imported the spec's loader as the command
    line was read, ~100 ms on every verb given --spec (``runfiles``)."""
    import os

    (tmp_path / "nodeweave.yaml").write_text("name: nwst\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    env = {**os.environ, "NODEWEAVE_CACHE_DIR": str(tmp_path.parent / f"{tmp_path.name}-cache"), "COLUMNS": "100"}
    subprocess.run([sys.executable, "-m", "nodeweave.cli", "render", "all"], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", PROGRAM_PROBE, "render", "all", "--check", *given],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    found = json.loads(done.stderr.strip().splitlines()[-1])
    assert found["code"] == 0
    assert verbs_in(found["modules"]) == ["nodeweave.cli.render"]
    assert heavy_in(found["modules"]) == []
    renderers = ("nodeweave.spec", "nodeweave.targets", "nodeweave.entrypoint.core", "nodeweave.rendering.plan")
    assert not [m for m in found["modules"] if any(m == r or m.startswith(r + ".") for r in renderers)]


def test_reading_a_file_or_the_spec_rules_loads_no_entrypoint_planner():
    """`nodeweave.entrypoint`'s names load on first use: bounded reads and the spec's shared rules stay light."""
    code = ("import sys, nodeweave.entrypoint.bounded, nodeweave.entrypoint.planning.shared_rules, "
            "nodeweave.rendering.memo; print(sorted(m for m in sys.modules if m.startswith(("
            "'nodeweave.entrypoint.core', 'nodeweave.spec', 'nodeweave.plan', 'nodeweave.targets', "
            "'nodeweave.rendering.plan'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
    import nodeweave.entrypoint as entrypoint
    import nodeweave.rendering as rendering
    from nodeweave.entrypoint import plan

    assert plan is entrypoint.make_plan  # every name of each package's API is still there, from its module
    assert all(getattr(package, name) is not None for package in (entrypoint, rendering) for name in package.__all__)
