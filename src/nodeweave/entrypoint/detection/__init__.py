"""Detection: what this machine has, read without side effects.

Owns the reads of sysfs/procfs and the platform (``sysfs.Root`` takes the
``--sysroot`` prefix so tests run on captured trees): GPUs (``gpu.py``), NICs,
interfaces and routes (``net.py``), limits, cloud and libraries (``host.py``),
the pod's Kubernetes facts and the API's answers (``kube.py``), and name lookups
that fall back on a name's last answer when the resolver stalls (``names.py``).
May import only the standard library, ``..model`` (the records it fills) and
``..errors``;
never planning, check-in or running, and never torch.
"""
