"""Node 0's live picture of the job, and the timeline its goodput is accounted from.

Only node 0 gathers and makes a HubWatch (one per generation; ``metrics.gathering``,
``metrics.hub_watch``), so only node 0 ever makes a :class:`Live`. When
``metrics.enabled``, its first gather (the job's check-in, before any watch)
starts the GPU sampler and serves ``/metrics`` and ``/status.json``, the
check-in in them while node 0 waits (``Hub.waiting``: whom for, how long); its
first watch starts the recorder thread and listens to the launcher's output
(``capture.OUTPUT_LISTENERS``: the training's step lines).

The recorder looks once a second at what the heartbeat and the stall watch
already hold in memory (no file read, no message, nothing the heartbeat waits
for) and keeps the timeline: each generation's start, its first collective (the
stall watch's counts; without the watch, the first step line), its stalls, its
fault, its step numbers; it writes it as ``goodput.json`` beside
``recovery.json`` in the job's folder (``$TMPDIR/nodeweave/jobs/<job id>-<master
port>/``, ``runstate.job_dir``; and into the run's folder under ``nodeweave
run``), and beside it ``heat.json``, the bounded per-rank heat map (``heat.py``).
"""

import atexit
import collections
import json
import os
import threading
import time

from . import heat
from .goodput import SCHEMA
from .rankcounts import collectives, recorded

DEFAULT_PORT = 9464  # the port Prometheus' registry lists for OpenTelemetry's exporter: free on a GPU node
TICK_S = 1.0
SAVE_S = 5.0
RECORD = "goodput.json"
MAX_STEPS = 4000  # per generation: step lines kept for the accounting (the first, then thinned)
RATE_WINDOW_S = 30.0
RATE_LATE_S = 6.0  # a rank's newest reading older than this (3 beats): its node is quiet, not a beat behind
RATE_MIN_S = 4.0   # the rates' common window must span this much (two beats) before any rate is said

LIVE = None  # node 0's Live, from its first HubWatch on


def _count_at(history, at):
    """A rank's collectives at ``at`` from its readings [(time, count)]: between the two around it, on a straight
    line; its last count after its last reading."""
    import bisect

    times = [t for t, _ in history]
    i = bisect.bisect_right(times, at)
    if i >= len(history):
        return history[-1][1]
    if i == 0:
        return history[0][1]
    (t0, c0), (t1, c1) = history[i - 1], history[i]
    return c0 + (c1 - c0) * (at - t0) / (t1 - t0)


def carried_timeline(kept, fresh, generation):
    """``kept`` (the timeline a lost node 0 process saved) going on as this process's, or None when it is not this
    run's: the same schema, job and run, launched before this process, its generations all before
    ``generation`` (the one node 0 came back to). Its end, if a stopped process wrote one, is taken back."""
    if not isinstance(kept, dict) or kept.get("schema") != fresh["schema"]:
        return None
    launched, gens = kept.get("launched"), kept.get("generations")
    if not isinstance(launched, (int, float)) or launched >= fresh["launched"] or not isinstance(gens, list):
        return None
    if kept.get("job") != fresh["job"] or kept.get("run_id") != fresh["run_id"]:
        return None
    if not all(isinstance(g, dict) and isinstance(g.get("generation"), int) and g["generation"] < generation
               for g in gens):
        return None
    return dict(fresh, launched=launched, generations=gens, ended=None)


SHARED_RECORDS = ("checkin.json", "recovery.json", RECORD, heat.RECORD)  # node 0's, in the job's folder


def shared_records(folder, launched, came_back=False):
    """Why node 0's records in ``folder`` (its job's, ``runstate.job_dir``) are another live launch's, or None: a
    goodput timeline of another launch, not ended, saved within the last few saves. The folder is per job id and
    master port (walk10 B8: two jobs sharing a TMPDIR wrote one goodput.json), so only two launches of one job id
    and port on one TMPDIR meet here (machines sharing a TMPDIR over a network disk). ``came_back``: node 0 of a
    job under way, whose timeline that is."""
    path = os.path.join(folder, RECORD)
    try:
        age = time.time() - os.stat(path).st_mtime
        with open(path) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return None
    if came_back or not isinstance(kept, dict) or kept.get("ended") is not None or age > 3 * SAVE_S:
        return None
    other = kept.get("launched")
    if not isinstance(other, (int, float)) or abs(other - launched) < 1:
        return None
    since = time.strftime("%H:%M:%S", time.gmtime(other))
    return (f"another job's node 0 is writing its records in {folder} ({RECORD} of job {kept.get('job')!r}, "
            f"launched {since} UTC, saved {age:.0f}s ago): this job's {', '.join(SHARED_RECORDS)} go to the same "
            "files, each job's over the other's (the folder is per job id and master port, and both jobs have "
            "the same); give each job a job id of its own (NODEWEAVE_JOB_ID) or its nodes a TMPDIR of their own")


class Live:
    def __init__(self, settings, log, launched=None, job=None):
        """``job``: (job id, master port), naming the job's folder (``runstate.job_dir``); None until the first
        watch tells it (``watching``: node 0's fingerprint)."""
        self.log, self.env = log, settings.env
        self.enabled = settings.get("metrics", True)
        self.port = settings.get("metrics_port", DEFAULT_PORT)
        pattern = settings.get("step_pattern")
        self.pattern = None
        if pattern:
            from .steps import compile_pattern

            self.pattern = compile_pattern(pattern)  # settings.py read it already: a bad one exited 2 there
        run_id = settings.get("run_id")
        self.run_id = run_id
        self.folders = self._folders(job) if job is not None else []  # the job's, then the run's
        self.checkpoint_dir = settings.get("checkpoint_dir")
        from ..planning.contract import RECOVERY_RESTARTS

        self.limits = {"max_restarts": settings.get("recovery_max_restarts", RECOVERY_RESTARTS)
                       if settings.get("recovery") else None}
        self.lock = threading.Lock()
        self.watch = None
        self.hub = None  # the hub of node 0's latest gather (``gathering``): its check-in, while it waits
        self.serving = False  # the server was started (or tried: a taken port is said once)
        self.generation = None  # the timeline's entry of the generation the current watch watches
        self.timeline = {"schema": SCHEMA, "launched": launched or time.time(), "ended": None, "job": None,
                         "run_id": run_id, "step_pattern": bool(pattern), "generations": []}
        self.splitters = {}
        self.step = None  # (logger, step, time.time()) of the newest step line
        self.carried = None  # the newest step another node's beats carried, once noted (``_carried_step``)
        self.unread = None  # {"line", "pattern"}: the last line that looked like a step and no format read
        self.unread_first = None  # the step number the first such line named
        self.unread_moved = False  # such lines named two numbers: steps go by unread (not one resume/total line)
        self.rates_seen = {}  # (node, rank) -> deque of (monotonic time, collectives)
        self.sampler = self.server = self.thread = None
        self.servers = []  # the loopback listener beside a bound one (NODEWEAVE_EXCHANGE_BIND=route)
        self.saved_at = 0.0
        self.book_cache = (None, None)
        self.heat = heat.HeatSummary()  # the per-rank heat map a finished run's folder keeps (heat.json)

    # --- seams ------------------------------------------------------------------------------------------
    def watching(self, watch):
        """A HubWatch was made: this is node 0, and a generation begins."""
        try:
            self._watching(watch)
        except Exception as err:  # noqa: BLE001 - seeing the job must never stop it
            self.log(f"warning: metrics: {err!r}")

    def gathering(self, hub):
        """Node 0 begins a gather on ``hub``: the job's check-in (before any watch) or recovery's regather. The
        picture shows it from now (``phase``, ``Hub.waiting``); the first one starts the server (walk12b B13:
        nothing listened until the check-in was over, so `top` called a node 0 waiting for a node "not running")."""
        with self.lock:
            self.hub = hub
            if self.timeline["job"] is None:
                self.timeline["job"] = (hub.own_fp or {}).get("job")
        if not self.serving:
            self._serve(getattr(hub, "bind", "") or "")

    def phase(self):
        """``gathering`` while node 0 waits for nodes to check in (its latest gather's verdict not out yet),
        ``starting`` from the verdict to the generation's watch, then ``running``."""
        hub, watch = self.hub, self.watch
        if hub is not None and hub.verdict is None:
            return "gathering"
        if watch is None or (hub is not None and getattr(watch, "hub", None) is not hub):
            return "starting"
        return "running"

    def waiting(self):
        """Whom node 0 waits for while it gathers (``Hub.waiting``), or None."""
        hub = self.hub
        return hub.waiting() if hub is not None and hub.verdict is None else None

    def _folders(self, job):
        from ..running.runstate import job_dir, run_dir

        return [job_dir(self.env, *job)] + ([run_dir(self.env, self.run_id)] if self.run_id else [])

    def _watching(self, watch):
        if not self.folders:  # node 0's fingerprint names its job: the one folder of its records (walk10 B8)
            fp = watch.hub.own_fp or {}
            self.folders = self._folders((fp.get("job"), fp.get("master_port")))
        book = self.book()
        number = book.get("generation", 0) if book else 0
        if self.thread is None:  # node 0's first generation: before its first save over the folder's records
            shared = shared_records(self.folders[0], self.timeline["launched"], number > 0)
            if shared:
                self.log(f"warning: {shared}")
        with self.lock:
            self.watch = watch
            self.timeline["job"] = (watch.hub.own_fp or {}).get("job")
            if not self.timeline["generations"] and number > 0:  # node 0 came back to a job under way
                self._carry_on(book)
            gens = self.timeline["generations"]
            if gens and gens[-1]["generation"] == number:
                return  # the same generation watched again (never today; harmless)
            resumed = bool(book and book.get("resume_from"))
            members = book.get("members") if book else None
            entry = {"generation": number, "began": time.time(), "first": None, "last": None, "ended": None,
                     "fault": None, "stalls": [], "steps": [],
                     "node_0_trains": 0 in members if isinstance(members, list) else True,  # its ranks print steps
                     "resumed_step": book.get("step") if resumed else None,
                     "resume_from": book.get("resume_from") if book else None}
            past = {h.get("generation"): h for h in (book or {}).get("history") or []}
            for gen in gens:
                known = past.get(gen["generation"])
                if known:
                    gen["fault"] = dict(gen.get("fault") or {}, **{k: known.get(k) for k in (
                        "at", "why", "cause", "node", "resumed_step", "resume_from", "work_lost_s") if k in known})
                elif gen.get("ended") is None and gen.get("fault") is None:
                    gen["ended"] = entry["began"]
            gens.append(entry)
            self.generation = entry
            first = self.thread is None
        if first:
            self._start()

    def _carry_on(self, book):
        """Node 0 was lost and its container started it again: go on with the timeline its lost process kept
        (``goodput.json`` in the same folder), so the run's wall time and its generations before the loss stay
        in the accounting rather than the run seeming to start now."""
        try:
            with open(os.path.join(self.folders[0], RECORD)) as f:
                kept = json.load(f)
        except (OSError, ValueError):
            return
        carried = carried_timeline(kept, self.timeline, book.get("generation", 0))
        if carried is not None:
            self.timeline = carried
            self.log(f"metrics: node 0 came back: its goodput timeline goes on from the run's launch "
                     f"({time.time() - carried['launched']:.0f} s ago, {len(carried['generations'])} "
                     "generation(s) before)")

    def output(self, target, chunk):
        """A chunk of the launcher's output (``target`` 1 or 2): step lines are noted on node 0."""
        if self.generation is None:
            return  # not node 0 (or not yet): nothing to keep
        from .steps import LineSplitter, find_step

        splitter = self.splitters.setdefault(target, LineSplitter())
        now = time.time()
        for line in splitter.feed(chunk):
            found = find_step(line, self.pattern)
            if found is None:
                self._unread(line)
                continue
            with self.lock:
                self._note_step(found[0], found[1], now)

    def _note_step(self, logger, number, at):
        """One step line of the generation's rank 0 (node 0's own ranks', or carried by the beats of the node that
        holds rank 0 while node 0 sits the generation out), read at ``at`` (time.time()). Under the lock."""
        self.step = (logger, number, at)
        steps = self.generation["steps"]
        if self.generation["fault"] is None and self.generation["ended"] is None:
            self.generation["last"] = max(self.generation["last"] or 0.0, round(at, 3))
        if not steps or steps[-1][1] != number:
            steps.append([round(at, 3), number])
            if len(steps) > MAX_STEPS:
                del steps[1:MAX_STEPS // 2:2]  # keep the first, thin the oldest half

    def _carried_step(self, watch):
        """While node 0 sits the generation out: the newest step line the beats of the node holding the generation's
        rank 0 (the book's first member) carried, noted once (walk18b B8: the steps and their rate were unknown)."""
        if self.node_0_left_out() is None:
            return
        from ..recovery.book import Book

        kept = self.book()
        head = Book.from_json(kept).rendezvous() if isinstance(kept, dict) else None
        for peer in list(watch.hub.peers):
            step = getattr(peer, "step", None)
            if (peer.fp or {}).get("rank") == head and peer.done is None and step and step != self.carried:
                self.carried = step
                self._note_step(*step)

    def _unread(self, line):
        lowered = line.lower()
        if "step" not in lowered and "iter" not in lowered:
            return  # most lines
        from .steps import pattern_for

        pattern = pattern_for(line)
        if pattern is not None:
            import re

            found = re.search(pattern, line)
            number = found.group("step") if found else line
            self.unread = {"line": line.strip()[:200], "pattern": pattern}
            if self.unread_first is None:
                self.unread_first = number
            # one line naming a step is no evidence (walk9 B7: `resumed from step 160 (...)` before the step lines
            # of the project's own example was called unread): the note waits for a second number
            if not self.unread_moved and number != self.unread_first:
                self.unread_moved = True
                if self.step is None:  # said once, while the run goes on: never after its end's report
                    self.log(f"metrics: {self.step_note()}")

    def node_0_left_out(self):
        """The current generation's number when node 0 sits it out (recovery left it out: hub only, its ranks print
        no step line), else None: its steps come from the beats of the node holding rank 0 then."""
        gen = self.generation
        return gen["generation"] if gen is not None and not gen.get("node_0_trains", True) else None

    def steps_unknown(self):
        """The generation node 0 sits out while no step of it came yet (from the rank 0 node's beats), else None."""
        left_out = self.node_0_left_out()
        return left_out if left_out is not None and not self.generation.get("steps") else None

    def shown_step(self):
        """The newest step line's (logger, step, time), or None while node 0 sits the generation out and no step of
        it came yet (replay10 R5: /status.json and /metrics kept generation 1's step 121 while generation 2 trained
        at 248)."""
        return None if self.steps_unknown() is not None else self.step

    def step_note(self, ended=False):
        """One line when the run read no step line (top draws no step, goodput counts none): what looked like one,
        and a ``metrics.step_pattern`` that reads it; None once a step line was read, and, until the run
        ``ended``, while nothing looked like one yet (a job still importing) or the lines that did named one step
        number only (a resume line, a total: the step lines may come next). While node 0 sits the generation out,
        that it does (replay10 R5: top drew the last generation's step as the job's)."""
        left_out = self.steps_unknown()
        if left_out is not None and not ended:
            last = f"; the last read, step {self.step[1]}, was an earlier generation's" if self.step else ""
            return (f"step unknown: node 0 is left out of generation {left_out} (its ranks print nothing) and the "
                    f"node holding rank 0 has sent no step line yet{last}; steps a second 0 until it does (the "
                    "stall watch tells moving from stalled meanwhile)")
        if self.step is not None or (not self.unread_moved and not ended):
            return None
        if self.unread is None:
            return ("no step line was read (no format nodeweave knows, and no line naming a step): set "
                    "metrics.step_pattern (NODEWEAVE_STEP_PATTERN) to read the script's (docs/observability.md, Steps)")
        return (f"no step line was read: the last that looked like one, {self.unread['line']!r}, matches no format "
                f"nodeweave knows{' nor metrics.step_pattern' if self.pattern else ''}; set metrics.step_pattern "
                f"(NODEWEAVE_STEP_PATTERN), e.g. '{self.unread['pattern']}'")  # as the spec's YAML takes it, unescaped

    # --- node 0 -----------------------------------------------------------------------------------------
    def _start(self):
        from ..running import capture

        capture.OUTPUT_LISTENERS.append(self.output)
        self.thread = threading.Thread(target=self._run, name="nodeweave-metrics-recorder", daemon=True)
        self.thread.start()
        atexit.register(self.close)
        if not self.serving:  # no gather told of before (a job whose gather no listener saw): serve from here
            self._serve(getattr(getattr(self.watch, "hub", None), "bind", "") or "")

    def _serve(self, bind):
        """With ``metrics.enabled``: the GPU sampler (its readings are for /metrics and top; the goodput timeline
        needs none) and the server, once; a taken port is one warning and the job runs on."""
        self.serving = True
        if self.enabled:
            from .gpus import Sampler
            from .server import serve

            self.sampler = Sampler().start()
            # node 0's listeners listen where its exchange does (walk9 B20: with NODEWEAVE_EXCHANGE_BIND=route on a
            # host network, /metrics and /status.json answered on every NIC of the host, docker0's too), and on
            # loopback besides, where `--node live` asks through the exec channel
            try:
                self.server = serve(self.port, self, bind)
                where = f" on {bind} (NODEWEAVE_EXCHANGE_BIND=route)" if bind else ""
                if bind and not bind.startswith("127."):
                    try:
                        self.servers = [serve(self.port, self, "127.0.0.1")]
                        where = f" on {bind} and 127.0.0.1 (NODEWEAVE_EXCHANGE_BIND=route)"
                    except OSError as err:
                        self.log(f"warning: metrics: not on 127.0.0.1:{self.port} ({err.strerror or err}): "
                                 f"`nodeweave-entrypoint --node live` on this node reads nothing; {bind} serves them")
                self.log(f"metrics: Prometheus' /metrics on port {self.port}{where} (docs/observability.md)")
            except OSError as err:
                self.log(f"warning: metrics off: cannot listen on port {self.port}: {err.strerror or err}; set "
                         "metrics.port (NODEWEAVE_METRICS_PORT) to a free port, or metrics.enabled false")

    def _run(self):
        while True:
            try:
                self.tick()
            except Exception as err:  # noqa: BLE001 - the recorder must not end the job
                self.log(f"warning: goodput recorder: {err!r}")
            time.sleep(TICK_S)

    def views(self, now=None):
        """(every rank's latest view, the stall verdicts) from the current watch's stall watch; a stall's ``for_s``
        as of ``now`` from its one start (``began``), so /metrics, /status.json and goodput's stalled time agree
        (walk18b B2: the gauge was the last evaluation's, up to a beat behind the bucket)."""
        stall = self.watch.stall if self.watch is not None else None
        if stall is None:
            return [], {"stall": None, "stragglers": []}
        from ..stall.watcher import stall_as_of

        verdicts = dict(stall.verdicts)
        verdicts["stall"] = stall_as_of(verdicts.get("stall"), now)
        return list(stall.last_views or []), verdicts

    def tick(self, now=None):
        now = time.time() if now is None else now
        mono = time.monotonic()
        watch, gen = self.watch, self.generation
        if watch is None or gen is None:
            return
        views, verdicts = self.views(now)
        read = recorded(views)
        with self.lock:
            self._carried_step(watch)
            for view in views:
                history = self.rates_seen.setdefault((view.get("node"), view.get("rank")), collections.deque())
                count, at = collectives(view, read), view.get("at", mono)  # when its counts were read (a beat ago)
                if history and count < history[-1][1]:
                    history.clear()  # a new generation's ranks count from 0
                if history and at <= history[-1][0]:
                    continue  # the same reading again (a peer beats every 2 s, this runs every second)
                history.append((at, count))
                while len(history) > 2 and mono - history[1][0] > RATE_WINDOW_S + RATE_LATE_S:
                    history.popleft()  # one reading before the window stays: its start is read between two
            open_gen = gen["ended"] is None and gen["fault"] is None
            moved = [now - float(v.get("since_s") or 0) for v in views if collectives(v, read) > 0]
            training_began = open_gen and gen["first"] is None and bool(moved or gen["steps"])
            if training_began:
                # the earliest sign of a collective: a rank's last move (views come a beat apart) or a step line
                gen["first"] = round(min(moved + [s[0] for s in gen["steps"][:1]]), 3)
            if open_gen and moved and not gen["steps"]:  # step lines, when there are some, time it exactly
                gen["last"] = round(max([gen["last"] or 0.0] + moved), 3)  # (a view is up to a beat old)
            stall = verdicts.get("stall")
            open_stall = gen["stalls"] and gen["stalls"][-1][1] is None
            if stall and not open_stall and open_gen:  # a faulted generation's stall closed at its fault
                gen["stalls"].append([round(stall.get("began") or now - float(stall.get("for_s") or 0), 3), None])
            elif not stall and open_stall:
                gen["stalls"][-1][1] = round(now, 3)
            fault = watch.fault()  # the watch's declared reading (``stall/surface.HubReading``)
            if fault is not None and gen["fault"] is None:
                failed_at, label = fault
                gen["fault"] = {"at": failed_at, "why": label}
                if open_stall or (gen["stalls"] and gen["stalls"][-1][1] is None):
                    gen["stalls"][-1][1] = failed_at
            elif gen["fault"] is None and gen["ended"] is None and watch.over():
                gen["ended"] = now
        if open_gen and views:  # outside the lock: closing a column at 65,536 ranks takes ~70 ms, no scrape waits
            self.heat.feed(now, gen["generation"], views)
        if training_began or now - self.saved_at >= SAVE_S:  # training's start saved at once: a SIGKILL soon after (stop
            self.save(now)  # --grace 0) left start-up to the kill, though the node had trained (walk12 A11 under load)

    def save(self, now=None):
        self.saved_at = time.time() if now is None else now
        from ..running.runstate import write_json

        with self.lock:
            data = json.loads(json.dumps(self.timeline))
            summary = self.heat.document() if self.heat.columns else None
        # when this copy was made: a node 0 killed before close() leaves its last one, which `runs show` accounts up
        # to here (replay11 C11: the key was read there but never written, so a run ended by `stop --grace 0`
        # read "- of 0 s productive; training 0 s" after 30 s of training)
        data["saved"] = round(self.saved_at, 3)
        for folder in self.folders:
            try:
                write_json(os.path.join(folder, RECORD), data)
                if summary is not None:
                    write_json(os.path.join(folder, heat.RECORD), summary)
            except OSError:
                pass  # a record for later reading; the job does not depend on it

    def close(self):
        """At exit: the run's end, written once more. (The note that no step line was read is said when the first
        line that looks like one comes, and served in /status.json: a line here would follow a stall's report,
        which is the last thing a stopped node prints.)"""
        with self.lock:
            self.timeline["ended"] = time.time()
            gen = self.generation
            if gen is not None and gen["ended"] is None and gen["fault"] is None:
                gen["ended"] = self.timeline["ended"]
        self.save()

    # --- what the collector reads -------------------------------------------------------------------------
    def book(self):
        """This job's recovery book (``recovery.json`` beside the check-in record), or None; one older than this
        process is another job's."""
        if not self.folders:
            return None
        path = os.path.join(self.folders[0], "recovery.json")
        try:
            stamp = os.stat(path).st_mtime
        except OSError:
            return None
        if stamp < self.timeline["launched"] - 1:
            return None
        if self.book_cache[0] != stamp:
            try:
                with open(path) as f:
                    self.book_cache = (stamp, json.load(f))
            except (OSError, ValueError):
                return self.book_cache[1]
        return self.book_cache[1]

    def rates(self, mono=None):
        """{(node, rank): collectives a second} over one window for every rank: up to the newest reading every
        rank beating has (a peer's counts come a beat late: node 0's own ranks were always the fastest line,
        walk18b B3), back :data:`RATE_WINDOW_S` or to the newest first reading (a spare that joined the
        generation is measured over the seconds the others are, not its warm-up against their whole window: it
        read 17x slower); each rank's count at the window's ends read between its two readings around them. A
        rank silent for :data:`RATE_LATE_S` (its node gone quiet) has not moved since its last reading. None
        for every rank before the window spans :data:`RATE_MIN_S`. One pass for every rank: a scrape reads
        8,192 of them."""
        mono = time.monotonic() if mono is None else mono
        with self.lock:
            kept = {key: list(h) for key, h in self.rates_seen.items() if h}
        fresh = [h[-1][0] for h in kept.values() if mono - h[-1][0] <= RATE_LATE_S]
        if not fresh:
            return {}
        end = min(fresh)
        start = max([end - RATE_WINDOW_S] + [h[0][0] for h in kept.values() if mono - h[-1][0] <= RATE_LATE_S])
        if end - start < RATE_MIN_S:
            return {}
        return {key: max(0.0, (_count_at(h, end) - _count_at(h, start)) / (end - start)) for key, h in kept.items()
                if h[0][0] <= start}

    def step_rate(self, now=None):
        """Steps a second over the last :data:`RATE_WINDOW_S` up to now, from the current generation's step lines,
        or None before two of them. Measured to now while the generation runs, so a job whose step lines stopped
        comes down to 0 within the window (walk9 B22: 24 s after the last step line it still said 1.99, the rate
        between the last lines, and an alert on a rate near 0 never fired); the step before the window is its
        base, so steps slower than the window are not 0 between two lines only because none fell inside it."""
        gen = self.generation
        if self.steps_unknown() is not None:
            return 0.0  # no step line came yet: the gauge says so, and the documented alert fires (replay10 R5)
        steps = (gen or {}).get("steps") or []
        if len(steps) < 2:
            return None
        running = gen.get("ended") is None and gen.get("fault") is None
        end = (time.time() if now is None else now) if running else steps[-1][0]
        before = [s for s in steps if s[0] < end - RATE_WINDOW_S]
        base = before[-1] if before else steps[0]
        if end <= base[0]:
            return None
        return max(0.0, (steps[-1][1] - base[1]) / (end - base[0]))

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.timeline))
