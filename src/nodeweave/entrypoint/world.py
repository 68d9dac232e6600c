"""Each node's processes -> the job's world size and each node's first global rank: the one rule (stdlib only).

A node's global ranks start at the sum of the processes of the nodes before it
(node-rank order) and the world size is the sum over every node, as torchrun,
DeepSpeed and Open MPI number them; nodes that run the same count are the case
where that is ``rank x count`` and ``nodes x count``. Every place that derives
a world size or a rank offset asks here: the topology (``WORLD_SIZE`` and the
``RANK``/``ROLE_*`` checks), the launchers' argv and the DeepSpeed hostfile, the
check-in's verdict and a recovery generation's members (walk12b B10, fix13d).
"""


def from_a_line(source):
    """Whether a process count was read from a hostfile's line (its source names the hostfile): such a count is
    this node's own, kept into a recovery generation or a spare's plan, where a count set for every node is not."""
    return "hostfile" in str(source)


def counts_of(procs):
    """Per-node process counts as ints, in node-rank order; None when one is not known (not an int)."""
    procs = list(procs or ())
    if not procs or not all(isinstance(p, int) and not isinstance(p, bool) for p in procs):
        return None
    return procs


def world_size(procs):
    """The sum of every node's processes (the counts known; 0 for none)."""
    return sum(p for p in (procs or ()) if isinstance(p, int) and not isinstance(p, bool))


def first_rank(procs, rank):
    """Node ``rank``'s first global rank: the processes of the nodes before it."""
    return world_size(list(procs)[:rank])


def ranks_of(procs, rank):
    """Node ``rank``'s global ranks, as a range."""
    first = first_rank(procs, rank)
    return range(first, first + procs[rank])


def even(procs):
    """Whether every node runs the same count."""
    return len(set(procs)) <= 1


def node_counts(line_slots, from_line, rank, nnodes, nproc):
    """Every node's processes of a fixed-size job of ``nnodes`` nodes, this one (``rank``) running ``nproc``.

    ``line_slots``: a hostfile's slots by line when every line gives them, else None; the training nodes are
    its first ``nnodes`` lines (spares follow them). They count when this node's own count came from a line
    (``from_line``: read there, or carried into a recovery generation or a spare's plan); a count set another
    way (``--nproc-per-node``, ``NODEWEAVE_NPROC_PER_NODE``, the spec) overrides every line alike, on every
    node. A recovery generation's real counts are its members', from the check-in (``launch.apply_counts``)."""
    if line_slots and from_line and len(line_slots) >= nnodes:
        counts = list(line_slots[:nnodes])
        counts[rank] = nproc
        return counts
    return [nproc] * nnodes


def described(procs):
    """``1+2+3`` for uneven counts, ``2 nodes x 4`` for even ones (a plan's reason)."""
    if even(procs):
        return f"{len(procs)} nodes x {procs[0] if procs else 0} processes"
    if len(procs) > 8:
        return f"every node's processes summed ({len(procs)} nodes, {min(procs)} to {max(procs)} each)"
    return f"every node's processes summed: {'+'.join(map(str, procs))}"
