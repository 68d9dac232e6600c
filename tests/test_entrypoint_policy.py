"""The NCCL/RCCL environment policy (FACTS.md §3), row by row, on captured nodes."""

from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan

FIX = Path(__file__).parent / "fixtures" / "synthetic"
HGX = {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "hgx-a00"}
MI300 = {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "mi300-00"}
STS = {"NODEWEAVE_NNODES": "4", "NODEWEAVE_SERVICE": "llama"}


def plan(fixture, argv=(), **env):
    return make_plan([*argv, "--", "train.py"], env=env, sysroot=str(FIX / fixture))


def set_vars(p):
    return {v.name: v.value for v in p.env if v.action == "set"}


def var(p, name):
    return next(v for v in p.env if v.name == name)


def test_hgx_sets_socket_interface_and_drops_the_storage_fabric():
    p = plan("hgx-h100", **HGX)
    assert set_vars(p) == {
        "NCCL_SOCKET_IFNAME": "=eno1",
        "GLOO_SOCKET_IFNAME": "eno1",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
        "OMP_NUM_THREADS": "28",
    }
    assert "Ethernet port beside the InfiniBand fabric" in var(p, "NCCL_IB_HCA").reason
    assert p.warnings == []


def test_never_sets_debugging_variables():
    for fixture, env in (("hgx-h100", HGX), ("mi300x", MI300), ("sts-h100-roce", STS), ("cloud-vm", {})):
        names = set(set_vars(plan(fixture, **env)))
        assert not names & {"NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
                            "NCCL_NET_GDR_LEVEL", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_CROSS_NIC"}


def test_single_node_sets_no_network_variables():
    p = plan("hgx-h100")
    assert set_vars(p) == {"OMP_NUM_THREADS": "28"}


def test_port_down_is_left_to_nccl_and_warned():
    p = plan("hgx-h100-port-down", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    # the down port is not listed (NCCL skips it), nor is the storage fabric
    assert set_vars(p)["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_4,mlx5_5,mlx5_6,mlx5_7"
    assert any("mlx5_3:1" in w and "7 usable rail(s)" in w for w in p.warnings)


def test_statefulset_pod_keeps_nccl_on_its_four_vfs_exactly():
    p = plan("sts-h100-roce", **STS)
    s = set_vars(p)
    # '=' matters: plain mlx5_1 would also match mlx5_10 and mlx5_11
    assert s["NCCL_IB_HCA"] == "=mlx5_6,mlx5_7,mlx5_10,mlx5_11"
    assert "netdev is not in this network namespace" in var(p, "NCCL_IB_HCA").reason
    assert "NCCL_IB_GID_INDEX" not in s  # NCCL 2.21.5 from the pip wheel picks it itself
    assert p.node.libraries["nccl"] == "2.21.5"
    assert s["NCCL_SOCKET_IFNAME"] == "=eth0" and s["OMP_NUM_THREADS"] == "16"


def test_gid_index_only_for_old_libraries():
    p = plan("sts-h100-roce", NODEWEAVE_NCCL_VERSION="2.18.3", **STS)
    assert set_vars(p)["NCCL_IB_GID_INDEX"] == "3"
    assert "2.18.3" in var(p, "NCCL_IB_GID_INDEX").reason
    p = plan("sts-h100-roce", NODEWEAVE_NCCL_VERSION="2.27.7", **STS)
    assert "NCCL_IB_GID_INDEX" not in set_vars(p)


def test_mi300x_rocm_6_2_gets_the_gid_index_and_keeps_channel_experiments():
    p = plan("mi300x", NCCL_MAX_NCHANNELS="32", RCCL_THREADS_PER_BLOCK="512", **MI300)
    s = set_vars(p)
    assert s["NCCL_IB_GID_INDEX"] == "3"
    assert "rocm-6.2.4" in var(p, "NCCL_IB_GID_INDEX").reason
    assert "NCCL_IB_HCA" not in s  # all eight RoCE ports are usable: nothing to drop
    assert s["NCCL_SOCKET_IFNAME"] == "=eno8303"
    kept = {v.name: v.value for v in p.env if v.action == "kept"}
    assert kept == {"NCCL_MAX_NCHANNELS": "32", "RCCL_THREADS_PER_BLOCK": "512"}
    environ = p.environ({"NCCL_MAX_NCHANNELS": "32", "RCCL_THREADS_PER_BLOCK": "512"})
    assert environ["NCCL_MAX_NCHANNELS"] == "32" and environ["RCCL_THREADS_PER_BLOCK"] == "512"


def test_nccl_version_from_the_cuda_image_variable(tmp_path):
    import shutil
    root = tmp_path / "pod"
    shutil.copytree(FIX / "sts-h100-roce", root, symlinks=True)
    shutil.rmtree(root / "usr/local/lib/python3.10")
    p = make_plan(["--", "t.py"], env={**STS, "NCCL_VERSION": "2.19.3-1"}, sysroot=str(root))
    assert set_vars(p)["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_VERSION" not in [v.name for v in p.env]  # information, not a setting to report as kept
    p = make_plan(["--", "t.py"], env={**STS, "NCCL_VERSION": "2.28.3-1"}, sysroot=str(root))
    assert "NCCL_IB_GID_INDEX" not in set_vars(p)
    p = make_plan(["--", "t.py"], env=STS, sysroot=str(root))  # no version anywhere: set it, it is harmless
    assert "version not found" in var(p, "NCCL_IB_GID_INDEX").reason


def test_rocm_6_3_picks_the_gid_itself():
    p = plan("mi300x", NODEWEAVE_RCCL_VERSION="rocm-6.3.1", **MI300)
    assert "NCCL_IB_GID_INDEX" not in set_vars(p)


def test_user_values_win_and_are_reported():
    p = plan("hgx-h100", NCCL_SOCKET_IFNAME="=eno1", NCCL_IB_HCA="=mlx5_0,mlx5_1", OMP_NUM_THREADS="4", **HGX)
    s = set_vars(p)
    assert "NCCL_SOCKET_IFNAME" not in s and "NCCL_IB_HCA" not in s and "OMP_NUM_THREADS" not in s
    assert s["GLOO_SOCKET_IFNAME"] == "eno1"
    kept = {v.name: v for v in p.env if v.action == "kept"}
    assert kept["NCCL_IB_HCA"].value == "=mlx5_0,mlx5_1" and kept["NCCL_IB_HCA"].source == "user"
    assert p.environ({"NCCL_IB_HCA": "=mlx5_0,mlx5_1"})["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1"


@pytest.mark.parametrize("fixture,env,needle", [
    ("hgx-h100", {"NCCL_P2P_DISABLE": "1"}, "NCCL_P2P_DISABLE=1 on a nvswitch node"),
    ("mi300x", {"NCCL_P2P_DISABLE": "1"}, "NCCL_P2P_DISABLE=1 on a xgmi node"),
    ("hgx-h100", {"NCCL_SOCKET_IFNAME": "=eth0"}, "matches no interface here"),
    ("hgx-h100", {"NCCL_SOCKET_IFNAME": "ib"}, "leaves out eno1"),
    ("sts-h100-roce", {"NCCL_IB_HCA": "mlx5_1"}, "without '=' the prefix mlx5_1 also matches mlx5_10, mlx5_11"),
    ("hgx-h100", {"NCCL_IB_HCA": "=mlx5_12"}, "mlx5_12 is not an RDMA device here"),
    ("hgx-h100", {"NCCL_IB_DISABLE": "1"}, "falls back to TCP sockets"),
    ("mi300x", {"NCCL_IB_GID_INDEX": "1"}, "NCCL_IB_GID_INDEX=1, but the RoCE v2 IPv4 GID"),
    ("mi300x", {"HSA_FORCE_FINE_GRAIN_PCIE": "1"}, "this node's GPUs use xGMI"),
])
def test_user_values_known_to_hurt_are_warned(fixture, env, needle):
    topo = {"hgx-h100": HGX, "mi300x": MI300, "sts-h100-roce": STS}[fixture]
    p = plan(fixture, **topo, **env)
    assert any(needle in w for w in p.warnings), p.warnings
    kept = [v.name for v in p.env if v.action == "kept"]
    assert set(env) <= set(kept)


def test_a_loopback_nccl_interface_is_warned_where_nothing_places_a_peer_elsewhere():
    """The master is this node's own address: the job may run on this machine alone, so only warned; with the
    master on another machine the same is refused (tests/test_walk6_entrypoint.py)."""
    p = plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="10.10.0.11", NCCL_SOCKET_IFNAME="lo")
    assert any("loopback cannot reach other nodes" in w for w in p.warnings), p.warnings


def test_p2p_disable_on_pcie_is_not_warned():
    p = plan("cloud-vm", NCCL_P2P_DISABLE="1")
    assert not any("P2P" in w for w in p.warnings)


def test_loopback_master_is_a_local_simulation():
    p = plan("cpu-only", NNODES="2", NODE_RANK="1", MASTER_ADDR="127.0.0.1")
    assert "NCCL_SOCKET_IFNAME" not in set_vars(p)
    assert any("loopback" in n for n in p.topology.notes)


def test_cloud_vm_single_eth0_and_docker_shm_warning():
    p = plan("cloud-vm", NNODES="2", NODE_RANK="0", MASTER_ADDR="10.0.0.5")
    s = set_vars(p)
    assert s == {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "24"}
    assert any("/dev/shm is 64 MiB" in w for w in p.warnings)


def test_cpu_only_gloo_interface_only():
    p = plan("cpu-only", NNODES="2", NODE_RANK="0", MASTER_ADDR="192.168.1.40")
    assert set_vars(p) == {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    assert p.topology.nproc_per_node.value == 1


def test_spec_interfaces_and_hca_exclusions():
    p = plan("hgx-h100", NODEWEAVE_INTERFACES="eno1,ens21f0np0", NODEWEAVE_EXCLUDE_HCAS="mlx5_7", **HGX)
    s = set_vars(p)
    assert s["NCCL_SOCKET_IFNAME"] == "=eno1,=ens21f0np0" and s["GLOO_SOCKET_IFNAME"] == "eno1,ens21f0np0"
    assert s["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6"


def test_no_usable_rdma_port_disables_ib():
    p = plan("sts-h100-roce", NODEWEAVE_EXCLUDE_HCAS="mlx5_6,mlx5_7,mlx5_10,mlx5_11", **STS)
    assert set_vars(p)["NCCL_IB_DISABLE"] == "1"


def test_memlock_warning_with_rdma(tmp_path):
    import shutil
    root = tmp_path / "node"
    shutil.copytree(FIX / "hgx-h100", root, symlinks=True)
    limits = (root / "proc/self/limits").read_text().replace(
        "Max locked memory         unlimited            unlimited", "Max locked memory         65536                65536    ")
    (root / "proc/self/limits").write_text(limits)
    p = make_plan(["--", "t.py"], env=HGX, sysroot=str(root))
    assert any("RLIMIT_MEMLOCK is 64 KiB" in w for w in p.warnings)


def _memlock_node(tmp_path, cap_eff):
    """hgx-h100 with a 64 KiB memlock limit and, when given, /proc/self/status's capability rows (kernel format)."""
    import shutil
    root = tmp_path / "node"
    shutil.copytree(FIX / "hgx-h100", root, symlinks=True)
    limits = (root / "proc/self/limits").read_text().replace(
        "Max locked memory         unlimited            unlimited", "Max locked memory         65536                65536    ")
    (root / "proc/self/limits").write_text(limits)
    if cap_eff is not None:
        status = root / "proc/self/status"
        status.write_text(status.read_text() + f"CapInh:\t0000000000000000\nCapPrm:\t{cap_eff}\nCapEff:\t{cap_eff}\n"
                          "CapBnd:\t00000000a80465fb\nCapAmb:\t0000000000000000\n")
    return root


@pytest.mark.parametrize("cap_eff, warned, says_cap", [
    (None, True, False),  # no capability rows (an old capture): the limit alone decides
    ("0000000000000000", True, True),  # UID 1000 with IPC_LOCK added in Kubernetes: bounding set only
    ("00000000a80465fb", False, False),  # root with IPC_LOCK added: pins past the limit, nothing to say
])
def test_memlock_warning_weighs_an_effective_ipc_lock(tmp_path, cap_eff, warned, says_cap):
    p = make_plan(["--", "t.py"], env=HGX, sysroot=str(_memlock_node(tmp_path, cap_eff)))
    found = [w for w in p.warnings if "RLIMIT_MEMLOCK is 64 KiB" in w]
    assert bool(found) == warned, p.warnings
    assert any("no effective CAP_IPC_LOCK" in w for w in found) == says_cap
    assert p.node.limits.ipc_lock is (None if cap_eff is None else cap_eff != "0000000000000000")


def test_memlock_remedy_names_each_runtime_and_the_spec_field():
    from nodeweave.entrypoint.planning.rules import BY_CODE

    remedy = BY_CODE["memlock-limited"].remedy
    for part in ("--ulimit memlock=-1:-1", "LimitMEMLOCK=infinity", "containerd.service", "crio.conf",
                 "security.ipc_lock: false"):
        assert part in remedy


def _cloud_root(tmp_path, vendor, product, files):
    import shutil
    root = tmp_path / "vm"
    shutil.copytree(FIX / "cloud-vm", root, symlinks=True)
    (root / "sys/devices/virtual/dmi/id/sys_vendor").write_text(vendor + "\n")
    (root / "sys/devices/virtual/dmi/id/product_name").write_text(product + "\n")
    for f in files:
        path = root / f.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("export NCCL_FASTRAK_CTRL_DEV=eth0\n")
    return str(root)


def test_azure_nd_topology_file(tmp_path):
    root = _cloud_root(tmp_path, "Microsoft Corporation", "Virtual Machine", ["/opt/microsoft/ndv5/topo.xml"])
    p = make_plan(["--", "t.py"], env={"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.5"}, sysroot=root)
    assert set_vars(p)["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv5/topo.xml"


def test_gcp_profile_is_sourced_and_nccl_left_alone(tmp_path):
    profile = "/usr/local/nvidia/lib64/nccl-env-profile.sh"
    root = _cloud_root(tmp_path, "Google", "Google Compute Engine", [profile])
    p = make_plan(["--", "t.py"], env={"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.5"}, sysroot=root)
    assert not [n for n in set_vars(p) if n.startswith("NCCL_")]
    assert p.launch.argv[:4] == ["/bin/sh", "-c", '. "$0" && exec "$@"', profile]
    assert p.launch.argv[4] == "torchrun"


def test_aws_efa_exports_no_nccl_tuning(tmp_path):
    import shutil
    root = tmp_path / "p5"
    shutil.copytree(FIX / "hgx-h100", root, symlinks=True)
    (root / "sys/devices/virtual/dmi/id/sys_vendor").write_text("Amazon EC2\n")
    (root / "sys/devices/virtual/dmi/id/product_name").write_text("p5.48xlarge\n")
    for i in range(8):  # the IB devices become EFA devices
        (root / "sys/bus/pci/drivers/efa").mkdir(parents=True, exist_ok=True)
    for link in (root / "sys/devices/pci0000:00").glob("*/driver"):
        if link.readlink().name == "mlx5_core":
            link.unlink()
            link.symlink_to("../../../bus/pci/drivers/efa")
    p = make_plan(["--", "t.py"], env=HGX, sysroot=str(root))
    assert p.node.cloud.efa and p.node.cloud.provider == "aws"
    assert "NCCL_IB_HCA" not in set_vars(p) and "NCCL_IB_GID_INDEX" not in set_vars(p)


@pytest.mark.parametrize("fixture,env", [
    ("hgx-h100", HGX), ("hgx-h100-port-down", HGX), ("sts-h100-roce", STS),
    ("hgx-h100", {**HGX, "NODEWEAVE_EXCLUDE_HCAS": "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5"}),
])
def test_nccl_ib_hca_is_always_the_exact_list_of_ports_to_use(fixture, env):
    """Never an exclusion list: ^= would let in any device nobody reviewed (a VF hot-plugged later)."""
    p = plan(fixture, **env)
    value = set_vars(p)["NCCL_IB_HCA"]
    assert value.startswith("=") and not value.startswith("^")
    listed = value[1:].split(",")
    usable = [n.device for n in p.node.nics if n.active and n.device in listed]
    assert listed == usable  # every listed port exists, is ACTIVE, and the list is exact names
    assert "exactly the" in var(p, "NCCL_IB_HCA").reason


def test_empty_nccl_ib_hca_is_warned_and_kept():
    p = plan("hgx-h100", NCCL_IB_HCA="", **HGX)
    (warning,) = [w for w in p.warnings if w.code == "ib-hca-empty"]
    assert "every RDMA device (10 port(s) here)" in warning
    assert "NCCL_IB_HCA" not in set_vars(p)  # your value still wins
    assert [v.value for v in p.env if v.name == "NCCL_IB_HCA"] == [""]


# -- what the mutation check (benchmarks/mutation_check.py) showed untested -----------------------------------


def _ports(*specs):
    """RdmaPorts from (device, port, link layer, rate): ACTIVE, RoCE ones with a netdev and a v2 GID."""
    from nodeweave.entrypoint.model import RdmaPort

    return [RdmaPort(device=d, port=n, state="ACTIVE", link_layer=layer, rate_gbps=rate, netdev=f"{d}-net",
                     roce_v2_gid_index=3 if layer == "Ethernet" else None) for d, n, layer, rate in specs]


def _classify(ports):
    from types import SimpleNamespace

    from nodeweave.entrypoint.planning.policy import classify_ports
    from nodeweave.entrypoint.planning.settings import parse

    return classify_ports(SimpleNamespace(nics=ports), parse(["--", "t.py"], {}))


def test_a_port_at_exactly_half_the_rails_rate_is_dropped_and_one_above_half_kept():
    usable, dropped = _classify(_ports(("mlx5_0", 1, "InfiniBand", 400), ("mlx5_1", 1, "InfiniBand", 200),
                                       ("mlx5_2", 1, "InfiniBand", 201), ("mlx5_3", 1, "InfiniBand", None)))
    assert [p.device for p in usable] == ["mlx5_0", "mlx5_2", "mlx5_3"]
    assert [(p.device, why) for p, why in dropped] == [("mlx5_1", "200 Gb/s beside 400 Gb/s rails (storage/management)")]


def test_the_fabric_with_the_most_bandwidth_wins_even_with_fewer_ports():
    usable, dropped = _classify(_ports(("mlx5_0", 1, "InfiniBand", 400), ("mlx5_1", 1, "Ethernet", 100),
                                       ("mlx5_2", 1, "Ethernet", 100), ("mlx5_3", 1, "Ethernet", None)))
    assert [p.device for p in usable] == ["mlx5_0"]
    assert sorted(p.device for p, _ in dropped) == ["mlx5_1", "mlx5_2", "mlx5_3"]
    assert _classify([])[0] == []


def test_a_dual_port_card_is_named_with_its_port_in_nccl_ib_hca():
    from nodeweave.entrypoint.planning.policy import _hca_item

    ports = _ports(("mlx5_0", 1, "InfiniBand", 400), ("mlx5_0", 2, "InfiniBand", 400), ("mlx5_1", 1, "InfiniBand", 400))
    assert [_hca_item(p, ports) for p in ports] == ["mlx5_0:1", "mlx5_0:2", "mlx5_1"]


def test_omp_threads_is_at_least_one_and_cpus_over_processes():
    from nodeweave.entrypoint.planning.policy import plan_env

    p = plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    assert var(p, "OMP_NUM_THREADS").value == str(p.node.limits.cpus // p.topology.nproc_per_node.value)
    p.node.limits.cpus = 3  # 8 processes on 3 CPUs: still 1 thread each, never 0
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.detection.sysfs import Root

    settings = parse(["--", "t.py"], {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "hgx-a00"})
    env = {v.name: v.value for v in plan_env(p.node, p.topology, settings, Root(str(FIX / "hgx-h100")))}
    assert str(env["OMP_NUM_THREADS"]) == "1"


def test_a_users_tuning_variable_is_kept_and_called_tuning_and_others_their_value():
    p = plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00", NCCL_ALGO="Ring", NCCL_SOCKET_NTHREADS="4")
    reasons = {v.name: v.reason for v in p.env if v.action == "kept"}
    assert reasons["NCCL_ALGO"].startswith("debugging/tuning variable") and reasons["NCCL_SOCKET_NTHREADS"] == "your value"


def test_the_efa_note_needs_efa_and_the_msccl_note_needs_its_variable():
    p = plan("cloud-vm", NNODES="2", NODE_RANK="1", MASTER_ADDR="10.0.0.5")
    assert not any("AWS EFA" in note for note in p.topology.notes)
    assert not any("MSCCL" in note for note in p.topology.notes)
    kept = plan("cloud-vm", NNODES="2", NODE_RANK="1", MASTER_ADDR="10.0.0.5", RCCL_MSCCL_ENABLE="1")
    assert any(note.startswith("RCCL_MSCCL_ENABLE kept") for note in kept.topology.notes)


def test_the_socket_interface_says_why_it_was_chosen():
    p = plan("hgx-h100", NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00")
    assert p.node.interface_reason and var(p, "GLOO_SOCKET_IFNAME").reason == p.node.interface_reason
