"""A node that refuses its own start still tells node 0 why, so node 0 refuses the whole job at once.

Without it node 0 (and every other node) would wait out the check-in
deadline for a node that already exited 3. The refusing node has no plan, so
it reads what it can on its own (master, port, job id, as ``topology`` would,
every contradiction aside), connects to node 0's exchange for a few seconds,
answers the challenge with a ``refusal`` carrying its reason (signed with the
job token, like a hello) and exits 3 as before. Node 0 counts the refusal as
a node that checked in refused (``exchange.Hub.refusals``) and announces its
verdict to the others straight away.
"""

import socket
import time

from ..errors import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TOPOLOGY, EXIT_USAGE, EntrypointError
from ..hostport import host_port
from ..planning.exchange_plan import exchange_port, switched_off

TELL_FOR_S = 15.0  # node 0 opens its port as soon as it has planned: nodes started together find it in time


def _where(settings):
    """(host, exchange port, job id, master port) to tell, or None when there is nobody to tell."""
    from ..detection.node import detect
    from ..detection.host import host_networking
    from ..detection.kube import read_kube
    from ..model import Topology, Value
    from ..planning.sources import Scene, collect, member_name
    from ..detection.sysfs import Root
    from ..planning.topology import DEFAULT_PORT, choose_master

    root = Root(settings.sysroot)
    node = detect(settings.sysroot, settings.env)
    scene = Scene(settings, node, root, read_kube(root, settings.env), host_networking(node))
    claims = collect(scene)
    counts = [str(c.value) for c in claims.get("nnodes", ())]
    if counts and all(text.strip() in ("1", "1:1") for text in counts):
        return None  # a single-node job: no exchange
    prefix = next((c.value for c in claims.get("prefix", ())), None)
    master, _ = choose_master(scene, claims, prefix, 2, [], [])
    if prefix and _loopback(master):  # refused for that very address: node 0 is <name>-0 (compose, StatefulSet)
        master = member_name(prefix, 0, scene.ordinal_width)
    ports = [c.value for c in claims.get("master_port", ())]
    port = int(ports[0]) if ports and str(ports[0]).isdigit() else DEFAULT_PORT
    topo = Topology(master_port=Value(value=port, source="refusal"))
    job_id = settings.get("job_id") or prefix or settings.env.get("SLURM_JOB_ID") or "nodeweave"
    return master, exchange_port(topo, settings)[0], job_id, port, node.hostname, _rank(claims)


def _rank(claims):
    """The node rank every claim agrees on (flag, env, hostname ordinal), or None: node 0 then counts this node as
    the one that refused, not as a node missing as well."""
    ranks = {str(c.value).strip() for c in claims.get("node_rank", ())}
    if len(ranks) == 1:
        rank = ranks.pop()
        if rank.isdigit():
            return int(rank)
    return None


def _loopback(address):
    from ..planning.consistency import is_loopback as loopback

    return loopback(address)


QUERY_SWITCHES = ("explain", "status", "json", "stacks", "all_rows")  # settings.FLAGS that ask, never start


def is_start(settings):
    """Whether these settings start this node (and so speak for it in the job): a training command, no
    query switch (``--explain``, ``--status`` or one of theirs: ``--json``, ``--stacks``, ``--all``, even
    mistyped alone) and not a hold. A query's own refusal is local (walk9 B25: ``--json`` meant
    ``--explain --json``, typed in node 1's shell, refused the whole job at node 0's check-in)."""
    return bool(settings.command) and not any(getattr(settings, name) for name in QUERY_SWITCHES) \
        and settings.get("mode") != "hold"


def tell_node_0(settings, error, log, budget_s=TELL_FOR_S):
    """Send node 0 this node's refusal (``error``); quiet when it cannot be done."""
    if error.exit_code not in (EXIT_USAGE, EXIT_TOPOLOGY, EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE) \
            or switched_off(settings) or not is_start(settings):
        return False  # only a start checks in: a plan, a status, a query or a held container is nobody's peer
    try:
        where = _where(settings)
    except Exception:  # noqa: BLE001 - the refusal itself is what the user must see, not this
        return False
    if where is None or where[-1] == 0:
        return False  # nobody to tell, or this is node 0: its own refusal ends its exchange, which the others see
    host, port, job_id, master_port, hostname, rank = where
    from .wire import ExchangeError, connect, job_token, proof

    try:
        token = job_token(settings.env, job_id, master_port)
    except EntrypointError:  # the token file is what is refused: nothing node 0 would take can be signed
        return False
    body = {"t": "refusal", "reason": str(error), "host": hostname, "rank": rank}
    deadline = time.monotonic() + min(budget_s, settings.get("wait_timeout", 600) or budget_s)
    while time.monotonic() < deadline:
        try:
            channel = connect(host, port, 2.0)
        except (ExchangeError, socket.gaierror, UnicodeError):
            time.sleep(0.2)
            continue
        try:
            challenge = channel.receive(time.monotonic() + 5.0)
            if challenge.get("t") != "challenge" or challenge.get("job") != job_id:
                return False
            channel.send(dict(body, job=job_id, mac=proof(token, str(challenge.get("nonce")), body)))
            channel.receive(time.monotonic() + 5.0)
            log(f"told node 0 ({host_port(host, port)}) why this node refuses to start; node 0 "
                "refuses the job if its check-in is still open (every node exits 3)")
            return True
        except ExchangeError:
            return False
        finally:
            channel.close()
    return False


# --- node 0's side -----------------------------------------------------------------------------------------

def note_refusal(hub, peer, message):
    """Keep a refusal signed with this job's token in ``hub.refusals`` (the job is refused now); drop others."""
    from .wire import ExchangeError, verify

    body = {"t": "refusal", "reason": message.get("reason"), "host": message.get("host"), "rank": message.get("rank")}
    if message.get("job") != hub.own_fp.get("job") or not verify(hub.token, peer.challenge, message.get("mac"), body):
        hub._drop(peer, "a refusal without this job's token")
        return
    hub.pending.remove(peer)
    rank = body["rank"] if type(body["rank"]) is int and body["rank"] >= 0 else None
    hub.refusals.append({"host": str(body["host"])[:200], "seen": peer.channel.seen or "",
                         "reason": str(body["reason"])[:2000], "rank": rank})
    hub.log(f"check-in: {body['host']} ({peer.channel.peer}) refused its own start: {body['reason']}")
    try:
        peer.channel.send({"t": "noted"})
    except ExchangeError:
        pass
    peer.channel.finish(1.0)


def add_refusals(verdict, refusals):
    """The verdict refuses, its first problem naming each node that refused itself and why (its rank first where
    it knew it: then it is not among the nodes that did not check in as well)."""
    labels = [(f"node {r['rank']}: " if r.get("rank") is not None else "") + f"{r['host']} (from {r['seen']})"
              for r in refusals]
    told = {f"node {r['rank']}" for r in refusals if r.get("rank") is not None}
    own = any(r.get("own") for r in refusals)  # node 0 refused before anyone could come: nobody is missing
    for problem in [p for p in verdict["problems"] if p["check"] == "missing"]:
        problem["nodes"] = [n for n in problem["nodes"] if n.split(" (")[0] not in told and not own]
        if not problem["nodes"]:
            verdict["problems"].remove(problem)
    verdict["problems"].insert(0, {
        "check": "refused-start", "severity": "refuse", "allowed": False, "fields": [], "nodes": labels,
        "says": "refused its own start", "details": dict(zip(labels, (r["reason"] for r in refusals)))})
    verdict["decision"] = "refuse"
    return verdict


LATECOMERS_S = 3.0  # node 0 itself ends this much after a refusal that misses nodes (the 5 s bound of issue 28)


def tell_latecomers(hub, verdict, needed, deadline):
    """A job refused before every node checked in: give the nodes still on their way (started with the others,
    a little later) the same verdict for a few seconds, so they exit 3 now instead of waiting out the deadline
    for an exchange that closed."""
    until = min(deadline, hub.clock() + LATECOMERS_S)
    told = len(hub.peers)
    # a node whose check-in is in progress (connected, its connect-back not done) is waited for too:
    # closed on now, it would end with exit 4 ("closed the connection") instead of the refusal
    others = [r for r in hub.refusals if not r.get("own")]  # node 0's own refusal (a busy master port) is node 0
    while (len(hub.peers) + len(others) + 1 < needed or hub.pending) and hub.clock() < until:
        hub.step(min(0.2, max(0.0, until - hub.clock())))
        hub.tell(hub.peers[told:], verdict)  # each its part (queued; hub.close sends what is left)
        told = len(hub.peers)


def refused_because(verdict):
    """What a node checking in after node 0 refused the job is told: each refusal, and each node's own
    reason where it refused itself (the table node 0 printed is not sent to it)."""
    from .verdict import SHOWN_NODES

    parts = []
    for problem in verdict["problems"]:
        if problem["severity"] != "refuse":
            continue
        details = problem.get("details") or {}
        shown = problem["nodes"][:SHOWN_NODES]  # a line, not every node of a large job
        more = len(problem["nodes"]) - len(shown) + (problem.get("more") or 0)
        nodes = "; ".join(f"{node}: {details[node]}" if node in details else node for node in shown)
        nodes += f"; and {more} more" if more else ""
        parts.append(f"{problem['check']}, {problem['says']}" + (f" ({nodes})" if nodes else ""))
    return "node 0 refused this job before this node's check-in was through: " + " | ".join(parts)


def refused_early(hub, nnodes_max, launcher, allow):
    """Whether the nodes in so far are refused whoever else comes: a node refused its own start, or a
    refusal among what each fingerprint says (not the connect-back, still being tried). Each node is judged
    once, as it arrives, beside node 0 (every such rule compares a node with node 0, or with itself), and
    its rank is noted for the one rule that compares nodes with each other (a rank claimed twice): the last
    arrival costs one node's judging, not the whole job's."""
    from .verdict import Entry, judge

    if hub.refusals:
        return True
    early = hub.early  # {"checked": peers judged so far, "ranks": the ranks they claim, "refused": bool}
    if early["refused"]:
        return True
    own = Entry(hub.own_fp, seen=hub.own_fp.get("route_address") or hub.own_fp.get("address"), own=True)
    early["ranks"].add(hub.own_fp.get("rank"))
    for peer in hub.peers[early["checked"]:]:
        early["checked"] += 1
        rank = peer.fp.get("rank")
        twice = rank in early["ranks"]
        early["ranks"].add(rank)
        verdict = judge([own, peer.entry()], 0, nnodes_max, launcher, allow)
        if twice or any(p["severity"] == "refuse" and p["check"] != "connect-back" for p in verdict["problems"]):
            early["refused"] = True
            return True
    return False
