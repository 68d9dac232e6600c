"""The cluster verbs' command line: --dry-run prints the exact commands, bad input is one line and exit 2."""

from __future__ import annotations

import cli_run
import pytest

SPEC = """name: cli
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py, args: ["--steps", "5"]}
kubernetes: {namespace: ml}
"""


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    return tmp_path / "nodeweave.yaml"


def nodeweave(spec, *args):
    words = [*args, "--spec", str(spec)] if "--" not in args else [args[0], "--spec", str(spec), *args[1:]]
    return cli_run.nodeweave(*words, cwd=spec.parent, env=cli_run.CLEAN)


def test_up_dry_run_prints_the_compose_command_and_touches_nothing(spec):
    out = nodeweave(spec, "up", "--hold", "--dry-run", "--engine", "podman")
    assert out.returncode == 0 or "is not built here" in out.stdout, out.stderr  # exit 3: the image not built
    assert "NODEWEAVE_MODE=hold" in out.stdout and ".nodeweave/cli/compose.yaml up -d" in out.stdout
    assert "would write .nodeweave/cli/compose.yaml" in out.stdout  # the job's own, beside its token
    assert not (spec.parent / "compose").exists() and not (spec.parent / ".nodeweave").exists()


def test_run_dry_run_prints_every_nodes_exec_per_sweep_point(spec):
    out = nodeweave(spec, "run", "--dry-run", "--engine", "podman", "--sweep", "NCCL_MAX_NCHANNELS=8,16", "--",
                    "train.py", "--lr", "1e-3")
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("podman exec")]
    assert lines == [f"podman exec cli-{i} env NCCL_MAX_NCHANNELS={n} nodeweave-entrypoint --mode run --run-id <run-id> "
                     f"-- train.py --lr 1e-3" for n in (8, 16) for i in (0, 1)]
    assert not (spec.parent / "runs").exists()


def test_shell_dry_run(spec):
    out = nodeweave(spec, "shell", "--node", "1", "--dry-run", "--target", "kubernetes")
    # the plan's line; with no cluster reachable here, a "# the real shell would end with exit 3" note comes first
    assert out.returncode == 0 and any(line.startswith("kubectl exec -i -t -n ml -c trainer cli-1 -- sh -c")
                                       for line in out.stdout.splitlines()), out


@pytest.mark.parametrize("args, message", [
    (("up", "--target", "moon", "--dry-run"), "--target 'moon' is not accepted"),
    (("run", "--dry-run", "--sweep", "NOVALUE"), "--sweep 'NOVALUE' is not accepted"),
    (("run", "--dry-run", "--metric", "samples/s ([0-9.]+"), "is not a regular expression"),
    (("run", "--dry-run", "--env", "1X=2"), "--env '1X=2' is not accepted"),
    (("run", "--dry-run", "--profile", "perf"), "--profile 'perf' is not accepted"),
    (("up", "--dry-run", "--target", "hosts", "--host", "gpu01", "--host", "gpu02"), "--remote-dir"),
    (("status", "--target", "hosts", "--host", "bad host!"), "--host 'bad host!' is not accepted"),
    (("shell", "--node", "7", "--dry-run"), "--node 7 is not a node of this cluster"),
])
def test_bad_input_is_one_line_and_exit_2(spec, args, message):
    out = nodeweave(spec, *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_missing_spec_is_named(tmp_path):
    out = cli_run.nodeweave("status", "--spec", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2 and "spec file not found" in out.stderr


def test_help_lists_the_verbs():
    out = cli_run.nodeweave("--help", env={"COLUMNS": "200"})
    for verb in ("up", "down", "run", "status", "logs", "stop", "shell"):
        assert f" {verb} " in out.stdout, verb


def _run_argv(spec, *words):
    """``nodeweave run WORDS`` exactly as typed (``--spec`` first, so it never lands after ``--``)."""
    return cli_run.nodeweave("run", "--spec", str(spec), *words, cwd=spec.parent, env=cli_run.CLEAN)


@pytest.mark.parametrize("words", [
    ("train.py", "--dry-run", "--engine", "podman"),
    ("--engine", "podman", "train.py", "--dry-run"),
    ("--dry-run", "--engine", "podman", "--", "train.py"),
])
def test_dry_run_anywhere_before_the_dashes_is_nodeweaves(spec, words):
    out = _run_argv(spec, *words)
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("podman exec")]
    assert lines == [f"podman exec cli-{i} nodeweave-entrypoint --mode run --run-id <run-id> -- train.py"
                     for i in (0, 1)]
    assert not (spec.parent / "runs").exists()


def test_an_option_after_the_dashes_reaches_the_script_unread(spec):
    out = _run_argv(spec, "--dry-run", "--engine", "podman", "--", "train.py", "--dry-run", "-e", "X=1")
    assert out.returncode == 0, out.stderr
    assert "-- train.py --dry-run -e X=1" in out.stdout
    assert "env X=1" not in out.stdout and not (spec.parent / "runs").exists()


@pytest.mark.parametrize("words, message", [
    (("train.py", "--lr", "1e-3", "--dry-run"), "'--lr' is not an option of `nodeweave run`; the command and its "
                                                "own options go after `--`"),
    (("--dry-run", "train.py", "--", "--lr", "1"), "the command is given twice"),
    (("--dry-run", "--", "torchrun", "--nproc-per-node", "8", "train.py"),
     "nodeweave starts torchrun itself on every node (rank, master and node count from its plan); give only the "
     "script: `nodeweave run --nproc-per-node 8 -- train.py`"),
    (("--dry-run", "--", "python", "-m", "torch.distributed.run", "train.py"), "nodeweave starts torchrun itself"),
    (("--dry-run", "--", "python", "-u", "train.py"), "give the script path after `--`"),
])
def test_a_command_before_the_dashes_or_a_launcher_is_refused_with_the_form_to_type(spec, words, message):
    out = _run_argv(spec, *words)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (spec.parent / "runs").exists()


def test_python_before_the_script_is_understood(spec):
    out = _run_argv(spec, "--dry-run", "--engine", "podman", "--", "python3", "train.py", "--lr", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].endswith("nodeweave-entrypoint --mode run --run-id <run-id> -- train.py --lr 1")


@pytest.mark.parametrize("verb", [("run", "--check"), ("up", "--hold", "--check")])
def test_a_check_is_in_the_dry_run_of_run_and_up(spec, verb):
    """Issue 34: `run --check --dry-run` and `up --hold --check --dry-run` left the check out; it is a phase of
    their plans now, printed as every node's worker argv, and up's dry run still writes nothing."""
    import json

    out = nodeweave(spec, *verb, "--dry-run", "--engine", "podman")
    assert out.returncode == 0 or "is not built here" in out.stdout, out.stderr  # up's exit 3: the image not built
    workers = [line for line in out.stdout.splitlines() if "-m nodeweave.check.worker" in line]
    assert [line.split()[2] for line in workers] == ["cli-0", "cli-1"], out.stdout
    plan = json.loads(nodeweave(spec, *verb, "--dry-run", "--engine", "podman", "-o", "json").stdout)
    kinds = [p["kind"] for p in plan["phases"]]
    assert kinds == (["check", "run"] if verb[0] == "run" else ["files", "commands", "wait", "check"])
    assert not (spec.parent / ".nodeweave").exists() and not (spec.parent / "runs").exists()
