"""The entrypoint with recovery on: check in, launch, watch — and on a fault, all again as the next generation.

Every node runs this loop instead of ``__main__.run``'s single launch. Node 0
keeps the check-in exchange (a fresh ``Hub`` on the same port each
generation), gathers the nodes, asks ``decide.py`` who trains, who waits as a
spare and who is left out, and sends that with the verdict (``"recovery"``).
Each node plans its launch for the generation (its training rank, the node
count, the master: the first member), runs it under the heartbeat, and when
the heartbeat stops it (a crash, a lost node, a stall) checks in again. A
node's hello names the generation it wants (``"generation"`` in its
fingerprint), so a node early for the next one is turned away by the current
one and tries again. Node 0 keeps the hub role for the job's life; its
training slot may go to a spare (docs/recovery.md says why).
"""

import os
import time

from ..errors import EXIT_TOPOLOGY, EXIT_UNREACHABLE, EntrypointError
from . import decide

RETRY_S = 0.3          # between a worker's attempts to check in for the next generation
REGATHER_CAP_S = 120   # node 0 waits at most this long for the nodes it expects back
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
RECORD = "recovery.json"


class Config:
    """The recovery settings and the job's size (from the node count as given, before spares are added)."""

    def __init__(self, settings, topo):
        from ..planning.contract import RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS

        self.spares = settings.get("spares", 0) or 0
        self.minimum, self.slots = job_size(settings) if self.spares else (topo.nnodes_min, topo.nnodes_max)
        self.nodes = self.slots + self.spares  # containers: every identity 0..nodes-1
        self.limits = decide.Limits(self.slots, self.minimum, settings.get("recovery_max_restarts", RECOVERY_RESTARTS),
                                    settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS))
        self.folder = settings.get("checkpoint_dir")


def job_size(settings):
    """(fewest, most) training nodes, from --nnodes or NODEWEAVE_NNODES."""
    from ..planning.topology import normalize_nnodes

    text = settings.flags.get("nnodes") or settings.env.get("NODEWEAVE_NNODES")
    if not text:
        raise EntrypointError("recovery.spares needs the node count (NODEWEAVE_NNODES or --nnodes) to tell nodes "
                              "from spares", EXIT_TOPOLOGY)
    _, lo, hi = normalize_nnodes(text, "--nnodes" if settings.flags.get("nnodes") else "NODEWEAVE_NNODES")
    return lo, hi


def with_flags(settings, **flags):
    """A copy of ``settings`` with topology flags set (a flag wins over every other source)."""
    from ..planning.settings import Settings

    copy = Settings(**{name: getattr(settings, name) for name, _ in Settings.FIELDS})
    copy.flags = dict(settings.flags, **{k: str(v) for k, v in flags.items()})
    return copy


def identity_settings(settings):
    """The settings a node checks in with: with spares, the job's containers are nodes + spares."""
    spares = settings.get("spares", 0) or 0
    return with_flags(settings, nnodes=job_size(settings)[1] + spares) if spares else settings


def newest_checkpoint(folder, log):
    """(path, step) of the newest complete checkpoint in ``folder``, or (None, None)."""
    if not folder:
        return None, None
    try:
        from .checkpoints import newest_complete
    except ImportError:
        return None, None
    try:
        found = newest_complete(folder)
    except OSError as err:
        log(f"recovery: cannot read the checkpoint folder {folder}: {err.strerror or err}")
        return None, None
    return (found.path, found.step) if found is not None else (None, None)


def _user_stopped(received):
    import signal

    stops = tuple(getattr(signal, name) for name in STOP_SIGNALS)
    return any(s in stops for s in received)


def _keep(settings, book):
    """The book beside the check-in record, and in the run's folder when `nodeweave run` started it."""
    from ..running.runstate import run_dir, state_root, write_json

    paths = [os.path.join(state_root(settings.env), RECORD)]
    if settings.get("run_id"):
        paths.append(os.path.join(run_dir(settings.env, settings.get("run_id")), RECORD))
    for path in paths:
        try:
            write_json(path, book)
        except OSError:
            pass  # a record for later reading; the job does not depend on it


def last_book(settings):
    """The recovery record this node kept last (node 0's book, a worker's copy), or None."""
    import json

    from ..running.runstate import state_root

    try:
        with open(os.path.join(state_root(settings.env), RECORD)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Generations:
    """The loop on one node; :meth:`run` returns the exit code."""

    def __init__(self, settings, log):
        self.settings, self.log = settings, log
        self.ident_settings = identity_settings(settings)
        self.received = []
        self.generation = 0       # the generation this node asks for next

    # --- shared --------------------------------------------------------------------------------------
    def prepare(self):
        """The node's own plan (its container's rank among nodes + spares), the check-in made ready, the wait."""
        from .. import __main__ as main
        from ..checkin.session import CheckIn
        from ..core import build_plan
        from ..detection.sysfs import Root
        from ..planning.consistency import missing_script

        plan = build_plan(self.ident_settings)
        problem = missing_script(plan.launch.launcher, self.settings.command, os.getcwd())
        if problem:
            raise EntrypointError(problem)
        if not (plan.exchange and plan.exchange["enabled"] and plan.exchange["heartbeat"]):
            why = (plan.exchange or {}).get("why") or "it is off"
            raise EntrypointError(f"recovery is on (NODEWEAVE_RECOVERY) but the check-in exchange and its heartbeat "
                                  f"do not run ({why}); node 0 learns of faults through them: turn "
                                  "launcher.exchange on, or recovery off")
        self.config = Config(self.settings, plan.topology)
        self.root = Root(self.settings.sysroot)
        self.checkin = CheckIn(plan, self.ident_settings, self.root, self.log)
        wait = plan.launch.wait
        if wait:
            from ..running.wait import wait_for

            what = wait.get("what", "master")
            main._say(f"waiting for {what} {wait['host']}:{wait['port']} (up to {wait['timeout_s']}s)")
            wait_for(wait["host"], wait["port"], wait["timeout_s"], log=self.log, first_delay=0.02, what=what,
                     steady_s=3.0)
        self.plan = plan
        self.identity = plan.topology.node_rank.value
        self.log(f"recovery on: node {self.identity} of {self.config.nodes} "
                 f"({self.config.slots} training, {self.config.spares} spare(s)); restart budget "
                 f"{self.config.limits.max_restarts}, no-progress brake {self.config.limits.no_progress or 'off'}")

    def run(self):
        self.prepare()
        return self._hub_loop() if self.checkin.hub is not None else self._node_loop()

    def _generation_plan(self, book, verdict):
        """This node's plan for the book's generation: its rank among the members, their count, the master."""
        from ..core import build_plan
        from ..planning.launch import apply_counts

        members = book["members"]
        flags = {"node_rank": members.index(self.identity), "nnodes": len(members)}
        if members[0] != 0:  # node 0's training slot went to a spare: the spare is the rendezvous host
            flags["master_addr"] = book["master"]
        settings = with_flags(self.settings, **flags)
        plan = build_plan(settings)
        apply_counts(plan, verdict)
        return plan, settings

    def _launch(self, book, verdict, watch):
        """Start this node's launcher for the generation under ``watch``; its exit code."""
        from .. import __main__ as main
        from ..running.supervise import resolve, run_supervised
        from ..stall.setup import attach

        try:
            plan, settings = self._generation_plan(book, verdict)
        except EntrypointError as err:  # this node's own start failed: node 0 hears it as this node's fault
            self.log(f"error: {err}")
            watch.start(lambda grace: None)
            return watch.finish(err.exit_code, f"its start failed: {err}", [str(err)]) or err.exit_code
        if book["generation"] == 0:
            for warning in plan.warnings:
                self.log(f"warning: {warning}")
        self.log(f"generation {book['generation']}: " + main._summary(plan))
        main._write_files(plan.launch.files)
        if settings.get("run_id"):
            from ..running.runstate import record_run

            record_run(settings, plan)
        environ = dict(plan.environ(settings.env), NODEWEAVE_RESTART_COUNT=str(book["generation"]))
        if book.get("resume_from"):
            environ["NODEWEAVE_RESUME_FROM"] = book["resume_from"]
        environ = attach(watch, plan, settings, environ, self.log)
        executable = resolve(plan.launch.argv[0], environ.get("PATH", os.defpath))
        return run_supervised(executable, plan.launch.argv, environ, watch=watch, received=self.received)

    def _say_role(self, book, role):
        why = book["why"].get(str(self.identity))
        if role == "spare":
            self.log(f"generation {book['generation']}: this node is a spare: it waits to take a left-out node's "
                     "place")
        elif role == "left out":
            self.log(f"generation {book['generation']}: this node is LEFT OUT of the job: {why}; it waits, and may "
                     "come back as a spare (left out twice: never)")
        else:
            self.log(f"this node is LEFT OUT for good (left out {decide.FOR_GOOD} times; last: {why}); it stays up "
                     "idle (nodeweave status shows it)")

    # --- node 0 --------------------------------------------------------------------------------------
    def _hub_loop(self):
        from ..checkin.heartbeat import HubWatch

        hub, book, fault = self.checkin.hub, None, None
        hub.own_fp = self.checkin.fingerprint
        while True:
            verdict = self._gather(hub, book)
            present = {0} | {p.fp.get("rank") for p in hub.peers}
            path, step = newest_checkpoint(self.config.folder, self.log)
            if book is None:
                book = decide.first(present, self.config.limits)
            else:
                book = decide.after_fault(book, fault["node"], fault["why"], present, step, self.config.limits)
                fault["relaunched"] = time.time()
                fault["recover_s"] = round(fault["relaunched"] - fault["at"], 2)
                book["history"].append(fault)
            book.update(resume_from=path if book["generation"] else None, step=step,
                        master=self._master(hub, book), present=sorted(present))
            verdict = self._announce(hub, verdict, book)
            if book["decision"] == "stop":
                self.log(f"recovery: the job ends: {book['why']} (every node exits {book['code']})")
                hub.close()
                return book["code"]
            watch = HubWatch(hub, self.log, elastic=False, admit=self._admitter(hub, verdict, book))
            if 0 in book["members"]:
                code = self._launch(book, verdict, watch)
            else:
                self._say_role(book, decide.role(book, 0))
                code = self._hub_only(watch)
            if code == 0 or _user_stopped(self.received):
                book["finished"] = time.time() if code == 0 else None
                _keep(self.settings, dict(book, decision="done" if code == 0 else "stopped"))
                if code == 0 and book["restarts"]:
                    self.log(f"recovery: the job finished after {book['restarts']} recovery(ies)")
                return code
            fault = self._fault(watch, book)
            self.log(f"recovery: generation {book['generation']} ended: {fault['why']}; starting generation "
                     f"{book['generation'] + 1}")
            hub = self._new_hub(hub)

    def _hub_only(self, watch):
        """Node 0 without a training slot: watch the members until they finish or one fails."""
        watch.start(lambda grace: None)
        watch.own_done.set()
        watch.thread.join()
        return watch.finish(0, "node 0 holds no training slot", []) or (1 if watch.failure else 0)

    def _new_hub(self, old):
        from ..checkin.exchange import Hub

        if not old.board.closed:
            old.close()
        hub = Hub(old.port, old.token, self.checkin.fingerprint, self.log, bind=self.checkin._bind())
        return hub

    def _gather(self, hub, book):
        """The check-in of one generation; the verdict (refused: every node exits 3)."""
        from ..checkin.session import _load_node_0_modules, _say_verdict, _record

        _load_node_0_modules(True)
        plan, info = self.plan, self.plan.exchange
        started = time.monotonic()
        if book is None:
            from ..checkin.refusal import refused_early

            needed = self.config.nodes if self.config.minimum == self.config.slots else self.config.minimum
            self.log(f"check-in: waiting for {needed - 1} more node(s) on port {info['port']} "
                     f"(up to {info['deadline_s']}s)")
            hub.gather(needed, self.checkin.started + info["deadline_s"],
                       early=lambda: refused_early(hub, self.config.nodes, plan.launch.launcher, info["allow"]))
        else:
            expected = set(book["alive"]) - {0, book.get("last_culprit")}
            self._regather(hub, expected, time.monotonic() + min(REGATHER_CAP_S, info["deadline_s"]))
        minimum = (self.config.minimum if self.config.minimum < self.config.slots else self.config.nodes) \
            if book is None else 0
        verdict = hub.decide(minimum, self.config.nodes, plan.launch.launcher, info["allow"])
        if book is None or verdict["decision"] != "start":
            _say_verdict(verdict, time.monotonic() - started, self.log)
        _record(plan, self.ident_settings, verdict, self.checkin.fingerprint)
        if verdict["decision"] != "start":
            hub.announce(verdict)
            hub.close()
            from ..checkin.session import _summary

            raise EntrypointError(f"check-in refused the job: {_summary(verdict)} (table above; the same on every "
                                  "node)", EXIT_TOPOLOGY)
        return verdict

    def _regather(self, hub, expected, deadline):
        from ..checkin.exchange import POLL_S

        hub.board.prepare(len(expected) + 1, self.log)
        next_log = time.monotonic() + 10.0
        while True:
            arrived = {p.fp.get("rank") for p in hub.peers}
            now = time.monotonic()
            if expected <= arrived or now >= deadline:
                break
            if now >= next_log:
                self.log(f"recovery: waiting for node(s) {', '.join(map(str, sorted(expected - arrived)))} to check "
                         f"in again ({int(deadline - now)}s more)")
                next_log = now + 10.0
            hub.step(min(POLL_S, deadline - now))
        while hub.board.probing():
            hub.step(POLL_S)
        missing = expected - {p.fp.get("rank") for p in hub.peers}
        if missing:
            self.log(f"recovery: node(s) {', '.join(map(str, sorted(missing)))} did not check in again: left out")

    def _master(self, hub, book):
        members = book.get("members") or [0]
        if members[0] == 0:
            return None
        peer = next((p for p in hub.peers if p.fp.get("rank") == members[0]), None)
        return (peer.fp.get("address") or peer.seen) if peer else None

    def _announce(self, hub, verdict, book):
        procs = {0: self.checkin.fingerprint.get("nproc")}
        procs.update({p.fp.get("rank"): p.fp.get("nproc") for p in hub.peers})
        verdict = dict(verdict, procs=[procs.get(m) for m in book["members"]], recovery=_public(book))
        verdict["world_size"] = sum(p for p in verdict["procs"] if isinstance(p, int))
        for peer in hub.peers:
            peer.role = decide.role(book, peer.fp.get("rank"))
        _keep(self.settings, book)
        if book["decision"] == "start":
            self.log(f"recovery: generation {book['generation']}: training node(s) "
                     f"{', '.join(map(str, book['members']))}; spare(s) {', '.join(map(str, book['spares'])) or 'none'}"
                     + (f"; resuming from {book['resume_from']} (step {book['step']})" if book.get("resume_from")
                        else ""))
        hub.announce(verdict)
        return verdict

    def _admitter(self, hub, verdict, book):
        """A node checking in during a generation: early for the next one (turned away, it tries again), or a
        spare or left-out node arriving late (it waits)."""
        def admit(peer):
            node = peer.fp.get("rank")
            if peer.fp.get("generation", 0) > book["generation"] or node in book["members"]:
                return False
            peer.role = decide.role(book, node)
            return dict(verdict, recovery=_public(book))
        return admit

    def _fault(self, watch, book):
        """What ended the generation: the culprit's identity (None when no one node is) and why, in words."""
        culprit = watch.culprit or (None, "unknown", None)
        node, cause, gen_rank = culprit
        if node is None and gen_rank is not None and 0 <= gen_rank < len(book["members"]):
            node = book["members"][gen_rank]
        label, report = watch.failure or ("?", {"how": "the launchers ended without a report"})
        how = str(report.get("how") or "failed")
        what = {"crash": "its launcher failed", "lost": "it was lost", "stall": "the job stalled"}.get(cause, cause)
        why = f"node {node}: {what} ({how})" if node is not None else f"{label}: {what} ({how})"
        book["last_culprit"] = node
        book["alive"] = [p.fp.get("rank") for p in watch.hub.peers if not (p.done or {}).get("lost")]
        return {"generation": book["generation"], "node": node, "cause": cause, "why": why,
                "at": watch.failed_at or time.time()}

    # --- the other nodes -----------------------------------------------------------------------------
    def _node_loop(self):
        from ..checkin.heartbeat import LinkWatch
        from ..checkin.session import _say_verdict, _record

        started = time.monotonic()
        while True:
            verdict, channel = self._check_in()
            if self.generation == 0 or verdict["decision"] != "start":
                _say_verdict(verdict, time.monotonic() - started, self.log)
                _record(self.plan, self.ident_settings, verdict, self.checkin.fingerprint)
            if verdict["decision"] != "start":
                channel.close()
                from ..checkin.session import _summary

                raise EntrypointError(f"check-in refused the job: {_summary(verdict)} (table above; the same on "
                                      "every node)", EXIT_TOPOLOGY)
            book = verdict.get("recovery") or {}
            _keep(self.settings, book)
            if book.get("decision") == "stop":
                self.log(f"recovery: the job ends: {book.get('why')} (every node exits {book.get('code')})")
                channel.finish(1.0)
                return book.get("code")
            self.generation = book["generation"] + 1
            role = decide.role(book, self.identity)
            watch = LinkWatch(channel, self.log)
            if role == "member":
                code = self._launch(book, verdict, watch)
                if code == 0 or _user_stopped(self.received):
                    return code
                continue
            self._say_role(book, role)
            if role == "out for good":
                channel.finish(1.0)
                return _idle()
            watch.start(lambda grace: None)
            watch.thread.join()
            watch.close()
            channel.close()
            if watch.closing:
                self.log("recovery: the job finished; this node was not needed")
                return 0

    def _check_in(self):
        """Check in for ``self.generation``, trying again until node 0 answers (it may be between generations)."""
        from ..checkin.exchange import Refused, check_in
        from ..checkin.wire import ExchangeError, frame_limit

        info = self.plan.exchange
        from ..checkin.session import VERDICT_GRACE_S

        deadline = time.monotonic() + info["deadline_s"] + VERDICT_GRACE_S
        fp = dict(self.checkin.fingerprint, generation=self.generation)
        last = None
        while time.monotonic() < deadline:
            try:
                return check_in(info["host"], info["port"], fp, self.checkin.token, deadline,
                                bind=self.checkin._bind(), limit=frame_limit(self.config.nodes))
            except Refused as err:
                raise EntrypointError(str(err), EXIT_TOPOLOGY) from None
            except ExchangeError as err:
                last = err
                time.sleep(RETRY_S)
        raise EntrypointError(f"check-in with node 0 at {info['host']}:{info['port']} for generation "
                              f"{self.generation} failed: {last}; node 0 is gone (NODEWEAVE_WAIT_TIMEOUT sets how long "
                              "a node waits for it)", EXIT_UNREACHABLE)


def _public(book):
    """What every node is told and `nodeweave status` shows: the book without node 0's bookkeeping."""
    return {k: v for k, v in book.items() if k not in ("last_culprit", "alive")}


def _idle():
    """Stay up doing nothing (a container that exits would be restarted, and crash-loop); a stop signal ends it."""
    import signal

    while True:
        signal.pause()
