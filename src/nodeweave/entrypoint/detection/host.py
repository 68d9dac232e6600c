"""Host facts: hostname, /dev/shm, RLIMIT_MEMLOCK, usable CPUs, cloud, library versions.

Each reads a file under the root, so captured trees answer like live hosts:
- /dev/shm: ``statvfs`` on a live root (exact); under a sysroot, the ``size=``
  option of its tmpfs line in ``/proc/mounts`` (tmpfs without ``size=`` is half
  of ``MemTotal``), the same text a live ``/proc/mounts`` shows.
- RLIMIT_MEMLOCK: the "Max locked memory" row of ``/proc/self/limits``; CAP_IPC_LOCK: ``CapEff``
  of ``/proc/self/status``.
- CPUs: ``Cpus_allowed_list`` of ``/proc/self/status``, capped by cgroup v2
  ``cpu.max`` (the container's CPU limit).
- Cloud: DMI ``sys_vendor``/``product_name`` plus the vendor files that change
  the NCCL policy (EFA devices, GCP's nccl-env-profile.sh, Azure's topo.xml).
"""

import os

from ..model import Cloud, Limits, given

GCP_PROFILES = (  # GPUDirect-TCPXO (A3 Mega) and GPUDirect-TCPX (A3 High) images
    "/usr/local/nvidia/lib64/nccl-env-profile.sh",
    "/usr/local/tcpx/lib64/nccl-env-profile.sh",
)
AZURE_TOPO_DIR = "/opt/microsoft"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CONTAINER_MARKERS = ("/run/.containerenv", "/.dockerenv")  # podman's and docker's file in every container


def hostname(root):
    if root.real:
        return os.uname().nodename
    text = root.read("/etc/hostname") or ""
    return text.split()[0] if text.split() else ""


def in_kubernetes(root, env):
    """A pod: the API's address, a downward-API pod name, or a service-account token directory."""
    return bool(env.get("KUBERNETES_SERVICE_HOST") or env.get("POD_NAME")) or root.exists(f"{SA_DIR}/namespace")


def in_container(root, env):
    """A container's marker file (podman's, docker's) or a pod."""
    return any(root.exists(marker) for marker in CONTAINER_MARKERS) or in_kubernetes(root, env)


def container_key(sysroot="/"):
    """What names this container across its restarts, or None on a bare host: the source of its ``/etc/hostname``
    (field 4 of its /proc/self/mountinfo line), which docker and podman bind-mount from the container's own folder
    (``.../containers/<id>/hostname``) and a pod's runtime from the pod's sandbox: the same after a restart by the
    engine or the kubelet, another for a recreated container or pod. A bare host mounts none there."""
    from ..bounded import MIB, read_text

    try:
        text = read_text(os.path.join(sysroot or "/", "proc/self/mountinfo"), 16 * MIB, "the mount table",
                         errors="replace")
    except (OSError, ValueError):
        return None
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 4 and fields[4] == "/etc/hostname":
            return fields[3]
    return None


def host_networking(node):
    """Device-backed interfaces (PCI, virtio, ...): the container shares the host's network.

    With or without an address: a server's address often sits on a bond,
    bridge or VLAN (all virtual) above NICs that hold none, and the hostname
    (``gpu-07``) is still the host's own. A container's own namespace holds
    only virtual interfaces (veth, macvlan) outside Kubernetes.
    """
    return [i.name for i in node.interfaces if not i.virtual]


def _size_option(options):
    for opt in options.split(","):
        if opt.startswith("size="):
            text = opt[5:].lower()
            units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
            try:
                if text and text[-1] in units:
                    return int(text[:-1]) * units[text[-1]]
                return int(text)
            except ValueError:
                return None
    return None


def _mem_total(root):
    for line in (root.read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def shm(root):
    if root.real:
        try:
            st = os.statvfs("/dev/shm")
            return st.f_frsize * st.f_blocks, "statvfs(/dev/shm)"
        except OSError:
            pass
    # The last /dev/shm line is the mount on top, the one a process sees (a VM's image may mount it twice:
    # tests/fixtures/captured/h100x2-vm).
    for line in reversed((root.read("/proc/mounts") or "").splitlines()):
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/dev/shm":
            size = _size_option(fields[3])
            if size is not None:
                return size, "/proc/mounts size="
            total = _mem_total(root)
            return (total // 2 if total else None), "/proc/mounts tmpfs default (half of MemTotal)"
    return None, "no /dev/shm mount"


def memlock(root):
    """Soft RLIMIT_MEMLOCK in bytes; None = unlimited (or unknown)."""
    for line in (root.read("/proc/self/limits") or "").splitlines():
        if line.startswith("Max locked memory"):
            soft = line[len("Max locked memory"):].split()[0]
            return None if soft == "unlimited" else int(soft)
    return None


CAP_IPC_LOCK = 14  # linux/capability.h


def ipc_lock(root):
    """Whether CAP_IPC_LOCK is in this process's effective set (``CapEff`` of /proc/self/status); None = unknown.

    With it the kernel lets RDMA pin memory past RLIMIT_MEMLOCK. A capability added to a container whose
    user is not root lands in the bounding set only (no ambient capabilities in Kubernetes), so it is
    read here rather than assumed from the pod spec.
    """
    for line in (root.read("/proc/self/status") or "").splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split(":", 1)[1].strip(), 16) >> CAP_IPC_LOCK & 1)
            except ValueError:
                return None
    return None


def _count_cpus(text):
    count = 0
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit():
            count += int(hi) - int(lo) + 1 if hi.isdigit() else 1
    return count


def cpus(root):
    count, source = None, None
    for line in (root.read("/proc/self/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            count, source = _count_cpus(line.split(":", 1)[1]), "Cpus_allowed_list"
    if not count:
        count, source = os.cpu_count() if root.real else None, "os.cpu_count()"
    quota = (root.read("/sys/fs/cgroup/cpu.max") or "").split()
    if len(quota) == 2 and quota[0].isdigit() and quota[1].isdigit() and int(quota[1]):
        limit = max(1, -(-int(quota[0]) // int(quota[1])))
        if count is None or limit < count:
            count, source = limit, "cgroup cpu.max"
    return count, source


def detect_limits(root):
    size, how = shm(root)
    count, source = cpus(root)
    return Limits(shm_bytes=size, shm_source=how, memlock_bytes=memlock(root), cpus=count, cpus_source=source,
                  ipc_lock=ipc_lock(root))


def detect_cloud(root, rdma_ports):
    dmi = "/sys/devices/virtual/dmi/id"
    vendor, product = root.read(f"{dmi}/sys_vendor"), root.read(f"{dmi}/product_name")
    cloud = Cloud(vendor=vendor, product=product)
    text = f"{vendor or ''} {product or ''}"
    efa = any(p.driver == "efa" or p.device.startswith("efa") for p in rdma_ports)
    if "Amazon" in text or efa:
        cloud.provider, cloud.efa = "aws", efa
    elif "Google" in text:
        cloud.provider = "gcp"
        cloud.profile = next((p for p in GCP_PROFILES if root.exists(p)), None)
    elif "Microsoft" in text:
        cloud.provider = "azure"
        for sub in root.listdir(AZURE_TOPO_DIR):
            path = f"{AZURE_TOPO_DIR}/{sub}/topo.xml"
            if sub.startswith("nd") and root.exists(path):
                cloud.topo_file = path
                break
    return cloud


# --- library versions (read only when a decision depends on them) ------------

NCCL_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/cuda/lib64",
                 "/usr/lib64", "/usr/local/lib", "/usr/local/nccl/lib")
SITE_GLOBS = ("/usr/local/lib", "/usr/lib", "/opt/conda/lib")


def _version_tuple(text):
    parts = []
    for piece in (text or "").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece else ""
        if not digits:
            break
        parts.append(int(digits))
        if not piece.isdigit():
            break
    return tuple(parts)


def version_at_least(text, minimum):
    have = _version_tuple(text)
    return bool(have) and have >= minimum


def site_dirs(root):
    dirs = []
    if root.real:
        import sys
        dirs.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    for base in SITE_GLOBS:
        for entry in root.listdir(base):
            if entry.startswith("python3"):
                for leaf in ("site-packages", "dist-packages"):
                    if root.isdir(f"{base}/{entry}/{leaf}"):
                        dirs.append(f"{base}/{entry}/{leaf}")
    return dirs


def nccl_version(root, env):
    """NCCL's version from the pip wheel (torch's NCCL) or a versioned libnccl.so."""
    if given(env, "NODEWEAVE_NCCL_VERSION"):
        return env["NODEWEAVE_NCCL_VERSION"], "NODEWEAVE_NCCL_VERSION"
    for site in site_dirs(root):
        for entry in root.listdir(site):
            if entry.startswith("nvidia_nccl_cu") and entry.endswith(".dist-info"):
                return entry[:-len(".dist-info")].split("-")[1], f"{site}/{entry}"
    for d in NCCL_LIB_DIRS:
        for entry in root.listdir(d):
            if entry.startswith("libnccl.so.2."):
                return entry[len("libnccl.so."):], f"{d}/{entry}"
    if env.get("NCCL_VERSION"):  # NVIDIA's CUDA/NGC images: the system NCCL's version
        return env["NCCL_VERSION"].split("-")[0], "NCCL_VERSION (set by the CUDA image)"
    return None, "not found"


def rccl_version(root, env):
    """RCCL's version, from the ROCm release (RCCL 2.21.5 ships with ROCm 6.3)."""
    if given(env, "NODEWEAVE_RCCL_VERSION"):
        return env["NODEWEAVE_RCCL_VERSION"], "NODEWEAVE_RCCL_VERSION"
    rocm = root.read("/opt/rocm/.info/version")
    if rocm:
        return "rocm-" + rocm.split("-")[0], "/opt/rocm/.info/version"
    return None, "not found"
