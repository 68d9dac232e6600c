"""``--profile``: every rank under nsys or rocprofv3, checked by the launchers' own parsers; GPU use parsers.

No GPU profiler runs on this machine, so the wrapped command lines are read
back by torchrun's, deepspeed's and accelerate's parsers (the ranks they
would start are the profiler, then python and the script), and the smi
parsers read outputs kept in tests/fixtures/smi (README there says where
each comes from).
"""

import os
import stat
import sys
from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.errors import EntrypointError

FIX = Path(__file__).parent / "fixtures"
SCRIPT = ["train.py", "--lr", "3e-4"]


@pytest.fixture
def profilers(tmp_path):
    for tool in ("nsys", "rocprofv3"):
        exe = tmp_path / tool
        exe.write_text("#!/bin/sh\nexec \"$@\"\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{tmp_path}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}


def plan(launcher, tool, env, rank="1"):
    env = {**env, "NODEWEAVE_LAUNCHER": launcher, "NNODES": "2", "NODE_RANK": rank, "MASTER_ADDR": "10.0.0.1",
           "NODEWEAVE_NPROC_PER_NODE": "2"}
    return make_plan(["--profile", tool, "--run-id", "r1", "--", *SCRIPT], env=env,
                     sysroot=str(FIX / "synthetic" / "cpu-only"))


@pytest.mark.launchers
def test_torchrun_starts_the_profiler_per_rank_with_no_python(profilers, tmp_path):
    run = pytest.importorskip("torch.distributed.run")
    p = plan("torchrun", "nsys", profilers)
    args = run.get_args_parser().parse_args(p.launch.argv[1:])
    out = tmp_path / "nodeweave" / "runs" / "r1" / "profile"
    assert args.no_python and args.training_script == "nsys"
    assert args.training_script_args == ["profile", "--output", f"{out}/node1-rank%q{{RANK}}",
                                         "--force-overwrite", "true", sys.executable, "-u", *SCRIPT]
    assert (args.nnodes, args.node_rank) == ("2", 1)
    assert str(out / "README") in p.launch.files  # the folder is made before the launch


@pytest.mark.launchers
def test_deepspeed_and_accelerate_use_their_no_python_switch(profilers):
    runner = pytest.importorskip("deepspeed.launcher.runner")
    launch = pytest.importorskip("accelerate.commands.launch")
    ds = plan("deepspeed", "rocprofv3", profilers).launch.argv
    args = runner.parse_args(ds[1:])
    assert args.no_python and args.user_script == "rocprofv3"
    assert args.user_args[-4:] == [sys.executable, "-u", *SCRIPT][-4:] and "--" in args.user_args
    acc = plan("accelerate", "nsys", profilers).launch.argv
    args = launch.launch_command_parser().parse_args(acc[2:])
    assert args.no_python and args.training_script == "nsys"


def test_a_plain_command_is_prefixed(profilers):
    argv = plan("command", "rocprofv3", profilers).launch.argv
    assert argv[0] == "rocprofv3" and argv[-3:] == SCRIPT
    assert "node1-rank%env{RANK}%" in argv


def test_a_missing_profiler_is_exit_127_naming_it(tmp_path):
    """The start refuses it before any wait (``start_problem``); the plan, often read off the node, warns
    (walk8 B35: --explain itself exited 127)."""
    from nodeweave.entrypoint import parse
    from nodeweave.entrypoint.running.profile import profiler_missing

    env = {"PATH": str(tmp_path), "TMPDIR": str(tmp_path)}
    made = plan("torchrun", "nsys", env)
    assert any("'nsys'" in w and "exit 127" in w for w in made.warnings), made.warnings
    why, code = profiler_missing(parse(["--profile", "nsys", "--", *SCRIPT], env))
    assert code == 127 and "'nsys'" in why


@pytest.mark.launchers
def test_the_profilers_own_options_replace_the_defaults_and_keep_nodeweaves_output(profilers, tmp_path):
    """rocprofv3 with an input file and no --stats (the seed's -i/--stats toggles); nsys with its traces."""
    run = pytest.importorskip("torch.distributed.run")
    env = {**profilers, "NODEWEAVE_PROFILE_OPTIONS": "--kernel-trace -i /workspace/counters.yaml"}
    args = run.get_args_parser().parse_args(plan("torchrun", "rocprofv3", env).launch.argv[1:])
    out = tmp_path / "nodeweave" / "runs" / "r1" / "profile"
    assert args.training_script == "rocprofv3" and args.training_script_args[:7] == [
        "--kernel-trace", "-i", "/workspace/counters.yaml", "--output-directory", str(out),
        "--output-file", "node1-rank%env{RANK}%"]
    assert "--stats" not in args.training_script_args
    env = {**profilers, "NODEWEAVE_PROFILE_OPTIONS": "--trace=cuda,nvtx,osrt --stats=true"}
    argv = plan("torchrun", "nsys", env).launch.argv
    assert argv[argv.index("nsys"):argv.index("nsys") + 4] == ["nsys", "profile", "--trace=cuda,nvtx,osrt",
                                                                "--stats=true"]


@pytest.mark.parametrize("tool, option", [("nsys", "--output=/tmp/x"), ("nsys", "-o"), ("rocprofv3", "-d"),
                                          ("rocprofv3", "--output-file")])
def test_an_option_that_moves_the_output_is_refused(profilers, tool, option):
    with pytest.raises(EntrypointError) as err:
        plan("torchrun", tool, {**profilers, "NODEWEAVE_PROFILE_OPTIONS": f"{option} somewhere"})
    assert err.value.exit_code == 2 and "nodeweave collects" in str(err.value)
