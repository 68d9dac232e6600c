"""Who this node is: rank, node count, processes per node, master address and port.

The claims come from the rank-source table (:mod:`sources`: flags, variables,
Kubernetes, LWS, Volcano, SkyPilot, the cloud platforms of :mod:`platforms`,
Slurm, MPI, a hostfile, the hostname ordinal),
and every field is weighed by one rule:

1. a malformed value, wherever it comes from, is refused (exit 2);
2. a flag overrides; each claim it overrides is named in a warning;
3. variables and platforms must agree (exit 3 naming both): a silent choice is
   how two nodes end up with the same rank. Master addresses are the exception
   where a name beside an address is normal: only two different literal
   addresses contradict, other differences are noted;
4. the hostname ordinal is used only when nothing else names the rank, and
   must not contradict what does (:mod:`consistency`);
5. what is only checked (``WORLD_SIZE``, ``RANK``, Slurm's or MPI's tasks per node)
   must fit the plan.

Every value carries the source it came from.
"""

from . import consistency
from .contract import MASTER_PORT, NODES_MAX, NPROC_MAX, SCHEDULED_NODES_MAX, edge_space_refusal, plain_int, read_host, \
    read_int, read_port
from ..detection.host import host_networking
from ..errors import TopologyError, UsageError
from ..model import FLAG, HOSTNAME, PLATFORM, Topology, Value
from .rules import emit
from .sources import GPU_COUNTS, RANK_NAMES, Scene, collect, empty_platform, empty_variables, member_name, refusal, \
    said_empty, spares_forgotten
from .variables import inherited_output_lines, unknown_lines
from ..world import from_a_line, node_counts, world_size

DEFAULT_PORT = MASTER_PORT  # contract's, the example a port refusal gives too
RECOVERY_CONTAINERS = "recovery's containers"  # the count recovery.setup.identity_settings gives (nodes + spares)


class ReplicasWanted(Exception):
    """Planning needs StatefulSet ``name``'s replica count in ``namespace``: the caller reads it (the API,
    :func:`..detection.kube.statefulset_replicas`), puts it in ``Kube.replicas`` and plans again."""

    def __init__(self, name, namespace):
        super().__init__(f"statefulsets/{name} in {namespace}")
        self.name, self.namespace = name, namespace


def nnodes_accepted(most=NODES_MAX, example="2:4"):
    """What a node count accepts, said alike by every refusal of its form (digits, 1 or more, MIN <= MAX)."""
    return (f"N (e.g. 2) or MIN:MAX with MIN <= MAX (e.g. {example}), whole numbers from 1 to {most} in plain "
            "decimal digits (not 02, +2 or another script's digits)")


def normalize_nnodes(text, source, most=NODES_MAX):
    """("N" or "MIN:MAX", MIN, MAX) of a node count; UsageError naming the source. ``most``: the spec's range
    for ``nodes``, or, for a recovery job's containers (training nodes + spares), that plus the spares: the
    spec bounds ``nodes`` and ``recovery.spares`` each alone (walk7 B17: every node of 2048 + 64 refused)."""
    if str(text) != str(text).strip():  # walk8 B2: ' 2' was stripped and taken
        raise edge_space_refusal(text, "node count", source, f"{str(text).strip()!r}, with nothing around it")
    lo, colon, hi = str(text).partition(":")
    if not plain_int(lo) or (colon and not plain_int(hi)):
        dashed = str(text).strip().split("-")
        example = ":".join(dashed) if len(dashed) == 2 and all(plain_int(p) for p in dashed) else "2:4"
        raise UsageError(f"node count must be N or MIN:MAX in plain decimal digits, got {text!r} (from {source}); "
                         f"accepted: {nnodes_accepted(most, example)}")
    lo_n, hi_n = int(lo), int(hi) if colon else int(lo)
    if lo_n < 1 or hi_n < 1:  # walk8 B1: -2 was "must be ≥ 0", 0 "at least 1": one bound, one line
        raise UsageError(f"node count must be a whole number of 1 or more, got {text!r} (from {source}); "
                         f"accepted: {nnodes_accepted(most)}")
    if hi_n < lo_n:  # walk16 B13: the one refusal of the count that said nothing accepted
        raise UsageError(f"maximum nodes ({hi_n}) must be >= minimum nodes ({lo_n}) in {text!r} (from {source}); "
                         f"accepted: {nnodes_accepted(most, f'{hi_n}:{lo_n}')}")
    if hi_n > most:  # the spec's range for `nodes` (and, under recovery, its spares besides)
        if most == SCHEDULED_NODES_MAX:
            raise UsageError(f"node count must be at most {most}, got {text!r} (from {source}): more nodes than "
                             f"any cluster holds; accepted: the scheduler's real count, 1 to {most}")
        raise UsageError(f"node count must be at most {most}, got {text!r} (from {source})"
                         + (f"; accepted: 1 to {most} ({NODES_MAX} training nodes, or, under recovery on a "
                            "scheduler's allocation, its count less the spares; the spares besides)"
                            if most != NODES_MAX else f"; accepted: {nnodes_accepted()}")
                         + f" (a typed count; a scheduler's own count, such as SLURM_NNODES or a hostfile's lines, "
                           f"may go to {SCHEDULED_NODES_MAX})")
    return (str(lo_n) if lo_n == hi_n else f"{lo_n}:{hi_n}"), lo_n, hi_n


class _NoGpus(object):
    gpus = None


# Each topology row's reader of a value given to one node (a flag or the rendered variable), as ``discover``
# reads its claims: the spec's judge (``spec/loader._read_as_the_nodes_do``) reads the rendered text with these,
# so what every node would refuse is refused by validate (replay11 R3). ``nnodes`` at the typed bound, ``auto``
# processes at one GPU (a count of them is no refusal).
READERS = {
    "node_rank": read_int(0),
    "nnodes": lambda text, what, source: normalize_nnodes(text, source)[0],
    "nproc_per_node": lambda text, what, source: _read_nproc(_NoGpus())(text, what, source),
    "master_addr": read_host,
    "master_port": read_port,
}


def _spares(settings):
    spares = settings.get("spares", 0) or 0
    return spares if isinstance(spares, int) else 0


_read_port = read_port  # the one port reader (contract): its bounds, 1..65535, in every refusal (walk9 B27)


NPROC_ACCEPTED = (f"a whole number from 1 to {NPROC_MAX} in plain decimal digits (e.g. 8; not 08, +8 or -0), or auto "
                  "(the usable GPUs; 1 on CPU)")


def _read_nproc(node):
    usable = node.gpus.count if node.gpus and node.gpus.count else 1

    def read(text, what, source):
        if str(text) in ("auto", "gpu"):  # gpu: torchrun's word (Kubeflow Trainer's numProcPerNode), one per GPU
            return usable
        if str(text).strip().lower() in ("auto", "gpu", "cpu"):  # walk8 B6: every word named in the refusal
            meaning = ("torchrun's 'cpu' starts one process per CPU core, rarely a training job's wish; write the "
                       "number" if str(text).strip().lower() == "cpu" else f"write {str(text).strip().lower()!r}")
            raise UsageError(f"{what} {text!r} (from {source}) is not read here: {meaning}; accepted: "
                             f"{NPROC_ACCEPTED}")
        if not plain_int(str(text).strip()):
            raise UsageError(f"{what} must be a whole number or auto, got {text!r} (from {source}); accepted: "
                             f"{NPROC_ACCEPTED}")
        count = read_int(0)(text, what, source)
        if count < 1:
            raise UsageError(f"{what} must be 1 or more, got {text!r} (from {source}); accepted: {NPROC_ACCEPTED}")
        if count > NPROC_MAX:  # the spec's range for gpus_per_node
            raise UsageError(f"{what} must be at most {NPROC_MAX} (or auto), got {text!r} (from {source}); "
                             f"accepted: {NPROC_ACCEPTED}")
        return count
    return read


def _literal(host):
    return host.replace(".", "").isdigit() or ":" in host


def _contradicts(field, a, b):
    """Whether two normalised claims cannot both be right (a master's name beside its address can)."""
    if field == "master_addr":
        return a != b and _literal(a) and _literal(b)
    return a != b


def decide(claims, field, what, read, notes, warnings):
    """(value, claim) for one field, or (None, None); see the module docstring for the rule."""
    if not claims:
        return None, None
    weighed = [(read(c.value, what, c.source), c) for c in claims if c.tier != HOSTNAME]
    if not weighed:
        return None, None
    value, first = weighed[0]
    for other, claim in weighed[1:]:
        if first.tier == FLAG and claim.tier != FLAG:
            if other != value:
                emit(warnings, "flag-overrides-source", f"{what}: {first.source} ({first.value}) overrides {claim.source}")
        elif _contradicts(field, value, other):
            raise TopologyError(
                f"{what} sources disagree: {first.source} says {first.value} but {claim.source} says {claim.value}; "
                f"remove one, or pass --{field.replace('_', '-')} to override both")
        elif other != value:
            notes.append(f"{what}: {first.source} wins over {claim.source} ({claim.value})")
        else:
            notes.append(f"{what}: {claim.source} agrees with {first.source}")
    return value, first


def _hostname_claim(claims, field):
    return next((c for c in claims.get(field, ()) if c.tier == HOSTNAME), None)


def discover(settings, node, root, kube, warnings=None):
    """The :class:`Topology` of this node; raises TopologyError/UsageError for the user.

    ``kube`` is the :class:`..model.Kube` detection read; ReplicasWanted when the count must come from the API.
    """
    warnings = warnings if warnings is not None else []
    env = settings.env
    scene = Scene(settings, node, root, kube, host_networking(node))
    claims = collect(scene)
    notes = scene.notes
    for name in empty_variables(scene):
        emit(warnings, "empty-variable", f"{name} is set but empty, so it is read as unset")
    for line in unknown_lines(env):  # a mistyped NODEWEAVE_* name: the one list both programs read
        emit(warnings, "unknown-variable", line)
    for line in consistency.hidden_by_empty(node, env):  # set but empty, and read as "no GPU" (not as unset)
        emit(warnings, "empty-variable", line)
    for line in inherited_output_lines(env):  # what the entrypoint sets for its ranks, already set (dropped)
        emit(warnings, "nodeweave-output", line)
    rank, rank_claim = decide(claims.get("node_rank"), "node_rank", "node rank", READERS["node_rank"], notes,
                              warnings)
    from .slurm import training_most_of  # a big allocation's training count (walk11b B9)
    from .sources import hostfile_lines

    most = training_most_of(env, settings.get("recovery"), settings.get("spares", 0),
                            hostfile_lines(settings.get("hostfile"))) + (
        _spares(settings) if settings.get("recovery") else 0)  # recovery's containers
    # the typo bound is for a count someone typed; a scheduler's own count (SLURM_NNODES, a hostfile's lines, an
    # MPI size) is the allocation it made, bounded only by SCHEDULED_NODES_MAX (walk8 B19)
    scheduled = {c.source for c in claims.get("nnodes", ()) if c.tier == PLATFORM}
    nnodes, nnodes_claim = decide(claims.get("nnodes"), "nnodes", "nnodes",
                                  lambda v, w, s: normalize_nnodes(v, s, SCHEDULED_NODES_MAX if s in scheduled
                                                                   else most)[0], notes, warnings)
    nproc, nproc_claim = decide(claims.get("nproc_per_node"), "nproc_per_node", "processes per node",
                                _read_nproc(node), notes, warnings)
    ordinal = _hostname_claim(claims, "node_rank")
    rank, rank_src = consistency.weigh_ordinal(rank, rank_claim, ordinal, claims, scene, warnings)
    platform = rank_claim.origin.name if rank_claim else ordinal.origin.name if ordinal else None
    prefix = _hostname_claim(claims, "prefix")
    prefix = prefix.value if prefix else None
    nnodes_src = nnodes_claim.source if nnodes_claim else None
    nproc, nproc_src = _processes(nproc, nproc_claim, node, warnings)
    if nnodes is None:
        nnodes, nnodes_src = _count(scene, claims, rank, rank_src, prefix, nproc)
    nnodes, lo, hi = normalize_nnodes(nnodes, nnodes_src, SCHEDULED_NODES_MAX if nnodes_src in scheduled or (
        nnodes_claim is None and nnodes_src and nnodes_src.startswith("Kubernetes API")) else most)
    _recovery_has_another_node(settings, hi, nnodes_src)
    if rank is None:
        rank, rank_src = _no_rank(scene, hi)
    if rank >= hi:
        raise UsageError(f"node rank {rank} (from {rank_src}) is not below the node count {nnodes} "
                         f"(from {nnodes_src}); ranks run 0..{hi - 1}{_beyond_containers(nnodes_src, rank, hi)}"
                         f"{spares_forgotten(settings, rank, hi)}")
    procs = None if lo != hi else node_counts(_line_slots(claims), from_a_line(nproc_src), rank, hi, nproc)
    counts = consistency.job_counts(lo, hi, hi - _spares(settings) if str(nnodes_src).startswith(RECOVERY_CONTAINERS)
                                    else None)
    consistency.check_processes(claims, rank, lo, hi, nproc, nproc_src, procs, counts)
    consistency.check_worker_variables(env, rank, lo, hi, nproc, nproc_src, notes, procs, counts)
    consistency.check_tasks(claims, settings.get("launcher", "torchrun"))
    master, master_src = choose_master(scene, claims, prefix, hi, notes, warnings)
    port, port_claim = decide(claims.get("master_port"), "master_port", "master port", READERS["master_port"], notes,
                              warnings)
    port_value = Value(value=port, source=port_claim.source) if port_claim else \
        Value(value=DEFAULT_PORT, source=f"default {DEFAULT_PORT}")
    job_id = settings.get("job_id") or prefix or env.get("SLURM_JOB_ID") or "nodeweave"
    return Topology(
        node_rank=Value(value=rank, source=rank_src), nnodes=Value(value=nnodes, source=nnodes_src),
        nnodes_min=lo, nnodes_max=hi, elastic=lo != hi, nproc_per_node=Value(value=nproc, source=nproc_src),
        master_addr=Value(value=master, source=master_src), master_port=port_value,
        world_size=None if procs is None else world_size(procs), node_procs=procs, is_master=rank == 0,
        node_names=[] if lo != hi else _names(claims, hi, prefix, scene.ordinal_width), job_id=job_id, notes=notes, platform=platform,
    )


def _recovery_has_another_node(settings, hi, count_source):
    """``shared_rules.recovery_needs_another_node`` on the count the plan took, whatever gave it (NNODES,
    PET_NNODES, a scheduler's, the single-node default): the settings' check sees only NODEWEAVE_NNODES and
    --nnodes, so NNODES=1 under recovery planned a job with nobody to watch it (walk15b B11)."""
    if not settings.get("recovery") or settings.get("spares") or "nnodes" in settings.flag_sources:
        return  # a count recovery set itself (``with_flags``: a generation of the nodes left) is no one's choice
    from .shared_rules import Naming, recovery_needs_another_node

    given = "=" in str(count_source)
    count = str(count_source).split("=")[0] if given else "NNODES"
    switch = settings.source("recovery")
    labels = {"nnodes": count, "recovery": switch[len("flag "):] if switch.startswith("flag ") else switch,
              "spares": "NODEWEAVE_SPARES"}
    for problem in recovery_needs_another_node({"recovery": True, "nnodes": hi}, set(), Naming(labels.get)):
        raise UsageError(f"{labels[problem.key]}: {problem.problem}" + ("" if given else f" ({count_source})") +
                         f"; accepted: {problem.accepted}")


def _beyond_containers(count_source, rank, hi):
    """Under recovery the count is the spec's nodes + spares, so a rank past it is a platform that started more
    containers (``oc scale`` of the StatefulSet, a Job's parallelism raised): what it started and the two
    remedies (walk15b B9: the pod crash-looped on a bare "not below the node count")."""
    if not str(count_source).startswith(RECOVERY_CONTAINERS):
        return ""
    return (f": the platform started at least {rank + 1} nodes, more than the spec's nodes + recovery.spares "
            f"({hi}); accepted: {hi} nodes (scale the StatefulSet or Job back to {hi} replicas), or raise nodes or "
            "recovery.spares in nodeweave.yaml and render again (NODEWEAVE_NNODES, NODEWEAVE_SPARES)")


def _line_slots(claims):
    """A hostfile's slots by line, when every line gives them (``sources._uneven_slots``), else None."""
    found = claims.get("line_slots")
    return [int(count) for count in found[0].value] if found else None


def _processes(nproc, claim, node, warnings):
    """(processes per node, source): a count, or ``auto`` = usable GPUs (1 on CPU)."""
    gpus = node.gpus
    if claim is None or claim.value == "auto":
        what = f"{gpus.count} usable {gpus.vendor.upper()} GPU(s)" if gpus and gpus.count else "no GPU: 1 process (CPU)"
        return (gpus.count if gpus and gpus.count else 1), f"auto: {what}" + (f" ({claim.source})" if claim else "")
    counted = str(claim.source).split("=")[0]
    if counted in GPU_COUNTS and not (gpus and gpus.count):
        # a platform's GPU count says what the node was given: none visible is a device not passed in, never a
        # CPU job of that many processes on gloo (walk15b B17), as a *_VISIBLE_DEVICES entry past the GPUs is
        hidden = f" ({gpus.visible_env} hides them)" if gpus and gpus.visible_env else ""
        raise TopologyError(f"{claim.source} says this node has {nproc} GPU(s) but it sees none{hidden}: the job "
                            f"would run {nproc} CPU processes on gloo; make the GPUs visible in the container (--gpus "
                            "all / CDI, the device plugin's GPU limit, the driver mounted), or pass "
                            "--nproc-per-node for CPU processes on purpose")
    if claim.origin is not None and claim.origin.name == "hostfile" and not (gpus and gpus.count):
        # a hostfile's slots=N: DeepSpeed's GPUs per host, as the platforms' counts above are; an MPI hostfile's
        # may be CPU slots on purpose, so said, not refused (walk18b B15: 8 CPU processes on gloo, silently)
        emit(warnings, "slots-without-gpus", f"{claim.source} is {nproc}, DeepSpeed's GPUs per host, but this node "
             f"sees no GPU: the job would run {nproc} CPU processes on gloo; make the GPUs visible in the container, "
             "or pass --nproc-per-node for CPU processes on purpose")
    if gpus and gpus.count and nproc > gpus.count:
        raise TopologyError(f"{nproc} processes per node (from {claim.source}) but only {gpus.count} usable GPU(s) "
                            "here (what CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES and the devices leave): ranks would "
                            f"share a GPU; set processes per node to {gpus.count} or auto, or make more GPUs visible")
    return nproc, claim.source


# The node count of a --status plan no source gives: node 0's exchange is asked at the master address and the
# exchange port, which need no count; the answer is bounded as the largest typed count's.
STATUS_COUNT = "unknown: --status asks node 0, which knows it"


def _count(scene, claims, rank, rank_src, prefix, nproc):
    """The node count when no source gives one: the StatefulSet's replicas, else a single node."""
    if prefix is not None and scene.kube and rank is not None and \
            rank_src.startswith(("ordinal", "NODEWEAVE_POD_INDEX")):
        ns = scene.kube_facts.namespace
        if ns:
            if prefix not in scene.kube_facts.replicas:
                raise ReplicasWanted(prefix, ns)
            replicas = scene.kube_facts.replicas[prefix]
            return str(replicas), f"Kubernetes API statefulsets/{prefix} .spec.replicas"
        scene.missing.setdefault("nnodes", f"the Kubernetes API was not asked for statefulsets/{prefix}'s replica "
                                 "count: no namespace (no service-account namespace file, POD_NAMESPACE unset); set "
                                 "POD_NAMESPACE from the downward API (fieldRef metadata.namespace)")
    if getattr(scene.settings, "status", False):  # node 0 knows the count: any shell may ask it (walk9 B1)
        return str(max(NODES_MAX, (rank or 0) + 1)), STATUS_COUNT
    if rank not in (None, 0):
        raise refusal(scene, f"node rank {rank} (from {rank_src}) but the node count is unknown"
                      f"{said_empty(scene, 'nnodes')}; set NNODES (or NODEWEAVE_NNODES / --nnodes)", "nnodes")
    signal = consistency.multi_node_signal(claims, scene.node, nproc)
    if signal:
        raise refusal(scene, f"{signal}, but no node count is set{said_empty(scene, 'nnodes')}, so this would run "
                      "as a single node that never meets the others; set NNODES (or NODEWEAVE_NNODES / --nnodes) on "
                      "every node", "nnodes")
    if empty_variables(scene, ("nnodes",)):  # an empty count is never "one node" (walk9 B5: node 0 of a 2-node
        # job whose $NNODES was unset trained alone while node 1 waited), as an empty rank or master is refused
        raise UsageError(f"no node count is set{said_empty(scene, 'nnodes')}: an empty count is never read as a "
                         "single node; set NNODES (or NODEWEAVE_NNODES / --nnodes) to the job's node count on every "
                         "node, or unset it for a single node")
    return "1", "default: single node (no node count set)"


def _no_rank(scene, hi):
    if hi == 1:
        return 0, "single node"
    if getattr(scene.settings, "status", False):  # only node 0 is asked: an operator's shell is no node (walk9 B2)
        return 0, "none: --status asks node 0 and needs no rank of its own"
    why = "is the host's own name (host networking)" if scene.host_net else "has no '-<N>' ordinal"
    raise refusal(
        scene, f"cannot tell this node's rank: {scene.name_source} {scene.pod_name!r} {why} and none of "
        f"{', '.join(RANK_NAMES[:-1])} or {RANK_NAMES[-1]} is set{said_empty(scene, 'node_rank')}; set "
        f"NODE_RANK=0..{hi - 1} on each node", "node_rank")


def choose_master(scene, claims, prefix, hi, notes, warnings):
    """(address, source) of node 0: the strongest claim, else derived from the StatefulSet, else loopback."""
    value, claim = decide(claims.get("master_addr"), "master_addr", "master address", READERS["master_addr"], notes,
                          warnings)
    if claim is not None:
        return value, claim.source
    if prefix is not None:
        service = scene.settings.get("service")
        if not service:
            return member_name(prefix, 0, scene.ordinal_width), f"pod/host 0 of {prefix!r} (no Service: compose or local)"
        ns, ns_src = scene.kube_facts.namespace, scene.kube_facts.namespace_source
        pod, pod_0 = _pod_0(scene, prefix), member_name(prefix, 0, scene.ordinal_width)
        if not ns:
            return f"{pod_0}.{service}", f"{pod} behind Service {service!r}"
        domain, domain_src = cluster_domain(scene.settings, scene.kube_facts)
        return (f"{pod_0}.{service}.{ns}.svc.{domain}",
                f"{pod} behind Service {service!r} (namespace from {ns_src}; cluster domain from {domain_src})")
    if hi == 1:
        return "127.0.0.1", "single node"
    # a platform's own remedy (its variable set but empty, or lacking on this node) replaces the generic one
    platform_said = "master_addr" in scene.missing or empty_platform(scene, "master_addr")
    raise refusal(scene, f"no master address{said_empty(scene, 'master_addr', 'service')}" + (
        "" if platform_said else "; set MASTER_ADDR (node 0's address) or NODEWEAVE_SERVICE in a StatefulSet"),
        "master_addr", "service")


def _pod_0(scene, prefix):
    """Node 0's pod, worded as the platform that made this one names it (walk16b B14: a JobSet's spare read
    'StatefulSet pod 0'): an Indexed Job's (a JobSet's) pod of index 0, else the StatefulSet's pod 0."""
    from ..model import given

    if given(scene.env, "JOB_COMPLETION_INDEX"):
        return f"the pod of index 0 of Job {prefix!r} (Indexed Job / JobSet)"
    return f"StatefulSet pod 0 of {prefix!r}"


def cluster_domain(settings, kube):
    """(domain, source) of the cluster's DNS names: the setting, else resolv.conf's ``svc.<domain>``, else
    cluster.local."""
    if settings.get("cluster_domain"):
        return settings.get("cluster_domain"), settings.source("cluster_domain")
    if kube.search_domain:
        return kube.search_domain, f"the search list of /etc/resolv.conf ({kube.search_entry})"
    return "cluster.local", "default cluster.local: no svc.<domain> in /etc/resolv.conf's search list"


def _names(claims, hi, prefix, width):
    """Every node's name in rank order: the strongest host list of the right length, else <prefix>-<i>."""
    for claim in claims.get("hosts", ()):
        if len(claim.value) == hi:
            return list(claim.value)
    return [member_name(prefix, i, width) for i in range(hi)] if prefix else consistency.placeholder_names(hi)
