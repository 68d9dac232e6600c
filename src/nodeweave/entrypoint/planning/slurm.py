"""Slurm as a rank source, and its hostlist expansion (``gpu[01-04,07]``, ``a[1-2],b3``).

The order is Slurm's: ranges as written, left bracket outermost, so the first
host is node 0 (the master) and ``SLURM_NODEID`` indexes the list. Without
``SLURM_NODEID`` the rank is this node's position in the list, found by
``SLURMD_NODENAME`` (else the hostname). Tasks per node are claimed too:
nodeweave starts one launcher per node, which starts the processes.
"""

from ..errors import TopologyError, UsageError
from ..model import PLATFORM, Claim, host_list, variables

NODELISTS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
COUNTS = ("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
TASKS = ("SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE")


def _first(env, names):
    return next((name for name in names if env.get(name, "").strip()), None)


def slurm_claims(env, hostname):
    """The claims of a Slurm job's variables (none outside Slurm)."""
    claims = variables(env, [("node_rank", "SLURM_NODEID")], PLATFORM)
    count = _first(env, COUNTS)
    if count:
        claims.append(Claim("nnodes", env[count], f"{count}={env[count]}", PLATFORM))
    listed = _first(env, NODELISTS)
    hosts = _node_list(env, listed) if listed else []
    if hosts:
        claims += host_list(hosts, listed, f"first host of {listed}={env[listed]}", f"hosts in {listed}")
        # SLURMD_NODENAME's place is weighed beside SLURM_NODEID, never dropped: an environment carried to another
        # node (a pdsh wrapper, a script exporting its own SLURM_NODEID) then disagrees, exit 3 (walk8 B3)
        claims += _position(env, hostname, hosts, listed, by_hostname=not env.get("SLURM_NODEID", "").strip())
    tasks = _first(env, TASKS)
    if tasks:
        claims.append(Claim("tasks_per_node", tasks_per_node(env[tasks], tasks), f"{tasks}={env[tasks]}", PLATFORM))
    return claims


ACCEPTED = "accepted: Slurm's hostlist form naming each host once (e.g. gpu[01-04] or a1,b[2-3])"


def _node_list(env, listed):
    """The hosts of node list variable ``listed``; a refusal names the variable, its value and the form taken
    (walk8 B5), and a host listed twice is refused: its two places would be two ranks of one machine."""
    try:
        hosts = expand_nodelist(env[listed])
    except UsageError as err:
        raise UsageError(f"{listed}={env[listed]!r}: {err}; {ACCEPTED}") from None
    twice = sorted({host for host in hosts if hosts.count(host) > 1})
    if twice:
        raise UsageError(f"{listed}={env[listed]!r} names {', '.join(twice)} twice (two ranks for one host); "
                         f"{ACCEPTED}")
    return hosts


def _position(env, hostname, hosts, listed, by_hostname=True):
    """The rank as this node's place in the node list: by SLURMD_NODENAME, else (``by_hostname``) by hostname."""
    shorts = [host.split(".")[0] for host in hosts]
    name = env.get("SLURMD_NODENAME", "").strip()
    if name:
        if name.split(".")[0] not in shorts:
            given = f"SLURM_NODEID={env['SLURM_NODEID']} was carried from another node, or " if not by_hostname else ""
            raise TopologyError(f"SLURMD_NODENAME={name} is not in {listed}={env[listed]} ({', '.join(hosts)}): "
                                f"{given}this is not a node of the job; set NODE_RANK"
                                + ("" if given else " or SLURM_NODEID"))
        return [Claim("node_rank", shorts.index(name.split(".")[0]), f"position of SLURMD_NODENAME={name} in {listed}",
                      PLATFORM)]
    short = (hostname or "").split(".")[0]
    if by_hostname and short in shorts:
        return [Claim("node_rank", shorts.index(short), f"position of hostname {short!r} in {listed}", PLATFORM)]
    return []


def tasks_per_node(text, name):
    """The most tasks any node runs: ``8``, or Slurm's ``2(x3),1`` form."""
    most = 0
    for item in text.split(","):
        count = item.strip().partition("(")[0]
        if not count.isdigit():
            raise UsageError(f"{name}={text!r}: expected a task count such as 1, 8 or 2(x3),1")
        most = max(most, int(count))
    return most


def _split_top(text):
    """Split on commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"unbalanced ']' in Slurm node list {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth:
        raise UsageError(f"unbalanced '[' in Slurm node list {text!r}")
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _expand_range(spec, whole):
    values = []
    for item in spec.split(","):
        lo, dash, hi = item.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise UsageError(f"bad range {item!r} in Slurm node list {whole!r}")
        if not dash:
            values.append(lo)
            continue
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        if int(hi) < int(lo):
            raise UsageError(f"descending range {item!r} in Slurm node list {whole!r}")
        values.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return values


def _expand_one(pattern, whole):
    start = pattern.find("[")
    if start < 0:
        return [pattern]
    end = pattern.find("]", start)
    head, spec, tail = pattern[:start], pattern[start + 1:end], pattern[end + 1:]
    return [head + value + rest for value in _expand_range(spec, whole) for rest in _expand_one(tail, whole)]


def expand_nodelist(text):
    """All host names of a Slurm node list, in order."""
    hosts = []
    for part in _split_top(text or ""):
        hosts.extend(_expand_one(part, text))
    return hosts


def training_most_of(env, recovery, spares, lines=None):
    """``job_size.training_most`` from the values themselves (the settings' own rules read it before any settings):
    under recovery, an allocation's count less the spares, where the allocation is a scheduler's count
    (``COUNTS``) or, with none, the hostfile's lines (``lines``: ``sources.hostfile_lines`` of --hostfile,
    NODEWEAVE_HOSTFILE). Both are the scheduler's own count (walk12b B8: the refusal offered
    NODEWEAVE_NNODES=8191 for an 8192-line hostfile, and the count's next check refused it as over the typed
    bound)."""
    from .contract import NODES_MAX, SCHEDULED_NODES_MAX, plain_int

    if recovery:
        spares = spares if isinstance(spares, int) else 0
        for name in COUNTS:
            value = (env.get(name) or "").strip()
            if plain_int(value) and 0 < int(value) <= SCHEDULED_NODES_MAX:
                return max(NODES_MAX, int(value) - spares)
        if lines and lines <= SCHEDULED_NODES_MAX:
            return max(NODES_MAX, lines - spares)
    return NODES_MAX
