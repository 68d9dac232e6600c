"""Rank 0 must be the master: catch two nodes claiming rank 0 before the launcher hangs.

Rank 0 hosts the rendezvous store at MASTER_ADDR. A second node told it is
rank 0 (a copied ``.env``, a wrong ``NODE_RANK``) would host a store of its
own on its own port and wait, like the real master, for a world that never
completes: a silent hang until the rendezvous timeout. Checked before node 0
opens its check-in exchange (a refusal needs no port, so a busy one cannot hide
it), on a live root only: MASTER_ADDR must resolve to an address this node can
bind (or loopback), else exit 3 naming both.
"""

from ..detection.net import resolve
from ..errors import TopologyError

LAUNCHERS_WITH_RENDEZVOUS = ("torchrun", "deepspeed", "accelerate")


def _is_local(ip):
    if ip.startswith("127."):
        return True
    import socket  # here, not at import: socket costs ~10 ms of every start-up

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((ip, 0))
        return True
    except OSError:
        return False


def check_master_is_self(plan, root):
    """Raise TopologyError when this node is rank 0 but MASTER_ADDR is another host: node 0 of any job, one node
    too, hosts the rendezvous (walk9 B24: a single-node start in a shell that still held a cluster's MASTER_ADDR
    hung in torchrun, 160 lines of C++ frames)."""
    topo = plan.topology
    if not root.real or not topo.is_master:
        return
    if plan.launch.launcher not in LAUNCHERS_WITH_RENDEZVOUS:
        return
    master = topo.master_addr.value
    ip, how = resolve(root, master)
    if ip is None or _is_local(ip):
        return
    if topo.nnodes_max <= 1:
        raise TopologyError(
            f"this node ({plan.node.hostname}) is the only node of the job, which hosts its own rendezvous, but "
            f"master {master} ({topo.master_addr.source}) is {ip} ({how}), not an address of this node: a "
            f"MASTER_ADDR left from another job's shell? {plan.launch.launcher} would wait on it until its timeout. "
            f"Accepted: leave {_named(topo.master_addr.source)} unset for a single node (then 127.0.0.1), or an "
            f"address of this node")
    raise TopologyError(
        f"this node ({plan.node.hostname}) is node rank 0 ({topo.node_rank.source}), which hosts the rendezvous, "
        f"but master {master} ({topo.master_addr.source}) is {ip} ({how}), not an address of this node: "
        f"two nodes claim rank 0, or MASTER_ADDR names another host. Give rank 0 only to the node "
        f"MASTER_ADDR names and 1..{topo.nnodes_max - 1} to the others")


def _named(source):
    """The variable or flag a value's source names (``NODEWEAVE_MASTER_ADDR=10.1.2.3``: NODEWEAVE_MASTER_ADDR)."""
    name = source.split("=", 1)[0]
    return name[len("flag "):] if name.startswith("flag ") else name


def master_port_busy(plan, root):
    """Why node 0's launcher could not host its rendezvous store on the master port, or None: another program
    listens on it (another job, a leftover torchrun). torchrun then ended node 0 with exit 1 and a 30-line
    EADDRINUSE traceback after every node had checked in, and under recovery the busy port was blamed on node 0
    and the spare it was replaced by (walk8 B13, B14). Probed as the store binds it (every address, the address
    reused), on node 0 of any job (one node too: walk9 B24) with a launcher that hosts one, on a live root only."""
    topo = plan.topology
    if not root.real or not topo.is_master or plan.launch is None \
            or plan.launch.launcher not in LAUNCHERS_WITH_RENDEZVOUS:
        return None
    import errno
    import socket

    port = topo.master_port.value
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("", port))
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            return None  # not ours to judge (no IPv4, a sandbox): the launcher says it
        return (f"master port {port} ({topo.master_port.source}) is in use on this node (node 0): another program "
                f"listens on it (another job, a leftover torchrun), so {plan.launch.launcher}'s rendezvous store "
                f"cannot start here; accepted: a free port as NODEWEAVE_MASTER_PORT (launcher.master_port), or stop "
                f"what listens on {port} (ss -ltnp 'sport = :{port}')")
    return None
