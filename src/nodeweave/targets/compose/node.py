"""The per-node compose file for real hosts, the ``.env.example`` and, with a hosts list, ``hosts``.

On a host network the hostname is the machine's own, so nothing can be
derived from it: rank, node count and master address come from ``.env`` or
the environment, and compose refuses to start (``${VAR:?...}``) when the two
values that differ per host are missing. With ``hosts`` in the spec the
same file serves every host unchanged: the list is rendered to
``compose/hosts`` and mounted, and each host's entrypoint finds its rank by
its own name or address there (node 0, the master, first). GPU access follows the variant's
vendor: device reservations for CUDA, /dev/kfd + /dev/dri and the device
groups for ROCm; memlock unlimited and IPC_LOCK so verbs can pin memory; and
/dev/infiniband only when the spec says ``network.rdma`` (an engine refuses to
start a container whose --device path the host lacks).
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave import quantities
from nodeweave.targets.compose.common import (command, contract_env, dump, image, literal, named_volumes,
                                              restart_policy, token_env, token_mount, user_env, volumes)
from nodeweave.entrypoint.planning.contract import HOSTFILE_PATH
from nodeweave.resolve import Resolved

PREAMBLE = (
    "#\n"
    "# One copy runs on every host of the job. Copy compose/.env.example to compose/.env on each\n"
    "# host and set NODE_RANK ({ranks}) and MASTER_ADDR,\n"
    "# then run `docker compose -f compose/node.yaml up` (or podman-compose) on all of them.\n"
)
PREAMBLE_HOSTS = (
    "#\n"
    "# One copy runs on every host of the job, unchanged: each host finds its rank in compose/hosts\n"
    "# (node 0, the master, first) by its own name or address. Run `docker compose -f compose/node.yaml up`\n"
    "# (or podman-compose) on all of them.\n"
)
RANK_MISSING = "NODE_RANK must be set: {ranks} (see compose/.env.example)"
MASTER_MISSING = "MASTER_ADDR must be set: the master host's address on the training network (see compose/.env.example)"
SERVICE = "node"
# docker and podman refuse a --device path that does not exist: only an RDMA spec lists it.
RDMA_DEVICES = "/dev/infiniband"
SHM_SIZE = "64gb"
# NVIDIA's recommended limits for PyTorch containers: unlimited locked memory (RDMA) and a 64 MiB stack.
GPU_ULIMITS = {"memlock": -1, "stack": 67108864}
HOSTS_FILE = "hosts"  # compose/hosts, beside node.yaml
HUGEPAGES = "/dev/hugepages"


def _node_env(r: Resolved) -> Dict[str, str]:
    nnodes = "${NNODES:-" + str(r.spec.nodes) + "}"
    port = "${MASTER_PORT:-" + str(r.spec.launcher.master_port) + "}"
    env = {**user_env(r), **contract_env(r)}
    if not r.spec.hosts:  # with a hosts list, the master is its first host
        env["MASTER_ADDR"] = "${MASTER_ADDR:?" + MASTER_MISSING + "}"
    env.update({"NNODES": nnodes, "NODEWEAVE_NNODES": nnodes, "MASTER_PORT": port, "NODEWEAVE_MASTER_PORT": port,
                "NODEWEAVE_IMAGE_REF": image(r), **token_env(r)})  # the check-in shows which image each node runs
    if r.spec.launcher.exchange:  # host network: the exchange listens on the training network's address, not on
        env["NODEWEAVE_EXCHANGE_BIND"] = "route"  # every NIC (with the exchange off nothing listens: refused there)
    if not r.spec.nodes.elastic and not r.spec.hosts:  # c10d, or the hosts list, hands out the ranks
        env["NODE_RANK"] = "${NODE_RANK:?" + RANK_MISSING.format(ranks=rank_words(r)) + "}"
    return env


def _gpu_access(r: Resolved) -> Dict[str, Any]:
    gpu_vendor = r.vendor.key
    if gpu_vendor == "nvidia":
        count = "all" if r.spec.gpus_per_node == "auto" else r.spec.gpus_per_node
        reservation = {"driver": "nvidia", "count": count, "capabilities": ["gpu"]}
        access: Dict[str, Any] = {"deploy": {"resources": {"reservations": {"devices": [reservation]}}}}
        if r.spec.network.rdma:
            access["devices"] = [RDMA_DEVICES]
        return access
    if gpu_vendor == "amd":
        # Numeric host GIDs: the groups that own /dev/kfd and /dev/dri/renderD* on the host,
        # which need not exist by name (or with the same number) inside the image.
        video, render = r.vendor.host_group_ids
        return {
            "devices": [*r.vendor.host_devices, *([RDMA_DEVICES] if r.spec.network.rdma else [])],
            "group_add": [f"${{VIDEO_GID:-{video}}}", f"${{RENDER_GID:-{render}}}"],
        }
    return {}


def node_service(r: Resolved) -> Dict[str, Any]:
    gpu_vendor = r.vendor.key
    service: Dict[str, Any] = {
        "image": image(r),
        # compose wants container names of 2+ characters; a job name may be a single letter.
        "container_name": f"{r.spec.name}-node",
        "command": command(r),
        "working_dir": literal(r.spec.workspace.path),
        "network_mode": "host",
        "ipc": "host",
        # docker ignores shm_size under `ipc: host`; podman-compose has no `ipc`, and this keeps
        # /dev/shm (NCCL, DataLoader workers) off podman's 64 MiB default there.
        "shm_size": SHM_SIZE,
        "environment": _node_env(r),
        "volumes": volumes(r) + [token_mount()],
        "stop_grace_period": f"{r.spec.kubernetes.grace_period}s",
        **restart_policy(r),
        **_gpu_access(r),
    }
    if gpu_vendor != "cpu":
        service["ulimits"] = dict(GPU_ULIMITS)
        if r.spec.security.ipc_lock:  # false: memlock=-1 above is all verbs need
            service["cap_add"] = ["IPC_LOCK"]
    service.update(_security(r, service.get("cap_add", [])))
    service.update(_limits(r))
    if r.spec.hosts:
        service["volumes"].append(f"./{HOSTS_FILE}:{HOSTFILE_PATH}:ro")
    if r.spec.resources.hugepages:
        service["volumes"].append(f"{HUGEPAGES}:{HUGEPAGES}")
    return service


def _security(r: Resolved, base_caps: List[str]) -> Dict[str, Any]:
    """``security.cap_add`` beside the GPU images' IPC_LOCK; ``seccomp: unconfined`` as ``security_opt``."""
    out: Dict[str, Any] = {}
    caps = base_caps + [cap for cap in r.spec.security.cap_add if cap not in base_caps]
    if caps:
        out["cap_add"] = caps
    if r.spec.security.seccomp == "unconfined":
        out["security_opt"] = ["seccomp=unconfined"]
    return out


def _limits(r: Resolved) -> Dict[str, Any]:
    """Compose's CPU and memory limits and memory reservation (a CPU request has no compose form)."""
    res, out = r.spec.resources, {}
    if "cpu" in res.limits:
        out["cpus"] = quantities.docker_cpus(res.limits["cpu"])
    if "memory" in res.limits:
        out["mem_limit"] = quantities.docker_bytes(res.limits["memory"])
    if "memory" in res.requests:
        out["mem_reservation"] = quantities.docker_bytes(res.requests["memory"])
    return out


def render_node(r: Resolved) -> str:
    document: Dict[str, Any] = {"name": r.spec.name, "services": {SERVICE: node_service(r)}}
    if named_volumes(r):
        document["volumes"] = named_volumes(r)
    note = (f"# Node 0 serves Prometheus' /metrics on port {r.spec.metrics.port} of its host (the host network: "
            "nothing to publish;\n# docs/observability.md).\n") if r.spec.metrics.enabled else ""
    return dump(document, (PREAMBLE_HOSTS if r.spec.hosts else PREAMBLE.format(ranks=rank_words(r))) + note)


# Who reads the hosts list, as its header says: the compose file that mounts it, or (bare hosts, ``up --engine
# none``) the entrypoint installed on each host, through NODEWEAVE_HOSTFILE (walk15b B18: the bare hosts' copy said
# compose/node.yaml mounts it, where no compose file is).
HOSTS_READERS = {
    "compose": "compose/node.yaml mounts this file in each host's container, where NODEWEAVE_HOSTFILE names it",
    "bare": "`nodeweave up --engine none` wrote this file on each host; NODEWEAVE_HOSTFILE names it for the\n"
            "# nodeweave-entrypoint installed there (no compose file, no container)",
}


def render_hosts(r: Resolved, reader: str = "compose") -> str:
    """``compose/hosts`` (or, ``reader`` "bare", the copy bare hosts get): the spec's hosts, node 0 first, as the
    entrypoint's ``--hostfile`` reads them."""
    spares, nodes = r.spec.recovery.spare_nodes, r.spec.nodes.max
    last = f"; the spare host(s) last, ranks {_span(nodes, nodes + spares - 1)}" if spares else ""
    header = (f"# Rendered by nodeweave from the cluster spec (hosts): node 0, the master, first{last}.\n"
              f"# {HOSTS_READERS[reader]};\n"
              "# each host finds its rank by its own name or address.\n")
    return header + "".join(f"{host}\n" for host in r.spec.hosts)


def render_env_example(r: Resolved) -> str:
    """The per-host settings compose reads from compose/.env; the per-host values are left blank on purpose."""
    if r.spec.hosts:
        lines = [
            "# Generated by nodeweave from the cluster spec (nodeweave.yaml).",
            "# Optional: ranks and the master come from compose/hosts, so nothing differs per host.",
            "",
        ]
    else:
        lines = [
            "# Generated by nodeweave from the cluster spec (nodeweave.yaml).",
            "# Copy to compose/.env on every host and fill in the blanks; compose refuses to start without them.",
            "",
            *_rank_lines(r),
            "# The master host's address on the training network (an IP or a name every host resolves).",
            "MASTER_ADDR=",
            "",
        ]
    lines += [
        f"# {_count_words(r)} and rendezvous port (from the spec: {r.spec.launcher.master_port}).",
        f"NNODES={r.spec.nodes}",
        f"MASTER_PORT={r.spec.launcher.master_port}",
        "",
        "# Pin an exact image (e.g. a <variant>-<git sha> tag) instead of the moving tag.",
        "# NODEWEAVE_IMAGE=",
    ]
    vendor = r.vendor
    if vendor.key == "amd":
        video, render = vendor.host_group_ids
        lines += [
            "",
            "# ROCm: the host groups that own /dev/kfd and /dev/dri/renderD* (`getent group video render`).",
            f"VIDEO_GID={video}",
            f"RENDER_GID={render}",
        ]
    return "\n".join(lines) + "\n"


def _rank_lines(r: Resolved) -> List[str]:
    if r.spec.nodes.elastic:
        return [f"# Elastic job (nodes: {r.spec.nodes}): the c10d rendezvous assigns node ranks, so no NODE_RANK."]
    return [f"# {rank_words(r)[0].upper()}{rank_words(r)[1:]}.", "NODE_RANK="]


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first} to {last}"


def rank_words(r: Resolved) -> str:
    """Which NODE_RANK each host takes, as every per-host instruction says it: under recovery the spare hosts
    take the ranks after the training nodes' (walk17b B3: "1 to N-1 on the others" never started the spare)."""
    spares, nodes = r.spec.recovery.spare_nodes, r.spec.nodes.max
    if not spares:
        return "0 on the master host, 1 to N-1 on the others"
    others = f", {_span(1, nodes - 1)} on the other training host(s)" if nodes > 1 else ""
    return f"0 on the master host{others}, {_span(nodes, nodes + spares - 1)} on the spare host(s)"


def _count_words(r: Resolved) -> str:
    """NNODES's line: under recovery it is the training count, never the host count (the spares wait beside)."""
    if not r.spec.recovery.spare_nodes:
        return f"Node count (from the spec: {r.spec.nodes})"
    return (f"Training node count (from the spec: {r.spec.nodes}; the {r.spec.recovery.spare_nodes} spare "
            "host(s) not counted)")
