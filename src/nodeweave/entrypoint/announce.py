"""What a node says and writes just before it launches (``loop.Start.ready``, for every generation of every
start), and the entrypoint's one way to say a line."""

import os
import sys

from .errors import EXIT_FAILURE, EntrypointError
from .hostport import host_port
from .model import SUPERVISED

PROG = "nodeweave-entrypoint"


def say(text):
    from .quoting import bounded  # a value quoted whole made lines of 200 KB (walk18b B9)

    print(f"{PROG}: {bounded(text)}", file=sys.stderr, flush=True)


def summary(plan, session=None, watched=False, identity=None):
    """The line a node says as it launches. ``identity`` (recovery's generations): the node's own index among nodes
    + spares, said as "node N" as node 0's lines name it, its place in the generation as its training rank (walk12
    B3: node 1 training as rank 2 said "node 2 of 3", the words node 0 uses for node 2)."""
    t, launch = plan.topology, plan.launch
    set_vars = " ".join(f"{v.name}={v.value}" for v in plan.env if v.action == "set") or "no NCCL/RCCL variables"
    each = f"{t.nproc_per_node.value} process(es) each"
    if t.node_procs and len(set(t.node_procs)) > 1:  # uneven nodes: not "each" (fix13d)
        each = f"{t.nproc_per_node.value} process(es) here, world size {t.world_size}"
    checked = ""
    if session is not None:
        warned = [p["check"] for p in session.verdict["problems"]]
        each = f"{t.nproc_per_node.value} process(es) here, world size {t.world_size}" if t.world_size else each
        checked = f"; checked in{' with warnings: ' + ', '.join(warned) if warned else ''}" + (
            ", heartbeat on" if session.watch else "")
    where = (f"node {t.node_rank.value} of {t.nnodes.value}" if identity is None else
             f"node {identity} (training rank {t.node_rank.value} of {t.nnodes.value})")
    return (f"{where}, {each}, "
            f"master {host_port(t.master_addr.value, t.master_port.value)}; sets {set_vars}{checked}; "
            f"{'run' if launch.launcher in SUPERVISED or watched else 'exec'} {launch.argv[0]}")


def write_files(files):
    for path, content in files.items():
        from .running.runstate import write_whole  # only where a file is written: the start-up path stays light

        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_whole(path, content)
        except OSError as err:
            raise EntrypointError(f"cannot write {path}: {err.strerror}; set TMPDIR to a writable directory",
                                  EXIT_FAILURE) from None
