"""Every launcher command line the plan builds, parsed by the launcher's own parser."""

import shlex
from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan

pytestmark = pytest.mark.launchers
FIX = Path(__file__).parent / "fixtures" / "synthetic"
SCRIPT = ["train.py", "--lr", "3e-4", "--config", "c.yaml"]


def plan(fixture, launcher, argv=(), **env):
    env.setdefault("NODEWEAVE_LAUNCHER", launcher)
    return make_plan([*argv, "--", *SCRIPT], env=env, sysroot=str(FIX / fixture))


@pytest.fixture(scope="module")
def torchrun():
    run = pytest.importorskip("torch.distributed.run")
    return run


def test_torchrun_static(torchrun):
    p = plan("hgx-h100", "torchrun", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", NODEWEAVE_MAX_RESTARTS="3")
    assert p.launch.argv[0] == "torchrun"
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    assert (args.nnodes, args.node_rank, args.master_addr, args.master_port) == ("2", 1, "hgx-a00", 29500)
    assert (args.nproc_per_node, args.rdzv_backend, args.max_restarts) == ("8", "static", 3)
    assert args.local_addr == "10.10.0.11"
    assert (args.training_script, args.training_script_args) == ("train.py", SCRIPT[1:])
    config, cmd, cmd_args = torchrun.config_from_args(args)
    assert (config.min_nodes, config.max_nodes, config.nproc_per_node) == (2, 2, 8)
    assert config.rdzv_endpoint == "hgx-a00:29500"
    assert cmd_args[-len(SCRIPT):] == SCRIPT


def test_torchrun_elastic_c10d(torchrun):
    p = plan("sts-h100-roce", "torchrun", NODEWEAVE_NNODES="2:6", NODEWEAVE_SERVICE="llama",
             NODEWEAVE_MASTER_PORT="29400")
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    assert (args.nnodes, args.rdzv_backend, args.rdzv_id) == ("2:6", "c10d", "llama")
    assert args.rdzv_endpoint == "llama-0.llama.training.svc.cluster.local:29400"
    config, _, cmd_args = torchrun.config_from_args(args)
    assert (config.min_nodes, config.max_nodes, config.nproc_per_node) == (2, 6, 4)
    assert cmd_args[-len(SCRIPT):] == SCRIPT


def test_torchrun_elastic_master_declares_itself_host(torchrun):
    p = plan("cpu-only", "torchrun", NODEWEAVE_NNODES="1:2", NODE_RANK="0", MASTER_ADDR="192.168.1.40")
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    config, _, _ = torchrun.config_from_args(args)
    assert config.rdzv_configs["is_host"] == "true"
    assert config.rdzv_configs["keep_alive_max_attempt"] == "12"


def _c10d_settings(config):
    """What torch's own c10d rendezvous handler makes of a launch config (a real store on loopback)."""
    from datetime import timedelta

    from torch.distributed import TCPStore
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10))
    configs = {k: v for k, v in config.rdzv_configs.items() if k != "is_host"}
    params = RendezvousParameters(backend="c10d", endpoint=config.rdzv_endpoint, run_id=config.run_id,
                                  min_nodes=config.min_nodes, max_nodes=config.max_nodes, **configs)
    return create_handler(store, C10dRendezvousBackend(store, config.run_id), params)._settings


def test_elastic_keep_alive_outlasts_a_stalled_store(torchrun):
    """A late node must not find the running nodes "dead" after a 20 s store stall (docs/engine.md): torch's
    handler reads nodeweave's keep-alive setting as 60 s without a keep-alive, on every node."""
    for env in ({"NODE_RANK": "0", "MASTER_ADDR": "192.168.1.40"}, {"NODE_RANK": "1", "MASTER_ADDR": "node-0"}):
        p = plan("cpu-only", "torchrun", NODEWEAVE_NNODES="2:3", **env)
        config, _, _ = torchrun.config_from_args(torchrun.get_args_parser().parse_args(p.launch.argv[1:]))
        settings = _c10d_settings(config)
        assert (settings.keep_alive_interval * settings.keep_alive_max_attempt).total_seconds() == 60
        assert any("keep_alive_max_attempt=12" in note for note in p.launch.notes)


def test_the_spec_rdzv_conf_merges_into_the_plan(torchrun):
    """launcher.options' --rdzv-conf adds to what nodeweave passes (torchrun would keep only the last one)."""
    for options in (["--rdzv-conf", "last_call_timeout=5,keep_alive_max_attempt=3"],
                    ["--rdzv_conf=last_call_timeout=5", "--rdzv-conf=keep_alive_max_attempt=3"]):
        p = plan("cpu-only", "torchrun", NODEWEAVE_LAUNCHER_OPTIONS=shlex.join(options), NODEWEAVE_NNODES="1:2",
                 NODE_RANK="0", MASTER_ADDR="192.168.1.40")
        assert sum(token.startswith("--rdzv") and "conf" in token for token in p.launch.argv) == 1
        config, _, _ = torchrun.config_from_args(torchrun.get_args_parser().parse_args(p.launch.argv[1:]))
        assert config.rdzv_configs["is_host"] == "true"
        settings = _c10d_settings(config)
        assert (settings.keep_alive_max_attempt, settings.timeout.last_call.total_seconds()) == (3, 5)
        assert not any("keep_alive_max_attempt=12" in note for note in p.launch.notes)


def test_pet_variables_alone_give_torchrun_the_same_values(torchrun, monkeypatch):
    p = plan("hgx-h100", "torchrun", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    for var in p.env:
        if var.name.startswith("PET_"):
            monkeypatch.setenv(var.name, var.value)
    args = torchrun.get_args_parser().parse_args(["train.py"])
    assert (args.nnodes, args.node_rank, args.master_addr, args.master_port, args.nproc_per_node) == (
        "2", 1, "hgx-a00", 29500, "8")


def test_torchrun_cpu_demo_line(torchrun):
    p = make_plan(["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1", "--", "train.py"],
                  env={}, sysroot=str(FIX / "cpu-only"))
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    config, _, _ = torchrun.config_from_args(args)
    assert (config.max_nodes, config.nproc_per_node, config.rdzv_endpoint) == (2, 1, "127.0.0.1:29500")


@pytest.fixture(scope="module")
def ds_runner():
    return pytest.importorskip("deepspeed.launcher.runner")


def _hostfile(p, tmp_path):
    (path, content), = p.launch.files.items()
    local = tmp_path / "hostfile"
    local.write_text(content)
    argv = list(p.launch.argv)
    argv[argv.index(path)] = str(local)
    return argv, content


def test_deepspeed_no_ssh_with_generated_hostfile(ds_runner, tmp_path):
    p = plan("sts-h100-roce", "deepspeed", NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama",
             NODEWEAVE_NPROC_PER_NODE="4")
    argv, content = _hostfile(p, tmp_path)
    assert content == "llama-0 slots=4\nllama-1 slots=4\nllama-2 slots=4\nllama-3 slots=4\n"
    assert argv[0] == "deepspeed"
    args = ds_runner.parse_args(argv[1:])
    assert args.no_ssh and args.node_rank == 2
    assert (args.master_addr, args.master_port) == ("llama-0.llama.training.svc.cluster.local", 29500)
    assert (args.user_script, args.user_args) == ("train.py", SCRIPT[1:])
    pool = ds_runner.fetch_hostfile(args.hostfile)
    assert list(pool.items()) == [("llama-0", 4), ("llama-1", 4), ("llama-2", 4), ("llama-3", 4)]
    active = ds_runner.parse_inclusion_exclusion(pool, args.include, args.exclude)
    assert 0 <= args.node_rank < len(active)  # what runner.main asserts for --no_ssh
    assert list(active)[args.node_rank] == "llama-2"


def test_deepspeed_keeps_visible_devices(ds_runner, tmp_path):
    p = plan("hgx-h100", "deepspeed", CUDA_VISIBLE_DEVICES="2,3", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00",
             NODEWEAVE_NPROC_PER_NODE="2")
    argv, content = _hostfile(p, tmp_path)
    # this node's ids kept; another node's are its count's first ids, which DeepSpeed only counts (its ranks come
    # after them): a node's own ids are its own to say (fix13d: every node was written with this node's ids)
    assert content == "node-0 slots=2\nnode-1 slots=4\n"
    args = ds_runner.parse_args(argv[1:])
    active = ds_runner.parse_inclusion_exclusion(ds_runner.fetch_hostfile(args.hostfile), args.include, args.exclude)
    assert active == {"node-0": [0, 1], "node-1": [2, 3]}


def test_deepspeed_slurm_names(ds_runner, tmp_path):
    p = plan("cpu-only", "deepspeed", SLURM_NODEID="1", SLURM_NNODES="3", SLURM_JOB_NODELIST="gpu[07-09]")
    argv, content = _hostfile(p, tmp_path)
    assert content.splitlines() == ["gpu07 slots=1", "gpu08 slots=1", "gpu09 slots=1"]
    args = ds_runner.parse_args(argv[1:])
    assert (args.node_rank, args.master_addr) == (1, "gpu07")


def test_two_jobs_on_one_host_launch_from_their_own_hostfiles():
    """A Slurm node's /tmp (or a bare host's) is shared by every job on it: a second job's hostfile must not
    replace the one the first job's deepspeed reads."""
    def hostfile(**env):
        p = plan("cpu-only", "deepspeed", SLURM_NODEID="0", SLURM_NNODES="2", TMPDIR="/scratch", **env)
        (path, _), = p.launch.files.items()
        assert p.launch.argv[p.launch.argv.index("--hostfile") + 1] == path
        return path

    first = hostfile(SLURM_JOB_ID="4101", SLURM_JOB_NODELIST="gpu[07-08]")
    second = hostfile(SLURM_JOB_ID="4102", SLURM_JOB_NODELIST="gpu[07-08]")
    assert first == "/scratch/nodeweave/jobs/4101-29500/hostfile"
    assert second == "/scratch/nodeweave/jobs/4102-29500/hostfile"
    odd = hostfile(NODEWEAVE_JOB_ID="team/run 1", SLURM_JOB_NODELIST="gpu[07-08]")
    assert odd == "/scratch/nodeweave/jobs/team_run_1-29500/hostfile", "a job id is one path component"


@pytest.fixture(scope="module")
def accelerate_launch():
    return pytest.importorskip("accelerate.commands.launch")


def test_accelerate_multi_node(accelerate_launch):
    p = plan("hgx-h100", "accelerate", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", NODEWEAVE_MAX_RESTARTS="1")
    assert p.launch.argv[:2] == ["accelerate", "launch"]
    args = accelerate_launch.launch_command_parser().parse_args(p.launch.argv[2:])
    assert (args.num_machines, args.machine_rank, args.num_processes) == (2, 1, 16)
    assert (args.main_process_ip, args.main_process_port) == ("hgx-a00", 29500)
    assert args.multi_gpu and args.max_restarts == 1
    assert (args.training_script, args.training_script_args) == ("train.py", SCRIPT[1:])


def test_accelerate_slurm_cpu_validates(accelerate_launch, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no user accelerate config
    p = plan("cpu-only", "accelerate", SLURM_NODEID="0", SLURM_NNODES="2", SLURM_JOB_NODELIST="cpu[1-2]")
    args = accelerate_launch.launch_command_parser().parse_args(p.launch.argv[2:])
    assert (args.num_machines, args.machine_rank, args.main_process_ip, args.num_processes) == (2, 0, "cpu1", 2)
    args, defaults, _ = accelerate_launch._validate_launch_command(args)
    assert args.multi_gpu and args.num_processes == 2 and defaults is None


def test_command_launcher_runs_the_command_as_given():
    p = plan("cpu-only", "command", NNODES="2", NODE_RANK="0", MASTER_ADDR="192.168.1.40")
    assert p.launch.argv == SCRIPT
    exported = {v.name: v.value for v in p.env if v.action == "export"}
    assert exported["MASTER_ADDR"] == "192.168.1.40" and exported["WORLD_SIZE"] == "2"


# --- DeepSpeed with uneven GPU counts: every node writes the hostfile from its own count ----------------


def test_deepspeed_refuses_a_node_with_fewer_gpus_than_the_spec_names_both_numbers():
    """Node 1 of two with 1 usable GPU where the spec says 2: its hostfile would say slots=2, its processes hang."""
    from nodeweave.entrypoint import EntrypointError

    with pytest.raises(EntrypointError) as err:
        plan("hgx-h100", "deepspeed", CUDA_VISIBLE_DEVICES="0", NODEWEAVE_NPROC_PER_NODE="2", NNODES="2",
             NODE_RANK="1", MASTER_ADDR="hgx-a00")
    assert err.value.exit_code == 3
    assert "2 processes per node (from NODEWEAVE_NPROC_PER_NODE=2) but only 1 usable GPU(s)" in str(err.value)


def test_deepspeed_refuses_auto_on_several_gpu_nodes():
    """With auto, two nodes with 2 and 1 GPUs wrote slots=2,slots=2 and slots=1,slots=1: the world sizes disagreed."""
    from nodeweave.entrypoint import EntrypointError

    for visible in ("0,1", "0"):
        with pytest.raises(EntrypointError) as err:
            plan("hgx-h100", "deepspeed", CUDA_VISIBLE_DEVICES=visible, NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
        assert err.value.exit_code == 3 and "'auto' on 2 nodes" in str(err.value)
        assert "NODEWEAVE_NPROC_PER_NODE" in str(err.value)


def test_deepspeed_auto_is_fine_on_one_node_and_on_cpu_nodes(ds_runner):
    assert plan("hgx-h100", "deepspeed", CUDA_VISIBLE_DEVICES="0,1").launch.files
    p = plan("cpu-only", "deepspeed", NNODES="2", NODE_RANK="0", MASTER_ADDR="192.168.1.40")
    assert list(p.launch.files.values()) == ["node-0 slots=1\nnode-1 slots=1\n"]


def test_accelerate_on_cpu_turns_on_its_own_cpu_switch(accelerate_launch):
    """Without ACCELERATE_USE_CPU every rank sees DistributedType.NO and trains alone (tests/e2e proves it runs)."""
    p = plan("cpu-only", "accelerate", NNODES="2", NODE_RANK="0", MASTER_ADDR="192.168.1.40",
             NODEWEAVE_NPROC_PER_NODE="2")
    exported = {v.name: v.value for v in p.env if v.action == "export"}
    assert exported["ACCELERATE_USE_CPU"] == "true"
    args = accelerate_launch.launch_command_parser().parse_args(p.launch.argv[2:])
    assert args.multi_gpu and not args.cpu and args.num_processes == 4
    gpu = plan("hgx-h100", "accelerate", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    assert "ACCELERATE_USE_CPU" not in {v.name for v in gpu.env}
    mine = plan("cpu-only", "accelerate", ACCELERATE_USE_CPU="false")
    assert "ACCELERATE_USE_CPU" not in {v.name for v in mine.env}  # your value wins


def test_elastic_needs_torchrun():
    from nodeweave.entrypoint import UsageError
    with pytest.raises(UsageError, match="needs launcher torchrun"):
        plan("cpu-only", "deepspeed", NNODES="1:2", NODE_RANK="0", MASTER_ADDR="x")
