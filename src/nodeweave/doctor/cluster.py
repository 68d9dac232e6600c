"""``nodeweave doctor --cluster``: every node's fingerprint side by side, differences highlighted.

Two ways to the fingerprints, the better first:
- node 0's check-in exchange, asked from inside a node (``nodeweave-entrypoint
  --status``): the job's live view — the address node 0 saw each node from,
  whether it could connect back, which nodes finished or failed, the verdict;
- each node's own ``nodeweave-entrypoint --explain --json`` (before a start,
  or after a refusal stopped the job): the fingerprints, and the verdict each
  node recorded at its last start.
Either way the same rules judge them (``nodeweave.entrypoint.checkin.verdict.judge``,
without the reachability rules when node 0 did not look), and every refusal or
warning becomes a finding. Pure: JSON in, a :class:`ClusterView` out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from nodeweave.entrypoint.nodelists import ranges
from nodeweave.doctor.findings import ERROR, WARNING, Finding
from nodeweave.entrypoint.hostport import host_port

# Rows of the side-by-side table, in order: (fingerprint field or view key, label).
ROWS = (
    ("hostname", "host"), ("state", "state"), ("address", "advertises"), ("seen", "node 0 sees"),
    ("probe", "connect-back"), ("nnodes", "nodes"), ("launcher", "launcher"), ("nproc", "processes"),
    ("gpu_vendor", "GPU vendor"), ("gpu_model", "GPU model"), ("gpu_count", "GPUs"), ("gpu_driver", "driver"),
    ("nccl", "NCCL"), ("rccl", "RCCL"), ("torch", "torch"), ("launcher_version", "launcher version"),
    ("image_ref", "image"), ("image_digest", "distributions digest"), ("workspace_commit", "workspace commit"),
    ("workspace_digest", "sync digest"), ("command", "command"), ("script_digest", "script digest"),
    ("interface", "interface"), ("mtu", "MTU"), ("speed_mbps", "speed Mb/s"),
    ("shm_bytes", "/dev/shm bytes"), ("memlock_bytes", "memlock bytes"), ("env_hash", "NCCL/Gloo env hash"),
)
PER_NODE = ("hostname", "state", "address", "seen", "probe")  # expected to differ: never highlighted


@dataclass
class NodeView:
    label: str
    fp: dict
    seen: Optional[str] = None
    probe: Optional[str] = None
    state: str = "-"

    def value(self, key: str):
        return {"seen": self.seen, "probe": self.probe, "state": self.state}.get(key, self.fp.get(key))


@dataclass
class ClusterView:
    source: str                       # where the fingerprints came from
    nodes: List[NodeView] = field(default_factory=list)
    verdict: Optional[dict] = None    # judge()'s verdict over these nodes
    findings: List[Finding] = field(default_factory=list)

    def table(self):
        """(labels, rows): each row (label, [cell text], [differs from node 0])."""
        rows = []
        for key, label in ROWS:
            values = [_text(node.value(key)) for node in self.nodes]
            if all(v == "-" for v in values):
                continue
            ref = values[0] if values else "-"
            rows.append((label, values, [key not in PER_NODE and v != ref for v in values]))
        return [node.label for node in self.nodes], rows

    def to_dict(self) -> dict:
        labels, rows = self.table()
        return {"source": self.source, "nodes": [vars(node) for node in self.nodes], "verdict": self.verdict,
                "table": {"nodes": labels, "rows": [{"field": r[0], "values": r[1], "differs": r[2]} for r in rows]},
                "findings": [f.to_dict() for f in self.findings]}


def _text(value) -> str:
    return "-" if value is None or value == "" else str(value)


def _label(fp: dict) -> str:
    return f"node {fp.get('rank')} ({fp.get('hostname') or '?'})"


def from_status(status: dict, where: str) -> ClusterView:
    """The view from node 0's exchange (``nodeweave-entrypoint --status``)."""
    from nodeweave.entrypoint.checkin.verdict import Entry

    nodes = [NodeView(_label(n["fp"]), n["fp"], n.get("seen"), "(node 0)" if n.get("own") else n.get("probe"),
                      n.get("state") or "-") for n in status.get("nodes") or []]
    # a node the job counted on that never checked in (``missing``) is listed, not judged: it has no fingerprint
    entries = [Entry(n["fp"], seen=n.get("seen"), probe=n.get("probe"), own=bool(n.get("own")))
               for n in status.get("nodes") or [] if not str(n.get("state") or "").startswith("missing")]
    view = ClusterView(source=f"node 0's check-in exchange ({where}), {status.get('phase')}", nodes=_ordered(nodes))
    allowed = [p["check"] for p in (status.get("verdict") or {}).get("problems", []) if p.get("allowed")]
    view = _judged(view, entries, reachability=True, allow=allowed)
    roles = {(n.get("fp") or {}).get("rank"): n.get("role") for n in status.get("nodes") or []
             if str(n.get("state") or "").startswith("missing")}
    if view.verdict is not None:
        view.findings = findings(view.verdict, roles)
    return view


def from_fingerprints(found: "list[tuple[str, dict]]") -> ClusterView:
    """The view from each node's own ``--explain --json`` ((target, plan JSON) pairs)."""
    from nodeweave.entrypoint.checkin.verdict import Entry

    nodes, entries = [], []
    for target, plan in found:
        fp = plan.get("fingerprint") or {}
        last = ((plan.get("exchange") or {}).get("last") or {})
        state = f"last start: {last['decision']}" if last.get("decision") else "not started here"
        nodes.append(NodeView(f"{_label(fp)} [{target}]", fp, state=state))
        entries.append(Entry(fp, own=fp.get("rank") == 0))
    view = ClusterView(source="each node's nodeweave-entrypoint --explain --json", nodes=_ordered(nodes))
    view = _judged(view, entries, reachability=False)
    # no check-in ran, so no node "did not check in before the deadline": the ranks not among those read were not
    # asked (--node picked others) or gave no fingerprint (cluster-unreachable names those); walk14 A12
    unasked = [p for p in (view.verdict or {}).get("problems", []) if p["check"] == "missing"]
    if unasked:
        view.verdict["problems"] = [p for p in view.verdict["problems"] if p["check"] != "missing"]
        if not any(p["severity"] == "refuse" for p in view.verdict["problems"]):
            view.verdict["decision"] = "start"
        view.findings = findings(view.verdict) + [Finding(
            WARNING, "cluster-not-asked", f"no fingerprint read from {', '.join(unasked[0]['nodes'])}: not among the "
            "nodes asked (no check-in runs, so none was waited for)",
            "leave --node off to compare every node's, or ask while the job runs")]
    return view


def _ordered(nodes: "list[NodeView]") -> "list[NodeView]":
    return sorted(nodes, key=lambda n: (not isinstance(n.fp.get("rank"), int), n.fp.get("rank") or 0, n.label))


def _judged(view: ClusterView, entries, reachability: bool, allow=()) -> ClusterView:
    from nodeweave.entrypoint.checkin.verdict import judge

    if not entries:
        view.findings = [Finding(ERROR, "cluster-no-nodes", "no node answered", "check the targets are running")]
        return view
    if not any(e.own for e in entries):
        entries[0].own = True  # compare with the first node when node 0 is not among them
    ref = next(e for e in entries if e.own).fp
    nnodes = str(ref.get("nnodes") or len(entries))
    low, _, high = nnodes.partition(":")
    lo = int(low) if low.isdigit() else len(entries)
    hi = int(high) if high.isdigit() else lo
    view.verdict = judge(entries, lo, hi, ref.get("launcher"), allow, reachability=reachability)
    view.findings = findings(view.verdict)
    return view


def findings(verdict: dict, roles: "dict | None" = None) -> "list[Finding]":
    """A finding per problem: refusals are errors (the job would not start), warnings stay warnings. ``roles``:
    {node: role} of the nodes node 0 lists as never checked in; a spare among them is advised as a spare (the job
    trains without it), not as a member the check-in waits for (note18: fix19b left)."""
    out = []
    for problem in verdict["problems"]:
        if problem["check"] == "missing" and roles:
            spares = [n for n in problem["nodes"] if roles.get(_rank_of(n)) == "spare"]
            if spares:
                out.append(Finding(WARNING, "cluster-missing", f"spare {', '.join(spares)} never checked in: the "
                                   "job trains without it, one spare fewer to take a left-out node's place",
                                   "start it (its container, pod or host) with the job's variables, NODEWEAVE_SPARES "
                                   "among them: it checks in and waits as a spare; the training nodes do not wait "
                                   "for it"))
                problem = dict(problem, nodes=[n for n in problem["nodes"] if n not in spares])
                if not problem["nodes"]:
                    continue
        details = "; ".join(f"{k}: {v}" for k, v in (problem.get("details") or {}).items())
        message = f"{problem['says']}: {', '.join(problem['nodes'])}" + (f" ({details})" if details else "")
        if problem["check"] == "missing":  # a training node: the check-in's own advice, not "make them agree"
            out.append(Finding(ERROR, "cluster-missing", message, "start it (its container, pod or host), or see why "
                               "it cannot reach node 0's check-in exchange (`nodeweave logs --node N`); the job "
                               "starts only with every training node in"))
        elif problem["severity"] == "refuse":
            action = "make the nodes agree (the same image, `nodeweave sync` for the workspace, one rank each); "
            action += (f"or start anyway with NODEWEAVE_EXCHANGE_ALLOW={problem['check']} "
                       f"(spec launcher.exchange_allow)" if problem["check"] in _allowable() else
                       "the check-in refuses this on every start")
            out.append(Finding(ERROR, f"cluster-{problem['check']}", message, action))
        elif problem.get("allowed"):
            out.append(Finding(WARNING, f"cluster-{problem['check']}", message,
                               "allowed by the job's NODEWEAVE_EXCHANGE_ALLOW: the job starts, but check it is meant"))
        else:
            out.append(Finding(WARNING, f"cluster-{problem['check']}", message,
                               "the job starts, but runs at the pace of its slowest node or config"))
    return out


def _rank_of(label: str):
    """The node index of a verdict's label (``node 2``, ``node 2 (Pending)``), or None."""
    word = (label.split() + ["", ""])[1]
    return int(word) if word.isdigit() else None


def _allowable():
    from nodeweave.entrypoint.planning.contract import EXCHANGE_ALLOWABLE

    return EXCHANGE_ALLOWABLE


class NotANode(Exception):
    """survey_here on a machine that no job's variables make a node: there is no node 0 to ask from here."""


def survey_here(env: "dict[str, str] | None" = None) -> ClusterView:
    """Ask node 0's exchange from this machine, as the entrypoint here would reach it (its variables)."""
    import os

    from nodeweave.entrypoint import EntrypointError, parse
    from nodeweave.entrypoint.checkin.exchange import ask_status, token_refusal
    from nodeweave.entrypoint.checkin.wire import ExchangeError, frame_limit, job_token
    from nodeweave.entrypoint.recovery.roles import plan_node

    env = dict(os.environ) if env is None else dict(env)
    try:
        plan = plan_node(parse(["--", "nodeweave-doctor-cluster"], env), partial=True)  # a spare plans as one
    except EntrypointError as err:
        return _unreachable("this machine's settings", str(err))
    if plan.errors:
        return _unreachable("this machine's settings", plan.errors[0]["message"])
    info, topo = plan.exchange, plan.topology
    if not topo.platform:  # nothing says this machine is a node of a job: the caller asks the job's nodes
        raise NotANode("this machine is not a node of a job (no rank variables, no platform)")
    if not info or not info.get("enabled"):
        return _unreachable("this machine's settings", f"no check-in exchange to ask: {(info or {}).get('why')}")
    where = host_port(info['host'], info['port'])
    try:
        status = ask_status(info["host"], info["port"], topo.job_id, job_token(env, topo.job_id, topo.master_port.value),
                            limit=frame_limit(topo.nnodes_max), whole=True)  # every fingerprint, compared
    except (ExchangeError, OSError) as err:
        return _unreachable(where, token_refusal(str(err), info.get("token")))
    return from_status(status, where)


def _unreachable(where: str, why: str) -> ClusterView:
    return ClusterView(source=where, findings=[Finding(
        ERROR, "cluster-unreachable", f"could not ask node 0's check-in exchange ({where}): {why}",
        "run `nodeweave doctor --cluster` inside a node of the running job (its NODEWEAVE_* variables find node "
        "0), or `nodeweave-entrypoint --status` there")])


def survey_targets(targets, timeout_s: float = 60.0) -> ClusterView:
    """Ask through the nodes themselves (``podman:trainer-1``, ``pod:llama-0``, ``ssh:gpu01``, ...).

    ``nodeweave-entrypoint --status`` runs on the first target that answers
    (any node of the running job finds node 0 with its own variables); when
    none does — the job has not started, or runs with the exchange off — each
    target's ``--explain --json`` gives its fingerprint and last verdict.
    """
    import json

    from nodeweave.failures import NO_CONTEXT_FLAG_HINT, api_cut_off

    tried, said = [], []
    for target in targets:
        out = _run_on(target, list(STATUS_ARGV), timeout_s)  # every fingerprint
        said.append((target.label, out.stderr or out.stdout or ""))
        if out.returncode == 0:
            try:
                return from_status(json.loads(out.stdout), f"asked on {target.label}")
            except (ValueError, KeyError, TypeError):
                tried.append(f"{target.label}: the answer was not the exchange's JSON")
                continue
        tried.append(f"{target.label}: {_last_line(out.stderr) or f'exit {out.returncode}'}")
    cut_off = api_cut_off(said, "no node asked:", NO_CONTEXT_FLAG_HINT)
    if cut_off is not None:  # no node could be asked at all: one line, exit 3, not "runs a nodeweave image" (walk9 A8)
        raise cut_off
    plans, missing = [], []
    for target in targets:
        out = _run_on(target, list(EXPLAIN_ARGV), timeout_s)
        try:
            plans.append((target.label, json.loads(out.stdout)))
        except ValueError:
            missing.append(f"{target.label}: {_last_line(out.stderr) or f'exit {out.returncode}'}")
    view = from_fingerprints([p for p in plans if (p[1] or {}).get("fingerprint")])
    asked = f" ({'; '.join(tried)})" if tried else ""
    note = Finding(WARNING, "cluster-not-running", "no node's --status reached a running check-in exchange"
                   + asked + ": fingerprints from each node's --explain instead, without what only node "
                   "0 sees (addresses, connect-back)", "start the job, or ask again while it runs")
    view.findings = [note] + [Finding(ERROR, "cluster-unreachable", f"no fingerprint from {m}",
                                      "check the target runs a nodeweave image") for m in missing] + view.findings
    return view


STATUS_ARGV = ("nodeweave-entrypoint", "--status", "--all")
EXPLAIN_ARGV = ("nodeweave-entrypoint", "--explain", "--json", "--", "nodeweave-doctor-cluster")


def survey_plan(targets):
    """What ``survey_targets`` runs, as ``doctor --cluster --dry-run`` prints it: ``--status`` on the first node
    that answers, else every node's ``--explain``; nothing is asked."""
    from nodeweave.plan import CommandsPhase, Plan
    from nodeweave.steps import Step

    status = CommandsPhase("ask node 0's exchange through the first node that answers", steps=tuple(
        Step(f"--status through {t.label}", tuple(t.exec_argv(list(STATUS_ARGV), stdin=False))) for t in targets))
    explain = CommandsPhase("when none answers: every node's own fingerprint", steps=tuple(
        Step(f"--explain on {t.label}", tuple(t.exec_argv(list(EXPLAIN_ARGV), stdin=False))) for t in targets))
    return Plan("doctor --cluster", ranges(t.label for t in targets), (status, explain),
                ("reads only: asks each node's entrypoint, changes nothing",))


def _run_on(target, argv, timeout_s):
    import subprocess

    try:
        return subprocess.run(target.exec_argv(argv, stdin=False), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"no answer within {timeout_s:g}s")
    except OSError as err:
        return subprocess.CompletedProcess(argv, 127, "", f"cannot run {target.tool or argv[0]}: {err.strerror}")


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
