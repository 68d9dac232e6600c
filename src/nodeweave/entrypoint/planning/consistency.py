"""Values that contradict each other or the machine are never silently accepted.

:mod:`topology` makes every field's claims agree; this module holds the
checks that weigh one value against another kind of fact:

- the hostname ordinal against the rank the other sources give (a
  StatefulSet or Indexed Job pod's ordinal *is* its index);
- ``WORLD_SIZE`` and ``RANK`` against nodes x processes and the node rank;
- a defaulted single node against anything that says there are more nodes;
- Slurm's or MPI's tasks per node against one launcher per node;
- ``*_VISIBLE_DEVICES`` and the chosen socket interfaces against the node.

A malformed value is exit 2 (UsageError), a contradiction exit 3
(TopologyError); each message names the variable, its value and what would
be accepted.
"""

import os

from .contract import read_host, read_int
from ..detection.host import host_networking
from ..errors import TopologyError
from ..model import FLAG, HOSTNAME
from .rules import emit

LAUNCHERS_WITH_WORKERS = ("torchrun", "deepspeed", "accelerate")


def weigh_ordinal(rank, rank_claim, ordinal, claims, scene, warnings):
    """(rank, source): the decided rank checked against the hostname ordinal, or the ordinal when none.

    A ``<name>-<N>`` hostname that survived the host-networking test was given
    to this container (a StatefulSet or Indexed Job pod, a compose service),
    so ``N`` is its index, and a variable that says otherwise is baked into a
    template that every node shares. Only a platform that names its pods its
    own way (a row's ``own_naming``: Kubeflow's master/worker pods, LWS,
    SageMaker's ``algo-N``, Slurm, MPI, a hostfile, ...) or a flag may differ from it.
    """
    if ordinal is None:
        return rank, rank_claim.source if rank_claim else None
    number = int(ordinal.value)
    if rank is None:
        return number, ordinal.source
    source = rank_claim.source
    prefix = next(c.value for c in claims["prefix"])
    owners = [c.origin.name for c in claims["node_rank"] if c.tier != HOSTNAME and c.origin.own_naming(prefix)]
    if rank == number:
        scene.notes.append(f"node rank: {ordinal.source} agrees with {source}")
    elif rank_claim.tier == FLAG:
        emit(warnings, "flag-overrides-source", f"node rank: {source} ({rank}) overrides the {ordinal.source}")
    elif owners:
        scene.notes.append(f"node rank: the {ordinal.source} is no rank under {owners[0]}, which names its pods "
                           "its own way")
    else:
        raise TopologyError(
            f"node rank sources disagree: {source} but {scene.name_source} {scene.pod_name!r} has ordinal {number}, "
            f"this {'pod' if scene.kube else 'container'}'s index (a rank baked into a template every node shares "
            f"gives them all rank {rank}); remove {source.partition('=')[0]}, or pass --node-rank to override")
    return rank, source


def _is_local(host, node):
    short = host.split(".")[0]
    return (host in ("localhost", "::1") or host.startswith("127.") or short == node.hostname.split(".")[0]
            or any(host in iface.ipv4 for iface in node.interfaces))


def multi_node_signal(claims, node, nproc):
    """What says this is one node of several, when no node count does; None when nothing does."""
    for claim in claims.get("rank", ()):
        if read_int(0)(claim.value, "rank", claim.source) >= nproc:
            return f"{claim.source} is a rank beyond this node's {nproc} process(es)"
    for claim in claims.get("world_size", ()):
        if read_int(1)(claim.value, "world size", claim.source) > nproc:
            return f"{claim.source} counts more processes than this node's {nproc}"
    for claim in claims.get("master_addr", ()):
        if not _is_local(read_host(claim.value, "master address", claim.source), node):
            return f"{claim.source} names another host as the master"
    return None


def check_processes(claims, rank, lo, hi, nproc, nproc_source):
    """``WORLD_SIZE`` must count this job (processes, or pods as older Kubeflow does); ``RANK`` must be this node's."""
    for claim in claims.get("world_size", ()):
        world = read_int(1)(claim.value, "world size", claim.source)
        counts = range(lo, hi + 1)
        if world not in {n * nproc for n in counts} | set(counts):
            nodes = str(hi) if lo == hi else f"{lo}..{hi}"
            raise TopologyError(
                f"{claim.source} contradicts {nodes} node(s) x {nproc} process(es) per node ({nproc_source}); "
                f"accepted: {hi * nproc} (processes) or {hi} (pods), or unset it: nodeweave exports WORLD_SIZE")
    for claim in claims.get("rank", ()):
        value = read_int(0)(claim.value, "rank", claim.source)
        first, last = rank * nproc, rank * nproc + nproc - 1
        if value != rank and not first <= value <= last:
            raise TopologyError(
                f"{claim.source} contradicts node rank {rank} with {nproc} process(es) per node; accepted: {rank} "
                f"(this pod's rank) or {first}..{last} (its processes' global ranks), or unset it")


def _worker_values(rank, lo, hi, nproc):
    """What each per-process variable of torchrun's (and the unread NPROC_PER_NODE) may hold in this plan."""
    first = rank * nproc
    return {
        "LOCAL_WORLD_SIZE": ([nproc], "processes per node"),
        "NPROC_PER_NODE": ([nproc], "processes per node"),
        "LOCAL_RANK": (list(range(nproc)), "a process's index on its node"),
        "GROUP_RANK": ([rank], "this node's rank"),
        "GROUP_WORLD_SIZE": (list(range(lo, hi + 1)), "nodes"),
        "ROLE_RANK": (list(range(first, first + nproc)), "a process's global rank on this node"),
        "ROLE_WORLD_SIZE": ([n * nproc for n in range(lo, hi + 1)], "processes in the job"),
    }


def _accepted(values):
    return str(values[0]) if len(values) == 1 else f"{values[0]}..{values[-1]}"


def check_worker_variables(env, rank, lo, hi, nproc, nproc_source, notes):
    """torchrun's per-process variables (``LOCAL_WORLD_SIZE``, ``LOCAL_RANK``, ``GROUP_RANK``, ``ROLE_*``) set
    for the node, and ``NPROC_PER_NODE`` (which neither torchrun nor nodeweave reads): a value the plan
    contradicts is refused as ``WORLD_SIZE`` is (exit 3, walk2 M6); one that fits is noted as replaced."""
    for name, (values, what) in _worker_values(rank, lo, hi, nproc).items():
        text = env.get(name, "").strip()
        if not text:
            continue
        value = read_int(0)(text, what, f"{name}={text}")
        if value not in values:
            fix = ("set the count with --nproc-per-node (NODEWEAVE_NPROC_PER_NODE, the spec's gpus_per_node)"
                   if name == "NPROC_PER_NODE" else "the launcher sets it for each process it starts")
            raise TopologyError(
                f"{name}={text} contradicts {hi if lo == hi else f'{lo}..{hi}'} node(s) x {nproc} process(es) per "
                f"node ({nproc_source}), node rank {rank}; accepted ({what}): {_accepted(values)}, or unset it: {fix}")
        notes.append(f"{name}={text} fits the plan; "
                     + ("nothing reads it (the count is --nproc-per-node)" if name == "NPROC_PER_NODE" else
                        "the launcher replaces it for each process it starts"))


def check_tasks(claims, launcher):
    """One launcher per node: a scheduler's extra tasks on a node (Slurm, MPI) would each start a whole launcher."""
    for claim in claims.get("tasks_per_node", ()):
        if int(claim.value) > 1 and launcher in LAUNCHERS_WITH_WORKERS:
            origin = claim.origin
            raise TopologyError(
                f"{claim.source}: {origin.name} starts {claim.value} tasks on a node and each would start its own "
                f"{launcher}, {claim.value} times the processes; nodeweave runs one launcher per node, which starts "
                f"the processes: {origin.one_task} (launcher command runs one command per task)")


def check_machine(node, settings):
    """Settings that name hardware this node does not have."""
    gpus = node.gpus
    if gpus and gpus.visible_invalid:
        value = settings.env.get(gpus.visible_env, "")
        total = len(gpus.devices)
        raise TopologyError(
            f"{gpus.visible_env}={value}: {', '.join(gpus.visible_invalid)} names no GPU of this node, which has "
            f"{total}; the runtime would drop it and every entry after it, silently shrinking the job; accepted: "
            f"indices 0..{total - 1} or these GPUs' UUIDs")
    chosen = settings.get("interfaces") or []
    names = [iface.name for iface in node.interfaces]
    missing = [name for name in chosen if name not in names]
    if missing and names:
        raise TopologyError(
            f"{settings.source('interfaces')}={','.join(chosen)}: {', '.join(missing)} is not an interface of "
            f"this node; accepted: {', '.join(names)} (names under /sys/class/net)")


def missing_script(launcher, command, cwd):
    """The one-line reason a Python script the launcher would start on every rank is not there, or None."""
    script = None
    if launcher in LAUNCHERS_WITH_WORKERS and command and not command[0].startswith("-"):
        script = command[0]
    elif launcher == "command" and len(command) > 1 and command[0].rsplit("/", 1)[-1].startswith("python") \
            and not command[1].startswith("-"):
        script = command[1]
    if script is None or os.path.isfile(os.path.join(cwd, script)):
        return None
    return (f"script {script!r} is not in the working directory {cwd} (launcher {launcher} would start it on every "
            "rank); copy it there (nodeweave sync), or fix launcher.script / the container's command")



LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def is_loopback(address):
    text = str(address or "").strip().lower()
    return text in LOOPBACK_NAMES or text.startswith("127.") or text == "::1"


def check_loopback_master(topo, node, settings, contained, warnings=None):
    """A multi-node job whose master is loopback, in a container with a network namespace of its own (only
    virtual interfaces, and ``contained``: a container's marker file or a pod): each node would reach only
    itself, and every node would wait out the deadline. One machine running every node (its own NICs) may be
    meant (a test), so a worker there is warned, not refused: it waits for node 0 on its own loopback, and a
    node 0 on another machine is never reached (walk5 W48: node 1 of 2 waited 600 s without a word)."""
    if topo.nnodes_max <= 1 or not is_loopback(topo.master_addr.value):
        return
    if "address" in (settings.get("exchange_allow") or []):
        return
    if not contained or host_networking(node):
        if topo.node_rank.value and warnings is not None:
            from .rules import emit

            emit(warnings, "loopback-master", f"master address {topo.master_addr.value} ({topo.master_addr.source})"
                 f" names this machine itself, and this is node {topo.node_rank.value} of {topo.nnodes.value}: only "
                 "a node 0 on this same machine is reached; on several machines give node 0's name or address")
        return
    raise TopologyError(
        f"master address {topo.master_addr.value} is this container's own loopback ({topo.master_addr.source}), "
        f"but this is node {topo.node_rank.value} of {topo.nnodes.value} and the container has a network namespace "
        "of its own (only virtual interfaces): no other node can reach it, nor it them; set MASTER_ADDR to node 0's "
        f"name or address on its network (in compose: <name>-0), or {_all_here(node, settings)}")


def _all_here(node, settings):
    """The way out where every node runs in this one container. The allow is refused with the exchange off (it
    does nothing to a check-in that never happens), so there the master is the container's own address."""
    if settings.get("exchange") is not False:
        return "NODEWEAVE_EXCHANGE_ALLOW=address if every node runs in this one container"
    own = [f"{address} ({i.name})" for i in node.interfaces if i.kind != "loopback" for address in i.ipv4]
    return ("if every node runs in this one container, to this container's own address, " +
            (", ".join(own) if own else "which it has none of but loopback here") +
            f" (with the exchange off by {settings.source('exchange')}, NODEWEAVE_EXCHANGE_ALLOW=address is refused)")
