"""``launcher.options``: the launcher's own options, placed before the script and read by its own parser.

The spec's options travel as ``NODEWEAVE_LAUNCHER_OPTIONS`` (shell-quoted);
the plan puts them between nodeweave's flags and the script, and torchrun's,
DeepSpeed's and accelerate's parsers must read both. An option nodeweave
passes itself is refused in the spec and, for those only some plans pass, by
the entrypoint. The spellings nodeweave knows for its own options are compared
with the launchers' parsers, so a new alias in a launcher release fails here.
"""

import argparse
import shlex
from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.planning import launcher_options
from nodeweave.entrypoint.errors import UsageError as EntrypointUsageError
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

pytestmark = pytest.mark.launchers
FIX = Path(__file__).parent / "fixtures" / "synthetic"
SCRIPT = ["train.py", "--lr", "3e-4"]


def plan(fixture, launcher, options, **env):
    env.update({"NODEWEAVE_LAUNCHER": launcher, "NODEWEAVE_LAUNCHER_OPTIONS": shlex.join(options)})
    return make_plan(["--no-wait", "--", *SCRIPT], env=env, sysroot=str(FIX / fixture))


def test_accelerate_reads_mixed_precision_and_dynamo_before_the_script():
    accelerate = pytest.importorskip("accelerate.commands.launch")
    p = plan("hgx-h100", "accelerate", ["--mixed_precision", "bf16", "--dynamo_backend", "inductor"],
             NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    args = accelerate.launch_command_parser().parse_args(p.launch.argv[2:])
    assert (args.mixed_precision, args.dynamo_backend, args.machine_rank) == ("bf16", "inductor", 1)
    assert (args.training_script, args.training_script_args) == ("train.py", SCRIPT[1:])


def test_torchrun_reads_log_dir_redirects_and_tee():
    run = pytest.importorskip("torch.distributed.run")
    p = plan("hgx-h100", "torchrun", ["--log-dir", "/workspace/logs/run 1", "--redirects", "3", "--tee", "3"],
             NNODES="2", NODE_RANK="0", MASTER_ADDR="hgx-a00")
    args = run.get_args_parser().parse_args(p.launch.argv[1:])
    assert (args.log_dir, args.redirects, args.tee, args.node_rank) == ("/workspace/logs/run 1", "3", "3", 0)
    assert (args.training_script, args.training_script_args) == ("train.py", SCRIPT[1:])
    config, _, _ = run.config_from_args(args)
    assert config.logs_specs is not None or args.log_dir


def test_deepspeed_takes_the_users_include_when_nodeweave_sets_none(tmp_path):
    """--include names hosts of the hostfile nodeweave writes (node-<i> here; pod, Slurm or hosts-list names elsewhere)."""
    runner = pytest.importorskip("deepspeed.launcher.runner")
    p = plan("hgx-h100", "deepspeed", ["--include", "node-0:1@node-1:1", "--bind_cores_to_rank"],
             NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", NODEWEAVE_NPROC_PER_NODE="2", TMPDIR=str(tmp_path))
    ((path, content),) = p.launch.files.items()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(content)
    args = runner.parse_args(p.launch.argv[1:])
    assert (args.bind_cores_to_rank, args.node_rank) == (True, 1)
    assert (args.user_script, args.user_args) == ("train.py", SCRIPT[1:])
    active = runner.parse_inclusion_exclusion(runner.fetch_hostfile(args.hostfile), args.include, args.exclude)
    assert active == {"node-0": [1], "node-1": [1]}


def test_the_entrypoint_refuses_an_option_this_plan_passes():
    """DeepSpeed's --include is nodeweave's when CUDA_VISIBLE_DEVICES picks the GPUs; so is --exclude then."""
    for option in ("--include", "-i", "--exclude"):
        with pytest.raises(EntrypointUsageError, match=rf"launcher option '{option}' .* sets --include, which nodeweave"):
            plan("hgx-h100", "deepspeed", [option, "x:0"], NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00",
                 NODEWEAVE_NPROC_PER_NODE="2", CUDA_VISIBLE_DEVICES="2,3")
    with pytest.raises(EntrypointUsageError, match=r"--rdzv-conf 'is_host=false' .* sets is_host, which nodeweave"):
        plan("cpu-only", "torchrun", ["--rdzv_conf=is_host=false"], NODEWEAVE_NNODES="1:2", NODE_RANK="1",
             MASTER_ADDR="192.168.1.40")
    for bad, says in ((["--rdzv-conf"], "has no value"), (["--rdzv-conf", "timeout"], "'timeout' is not KEY=VALUE")):
        with pytest.raises(EntrypointUsageError, match=rf"--rdzv-conf.*\(from .*\).*{says}"):
            plan("cpu-only", "torchrun", bad, NODEWEAVE_NNODES="1:2", NODE_RANK="0", MASTER_ADDR="192.168.1.40")
    with pytest.raises(EntrypointUsageError, match=r"need a launcher; launcher command runs the command as given"):
        plan("cpu-only", "command", ["--x"])


def test_options_that_cannot_be_split_name_the_variable():
    with pytest.raises(EntrypointUsageError, match=r"NODEWEAVE_LAUNCHER_OPTIONS.*cannot be split"):
        make_plan(["--no-wait", "--", *SCRIPT], env={"NODEWEAVE_LAUNCHER_OPTIONS": "--note 'unclosed"},
                  sysroot=str(FIX / "cpu-only"))


SPEC = "name: j\nimage: {{variant: cpu}}\nlauncher: {{type: {kind}, script: t.py, options: {options}}}\n"


@pytest.mark.parametrize("kind, options, own", [
    ("torchrun", "[--nnodes, '4']", "--nnodes"),
    ("torchrun", "[--nnode, '4']", "--nnodes"),  # torchrun's parser takes the abbreviation
    ("torchrun", "['--master_port=1234']", "--master-port"),
    ("torchrun", "[--max_restarts, '2']", "--max-restarts"),
    ("deepspeed", "[-H, /tmp/h]", "--hostfile"),
    ("deepspeed", "[--num_accelerators, '2']", "--num_gpus"),
    ("accelerate", "[--num-processes, '8']", "--num_processes"),
    ("accelerate", "[--multi-gpu]", "--multi_gpu"),
])
def test_the_spec_refuses_an_option_nodeweave_passes_under_any_spelling(kind, options, own):
    with pytest.raises(UsageError) as caught:
        parse_spec(SPEC.format(kind=kind, options=options), "s.yaml")
    message = str(caught.value)
    assert message.startswith("s.yaml:3: launcher.options[0]: ") and f"sets {kind}'s {own}, which nodeweave" in message
    assert f"accepted: any other {kind} option" in message


def test_accelerate_takes_no_abbreviations_so_a_prefix_is_its_own_option():
    spec = parse_spec(SPEC.format(kind="accelerate", options="[--num_cpu_threads_per_process, '8']"), "s.yaml")
    assert spec.launcher.options == ("--num_cpu_threads_per_process", "8")


def _parser_spellings(parser, dests):
    return {a.dest: tuple(a.option_strings) for a in parser._actions if a.dest in dests}


def _deepspeed_parser():
    runner = pytest.importorskip("deepspeed.launcher.runner")
    grabbed = {}
    original = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        grabbed["parser"] = self
        return original(self, args, namespace)

    argparse.ArgumentParser.parse_args = grab
    try:
        runner.parse_args(["x.py"])
    finally:
        argparse.ArgumentParser.parse_args = original
    return grabbed["parser"]


def test_nodeweave_knows_every_spelling_the_launchers_accept():
    run = pytest.importorskip("torch.distributed.run")
    accelerate = pytest.importorskip("accelerate.commands.launch")
    parsers = {"torchrun": run.get_args_parser(), "deepspeed": _deepspeed_parser(),
               "accelerate": accelerate.launch_command_parser()}
    for launcher, groups in launcher_options.ALIASES.items():
        parser = parsers[launcher]
        by_option = {s: tuple(a.option_strings) for a in parser._actions for s in a.option_strings}
        for group in groups:
            assert set(by_option[group[0]]) == set(group), (launcher, group, by_option[group[0]])
        assert (launcher in launcher_options.ABBREVIATES) == parser.allow_abbrev, launcher


def test_the_spec_table_of_each_launchers_options_is_its_parsers_own():
    """launcher.options are checked against a stdlib table (the spec never imports torch); the table must be the
    installed parsers' option set exactly, so a launcher release that adds or drops an option fails here."""
    from nodeweave.entrypoint.planning import launcher_table

    run = pytest.importorskip("torch.distributed.run")
    accelerate = pytest.importorskip("accelerate.commands.launch")
    parsers = {"torchrun": run.get_args_parser(), "deepspeed": _deepspeed_parser(),
               "accelerate": accelerate.launch_command_parser()}
    assert set(launcher_table.OPTIONS) == set(parsers)
    for launcher, parser in parsers.items():
        options = {s for action in parser._actions for s in action.option_strings}
        missing, extra = options - launcher_table.OPTIONS[launcher], launcher_table.OPTIONS[launcher] - options
        assert not missing and not extra, (launcher, "not in the table:", sorted(missing), "gone:", sorted(extra))


def test_the_spec_reads_the_table_without_importing_a_launcher():
    import subprocess
    import sys

    code = ("import sys; from nodeweave.spec import parse_spec; parse_spec('name: j\\nimage: {variant: cpu}\\n"
            "launcher: {script: t.py, options: [--log-dir, /x]}\\n'); "
            "print(sorted(m for m in ('torch', 'deepspeed', 'accelerate') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
