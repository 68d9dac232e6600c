"""Detection on synthetic (hand-built) sysroots: GPUs, RDMA ports, interfaces, limits, cloud."""

import filecmp
import importlib.util
import os
from pathlib import Path

import pytest

from nodeweave.entrypoint import Root, detect
from nodeweave.entrypoint.detection.gpu import gfx_target
from nodeweave.entrypoint.detection.net import address_owner, read_routes

FIX = Path(__file__).parent / "fixtures" / "synthetic"


def node(name, env=None, master=None):
    return detect(str(FIX / name), env or {}, master=master)


def test_hgx_h100_gpus_nvswitch_and_gdr():
    g = node("hgx-h100").gpus
    assert (g.vendor, g.count, len(g.devices)) == ("nvidia", 8, 8)
    assert g.model == "NVIDIA H100 80GB HBM3"
    assert g.interconnect == "nvswitch"
    assert g.driver == "550.90.07"
    assert g.gpudirect_rdma == "nvidia_peermem"
    assert [d.pci for d in g.devices][:2] == ["0000:18:00.0", "0000:2a:00.0"]
    assert [d.numa_node for d in g.devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert g.devices[0].uuid.startswith("GPU-")


def test_hgx_h100_rdma_ports_and_interfaces():
    n = node("hgx-h100")
    ib = [p for p in n.nics if p.link_layer == "InfiniBand"]
    assert [p.name for p in ib] == [f"mlx5_{i}:1" for i in range(8)]
    assert all(p.active and p.rate_gbps == 400 and p.driver == "mlx5_core" for p in ib)
    assert ib[0].netdev == "ibp25s0" and ib[0].phys_state == "LinkUp"
    storage = [p for p in n.nics if p.roce]
    assert [(p.device, p.roce_v2_gid_index, p.roce_v2_ipv4, p.netdev) for p in storage] == [
        ("mlx5_8", 3, "172.16.0.11", "ens21f0np0"), ("mlx5_9", 3, "172.16.1.11", "ens21f1np1")]
    by_name = {i.name: i for i in n.interfaces}
    assert by_name["eno1"].ipv4 == ["10.10.0.11"] and not by_name["eno1"].virtual
    assert by_name["docker0"].virtual and by_name["lo"].kind == "loopback"
    assert by_name["ibp25s0"].kind == "infiniband" and by_name["ibp25s0"].speed_mbps == 400000


def test_route_to_master_under_sysroot():
    n = node("hgx-h100", master="hgx-a00")
    assert (n.interface, n.local_ipv4) == ("eno1", "10.10.0.11")
    assert "/etc/hosts" in n.interface_reason
    n = node("hgx-h100", master="172.16.1.50")
    assert n.interface == "ens21f1np1"
    n = node("hgx-h100", master="8.8.8.8")  # default route
    assert n.interface == "eno1"
    n = node("hgx-h100", master="10.10.0.11")  # the node itself
    assert n.interface == "eno1" and "own address" in n.interface_reason


def test_unresolvable_master_falls_back_to_default_route():
    n = node("sts-h100-roce", master="llama-0.llama.training.svc.cluster.local")
    assert (n.interface, n.local_ipv4) == ("eth0", "10.128.2.15")
    assert "does not resolve" in n.interface_reason


def test_route_table_parse_is_network_order():
    routes = read_routes(Root(str(FIX / "hgx-h100")))
    assert ("eno1", 0, 0, (10 << 24) | (10 << 16) | 1, 100) in routes
    assert address_owner(routes, "172.17.0.1") == "docker0"
    assert address_owner(routes, "127.0.0.1") == "lo"


def test_port_down_is_reported():
    n = node("hgx-h100-port-down")
    p = {x.device: x for x in n.nics}["mlx5_3"]
    assert (p.state, p.phys_state, p.active) == ("DOWN", "Disabled", False)
    assert sum(x.active for x in n.nics) == 9


def test_mi300x_kfd_gpus_xgmi_and_roce_gids():
    n = node("mi300x")
    g = n.gpus
    assert (g.vendor, g.count, g.model, g.arch, g.interconnect) == ("amd", 8, "AMD Instinct MI300X", "gfx942", "xgmi")
    assert g.devices[0].pci == "0000:05:00.0" and g.devices[0].numa_node == 0
    assert g.gpudirect_rdma == "amdkfd"
    assert len(n.nics) == 8 and all(p.roce and p.roce_v2_gid_index == 3 for p in n.nics)
    assert n.nics[0].device == "bnxt_re0" and n.nics[0].driver == "bnxt_en" and n.nics[0].netdev == "enp6s0np0"


@pytest.mark.parametrize("version,name", [(90402, "gfx942"), (90500, "gfx950"), (90010, "gfx90a"), (110000, "gfx1100")])
def test_gfx_target_names(version, name):
    assert gfx_target(version) == name


@pytest.mark.parametrize("var,value,count,visible", [
    ("CUDA_VISIBLE_DEVICES", "2,3", 2, [2, 3]),
    ("CUDA_VISIBLE_DEVICES", "", 0, []),
    ("CUDA_VISIBLE_DEVICES", "0,9,1", 1, [0]),       # the runtime stops at the first invalid index
    ("CUDA_VISIBLE_DEVICES", "GPU-6f0c0001-5b5e-4b1f-9c1e-0a1b2c3d4e01", 1, ["GPU-6f0c0001-5b5e-4b1f-9c1e-0a1b2c3d4e01"]),
])
def test_cuda_visible_devices(var, value, count, visible):
    g = node("hgx-h100", {var: value}).gpus
    assert (g.count, g.visible, g.visible_env) == (count, visible, var)


@pytest.mark.parametrize("var", ["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"])
def test_amd_visible_devices(var):
    g = node("mi300x", {var: "0,1,2,3"}).gpus
    assert (g.count, g.visible_env) == (4, var)


def test_cloud_vm_and_limits_from_proc():
    n = node("cloud-vm")
    assert (n.gpus.count, n.gpus.model, n.gpus.interconnect) == (2, "NVIDIA L4", "pcie")
    assert n.nics == []
    assert [i.name for i in n.interfaces] == ["eth0", "lo"]
    assert n.limits.shm_bytes == 64 << 20 and n.limits.shm_source == "/proc/mounts size="
    assert n.limits.memlock_bytes == 65536
    assert n.limits.cpus == 48
    assert n.cloud.provider is None and n.cloud.vendor == "QEMU"


def test_cpu_only():
    n = node("cpu-only")
    assert (n.gpus.vendor, n.gpus.count) == ("none", 0)
    assert n.limits.cpus == 4 and n.limits.memlock_bytes == 8 << 20


def test_statefulset_pod_sees_only_its_netdevs():
    n = node("sts-h100-roce")
    assert n.gpus.count == 4
    usable = [p.device for p in n.nics if p.netdev]
    assert usable == ["mlx5_6", "mlx5_7", "mlx5_10", "mlx5_11"]
    assert [p.netdev for p in n.nics if p.netdev] == ["net1", "net2", "net3", "net4"]
    assert len(n.nics) == 12
    assert n.limits.cpus == 64 and n.limits.cpus_source == "cgroup cpu.max"
    assert n.limits.shm_bytes == 100 << 30


def test_bare_metal_shm_defaults_to_half_of_memory():
    lim = node("hgx-h100").limits
    assert lim.shm_bytes == 2113412080 * 1024 // 2
    assert lim.memlock_bytes is None  # unlimited


def test_cloud_policies_from_dmi_and_vendor_files(tmp_path):
    def tree(vendor, product, files=()):
        root = tmp_path / vendor.split()[0]
        dmi = root / "sys/devices/virtual/dmi/id"
        dmi.mkdir(parents=True)
        (dmi / "sys_vendor").write_text(vendor + "\n")
        (dmi / "product_name").write_text(product + "\n")
        for f in files:
            p = root / f.lstrip("/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x\n")
        return detect(str(root), {}).cloud

    aws = tree("Amazon EC2", "p5.48xlarge")
    assert (aws.provider, aws.product) == ("aws", "p5.48xlarge")
    gcp = tree("Google", "Google Compute Engine", ["/usr/local/nvidia/lib64/nccl-env-profile.sh"])
    assert (gcp.provider, gcp.profile) == ("gcp", "/usr/local/nvidia/lib64/nccl-env-profile.sh")
    azure = tree("Microsoft Corporation", "Virtual Machine", ["/opt/microsoft/ndv5/topo.xml"])
    assert (azure.provider, azure.topo_file) == ("azure", "/opt/microsoft/ndv5/topo.xml")


def test_live_machine_detects_without_error():
    n = detect("/", dict(os.environ), master="127.0.0.1")
    assert n.hostname
    assert n.interface == "lo"
    assert n.limits.cpus >= 1


def test_fixture_trees_match_their_generator(tmp_path):
    spec = importlib.util.spec_from_file_location("build_fixtures", FIX / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.HERE = str(tmp_path)
    for make in build.BUILDERS.values():
        make()

    def same(a, b):
        cmp = filecmp.dircmp(a, b)
        assert not cmp.left_only and not cmp.right_only and not cmp.funny_files, (a, cmp.left_only, cmp.right_only)
        _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
        assert not mismatch and not errors, (a, mismatch, errors)
        for d in cmp.common_dirs:
            if not os.path.islink(os.path.join(a, d)):
                same(os.path.join(a, d), os.path.join(b, d))

    for name in build.BUILDERS:
        same(str(FIX / name), str(tmp_path / name))
