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
    hosts = expand_nodelist(env[listed]) if listed else []
    if hosts:
        claims += host_list(hosts, listed, f"first host of {listed}={env[listed]}", f"hosts in {listed}")
        if not env.get("SLURM_NODEID", "").strip():
            claims += _position(env, hostname, hosts, listed)
    tasks = _first(env, TASKS)
    if tasks:
        claims.append(Claim("tasks_per_node", tasks_per_node(env[tasks], tasks), f"{tasks}={env[tasks]}", PLATFORM))
    return claims


def _position(env, hostname, hosts, listed):
    """The rank as this node's place in the node list: by SLURMD_NODENAME, else by hostname."""
    shorts = [host.split(".")[0] for host in hosts]
    name = env.get("SLURMD_NODENAME", "").strip()
    if name:
        if name.split(".")[0] not in shorts:
            raise TopologyError(f"SLURMD_NODENAME={name} is not in {listed}={env[listed]} ({', '.join(hosts)}); "
                                "set SLURM_NODEID or NODE_RANK")
        return [Claim("node_rank", shorts.index(name.split(".")[0]), f"position of SLURMD_NODENAME={name} in {listed}",
                      PLATFORM)]
    short = (hostname or "").split(".")[0]
    if short in shorts:
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
