"""For the life of the job: tell every node at once when one fails, so nobody waits for NCCL's watchdog.

The check-in's connections stay open. Every :data:`BEAT_S` seconds each node sends node 0 a beat, and node 0
:data:`HUB_BEATS` per :data:`LOST_S` to each. A node whose launcher ends reports how (exit code or signal, its
last lines of output); node 0 relays a failure to every other node, and each stops its own launcher (SIGTERM to
its process group, SIGKILL after :data:`GRACE_S`) and exits :data:`EXIT_PEER_FAILED`. A node that vanishes —
its connection closes without a report, or is silent for :data:`LOST_S` — counts as failed too; node 0
vanishing stops every other node. In an elastic job a node leaving is reported, nothing is stopped: torchrun's
membership rules. A clean finish ends quietly: node 0 waits (up to :data:`LINGER_S`) for the others to finish,
then says it is closing. Every failure node 0 hears — a node's report, a node lost, its own launcher's end, a
stall or a lasting straggler (``stall/exchange.py``) — goes on the watch's failure news (``news.News``) as one
``news.Evidence``; recovery's node 0 drains it once the generation ended (``recovery/decide.judged`` names the
culprit).

When one rank dies, its peers' ranks fail a moment later ("Connection reset by peer"), and under load their
node's report can reach node 0 first. A report whose output shows only that (``running/symptoms.py``) is held
for up to :data:`JUDGE_S` while node 0 listens for the node that failed of its own accord; the first such
report is relayed and judged the culprit, and the held one only when none comes.

Both sides run one daemon thread (``select`` with a short timeout); the main thread only waits for the launcher
and calls :meth:`finish`. Node 0's thread serves every node from one selector (``switchboard.py``): a beat or an
abort is encoded once and queued to each node without waiting on any, wake-ups are batched (:data:`BATCH_S`),
and silence is looked for once a second, not on every wake-up.
"""
import threading
import time

from ..errors import EXIT_PEER_FAILED, EXIT_STALLED
from ..hints import asked_stop, end_job_hint
from ..news import Cause, News, NodeId, heard, said_stop, stop_sent
from ..running.supervise import said_stopped
from ..stall.exchange import HubStall, LinkStall
from ..stall.surface import WatchSurface
from . import HUB_WATCHES, LINK_WATCHES
from .wire import BEAT_LINE, ExchangeError, readable

BEAT_S = 2.0
LOST_S = 10.0
GRACE_S = 10.0
LINGER_S = 30.0
TAIL_LINES = 20
BEAT = BEAT_LINE
HUB_BEATS = 3    # node 0 beats to every node, so only HUB_BEATS times per LOST_S (each node hears three per window)
BATCH_S = 0.1    # node 0 lets beats gather this long after a wake-up: tens of nodes per wake-up, not one
SWEEP_S = 1.0    # how often node 0 looks for silent nodes
DOOR_EVERY = 256  # node 0 looks at its door (a `--status`, a late node) between chunks of this many beats
JUDGE_S = 2.0    # a failure that shows only a peer gone waits this long for the node that failed first
REPORTS_S = 5.0  # node 0's script raised an error: it waits this long for the others' reports (the job's own?)
STOPPING = "stopping"  # a node's answer to the abort: it heard, and (under recovery) it checks in again
HEAR_BACK_S = LOST_S + SWEEP_S  # recovery's node 0 after a failure: each node answers, or is gone, or is silent
QUIET_S = 0.25   # ... or no node answered for this long: the rest are read on by the regather (``Hub.undecided``)
PAUSED_S = 3.0   # node 0 woke from its own silence (``HubWatch._note_pause``): nodes closing this soon after it
                 # declared node 0 lost, and check in again (walk13b B15, B16)


def stop_signal(code):
    """(exit code, signal name) of a waiting node's ``SystemExit`` from a stop signal (``supervise.stop_waiting``:
    128+N): what it tells node 0, or node 0 tells the others, as a stop, not a failure."""
    import signal

    code = code if isinstance(code, int) else 1
    try:
        return code, signal.Signals(code - 128).name
    except ValueError:
        return code, f"exit {code}"


def describe(report, whose=None):
    """'exited 1' / 'was killed by signal 9' and the last lines, as printed. ``whose``: the node the lines are of,
    named over them (walk12b B17: a spare printed node 0's traceback under "its last output:", read as its own)."""
    lines = [f"{report.get('how') or 'failed'}"]
    from ..running.symptoms import plain  # a node's lines as a reader sees them, whoever sent them

    tail = [plain(str(line))[:300] for line in (report.get("tail") or [])[-TAIL_LINES:]]
    if tail:
        lines.append(f"{whose}'s last output:" if whose else "its last output:")
        lines += [f"  | {line}" for line in tail]
    return lines



# What node 0 says of a node checking in late, by the role the recovery book gives it (``book.Role``; without recovery
# every node is a member): a node left out that came back is not said to have joined the job (walk10 B10).
JOINED = {"member": "joined the job",
          "spare": "joined the job as a spare: it waits to take a left-out node's place",
          "left out": "is back, left out of this generation (node 0 counted it at fault): it waits, and may take a "
                      "place in a later one",
          "out for good": "is back, left out for good (at fault too often): it waits, holding no place"}

class Watch(WatchSurface):
    """What both sides share: the thread, the lock, the first failure and the launcher's stop (and what the
    stall exchange mixed into each side uses of it: ``stall/surface.py``)."""

    def __init__(self, log, elastic, recovery=False, hub_wait_s=600, stop_asked=None):
        self.log, self.elastic = log, elastic
        self.hub_wait_s = hub_wait_s  # under recovery: how long a node waits for a lost node 0 (wait_timeout)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.failure = None          # (label, report) that stopped this node's launcher
        self.failure_code = EXIT_PEER_FAILED
        self.stop_launcher = None    # set by start()
        self.thread = None
        self.stall = None            # stall.watcher.StallWatch, when the ranks are watched (use_stall)
        self.failed_at = None        # when the first failure was heard (recovery's time to recover counts from it)
        self.recovery = recovery     # a generation's watch: a stop ends the generation, not the job
        self.job_ended = False       # node 0 was stopped on purpose and told every node the job ends (walk10 B3)
        self.own_stop = None         # the stop signal this node was sent, once its launcher ended on it
        self.stop_signalled = bool   # whether this node was sent a stop signal while its launcher runs (supervise)
        self.unheard_end = []        # node 0 stopped by a person: the members gone before its news (HubWatch.finish)
        self.sitting_out = False     # a spare or a left-out node waiting this generation out: it runs no launcher
        # recovery's node 0: whether `nodeweave stop` asked for this stop (its mark in the run's folder)
        self.stop_asked = stop_asked or (lambda: False)

    def fault(self):
        """(when, label) of the failure that stopped this generation, or None (``surface.HubReading``; a member's
        recovery reads when it heard node 0 go, walk17b B1)."""
        with self.lock:
            return None if self.failure is None else (self.failed_at, str(self.failure[0]))

    def start(self, stop_launcher=None):
        """Beat from now on; ``stop_launcher`` (or ``attach_launcher`` later) is what a failure stops."""
        self.stop_launcher = stop_launcher
        self._before_start()
        self.thread = threading.Thread(target=self._run, name="nodeweave-heartbeat", daemon=True)
        self.thread.start()

    def _run(self):
        """The heartbeat's thread: each side's own (``LinkWatch._run``, ``HubWatch._run``)."""
        raise NotImplementedError

    def _before_start(self):
        """What a side prepares on the starting thread (node 0: a way to wake its loop, ``close``)."""

    def silent_since_verdict(self):
        """A node's own silence since the verdict, long enough to be declared lost (``LinkWatch``); node 0's own
        pause is ``HubWatch._note_pause``'s."""
        return None

    def launch_with(self, stop_launcher, stop_signalled=None):
        """``stop_launcher`` is what a failure stops: the beats start with it, or (recovery's generations beat
        from before the launcher's plan) it joins the beats already running. ``stop_signalled``: whether this
        node was sent a stop signal since (its stop then wins over the failures it causes: ``_own_stop_first``)."""
        if stop_signalled is not None:
            self.stop_signalled = stop_signalled
        if self.thread is None:
            self.start(stop_launcher)
        else:
            self.attach_launcher(stop_launcher)

    def attach_launcher(self, stop_launcher):
        """The launcher started after the beats did (a generation's plan can take seconds: a DNS answer late
        under load, and a node silent meanwhile would count as lost): a failure heard before it is stopped now."""
        with self.lock:
            self.stop_launcher = stop_launcher
            missed = self.failure is not None
        if missed:
            stop_launcher(GRACE_S)

    def _stop_for(self, label, report, code=EXIT_PEER_FAILED, hub_gone=False, job_ends=False):
        """A peer failed (or the job stalled): say so, and stop this node's launcher (once). ``hub_gone``: the
        peer is node 0 itself, which under recovery cannot decide what follows: this node waits for it.
        ``job_ends``: node 0 was stopped on purpose (Ctrl-C, `nodeweave stop`) and ends the job on every node,
        recovery or not (walk10 B3): this node ends too, exit ``code``."""
        with self.lock:
            if self.failure is not None:
                return
            self.failure, self.failure_code = (label, report), code
            self.failed_at = time.time()
            stop = self.stop_launcher  # None: no launcher yet; attach_launcher stops it as it comes
        lines = describe(report, label if label != "this node" else None)
        stopped = stop_sent(report)  # a node sent a stop signal (Ctrl-C): a stop, not a failure (walk9 B9)
        # the launcher's output after the stop (torchrun's own traceback of the signal nodeweave sends) goes to
        # the file a stall stop uses (walk7 B35: a planned recovery read as "failed ... exit 5" and a traceback on
        # node 0's console), for every stop: a peer's failure or stop too (walk10 B9: the traceback of the stop
        # is noise under the line that says why); the stopper's own file where no stall watch runs
        aside = (self.stall.aside_path() if self.stall is not None else getattr(stop, "aside", None)) if stop else None
        why = "stalled" if code == EXIT_STALLED else "another node was stopped" if stopped else "another node failed"
        if job_ends:
            self.job_ended = True
        lost_by = report.get("declared_lost_by")  # this node paused, node 0 alive (walk10 B10)
        # node 0 declared this node lost and never left: it is checked in with again, not waited for (walk16b B10)
        again = (f"checking in with node 0 again (up to {self.hub_wait_s:g}s, wait_timeout): the job may have gone "
                 "on without this node, or ended") if lost_by and self.recovery else None
        then = (f"(exit {code}: {why}): a deliberate stop of node 0 ends the job on every node, under recovery too"
                if job_ends else f"for recovery: {again}" if again else
                f"for recovery: waiting up to {self.hub_wait_s:g}s (wait_timeout) for node 0 to come back (its "
                "restart policy) and checking in with it again" if self.recovery and hub_gone else
                "for recovery (node 0 decides the next generation)" if self.recovery else f"(exit {code}: {why})")
        then += f"; its output from here on: {aside}" if aside else ""
        # a node waiting this generation out (a spare, one left out) runs no launcher to stop (walk12b B17)
        stopping = ("this node runs no launcher (it waits this generation out)" if self.sitting_out else
                    "stopping this node's launcher")
        if self.sitting_out and self.recovery and not job_ends:
            then = (f"and is {again}" if again else
                    f"and waits up to {self.hub_wait_s:g}s (wait_timeout) for node 0 to come back (its restart "
                    "policy), then checks in with it again" if hub_gone else
                    "and checks in again: node 0 decides the next generation, which may give it a place")
        if code == EXIT_STALLED:
            for line in lines[1:]:
                self.log(line)
            self.log(f"the job stalled at {label}: {lines[0]}; {stopping} {then}")
        else:
            was = (f"was stopped ({said_stop(stopped)})" if stopped else
                   f"was declared lost by {lost_by}" if lost_by else "failed")
            self.log(f"{label} {was}: {lines[0]}; {stopping} {then}")
            for line in lines[1:]:
                self.log(line)
        if stop and aside:  # after the last line: a stall report is what the user reads last
            stop(GRACE_S, aside=aside)
        elif stop:
            stop(GRACE_S)

    def _say_stopped(self, stopped, code, aside=None, how=None):
        """This node was sent a stop signal and its launcher ended (``how``): one line of its own (walk9 B9: a
        Ctrl-C on node 0 left only torchrun's tracebacks)."""
        line = said_stopped(stopped, code, aside, "the others are told it left" if self.elastic else
                            self._after_own_stop(), how=None if self.sitting_out else how)
        if self.sitting_out:  # node 0 holding no training slot had no launcher to end (walk12b B5)
            line = line.replace("this node's launcher ended", "no launcher was running", 1)
        self.log(line)

    def job_was_ended(self):
        """Node 0 was stopped on purpose and told this node the job ends (walk10 B3): no generation follows."""
        return self.job_ended

    def ended_by(self):
        """Why node 0 ended the job, in words, once it told this node so (``job_was_ended``), else None: what this
        node's kept book and last line say (walk16b B12)."""
        if not self.job_ended or self.failure is None:
            return None
        label, report = self.failure
        return f"{label} was stopped ({said_stop(stop_sent(report) or 'a stop signal')}) on purpose"

    def ends_job(self, stopped):
        """Node 0 was stopped by a person: Ctrl-C (SIGINT), or any stop `nodeweave stop` asked for (its mark in the
        run's folder). That ends the job on every node, recovery or not; another SIGTERM (an eviction, a
        preemption, a container's restart) is what recovery waits out for node 0 to come back (walk10 B3)."""
        return stopped == "SIGINT" or bool(self.stop_asked())

    def unheard_of_end(self):
        """The members gone before node 0's news that a person stopped it (``finish``): they check in again."""
        return list(self.unheard_end)

    def stop_words(self):
        """How node 0 was stopped on purpose, in the words its own line uses: ``Ctrl-C``, or `nodeweave stop`'s."""
        return "Ctrl-C" if self.own_stop == "SIGINT" else asked_stop()

    def _after_own_stop(self):
        """What the other nodes do once this node was stopped. Under recovery a stop ends a generation, not the
        job (walk10 B3: node 0 said the others were told to stop while they waited up to wait_timeout for it),
        except node 0 stopped on purpose (``ends_job``), which ends it on every node."""
        if not self.recovery:
            return "the others are told to stop (a stop, not a failure)"
        if isinstance(self, HubWatch) and self.ends_job(self.own_stop):
            how = self.stop_words()
            return (f"the others are told to stop: a deliberate stop of node 0 ({how}) ends the job on every node, "
                    "under recovery too (a stop, not a failure)")
        if isinstance(self, HubWatch):
            return (f"under recovery the others wait up to {self.hub_wait_s:g}s (wait_timeout) for node 0 to come "
                    "back (its restart policy: an eviction's SIGTERM), then give up (exit 4); to end the job now: "
                    + end_job_hint())
        return ("node 0 is told, and under recovery decides what follows: the job goes on without this node when "
                "a spare or its minimum allows, else it ends")

    def _left(self, label, report):
        self.log(f"{label} left the job: {describe(report)[0]}; torchrun's rendezvous decides what follows")

    def peer_failed_code(self):
        return self.failure_code if self.failure is not None else None

    def close(self):
        self.stopping.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(2 * BEAT_S)


class LinkWatch(LinkStall, Watch):
    """A worker's side: beats to node 0, and node 0's news."""

    def __init__(self, channel, log, elastic=False, clock=time.monotonic, recovery=False, hub_wait_s=600):
        super().__init__(log, elastic, recovery, hub_wait_s)
        self.channel, self.clock = channel, clock
        self.closing = False
        # this node's last wake (the loop's, or before the verdict: ``Channel.awake``) and its longest pause lately
        self.woke = getattr(channel, "awake", None) or clock()
        self.silent = (0.0, self.woke)
        self._lost_silent = None  # the pause it was declared lost for, once it did not launch (``declared_lost``)
        for listener in LINK_WATCHES:  # metrics/: this node's GPU readings on its beats (a callable, or None)
            self.beat_extra = listener(self) or self.beat_extra

    def sit_out(self):
        """A node without a place this generation (a spare, one left out): beat until node 0 ends the
        generation; True when it ended the job (nothing more to wait for), False for a next generation."""
        self.sitting_out = True
        self.start()  # no launcher to stop
        try:
            self.thread.join()
        except SystemExit as stop:  # a stop signal while it waits (supervise.stop_waiting): node 0 is told
            self._say_stopped_waiting(stop.code)
            raise
        self.close()
        return self.closing

    def _say_stopped_waiting(self, code):
        """Tell node 0 that this waiting node (a spare, one left out) was stopped by a signal, as a training node's
        report says it, so node 0 does not blame the network or a kill (walk11b B15: "is gone: its connection
        closed without a report"). Lost to this generation: never waited for at the next."""
        # this node's own closing of the connection is not node 0 failing: the beats' thread says nothing more
        # (walk12b B18: "node 0 ... failed: its exchange closed without a word" after this node's exit line)
        self.stopping.set()
        code, name = stop_signal(code)
        try:
            self._send({"t": "exit", "code": code, "stopped": name, "lost": True,
                        "how": f"stopped by {name} while it waited (no launcher running)"})
        except ExchangeError:
            pass

    def _send(self, message):
        with self.lock:
            self.channel.send(message)

    def _run(self):
        last_heard = next_beat = self.clock()
        while not self.stopping.is_set():
            now = self.clock()
            if now - self.woke > LOST_S:  # the loop wakes every 0.5 s: this process was stopped (SIGSTOP, a pause)
                self.silent = (now - self.woke, now)
            self.woke = woke = now
            silent = self.silent
            try:
                if now >= next_beat:
                    self._send(self.beat())
                    next_beat = now + BEAT_S
                ready = readable([self.channel.sock], min(0.5, max(0.0, next_beat - now)))
                for message in self.channel.drain() if ready else []:
                    last_heard = self.clock()
                    if self._handle(message):
                        return
            except ExchangeError:
                if not self.stopping.is_set() and not self.closing:
                    self._hub_lost(silent, woke, "its exchange closed without a word: node 0's entrypoint was killed "
                                   "or its node or network went away")
                return
            if self.clock() - last_heard > LOST_S:
                self._hub_lost(silent, woke, f"no heartbeat for {LOST_S:g}s")
                return

    def _hub_lost(self, silent, woke, how):
        """Node 0 went quiet: node 0 failed (``how``), or, when this node itself was the one stopped, this node was
        declared lost, said as such (walk10 B10: the line opened `node 0 (...) failed` though node 0 was fine)."""
        paused = self._own_pause(silent, woke)
        if paused:
            self._stop_for("this node", {"how": paused, "declared_lost_by": f"node 0 ({self.channel.peer})"},
                           hub_gone=True)
        else:
            self._stop_for(f"node 0 ({self.channel.peer})", {"how": how}, hub_gone=True)

    def silent_since_verdict(self):
        """Seconds this node was itself silent since node 0's verdict reached it (stopped in the wait for it, or
        after), when longer than node 0 waits for a beat: node 0 has declared it lost; else None."""
        pause = max(self.silent[0], self.clock() - self.woke)
        return pause if pause > LOST_S else None

    def lost_for(self):
        """The silence of this node's own that node 0 declared it lost for (seconds), or None: one said as such,
        or one its beats' loop measured before its launcher ended of it (walk17b B7: woken after node 0 ended the
        job, its ranks failed first and the silence went unsaid)."""
        return self._lost_silent or (self.silent[0] if self.silent[0] > LOST_S else None)

    def silence_unsaid(self):
        """A silence of this node's own that its beats measured and no line said (its ranks failed of it before the
        news of node 0 came: walk17b B7), in seconds, or None."""
        return None if self._lost_silent is not None else self.lost_for()

    def declared_lost(self, pause):
        """No launch for a verdict node 0 went past while this node was silent (walk15b B13: a node woken from
        SIGSTOP started torchrun for a job node 0 had ended, then blamed node 0): say so, tell node 0 if it still
        listens, and end this generation; under recovery the node checks in again. Its exit code."""
        self.stopping.set()  # the beats' thread says no more: it may have said it first (``_own_pause``)
        self._lost_silent = pause
        then = (f"checking in with node 0 again (up to {self.hub_wait_s:g}s, wait_timeout): the job may have gone "
                "on without this node, or ended" if self.recovery else
                f"exit {EXIT_PEER_FAILED}: the job goes on without this node, or ended")
        with self.lock:
            said = self.failure is not None
        if not said:
            self.log(f"this node itself was silent for {pause:.0f}s as node 0's verdict came (its process stopped: "
                     f"SIGSTOP, a suspended VM or a long pause), longer than node 0 waits for a heartbeat "
                     f"({LOST_S:g}s), so node 0 has declared it lost and may have left it out; not starting its "
                     f"launcher; {then}")
        return self.finish(EXIT_PEER_FAILED, f"not started: this node was silent for {pause:.0f}s after the "
                           "verdict and declared lost", []) or EXIT_PEER_FAILED

    def _own_pause(self, silent, woke):
        """Why node 0 went quiet when it was this node that stopped (walk9 B12: a node woken from SIGSTOP, a
        suspended VM, a long pause, blamed node 0, alive, which had declared it lost); None otherwise. The pause
        is a wait of this loop (at most 0.5 s) that took longer than node 0 waits: the one in progress when the
        news came (stopped inside it), or one that ended a moment ago."""
        now = self.clock()
        pause, ended = (now - woke, now) if now - woke > LOST_S else silent
        if pause <= LOST_S or now - ended > 2 * BEAT_S:
            return None
        self._lost_silent = pause
        return (f"this node itself was silent for {pause:.0f}s (its process stopped: SIGSTOP, a suspended VM or "
                f"a long pause), longer than node 0 waits for a heartbeat ({LOST_S:g}s), so node 0 declared this "
                "node lost; node 0 itself may be fine")

    def _handle(self, message):
        """True when the watch is over."""
        kind = message.get("t")
        if kind == "abort":
            try:  # node 0 under recovery waits for this node in the next generation only once it answered
                self._send({"t": STOPPING})
            except ExchangeError:
                pass
            code = EXIT_STALLED if message.get("code") == EXIT_STALLED else EXIT_PEER_FAILED
            hub_stopped = bool(message.get("hub") and message.get("stopped"))
            self._stop_for(str(message.get("node")), message, code, hub_gone=hub_stopped and not message.get("ends"),
                           job_ends=hub_stopped and bool(message.get("ends")))
            return True
        if kind in ("stacks", "report"):
            self.stall_message(message)
        if kind == "left":
            self._left(str(message.get("node")), message)
        elif kind == "closing":
            self.closing = True
            return True
        return False

    def finish(self, code, how, tail, peer_gone=None, error=None, stopped=None, aside=None):
        """This node's launcher ended: report it to node 0 (unless a peer's failure stopped it and its script
        raised nothing: node 0 wants every node's ``error`` to tell the job's own error from a node's, see
        ``symptoms.script_error``). ``peer_gone``: the line showing its ranks failed only because a peer went
        away (``symptoms.secondary``). ``stopped``: the stop signal this node was sent (``SIGINT``): a stop, said
        so, its launcher's output (the signal's tracebacks) not relayed."""
        self.stopping.set()
        if stopped and self.failure is None and code:
            self._say_stopped(stopped, code, aside, how)
        if (self.failure is None or error) and not self.closing:
            report = {"t": "exit", "code": code, "how": how, "tail": tail[-TAIL_LINES:] if code and not stopped else []}
            if stopped:
                report["stopped"] = stopped
            if peer_gone:
                report["peer_gone"] = peer_gone
            if error:
                report["error"] = error
            try:
                self._send(report)
            except ExchangeError:
                pass
        self.close()
        self.channel.finish(2.0)
        return self.peer_failed_code()


class HubWatch(HubStall, Watch):
    """Node 0's side: beats to every node, their reports, and the first failure relayed to all."""

    def __init__(self, hub, log, elastic=False, admit=None, clock=time.monotonic, on_straggler_fault=None,
                 hear_back=False, turn_away=None, news=None, recovery=False, hub_wait_s=600, stop_asked=None):
        super().__init__(log, elastic, recovery, hub_wait_s, stop_asked)
        self.news = news if news is not None else News()  # every failure heard, for recovery's node 0 to drain
        self.turn_away = turn_away   # recovery: a node early for the next generation, sent away before its connect-back
        self.hear_back = hear_back   # recovery: after a failure, hear every node answer before the hub closes
        self.hub, self.clock = hub, clock
        self.admit = admit           # elastic: judges a late node, returns its verdict; fixed: None
        self.on_straggler_fault = on_straggler_fault  # recovery's seam (stall/fault.py), or None: reported only
        self.own_done = threading.Event()
        self.label = f"node 0 ({hub.own_fp.get('hostname')})"
        self.held = None             # (until, label, report): a failure that shows only a peer gone, not relayed yet
        self.answered_at = None      # recovery: when a node last answered the abort (the hear-back's quiet)
        self.aborted_at = None       # when node 0 relayed the abort (clock)
        self.settling = []           # nodes checking in late whose connect-back is under way (``_late``)
        self.tick = None             # when the loop last ran (``_note_pause``)
        self.paused = None           # (seconds, when it ended): node 0 itself was silent longer than LOST_S
        for listener in HUB_WATCHES:  # metrics/: node 0's live picture of the job, its goodput timeline
            listener(self)

    fault = Watch.fault  # the shared one, before HubReading's declaration in the method order

    def over(self):
        """The generation ended without a failure: node 0's launcher finished, the heartbeat's thread is done."""
        thread = self.thread
        return self.failure is None and self.own_done.is_set() and thread is not None and not thread.is_alive()

    def watch_only(self):
        """Node 0 holds no training slot this generation: watch the members until every one finished or one
        failed, then finish (after a failure the heartbeat reads on for recovery's hear-back, which ``finish``
        runs: waiting for the thread to end then waited for ever)."""
        self.start()  # no launcher on this node to stop
        self.own_done.set()
        try:
            while self.thread.is_alive() and self.fault() is None:
                self.thread.join(0.2)
        except SystemExit as stop:
            # a stop signal while it watches (supervise.stop_waiting): node 0 tells the others as a training node 0
            # does, so Ctrl-C ends the job on every node (walk12b B5: they heard "closed without a word" and
            # waited wait_timeout for a node 0 that had been stopped on purpose)
            code, name = stop_signal(stop.code)
            self.sitting_out = True
            self.finish(code, f"stopped by {name} while it held no training slot (no launcher running)", [],
                        stopped=name)
            raise
        return self.finish(0, "node 0 holds no training slot", [])

    def use_stall(self, stall):
        """Watch the ranks with ``stall``; `--status` on node 0 shows its view (``exchange.Hub.status``)."""
        self.stall = stall
        self.hub.show_ranks(lambda stacks=False: stall.status(self, stacks))

    def _send(self, peer, message):
        """Queue ``message`` for ``peer`` (never waits on it); False when the node is gone or not reading."""
        return not self.hub.board.post([peer], message)

    def _broadcast(self, message):
        self.hub.board.post([peer for peer in self.hub.peers if peer.done is None], message)

    def _before_start(self):
        self.hub.board.wakeable()

    def close(self):
        self.stopping.set()
        self.hub.board.wake()  # the loop may be waiting up to 0.5 s on the nodes: it ends now
        super().close()

    def _run(self):
        hub = self.hub
        hub.board.watch_all(hub.peers)
        next_beat = next_sweep = self.clock()
        for peer in hub.peers:
            peer.last_heard = next_beat
        while not self.stopping.is_set() and not hub.board.closed:
            now = self.clock()
            self._note_pause(now)
            if now >= next_beat:
                self._broadcast(BEAT)
                next_beat = now + LOST_S / HUB_BEATS
                if self.stall is not None and self.failure is None:
                    self.stall_tick()
            if self.own_done.is_set() and not any(p.done is None for p in hub.peers if p.role == "member") and \
                    not (self.hear_back and self.failure is not None):
                return  # everyone finished (spares wait on: they hear the closing); after a failure, recovery's
                # node 0 reads on until it has heard every node out (``_hear_every_node``)
            accept, ready = hub.board.wait(min(0.5, max(0.0, next_beat - now)))
            self._note_pause(self.clock())  # before reading: the nodes that closed meanwhile did so for its silence
            if accept:
                self._accept()
            # split before reading: a late node's hello read now is not also read as a beat of a node in the job
            # (walk17b B14: a spare turned away here was read again, its closed link taken for a member's loss)
            known = [p for p in ready if p.fp is not None]
            for peer in [p for p in ready if p.fp is None]:  # a `--status` or a late node: before the beats
                self._late(peer)
            for count, peer in enumerate(known):
                if count and count % DOOR_EVERY == 0:
                    self._front_door()
                if peer.done is None:
                    self._read(peer)
            hub.expire()
            if self.settling:
                self._settled()
            if self.held is not None and self.clock() >= self.held[0]:
                self._release()
            if self.clock() >= next_sweep:
                next_sweep = self.clock() + SWEEP_S
                self._sweep()
            if ready:
                self.stopping.wait(BATCH_S)

    def _accept(self):
        hub = self.hub
        if self.hear_back and self.failure is not None:
            hub.board.stop_accepting()  # nodes coming back wait in the backlog for the next generation's hub
        else:
            hub.accept()

    def _front_door(self):
        """Between chunks of :data:`DOOR_EVERY` beats: take a connection waiting to be accepted and read a
        request that arrived (a `--status`, a late node's hello). A node 0 starved of CPU reads thousands of beats
        per wake-up; the `--status` asked meanwhile waited for two of those wake-ups (its challenge, its request)
        behind every beat, and now for a chunk of them."""
        hub = self.hub
        socks = {peer.channel.sock: peer for peer in hub.pending}
        if not hub.board.closed and hub.board.masks.get(hub.sock):
            socks[hub.sock] = None
        if not socks:
            return
        for sock in readable(list(socks), 0):
            if sock is hub.sock:
                self._accept()
            elif socks[sock].fp is None and socks[sock] in hub.pending:
                self._late(socks[sock])

    def _listen(self):
        """Node 0's own ranks failed after a peer went away: let the thread hear the node that failed first (it
        relays that one), until the hold's end or JUDGE_S."""
        until = self.held[0] if self.held is not None else self.clock() + JUDGE_S
        while self.failure is None and self.thread is not None and self.thread.is_alive() and self.clock() < until:
            self.stopping.wait(0.05)

    def _await_reports(self):
        """This node's script raised an error: hear the other members' reports (up to :data:`REPORTS_S`) before
        the hub closes, so the same error everywhere is seen as the job's own (``recovery/decide.shared_error``)."""
        until = self.clock() + REPORTS_S
        while self.thread is not None and self.thread.is_alive() and self.clock() < until and \
                any(p.done is None for p in self.hub.peers if p.role == "member"):
            self.stopping.wait(0.05)

    def _hear_every_node(self):
        """Recovery's node 0, after a failure: until every node answered the abort (``STOPPING``), reported, or is
        gone (closed without a word, or silent :data:`LOST_S`: the sweep), or no node answered for
        :data:`QUIET_S` (up to :data:`HEAR_BACK_S`). The next generation waits for the nodes that answered, not
        for a rack that lost its power (its nodes never will); the nodes not heard yet are left open for the
        regather (``Hub.undecided``), which reads on until each checks in again or is gone. A rack failing over
        a second is then one event without node 0 waiting that second out before it regathers, and a node slow
        to answer is still waited for, as long as its link shows it alive."""
        started = self.clock()
        until = started + HEAR_BACK_S
        unheard = [p for p in self.hub.peers if p.done is None and not p.stopping]
        while unheard and self.thread is not None and self.thread.is_alive() and self.clock() < until:
            # quiet since the abort went out or the last answer came (node 0's own launcher may have taken that)
            heard = [t for t in (self.aborted_at, self.answered_at) if t is not None]
            if self.clock() - (max(heard) if heard else started) >= QUIET_S:
                break
            self.stopping.wait(0.02)
            unheard = [p for p in unheard if p.done is None and not p.stopping]
        self.hub.undecided = unheard

    def _sweep(self):
        """Nodes silent for LOST_S count as gone: those whose beats node 0 has not read yet are read first (a
        node 0 behind on thousands of connections must not take its own lag for a node's silence)."""
        now = self.clock()
        silent = [p for p in self.hub.peers if p.done is None and now - p.last_heard > LOST_S]
        if silent:
            from .wire import readable

            by_sock = {p.channel.sock: p for p in silent}
            for sock in readable(list(by_sock), 0):
                self._read(by_sock[sock])  # its beat (last_heard now), or its report, or its connection's end
        for peer in [p for p in silent if p.done is None and now - p.last_heard > LOST_S]:
            self._gone(peer, {"how": f"no heartbeat for {LOST_S:g}s (node or network gone)"})

    def _late(self, peer):
        """A node checking in after the start: turned away (fixed size) or judged on its own (elastic)."""
        before = len(self.hub.peers)
        self.hub.read_hello(peer)
        if len(self.hub.peers) == before:
            return
        self.hub.peers.remove(peer)
        peer.role = None  # no place in the job until judged (``_judge_late``): its loss meanwhile is no member's
        if self.turn_away is not None and self.turn_away(peer) and self._twin(peer) is None:  # it tries again
            self.hub.board.forget(peer)
            peer.channel.close()
            return
        # its connect-back runs in this loop (``board.wait``) and it is judged once that is over (``_settled``): never
        # waited for here, where node 0's beats to every node would wait with it (up to PROBE_TIMEOUT_S, each)
        self.settling.append(peer)

    def _settled(self, every=False):
        """Judge the late nodes whose connect-back is over (``every``: all of them, the watch ending)."""
        ready = [peer for peer in self.settling if every or peer.probe is not None]
        for peer in ready:
            self.settling.remove(peer)
            self._judge_late(peer)

    def _twin(self, peer):
        """The node in the job, alive and beating, whose rank ``peer`` claims as well, or None. Under recovery too
        the newcomer is the duplicate, turned away naming the live node (walk11b B23: it was sent off to try
        again, and the live training node was thrown out as lost, a generation and a restart spent)."""
        rank = (peer.fp or {}).get("rank")
        return next((p for p in self.hub.peers if p is not peer and (p.fp or {}).get("rank") == rank
                     and p.done is None and not p.stopping), None)

    def _judge_late(self, peer):
        verdict = None if self._twin(peer) is not None else self.admit(peer) if self.admit else None
        if verdict is False:  # recovery: a node on its way to the next generation, early; it tries again
            self.hub.board.forget(peer)
            peer.channel.close()
            return
        if verdict is None:
            verdict = turned_away(peer, self.hub.peers)
            self.log(f"check-in: {verdict['problems'][0]['nodes'][0]} turned away: {verdict['problems'][0]['says']}")
        if not self.hub.tell([peer], verdict) and verdict["decision"] == "start":
            peer.role = peer.role or "member"  # recovery's admit gave it the book's role; elastic: a member
            peer.last_heard = self.clock()
            rank = (peer.fp or {}).get("rank")
            for old in [p for p in self.hub.peers if p.done is not None and (p.fp or {}).get("rank") == rank]:
                self.hub.peers.remove(old)  # a node back after node 0 counted it gone: one row, its new one
            self.hub.peers.append(peer)
            self.hub.board.watch(peer)
            self.log(f"{_label(peer)} {JOINED.get(peer.role, JOINED['member'])}")
        else:
            self.hub.board.let_go(peer, 1.0)

    def _read(self, peer):
        try:
            messages = peer.channel.drain()
        except ExchangeError:
            self._gone(peer, {"how": "its connection closed without a report: its entrypoint was killed, "
                                     "or its node or network went away"})
            return
        peer.last_heard = self.clock()
        for message in messages:
            if message.get("t") == STOPPING:
                peer.stopping, self.answered_at = True, self.clock()
                continue
            self.stall_message(peer, message)
            if message.get("t") == "exit":
                peer.done = message
                if message.get("code") != 0 and peer.role == "member":  # the others first, then its goodbye
                    self._heard(peer, Cause.STOPPED if stop_sent(message) else Cause.CRASH, message)
                elif message.get("code") != 0 and stop_sent(message) and self.failure is None:
                    self.log(f"{_label(peer)} ({peer.role}) was stopped: {message.get('how')}")  # walk11b B15
                self.hub.board.let_go(peer, 0.5)  # in this loop: its close is not waited for here
                return

    def _note_pause(self, now):
        """Node 0 itself was silent longer than a node waits for its beats (its process stopped: SIGSTOP, a
        suspended VM, a swap storm): the nodes' silence meanwhile is not theirs (each is heard afresh from now),
        and under recovery the nodes that closed for it are not lost (``_gone``)."""
        if self.tick is not None and now - self.tick > LOST_S:
            self.paused = (now - self.tick, now)
            for peer in self.hub.peers:
                peer.last_heard = now
        self.tick = now

    def _silent_itself(self):
        """Under recovery, whether node 0 woke from its own silence a moment ago (``PAUSED_S``): the nodes closing
        now declared it lost (walk13b B15, B16: node 0 called them lost, ended the job with exit 8 "on every node",
        and they waited wait_timeout for it). Its first call ends the generation as node 0's own fault (left out of
        training; it stays the hub), the others told and counted as coming back, as a node that paused is."""
        if not self.recovery or self.paused is None or self.clock() - self.paused[1] > PAUSED_S:
            return False
        if self.failure is None:
            how = (f"node 0 itself was silent for {self.paused[0]:.0f}s (its process stopped: SIGSTOP, a "
                   f"suspended VM or a long pause), longer than the other nodes wait for its heartbeat "
                   f"({LOST_S:g}s), so they declared it lost; they check in again")
            report = {"how": how, "tail": [], "declared_lost_by": "the other nodes"}
            self.news.put(heard(Cause.LOST, self.label, report, node=NodeId(self.hub.own_fp.get("rank", 0))))
            self._failed(self.label, report)
        return True

    def _gone(self, peer, report):
        if not peer.stopping and self._silent_itself():  # it closed because node 0 went silent: it comes back
            peer.stopping, self.answered_at = True, self.clock()
        # after a failure closing is what nodes do, once they answered the abort; one that did not is lost
        peer.done = dict(report, lost=self.failure is None or not peer.stopping)
        self.hub.board.forget(peer)
        peer.channel.close()
        if peer.role is None:  # a node still checking in, or turned away: not in the job, nothing to say
            return None
        if peer.role != "member":  # a spare or a left-out node: nothing to stop
            if self.failure is None:  # after a failure a spare closes too, to check in for the next generation
                fewer = "one spare fewer" if peer.role == "spare" else "it held no place"
                self.log(f"{_label(peer)} ({peer.role}) is gone: {report.get('how')}; {fewer}, training goes on "
                         "(it may check in again)")
            return None
        if self.failure is None:  # after a failure, closing is what the stopped nodes do: no evidence
            self._heard(peer, Cause.LOST, report)
        else:
            self._failed(_label(peer), report)

    def _heard(self, peer, cause, report):
        """A member failed: put on the failure news; relayed at once when it failed of its own accord, held (up to
        JUDGE_S) when its output shows only that a peer went away."""
        own = not report.get("peer_gone")
        said = dict(report, how=f"{said_stop(stop_sent(report))}: {report.get('how')}") if cause is Cause.STOPPED \
            else report  # the fault's why names the signal: "it was stopped (SIGINT, Ctrl-C: torchrun exited 1 ...)"
        self.news.put(heard(cause, _label(peer), said, node=_identity(peer), own=own))
        if self._own_stop_first():
            return
        if self.failure is not None or self.elastic or own:
            self.held = None
            self._failed(_label(peer), report)
        elif self.held is None:
            self.held = (self.clock() + JUDGE_S, _label(peer), report)
            self.log(f"{_label(peer)} failed after a peer went away ({report['peer_gone']}); listening "
                     f"{JUDGE_S:g}s for the node that failed first")

    def _release(self):
        """The hold is over and no node failed of its own accord: relay the held failure."""
        _, label, report = self.held
        self.held = None
        self._failed(label, report)

    def _own_stop_first(self):
        """Node 0 was sent a stop signal (Ctrl-C, a SIGTERM) before any failure was relayed: its own stop, relayed
        once its launcher ends (``finish``), is the news, whatever order the reports arrive in; a member's failure
        now is most likely the one its stop caused (its ranks ended, the peers' collectives broke), put on the news
        but never relayed in its place (walk16b B18: node 1's "connection closed" won, node 0 exited 143 and the
        others waited for a next generation)."""
        return self.failure is None and not self.elastic and self.stop_signalled()

    def _failed(self, label, report):
        if self._own_stop_first():
            self.held = None
            return
        news = {"node": label, "how": report.get("how"), "tail": (report.get("tail") or [])[-TAIL_LINES:]}
        if stop_sent(report):
            news["stopped"] = stop_sent(report)
        if self.elastic:
            self._left(label, report)
            self._broadcast({"t": "left", **news})
            return
        if self.failure is None:
            self._broadcast({"t": "abort", **news})
            self.aborted_at = self.clock()
        self._stop_for(label, report)

    def finish(self, code, how, tail, peer_gone=None, error=None, stopped=None, aside=None):
        """Node 0's launcher ended: relay a failure, or wait for the others to finish, then close. A failure that
        shows only a peer gone (``peer_gone``) first listens for the node that failed of its own accord.
        ``error``: the exception its script raised (``symptoms.script_error``): on the failure news whichever failure
        was relayed first (the same error on every node is the job's own). ``stopped``: the stop signal node 0
        was sent: relayed as a stop, without its launcher's output."""
        report = {"how": how, "tail": [] if stopped else tail[-TAIL_LINES:]}
        if stopped:
            report["stopped"] = stopped
            self.own_stop = stopped
            if self.failure is None and code != 0:
                self._say_stopped(stopped, code, aside, how)
        if error:
            report["error"] = error
        if code != 0:  # after another node's failure stopped it, evidence of its error only, never the culprit
            self.news.put(heard(Cause.CRASH, self.label, report, node=NodeId(self.hub.own_fp.get("rank", 0)),
                                own=self.failure is None and not peer_gone))
        if self.failure is None and code != 0 and peer_gone:
            self.log(f"this node's ranks failed after a peer went away ({peer_gone}); listening up to "
                     f"{JUDGE_S:g}s for the node that failed first")
            self._listen()
        self.own_done.set()
        if self.failure is None and code != 0:
            with self.lock:
                self.failure, self.failed_at = (self.label, report), time.time()  # the first failure is this node's own
            news = {"node": self.label, "how": how, "tail": report["tail"]}
            if stopped:
                news["stopped"], news["hub"] = stopped, True  # node 0 itself: under recovery the others wait for it
                if self.recovery and self.ends_job(stopped):  # a person stopped it: the job ends (walk10 B3)
                    news["ends"] = True
                    # a member whose launcher already ended (its ranks failed of this stop) hears no abort: it
                    # checks in again, and node 0 tells it the job ended (``recovery.hub``; walk16b B18)
                    self.unheard_end = [int(_identity(p)) for p in self.hub.peers
                                        if p.done is not None and p.role == "member" and _identity(p) is not None]
            self._broadcast({"t": "left" if self.elastic else "abort", **news})
            self.aborted_at = self.clock()
        if error and code != 0 and not self.elastic:
            self._await_reports()
        elif code == 0 and self.failure is None and self.thread is not None:
            self.thread.join(LINGER_S)
            self._broadcast({"t": "closing"})
        if self.hear_back and self.failure is not None and not self.elastic:
            self._hear_every_node()
        self.close()
        self._settled(every=True)  # a node still checking in is told (refused, or its role) before the hub closes
        self.hub.close()
        if self.failure and self.failure_code == EXIT_STALLED:
            return EXIT_STALLED
        return EXIT_PEER_FAILED if self.failure and self.failure[0] != self.label else None


def turned_away(peer, members):
    """The verdict for one node that checked in after the start, refused alone (``scope``: the job goes on): a
    rank already in the job is a duplicate, named with both nodes' addresses (walk8 B15: a node started twice was
    told "late" and that "every node exits 3"); any other is late."""
    rank = (peer.fp or {}).get("rank")
    first = next((p for p in members if (p.fp or {}).get("rank") == rank), None)
    seen = f"{_label(peer)} from {peer.channel.seen or 'its address'}"
    if rank == 0 or first is not None:
        where = "node 0 itself" if rank == 0 else f"{_label(first)} from {first.channel.seen or 'its address'}"
        check, says = "duplicate", (f"node rank {rank} claimed twice: {seen} came while {where} is in the job "
                                    "already: two nodes with one rank (a node started twice, a template baking one "
                                    "rank on two hosts); the newcomer is turned away, the job goes on with the first")
    else:
        check, says = "late", "checked in after the job started; a fixed-size job restarts all its nodes together"
    return {"decision": "refuse", "scope": "this node", "problems": [{
        "check": check, "severity": "refuse", "allowed": False, "fields": [], "nodes": [seen], "says": says}],
        "fields": [], "rows": []}


def _label(peer):
    fp = peer.fp or {}
    return f"node {fp.get('rank')} ({fp.get('hostname')})"


def _identity(peer):
    """The node a connection belongs to, by its identity (its fingerprint's node rank among nodes + spares)."""
    rank = (peer.fp or {}).get("rank")
    return None if rank is None else NodeId(int(rank))
