"""``nodeweave check``: find the slow node or link before a job burns a day on it.

Every node runs the check worker through its own entrypoint, exactly as
``nodeweave run`` starts a job (rank, master, NCCL/Gloo variables from the
node's plan), one process per node under torchrun:

- ``facts``: what the node is (stdlib: the entrypoint's detection, cgroup CPU
  limit, /dev/shm, memlock, disk, the planned interface, RDMA ports, boot id);
- ``gpu_facts``: ``nvidia-smi`` queries and ``dcgmi diag -r 1`` parsed;
- ``expected``: each GPU model's datasheet figures;
- ``probes``: the short measurements (CPU matmul, GPU matmul, GPU memory copy,
  point-to-point streams and ping-pong through torch.distributed);
- ``rounds``: the pairs of each round (⌈log2 N⌉ rounds of disjoint pairs);
- ``peers``: a subject against its peers (the best sample, the pass-by-pass
  ratio, what to repeat), which ``verdict`` and ``links`` both use;
- ``verdict``: which node or link is more than X% below the median of its
  peers, and why (pure, stdlib);
- ``worker``: the program each node runs; rank 0 prints the document;
- ``driver``: the workstation's side (the run engine, the run folder);
- ``report``: the table, the heat map of the matrix, the JSON.

docs/check.md is the manual.
"""

SCHEMA = "nodeweave.check/1"
MARK = "NODEWEAVE_CHECK_REPORT "  # the line rank 0 prints its document on
