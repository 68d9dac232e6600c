"""Whether the nodes of a remote target can pull the image ``up`` gives them (walk2 W3).

An image named ``localhost/...`` (the spec's default ``image.registry``, podman's prefix for this
machine's own images) or ``localhost:5000/...`` lives on this machine: a Kubernetes or OpenShift
node, a Slurm compute node's pyxis/enroot, or a bare host's engine looks for it in its own store or
registry and fails with ImagePullBackOff / "manifest unknown" / "no such image" after the nodes
were started. ``up`` (and its dry run) says so first, naming the remedy: a registry they reach and
``image build --push``, or (bare hosts) the image loaded on every host.
"""

from __future__ import annotations

from typing import Optional

MACHINE_LOCAL = ("localhost", "127.0.0.1", "[::1]")
WHO_PULLS = {"kubernetes": "the cluster's nodes pull it",
             "slurm": "pyxis/enroot on the compute nodes pull it",
             "hosts": "each host's engine looks for it in its own store"}


def machine_local(ref: str) -> bool:
    """``localhost/x``, ``localhost:5000/x``, ``127.0.0.1:5000/x``: a name only this machine resolves."""
    first, slash, _ = ref.partition("/")
    return bool(slash) and first.split(":")[0] in MACHINE_LOCAL or first.startswith("[::1]")


def unpullable_note(ref: Optional[str], target: str) -> Optional[str]:
    """One sentence when ``target``'s nodes cannot pull ``ref`` from where it is; None where they can (or it runs
    here: the local target)."""
    if not ref or target not in WHO_PULLS or not machine_local(ref):
        return None
    host = ref.partition("/")[0]
    remedy = "set image.registry in the spec to a registry they reach and `nodeweave image build --push`"
    if target == "kubernetes":
        remedy += " (OpenShift: `nodeweave image build -t openshift` builds into the cluster's own registry)"
    if target == "hosts":
        remedy += (", give --image REGISTRY/NAME:TAG, or load the image on every host first (podman save | ssh "
                   "HOST podman load)")
    return (f"image {ref} names {host}/, this machine's own store, and {WHO_PULLS[target]}: the nodes would "
            f"fail to pull it; {remedy}")
