"""One module per cluster target, each a :class:`~nodeweave.cluster.base.Backend` (its five: nodes, states, plan up,
plan down, logs; what only combines them is ``nodeweave.cluster.onbackend``'s).

``local`` (compose on podman/docker), ``hosts`` (ssh, compose or the bare
hosts), ``kube`` (Kubernetes/OpenShift, ``kubectl``/``oc apply -k``) and
``slurm`` (an allocation, a run one ``srun`` step). They may import the shared
run engine beside them (``nodeweave.cluster.base``, ``runner``, ``options``,
``token``), ``nodeweave.steps`` and ``nodeweave.remote``; nothing in ``nodeweave.cluster``
imports them except :func:`nodeweave.cluster.open_backend`.
"""
