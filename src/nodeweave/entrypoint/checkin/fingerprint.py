"""What this node is, in a few dozen flat fields, so node 0 can compare every node at once.

The check-in exchange (``exchange.py``) sends this to node 0; ``--explain
--json`` shows it as ``fingerprint``; ``nodeweave doctor --cluster`` lines the
nodes' fingerprints up side by side. Everything is read from files: the
installed distributions (``*.dist-info`` names; for torch, deepspeed,
accelerate and NCCL's wheel the ``Version:`` of their METADATA — torch is never imported), the plan (GPUs, limits, interface,
environment), the workspace's sync stamp or git HEAD, the command after ``--`` and a digest of its script. Values are plain JSON
scalars (two dicts, ``env`` and ``faults`` the only nested ones), so comparing and tabulating
them needs no schema.
"""

import os
from hashlib import sha256

from ..detection.host import site_dirs, nccl_version, rccl_version
from ..detection.net import resolve
from ..model import given
from ..planning.contract import RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, STALL_TIMEOUT_S, STALL_WARN_S

VERSION = 1
SYNC_STAMP = ".nodeweave-sync.json"
LAUNCHER_DISTRIBUTIONS = {"torchrun": "torch", "deepspeed": "deepspeed", "accelerate": "accelerate"}
ENV_PREFIXES = ("NCCL_", "RCCL_", "GLOO_", "HSA_", "TORCH_NCCL_", "OMP_NUM_THREADS", "UCX_", "FI_")
MAX_ENV = 64  # variables carried for naming differences; the hash covers all of them


def _sites(root):
    """Where distributions live: this interpreter's site directories on a live root (cheap: no scan of
    /usr/lib), every python3.* site directory under a captured tree."""
    if root.real:
        import sys

        return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return site_dirs(root)


# Distributions whose version the check-in compares: read from their METADATA (what ``torch.__version__``
# and pip report), since a wheel swapped in place can keep its old ``*.dist-info`` folder name.
COMPARED = ("torch", "deepspeed", "accelerate", "pytorch_triton_rocm", "triton")


def _compared(key):
    return key in COMPARED or key.startswith(("nvidia_nccl_cu", "rccl"))


def metadata_version(path):
    """The ``Version:`` header of a METADATA file (its first lines), or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for _ in range(40):
                line = f.readline()
                if not line or line == "\n":
                    return None
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        return None
    return None


def distributions(root):
    """{normalised name: version} of every installed distribution: ``*.dist-info`` names, and for the
    libraries the check-in compares, the version their METADATA reports."""
    found = {}
    for site in _sites(root):
        try:
            entries = sorted(os.listdir(root.at(site)))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            name, _, version = entry[:-len(".dist-info")].partition("-")
            key = name.lower().replace("-", "_").replace(".", "_")
            if key in found:
                continue
            if _compared(key):
                version = metadata_version(os.path.join(root.at(site), entry, "METADATA")) or version
            found[key] = version
    return found


def distributions_digest(dists):
    """A short digest of the sorted ``name==version`` list: equal images give equal digests."""
    text = "\n".join(f"{name}=={version}" for name, version in sorted(dists.items()))
    return sha256(text.encode()).hexdigest()[:16] if dists else None


def _git_head(path):
    """(commit, source) of the git checkout at ``path``, read from files (no git binary)."""
    git = os.path.join(path, ".git")
    try:
        if os.path.isfile(git):  # a worktree or submodule: "gitdir: <path>"
            with open(git) as f:
                line = f.read().strip()
            git = os.path.join(path, line.partition("gitdir:")[2].strip())
        with open(os.path.join(git, "HEAD")) as f:
            head = f.read().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head[4:].strip()
    for base in (git, _common_dir(git)):
        try:
            with open(os.path.join(base, ref)) as f:
                return f.read().strip() or None
        except OSError:
            pass
        try:
            with open(os.path.join(base, "packed-refs")) as f:
                for line in f:
                    sha, _, name = line.strip().partition(" ")
                    if name == ref:
                        return sha
        except OSError:
            pass
    return None


def _common_dir(git):
    try:
        with open(os.path.join(git, "commondir")) as f:
            return os.path.normpath(os.path.join(git, f.read().strip()))
    except OSError:
        return git


def workspace(path):
    """{commit, digest, source}: a ``nodeweave sync`` stamp first, else the git HEAD, else nothing."""
    stamp = os.path.join(path, SYNC_STAMP)
    try:
        import json

        with open(stamp) as f:
            data = json.load(f)
        if isinstance(data, dict):
            return {"commit": _text(data.get("commit")), "digest": _text(data.get("digest")),
                    "source": f"sync stamp {stamp}"}
    except (OSError, ValueError):
        pass
    commit = _git_head(path)
    return {"commit": commit, "digest": None, "source": f"git HEAD of {path}" if commit else None}


SCRIPT_READ_MAX = 4 << 20  # bytes of the script hashed: a script is pages of text; past this its size stands in


def program(launcher, command, cwd):
    """{command, command_digest, script_digest}: what this node runs — the command line after ``--`` (shown up to
    200 characters, compared whole by its digest) and a digest of the script file's content (the word
    ``planning.consistency.script_word`` reads as the script; None where there is none, or it is no regular file).
    Two nodes given two scripts or two argument lists from two working folders check in as one job otherwise
    (walk13b B6): a commit or sync stamp, where there is one, does not see an edit it does not hold either. The
    script is read once, bounded (:data:`SCRIPT_READ_MAX`): no slow work on the start's path."""
    import shlex

    from ..planning.consistency import script_word

    words = [str(word) for word in command or ()]
    line = " ".join(shlex.quote(word) for word in words)
    script = script_word(launcher, list(words)) if words else None
    return {"command": _text(line) if words else None,
            "command_digest": sha256("\0".join(words).encode("utf-8", "surrogateescape")).hexdigest()[:16]
            if words else None,
            "script_digest": _file_digest(os.path.join(cwd, script)) if script else None}


def _file_digest(path):
    """16 hex digits of SHA-256 over the first :data:`SCRIPT_READ_MAX` bytes of the regular file at ``path`` and
    its size, or None (not there, not a regular file, unreadable): a pipe or device is never read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = sha256(str(info.st_size).encode() + b"\0")
        left = SCRIPT_READ_MAX
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest()[:16]
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(value):
    return None if value is None else str(value)[:200]


def major_minor(version):
    """'2.21.5' -> '2.21'; 'rocm-6.2.1' -> 'rocm-6.2'; None stays None."""
    if not version:
        return None
    prefix, dash, rest = version.rpartition("-") if version.startswith("rocm-") else ("", "", version)
    parts = rest.split("+")[0].split(".")
    return prefix + dash + ".".join(parts[:2])


def socket_interface(plan):
    """(name, how) of the interface NCCL/Gloo will use: the plan's GLOO_SOCKET_IFNAME, else the route."""
    for var in plan.env:
        if var.name == "GLOO_SOCKET_IFNAME" and var.action in ("set", "kept"):
            name = var.value.split(",")[0].strip().lstrip("=")
            return name, f"GLOO_SOCKET_IFNAME={var.value} ({var.action})"
    return plan.node.interface, "the route toward the master"


def advertised_address(plan):
    """(address, how): what peers are told to connect to — the socket interface's first IPv4."""
    name, how = socket_interface(plan)
    node = plan.node
    if name == node.interface and node.local_ipv4:
        return node.local_ipv4, f"{name} ({how})"
    for iface in node.interfaces:
        if iface.name == name and iface.ipv4:
            return iface.ipv4[0], f"{name} ({how})"
    return node.local_ipv4, f"{node.interface} (the route toward the master)"


PER_NODE = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS")  # set from each node's own hardware


def env_view(plan):
    """({name: value}, hash) of the NCCL/RCCL/Gloo variables the launcher gets: yours, and those nodeweave
    sets except the ones each node derives from its own hardware (interface name, threads per process)."""
    chosen = {v.name: v.value for v in plan.env if v.name.startswith(ENV_PREFIXES) and (
              v.action == "kept" or (v.action == "set" and v.name not in PER_NODE))}
    text = "\n".join(f"{k}={v}" for k, v in sorted(chosen.items()))
    digest = sha256(text.encode()).hexdigest()[:12]
    return dict(sorted(chosen.items())[:MAX_ENV]), digest


def _nccl(root, env, vendor, dists):
    """NCCL's version: the override, torch's wheel, and only on NVIDIA nodes the system library's name
    (listing the library directories costs more than the rest of the fingerprint)."""
    if vendor == "amd":
        return None
    if given(env, "NODEWEAVE_NCCL_VERSION"):
        return env["NODEWEAVE_NCCL_VERSION"]
    wheel = next((version for name, version in sorted(dists.items()) if name.startswith("nvidia_nccl_cu")), None)
    if wheel or vendor != "nvidia":
        return wheel
    return nccl_version(root, env)[0]


# The settings that decide what the job does on a fault: a node that reads them otherwise (started from an older
# compose file or template) would run without recovery beside nodes with it, or stop at another stall limit, so
# every node must share them, as it shares the node count (walk7 B49). Each with its value when not set.
FAULT_SETTINGS = (("recovery", False), ("spares", 0), ("recovery_max_restarts", RECOVERY_RESTARTS),
                  ("no_progress_restarts", RECOVERY_NO_PROGRESS), ("checkpoint_dir", None),
                  ("straggler_is_fault", False), ("stall_warn", STALL_WARN_S), ("stall_timeout", STALL_TIMEOUT_S))


def fault_settings(settings):
    """{setting: the value this node acts on} of :data:`FAULT_SETTINGS`, and the straggler checks that make a
    fault (``stall/setup.fault_checks``: its default follows ``straggler_is_fault``)."""
    from ..stall.setup import fault_checks

    found = {key: settings.get(key, default) for key, default in FAULT_SETTINGS}
    folder = found.get("checkpoint_dir")
    if folder and settings.get("recovery"):
        # the folder as this node's ranks save into it, not as typed: `ck` from /w and from /w/sub are two
        # folders, and node 0 scanning one never sees the other's shards (walk11b B11); docs/recovery.md: the
        # folder must be the same path on every node
        found["checkpoint_dir"] = os.path.abspath(folder)
    found["straggler_fault"] = fault_checks(settings)
    return found


def local_fingerprint(plan, root, settings, cwd=None):
    """The fingerprint of this node for ``plan`` (a complete Plan) under ``settings`` (what it was parsed from:
    the environment it reads and the fault settings node 0 compares). From the settings, never a bare
    environment: a fingerprint without its fault settings differs from every real node's (CI stop 50)."""
    env, faults = settings.env, fault_settings(settings)
    node, topo = plan.node, plan.topology
    gpus, limits = node.gpus, node.limits
    dists = distributions(root)
    address, address_how = advertised_address(plan)
    own_ip, own_how = resolve(root, node.hostname) if node.hostname else (None, "no hostname")
    iface_name, _ = socket_interface(plan)
    iface = next((i for i in node.interfaces if i.name == iface_name), None)
    launcher = plan.launch.launcher
    nccl = _nccl(root, env, gpus.vendor, dists)
    rccl = rccl_version(root, env)[0] if gpus.vendor == "amd" else None
    space = workspace(cwd or os.getcwd())
    runs = program(launcher, settings.command, cwd or os.getcwd())
    env_vars, env_hash = env_view(plan)
    return {
        "version": VERSION,
        "rank": topo.node_rank.value, "hostname": node.hostname, "nnodes": topo.nnodes.value,
        "job": topo.job_id, "launcher": launcher, "master_port": topo.master_port.value,
        "address": address, "address_source": address_how, "route_address": node.local_ipv4,
        "hostname_address": own_ip, "hostname_address_source": own_how,
        "gpu_vendor": gpus.vendor, "gpu_model": gpus.model, "gpu_count": gpus.count, "gpu_arch": gpus.arch,
        "gpu_driver": gpus.driver, "nproc": topo.nproc_per_node.value,
        "nccl": nccl, "rccl": rccl, "torch": dists.get("torch"),
        "launcher_version": dists.get(LAUNCHER_DISTRIBUTIONS.get(launcher, ""), None),
        "image_ref": env.get("NODEWEAVE_IMAGE_REF") or None,  # what the renderer set (compose, manifests)
        "image_variant": env.get("NODEWEAVE_IMAGE_VARIANT") or None,  # what the image says it is
        "image_digest": distributions_digest(dists), "distributions": len(dists),
        "workspace_commit": space["commit"], "workspace_digest": space["digest"], "workspace_source": space["source"],
        "command": runs["command"], "command_digest": runs["command_digest"], "script_digest": runs["script_digest"],
        "env_hash": env_hash, "env": env_vars,
        "interface": iface_name, "mtu": iface.mtu if iface else None, "speed_mbps": iface.speed_mbps if iface else None,
        "shm_bytes": limits.shm_bytes, "memlock_bytes": limits.memlock_bytes, "cpus": limits.cpus,
        "faults": faults,
    }
