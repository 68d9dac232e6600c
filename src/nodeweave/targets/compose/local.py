"""The local simulation: N node containers on one bridge network, so a laptop can run a multi-node job.

Each service's hostname is ``<name>-<i>``, the same shape a StatefulSet pod
gets, so the entrypoint finds its rank from the hostname ordinal and the
master at ``<name>-0`` exactly as it would in a cluster. It uses the ``cpu``
variant (gloo), sets no GPU, RDMA or memlock options (a laptop or CI runner
has none and may not raise rlimits), and leaves out the spec's interface and
HCA choices, which name the real hosts' NICs. A GPU spec's process count
(one per GPU) would swamp a laptop's CPUs, so its simulation runs ``auto``:
one process per simulated node; a ``cpu`` spec keeps its own count.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.targets.compose.common import (command, contract_env, dump, image, literal, named_volumes,
                                              restart_policy, token_env, token_mount, user_env, volumes)
from nodeweave.resolve import Resolved, resolve

LOCAL_VARIANT = "cpu"
NETWORK = "nodeweave"
# Docker's default /dev/shm is 64 MiB, too small for gloo and DataLoader workers (podman-compose
# does not support `ipc`, so the size is set directly).
SHM_SIZE = "1gb"
PREAMBLE = (
    "#\n"
    "# A multi-node job on one machine: `podman-compose -f compose/local.yaml up` (or docker compose).\n"
    "# Each service is one node; the entrypoint takes its rank from the hostname <name>-<i>.\n"
)


# The spec's interfaces, HCAs and hosts name the real hosts and their NICs, which local containers are not.
LOCAL_OMITS = ("interfaces", "exclude_hcas", "hostfile")


def dropped_note(spec) -> str:
    """One sentence naming the spec's network fields the local target leaves out (``LOCAL_OMITS``, and the RDMA
    devices it never passes), or "": they name the real hosts' NICs, and a setting tried locally seemed to work
    while no node had it (walk17a A25)."""
    net = spec.network
    found = [text for text in (f"network.interfaces ({', '.join(net.interfaces)})" if net.interfaces else "",
                               f"network.exclude_hcas ({', '.join(net.exclude_hcas)})" if net.exclude_hcas else "",
                               "network.rdma (true)" if net.rdma else "") if text]
    if not found:
        return ""
    return (f"{', '.join(found)} {'is' if len(found) == 1 else 'are'} not applied on the local target: its "
            "simulated nodes have one interface (eth0) and no HCA or RDMA device; the cluster targets apply "
            f"{'it' if len(found) == 1 else 'them'} (-t hosts, -t kubernetes, -t slurm)")


def local_service(r: Resolved, local: Resolved, index: int) -> Dict[str, Any]:
    """Simulated node ``index``: the spec's own settings (``r``) on the local variant's image (``local``)."""
    host = f"{r.spec.name}-{index}"
    return {
        "image": image(local),
        "hostname": host,
        "container_name": host,
        "command": command(r),
        "working_dir": literal(r.spec.workspace.path),
        "networks": [NETWORK],
        "shm_size": SHM_SIZE,
        "environment": {**user_env(r), **contract_env(local, omit=LOCAL_OMITS), **_processes(r),
                        "NODEWEAVE_IMAGE_REF": image(local), **token_env(r)},  # the check-in shows each node's image
        "volumes": volumes(r) + [token_mount()],
        "stop_grace_period": f"{r.spec.kubernetes.grace_period}s",
        **restart_policy(r),
    }


def _processes(r: Resolved) -> Dict[str, str]:
    """``auto`` (1 on a CPU node) instead of a GPU spec's one-per-GPU count."""
    return {} if r.vendor.key == "cpu" else {"NODEWEAVE_NPROC_PER_NODE": "auto"}


def metrics_port(r: Resolved) -> List[str]:
    """Node 0's /metrics published on this machine's loopback (docs/observability.md); none when off. Loopback:
    a laptop's Prometheus scrapes it, the network around the laptop does not. The host port is the engine's
    choice (``podman port <job>-0 9464`` names it): a fixed one made a second job on the same machine fail to
    start ("127.0.0.1:9464: address already in use"), a test suite's parallel jobs first; ``metrics.host_port``
    fixes it for a static scrape config, which a port moved by each up broke (walk12c C12)."""
    if not r.spec.metrics.enabled:
        return []
    port, host = r.spec.metrics.port, r.spec.metrics.host_port
    from nodeweave.entrypoint.hostport import host_port

    # compose's IP:HOST:CONTAINER (an empty HOST: the engine picks the host port)
    return [host_port("127.0.0.1", host_port(host or "", port))]


def render_local(r: Resolved) -> str:
    local = resolve(r.spec, LOCAL_VARIANT)  # the local simulation's own variant, once for every node
    services = {f"{r.spec.name}-{i}": local_service(r, local, i) for i in range(r.spec.containers)}
    if metrics_port(r):
        services[f"{r.spec.name}-0"]["ports"] = metrics_port(r)
    document = {
        "name": f"{r.spec.name}-local",
        "services": services,
        "networks": {NETWORK: {"driver": "bridge"}},
    }
    if named_volumes(r):
        document["volumes"] = named_volumes(r)
    return dump(document, PREAMBLE)
