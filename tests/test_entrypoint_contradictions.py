"""Values that contradict each other or the machine are refused, one case per rule, on captured nodes.

Exit 2 for a malformed value, 3 for a contradiction; each message names the
variable, its value and what would be accepted (docs/entrypoint.md, "Refused
before anything starts").
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.entrypoint import EntrypointError, make_plan
from nodeweave.entrypoint.errors import EXIT_TOPOLOGY, EXIT_USAGE
from nodeweave.entrypoint.planning.sources import RANK_NAMES, SOURCES

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"
CPU_SELF = "192.168.1.40"  # the cpu-only node's own address


def plan(fixture="cpu-only", argv=(), **env):
    return make_plan([*argv, "--", "train.py"], env=env, sysroot=str(fixture if os.sep in str(fixture) else FIX / fixture))


def refused(code, fixture="cpu-only", argv=(), **env):
    with pytest.raises(EntrypointError) as err:
        plan(fixture, argv, **env)
    assert err.value.exit_code == code, str(err.value)
    assert "\n" not in str(err.value)
    return str(err.value)


def copy(tmp_path, fixture, files):
    """A copy of a captured tree with some files replaced ({path inside it: text})."""
    root = tmp_path / fixture
    shutil.copytree(FIX / fixture, root, symlinks=True)
    for path, text in files.items():
        (root / path).write_text(text)
    return root


# --- a rank claim against the hostname ordinal ----------------------------------------------


@pytest.mark.parametrize("variable", ["NODE_RANK", "NODEWEAVE_NODE_RANK", "JOB_COMPLETION_INDEX"])
def test_a_rank_baked_into_a_statefulset_template_contradicts_the_pod_ordinal(variable):
    msg = refused(EXIT_TOPOLOGY, "sts-h100-roce", NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama", **{variable: "0"})
    assert f"{variable}=0" in msg and "'llama-2' has ordinal 2" in msg and "--node-rank" in msg


def test_the_pod_index_label_is_cross_checked_even_without_a_node_count(tmp_path):
    msg = refused(EXIT_TOPOLOGY, "sts-h100-roce", NODE_RANK="1")  # no count: the old code planned a single node
    assert "NODE_RANK=1" in msg and "ordinal 2" in msg


def test_a_compose_service_hostname_is_its_rank_too():
    msg = refused(EXIT_TOPOLOGY, "compose-sim", NODE_RANK="0", NODEWEAVE_NNODES="2")
    assert "NODE_RANK=0" in msg and "'llama-1' has ordinal 1" in msg and "container" in msg


def test_a_bonded_hosts_name_is_no_ordinal(tmp_path):
    """A server whose address sits on bond0 (virtual) above its NICs is still host networking: gpu-07 is a name."""
    root = copy(tmp_path, "cpu-only", {"etc/hostname": "gpu-07\n"})
    route = root / "proc/net/route"
    route.write_text(route.read_text().replace("eth0\t", "bond0\t"))
    bond = root / "sys/devices/virtual/net/bond0"
    shutil.copytree(root / "sys/devices/virtual/net/lo", bond)
    (bond / "type").write_text("1\n")
    (bond / "operstate").write_text("up\n")
    (root / "sys/class/net/bond0").symlink_to("../../devices/virtual/net/bond0")
    p = plan(root, NODE_RANK="3", NNODES="8", MASTER_ADDR="gpu-00")
    assert p.node.interfaces[0].name == "bond0" and p.node.interfaces[0].ipv4 and p.node.interfaces[0].virtual
    assert (p.topology.node_rank.value, p.topology.node_rank.source) == (3, "NODE_RANK=3")
    assert any("'gpu-07' ends in -7" in n and "host networking" in n for n in p.topology.notes)


def test_agreeing_rank_and_ordinal_are_noted():
    t = plan("sts-h100-roce", NODE_RANK="2", NODEWEAVE_NNODES="4").topology
    assert (t.node_rank.value, t.node_rank.source) == (2, "NODE_RANK=2")
    assert any("ordinal of hostname 'llama-2' agrees with NODE_RANK=2" in n for n in t.notes)


def test_kubeflow_names_its_workers_its_own_way(tmp_path):
    """A PyTorchJob's <job>-worker-0 is node rank 1 (the master pod is 0): no contradiction."""
    root = copy(tmp_path, "sts-h100-roce", {"etc/hostname": "job-worker-0\n"})
    t = plan(root, PET_NODE_RANK="1", PET_NNODES="2", PET_MASTER_ADDR="job-master-0").topology
    assert (t.node_rank.value, t.node_rank.source) == (1, "PET_NODE_RANK=1")
    assert any("agrees with PET_NODE_RANK=1 (under torchrun PET_* (Kubeflow), with a master pod" in n
               for n in t.notes), t.notes


def test_a_flag_overrides_the_ordinal_with_a_warning():
    p = plan("sts-h100-roce", ["--node-rank", "3"], NODEWEAVE_NNODES="4")
    assert p.topology.node_rank.value == 3
    (warning,) = [w for w in p.warnings if w.code == "flag-overrides-source"]
    assert "overrides the ordinal of hostname 'llama-2'" in warning


# --- WORLD_SIZE and RANK --------------------------------------------------------------------


@pytest.mark.parametrize("world", ["16", "2"])  # processes, or pods as older Kubeflow counts
def test_world_size_that_fits_is_accepted(world):
    p = plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", WORLD_SIZE=world)
    assert p.topology.world_size == 16


def test_world_size_that_disagrees_with_nodes_times_processes():
    msg = refused(EXIT_TOPOLOGY, "hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", WORLD_SIZE="12")
    assert "WORLD_SIZE=12 contradicts 2 node(s) x 8 process(es)" in msg and "accepted: 16 (processes) or 2 (pods)" in msg


def test_world_size_without_a_node_count():
    msg = refused(EXIT_TOPOLOGY, WORLD_SIZE="4")
    assert "WORLD_SIZE=4 counts more processes than this node's 1" in msg and "set NNODES" in msg


def test_rank_alone_with_a_remote_master_is_no_single_node_run():
    """The old plan: a single node (torchrun --nnodes 1) still pointing at 10.0.0.1."""
    msg = refused(EXIT_TOPOLOGY, RANK="1", MASTER_ADDR="10.0.0.1")
    assert "RANK=1 is a rank beyond this node's 1 process(es)" in msg and "no node count is set" in msg
    msg = refused(EXIT_TOPOLOGY, MASTER_ADDR="10.0.0.1")
    assert "MASTER_ADDR=10.0.0.1 names another host as the master" in msg


@pytest.mark.parametrize("master", ["127.0.0.1", "localhost", CPU_SELF])
def test_a_master_on_this_node_is_a_single_node_run(master):
    t = plan(MASTER_ADDR=master).topology
    assert (t.nnodes.value, t.master_addr.value) == ("1", master)


@pytest.mark.parametrize("rank", ["1", "8", "15"])  # the pod's rank, or a global rank of its processes
def test_rank_that_fits_the_node_rank(rank):
    assert plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", RANK=rank).topology.node_rank.value == 1


def test_rank_that_contradicts_the_node_rank():
    msg = refused(EXIT_TOPOLOGY, "hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", RANK="3")
    assert "RANK=3 contradicts node rank 1" in msg and "accepted: 1 (this pod's rank) or 8..15" in msg


def test_malformed_world_size_is_exit_2():
    assert "WORLD_SIZE=two" in refused(EXIT_USAGE, NNODES="1", WORLD_SIZE="two")


# --- MASTER_ADDR that is not a host ---------------------------------------------------------


@pytest.mark.parametrize("value,why", [
    ("10.0.0.1:29500", "holds a port"), ("head node", "holds spaces"), ("höst", "non-ASCII"),
    ("h\udcffst", "not UTF-8"), ("[fd00::1]:29500", "holds a port"), ("a..b", "label"), ("bad/host", "characters"),
])
def test_a_master_address_that_is_no_host_is_refused_before_the_wait(value, why):
    msg = refused(EXIT_USAGE, NNODES="2", NODE_RANK="1", MASTER_ADDR=value)
    assert "(from MASTER_ADDR=" in msg and why in msg and "accepted: a host name" in msg


@pytest.mark.parametrize("value", ["fd00::1", "gpu01.cluster.example.", "my_service", "10.0.0.1"])
def test_host_names_and_addresses_are_accepted(value):
    assert plan(NNODES="2", NODE_RANK="1", MASTER_ADDR=value).topology.master_addr.value == value


def test_two_different_master_addresses_contradict():
    msg = refused(EXIT_TOPOLOGY, NNODES="2", NODE_RANK="1", MASTER_ADDR="10.0.0.1", PET_MASTER_ADDR="10.0.0.2")
    assert "MASTER_ADDR=10.0.0.1" in msg and "PET_MASTER_ADDR=10.0.0.2" in msg


def test_non_utf8_master_address_through_the_real_command_is_one_line_and_immediate(tmp_path):
    (tmp_path / "train.py").write_text("")
    env = {b"PATH": os.environb[b"PATH"], b"PYTHONPATH": str(SRC).encode(), b"NNODES": b"2", b"NODE_RANK": b"1",
           b"MASTER_ADDR": b"h\xffst"}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"), "--",
                          "train.py"], env=env, cwd=tmp_path, timeout=30, text=False)
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == EXIT_USAGE and err.count("\n") == 1 and "Traceback" not in err
    assert "not UTF-8" in err and "waiting" not in err


# --- the machine: interfaces, GPUs, the sysroot ------------------------------------------------


@pytest.mark.parametrize("argv,env,named", [
    ([], {"NODEWEAVE_INTERFACES": "eno1,eth9"}, "NODEWEAVE_INTERFACES=eno1,eth9: eth9"),
    (["--interfaces", "ib0"], {}, "flag --interfaces=ib0: ib0"),
])
def test_an_interface_the_node_does_not_have(argv, env, named):
    msg = refused(EXIT_TOPOLOGY, "hgx-h100", argv, NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", **env)
    assert named in msg and "accepted: docker0, eno1" in msg


@pytest.mark.parametrize("fixture,variable,value,bad", [
    ("hgx-h100", "CUDA_VISIBLE_DEVICES", "0,9", "9"),
    ("hgx-h100", "CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000000", "GPU-0000"),
    ("mi300x", "HIP_VISIBLE_DEVICES", "7,8", "8"),
    ("mi300x", "ROCR_VISIBLE_DEVICES", "12", "12"),
])
def test_visible_devices_beyond_the_gpus_present(fixture, variable, value, bad):
    msg = refused(EXIT_TOPOLOGY, fixture, **{variable: value})
    assert f"{variable}={value}: {bad}" in msg and "names no GPU of this node, which has 8" in msg
    assert "accepted: indices 0..7" in msg


@pytest.mark.parametrize("value,count", [("-1", 0), ("NoDevFiles", 0), ("", 0), ("2,3", 2)])
def test_visible_devices_that_hide_gpus_on_purpose_are_kept(value, count):
    assert plan("hgx-h100", CUDA_VISIBLE_DEVICES=value).node.gpus.count == count


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_a_sysroot_that_does_not_exist(tmp_path, how):
    missing = str(tmp_path / "nope")
    argv, env = (["--sysroot", missing], {}) if how == "flag" else ([], {"NODEWEAVE_SYSROOT": missing})
    out = cli_run.run([*cli_run.ENTRYPOINT, *argv, "--explain", "--", "t.py"],
                         env={"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), **env},
                         timeout=30)
    assert out.returncode == EXIT_USAGE and out.stderr.count("\n") == 1, out.stderr
    assert f"{missing!r}" in out.stderr and "does not exist" in out.stderr and "accepted:" in out.stderr


# --- an empty NCCL_IB_HCA ------------------------------------------------------------------------


def test_an_empty_nccl_ib_hca_is_warned_in_explain_doctor_and_the_start_up_line(tmp_path):
    from nodeweave.doctor import diagnose

    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NCCL_IB_HCA": ""}
    explain = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "hgx-h100"),
                              "--explain", "--", "t.py"], env=env, timeout=30)
    assert "NCCL_IB_HCA is set but empty" in explain.stdout
    start = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "hgx-h100"),
                            "--launcher", "command", "--", "true"], env=env, timeout=30)
    assert start.returncode == 0 and "warning: NCCL_IB_HCA is set but empty" in start.stderr
    (finding,) = [f for f in diagnose(str(FIX / "hgx-h100"), {"NCCL_IB_HCA": ""}).findings if f.code == "ib-hca-empty"]
    assert finding.severity == "warning" and "exact list" in finding.action


# --- Slurm ----------------------------------------------------------------------------------------


def test_slurm_rank_from_slurmd_nodename_without_slurm_nodeid():
    t = plan(SLURMD_NODENAME="gpu03", SLURM_JOB_NODELIST="gpu[01-04]", SLURM_NNODES="4").topology
    assert (t.node_rank.value, t.node_rank.source) == (2, "position of SLURMD_NODENAME=gpu03 in SLURM_JOB_NODELIST")
    assert t.master_addr.value == "gpu01"


def test_slurm_rank_from_the_hostname_without_slurm_nodeid(tmp_path):
    root = copy(tmp_path, "cpu-only", {"etc/hostname": "gpu02.cluster\n"})
    t = plan(root, SLURM_JOB_NODELIST="gpu[01-04]").topology
    assert (t.node_rank.value, t.nnodes.value) == (1, "4")
    assert t.node_rank.source == "position of hostname 'gpu02' in SLURM_JOB_NODELIST"


def test_slurmd_nodename_outside_the_node_list():
    msg = refused(EXIT_TOPOLOGY, SLURMD_NODENAME="gpu09", SLURM_JOB_NODELIST="gpu[01-04]")
    assert "SLURMD_NODENAME=gpu09 is not in SLURM_JOB_NODELIST=gpu[01-04]" in msg


@pytest.mark.parametrize("variable,value", [("SLURM_NTASKS_PER_NODE", "8"), ("SLURM_TASKS_PER_NODE", "2(x3)"),
                                            ("SLURM_STEP_TASKS_PER_NODE", "1,2")])
def test_several_slurm_tasks_per_node_would_start_several_launchers(variable, value):
    msg = refused(EXIT_TOPOLOGY, SLURM_NODEID="0", SLURM_JOB_NODELIST="n[1-3]", **{variable: value})
    assert f"{variable}={value}" in msg and "srun --ntasks-per-node=1" in msg


def test_a_command_may_run_once_per_slurm_task():
    p = plan(NODEWEAVE_LAUNCHER="command", SLURM_NODEID="0", SLURM_JOB_NODELIST="n[1-3]", SLURM_NTASKS_PER_NODE="4")
    assert p.launch.launcher == "command" and p.topology.nnodes.value == "3"


def test_slurm_count_and_node_list_must_agree():
    msg = refused(EXIT_TOPOLOGY, SLURM_NODEID="0", SLURM_NNODES="3", SLURM_JOB_NODELIST="n[1-2]")
    assert "SLURM_NNODES=3" in msg and "hosts in SLURM_JOB_NODELIST" in msg


def test_a_hostfile_with_uneven_slots(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{CPU_SELF} slots=2\nother slots=1\n")
    msg = refused(EXIT_TOPOLOGY, NODEWEAVE_HOSTFILE=str(hostfile))
    assert f"{CPU_SELF} slots=2, other slots=1" in msg


# --- the StatefulSet master's cluster domain --------------------------------------------------------


def test_cluster_domain_from_the_pods_resolv_conf(tmp_path):
    root = copy(tmp_path, "sts-h100-roce", {"etc/resolv.conf": (
        "search training.svc.corp.example svc.corp.example corp.example\nnameserver 172.30.0.10\noptions ndots:5\n")})
    t = plan(root, NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama").topology
    assert t.master_addr.value == "llama-0.llama.training.svc.corp.example"
    assert "cluster domain from the search list of /etc/resolv.conf (svc.corp.example)" in t.master_addr.source


def test_cluster_domain_setting_wins():
    t = plan("sts-h100-roce", NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama", NODEWEAVE_CLUSTER_DOMAIN="k8s.lab").topology
    assert t.master_addr.value == "llama-0.llama.training.svc.k8s.lab"
    assert "cluster domain from NODEWEAVE_CLUSTER_DOMAIN" in t.master_addr.source


def test_cluster_domain_defaults_to_cluster_local_without_a_search_list():
    t = plan(POD_NAME="llama-1", POD_NAMESPACE="research", NODEWEAVE_SERVICE="llama", NODEWEAVE_NNODES="2").topology
    assert t.master_addr.value == "llama-0.llama.research.svc.cluster.local"
    assert "default cluster.local" in t.master_addr.source


def test_a_malformed_cluster_domain():
    msg = refused(EXIT_USAGE, NODEWEAVE_CLUSTER_DOMAIN="corp example")
    assert "NODEWEAVE_CLUSTER_DOMAIN" in msg and "'corp example'" in msg and "accepted: a DNS domain" in msg


# --- the table is the only list of sources ------------------------------------------------------------


def test_the_no_rank_message_lists_every_rank_source_of_the_table():
    msg = refused(EXIT_TOPOLOGY, "mi300x", NNODES="2", MASTER_ADDR="mi300-00")
    for name in RANK_NAMES:
        assert name in msg
    assert len(RANK_NAMES) >= 11 and [s.name for s in SOURCES][-1] == "hostname ordinal"


def test_the_manual_names_every_rule_code_and_every_rank_variable():
    from nodeweave.entrypoint.planning.rules import RULES, NOTICES

    manual = (Path(__file__).resolve().parents[1] / "docs/entrypoint.md").read_text()
    for rule in RULES + NOTICES:
        assert f"`{rule.code}`" in manual, rule.code
    for name in RANK_NAMES:
        assert f"`{name.split()[0]}`" in manual, name


# One environment per row of SOURCES that names this node's rank on its own (docs/entrypoint.md's table).
ONLY = {
    "flags": ([("--node-rank", "1"), ("--nnodes", "2"), ("--master-addr", "m")], {}),
    "NODEWEAVE_* variables": ([], {"NODEWEAVE_NODE_RANK": "1", "NODEWEAVE_NNODES": "2", "NODEWEAVE_MASTER_ADDR": "m"}),
    "plain variables": ([], {"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "m"}),
    "torchrun PET_* (Kubeflow)": ([], {"PET_NODE_RANK": "1", "PET_NNODES": "2", "PET_MASTER_ADDR": "m"}),
    "Indexed Job / JobSet": ([], {"JOB_COMPLETION_INDEX": "1", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "m"}),
    "StatefulSet pod index": ([], {"NODEWEAVE_POD_INDEX": "1", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "m"}),
    "LeaderWorkerSet": ([], {"LWS_WORKER_INDEX": "1", "LWS_GROUP_SIZE": "2", "LWS_LEADER_ADDRESS": "m"}),
    "Volcano": ([], {"VC_TASK_INDEX": "1", "VC_WORKER_HOSTS": "m,w1"}),
    "SkyPilot": ([], {"SKYPILOT_NODE_RANK": "1", "SKYPILOT_NODE_IPS": "m\n10.0.0.2\n"}),
    "dstack": ([], {"DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "2", "DSTACK_MASTER_NODE_IP": "m"}),
    "AWS Batch": ([], {"AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_NUM_NODES": "2",
                       "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0", "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "m"}),
    "Google Cloud Batch": ([], {"BATCH_TASK_INDEX": "1", "BATCH_TASK_COUNT": "2", "BATCH_HOSTS_FILE": "HOSTFILE"}),
    "SageMaker": ([], {"SM_CURRENT_HOST": "w", "SM_HOSTS": '["m", "w"]'}),
    "Azure ML": ([], {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2", "AZ_BATCH_MASTER_NODE": "m:6105"}),
    "Slurm": ([], {"SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "m,w1"}),
    "MPI (Open MPI, PMIx)": ([], {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "MASTER_ADDR": "m"}),
    "hostfile": ([], {"NODEWEAVE_HOSTFILE": "HOSTFILE"}),
    "hostname ordinal": ([], {"POD_NAME": "m-1", "NODEWEAVE_NNODES": "2"}),
}
HOSTFILES = {"NODEWEAVE_HOSTFILE": f"m slots=1\n{CPU_SELF} slots=1\n", "BATCH_HOSTS_FILE": f"m\n{CPU_SELF}\n"}


def _files(env, tmp_path):
    """The environment with each ``HOSTFILE`` value replaced by a written hosts file, this node second."""
    out = dict(env)
    for name, value in env.items():
        if value == "HOSTFILE":
            (tmp_path / name).write_text(HOSTFILES[name])
            out[name] = str(tmp_path / name)
    return out


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_every_row_of_the_table_gives_the_rank_on_its_own(source, tmp_path):
    flags, env = ONLY[source.name]
    p = plan("cpu-only", [a for flag in flags for a in flag], **_files(env, tmp_path))
    t = p.topology
    assert (t.node_rank.value, t.nnodes.value) == (1, "2"), t.node_rank
    assert t.master_addr.value in ("m", "m-0")
    assert t.platform == source.name


# Each platform row against the other sources: (root, env, exit code, what the message must name).
CONFLICTS = {
    "dstack rank vs NODE_RANK": ("cpu-only", {"DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "2", "NODE_RANK": "0",
                                             "DSTACK_MASTER_NODE_IP": "10.0.0.1"},
                                 EXIT_TOPOLOGY, ["NODE_RANK=0", "DSTACK_NODE_RANK=1"]),
    "dstack count vs its IPs": ("cpu-only", {"DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "3",
                                            "DSTACK_NODES_IPS": "10.0.0.1\n10.0.0.2"},
                                EXIT_TOPOLOGY, ["DSTACK_NODES_NUM=3", "lines of DSTACK_NODES_IPS"]),
    "AWS Batch vs the container ordinal": ("compose-sim", {"AWS_BATCH_JOB_NODE_INDEX": "0",
                                                           "AWS_BATCH_JOB_NUM_NODES": "2",
                                                           "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0"},
                                           EXIT_TOPOLOGY, ["AWS_BATCH_JOB_NODE_INDEX=0", "'llama-1' has ordinal 1"]),
    "AWS Batch vs NNODES": ("cpu-only", {"AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_NUM_NODES": "2",
                                         "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0", "NNODES": "4",
                                         "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.0.1"},
                            EXIT_TOPOLOGY, ["NNODES=4", "AWS_BATCH_JOB_NUM_NODES=2"]),
    "AWS Batch index not a number": ("cpu-only", {"AWS_BATCH_JOB_NODE_INDEX": "one"}, EXIT_USAGE,
                                     ["AWS_BATCH_JOB_NODE_INDEX='one'", "whole number"]),
    "AWS Batch index without its count": ("cpu-only", {"AWS_BATCH_JOB_NODE_INDEX": "1"}, EXIT_USAGE,
                                          ["AWS_BATCH_JOB_NUM_NODES", "accepted:"]),
    "Google hosts file order vs task index": ("cpu-only", {"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "2",
                                                           "BATCH_HOSTS_FILE": "HOSTFILE"},
                                              EXIT_TOPOLOGY, ["BATCH_TASK_INDEX=0", "position of 192.168.1.40"]),
    "Google task count vs hosts (several tasks a VM)": ("cpu-only", {"BATCH_TASK_INDEX": "1", "BATCH_TASK_COUNT": "4",
                                                                     "BATCH_HOSTS_FILE": "HOSTFILE"},
                                                       EXIT_TOPOLOGY, ["BATCH_TASK_COUNT=4", "hosts in BATCH_HOSTS_FILE"]),
    "SageMaker host not in its hosts": ("cpu-only", {"SM_CURRENT_HOST": "algo-3", "SM_HOSTS": '["algo-1","algo-2"]'},
                                        EXIT_USAGE, ["SM_HOSTS", "'algo-3'"]),
    "SageMaker hosts not JSON": ("cpu-only", {"SM_CURRENT_HOST": "algo-1", "SM_HOSTS": "algo-1,algo-2"},
                                 EXIT_USAGE, ["SM_HOSTS", "not JSON"]),
    "SageMaker vs PET_NODE_RANK": ("cpu-only", {"SM_CURRENT_HOST": "algo-2", "SM_HOSTS": '["algo-1","algo-2"]',
                                                "PET_NODE_RANK": "0", "PET_NNODES": "2"},
                                   EXIT_TOPOLOGY, ["PET_NODE_RANK=0", "position of algo-2 in SM_HOSTS"]),
    "Azure task index vs NODE_RANK": ("cpu-only", {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2",
                                                   "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.4"},
                                      EXIT_TOPOLOGY, ["NODE_RANK=0", "AZ_BATCHAI_TASK_INDEX=1"]),
    "Azure master vs MASTER_ADDR": ("cpu-only", {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2",
                                                 "AZ_BATCH_MASTER_NODE": "10.0.0.4:6105", "MASTER_ADDR": "10.0.0.5"},
                                    EXIT_TOPOLOGY, ["MASTER_ADDR=10.0.0.5", "AZ_BATCH_MASTER_NODE=10.0.0.4:6105"]),
    "Azure task index vs the container ordinal": ("compose-sim", {"AZ_BATCHAI_TASK_INDEX": "0",
                                                                  "AZUREML_NODE_COUNT": "2"},
                                                  EXIT_TOPOLOGY, ["AZ_BATCHAI_TASK_INDEX=0", "ordinal 1"]),
    "MPI several tasks a node": ("cpu-only", {"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
                                              "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "MASTER_ADDR": "10.0.0.1"},
                                 EXIT_TOPOLOGY, ["OMPI_COMM_WORLD_LOCAL_SIZE=4", "mpirun -N 1"]),
    "MPI several tasks a node under Slurm": ("cpu-only", {"SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-2]",
                                                          "PMIX_RANK": "5", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
                                             EXIT_TOPOLOGY, ["OMPI_COMM_WORLD_LOCAL_SIZE=4", "MPI"]),
    "MPI rank vs PMIx rank": ("cpu-only", {"OMPI_COMM_WORLD_RANK": "1", "PMIX_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
                                           "MASTER_ADDR": "10.0.0.1"},
                              EXIT_TOPOLOGY, ["OMPI_COMM_WORLD_RANK=1", "PMIX_RANK=0"]),
    "MPI count vs dstack count": ("cpu-only", {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
                                               "DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "4",
                                               "MASTER_ADDR": "10.0.0.1"},
                                  EXIT_TOPOLOGY, ["DSTACK_NODES_NUM=4", "OMPI_COMM_WORLD_SIZE=2"]),
}


@pytest.mark.parametrize("case", CONFLICTS)
def test_each_platform_conflict_is_refused_and_named(case, tmp_path):
    fixture, env, code, named = CONFLICTS[case]
    msg = refused(code, fixture, **_files(env, tmp_path))
    for text in named:
        assert text in msg, msg


def test_the_conflict_cases_cover_every_platform_row():
    platforms = {"dstack", "AWS Batch", "Google", "SageMaker", "Azure", "MPI"}
    assert {p for p in platforms if any(case.startswith(p) for case in CONFLICTS)} == platforms


@pytest.mark.parametrize("hostname,env,rank,note", [
    ("n2", {"PMIX_RANK": "5", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "n[1-2]"}, 1, None),  # srun --mpi=pmix
    ("algo-2", {"SM_CURRENT_HOST": "algo-2", "SM_HOSTS": '["algo-1","algo-2"]'}, 1, "under SageMaker"),
    ("fleet-1", {"DSTACK_NODE_RANK": "0", "DSTACK_NODES_NUM": "2", "DSTACK_MASTER_NODE_IP": "10.0.0.1"}, 0,
     "under dstack"),
])
def test_what_is_no_conflict(hostname, env, rank, note, tmp_path):
    """A task rank under Slurm, SageMaker's 1-based algo-N, a dstack instance's number: not the node's rank."""
    t = plan(copy(tmp_path, "compose-sim", {"etc/hostname": hostname + "\n"}), **env).topology
    assert t.node_rank.value == rank
    assert note is None or any(note in n for n in t.notes), t.notes


def test_a_command_may_run_once_per_mpi_task():
    p = plan(NODEWEAVE_LAUNCHER="command", OMPI_COMM_WORLD_RANK="5", OMPI_COMM_WORLD_SIZE="8",
             OMPI_COMM_WORLD_LOCAL_SIZE="4", MASTER_ADDR="10.0.0.1")
    assert p.launch.launcher == "command" and p.topology.platform == "MPI (Open MPI, PMIx)"
