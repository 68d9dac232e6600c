"""The metric families node 0 serves, from what :class:`live.Live` can read at the moment of a scrape.

Every family carries ``job``; job-wide ones ``generation`` too; per-node ones
``node`` (and ``host``); per-rank ones ``node``, ``rank``; per-GPU ones ``node``,
``gpu``. docs/observability.md lists them. Nothing here waits: the heartbeat's
node table, the stall watch's views and verdicts are read as they stand.
"""

import os
import time

from ..news import by_node, by_rank, hub_roster, hub_standing, left_out_now, spares_now, stop_sent, waiting
from .exposition import Columns, label_text
from .goodput import BUCKETS, account
from .rankcounts import collectives, recorded

CHECKPOINT_TTL_S = 30.0
_checkpoint = {"at": 0.0, "found": (None, None)}


def newest_checkpoint(folder):
    """(step, time.time() of its newest file) of the newest complete checkpoint, looked for at most every
    :data:`CHECKPOINT_TTL_S`; (None, None) without one."""
    now = time.time()
    if not folder:
        return None, None
    if now - _checkpoint["at"] < CHECKPOINT_TTL_S:
        return _checkpoint["found"]
    found = (None, None)
    try:
        from ..recovery.checkpoints import newest_complete

        best = newest_complete(folder)
        if best is not None:
            found = (best.step, os.stat(best.path).st_mtime)
    except (OSError, ImportError, ValueError):
        pass
    _checkpoint.update(at=now, found=found)
    return found


def _peer_state(peer):
    if peer.done is None:  # a spare or left-out node waits, as --status says it (walk12 B1: "running")
        return waiting(peer) or "running"
    if stop_sent(peer.done) and peer.done.get("code") != 0:  # sent a stop on purpose (walk12b B18)
        return "stopped"
    if peer.done.get("lost"):
        return "lost"
    return "finished" if peer.done.get("code") == 0 else "failed"


def families(live, now=None):
    """[(name, type, help, samples)] of the job as node 0 sees it now."""
    now = time.time() if now is None else now
    watch = live.watch
    timeline = live.snapshot()
    gen = timeline["generations"][-1] if timeline["generations"] else {}
    job = timeline.get("job") or "nodeweave"
    generation = str(gen.get("generation", 0))
    base = {"job_name": job}
    jobwide = dict(base, generation=generation)
    out = []

    def family(name, kind, help_text, samples):
        out.append((name, kind, help_text, samples))

    family("nodeweave_generation", "gauge", "The job's current generation (0 until the first recovery).",
           [(base, gen.get("generation", 0))])
    # --- the check-in: whom node 0 waits for while it gathers (walk12b B13: a node that never comes) ---
    checkin = live.waiting() if hasattr(live, "waiting") else None
    family("nodeweave_checkin_gathering", "gauge", "1 while node 0 waits for nodes to check in (the job's start, or "
           "recovery's regather after a fault).", [(base, 1 if checkin else 0)])
    family("nodeweave_checkin_nodes_expected", "gauge", "The nodes node 0's check-in waits for (while it gathers).",
           [(base, checkin["expected"])] if checkin else [])
    family("nodeweave_checkin_nodes_in", "gauge", "Of those, the nodes checked in (while it gathers).",
           [(base, checkin["checked_in"])] if checkin else [])
    family("nodeweave_checkin_deadline_seconds", "gauge", "Seconds until node 0 stops waiting for the nodes not in "
           "(while it gathers).", [(base, checkin["deadline_in_s"])] if checkin else [])
    family("nodeweave_checkin_node_missing", "gauge", "1 for each node node 0 still waits for (while it gathers; "
           "the first 64).", [(dict(base, node=str(node)), 1) for node in checkin["not_in"]] if checkin else [])
    family("nodeweave_job_start_time_seconds", "gauge", "When node 0's entrypoint started (Unix time).",
           [(base, timeline["launched"])])
    book = live.book() or {}
    family("nodeweave_restarts_total", "counter", "Restarts of the whole job recovery has spent.",
           [(base, book.get("restarts", 0))])
    if live.limits.get("max_restarts") and book:
        family("nodeweave_restarts_limit", "gauge", "The restart budget (recovery.max_restarts).",
               [(base, live.limits["max_restarts"])])
    family("nodeweave_nodes_left_out", "gauge", "Nodes recovery left out of the current generation.",
           [(jobwide, len(left_out_now(book)))])
    family("nodeweave_spares_waiting", "gauge", "Spare nodes waiting to take a left-out node's place.",
           [(jobwide, spares_waiting(book, watch))])
    family("nodeweave_training_nodes", "gauge", "Nodes training in the current generation.",
           [(jobwide, len(book.get("members") or []) if book else (len(watch.hub.peers) + 1 if watch else 0))])

    step, written = newest_checkpoint(live.checkpoint_dir)
    family("nodeweave_checkpoint_step", "gauge", "The step of the newest complete checkpoint.", [(base, step)])
    family("nodeweave_checkpoint_age_seconds", "gauge", "Seconds since the newest complete checkpoint was written.",
           [(base, None if written is None else max(0.0, now - written))])

    # --- nodes: the heartbeat's table ---
    views, verdicts = live.views(now)
    beats, ups = [], []
    if watch is not None:
        clock = watch.clock()
        rows = hub_roster(watch.hub, book or None, now)  # one series per node, host as last seen (walk17b B5)
        _forget_labels_past(4 * (len(rows) + len(views)) + 256)
        for row in rows:
            peer, gone, node, host = row["peer"], row["gone"], str(row["node"]), (row["fp"] or {}).get("hostname")
            if row["own"]:
                (state, role), up, age = own_row(live, row["node"]), 1, 0.0
            elif gone is not None:  # left out and not back (walk16b B9), or expected and never in (walk17b B10)
                state, role, up, age = gone["state"].split(":")[0], gone["role"], 0, gone["silent_s"]
            else:
                state, role, up = _peer_state(peer), peer.role or "member", 1 if peer.done is None else 0
                age = max(0.0, clock - peer.last_heard) if peer.done is None else None
            if age is not None:
                beats.append((_LABELS.get(("beat", job, node, host)) or _remember(
                    ("beat", job, node, host), dict(base, node=node, host=host)), age))
            ups.append((_LABELS.get(("up", job, node, host, state, role)) or _remember(
                ("up", job, node, host, state, role), dict(base, node=node, host=host, state=state, role=role)), up))
    elif checkin and live.hub is not None:  # node 0's first gather: the nodes in are up already (walk18b B17)
        roles = dict(getattr(live.hub, "expected", None) or {})
        for row in checkin_nodes(live.hub, checkin):
            missing = row["state"] == NOT_IN
            ups.append((dict(base, node=str(row["node"]), host=row["host"], state="missing" if missing else
                             row["state"], role=row["role"] or roles.get(row["node"], "member")), 0 if missing else 1))
    family("nodeweave_node_heartbeat_age_seconds", "gauge", "Seconds since node 0 last heard from the node.", beats)
    family("nodeweave_node_up", "gauge", "1 while the node is in the job and beating, 0 once it ended or recovery "
           "left it out and it is not back (state lost or stopped) or it never checked in (state missing); while node "
           "0 first gathers, 1 for each node in (state gathering: node 0; checked in); one "
           "series per node, its state and role as labels.", ups)

    # --- ranks: the stall watch's views ---
    named = {(s.get("node"), s.get("rank")): s.get("gap") for s in verdicts.get("stragglers") or []}
    read = recorded(views)
    ratios = _ratios(watch)
    texts = _rank_label_texts(jobwide, views)
    keys = [(v.get("node"), v.get("rank")) for v in views]
    counts = Columns(texts, [collectives(v, read) for v in views])
    inside = Columns(texts, [v.get("inside_s") for v in views])
    outside = Columns(texts, [v.get("outside_s") for v in views])
    rate = live.rates()
    rates = Columns(texts, [rate.get(key) for key in keys])
    slow = Columns(texts, [1 + named[key] if named.get(key) is not None else ratios.get(key) for key in keys])
    moving = Columns(texts, [0 if v.get("state") in ("gone", "Z", "X") else 1 for v in views])
    family("nodeweave_rank_collectives_total", "counter", "Collectives the rank entered this generation.", counts)
    family("nodeweave_rank_collective_seconds_total", "counter",
           "Host seconds the rank spent inside collectives this generation.", inside)
    family("nodeweave_rank_compute_seconds_total", "counter",
           "Host seconds the rank spent outside collectives this generation.", outside)
    family("nodeweave_rank_collectives_per_second", "gauge",
           "The rank's collective rate over the last 30 seconds.", rates)
    family("nodeweave_rank_straggler_ratio", "gauge",
           "The rank's own work per collective over the job's median (1 = typical; 1.1 = 10% slower).", slow)
    family("nodeweave_rank_alive", "gauge", "1 while the rank's process lives.", moving)
    stall = verdicts.get("stall")
    family("nodeweave_stalled", "gauge", "1 while the job is stalled (no rank moves while ranks wait).",
           [(jobwide, 1 if stall else 0)])
    family("nodeweave_stall_seconds", "gauge", "How long the current stall has lasted (0: none).",
           [(jobwide, float(stall.get("for_s") or 0) if stall else 0)])
    family("nodeweave_stragglers", "gauge", "Ranks named stragglers now.", [(jobwide, len(named))])

    # --- steps: the training's own log lines ---
    if live.shown_step() is not None:  # none while node 0 sits the generation out (its lines, the steps, are gone)
        logger, number, _ = live.shown_step()
        family("nodeweave_step", "gauge", "The newest step the training logged (its logger as a label).",
               [(dict(jobwide, logger=logger), number)])
    family("nodeweave_steps_per_second", "gauge", "Steps a second over the last 30 seconds up to now (0 within 30 s of the last step line).",
           [(jobwide, live.step_rate())])

    # --- GPUs: node 0's own, every other node's as its beats carried them ---
    if live.sampler is not None:
        rows = {"util": [], "used": [], "total": [], "power": [], "xid": [], "xid_last": []}
        readings = [(node, source, g) for node, source, gpus in _every_nodes_gpus(live, watch) for g in gpus]
        for node, source, g in readings:
            labels = dict(base, node=node, gpu=str(g.get("index")), source=source)
            rows["util"].append((labels, g.get("util_ratio")))
            rows["used"].append((labels, g.get("mem_used_bytes")))
            rows["total"].append((labels, g.get("mem_total_bytes")))
            rows["power"].append((labels, g.get("power_watts")))
            if "xid_errors" in g:  # the node reads its kernel log: a count, 0 included, means something
                rows["xid"].append((dict(base, node=node, gpu=str(g.get("index"))), g["xid_errors"]))
                if g.get("xid_last") is not None:
                    rows["xid_last"].append((dict(base, node=node, gpu=str(g.get("index"))), g["xid_last"]))
        family("nodeweave_gpu_utilization_ratio", "gauge", "GPU busy fraction (0-1) as the vendor tool reports it.",
               rows["util"])
        family("nodeweave_gpu_memory_used_bytes", "gauge", "GPU memory in use.", rows["used"])
        family("nodeweave_gpu_memory_total_bytes", "gauge", "GPU memory in all.", rows["total"])
        family("nodeweave_gpu_power_watts", "gauge", "GPU power draw.", rows["power"])
        family("nodeweave_gpu_xid_errors_total", "counter", "NVIDIA Xid events of the GPU in the kernel log since "
               "the node's entrypoint started (only where the node may read /dev/kmsg).", rows["xid"])
        family("nodeweave_gpu_xid_last_code", "gauge", "The code of the GPU's newest Xid event since the node's "
               "entrypoint started.", rows["xid_last"])

    # --- goodput so far ---
    accounted = account(timeline, now)
    family("nodeweave_wall_seconds", "gauge", "Seconds since node 0's entrypoint started.",
           [(base, accounted["wall_s"])])
    family("nodeweave_time_seconds", "gauge",
           "The run's wall time so far by where it went: training, startup, recovery, redone, stalled, idle.",
           [(dict(base, bucket=name), accounted["buckets"][name]) for name in BUCKETS])
    family("nodeweave_goodput_ratio", "gauge", "Training time over wall time so far (the productive fraction).",
           [(base, accounted["productive"])])
    return out


_LABELS = {}  # a series' labels (its kind and values) -> their text: made once, reused by every scrape after


def _remember(key, labels):
    text = _LABELS[key] = label_text(labels)
    return text


def _forget_labels_past(most):
    """Nodes and ranks come and go (generations, spares): past ``most`` texts, start afresh."""
    if len(_LABELS) > most:
        _LABELS.clear()


def _rank_label_texts(jobwide, views):
    """Each view's label text, made once a rank and generation and reused by every scrape after (a rank's
    labels do not change while its generation lasts; 8,192 ranks make 8,192 texts, not 49,152 dicts)."""
    job, generation = jobwide["job_name"], jobwide["generation"]
    texts = []
    for v in views:
        node, rank, host = v.get("node"), v.get("rank"), v.get("host")
        key = ("rank", job, generation, node, rank, host)
        text = _LABELS.get(key)
        if text is None:
            text = _remember(key, dict(jobwide, node=str(node), rank=str(rank), host=host))
        texts.append(text)
    return texts


def _every_nodes_gpus(live, watch):
    """[(node, source, readings)]: node 0's from its sampler, the others' from their last beat that carried some."""
    source, gpus, _ = live.sampler.latest
    own = str((watch.hub.own_fp or {}).get("rank", 0)) if watch else "0"
    found = [(own, source, gpus)]
    for node, (their_source, theirs) in sorted((getattr(watch, "node_gpus", None) or {}).items(), key=str):
        found.append((str(node), their_source, [g for g in theirs if isinstance(g, dict)]))
    return found


def _ratios(watch):
    """(node, rank) -> own work per collective over the median, as the stall watch's last evaluation found it
    (one beat old at most; a scrape at 8,192 ranks does not go through every rank's window again); {} without."""
    stragglers = getattr(getattr(watch, "stall", None), "stragglers", None)
    return getattr(stragglers, "ratios", None) or {}


def _in_words(state):
    """A rank's process state as the STALL report says it (``sleeping``, ``stopped``, ``in uninterruptible I/O``),
    not the kernel's letter (``S``, ``T``, ``D``): ``top`` and the dashboard draw it as is (walk7 B43)."""
    from ..stall.ranks import STATES

    return STATES.get(state, state)


def spares_waiting(book, watch):
    """How many of the book's spares wait now (``news.spares_now``, what --status lists): a spare node 0 counted
    gone is one spare fewer until it checks in again (walk17b B14)."""
    if watch is None:
        return len(book.get("spares") or [])
    return len(spares_now(book, hub_roster(watch.hub, book)))


def hub_role(live, rank):
    """Node 0's role, as /metrics and /status.json say it: the hub, and, under recovery, what the book gives it in
    this generation when it does not train (walk10 B13: a node 0 whose own rank was left out showed `hub` beside
    its members, nothing saying it was out of training, where a left-out worker shows `left out`)."""
    return own_row(live, rank)[1]


def own_row(live, rank):
    """(state, role) of node 0's own row (``news.hub_standing``), from the book ``live`` reads."""
    return hub_standing(live.book() if live is not None and hasattr(live, "book") else None, rank)


NOT_IN = "not checked in"  # a node node 0's gather still waits for, as /status.json's nodes say it


def checkin_nodes(hub, checkin, book=None):
    """``nodes`` while node 0 gathers on ``hub``: node 0 (``gathering``, the hub), every node checked in (its role
    is the verdict's to give: none yet), every node not in yet (``checkin``, ``Hub.waiting``: its first 64) and, at
    recovery's regather, every node the last generation's ``book`` left out that is not back (walk17b: one row per
    node, none dropped while node 0 gathers), by node index."""
    own = hub.own_fp or {}
    rows = [{"node": own.get("rank", 0), "host": own.get("hostname"), "state": "gathering", "role": "hub",
             "heartbeat_age_s": None}]
    for peer in sorted(list(hub.peers), key=by_node):
        fp = peer.fp or {}
        state = (waiting(peer) or hub.checked_in_state()) if peer.done is None else _peer_state(peer)
        rows.append({"node": fp.get("rank"), "host": fp.get("hostname"), "state": state, "role": None,
                     "heartbeat_age_s": None})
    rows += [{"node": node, "host": None, "state": NOT_IN, "role": None, "heartbeat_age_s": None}
             for node in checkin.get("not_in") or []]
    listed = {row["node"] for row in rows}
    rows += [{"node": row["node"], "host": (row["fp"] or {}).get("hostname"),
              "state": row["gone"]["state"].split(":")[0], "role": row["gone"]["role"],
              "heartbeat_age_s": row["gone"]["silent_s"]}
             for row in hub_roster(hub, book) if row["gone"] is not None and row["node"] not in listed]
    rows.sort(key=lambda row: (0, row["node"]) if isinstance(row["node"], int) else (1, str(row["node"])))
    return rows


def status(live, now=None):
    """The same picture as JSON (``/status.json``, what ``nodeweave top`` draws). While node 0 gathers (``phase``
    ``gathering``), ``waiting`` says whom for and how long, as ``--status`` does, and ``nodes`` are the check-in's:
    node 0 gathering, the nodes checked in, the nodes not in yet."""
    now = time.time() if now is None else now
    timeline = live.snapshot()
    views, verdicts = live.views(now)
    watch = live.watch
    phase = live.phase() if hasattr(live, "phase") else "running"
    checkin = live.waiting() if phase == "gathering" else None
    nodes = []
    book = live.book()
    if checkin is not None:
        nodes = checkin_nodes(live.hub, checkin, book or None)
    elif watch is not None:
        clock = watch.clock()
        rows = hub_roster(watch.hub, book or None, now)
        if book and "spares" in book:  # the spares waiting now, as --status lists them (note18)
            book = dict(book, spares=spares_now(book, rows))
        for row in rows:  # one row per node, in node order
            peer, gone = row["peer"], row["gone"]
            node = {"node": row["node"], "host": (row["fp"] or {}).get("hostname")}
            if row["own"]:
                state, role = own_row(live, row["node"])
                node.update(state=state, role=role, heartbeat_age_s=0.0)
            elif gone is not None:  # left out and not back (walk16b B9), or expected and never in (walk17b B10)
                node.update(state=gone["state"].split(":")[0], role=gone["role"], heartbeat_age_s=gone["silent_s"])
            else:
                node.update(state=_peer_state(peer), role=peer.role,
                            heartbeat_age_s=round(max(0.0, clock - peer.last_heard), 2))
            nodes.append(node)
    named = {(s.get("node"), s.get("rank")): s.get("gap") for s in verdicts.get("stragglers") or []}
    ratios = _ratios(watch)
    rate = live.rates()
    read = recorded(views)
    ranks = [{"node": v.get("node"), "rank": v.get("rank"), "host": v.get("host"), "seq": v.get("seq"),
              "collectives": collectives(v, read),
              "state": _in_words(v.get("state")), "collectives_per_s": rate.get((v.get("node"), v.get("rank"))),
              "inside_s": v.get("inside_s"), "outside_s": v.get("outside_s"),
              "straggler_ratio": (1 + named[(v.get("node"), v.get("rank"))]) if (v.get("node"), v.get("rank")) in named
              else ratios.get((v.get("node"), v.get("rank")))} for v in sorted(views, key=by_rank)]
    source, gpus, _ = live.sampler.latest if live.sampler is not None else (None, [], None)
    every = [{"node": node, "source": src, "gpus": found} for node, src, found in _every_nodes_gpus(live, watch)] \
        if live.sampler is not None else []
    return {"schema": "nodeweave.live/1", "now": now, "job": timeline.get("job"), "book": book,
            "phase": phase, "waiting": checkin, "nodes": nodes, "ranks": ranks, "verdicts": verdicts, "gpus": gpus,
            "gpu_source": source, "node_gpus": every,
            "step": list(live.shown_step()) if live.shown_step() else None, "steps_per_s": live.step_rate(),
            "step_note": live.step_note(),
            "goodput": account(timeline, now), "timeline": timeline}
