"""``--status`` of a large job: a summary first (counts by state, the worst nodes and ranks), not every row.

Node 0 answers ``--status`` (``exchange.Hub.status``). Up to :data:`WHOLE_UP_TO` nodes the answer lists every
node and every rank, as it always did; past that it lists the counts by state and the :data:`WORST` nodes
and ranks most worth a look (failed, lost or flagged first, then the longest silent or longest in one
place), and says how many it left out; ``--status --all`` asks for every row. Pure: lists in, dicts out.
"""

WHOLE_UP_TO = 64   # nodes: a job this small is listed whole (what a person reads in one screen or two)
WORST = 16         # nodes, and ranks, a summary names


def ended_state(done):
    """A node's state once it ended (its report ``done``), in words: ``finished ...``, ``stopped: ...`` for one sent a
    stop signal on purpose (walk12b B18: a left-out node stopped by SIGTERM while it waited was counted
    ``failed``, node 0's own line saying "was stopped"), ``lost: ...`` for one node 0 counted gone, else
    ``failed: ...``; the state's first word is its count's key (``nodes_summary``) and /metrics' ``state`` label
    (``metrics.collect``)."""
    how = done.get("how")
    if done.get("code") == 0:
        return f"finished {how}"
    from ..news import stop_sent

    if stop_sent(done):
        return f"stopped: {how}"
    # node 0 counted it gone (silent, its link closed): /metrics' word too (walk17b B14: a spare paused was "failed")
    return f"lost: {how}" if done.get("lost") else f"failed: {how}"


def _node_badness(node):
    """Sort key, worst first: failed, lost or missing (expected, never checked in), then silent, then flagged by the
    verdict, then finished."""
    state = node.get("state") or ""
    return (0 if state.startswith(("failed", "lost", "missing")) else 1 if node.get("flagged") else 2 if state == "running"
            and (node.get("silent_s") or 0) > 0 else 3, -(node.get("silent_s") or 0), _rank(node))


def _rank(node):
    rank = (node.get("fp") or {}).get("rank")
    return rank if isinstance(rank, int) else 1 << 30


def stall_line(stall):
    """"stalled 19 s in all_reduce #11, culprit rank 1 (node 1, vm)" of the stall watch's verdict, or None."""
    if not stall:
        return None
    culprits = stall.get("culprits") or []
    named = ", ".join(f"rank {c.get('rank')} (node {c.get('node')}, {c.get('host')})" for c in culprits[:4])
    more = f" and {len(culprits) - 4} more" if len(culprits) > 4 else ""
    return (f"stalled {float(stall.get('for_s') or 0):.0f} s in {stall.get('where')}"
            + (f", culprit {named}{more}" if culprits else ", no culprit named yet"))


def nodes_summary(nodes, verdict, stall=None):
    """{"stall": line (while the job stalls), "nodes": N, "states": {state: count}, "flagged": count,
    "worst": [up to WORST nodes without their fingerprint]}.

    ``nodes``: ``Hub.status``' rows ({fp, seen, probe, own, state, silent_s}); ``verdict``: node 0's whole
    verdict (its rows say which nodes a problem flagged), or None while gathering; ``stall``: the stall watch's
    verdict (``stall/watcher``), whose culprits' nodes are flagged and listed first (walk7 B26: a stalled job's
    summary read "flagged 0", its culprit "running")."""
    flagged = {row.get("rank") for row in (verdict or {}).get("rows") or [] if row.get("flagged")}
    flagged |= {c.get("node") for c in (stall or {}).get("culprits") or [] if isinstance(c.get("node"), int)}
    states = {}
    for node in nodes:
        state = node.get("state") or "?"
        key = next((word for word in ("failed", "finished", "stopped", "lost", "missing") if state.startswith(word)),
                   state)
        states[key] = states.get(key, 0) + 1
    marked = [dict(node, flagged=_rank(node) in flagged) for node in nodes if not node.get("own")]
    import heapq

    worst = heapq.nsmallest(WORST, marked, key=_node_badness)
    said = stall_line(stall)
    return {**({"stall": said} if said else {}), "nodes": len(nodes), "states": states,
            "flagged": len(flagged - {0}), "worst": [_brief(node) for node in worst]}


def _brief(node):
    fp = node.get("fp") or {}
    # "node": the node's index (its fingerprint's node rank), never "rank", which --status keeps for a training
    # rank (walk12 B2: node 3 training as rank 1 was listed as 'rank': 3)
    out = {"node": fp.get("rank"), "hostname": fp.get("hostname"), "seen": node.get("seen"),
           "state": node.get("state"), "flagged": node.get("flagged", False)}
    if node.get("silent_s") is not None:
        out["silent_s"] = node["silent_s"]
    return out


def ranks_summary(ranks):
    """The stall watch's ``ranks`` answer with its per-rank list cut to the WORST ranks (longest in one
    place: the likeliest culprits and stragglers) and counts in front: {"ranks": N, "states": {...},
    "inside": {collective: ranks in it}, "longest_s": ...}. The verdicts (stall, stragglers) stay whole."""
    import heapq

    rows = ranks.get("ranks") or []
    states, inside = {}, {}
    for row in rows:
        states[row.get("state") or "?"] = states.get(row.get("state") or "?", 0) + 1
        if row.get("inside"):
            inside[row.get("name") or "?"] = inside.get(row.get("name") or "?", 0) + 1
    worst = heapq.nlargest(WORST, rows, key=lambda r: (r.get("state") not in ("R", "S"), r.get("since_s") or 0))
    out = dict(ranks, ranks=worst)
    out["summary"] = {"ranks": len(rows), "states": states, "inside": inside, "listed": len(worst),
                      "longest_s": max((r.get("since_s") or 0 for r in rows), default=None)}
    return out
