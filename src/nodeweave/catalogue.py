"""The catalogue: one row per GPU vendor and one per image variant nodeweave can build.

A leaf module (it imports nothing of nodeweave but the errors), so the spec
loader, the resolve step, every renderer and the build can all read it.
Adding a variant is one :class:`Variant` row here plus regenerated golden files.

Each :class:`Variant` pins everything that decides what lands in the image
(base image tag, PyTorch build and the index it comes from, DeepSpeed,
Accelerate, the OS packages), so a Dockerfile is a pure function of its row
and the spec. Bumping a version is a one-line change here plus regenerated
golden files.

Where the collective library comes from matters for debugging: CUDA PyTorch
wheels pull NCCL in as a pinned pip dependency (``nvidia-nccl-cu12`` /
``nvidia-nccl-cu13``), ROCm wheels bundle RCCL inside ``torch/lib``; neither
uses the base image's copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

from nodeweave.errors import UsageError

@dataclass(frozen=True)
class Vendor:
    """What a GPU vendor's stack needs from a container engine and a cluster."""

    key: str  # nvidia | amd | cpu
    default_variant: str  # the variant an overlay for this vendor switches to (the newest stack)
    host_devices: Tuple[str, ...] = ()  # device nodes a container needs besides the GPU runtime's
    # Host groups that own those device nodes on common distributions (video 44 everywhere,
    # render 109 on Ubuntu 22.04/24.04): numeric, since the names need not exist in the image.
    host_group_ids: Tuple[int, ...] = ()


VENDORS: Mapping[str, Vendor] = MappingProxyType({row.key: row for row in (
    Vendor("nvidia", default_variant="cuda12"),
    Vendor("amd", default_variant="rocm70", host_devices=("/dev/kfd", "/dev/dri"), host_group_ids=(44, 109)),
    Vendor("cpu", default_variant="cpu"),
)})

# The build backend pip needs for DeepSpeed's sdist and for nodeweave itself
# (both installed with --no-build-isolation); pinned so offline wheelhouses match.
BUILD_TOOLS = ("setuptools==84.2.1",)
DEEPSPEED = "deepspeed==0.19.8"
ACCELERATE = "accelerate==1.15.0"

# OS packages every variant gets. RDMA user space: rdma-core (udev rules, the
# provider config), ibverbs-providers (mlx5, bnxt_re, ionic, efa, ... drivers),
# ibverbs-utils (ibv_devinfo; pulls libibverbs1), rdmacm-utils (pulls librdmacm),
# infiniband-diags (ibstat), perftest (ib_write_bw). tini is PID 1; rsync
# receives `nodeweave sync`; procps/iproute2 are what people debug with.
COMMON_APT_PACKAGES = (
    "ca-certificates",
    "ibverbs-providers",
    "ibverbs-utils",
    "infiniband-diags",
    "iproute2",
    "numactl",
    "perftest",
    "procps",
    "python3",
    "python3-venv",
    "rdma-core",
    "rdmacm-utils",
    "rsync",
    "tini",
)

# DeepSpeed compiles its ops just in time on first use (DS_BUILD_OPS=0), which
# needs a C++ compiler and Python headers in the GPU images.
JIT_TOOLCHAIN = ("g++", "python3-dev")


@dataclass(frozen=True)
class Variant:
    """One buildable image: a base image plus the Python stack pinned on top of it."""

    key: str
    vendor: str  # a key of VENDORS
    summary: str
    base_image: str
    python: str  # where the interpreter comes from, for `nodeweave image variants`
    torch_version: str
    torch_index_url: str
    collectives: str  # NCCL/RCCL and where it comes from
    accelerator_arch_arg: Optional[Tuple[str, str]]  # (ARG name, default) used when DeepSpeed ops are prebuilt
    ds_accelerator: str  # DS_ACCELERATOR while building (no GPU is visible during a build)
    gpu_resource: Optional[str]  # Kubernetes extended resource
    extra_apt_packages: Tuple[str, ...] = ()
    # Groups that own the GPU device nodes in the base image (/dev/kfd, /dev/dri/renderD*);
    # the user joins those that exist, so `--group-add` is not the only way in.
    device_groups: Tuple[str, ...] = ()
    distro: str = "ubuntu24.04"  # the base image's distribution, as vendor package repositories name it

    @property
    def torch_requirement(self) -> str:
        return f"torch=={self.torch_version}"

    @property
    def apt_packages(self) -> Tuple[str, ...]:
        return tuple(sorted(set(COMMON_APT_PACKAGES) | set(self.extra_apt_packages)))

    @property
    def pinned_stack(self) -> Tuple[str, ...]:
        """The training stack's pins (torch, DeepSpeed, Accelerate): a requirement of the spec may not name another."""
        return (self.torch_requirement, DEEPSPEED, ACCELERATE)

    @property
    def pip_requirements(self) -> Tuple[str, ...]:
        """Every pinned pip requirement, in install order (what an offline wheelhouse must hold)."""
        return (*BUILD_TOOLS, self.torch_requirement, DEEPSPEED, ACCELERATE)


def _ubuntu_python() -> str:
    return "Ubuntu 24.04 python3 (3.12), venv /opt/venv"


_ROWS = (
    Variant(
        key="cuda12",
        vendor="nvidia",
        summary="CUDA 12.8, PyTorch cu128 (NVIDIA driver >= 570)",
        base_image="nvcr.io/nvidia/cuda:12.8.1-devel-ubuntu24.04",
        python=_ubuntu_python(),
        torch_version="2.13.0",
        torch_index_url="https://download.pytorch.org/whl/cu128",
        collectives="NCCL from nvidia-nccl-cu12, pinned by the torch wheel",
        accelerator_arch_arg=("TORCH_CUDA_ARCH_LIST", "8.0;9.0;10.0;12.0"),
        ds_accelerator="cuda",
        gpu_resource="nvidia.com/gpu",
        extra_apt_packages=JIT_TOOLCHAIN,
    ),
    Variant(
        key="cuda13",
        vendor="nvidia",
        summary="CUDA 13.0, PyTorch cu130 (NVIDIA driver >= 580)",
        base_image="nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04",
        python=_ubuntu_python(),
        torch_version="2.13.0",
        torch_index_url="https://download.pytorch.org/whl/cu130",
        collectives="NCCL from nvidia-nccl-cu13, pinned by the torch wheel",
        accelerator_arch_arg=("TORCH_CUDA_ARCH_LIST", "8.0;9.0;10.0;12.0"),
        ds_accelerator="cuda",
        gpu_resource="nvidia.com/gpu",
        extra_apt_packages=JIT_TOOLCHAIN,
    ),
    Variant(
        key="rocm64",
        vendor="amd",
        summary="ROCm 6.4, PyTorch rocm6.4 (2.9.1 is the newest torch built for it)",
        base_image="rocm/dev-ubuntu-24.04:6.4.4",
        python=_ubuntu_python(),
        torch_version="2.9.1",
        torch_index_url="https://download.pytorch.org/whl/rocm6.4",
        collectives="RCCL bundled in the torch ROCm wheel (torch/lib)",
        accelerator_arch_arg=("PYTORCH_ROCM_ARCH", "gfx90a;gfx942"),
        ds_accelerator="cuda",
        gpu_resource="amd.com/gpu",
        extra_apt_packages=JIT_TOOLCHAIN,
        device_groups=("video", "render"),
    ),
    Variant(
        key="rocm70",
        vendor="amd",
        summary="ROCm 7.0, PyTorch rocm7.0 (adds MI350, gfx950)",
        base_image="rocm/dev-ubuntu-24.04:7.0.2",
        python=_ubuntu_python(),
        torch_version="2.10.0",
        torch_index_url="https://download.pytorch.org/whl/rocm7.0",
        collectives="RCCL bundled in the torch ROCm wheel (torch/lib)",
        accelerator_arch_arg=("PYTORCH_ROCM_ARCH", "gfx90a;gfx942;gfx950"),
        ds_accelerator="cuda",
        gpu_resource="amd.com/gpu",
        extra_apt_packages=JIT_TOOLCHAIN,
        device_groups=("video", "render"),
    ),
    Variant(
        key="cpu",
        vendor="cpu",
        summary="No GPU: gloo only; local multi-node simulation and CI",
        base_image="debian:bookworm-slim",
        python="Debian 12 python3 (3.11), venv /opt/venv",
        torch_version="2.13.0",
        torch_index_url="https://download.pytorch.org/whl/cpu",
        collectives="none (gloo, built into torch)",
        accelerator_arch_arg=None,
        ds_accelerator="cpu",
        gpu_resource=None,
        distro="debian12",
    ),
)

VARIANTS: Mapping[str, Variant] = MappingProxyType({row.key: row for row in _ROWS})


@dataclass(frozen=True)
class Extra:
    """A vendor fabric stack an image may add (``image.extras``): its own layers, after the OS layer.

    ``steps`` are Dockerfile instructions, (instruction, text) in order; a RUN
    step gets the apt cache mounts. ``env`` is set after them.
    """

    key: str
    summary: str
    vendors: Tuple[str, ...]  # GPU vendors it is for
    distros: Tuple[str, ...]  # base distributions its packages exist for
    steps: Tuple[Tuple[str, str], ...]
    env: Tuple[Tuple[str, str], ...] = ()

    @property
    def applies(self) -> str:
        return f"{'/'.join(self.vendors)} variants on {'/'.join(self.distros)}"

    def applies_to(self, variant: "Variant") -> bool:
        return variant.vendor in self.vendors and variant.distro in self.distros


DOCA_VERSION = "2.10.0"
DOCA_KEY = "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
EFA_INSTALLER_VERSION = "1.47.0"

_EXTRA_ROWS = (
    Extra(
        key="mofed",
        summary=f"NVIDIA DOCA-OFED {DOCA_VERSION} user space (MOFED's verbs, rdmacm, umad) instead of the distribution's",
        vendors=("nvidia", "amd"),
        distros=("ubuntu24.04",),
        steps=(
            ("RUN", "apt-get update && apt-get install -y --no-install-recommends curl gnupg"
                    f" && curl -fsSL -o /tmp/GPG-KEY-Mellanox.pub {DOCA_KEY}"
                    " && gpg --dearmor -o /usr/share/keyrings/GPG-KEY-Mellanox.gpg /tmp/GPG-KEY-Mellanox.pub"
                    " && rm /tmp/GPG-KEY-Mellanox.pub"
                    " && echo \"deb [signed-by=/usr/share/keyrings/GPG-KEY-Mellanox.gpg]"
                    f" https://linux.mellanox.com/public/repo/doca/{DOCA_VERSION}/ubuntu24.04/x86_64/ ./\""
                    " > /etc/apt/sources.list.d/doca.list"
                    " && apt-get update && apt-get install -y --no-install-recommends"
                    " ibverbs-providers ibverbs-utils libibmad5 libibumad3 libibverbs1 librdmacm1"),
        ),
    ),
    Extra(
        key="efa",
        summary=f"AWS EFA installer {EFA_INSTALLER_VERSION}: libfabric and the aws-ofi-nccl plugin (no kernel module)",
        vendors=("nvidia",),
        distros=("ubuntu24.04",),
        steps=(
            ("RUN", "apt-get update && apt-get install -y --no-install-recommends curl"
                    " && curl -fsSL -o /tmp/aws-efa-installer.tar.gz"
                    f" https://efa-installer.amazonaws.com/aws-efa-installer-{EFA_INSTALLER_VERSION}.tar.gz"
                    " && tar -xf /tmp/aws-efa-installer.tar.gz -C /tmp && rm /tmp/aws-efa-installer.tar.gz"),
            ("WORKDIR", "/tmp/aws-efa-installer"),
            ("RUN", "./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify && rm -rf /tmp/aws-efa-installer"),
            ("WORKDIR", "/"),
        ),
        env=(("LD_LIBRARY_PATH", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:/opt/amazon/efa/lib:${LD_LIBRARY_PATH}"),),
    ),
)
EXTRAS: Mapping[str, Extra] = MappingProxyType({row.key: row for row in _EXTRA_ROWS})


def get_variant(key: str) -> Variant:
    """The catalogue row for ``key``; an unknown key is a usage error listing the known ones."""
    try:
        return VARIANTS[key]
    except (KeyError, TypeError):
        accepted = ", ".join(VARIANTS)
        raise UsageError(f"image variant {key!r} is not in the catalogue; accepted: {accepted} (see `nodeweave image variants`)")


def get_vendor(key: str) -> Vendor:
    """The vendor row of a variant's ``vendor`` field."""
    return VENDORS[key]


def known_variants() -> "list[str]":
    """Variant names, sorted: what ``image.variant`` accepts."""
    return sorted(VARIANTS)
