"""Node 0's side of the generations: gather, decide (``decide.py``), announce, launch or watch, and again.

Node 0 keeps the hub role for the job's life (a fresh ``Hub`` on the same port each generation): its training
slot may go to a spare, and the spare is then the rendezvous host (docs/recovery.md).
"""

import os
import time

from ..errors import EXIT_PEER_FAILED, EXIT_TOPOLOGY, EXIT_USAGE
from ..news import Cause, News, stop_sent
from . import decide
from .book import Book, Decision
from ..world import world_size
from .setup import newest_checkpoint, saves_before, user_stopped

REGATHER_CAP_S = 60   # node 0 waits at most this long for the nodes it expects back
STOP_WAIT_S = 30      # and this long for a culprit still up, to tell it the job ends
RETURN_SETTLE_S = 10  # node 0 back in a running job: the nodes still alive check in again within this
SPARE_WAIT_S = 10     # generation 0, its training nodes in: node 0 waits at most this long more for its spares


def hub_loop(gens):
    """Node 0's generations; the job's exit code."""
    return HubSide(gens).loop()


class HubSide:
    def __init__(self, gens):
        self.gens = gens
        self.settings, self.log, self.config = gens.settings, gens.log, gens.config
        self.checkin, self.plan = gens.checkin, gens.plan

    # --- node 0 --------------------------------------------------------------------------------------
    def loop(self):
        from ..checkin.heartbeat import HubWatch

        hub, book, fault, ended = self.checkin.hub, None, None, False
        hub.own_fp = self.checkin.fingerprint
        hub.keep_listener = True  # each generation's hub hands the port to the next: nodes coming back queue
        while True:
            verdict, unreachable = self._gather(hub, book)
            present = {0} | {p.fp.get("rank") for p in hub.peers}
            present -= set(unreachable)
            unjudged = []  # folders in a layout the finder cannot judge: in the log and in node 0's record
            since = book.saves_before if book is not None else self._saves_before(hub)
            if book is None and not returned(hub):  # a job starting: every save there is another job's
                path, step, mark = None, None, None
            else:
                path, step, mark = newest_checkpoint(self.config.folder, self.log, unjudged, written_after=since)
            if book is None and returned(hub):  # node 0's own loss: dated when the others heard it (walk17b B1)
                fault = decide.hub_lost(max(p.fp.get("generation", 0) for p in hub.peers) - 1, hub_lost_at(hub))
            decided, present = self._next(hub, book, fault, present, mark, since)  # the brake compares the mark
            decided, present = decide.unreachable(decided, unreachable), present - set(unreachable)
            book = decide.announced(decided, present, (path, step), self._addresses(hub), time.time(), fault=fault,
                                    work_lost_s=work_lost_s(path, fault.at) if fault is not None else None,
                                    unjudged=unjudged)
            verdict = self._announce(hub, verdict, book)
            from ..checkin.session import record_verdict, say_verdict

            # written once every node was told (the record is for --explain and doctor later: at 4,096 nodes its
            # whole verdict is ~0.1 s of JSON and disk that no node's role waits for any more)
            record_verdict(self.plan, self.gens.ident_settings, verdict, self.checkin.fingerprint)
            self.gens.keep(decide.kept_by(book, 0))
            if book.generation == 0:
                say_verdict(verdict, time.monotonic() - self.gathered_from, self.log)
            if ended and book.decision is not Decision.STOP:  # said once decided: a generation that never
                self.log(f"recovery: starting generation {book.generation}")  # starts is not announced (B14)
            ended = False
            if book.decision is Decision.STOP:
                say_stop(book, self.log)
                hub.keep_listener = False
                hub.close()
                return book.code
            news = News()  # this generation's failure news: every producer puts, this loop drains (``_fault``)

            def running():  # the generation runs on: no failure heard yet (``ahead``)
                return watch.fault() is None

            watch = HubWatch(hub, self.log, elastic=False, admit=self._admitter(hub, verdict, book, running),
                             hear_back=True, turn_away=lambda peer: ahead(peer, book, running()), news=news,
                             on_straggler_fault=self._take_straggler if self.settings.get("straggler_is_fault")
                             else None, recovery=True, hub_wait_s=self.settings.get("wait_timeout", 600),
                             stop_asked=self._stop_asked)  # `nodeweave stop` ends the job, never waited out (B3)
            if 0 in book.members:
                code = self.gens.launch(book, verdict, watch)
            else:
                self.gens._say_role(book, book.role_of(0))
                self.gens.hold_warm(book.role_of(0))
                self.gens.watch_aside(watch)
                code = self._hub_only(watch)
            if code == 0 or user_stopped(self.gens.received):  # the book closed, and said, by ``Generations``
                if code == 0:
                    self._tell_latecomers(hub, verdict, book)
                elif watch.unheard_of_end():  # nodes that left before node 0's stop reached them check in again
                    self._tell_latecomers(hub, verdict, book, set(watch.unheard_of_end()),
                                          decide.stopped_by_person(book, watch.stop_words()))
                return code
            fault, alive = decide.judged(news.drain(), book, time.time()), self._alive(watch)
            book = decide.ended(book, fault.node, alive)
            if fault.error:  # decided now: no generation follows, so none is announced (walk7 B45)
                whose = ("every node's start refused its settings" if fault.error.get("start") and
                         fault.error.get("code") in (EXIT_USAGE, EXIT_TOPOLOGY) else
                         "the job's own error, the same on every node that raised one")
                self.log(f"recovery: generation {book.generation} ended: {fault.why}: {whose}; not restarting")
            else:  # what follows is said once node 0 decided it (walk10 B14, walk7 B45)
                self.log(f"recovery: generation {book.generation} ended: {fault.why}")
                ended = True
            hub = self._new_hub(hub)

    def _stop_asked(self):
        return stop_asked(self.settings)

    def _saves_before(self, hub):
        """Generation 0's line between another job's saves and this one's (``setup.saves_before``); node 0 come
        back to a running job takes the line the others' book carries (None from an older nodeweave's: then any
        complete save is handed out, as before)."""
        if returned(hub):
            kept = kept_book(hub)
            return Book.from_json(kept).saves_before if kept else None
        return saves_before(self.config.folder, self.log)

    def _next(self, hub, book, fault, present, step, since=None):
        """The next generation's decided book and the identities it counts as present; a culprit still up is
        waited for when the job ends, to be told so. ``since``: the job's ``saves_before``."""
        if book is None:
            after = max([p.fp.get("generation", 0) for p in hub.peers] + [0])
            if after:  # node 0 came back (its container restarted): the others were at generation ``after``
                return self._came_back(hub, after, present, step), present
            return decide.first(present, self.config.limits, step, saves_before=since), present
        if fault.error:  # the job's own error: it ends here, naming the error
            decided = decide.job_error(book, fault.error["nodes"], fault.error)
        else:
            decided = decide.after_fault(book, fault.node, fault.why, present, step, self.config.limits)
        culprit = fault.node
        if decided.decision is Decision.STOP and culprit in book.alive and culprit not in present:
            self._regather({culprit}, time.monotonic() + STOP_WAIT_S)
            present = present | {p.fp.get("rank") for p in hub.peers}
        return decided, present

    def _came_back(self, hub, after, present, step):
        """Node 0 was lost and its container or pod started it again (``decide.came_back``)."""
        kept = kept_book(hub)
        book = decide.came_back(kept, after, present, step, self.config.limits)
        if kept is None:
            self.log(f"recovery: node 0 came back; the other nodes ask for generation {after}: going on from "
                     "the newest checkpoint (their nodeweave keeps no book: the restart budget starts afresh)")
        else:
            self.log(f"recovery: node 0 came back; the other nodes ask for generation {after}: going on from the "
                     f"book they kept ({book.restarts} restart(s) with this one) and the newest checkpoint")
        return book

    def _tell_latecomers(self, hub, verdict, book, late=None, told=None):
        """Nodes still on their way back (a culprit slow to stop its ranks) hear that the job finished (``told``:
        how else it ended), rather than finding no node 0 and exiting 4. ``late``: the nodes to wait for (else
        every node present or alive that is not connected)."""
        if late is None:
            late = set(book.present) | set(book.alive)
            late -= {0} | {p.fp.get("rank") for p in hub.peers}
        if not late:
            return
        hub = self._new_hub(hub)
        self._regather(late, time.monotonic() + REGATHER_CAP_S)
        if hub.peers:
            hub.announce(dict(verdict, recovery=(told or decide.finished(book)).to_json(public=True)))
        hub.keep_listener = False
        hub.close()

    def _hub_only(self, watch):
        """Node 0 without a training slot: watch the members until they finish or one fails."""
        return watch.watch_only() or (1 if watch.fault() else 0)

    def _new_hub(self, old):
        return self.checkin.reopen()

    def _gather(self, hub, book):
        """The check-in of one generation: the verdict (refused: every node exits 3) and, at a regather,
        {identity: why} of the nodes in that node 0 cannot reach (``Hub.unreachable``: its connect-back to the
        node failed): those are left out, not judged, where the first check-in refuses the job for them."""
        from ..checkin.session import record_verdict, refusal_error, say_verdict

        info = self.plan.exchange
        started = time.monotonic()
        # the seconds its verdict line says: the job's start for the first check-in (node 0 opened its port then),
        # this regather's own start for a later one, never the job's life up to it (walk18b B13: 48.52s)
        self.gathered_from = self.checkin.started if book is None else started
        spares_wait = "by the check-in deadline"
        if book is None:
            needed = self.config.nodes  # an elastic job too: generation 0 waits for all, up to the deadline
            # every node the job counts on stays a row of what it shows, a spare never checked in too (walk17b B10)
            hub.expected = {node: "spare" if node >= self.config.slots else "member" for node in range(needed)}
            deadline = self.checkin.started + info["deadline_s"]
            refused = self.checkin.gather(needed, deadline, also=lambda: returned(hub) or self._trainers_in(hub))
            if not refused and not returned(hub) and len(hub.peers) + 1 < needed and time.monotonic() < deadline:
                # the training nodes are in, a spare is not: it is not worth every GPU idle until the deadline
                # (walk18b B17); one that comes later checks in as a late spare (``decide.joined``)
                spares_by = min(deadline, time.monotonic() + SPARE_WAIT_S)
                spares_wait = f"within {spares_by - time.monotonic():.0f}s after the training nodes were in"
                hub.gather(needed, spares_by, early=lambda: returned(hub))
            if returned(hub) and not refused:  # node 0 came back to a running job: the nodes still up check in
                settle = min(deadline, time.monotonic() + RETURN_SETTLE_S)  # at once, so wait less
                kept = kept_book(hub)
                wanted = set(Book.from_json(kept).present if kept else ()) - {0}
                if wanted:  # the nodes of the generation node 0 lost, not a node lost before it
                    self.log(f"recovery: node 0 is back: waiting up to {RETURN_SETTLE_S}s for node(s) "
                             f"{', '.join(map(str, sorted(wanted)))}, those of the generation it lost")
                    self.checkin.gather(len(wanted) + 1, settle, wanted=wanted)
                else:  # the others' nodeweave carries no book
                    hub.gather(needed, settle)
        else:
            # the nodes that answered the abort or reported, and those not heard out when the hub closed (their
            # old links tell the regather when they are gone: a rack failing over a second is not waited out first)
            expected = (set(book.alive) | hub.undecided_ranks()) - {0, book.last_culprit}
            self._regather(expected, time.monotonic() + min(REGATHER_CAP_S, info["deadline_s"]))
        regather = book is not None or returned(hub)
        # a book's generations judge the count (decide.py); generation 0 needs its training nodes, not its spares: a
        # spare whose only job is to wait (a Pending pod, a slow host) never keeps the job from starting (walk8 B27)
        minimum = 0 if regather else (self.config.minimum if self.config.minimum < self.config.slots
                                      else self.config.slots)
        if not regather:
            came = {0} | {peer.fp.get("rank") for peer in hub.peers}
            late = [node for node in range(self.config.slots, self.config.nodes) if node not in came]
            if late and all(node in came for node in range(self.config.slots)):
                self.log(f"recovery: spare(s) {listed(late)} have not checked in {spares_wait}: the job starts "
                         "without them; each joins as a spare when it comes")
        # node 0 come back to a running job (no book yet) is the newcomer: its settings are not the job's (B10)
        aside = self.checkin.unreachable(apart=book is not None) if regather else {}
        unreachable = {peer.fp.get("rank"): why for peer, (why, _) in aside.items()}
        from ..checkin.verdict import REACHABILITY

        for far, says in ((True, "node 0 cannot reach them"), (False, "their settings are apart from node 0's "
                                                                     "(the running job's)")):
            named = {peer.fp.get("rank"): why for peer, (why, check) in aside.items() if (check in REACHABILITY) == far}
            if named:  # the node is left out, a spare takes its place: never the whole running job refused (B10)
                self.log(f"recovery: node(s) {listed(sorted(named))} checked in again but {says}: left out "
                         f"(node {min(named)}: {named[min(named)]})")
        verdict = self.checkin.judge(minimum, without=aside)
        if verdict["decision"] != "start":
            say_verdict(verdict, time.monotonic() - started, self.log)
            record_verdict(self.plan, self.gens.ident_settings, verdict, self.checkin.fingerprint)
            hub.announce(verdict)
            if book is None:  # the first check-in refused early (node 0's own refusal: a busy master port): the
                # nodes still on their way hear the verdict, as without recovery, not a closed port (walk8 B14)
                from ..checkin.refusal import refused_because, tell_latecomers

                tell_latecomers(hub, verdict, self.config.nodes, self.checkin.started + info["deadline_s"])
                hub.turn_away(refused_because(verdict))
            hub.keep_listener = False
            hub.close()
            raise refusal_error(verdict)
        return verdict, unreachable

    def _trainers_in(self, hub):
        """Generation 0's training nodes (identities 0..slots-1) are all in."""
        came = {0} | {peer.fp.get("rank") for peer in hub.peers}
        return all(node in came for node in range(self.config.slots))

    def _regather(self, expected, deadline):
        missing = self.checkin.gather(len(expected) + 1, deadline, wanted=expected)
        if missing:
            self.log(f"recovery: node(s) {', '.join(map(str, sorted(missing)))} did not check in again: left out")

    @staticmethod
    def _addresses(hub):
        """identity -> the address a node checked in from (the rendezvous host when a spare holds rank 0)."""
        return {p.fp.get("rank"): p.fp.get("address") or p.seen for p in hub.peers}

    def _announce(self, hub, verdict, book):
        procs = {0: self.checkin.fingerprint.get("nproc")}
        procs.update({p.fp.get("rank"): p.fp.get("nproc") for p in hub.peers})
        verdict = dict(verdict, procs=[procs.get(m) for m in book.members], recovery=book.to_json(public=True))
        verdict["world_size"] = world_size(verdict["procs"])  # the members' own counts (entrypoint/world.py)
        for peer in hub.peers:  # each node's role looked up in the book's sets: N nodes cost N, not N x members
            peer.role = book.role_of(peer.fp.get("rank")).value
        if book.decision is Decision.START:
            self.log(f"recovery: generation {book.generation}: training node(s) "
                     f"{listed(book.members)}{once_out(book, book.members)}; spare(s) "
                     f"{listed(book.spares) or 'none'}{once_out(book, book.spares)}"
                     + (f"; resuming from {book.resume_from} (step {book.step})" if book.resume_from else
                        f"; nothing to resume from: {nothing_to_resume(self.config.folder, book.saves_before)}: "
                        "starting from scratch" if book.generation and self.config.folder else ""))
        hub.announce(verdict)
        return verdict

    def _admitter(self, hub, verdict, book, running):
        """A node checking in during a generation: early for the next one (turned away, it tries again), or a
        spare or left-out node arriving late, or back after node 0 counted it gone (it waits). ``running``:
        whether the generation runs on (``ahead``)."""
        def admit(peer):
            nonlocal book
            node = peer.fp.get("rank")
            if ahead(peer, book, running()):
                return False
            apart = self._apart(hub, peer)
            if apart is not None:  # judged now, against node 0's, and turned away alone: never let in to refuse
                return apart       # the whole job at the next regather (walk13b B10)
            late = decide.joined(book, node)
            if late is not book:  # a late spare: a spare in the book --status and /metrics read (walk17b B11)
                book = late
                hub.verdict = dict(hub.verdict or verdict, recovery=book.to_json(public=True))
                self.gens.keep(decide.kept_by(book, 0))
            peer.role = book.role_of(node).value
            return dict(verdict, recovery=book.to_json(public=True))
        return admit

    def _apart(self, hub, peer):
        """The refusal, for this node alone, of a node checking in mid-generation whose settings are apart from
        node 0's (``verdict.set_aside``'s ``APART`` rules), or None: the same rule the regather leaves such a node
        out by, applied when it comes back, so it hears why at once and is not counted as waiting for a place."""
        from ..checkin.verdict import APART, Entry, set_aside

        own = Entry(hub.own_fp, seen=hub.own_fp.get("route_address") or hub.own_fp.get("address"), own=True)
        found = [(why, name) for _, why, name in set_aside([own, peer.entry()], self.plan.exchange["allow"],
                                                           self.plan.topology.nnodes_max, self.plan.launch.launcher)
                 if name in APART]
        if not found:
            return None
        fp = peer.fp or {}
        label = f"node {fp.get('rank')} ({fp.get('hostname')})"
        why, check = found[0]
        says = (f"checked in again with settings apart from the running job's (node 0's): {why}; turned away "
                "alone, the job goes on; start it again with node 0's settings")
        self.log(f"check-in: {label} turned away: {says}")
        return {"decision": "refuse", "scope": "this node", "problems": [{
            "check": check, "severity": "refuse", "allowed": False, "fields": [], "nodes": [label], "says": says}],
            "fields": [], "rows": []}

    @staticmethod
    def _take_straggler(watch, fault):
        """The stall watch's seam (``stall/fault.py``): a straggler named N checks in a row ends the generation
        with its node as the culprit, as a crash would; the next one leaves that node out."""
        if watch.fault() is not None:  # a failure stopped this generation first
            return False
        ranks = ", ".join(map(str, fault["ranks"]))
        how = f"rank(s) {ranks} named a straggler {fault['checks']} checks in a row ({fault['gap']:.0%} slower)"
        watch.stop_all(f"node {fault['node']} ({fault['host']})", how, EXIT_PEER_FAILED,
                       node=fault["node"], cause=Cause.STRAGGLER, gap=fault.get("gap"))
        return True

    @staticmethod
    def _alive(watch):
        """The identities still up when the generation ended: those that answered the abort or reported (the
        next generation waits for these, ``heartbeat.STOPPING``)."""
        return [p.fp.get("rank") for p in watch.hub.peers  # one sent a stop signal has exited (walk13b B1)
                if (p.stopping or p.done is not None) and not (p.done or {}).get("lost") and not stop_sent(p.done)]


def stop_asked(settings):
    """`nodeweave stop` (``--node stop``) marked this run before its SIGTERM: a person ending the job, not an
    eviction recovery waits out (``runstate.STOP_ASKED``); a job without a run id is never so marked."""
    from ..running.runstate import STOP_ASKED, run_dir

    run_id = settings.get("run_id")
    return bool(run_id) and os.path.exists(os.path.join(run_dir(settings.env, run_id), STOP_ASKED))


def say_stop(book, log):
    """The job ends (node 0 and every node alike): why, and the job's own error's last lines when it was that."""
    log(f"recovery: the job ends: {book.ended} (every node exits {book.code})")
    error = book.error
    if error:
        log(f"the ranks' last lines (node {error['nodes'][0]}):")
        for line in error.get("lines") or [error["line"]]:
            log(f"  | {line}")


def ahead(peer, book, running=False):
    """A node checking in during a generation that belongs to the next one (its hello asks for a later
    generation, or it is a member whose connection ended): turned away at once, it tries again. ``running``: the
    generation runs on (no failure heard): a node holding no place in it (a spare, one left out) that asks for a
    later one only lost its own link (it was silent, node 0 counted it gone) and takes its standing in this one
    again, never turned away until the generation ends (walk17b B14)."""
    if book.trains(peer.fp.get("rank")):
        return True
    return peer.fp.get("generation", 0) > book.generation and not running


def once_out(book, nodes):
    """What the generation line adds of ``nodes`` left out once before: a place goes to a waiting node never left
    out first (``decide._fill``), so one of them trains only when no such spare waited (walk18b B14)."""
    back = [n for n in nodes if book.left_out.get(n)]
    if not back:
        return ""
    return (f" ({listed(back)} left out before: a place goes to a spare never left out first, then to a node left "
            "out once)")


def listed(ranks):
    """Node ranks as a log line names them: each of a few, runs of many ('0-519, 4096, 521-4095')."""
    if len(ranks) <= 16:
        return ", ".join(map(str, ranks))
    from ..stall.flight import spans

    return spans(ranks)


def work_lost_s(checkpoint, fault_at):
    """Seconds of training between the checkpoint the next generation resumes from (its newest file's
    time: what its writer wrote last) and the fault: the work the restart throws away, as nodeweave can
    know it without reading the training's own step counter; None without a checkpoint."""
    if not checkpoint:
        return None
    try:
        newest = os.stat(checkpoint).st_mtime
        if os.path.isdir(checkpoint):
            for entry in os.scandir(checkpoint):
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    except OSError:
        return None
    return round(max(0.0, fault_at - newest), 1)


def kept_book(hub):
    """The newest book the nodes checking in carry (``node.carried``), or None (an older nodeweave's)."""
    from .carried import kept

    book = max((p.fp.get("book") for p in hub.peers if isinstance(p.fp.get("book"), dict)),
               key=lambda b: b.get("generation", -1), default=None)
    return kept(book) if book is not None else None


def nothing_to_resume(folder, before):
    """Why a generation past the first resumes from no save in ``folder`` (walk17b B13: its ranks began at step
    1 again, unsaid): the folder gone, empty, holding only saves from before this job, or none complete."""
    try:
        names = [n for n in os.listdir(folder) if not n.startswith(".")]
    except FileNotFoundError:
        return f"checkpoint_dir {folder} does not exist any more"
    except OSError as err:
        return f"checkpoint_dir {folder} cannot be read ({err.strerror or err})"
    if not names:
        return f"checkpoint_dir {folder} is empty"
    if before is not None:
        newest = max((mtime(os.path.join(folder, n)) for n in names), default=0.0)
        if newest <= before:
            return f"checkpoint_dir {folder} holds only saves from before this job (another run's)"
    return f"checkpoint_dir {folder} holds no complete save of this job (the lines above say what was passed over)"


def mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0  # gone since it was listed


def hub_lost_at(hub):
    """When the nodes checking in heard node 0 go (the earliest their books carry: ``node._note_hub_lost``), or
    now when none says (an older nodeweave's)."""
    times = [p.fp["book"].get("hub_lost_at") for p in hub.peers if isinstance(p.fp.get("book"), dict)]
    times = [t for t in times if isinstance(t, (int, float)) and not isinstance(t, bool)]
    return min(times) if times else time.time()


def returned(hub):
    """Whether nodes of generations past 0 checked in: node 0 was lost and came back to a running job."""
    return any(p.fp.get("generation", 0) for p in hub.peers)
