"""What the GPU vendors' own records say about a node's GPUs, beyond ``nvidia-smi`` (``check.gpu_facts``).

- the kernel log and NVIDIA's Xid events in it live in ``nodeweave.entrypoint.detection`` (``kernel_log``,
  ``xid``): node 0's metrics count them too;
- ``amd_smi``: ``amd-smi static --json`` and ``amd-smi metric --json`` read into the same rows as
  nvidia-smi's (uncorrectable/deferred ECC, violation status, clocks), for ROCm nodes.

Stdlib only; the worker calls these on each node, ``check.verdict`` judges what they return.
"""
