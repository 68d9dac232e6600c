"""Every test runs ``nodeweave`` / ``nodeweave-entrypoint`` through tests/cli_run.py, so it tests this checkout.

A subprocess argv built by hand (``[sys.executable, "-m", "nodeweave.cli", ...]``) with an env that lacks
``<checkout>/src`` on PYTHONPATH runs the venv's installed nodeweave: test_cluster_cli and test_check_parts passed
that way against code nobody had changed. ``cli_run`` puts the checkout first on every call. The files below still
build their own argv; the list may only shrink (a file moved to the helper must leave it).
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# A hand-built argv of the CLI or the entrypoint, or a subprocess handed one of the argv constants directly.
HAND_BUILT = re.compile(
    r"""["']-m["'],\s*["']nodeweave\.(cli|entrypoint|start)["']"""
    r"""|from nodeweave\.(cli|start) import main; sys\.exit"""
    r"""|subprocess\.(run|Popen|check_output|check_call|call)\(\s*\[\s*\*\s*(NODEWEAVE|ENTRY|ENTRYPOINT|PROGRAM|cli_run\.)""")
NOT_YET_MOVED = {
    "e2e/cluster_harness.py",
    "e2e/conftest.py",
    "e2e/test_attacker.py",
    "e2e/test_build_plan.py",
    "e2e/test_docker_path.py",
    "e2e/test_exchange.py",
    "e2e/test_kube_recovery.py",
    "e2e/test_push.py",
    "e2e/test_selfcheck.py",
    "test_bounded_reads.py",
    "test_cli_no_traceback.py",
    "test_cli_startup.py",
    "test_dashboard.py",
    "test_doctor_cluster.py",
    "test_doctor_spare.py",
    "test_entrypoint_cli.py",
    "test_entrypoint_wait.py",
    "test_exchange_frames.py",
    "test_exchange_processes.py",
    "test_images.py",
    "test_packaging.py",
    "test_refusals_fast.py",
    "test_render_all_or_nothing.py",
    "test_rendered_up_to_date.py",
    "test_slurm_runtimes.py",
    "test_stall_processes.py",
    "test_state_not_committed.py",
    "test_sync_engine.py",
    "test_sync_ssh.py",
    "test_up_plans.py",
    "test_validate_json.py",
}


def hand_built_calls() -> "dict[str, list[int]]":
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS).as_posix()
        if name in ("cli_run.py", "test_cli_run_is_the_one_way.py"):
            continue
        lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if HAND_BUILT.search(line)]
        if lines:
            found[name] = lines
    return found


def test_no_new_test_runs_the_cli_without_the_checkout_helper():
    new = {name: lines for name, lines in hand_built_calls().items() if name not in NOT_YET_MOVED}
    assert not new, f"run nodeweave / nodeweave-entrypoint through tests/cli_run.py (nodeweave(), entrypoint(), run()): {new}"


def test_the_list_of_files_not_yet_moved_only_shrinks():
    moved = sorted(NOT_YET_MOVED - set(hand_built_calls()))
    assert not moved, f"these now use tests/cli_run.py: take them off NOT_YET_MOVED: {moved}"


def test_the_pattern_catches_the_habits_it_is_for():
    for line in ('subprocess.run([sys.executable, "-m", "nodeweave.entrypoint", "--explain"])',
                 'NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]',
                 "out = subprocess.run([*NODEWEAVE, 'status'], capture_output=True)"):
        assert HAND_BUILT.search(line), line
    assert not HAND_BUILT.search('cli_run.nodeweave("status", cwd=tmp_path)')
