"""Who says what about this node: the rank sources, as one table.

Each source is a small function that reads the environment (a hostfile, the
hostname) and returns its claims: ``Claim(field, value, source, tier)``; the
readers of the cloud platforms and MPI live in :mod:`platforms`.
``SOURCES`` lists them strongest first; :mod:`topology` weighs every field's
claims by the same rule (a flag overrides; variables and platforms must
agree; the hostname ordinal must not contradict them), and every message that
lists the sources is built from this table. Adding a scheduler (Ray, ...) is
one function, one row of ``SOURCES`` and its test.

Fields: ``node_rank nnodes nproc_per_node master_addr master_port`` (what the
plan decides), ``hosts`` (node names in rank order), ``prefix`` (the
``<name>`` of a ``<name>-<N>`` hostname), and what is only checked: ``world_size``
and ``rank`` (``WORLD_SIZE``/``RANK``), ``tasks_per_node`` (Slurm, MPI).
"""

from .contract import SCHEDULED_NODES_MAX, OTHER_VARIABLES, PLAIN_VARIABLES, SETTINGS, TORCHRUN_VARIABLES, plain_int
from ..errors import EntrypointError, TopologyError, UsageError
from ..hostport import host_count_refusal, host_key, leading_zero_problem, names_this_node
from .hostlists import bounded, few, file_text, too_many, variable_text
from ..model import ENV, FLAG, HOSTNAME, PLATFORM, Claim, Value, host_list, variables
from .platforms import aws_batch, azure_ml, dstack, google_batch, gpu_count, mpi, sagemaker, sagemaker_naming, \
    set_but_empty
from .slurm import COUNTS as SLURM_COUNTS, NODELISTS as SLURM_NODELISTS

TOPOLOGY_ROWS = [row for row in SETTINGS if row.topology]


def never(prefix):
    return False


def always(prefix):
    return True


def kubeflow_pod(prefix):
    """Kubeflow's PyTorchJob names pods <job>-master-0, <job>-worker-0.. (worker 0 is node rank 1)."""
    return prefix.endswith(("-master", "-worker"))


def kubeflow_rank(prefix, number, env):
    """(the node rank a PyTorchJob pod's name gives, the rule in words), or None where the names say none:
    ``<job>-master-0`` is node rank 0, and ``<job>-worker-N`` is N+1 when the master address names the master pod,
    N when it names worker 0 (a job with no master pod) (walk17b B2: worker 0 beside PET_NODE_RANK=0 "agreed")."""
    if prefix.endswith("-master"):
        return number, "its master pod is node rank 0"
    job = prefix[:-len("-worker")]
    master = host_key((env.get("PET_MASTER_ADDR") or env.get("MASTER_ADDR") or "").strip()).split(".")[0]
    if master == f"{job}-master-0":
        return number + 1, f"with a master pod ({job}-master-0, node rank 0) worker N is node rank N+1"
    if master == f"{job}-worker-0":
        return number, f"with no master pod worker N is node rank N (the master address is {job}-worker-0)"
    return None


def no_rank(prefix, number, env):
    return None


class Source:
    """A row of the table: its name, the variables that name a rank, and its reader.

    ``own_naming(prefix)``: whether the platform names a ``<prefix>-<N>`` pod
    or host its own way (a Kubeflow ``-worker-0`` is rank 1, an LWS leader's
    ordinal is its group, a Slurm host's digits are its name), so a hostname
    ordinal that differs from its rank is no contradiction. ``one_task``: how
    to start one task per node, for a source that claims ``tasks_per_node``.
    ``rank_of``: where the platform's own naming does give a rank (Kubeflow's
    master/worker pods), that rank, so the cross-check says "agrees" only by the
    platform's rule, never by a coincidence of numbers.
    ``reads``: every ``(field, variable)`` the platform's reader takes a value
    from (``VC_*_HOSTS``: any name of that form), so one set but empty is named
    in each refusal of that field with the platform's remedy, whichever reader
    reads it (walk15b B1-B3: an empty ``SLURM_JOB_NODELIST`` was "no master").
    """

    __slots__ = ("name", "rank_names", "read", "own_naming", "one_task", "reads", "rank_of")

    def __init__(self, name, rank_names, read, own_naming=never, one_task="", reads=(), rank_of=no_rank):
        self.name, self.rank_names, self.read, self.own_naming = name, rank_names, read, own_naming
        self.one_task, self.reads = one_task, reads
        self.rank_of = rank_of  # (prefix, ordinal, env) -> (the rank its own naming gives, why) or None: no rank


class Scene:
    """What the sources read: settings, variables, the node and its root; notes they leave."""

    def __init__(self, settings, node, root, kube, host_net):
        self.settings, self.env, self.node, self.root = settings, settings.env, node, root
        self.kube_facts, self.kube, self.host_net = kube, kube.pod, host_net
        self.notes = []
        self.claims = {}  # field -> [Claim] of the sources read so far (collect): the hostfile reads a given rank
        self.empty = []  # (field, variable) a source reads that is set but empty: read as unset, and said so
        self.missing = {}  # field -> why a platform found on this node gives no value for it (said with the refusal)
        self.pod_name, self.name_source = node.hostname, "hostname"
        self.ordinal_width = 1  # the digits of a zero-padded ordinal (trainer-03: 2), which every member's name keeps


def _variables(scene, names, tier=ENV):
    scene.empty += [(field, var) for field, var in names if var in scene.env and not scene.env[var].strip()]
    return variables(scene.env, names, tier)


def empty_variables(scene, fields=None):
    """Every variable the plan reads (the sources' and the settings' rows) that is set but empty, in order, or
    only those that would have given one of ``fields``: an unset ``$N`` in ``-e NNODES=$N`` planned a single node
    silently (walk2, rows U3 and M2)."""
    env = scene.env
    read = [(field, var) for field, var in scene.empty] + [(row.key, row.variable) for row in SETTINGS
                                                           if row.variable in env and not env[row.variable].strip()]
    # every variable of the sources' table, whichever reader reads it (walk8 B4: SLURM_NODEID= was "not set";
    # walk15b B1-B3: a platform's host list, master or count)
    read += [("node_rank", name) for name in RANK_NAMES if name in env and not env[name].strip()]
    read += [(field, name) for name, (field, _) in platform_variables(env) if not env[name].strip()]
    # the NODEWEAVE_* variables with no settings row (contract.OTHER_VARIABLES: the job's secret and its file, ...):
    # walk9 B11, an empty $SECRET in `-e NODEWEAVE_JOB_TOKEN=$SECRET` lost the secret without a word
    read += [(None, name) for name in OTHER_VARIABLES if name in env and not env[name].strip()]
    return list(dict.fromkeys(var for field, var in read if fields is None or field in fields))


def platform_variables(env):
    """``(variable, (field, source))`` for each variable of ``env`` a platform's reader of ``SOURCES`` reads."""
    found = []
    for name in env:
        for source in SOURCES:
            for field, pattern in source.reads:
                head, star, tail = pattern.partition("*")
                if name == pattern or star and name.startswith(head) and name.endswith(tail) and \
                        len(name) > len(head) + len(tail):
                    found.append((name, (field, source)))
    return found


PLAIN = {"master_addr": "MASTER_ADDR (node 0's address)", "nnodes": "NNODES", "node_rank": "NODE_RANK",
         "nproc_per_node": "NODEWEAVE_NPROC_PER_NODE"}


def said_empty(scene, *fields):
    """``; MASTER_ADDR is set but empty (...)`` for a refusal of a missing value whose variable is set but empty:
    the user did set it, to nothing (walk5 W6); a platform's own variable with that platform's remedy (walk15b
    B1-B3); "" when none is."""
    empty = empty_variables(scene, fields)
    # a platform recognised here that lacks the value says why (walk8 B29: Volcano's two task lists, AWS Batch's
    # child without the main node's address), as the set-but-empty variables do
    why = "".join(f"; {scene.missing[field]}" for field in dict.fromkeys(fields) if field in scene.missing)
    owners = dict(platform_variables({name: "" for name in empty}))
    plain = [name for name in empty if name not in owners]
    said = ""
    if plain:
        said = (f"; {' and '.join(plain)} {'is' if len(plain) == 1 else 'are'} set but empty (an unset variable in "
                f"`-e {plain[0]}=$VALUE` or the compose file?)")
    for name in empty:
        if name in owners:
            said += "; " + set_but_empty(name, owners[name][1].name, PLAIN.get(fields[0], "the value"))
    return said + why


def empty_platform(scene, *fields):
    """Whether a refusal of ``fields`` names a platform's variable set but empty, whose remedy it gives."""
    empty = empty_variables(scene, fields)
    return bool(platform_variables({name: "" for name in empty}))


def refusal(scene, text, *fields):
    """The refusal of a value no source gives: bad input (exit 2) when a variable that would give it is set but
    empty (the user set it, to nothing: walk15b B1), else an unknown topology (exit 3)."""
    return (UsageError if empty_variables(scene, fields) else TopologyError)(text)


def flags(scene):
    given, set_by = scene.settings.flags, scene.settings.flag_sources
    return [Claim(row.key, given[row.key], set_by.get(row.key) or f"flag {row.flag}", FLAG) for row in TOPOLOGY_ROWS
            if row.key in given]


def nodeweave_variables(scene):
    return _variables(scene, [(row.key, row.variable) for row in TOPOLOGY_ROWS])


def plain_variables(scene):
    return _variables(scene, list(PLAIN_VARIABLES))


def torchrun_variables(scene):
    return _variables(scene, list(TORCHRUN_VARIABLES))


def indexed_job(scene):
    return _variables(scene, [("node_rank", "JOB_COMPLETION_INDEX")], PLATFORM)


def statefulset_pod_index(scene):
    return _variables(scene, [("node_rank", "NODEWEAVE_POD_INDEX")], PLATFORM)


def leaderworkerset(scene):
    claims = _variables(scene, [("node_rank", "LWS_WORKER_INDEX"), ("nnodes", "LWS_GROUP_SIZE")], PLATFORM)
    if scene.env.get("LWS_LEADER_ADDRESS", "").strip():
        claims.append(Claim("master_addr", scene.env["LWS_LEADER_ADDRESS"], "LWS_LEADER_ADDRESS", PLATFORM))
    return claims


def volcano(scene):
    env = scene.env
    claims = _variables(scene, [("node_rank", "VC_TASK_INDEX")], PLATFORM)
    lists = sorted(name for name in env if name.startswith("VC_") and name.endswith("_HOSTS"))
    if claims and len(lists) > 1:  # one index per task: master-0 and worker-0 both say 0 (walk8 B29)
        why = (f"{' and '.join(lists)} are all set (a job of several Volcano tasks): VC_TASK_INDEX counts within "
               "one task, so it is no node rank, and nodeweave reads a single VC_*_HOSTS list; set NODE_RANK (the "
               "master task's pod 0, then the workers' i+1) and NNODES")
        given = "node_rank" in scene.settings.flags or any(scene.env.get(name, "").strip() for name in
                                                              ("NODE_RANK", "NODEWEAVE_NODE_RANK"))
        if not given:  # never a single node planned from a rank nobody gave
            from ..errors import TopologyError

            raise TopologyError(f"cannot tell this node's rank: {why}")
        return []
    if claims and len(lists) == 1:
        hosts = bounded((h for h in variable_text(env, lists[0]).split(",") if h.strip()), lists[0])
        if hosts:
            claims += host_list(hosts, lists[0], f"first host of {lists[0]}", f"hosts in {lists[0]}")
    return claims


def skypilot(scene):
    env = scene.env
    claims = _variables(scene, [("node_rank", "SKYPILOT_NODE_RANK"), ("nnodes", "SKYPILOT_NUM_NODES")], PLATFORM)
    claims += gpu_count(env, "SKYPILOT_NUM_GPUS_PER_NODE")  # 0 on a CPU task, as dstack's and SageMaker's
    ips = bounded((line.strip() for line in variable_text(env, "SKYPILOT_NODE_IPS").splitlines() if line.strip()),
                  "SKYPILOT_NODE_IPS")
    if ips:
        claims += host_list(ips, "SKYPILOT_NODE_IPS", "first line of SKYPILOT_NODE_IPS", "lines of SKYPILOT_NODE_IPS")
    return claims


def slurm(scene):
    if not any(name.startswith("SLURM") for name in scene.env):
        return []
    from .slurm import slurm_claims  # only Slurm jobs pay for the node-list parser

    return slurm_claims(scene.env, scene.node.hostname)


def spares_forgotten(settings, rank, count, listed=""):
    """Under recovery with no spares set, a rank at or past the training ``count`` is what a spare's rank looks
    like: the spare count forgotten on this node is the likely fix, whatever gave the rank (variables, a hostfile,
    Slurm) (walk17b B18: the refusal said no word of spares). ``listed``: where the spares must be listed too
    (a hostfile, whose lines are every node, spares last)."""
    if not settings.get("recovery") or settings.get("spares") or rank < count:
        return ""
    return (f"; with recovery on, node ranks {count}.. are spares: {listed}set NODEWEAVE_SPARES "
            f"(the same on every node), e.g. NODEWEAVE_SPARES={rank - count + 1}")


def hostfile(scene):
    path = scene.settings.get("hostfile")
    if not path:
        return []
    hosts = read_hostfile(path)
    names = [host for host, _ in hosts]
    node = scene.node
    from .platforms import this_node

    me = this_node(scene)
    mine = [i for i, host in enumerate(names) if names_this_node(host, me)]
    given, given_by = _given_rank(scene)
    world = _uneven_slots(scene, path, hosts)  # every rank way alike (walk12b B10: a rank given skipped it)
    if not mine and given is not None and given >= len(names):  # B18: "give this node's rank" to one who had
        raise TopologyError(f"this host ({node.hostname}) is not listed in hostfile {path} ({few(names)}), and the "
                            f"rank given ({given_by}) is past its {len(names)} line(s), which give ranks 0 "
                            f"to {len(names) - 1}; accepted: a rank of 0 to {len(names) - 1} (its line gives the "
                            "slots), or a hostfile that lists every node, node 0 first"
                            + spares_forgotten(scene.settings, given, len(names),
                                                             f"list the spare hosts last in {path} and "))
    if not mine and given is not None:
        # a rank given by hand (--node-rank, NODE_RANK) is taken: the hostfile then gives the count, the master and
        # the slots of the rank's line, as the refusal's hint promised (walk11b B18: it was refused all the same)
        claims = host_list(names, "hostfile", f"first host of hostfile {path}", f"hosts in hostfile {path}")
        if hosts[given][1]:
            claims.append(Claim("nproc_per_node", hosts[given][1], f"slots of line {given + 1} ({names[given]}, "
                                f"this node's rank) in hostfile {path}", PLATFORM))
        return claims + world
    if not mine:
        raise TopologyError(f"this host ({node.hostname}) is not listed in hostfile {path} ({few(names)}); "
                            "list it by name or address, or give this node's rank (NODE_RANK, --node-rank)")
    own = names[mine[0]]
    claims = [Claim("node_rank", mine[0], f"position of {own} in hostfile {path}", PLATFORM)]
    claims += host_list(names, "hostfile", f"first host of hostfile {path}", f"hosts in hostfile {path}")
    if hosts[mine[0]][1]:
        claims.append(Claim("nproc_per_node", hosts[mine[0]][1], f"slots of {own} in hostfile {path}", PLATFORM))
    return claims + world


def _uneven_slots(scene, path, hosts):
    """Every line's slots, as [Claim("line_slots", (n, ...))], when every line gives them; [] when none does. A
    hostfile where some lines give slots and some do not is refused (exit 2): DeepSpeed refuses a line without
    (a bad entry) and Open MPI reads it as the host's CPU cores, so no world size or rank offset follows from
    it (fix13d: node 0 of `a slots=2` / `b` exported WORLD_SIZE=4, node 1 2; with the exchange off nothing
    caught it). Lines that give different slots are refused, whichever way the rank came, when the check-in
    exchange, which shares every node's count with the launcher, is off (walk12b B10). The world size and each
    node's rank offset are :mod:`world`'s, from these counts."""
    slots = [(host, count) for host, count in hosts if count is not None]
    if not slots:
        return []
    if len(slots) < len(hosts):
        number = next(i for i, (_, count) in enumerate(hosts) if count is None)
        given = next(i for i, (_, count) in enumerate(hosts) if count is not None)
        raise UsageError(f"hostfile {path} line {number + 1} ({hosts[number][0]}) gives no slots while line "
                         f"{given + 1} ({hosts[given][0]} slots={hosts[given][1]}) does: the world size and each "
                         f"node's first rank need every node's count (DeepSpeed refuses such a line, Open MPI "
                         f"would read the host's CPU cores); accepted: slots=<n> on every line "
                         f"('{hosts[number][0]} slots=<n>'), or on none (each node runs its processes per node)")
    if len({count for _, count in slots}) > 1:
        from .exchange_plan import switched_off  # with the check-in, every node learns every node's count

        listed = few([f"{host} slots={count}" for host, count in slots], 4)
        off = switched_off(scene.settings)
        if off:
            raise TopologyError(f"hostfile {path} gives its hosts different slots ({listed}) but the check-in "
                                f"exchange that shares them is off ({off}); give every line the slots of the "
                                "smallest node, or let the nodes check in")
    return [Claim("line_slots", [count for _, count in slots], f"hostfile {path}'s slots by line", PLATFORM)]


def _given_rank(scene):
    """The node rank a stronger source gave (``--node-rank``, ``NODEWEAVE_NODE_RANK``, ``NODE_RANK``,
    ``PET_NODE_RANK``, an Indexed Job's ``JOB_COMPLETION_INDEX``, ...: every row above the hostfile's in
    ``SOURCES``), as (number, its source), or (None, None). walk11b B18: only the first three were read, so
    ``PET_NODE_RANK=5`` was refused with a hint to give the rank it gave."""
    for claim in scene.claims.get("node_rank", ()):
        text = str(claim.value)
        if plain_int(text):  # 3.6: no str.isascii; a malformed rank is refused later
            source = claim.source[len("flag "):] if claim.source.startswith("flag ") else claim.source
            return int(text), source if "=" in source else f"{source} {text}"
    return None, None


def read_hostfile(path):
    """[(host, slots or None)] from '<host> [slots=N]' lines."""
    try:
        lines = file_text(path, "a hostfile", f"hostfile {path}").splitlines()
    except OSError as err:
        raise UsageError(f"hostfile {path!r} (NODEWEAVE_HOSTFILE or --hostfile): cannot read it ({err.strerror}); "
                         "accepted: a readable file of '<host> [slots=N]' lines, node 0 first") from None
    hosts, lines_of = [], {}
    for number, line in enumerate(lines, 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(hosts) == SCHEDULED_NODES_MAX:  # bounded before any line past the bound is read (walk14b B7)
            raise too_many(f"hostfile {path}", sum(1 for line in lines if line.split("#", 1)[0].split()))
        slots = None
        colon_form = host_count_refusal(fields[0])
        if colon_form:  # walk8 B8: taken as a host named 'gpu01:8', which matched no node
            raise UsageError(f"hostfile {path} line {number}: {colon_form}")
        for extra in fields[1:]:
            key, _, value = extra.partition("=")
            if key == "max_slots" and any(other.startswith("slots=") for other in fields[1:]):
                continue  # Open MPI's upper bound beside the count: the count is what starts processes
            if key == "max_slots":  # Open MPI's upper bound, no count of processes: it was dropped silently (B8)
                raise UsageError(f"hostfile {path} line {number}: max_slots is not read (Open MPI's upper bound, "
                                 f"not the processes to start); accepted: '<host> slots=<n>', e.g. "
                                 f"'{fields[0]} slots={value if value.isdigit() else 8}'")
            if key == "slots" and value.isdigit() and int(value) >= 1:
                slots = int(value)
            else:  # slots=0 started one process anyway (walk5 W58)
                raise UsageError(f"hostfile {path} line {number}: expected '<host> slots=<n>', got {line.strip()!r} "
                                 "(n: 1 or more)")
        zero = leading_zero_problem(fields[0])
        if zero:  # the rank order would name another machine to ssh than to the exchange
            raise UsageError(f"hostfile {path} line {number}: {fields[0]} {zero}")
        before = lines_of.get(host_key(fields[0]))  # VM and vm are one host (host_key); a dict: a scan of the hosts so far made 8,192 lines 33M compares (B18)
        if before is not None:  # both lines would claim one rank; nodeweave's --host a --host a is refused too
            raise UsageError(f"hostfile {path} line {number}: {fields[0]} is listed twice (line "
                             f"{before} too); accepted: each host once, node 0 first")
        lines_of[host_key(fields[0])] = number
        hosts.append((fields[0], slots))
    if not hosts:
        raise UsageError(f"hostfile {path} lists no hosts")
    return hosts


_LINES = {}


def hostfile_lines(path):
    """The hosts hostfile ``path`` lists, or None (no hostfile, or one the hostfile's own reader refuses, where it
    is named). Read once per path: the settings, the count and the topology each ask."""
    import os

    if not path:
        return None
    try:
        seen = os.stat(path)
    except OSError:
        return None  # the hostfile's own reader names it
    key = (os.path.abspath(path), seen.st_mtime_ns, seen.st_size)
    if key not in _LINES:
        try:
            _LINES[key] = len(read_hostfile(path))
        except EntrypointError:
            _LINES[key] = None
    return _LINES[key]


def ordinal(name):
    """(prefix, N) of ``<prefix>-<N>`` (first DNS label), else (None, None)."""
    short = (name or "").split(".")[0]
    prefix, dash, number = short.rpartition("-")
    if dash and prefix and number.isdigit():
        return prefix, int(number)
    return None, None


def ordinal_width(name):
    """How many digits every member's ordinal is written with: those of a zero-padded one (``trainer-03``: 2), else
    1 (``trainer-3``, ``trainer-12``: Kubernetes never pads). Node 0 of ``trainer-00..03`` is ``trainer-00``: a
    master rebuilt as ``trainer-0`` is a name no host has, which every worker waits on (walk18b B6)."""
    digits = (name or "").split(".")[0].rpartition("-")[2]
    return len(digits) if len(digits) > 1 and digits.isdigit() and digits.startswith("0") else 1


def member_name(prefix, index, width=1):
    """The name of member ``index`` of the group ``<prefix>-<N>``, its ordinal written as this node's is."""
    return f"{prefix}-{index:0{width}d}"


def hostname_ordinal(scene):
    """``<name>-<N>``: the hostname first (an Indexed Job pod's name has a random suffix), then POD_NAME.

    On host networking outside Kubernetes the hostname is the host's own name
    (``mi300-07``), so its digits are no rank.
    """
    prefix, number = ordinal(scene.pod_name)
    if number is None and scene.env.get("POD_NAME"):
        scene.pod_name, scene.name_source = scene.env["POD_NAME"], "POD_NAME"
        prefix, number = ordinal(scene.pod_name)
    if number is None:
        return []
    if not scene.kube and scene.host_net:
        scene.notes.append(f"{scene.name_source} {scene.pod_name!r} ends in -{number} but this container sees the "
                           f"host's NICs ({', '.join(scene.host_net)}): host networking, so that is not a rank")
        return []
    text = f"ordinal of {scene.name_source} {scene.pod_name!r}"
    scene.ordinal_width = ordinal_width(scene.pod_name)
    return [Claim("node_rank", number, text, HOSTNAME), Claim("prefix", prefix, text, HOSTNAME)]


def _reads(rank=(), count=(), master=(), procs=(), hosts=()):
    """A platform's ``Source.reads``: a list of hosts gives the master and the count (and the rank by place)."""
    return tuple([("node_rank", name) for name in rank + hosts] + [("nnodes", name) for name in count + hosts] +
                 [("master_addr", name) for name in master + hosts] + [("nproc_per_node", name) for name in procs])


# Strongest first. The order also breaks ties where values may differ (a master's name beside its IP).
SOURCES = (
    Source("flags", (), flags),
    Source("NODEWEAVE_* variables", ("NODEWEAVE_NODE_RANK",), nodeweave_variables),
    Source("plain variables", ("NODE_RANK",), plain_variables),
    Source("torchrun PET_* (Kubeflow)", ("PET_NODE_RANK",), torchrun_variables, own_naming=kubeflow_pod,
           rank_of=kubeflow_rank),
    Source("Indexed Job / JobSet", ("JOB_COMPLETION_INDEX",), indexed_job, reads=_reads(("JOB_COMPLETION_INDEX",))),
    Source("StatefulSet pod index", ("NODEWEAVE_POD_INDEX",), statefulset_pod_index),
    Source("LeaderWorkerSet", ("LWS_WORKER_INDEX",), leaderworkerset, own_naming=always,
           reads=_reads(("LWS_WORKER_INDEX",), ("LWS_GROUP_SIZE",), ("LWS_LEADER_ADDRESS",))),
    Source("Volcano", ("VC_TASK_INDEX",), volcano, own_naming=always,
           reads=_reads(("VC_TASK_INDEX",), hosts=("VC_*_HOSTS",))),
    Source("SkyPilot", ("SKYPILOT_NODE_RANK",), skypilot, own_naming=always,
           reads=_reads(("SKYPILOT_NODE_RANK",), ("SKYPILOT_NUM_NODES",), procs=("SKYPILOT_NUM_GPUS_PER_NODE",),
                        hosts=("SKYPILOT_NODE_IPS",))),
    Source("dstack", ("DSTACK_NODE_RANK",), dstack, own_naming=always,  # its instances are <fleet>-<N>
           reads=_reads(("DSTACK_NODE_RANK",), ("DSTACK_NODES_NUM",), ("DSTACK_MASTER_NODE_IP",),
                        ("DSTACK_GPUS_PER_NODE",), ("DSTACK_NODES_IPS",))),
    Source("AWS Batch", ("AWS_BATCH_JOB_NODE_INDEX",), aws_batch,
           reads=_reads(("AWS_BATCH_JOB_NODE_INDEX", "AWS_BATCH_JOB_MAIN_NODE_INDEX"), ("AWS_BATCH_JOB_NUM_NODES",),
                        ("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS",))),
    Source("Google Cloud Batch", ("BATCH_TASK_INDEX with BATCH_HOSTS_FILE",), google_batch,
           own_naming=always,  # its VMs are <job>-group<G>-<N>
           reads=_reads(("BATCH_TASK_INDEX",), ("BATCH_TASK_COUNT",), hosts=("BATCH_HOSTS_FILE",))),
    Source("SageMaker", ("SM_CURRENT_HOST in SM_HOSTS",), sagemaker, own_naming=sagemaker_naming,
           reads=_reads(("SM_CURRENT_HOST",), procs=("SM_NUM_GPUS",), hosts=("SM_HOSTS",))),
    Source("Azure ML", ("AZ_BATCHAI_TASK_INDEX",), azure_ml,
           reads=_reads(("AZ_BATCHAI_TASK_INDEX",), ("AZUREML_NODE_COUNT",), ("AZ_BATCH_MASTER_NODE",))),
    Source("Slurm", ("SLURM_NODEID", "SLURMD_NODENAME in SLURM_JOB_NODELIST"), slurm, own_naming=always,
           one_task="use srun --ntasks-per-node=1",
           reads=_reads(("SLURM_NODEID", "SLURMD_NODENAME"), SLURM_COUNTS, hosts=SLURM_NODELISTS)),
    Source("MPI (Open MPI, PMIx)", ("OMPI_COMM_WORLD_RANK", "PMIX_RANK"), mpi, own_naming=always,
           one_task="start one task per node (mpirun -N 1, --map-by ppr:1:node; slotsPerWorker: 1 in a "
                    "Kubeflow MPIJob)",
           reads=_reads(("OMPI_COMM_WORLD_RANK", "PMIX_RANK"), ("OMPI_COMM_WORLD_SIZE",))),
    Source("hostfile", ("NODEWEAVE_HOSTFILE",), hostfile, own_naming=always),
    Source("hostname ordinal", (), hostname_ordinal),
)
# a platform's count of the node's GPUs, read as its processes per node: weighed against the GPUs it sees
GPU_COUNTS = tuple(name for source in SOURCES for field, name in source.reads if field == "nproc_per_node")
RANK_NAMES = tuple(name for source in SOURCES for name in source.rank_names)


def collect(scene):
    """{field: [Claim]} over every source, strongest first."""
    claims = scene.claims = {}
    for source in SOURCES:
        for claim in source.read(scene):
            claim.origin = source
            claims.setdefault(claim.field, []).append(claim)
    return claims


def as_value(claim):
    return Value(value=claim.value, source=claim.source)
