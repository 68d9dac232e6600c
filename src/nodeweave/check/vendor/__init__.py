"""What the GPU vendors' own records say about a node's GPUs, beyond ``nvidia-smi`` (``check.gpu_facts``).

- ``kernel_log``: the kernel log as the node may read it (``/dev/kmsg``, ``dmesg``, ``journalctl -k``),
  and why not when it may not;
- ``xid``: NVIDIA's Xid events in that log, matched to this node's own GPUs by PCI address, with what
  each well-known code means and whether it names the node;
- ``amd_smi``: ``amd-smi static --json`` and ``amd-smi metric --json`` read into the same rows as
  nvidia-smi's (uncorrectable/deferred ECC, violation status, clocks), for ROCm nodes.

Stdlib only; the worker calls these on each node, ``check.verdict`` judges what they return.
"""
