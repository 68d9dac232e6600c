"""Slurm as a rank source, and its hostlist expansion (``gpu[01-04,07]``, ``a[1-2],b3``).

The order is Slurm's: ranges as written, left bracket outermost, so the first
host is node 0 (the master) and ``SLURM_NODEID`` indexes the list. Without
``SLURM_NODEID`` the rank is this node's position in the list, found by
``SLURMD_NODENAME`` (else the hostname). Tasks per node are claimed too:
nodeweave starts one launcher per node, which starts the processes.
"""

from ..errors import TopologyError, UsageError
from ..model import PLATFORM, Claim, host_list, variables
from .contract import SCHEDULED_NODES_MAX

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


_READ = {}  # (variable, value) -> (hosts, short names): the plan asks the sources more than once (walk14b B4)


def _node_list(env, listed):
    """The hosts of node list variable ``listed``; a refusal names the variable, its value and the form taken
    (walk8 B5), and a host listed twice is refused: its two places would be two ranks of one machine. The list is
    counted before it is expanded and the duplicates found in linear time (``hostlists``: walk14b B7, B4)."""
    from .hostlists import twice, variable_text

    text = variable_text(env, listed)
    if (listed, text) in _READ:
        return _READ[listed, text][0]
    try:
        hosts = expand_nodelist(text, f"{listed}={_shown(text)}")
    except UsageError as err:
        if str(err).startswith(f"{listed}="):
            raise
        raise UsageError(f"{listed}={_shown(text)}: {err}; {ACCEPTED}") from None
    again = twice(hosts)
    if again:
        raise UsageError(f"{listed}={_shown(text)} names {', '.join(again[:8])}"
                         f"{f' (and {len(again) - 8} more)' if len(again) > 8 else ''} twice (two ranks for one "
                         f"host); {ACCEPTED}")
    _READ[listed, text] = hosts, None
    return hosts


def _shown(text, most=200, quote=True):
    """``text`` quoted (or not), cut at ``most`` characters: a refusal stays one line whatever the variable holds."""
    shown = repr if quote else str
    return shown(text) if len(text) <= most else shown(text[:most]) + f"... ({len(text):,} characters)"


def _position(env, hostname, hosts, listed, by_hostname=True):
    """The rank as this node's place in the node list: by SLURMD_NODENAME, else (``by_hostname``) by hostname."""
    from ..hostport import host_key
    from .hostlists import few

    read = _READ.get((listed, env[listed]))
    shorts = read and read[1]
    if shorts is None:  # VM is vm (hostport.host_key; walk13 B4); a dict: its place found at once
        shorts = {}
        for i, host in enumerate(hosts):
            shorts.setdefault(host_key(host).split(".")[0], i)
        if read:
            _READ[listed, env[listed]] = hosts, shorts
    name = env.get("SLURMD_NODENAME", "").strip()
    if name:
        if host_key(name).split(".")[0] not in shorts:
            given = f"SLURM_NODEID={env['SLURM_NODEID']} was carried from another node, or " if not by_hostname else ""
            raise TopologyError(f"SLURMD_NODENAME={name} is not in {listed}={_shown(env[listed], quote=False)} "
                                f"({few(hosts)}): "
                                f"{given}this is not a node of the job; set NODE_RANK"
                                + ("" if given else " or SLURM_NODEID"))
        return [Claim("node_rank", shorts[host_key(name).split(".")[0]], f"position of SLURMD_NODENAME={name} in {listed}",
                      PLATFORM)]
    short = (hostname or "").split(".")[0]
    if by_hostname and host_key(short) in shorts:
        return [Claim("node_rank", shorts[host_key(short)], f"position of hostname {short!r} in {listed}", PLATFORM)]
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


def _ranges(spec, whole):
    """[(lo, hi, width)] of a bracket's ``1-4,07``: the numbers each item gives, counted without making them."""
    ranges = []
    for item in spec.split(","):
        lo, dash, hi = item.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise UsageError(f"bad range {item!r} in Slurm node list {_shown(whole)}")
        if not dash:
            ranges.append((int(lo), int(lo), len(lo)))
            continue
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        if int(hi) < int(lo):
            raise UsageError(f"descending range {item!r} in Slurm node list {_shown(whole)}")
        ranges.append((int(lo), int(hi), width))
    return ranges


def _brackets(pattern, whole):
    """[text, [(lo, hi, width)], text, ...]: a pattern's fixed parts and its brackets' ranges, in order."""
    parts = []
    while True:
        start = pattern.find("[")
        if start < 0:
            return parts + [pattern]
        end = pattern.find("]", start)
        parts += [pattern[:start], _ranges(pattern[start + 1:end], whole)]
        pattern = pattern[end + 1:]


def count_nodelist(text):
    """How many hosts a Slurm node list names, counted from its ranges without expanding them (a typo'd
    ``n[1-99999999999]`` is a number, not a list that fills the memory: walk14b B7)."""
    total = 0
    for part in _split_top(text or ""):
        count = 1
        for piece in _brackets(part, text)[1::2]:
            count *= sum(hi - lo + 1 for lo, hi, _ in piece)
        total += count
    return total


def _expand(parts):
    if len(parts) == 1:
        return [parts[0]]
    head, ranges, rest = parts[0], parts[1], _expand(parts[2:])
    return [head + str(n).zfill(width) + tail for lo, hi, width in ranges for n in range(lo, hi + 1) for tail in rest]


def expand_nodelist(text, where=None):
    """All host names of a Slurm node list, in order; counted first, and refused (naming ``where``, else the list)
    past ``SCHEDULED_NODES_MAX`` hosts before any is made."""
    count = count_nodelist(text)
    if count > SCHEDULED_NODES_MAX:
        from .hostlists import too_many

        raise too_many(where or f"Slurm node list {_shown(text)}", count)
    hosts = []
    for part in _split_top(text or ""):
        hosts.extend(_expand(_brackets(part, text)))
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
