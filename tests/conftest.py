"""Shared test fixtures: repo paths, shared data, and the engine gate.

Tests marked ``engine`` need a working container engine; where none can
start they are skipped with the reason, never silently passed. With
``CI=true`` a skip for want of a tool that .ci/ installs is a failure naming
the tool (tests/ci_gate.py holds the table).

``make test`` runs the suite in pytest-xdist workers (``--dist loadgroup``):
the tests that drive a real tool (an engine, Slurm, sshd images: the
``engine``/``docker`` markers, tests/e2e/ and the tests tests/ci_gate.py
lists) run in groups, each group in turn in one worker: one group per test
file (its fixed container names, networks, module-wide clusters), one for
every Slurm test (the one local Slurm). The groups run beside each other and
beside the pure tests, which spread over every worker.

When the run ends, the images built during it under the names the tests
use are removed, and nothing else; runs that overlap on one machine (the
one-test pytest tests/test_ci_gate.py starts, say) leave that to the last of
them to end (tests/engine_leftovers.py). The header says how much disk is
free.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import ci_gate
import engine_leftovers

# A suite started in the background by a non-interactive shell (`make test &`, nohup, a CI step put aside) inherits
# SIGINT ignored, and so would every process a test starts: the Ctrl-C tests would test the launch, not nodeweave
# (ten of them failed so). A handler here is reset to the default in every child at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
# benchmarks/ after tests/ on the path: the tests drive its harnesses (stall_nodes, exchange_scale) and start their
# nodes on this one machine as they do (one_machine.one_machine_env).
sys.path.append(str(REPO / "benchmarks"))
# ../shared beside the checkout (CI lays a copy there); NODEWEAVE_SHARED_DIR points elsewhere (a worktree).
SHARED = Path(os.environ.get("NODEWEAVE_SHARED_DIR") or REPO.parent / "shared")


def _run_scratch() -> None:
    """Every process the tests start keeps its temporary files in a folder of this run's own, removed when the run
    ends: the entrypoint's state ($TMPDIR/nodeweave: job claims, rank records), torchrun's torchelastic_* folders,
    the helpers' mkdtemp. In the machine's /tmp one run's claims met the next run's and a user's job there, and
    every run left hundreds of folders behind (stop 54: 570 torchelastic_*, 203 nodeweave-live-*). One folder per
    xdist worker below the controller's; pytest's own tmp_path stays where it was (PYTEST_DEBUG_TEMPROOT), so the
    paths tests pass around keep their length."""
    import atexit
    import tempfile

    machine = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", machine)
    root = os.environ.get("NW_TESTS_TMPROOT")
    if not root:
        root = tempfile.mkdtemp(prefix="nw-tests-", dir=machine)
        os.chmod(root, 0o1777)  # as /tmp: the tests that run a step as another user (setpriv) write there too
        os.environ["NW_TESTS_TMPROOT"] = root
        atexit.register(shutil.rmtree, root, True)
    folder = os.path.join(root, os.environ.get("PYTEST_XDIST_WORKER") or "main")
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o1777)
    os.environ["TMPDIR"] = tempfile.tempdir = folder


_run_scratch()


def _children_keep_the_run_scratch() -> None:
    """A child started with an environment written from scratch (``env={"PATH": ...}``: hundreds of tests do, to
    leave the user's variables out) lost the run's TMPDIR and wrote its state in the machine's /tmp again: the
    entrypoint's ``nodeweave/`` claims and rank records, torchrun's ``torchelastic_*`` (stop 55's CI run left both).
    Such an environment gets the run's TMPDIR, unless it names its own TMPDIR (a node's, a test of the default)."""
    begin = subprocess.Popen.__init__

    @functools.wraps(begin)
    def __init__(self, *args, **kwargs):
        env = kwargs.get("env")
        if env is not None and not any(isinstance(k, bytes) for k in env) and "TMPDIR" not in env:
            kwargs["env"] = {**env, "TMPDIR": os.environ["TMPDIR"]}
        begin(self, *args, **kwargs)

    subprocess.Popen.__init__ = __init__


_children_keep_the_run_scratch()

SWEEP = engine_leftovers.Sweep(engine_leftovers.Runs())  # runs that overlap share one sweep, the last one's
SWEPT: list = []  # the sweep's one line, for the summary


def _controller(config) -> bool:
    """The process that runs the whole session: xdist's controller, or pytest alone."""
    return not hasattr(config, "workerinput")


def pytest_report_header(config):
    return engine_leftovers.disk_line()


def pytest_configure(config):
    if _controller(config):
        SWEEP.start()


def pytest_sessionfinish(session):
    if _controller(session.config):
        SWEPT.append(SWEEP.finish())


def pytest_terminal_summary(terminalreporter):
    for line in filter(None, SWEPT):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder {SHARED} is absent (it sits beside the checkout in CI)")
    return SHARED


@pytest.fixture(scope="module")
def own_digest_cache(tmp_path_factory):
    """Keep the local digest caches ``nodeweave sync`` writes out of the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture
def engine_answers():
    """For a test that plans a local-target verb, its engine calls stood in but its tool check real: skipped with
    the reason where no engine answers (the README's test command on a machine with none: the local target's
    'podman is not on PATH' came before what the test asks)."""
    problem = engine_problem()
    if problem:
        pytest.skip(f"no container engine: {problem}")


@functools.lru_cache(maxsize=1)
def engine_problem() -> "str | None":
    """Why no container engine can be used here, or None when podman answers."""
    if shutil.which("podman") is None:
        return "podman is not installed (bash .ci/setup-engine.sh installs it)"
    try:
        out = subprocess.run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"podman info failed: {err}"
    if out.returncode != 0:
        return f"podman info failed: {out.stderr.strip()[:300]}"
    return None


def real_tools_group(item) -> "str | None":
    """The xdist group of a test that shares the machine's engines, networks or Slurm (ci_gate.group_of)."""
    return ci_gate.group_of(item.nodeid, {mark.name for mark in item.iter_markers()}, item.fixturenames)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Before xdist's own hook reads the groups into the node ids (loadgroup only).
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            group = real_tools_group(item)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))
    # `docker`-marked tests need dockerd, not podman: their own fixture skips them with its reason.
    engine_items = [item for item in items if "engine" in item.keywords and "docker" not in item.keywords]
    if not engine_items:
        return
    problem = engine_problem()
    if problem:
        marker = pytest.mark.skip(reason=f"no container engine: {problem}")
        for item in engine_items:
            item.add_marker(marker)


def pytest_collection_finish(session):
    """Stop at once if xdist dropped the group: the real-tool tests would race on one engine."""
    config = session.config
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    lost = [(item.nodeid, group) for item in session.items
            for group in [real_tools_group(item)] if group and not item.nodeid.endswith("@" + group)]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not put {lost[0][0]} (and {len(lost) - 1} more) in the {lost[0][1]!r} group, "
            "so tests that share the engine would run at once; this pytest/pytest-xdist pair is known to drop "
            "groups (pytest-dev/pytest-xdist#1386): install the versions pyproject.toml pins (make install)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On CI, a skip of a test whose tool .ci/ installs fails, naming the tool (tests/ci_gate.py)."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or not ci_gate.on_ci():
        return
    tools = ci_gate.tools_for(item.nodeid, (mark.name for mark in item.iter_markers()))
    if tools:
        report.outcome = "failed"
        report.longrepr = ci_gate.failure_text(item.nodeid, tools, ci_gate.skip_reason(report.longrepr))


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """The local Slurm cluster (slurmctld, two slurmd), shared by the cluster-target tests that take it."""
    import slurm_cluster

    c = slurm_cluster.Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        c.start()
    except RuntimeError as err:
        c.stop()
        pytest.fail(str(err))
    yield c
    c.stop()
