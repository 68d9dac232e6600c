"""The check-in and the heartbeat around one launch, once ``exchange_plan.py`` said they run.

:class:`CheckIn` is made before the wait (node 0 opens its port at once,
every node makes its fingerprint) and run after it: node 0 gathers, judges and
announces (``exchange.Hub``), the others check in (``exchange.check_in``);
every node prints the same verdict, exits 3 on a refusal, and otherwise
launches with the counts the verdict carries and a heartbeat
(``heartbeat.py``) for a supervised launcher. Also ``--status`` and what
``--explain`` shows of the exchange.
"""

import os
import time

from ..errors import EXIT_TOPOLOGY, EXIT_UNREACHABLE, EntrypointError
from ..hostport import host_port

VERDICT_GRACE_S = 30  # a worker waits this much longer than node 0's deadline for its verdict
RETRY_S = 0.3         # between a node's attempts to check in while node 0 is between generations
RECORD = "checkin.json"


class Session:
    """The check-in's outcome on this node."""

    def __init__(self, verdict, watch=None, fingerprint=None):
        self.verdict, self.watch, self.fingerprint = verdict, watch, fingerprint


def say_verdict(verdict, took, log):
    from .verdict import render_table

    problems = verdict["problems"]
    nodes = verdict.get("nodes")
    named = f"; verdict {verdict['digest']}" if verdict.get("digest") else ""  # the same on every node
    if verdict["decision"] == "refuse" and verdict.get("scope") == "this node":  # the job goes on (heartbeat)
        log(f"check-in: node 0 turned this node away ({len(problems)} problem(s)); this node exits {EXIT_TOPOLOGY}, "
            "the job goes on without it:")
    elif verdict["decision"] == "refuse":
        log(f"check-in refused the job ({nodes} node(s) in, {len(problems)} problem(s){named}); every node exits "
            f"{EXIT_TOPOLOGY}:")
    elif problems:
        log(f"check-in: {nodes} node(s) agree with {len(problems)} warning(s) (world size "
            f"{verdict.get('world_size')}, {took:.2f}s{named}); starting anyway:")
    else:
        log(f"check-in: {nodes} node(s) agree (world size {verdict.get('world_size')}, {took:.2f}s){named}")
    for line in render_table(verdict):
        log(line)


def waiting_line(needed, most, port, deadline_s):
    """Node 0's line as its check-in gathers ``needed`` nodes (node 0 counted) of at most ``most``: how many more it
    waits for, or, when it alone makes the minimum (an elastic ``1:N`` job), that it starts now and who may join,
    never "waiting for 0 more" (walk13 B14)."""
    join = f"up to {most} nodes may join" if most > needed else ""
    if needed <= 1:
        return ("check-in: the minimum 1 node is in (node 0): nothing to wait for, starting; "
                + (f"{join} later, checking in on port {port}" if join else "it is the job's only node"))
    return (f"check-in: waiting for {needed - 1} more node(s) on port {port} (up to {deadline_s}s)"
            + (f": the minimum {needed}; {join} later" if join else ""))


def record_verdict(plan, settings, verdict, fingerprint):
    """Keep the verdict beside the hostfile (this job's folder, ``runstate.job_dir``), for --explain and doctor
    --cluster after the start."""
    import json

    from ..running.runstate import job_dir_of, write_whole

    folder = job_dir_of(settings.env, plan.topology)
    try:
        os.makedirs(folder, exist_ok=True)
        write_whole(os.path.join(folder, RECORD),
                    json.dumps({"verdict": verdict, "fingerprint": fingerprint, "at": time.time()}))
    except OSError:
        pass  # a record for later reading; the launch does not depend on it


def last_record(settings, topo):
    """The verdict this node recorded at its last start of the job of ``topo``
    (``$TMPDIR/nodeweave/jobs/<job id>-<master port>/checkin.json``), or None. Why the job: ``/tmp`` is shared by
    every job and user on a machine, so a record another job left there is not this node's last start (a fresh
    clone's --explain showed a stranger's check-in as its own; walk10 B8: two jobs wrote one file)."""
    import json

    from ..running.runstate import job_dir_of

    path = os.path.join(job_dir_of(settings.env, topo), RECORD)
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or (data.get("fingerprint") or {}).get("job") != topo.job_id:
        return None
    verdict = data.get("verdict") or {}
    return {"path": path, "at": data.get("at"), "decision": verdict.get("decision"),
            "problems": [f"{p.get('severity')} {p.get('check')}: {', '.join(p.get('nodes') or [])}"
                         for p in verdict.get("problems") or []]}


def explain_exchange(plan, settings, root):
    """For --explain: this node's fingerprint, and the verdict of its last start when one was recorded."""
    from .fingerprint import local_fingerprint

    plan.fingerprint = local_fingerprint(plan, root, settings)
    if root.real:
        plan.exchange["last"] = last_record(settings, plan.topology)


def wrong_port_hint(info, topo):
    """When --status finds no exchange at the port it dialled: what answers there instead, and where the job's
    exchange answers, with the MASTER_PORT (or NODEWEAVE_EXCHANGE_PORT) that reaches it (walk13 B11: a port
    copied from a log line, the exchange's or the metrics', was dialled + 1 or waited out in silence). Ports next
    to the one dialled and to the master port, on either side (walk16b B16), are asked, each once; '' when none
    answers as an exchange and nothing answers at the port dialled."""
    from .exchange import SILENT, exchange_holding, what_answers

    host, dialled, master = info["host"], info["port"], topo.master_port.value
    there = what_answers(host, dialled)
    found = hint = None
    for port in dict.fromkeys(p for p in (master, dialled - 1, dialled + 1, master + 1, master - 1)
                              if p != dialled and 0 < p < 65536):
        job = exchange_holding(port, host, 1.5)
        if job is None:
            continue
        found = port
        other = f" (job {job}, not {topo.job_id}: give NODEWEAVE_JOB_ID={job})" if job != topo.job_id else ""
        if info["port_source"].startswith("master port"):  # "master port 50500 + 1": none set
            if port == master:
                give = (f"MASTER_PORT={master} is that exchange port itself: give the job's master port, "
                        f"MASTER_PORT={port - 1} (the exchange is the master port + 1)")
            else:
                give = f"give MASTER_PORT={port - 1} (the exchange is the master port + 1)"
        else:
            set_by = info["port_source"][len("flag "):] if info["port_source"].startswith("flag ") else \
                info["port_source"]
            give = (f"give {set_by}={port}, or leave it out where the exchange is the master port + 1"
                    if port != master + 1 else f"leave {set_by} out: the exchange is the master port + 1")
        hint = f"; node 0's check-in exchange answers at port {port}{other}: {give}"
        break
    if there == SILENT:  # who stays silent, from what the port is to the job: never one guess for every port
        there += (" (torchrun's c10d store on the job's master port does)" if dialled in (master, (found or 0) - 1)
                  else ": node 0's own exchange does while node 0's entrypoint is not running (stopped, swapping, "
                  "paused)")
    said = f"; at port {dialled} answers {there}" if there else ""
    if hint is None and master != dialled and "metrics port" in (what_answers(host, master) or ""):
        hint = (f"; at the master port {master} answers node 0's metrics port (HTTP: /metrics and /status.json), "
                "not the job's master port: give the job's master port (MASTER_PORT), whose + 1 is its exchange")
    return said + (hint or "")


def print_status(settings, plan):
    """``--status``: node 0's view of the running job as JSON on stdout (what ``doctor --cluster`` reads).
    ``plan``: this node's, made as every path makes it (``recovery/roles.plan_node``: a spare plans as one)."""
    import json
    import sys

    from .exchange import Refused, ask_status, token_refusal
    from .wire import ExchangeError, frame_limit, job_token

    if plan.errors:
        raise EntrypointError(plan.errors[0]["message"], plan.errors[0]["exit_code"])
    if not plan.exchange["enabled"]:
        raise EntrypointError(f"no check-in exchange to ask: {plan.exchange['why']}", 2)
    topo, info = plan.topology, plan.exchange
    token = job_token(settings.env, topo.job_id, topo.master_port.value)
    try:
        answer = ask_status(info["host"], info["port"], topo.job_id, token, timeout_s=20.0 if settings.stacks else 10.0,
                            stacks=settings.stacks, limit=frame_limit(topo.nnodes_max), whole=settings.all_rows)
    except Refused as err:
        raise EntrypointError(token_refusal(str(err), info.get("token")), EXIT_TOPOLOGY) from None
    except ExchangeError as err:
        raise EntrypointError(f"node 0's check-in exchange at {host_port(info['host'], info['port'])}: {err}"
                              + wrong_port_hint(info, topo), EXIT_UNREACHABLE) from None
    sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    if settings.stacks:
        from ..stall.stacks import render

        classes = (answer.get("ranks") or {}).get("stacks")
        for line in render(classes) if classes else [no_stacks(answer)]:
            sys.stderr.write(line + "\n")
    return 0


def no_stacks(answer):
    """Why ``--status --stacks`` shows no stacks, read off node 0's answer: its phase, the stall_warn its
    fingerprint carries, whether it watches ranks. Never a reason the answer does not give (walk14b B17: "the
    stall watch is off" was said of a job whose watch was on and whose node 0 was still gathering)."""
    waiting = answer.get("waiting") or {}
    if answer.get("phase") == "gathering":
        how = "regathering after a fault" if waiting.get("regather") else "gathering"
        counted = (f": {waiting['checked_in']} of {waiting['expected']} nodes in"
                   if "checked_in" in waiting and "expected" in waiting else "")
        return f"no stacks: no rank runs yet (node 0 is {how}{counted})"
    own = next((node.get("fp") for node in answer.get("nodes") or () if node.get("own")), None) or {}
    if (own.get("faults") or {}).get("stall_warn") == 0:
        return "no stacks: the stall watch is off for this job (stall_warn 0)"
    if answer.get("ranks") is None:
        return ("no stacks: node 0 watches no ranks (a plain command exec'd unwatched, or node 0 holds no "
                "training slot)")
    return "no stacks: no rank has reported to node 0's stall watch yet (the ranks are starting)"


def _missing(settings, plan):
    """rank -> what Kubernetes says about that node's pod (Pending, ...), when it can be asked."""
    from ..detection.host import in_kubernetes
    from ..detection.kube import pod_phase
    from ..detection.sysfs import Root
    from ..planning.sources import member_name, ordinal, ordinal_width

    root = Root(settings.sysroot)
    prefix, _ = ordinal(plan.node.hostname)
    if not prefix or not in_kubernetes(root, settings.env):
        return None
    width = ordinal_width(plan.node.hostname)
    return lambda rank: pod_phase(root, settings.env, member_name(prefix, rank, width))


class CheckIn:
    """This node's check-in, prepared before the wait (node 0 listens at once, every node has its
    fingerprint ready) and run after it: :meth:`run` gives a :class:`Session`, or raises
    EntrypointError (3 refused, 4 unreachable)."""

    def __init__(self, plan, settings, root, log):
        from .fingerprint import local_fingerprint
        from .wire import job_token

        self.plan, self.settings, self.root, self.log = plan, settings, root, log
        topo = plan.topology
        self.token = job_token(settings.env, topo.job_id, topo.master_port.value)
        self.started = time.monotonic()
        self.hub = None
        if topo.is_master:
            from .exchange import Hub

            self.hub = Hub(plan.exchange["port"], self.token, {"job": topo.job_id}, log, bind=self.bind_address)
        self.fingerprint = local_fingerprint(plan, root, settings)

    @property
    def bind_address(self):
        """The address node 0 listens on and a node checks in from (empty: every address)."""
        bind = self.plan.exchange.get("bind")
        return "" if bind in (None, "every address") else bind

    def replan(self, plan):
        """The plan was made again after the wait (the master resolves now): its fingerprint too."""
        from .fingerprint import local_fingerprint

        self.plan, self.fingerprint = plan, local_fingerprint(plan, self.root, self.settings)

    def run(self):
        plan, info, log = self.plan, self.plan.exchange, self.log
        verdict, watch = self._as_node_0() if self.hub else self._as_node()
        say_verdict(verdict, time.monotonic() - self.started, log)
        record_verdict(plan, self.settings, verdict, self.fingerprint)
        if verdict["decision"] != "start":
            if watch is not None:
                watch.close()
            raise refusal_error(verdict)
        return Session(verdict, watch if info["heartbeat"] else None, self.fingerprint)

    def _as_node_0(self):
        plan, info, hub, topo = self.plan, self.plan.exchange, self.hub, self.plan.topology
        early = self.gather(topo.nnodes_min)
        verdict = self.judge(topo.nnodes_min, early=early)
        hub.announce(verdict)
        if verdict["decision"] == "refuse":
            from .refusal import refused_because, tell_latecomers

            if len(hub.peers) + 1 < topo.nnodes_min:
                tell_latecomers(hub, verdict, topo.nnodes_min, self.started + info["deadline_s"])
            hub.turn_away(refused_because(verdict))
        if verdict["decision"] == "start" and info["heartbeat"]:
            from .heartbeat import HubWatch  # the heartbeat (and its stall relay) only where it runs

            return verdict, HubWatch(hub, self.log, elastic=topo.elastic, admit=_admitter(hub, topo, plan, info))
        hub.close()
        return verdict, None

    # --- node 0's public side: the first start's gather and every regather of recovery use these -------------
    def gather(self, needed, deadline=None, wanted=None, also=None):
        """Node 0 waits for nodes to check in on its hub.

        Without ``wanted`` (a job's first gather): for ``needed`` nodes (node 0 counted) up to ``deadline``
        (default: the check-in deadline); a refusal seen early, or ``also()`` true, ends the wait; returns
        whether a refusal did. With ``wanted`` (recovery's regather): those identities until ``deadline``;
        returns the ones that did not come."""
        hub, info = self.hub, self.plan.exchange
        if info["heartbeat"]:  # the job will be watched: its live picture is up from here, the check-in in it
            from . import GATHERS

            for listener in GATHERS:
                listener(hub)
        if wanted is not None:
            return hub.gather(needed, deadline, wanted=set(wanted))
        load_node_0_modules(info["heartbeat"])
        from .refusal import refused_early

        hub.own_fp = self.fingerprint
        self.log(waiting_line(needed, self.plan.topology.nnodes_max, info["port"], info["deadline_s"]))
        refused = False

        def early():  # gather stops at the first True, so the last answer is the one that counts
            nonlocal refused
            refused = refused_early(hub, self.plan.topology.nnodes_max, self.plan.launch.launcher, info["allow"])
            return refused or bool(also and also())

        hub.gather(needed, self.started + info["deadline_s"] if deadline is None else deadline, early=early)
        return refused

    def judge(self, minimum, without=(), early=False):
        """Node 0's verdict over the nodes gathered, less ``without`` (peers recovery leaves out): start, or
        refuse (every node exits 3). ``early``: a refusal ended the gathering before the deadline."""
        return self.hub.decide(minimum, self.plan.topology.nnodes_max, self.plan.launch.launcher,
                               self.plan.exchange["allow"], _missing(self.settings, self.plan), without=without,
                               early=early)

    def unreachable(self, apart=True):
        """{peer: (why, check)} for the nodes in that recovery's regather leaves out (``Hub.unreachable``): node 0
        cannot reach them as peers must, or their settings are apart from node 0's."""
        return self.hub.unreachable(self.plan.exchange["allow"], self.plan.topology.nnodes_max,
                                    self.plan.launch.launcher, apart)

    def reopen(self):
        """The next generation's hub: the last one closed, a fresh one on the same port (recovery's)."""
        from .exchange import Hub

        old = self.hub
        if not old.board.closed:
            old.close()
        kept = old.sock if old.keep_listener and old.sock.fileno() >= 0 else None  # the port never closed
        self.hub = Hub(old.port, old.token, self.fingerprint, self.log, bind=self.bind_address, listener=kept)
        self.hub.keep_listener = old.keep_listener
        self.hub.take_undecided(old.undecided)  # recovery: nodes not heard out yet, read on by the regather
        self.hub.known, self.hub.expected = old.known, old.expected  # who each node was, whom the job counts on
        return self.hub

    def _as_node(self):
        verdict, channel = self.join()
        if verdict["decision"] == "start" and self.plan.exchange["heartbeat"]:
            from .heartbeat import LinkWatch

            return verdict, LinkWatch(channel, self.log, elastic=self.plan.topology.elastic)
        channel.finish(1.0)
        return verdict, None

    def join(self, generation=None, carried=None):
        """Check in with node 0: (verdict, channel). The one way a node joins, at the first start and for every
        later generation: with ``generation`` (recovery) the hello names the generation it wants and the book it
        ``carried``, and a node 0 between generations (not listening yet, or turning early nodes away) is tried
        again until the deadline; without, the first failure is the answer. Raises EntrypointError (3 refused,
        4 node 0 unreachable)."""
        from .exchange import NotAnExchange, Refused, check_in, token_refusal
        from .wire import ExchangeError, frame_limit

        info, topo = self.plan.exchange, self.plan.topology
        started = time.monotonic()
        deadline = started + info["deadline_s"] + VERDICT_GRACE_S
        hello = self.fingerprint if generation is None else dict(self.fingerprint, generation=generation)
        if carried:
            hello["book"] = carried
        while True:
            try:
                return check_in(info["host"], info["port"], hello, self.token, deadline, bind=self.bind_address,
                                limit=frame_limit(topo.nnodes_max))
            except Refused as err:
                raise EntrypointError(token_refusal(str(err), info.get("token")), EXIT_TOPOLOGY) from None
            except NotAnExchange as err:
                # another program on the port: the same diagnosis with recovery on or off (walk7 B32: recovery
                # retried it for the deadline and its grace, 2.5x NODEWEAVE_WAIT_TIMEOUT, then said node 0 was
                # gone); a silent one is retried within the deadline alone (node 0 between generations keeps its
                # listener but reads it only when its next hub opens)
                if generation is None or not err.silent or time.monotonic() >= started + info["deadline_s"]:
                    raise EntrypointError(f"check-in with node 0 failed: {err} (NODEWEAVE_WAIT_TIMEOUT sets the "
                                          "deadline)", EXIT_UNREACHABLE) from None
                time.sleep(RETRY_S)
            except ExchangeError as err:
                if generation is None:
                    raise EntrypointError(f"check-in with node 0 at {host_port(info['host'], info['port'])} failed: "
                                          f"{err}; is node 0 running the same job? (NODEWEAVE_WAIT_TIMEOUT sets the "
                                          "deadline)", EXIT_UNREACHABLE) from None
                if time.monotonic() >= deadline:
                    raise EntrypointError(f"check-in with node 0 at {host_port(info['host'], info['port'])} for "
                                          f"generation {generation} failed: {err}; node 0 is gone "
                                          "(NODEWEAVE_WAIT_TIMEOUT sets how long a node waits for it)",
                                          EXIT_UNREACHABLE) from None
                time.sleep(RETRY_S)


def refusal_error(verdict):
    """The last line of a refused check-in, whichever path heard it (a plain start, recovery's node 0 or another
    node): a verdict for this node alone (``scope``, ``heartbeat.turned_away``: a node started twice, a late one)
    says the job goes on; only the job's refusal says every node exits (walk12b B11: a node started twice under
    recovery read "check-in refused the job ... the same on every node" while the job went on)."""
    if verdict.get("scope") == "this node":
        return EntrypointError(f"node 0 turned this node away: {refused_checks(verdict)} (said above); this node "
                               "exits, the job goes on without it", EXIT_TOPOLOGY)
    return EntrypointError(f"check-in refused the job: {refused_checks(verdict)} (table above; the same on every "
                           "node)", EXIT_TOPOLOGY)


def refused_checks(verdict):
    """The refusing checks and the nodes each names (a few and a count, at any size): the job's refusal."""
    from .verdict import SHOWN_NODES, named

    return "; ".join(f"{p['check']} ({named(p, SHOWN_NODES)})" for p in verdict["problems"] if p["severity"] == "refuse")


def _admitter(hub, topo, plan, info):
    """Elastic jobs: judge a late node against node 0 (and the ranks already in); fixed jobs: None."""
    if not topo.elastic:
        return None
    from .verdict import Entry, judge

    def admit(peer):
        own = Entry(hub.own_fp, seen=hub.own_fp.get("route_address"), own=True)
        others = [p.entry() for p in hub.peers if p.done is None]
        return judge([own, peer.entry()] + others, 0, topo.nnodes_max, plan.launch.launcher, info["allow"])
    return admit


def load_node_0_modules(heartbeat):
    """Import now what node 0 imports later: a low RLIMIT_NOFILE is named and the nodes past it wait or
    count as missing, but once the connections hold every descriptor an import cannot open its file."""
    import json  # noqa: F401 - the run record
    import select  # noqa: F401 - the switchboard's wait (an extension module: a file to open)

    from . import refusal, verdict  # noqa: F401
    if heartbeat:
        from . import heartbeat as _heartbeat  # noqa: F401
