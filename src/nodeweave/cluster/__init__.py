"""Operate a cluster: bring it up (hold or run), run jobs in it, watch, stop, take it down.

One module per target under ``backends/``, each a :class:`~nodeweave.cluster.base.Backend`:

- ``local``: ``compose/local.yaml`` on podman or docker, one container per node;
- ``hosts``: bare hosts over ssh, docker/podman compose on each (or the hosts themselves);
- ``kube``: Kubernetes/OpenShift, ``kubectl``/``oc apply -k`` of the rendered tree;
- ``slurm``: an allocation (``salloc --no-shell``), each run one ``srun`` step over its nodes.

Every node is reached only through ``nodeweave.remote`` (its exec channel),
and every job through the node's own entrypoint (``nodeweave-entrypoint
--mode run --run-id ...``), so rank, master, NCCL/RCCL variables and the
launcher come from the same plan as a container started in run mode. The run
engine (``runner``), its folder (``runfolder``), sweeps (``sweep``), status
(``status``) and logs (``logs``) are shared by all targets; docs/cluster.md
is the manual.
"""

from __future__ import annotations

from pathlib import Path

from nodeweave.cluster.base import Backend, Node
from nodeweave.cluster.options import ClusterOptions
from nodeweave.spec import Spec


def open_backend(spec: Spec, spec_path: Path, options: ClusterOptions) -> Backend:
    """The backend for ``options.target`` (options already checked)."""
    if options.target == "hosts":
        from nodeweave.cluster.backends.hosts import HostsCluster

        return HostsCluster(spec, spec_path, options)
    if options.target == "slurm":
        from nodeweave.cluster.backends.slurm import SlurmCluster

        return SlurmCluster(spec, spec_path, options)
    if options.target == "kubernetes":
        from nodeweave.cluster.backends.kube import KubeCluster

        return KubeCluster(spec, spec_path, options)
    from nodeweave.cluster.backends.local import LocalCluster

    return LocalCluster(spec, spec_path, options)


__all__ = ["Backend", "ClusterOptions", "Node", "open_backend"]
