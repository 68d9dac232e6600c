"""Node 0's one verdict on every node's fingerprint: start, start with warnings, or refuse.

Pure: fingerprints (plus the address node 0 saw each node from and the result
of connecting back to it) in, one verdict dict out, whatever order the nodes
arrived in. Each :class:`Check` of :func:`checks` is one named rule with its severity;
refusals listed in ``NODEWEAVE_EXCHANGE_ALLOW`` (spec ``launcher.exchange_allow``)
become warnings, except the structural ones no job survives (a duplicate or
missing rank, another node count or launcher). Values are compared with node
0's: the table marks every node whose value differs.

Node 0 keeps the whole verdict (every node's row); each other node is told
only what it needs (:func:`shared_view`, :func:`own_part`, :func:`expand`):
the decision, each problem with its first :data:`SHOWN_NODES` nodes named,
node 0's row, its own row, and the :func:`digest` of the whole, so node 0's
bytes grow with N, not N², and every node still names the same verdict.
"""

import hashlib
import json

from ..planning.contract import EXCHANGE_ALLOWABLE as ALLOWABLE
from .fingerprint import major_minor
from ..hints import status_hint
from ..world import world_size

REFUSE, WARN = "refuse", "warn"
SHM_MIN = 1 << 30
SHOWN_ALWAYS = ("rank", "address", "seen", "connect-back", "shm_bytes", "hostname_address")  # per-node findings
SHOWN_NODES = 8  # nodes a problem names on every node; node 0's log and `status --fingerprints` name them all
# the recovery book's lists of node ranks, sent as runs of consecutive ranks (a few runs, not N numbers)
RANK_LISTS = ("members", "present", "spares", "alive")


class Entry:
    """One checked-in node as node 0 sees it."""

    __slots__ = ("fp", "seen", "probe", "own", "tag")

    def __init__(self, fp, seen=None, probe=None, own=False, tag=None):
        self.fp, self.seen, self.probe, self.own = fp, seen, probe, own
        self.tag = tag  # what the caller knows the node by (node 0's Peer): not judged

    @property
    def key(self):
        """A total order on everything judged, so arrival order never shows in the verdict."""
        return (not self.own, _int(self.fp.get("rank")), str(self.fp.get("hostname")), str(self.seen),
                repr(sorted(self.fp.items(), key=lambda kv: kv[0])), str(self.probe))


def _int(value):
    return value if isinstance(value, int) else 1 << 30


def _labels(entries):
    """{id(entry): 'node 1 (trainer-1)'}, told apart by the address seen, then a count, where names repeat."""
    def base(e):
        return f"node {e.fp.get('rank')} ({e.fp.get('hostname') or '?'}"
    counts = {}
    for e in entries:
        counts[base(e)] = counts.get(base(e), 0) + 1
    labels, taken = {}, {}
    for e in entries:
        text = base(e) + (f"@{e.seen}" if counts[base(e)] > 1 else "")
        taken[text] = taken.get(text, 0) + 1
        labels[id(e)] = text + (f" #{taken[text]}" if taken[text] > 1 else "") + ")"
    return labels


def _show(value):
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _differs(read):
    """A rule: nodes whose value (``read(fp)``, or the field named ``read``) differs from node 0's."""
    if isinstance(read, str):
        field = read
        read = lambda fp: fp.get(field)  # noqa: E731

    def rule(entries):
        ref = read(entries[0].fp)
        return [e for e in entries if read(e.fp) != ref]
    return rule


def _versions(entries):
    """Nodes whose library versions differ from node 0's only below major.minor (the refusals take the rest)."""
    ref = entries[0].fp

    def patch_differs(fp):
        if fp.get("launcher_version") != ref.get("launcher_version"):
            return True
        return any(fp.get(lib) != ref.get(lib) and major_minor(fp.get(lib)) == major_minor(ref.get(lib))
                   for lib in ("nccl", "rccl", "torch"))
    return [e for e in entries if patch_differs(e.fp)]


def _workspace(fp):
    return (fp.get("workspace_commit"), fp.get("workspace_digest"))


def _program(fp):
    return (fp.get("command_digest"), fp.get("script_digest"))


def _link(fp):
    return (fp.get("mtu"), fp.get("speed_mbps"))


def _faults_apart(entry, ref):
    """Each fault setting ``entry`` acts on otherwise than node 0 (``ref``), with both values."""
    mine, node_0 = entry.fp.get("faults") or {}, ref.fp.get("faults") or {}
    def shown(value):
        return ("on" if value else "off") if isinstance(value, bool) else _show(value)

    return "; ".join(f"{key} {shown(mine.get(key))} (node 0: {shown(node_0.get(key))})"
                     for key in sorted(set(mine) | set(node_0), key=str) if mine.get(key) != node_0.get(key))


def _duplicate_ranks(entries):
    counts = {}
    for e in entries:
        counts[e.fp.get("rank")] = counts.get(e.fp.get("rank"), 0) + 1
    return [e for e in entries if counts[e.fp.get("rank")] > 1]


def _rank_range(nnodes_max):
    def rule(entries):
        return [e for e in entries if not isinstance(e.fp.get("rank"), int) or not 0 <= e.fp["rank"] < nnodes_max]
    return rule


def _loopback(address):
    return str(address or "").startswith("127.")


def address_problem(entry):
    """Why peers could not reach what this node advertises, as node 0 sees it; None when they can."""
    fp, seen = entry.fp, entry.seen
    if entry.own:
        return None
    if not fp.get("address"):
        return "advertises no address (no interface toward the master)"
    if _loopback(fp.get("address")) and not _loopback(seen):
        return f"advertises loopback {fp['address']} ({fp.get('address_source')}) but node 0 sees it from {seen}"
    if fp.get("route_address") and fp.get("route_address") != seen:
        return (f"connects from {fp['route_address']} but node 0 sees {seen}: NAT or a bridge rewrites its address, "
                "so what it advertises is not where peers reach it")
    return None


def _address(entries):
    return [e for e in entries if address_problem(e)]


def _connect_back(entries):
    return [e for e in entries if not e.own and e.probe != "ok"]


def _small_shm(entries):
    return [e for e in entries if isinstance(e.fp.get("shm_bytes"), int) and e.fp["shm_bytes"] < SHM_MIN]


def _hostname_loopback(entries):
    return [e for e in entries if _loopback(e.fp.get("hostname_address")) and not _loopback(e.seen)]


class Check:
    """One rule: its name (what ``NODEWEAVE_EXCHANGE_ALLOW`` lists), severity, nodes it flags, fields shown."""

    __slots__ = ("name", "severity", "rule", "says", "fields", "detail")

    def __init__(self, name, severity, rule, says, fields, detail=None):
        self.name, self.severity, self.rule, self.says, self.fields = name, severity, rule, says, fields
        self.detail = detail  # (entry, node 0's) -> what exactly is wrong with this node, when one phrase is not enough


def checks(nnodes_max, launcher, reachability=True):
    """The rules, in the order their problems are listed; without ``reachability`` (a view from outside
    the exchange, such as doctor's) the address and connect-back rules, which need node 0's eyes."""
    rows = [
        Check("rank", REFUSE, _duplicate_ranks, "two nodes claim the same node rank", ("rank",)),
        Check("rank", REFUSE, _rank_range(nnodes_max), f"node rank outside 0..{nnodes_max - 1}", ("rank",)),
        Check("nodes", REFUSE, _differs("nnodes"), "nodes disagree on the node count", ("nnodes",)),
        Check("launcher", REFUSE, _differs("launcher"), "nodes would start different launchers", ("launcher",)),
        Check("faults", REFUSE, _differs("faults"), "nodes would act otherwise on a fault (their recovery, spares, "
              "checkpoint folder, restart brakes, stall or straggler settings differ from node 0's: one would stop "
              "or restart where another goes on; give every node the same)", ("faults",), _faults_apart),
        Check("vendor", REFUSE, _differs("gpu_vendor"), "GPU vendors differ: NCCL and RCCL do not talk to each other",
              ("gpu_vendor",)),
        Check("nccl", REFUSE, _differs(lambda fp: major_minor(fp.get("nccl"))),
              "NCCL major.minor differs: collectives may hang or fail", ("nccl",)),
        Check("rccl", REFUSE, _differs(lambda fp: major_minor(fp.get("rccl"))), "RCCL (ROCm) major.minor differs",
              ("rccl",)),
        Check("torch", REFUSE, _differs(lambda fp: major_minor(fp.get("torch"))),
              "torch major.minor differs: the process group's wire format is not stable across releases", ("torch",)),
        Check("image", REFUSE, _differs("image_digest"), "the installed distributions differ (another image)",
              ("image_digest", "image_ref")),
        Check("workspace", REFUSE, _differs(_workspace), "the workspaces differ (another commit or sync)",
              ("workspace_commit", "workspace_digest")),
        Check("command", REFUSE, _differs(_program), "nodes would run another command or script (the command "
              "after `--`, or the content of its script, differs from node 0's: each node trains what it was given)",
              ("command", "script_digest")),
        Check("address", REFUSE, _address, "the address the node advertises is not where node 0 reaches it "
              "(loopback, NAT or a bridge): peers would connect to the wrong place", ("address", "seen"),
              lambda e, ref: address_problem(e)),
        Check("connect-back", REFUSE, _connect_back, "node 0 could not connect back to a port the node opened: "
              "a firewall lets the master port through but not the random ports NCCL and Gloo use",
              ("address", "connect-back"), lambda e, ref: e.probe or "not tried"),
        Check("gpu-model", WARN, _differs("gpu_model"), "GPU models differ: the slowest sets the pace", ("gpu_model",)),
        Check("versions", WARN, _versions, "library patch versions differ",
              ("nccl", "rccl", "torch", "launcher_version")),
        Check("driver", WARN, _differs("gpu_driver"), "GPU driver versions differ", ("gpu_driver",)),
        Check("interface", WARN, _differs(_link), "the socket interface's MTU or speed differs: the slowest link "
              "sets the pace, and mismatched MTUs fragment", ("interface", "mtu", "speed_mbps")),
        Check("shm", WARN, _small_shm, "/dev/shm under 1 GiB: NCCL's shared-memory transport and DataLoader "
              "workers fail with larger buffers", ("shm_bytes",)),
        Check("env", WARN, _differs("env_hash"), "the NCCL/RCCL/Gloo variables differ", ("env",)),
        Check("hostname", WARN, _hostname_loopback, "the hostname resolves to loopback: tools that advertise "
              "the hostname (Gloo without GLOO_SOCKET_IFNAME) would send peers to 127.x", ("hostname_address",)),
    ]
    if not reachability:
        rows = [row for row in rows if row.name not in ("address", "connect-back")]
    if launcher == "accelerate":
        rows.append(Check("processes", REFUSE, _differs("nproc"), "accelerate runs the same process count on every "
                          "machine (--num_processes / --num_machines)", ("nproc",)))
    return rows



def _env_names(entries):
    """Variables whose value is not the same on every node."""
    envs = [e.fp.get("env") or {} for e in entries]
    names = set().union(*envs) if envs else set()
    return sorted(n for n in names if len({env.get(n) for env in envs}) > 1)


def _value(entry, field, ref, env_names=()):
    if field == "seen":
        return entry.seen
    if field == "connect-back":
        return "(node 0)" if entry.own else (entry.probe or "not tried")
    if field == "faults":  # the settings apart are named in the problem's details
        return "differ" if (entry.fp.get("faults") or {}) != (ref.fp.get("faults") or {}) else "same"
    if field == "env":
        mine = entry.fp.get("env") or {}
        return ",".join(f"{k}={mine.get(k, '-')}" for k in env_names) or f"hash {entry.fp.get('env_hash')}"
    return entry.fp.get(field)


REACHABILITY = ("address", "connect-back")  # the rules about one node's network path, seen from node 0
# the refusing rules that name the nodes whose value is apart from node 0's (``_differs``): node 0 is the reference,
# so the node named is the one at odds, never the job (walk13b B10: a node restarted from an edited environment)
APART = ("nodes", "launcher", "faults", "vendor", "nccl", "rccl", "torch", "image", "workspace", "command",
         "processes")


def set_aside(entries, allow=(), nnodes_max=1, launcher=None, apart=True):
    """[(entry, why, check name)] for the nodes recovery's regather leaves out rather than refusing the whole job
    for them, as the first check-in does: those node 0 cannot reach as their peers must (the address and
    connect-back rules, unless ``allow`` lets them start: one node's path going bad mid-job) and those whose
    settings are apart from node 0's (``APART``: a node come back from an edited environment; the running job's
    are node 0's; ``apart`` False where node 0 is the newcomer, come back to a running job: then its settings are
    not the job's, and such a difference refuses the job as before). Each node once, under the first rule that
    names it."""
    found, named = [], set()
    for check in checks(nnodes_max, launcher):
        if check.severity != REFUSE or check.name not in REACHABILITY + (APART if apart else ()):
            continue
        if check.name in allow and check.name in ALLOWABLE:
            continue
        headline = check.says.split(":")[0].split(" (")[0]
        for entry in check.rule(entries):
            if not entry.own and id(entry) not in named:
                named.add(id(entry))
                why = f"{headline}: {check.detail(entry, entries[0])}" if check.detail else _apart(check, entry,
                                                                                                    entries[0])
                found.append((entry, why, check.name))
    return found


def _apart(check, entry, ref):
    """'headline: field value (node 0: value)' for a node whose value differs from node 0's."""
    headline = check.says.split(":")[0].split(" (")[0]
    if check.name in REACHABILITY:
        return headline
    shown = "; ".join(f"{f} {_show(_value(entry, f, ref))} (node 0: {_show(_value(ref, f, ref))})"
                      for f in check.fields if _value(entry, f, ref) != _value(ref, f, ref))
    return f"{headline}: {shown}" if shown else headline


def unreachable(entries, allow=()):
    """[(entry, why)] for the nodes node 0 cannot reach as their peers must (:func:`set_aside`'s reachability
    rules alone)."""
    return [(entry, why) for entry, why, name in set_aside(entries, allow) if name in REACHABILITY]


def judge(entries, nnodes_min, nnodes_max, launcher, allow=(), missing=None, reachability=True, early=False):
    """The verdict dict for the checked-in ``entries`` (node 0's own among them, ``own=True``).

    ``missing``: {rank: what is known about it} for ranks below ``nnodes_min``
    that never checked in (their pod's phase, in Kubernetes). ``early``: a refusal ended the gathering before
    the deadline, so those ranks are named as not in yet, not as missing.
    """
    entries = ordered(entries)
    labels = _labels(entries)
    problems = []
    present = {e.fp.get("rank") for e in entries}
    gone = [rank for rank in range(nnodes_min) if rank not in present]
    if gone and early:  # walk11b B4: still arriving when another node's refusal ended the check-in, no deadline
        known = missing or {}  # passed: named, never counted as a problem beside the one real cause
        problems.append({"check": "not in yet", "severity": WARN, "allowed": False, "fields": [],
                         "says": "still on their way when the refusal ended the check-in (no deadline passed): "
                                 "not at fault",
                         "nodes": [f"node {r}" + (f" ({known[r]})" if known.get(r) else "") for r in gone]})
    elif gone:
        known = missing or {}
        problems.append({"check": "missing", "severity": REFUSE, "allowed": False, "fields": [],
                         "says": "did not check in before the deadline",
                         "nodes": [f"node {r}" + (f" ({known[r]})" if known.get(r) else "") for r in gone]})
    for check in checks(nnodes_max, launcher, reachability):
        odd = check.rule(entries)
        if not odd:
            continue
        allowed = check.severity == REFUSE and check.name in allow and check.name in ALLOWABLE
        problem = {"check": check.name, "severity": WARN if allowed else check.severity, "allowed": allowed,
                   "says": check.says, "fields": list(check.fields), "nodes": [labels[id(e)] for e in odd]}
        if check.detail:
            problem["details"] = {labels[id(e)]: check.detail(e, entries[0]) for e in odd}
        problems.append(problem)
    fields = []
    for problem in problems:
        fields += [f for f in problem["fields"] if f not in fields]
    names = _env_names(entries)
    fields = [f for f in fields if f in SHOWN_ALWAYS or len({repr(_value(e, f, entries[0], names)) for e in entries}) > 1]
    flagged = {label for problem in problems for label in problem["nodes"]}
    rows = [{"node": labels[id(e)], "rank": e.fp.get("rank"), "hostname": e.fp.get("hostname"),
             "flagged": labels[id(e)] in flagged, "values": {f: _value(e, f, entries[0], names) for f in fields}}
            for e in entries]
    refused = any(p["severity"] == REFUSE for p in problems)
    verdict = {"decision": "refuse" if refused else "start", "problems": problems, "fields": fields, "rows": rows,
               "nodes": len(entries)}
    if not refused:
        procs = {e.fp["rank"]: e.fp.get("nproc") for e in entries}
        verdict["procs"] = [procs.get(rank) for rank in range(len(procs))]
        verdict["world_size"] = world_size(verdict["procs"])  # the one rule (entrypoint/world.py)
    return verdict


def ordered(entries):
    """The entries in the order of the verdict's rows (:func:`judge` sorts them so): by :attr:`Entry.key`,
    whose costly tail (every field's repr) is read only where its cheap head ties (a duplicate rank)."""
    def head(e):
        return (not e.own, _int(e.fp.get("rank")), str(e.fp.get("hostname")), str(e.seen))
    out = sorted(entries, key=head)
    start = 0
    for i in range(1, len(out) + 1):
        if i == len(out) or head(out[i]) != head(out[start]):
            if i - start > 1:
                out[start:i] = sorted(out[start:i], key=lambda e: e.key)
            start = i
    return out


# --- what each node is told ---------------------------------------------------------------------------------

def digest(verdict):
    """The whole verdict's fingerprint (every row, every node named), 16 hex digits of SHA-256 over its
    canonical JSON: every node is told it, so nodes that were each sent a part still show one verdict."""
    whole = {k: v for k, v in verdict.items() if k != "digest"}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def runs(ranks):
    """[[first, count], ...] of consecutive ascending ranks, in order: a job's 8,192 members are one run."""
    out = []
    for rank in ranks:
        if out and isinstance(rank, int) and not isinstance(rank, bool) and rank == out[-1][0] + out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([rank, 1])
    return out


def unruns(pairs):
    out = []
    for first, count in pairs:
        out += [first] if count == 1 else list(range(first, first + count))
    return out


def repeats(values):
    """[[value, count], ...] of equal neighbours: every node's process count, mostly one value."""
    out = []
    for value in values:
        if out and out[-1][0] == value:
            out[-1][1] += 1
        else:
            out.append([value, 1])
    return out


def named(problem, limit=None):
    """The nodes a problem names, as a line shows them (the first ``limit``): '..., and 4088 more' when the
    list is or was shortened."""
    nodes = problem["nodes"][:limit] if limit else problem["nodes"]
    more = (problem.get("more") or 0) + len(problem["nodes"]) - len(nodes)
    return ", ".join(nodes) + (f", and {more} more" if more else "")


def shared_view(verdict):
    """What every node is told alike: the verdict without the other nodes' rows (node 0's stays, the
    reference), each problem naming its first :data:`SHOWN_NODES` nodes, the process counts and the
    recovery book's rank lists as runs, and the digest of the whole. Same size at 8 nodes and 8,192."""
    view = {k: v for k, v in verdict.items() if k not in ("rows", "problems", "procs", "recovery")}
    view["rows"] = verdict.get("rows", [])[:_shared_rows(verdict)]
    view["problems"] = []
    for problem in verdict.get("problems", []):
        shown = dict(problem, nodes=problem["nodes"][:SHOWN_NODES])
        if len(problem["nodes"]) > SHOWN_NODES:
            shown["more"] = (problem.get("more") or 0) + len(problem["nodes"]) - SHOWN_NODES
        if "details" in problem:
            shown["details"] = {node: problem["details"][node] for node in shown["nodes"]
                                if node in problem["details"]}
        view["problems"].append(shown)
    if "procs" in verdict:
        view["procs_repeats"] = repeats(verdict["procs"])
    if isinstance(verdict.get("recovery"), dict):
        view["recovery"] = {(key + "_runs" if key in RANK_LISTS and isinstance(value, list) else key):
                            (runs(value) if key in RANK_LISTS and isinstance(value, list) else value)
                            for key, value in verdict["recovery"].items()}  # the book's JSON, its lists as runs
    view["digest"] = verdict.get("digest") or digest(verdict)
    return view


def _shared_rows(verdict):
    """Rows every node is told: all of a job of up to :data:`SHOWN_NODES` nodes (each prints the whole table),
    node 0's alone past that (the reference each node's own row is compared with)."""
    rows = verdict.get("rows") or []
    return len(rows) if len(rows) <= SHOWN_NODES else 1


def own_parts(verdict):
    """What only each node is told, by row: its row, and for each problem that names it past the first
    :data:`SHOWN_NODES`, the problem's index and this node's detail (nothing for a row every node has)."""
    rows = verdict.get("rows", [])
    shared = _shared_rows(verdict)
    parts = [{"row": row} if i >= shared else {} for i, row in enumerate(rows)]
    at = {row["node"]: i for i, row in enumerate(rows)}
    for p, problem in enumerate(verdict.get("problems", [])):
        details = problem.get("details") or {}
        for label in problem["nodes"][SHOWN_NODES:]:
            if at.get(label):
                parts[at[label]].setdefault("named", {})[str(p)] = details.get(label)
    return parts


def row_index(verdict, fp):
    """The row of the node whose fingerprint is ``fp`` (its rank and hostname), or None."""
    for i, row in enumerate(verdict.get("rows", [])):
        if row.get("rank") == fp.get("rank") and row.get("hostname") == fp.get("hostname"):
            return i
    return None


def expand(view, own=None):
    """A node's verdict from what it was told (:func:`shared_view` and :func:`own_part`): node 0's row and its
    own, the problems that name it naming it, the process counts and the book's rank lists whole again."""
    verdict = dict(view)
    own = own or {}
    if "procs_repeats" in verdict:
        verdict["procs"] = [value for value, count in verdict.pop("procs_repeats") for _ in range(count)]
    if isinstance(verdict.get("recovery"), dict):
        listed = {key + "_runs": key for key in RANK_LISTS}
        verdict["recovery"] = {(listed[key] if key in listed and isinstance(value, list) else key):
                               (unruns(value) if key in listed and isinstance(value, list) else value)
                               for key, value in verdict["recovery"].items()}  # the runs as lists again
    if isinstance(own.get("row"), dict):
        verdict["rows"] = list(verdict.get("rows") or []) + [own["row"]]
    problems = [dict(p) for p in verdict.get("problems") or []]
    for index, detail in (own.get("named") or {}).items():
        if own.get("row") and index.isdigit() and int(index) < len(problems):
            problem, label = problems[int(index)], own["row"]["node"]
            problem["nodes"] = list(problem["nodes"]) + [label]
            problem["more"] = max(0, (problem.get("more") or 0) - 1)
            if detail is not None:
                problem["details"] = dict(problem.get("details") or {}, **{label: detail})
    verdict["problems"] = problems
    return verdict


def _cell(value, width=24):
    text = _show(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def render_table(verdict):
    """The verdict as the lines every node prints: the per-node table of differing fields, then each problem."""
    problems, fields = verdict["problems"], verdict["fields"]
    if not problems:
        return []
    head = ["node"] + fields
    body = [[row["node"]] + [_cell(row["values"].get(f)) for f in fields] for row in verdict["rows"]]
    ref = body[0] if body else []
    for line in body[1:]:
        for i in range(1, len(line)):
            if line[i] != ref[i]:
                line[i] += " *"
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    # no row, no table: a verdict for one node turned away has none (walk12b B11: a lone "  node" header)
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + body] if body else []
    if len(body) > 1:
        lines.append("  (* differs from node 0)")
    others = (verdict.get("nodes") or 0) - len(body)
    if others > 0:
        lines.append(f"  ({others} more node(s): node 0's log and {status_hint('--fingerprints')} show every row; "
                     f"verdict {verdict.get('digest')})")
    for p in problems:
        hint = " (allowed by NODEWEAVE_EXCHANGE_ALLOW)" if p["allowed"] else (
            f"; NODEWEAVE_EXCHANGE_ALLOW={p['check']} starts anyway" if p["severity"] == REFUSE
            and p["check"] in ALLOWABLE else "")
        lines.append(f"  {p['severity']:<6} {p['check']}: {p['says']}: {named(p)}{hint}")
        for node, detail in (p.get("details") or {}).items():
            lines.append(f"           {node}: {detail}")
    return lines
