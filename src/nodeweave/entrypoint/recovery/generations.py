"""Recovery's policy of the entrypoint's one loop (``loop.py``): check in, launch, watch — and on a fault, all
again as the next generation.

The node is prepared as every start prepares it (``loop.Start.prepare``: its plan, the check-in made ready,
the wait); recovery off runs one generation of it and stops, recovery on runs this. Node 0
keeps the check-in exchange (a fresh ``Hub`` on the same port each
generation), gathers the nodes, asks ``decide.py`` who trains, who waits as a
spare and who is left out, and sends that with the verdict (``"recovery"``).
Each node plans its launch for the generation (its training rank, the node
count, the master: the first member), launches it through ``loop.Start`` under
the heartbeat, and when the heartbeat stops it (a crash, a lost node, a stall)
checks in again. A
node's hello names the generation it wants (``"generation"`` in its
fingerprint), so a node early for the next one is turned away by the current
one and tries again. Node 0 keeps the hub role for the job's life; its
training slot may go to a spare (docs/recovery.md says why).
"""

import os

from ..errors import EntrypointError
from ..hints import end_job_hint, status_hint
from ..news import NodeId
from . import decide
from .book import Decision, Role
from .setup import Config, generation_settings, last_book


class Generations:
    """Recovery's policy of the entrypoint's loop (``loop.run``): generations until the job finishes, or its
    restart budget or no-progress brake ends it. ``start`` (``loop.Start``) holds the start steps this policy
    shares with recovery off: the node's preparation once, and every generation's launch. :meth:`run`
    returns the exit code."""

    def __init__(self, settings, log, start=None):
        self.settings, self.log, self.start = settings, log, start
        self.received = []
        self.book = None     # this node's copy of the book, as last kept (``keep``)
        self.ending = None   # why the job ended when node 0 told this node (its deliberate stop), in words

    def requires(self, plan):
        """Node 0 learns of faults through the check-in exchange and its heartbeat: without them, refused."""
        if not (plan.exchange and plan.exchange["enabled"] and plan.exchange["heartbeat"]):
            why = (plan.exchange or {}).get("why") or "it is off"
            raise EntrypointError(f"recovery is on (NODEWEAVE_RECOVERY) but the check-in exchange and its heartbeat "
                                  f"do not run ({why}); node 0 learns of faults through them: turn "
                                  "launcher.exchange on, or recovery off")
        topo = plan.topology
        if topo.is_master and topo.node_rank.value in (0, "0"):  # node 0 alone hands saves out: it claims the folder
            from ..running.claim import take

            take(self.settings.get("checkpoint_dir"), topo.job_id, self.settings.get("run_id"), self.log)

    def _say_cannot_replace(self):
        """The plan's ``recovery-cannot-replace`` warning, on the live start too (replay8 of walk8 B33: --explain and
        validate said it, the start did not, as its plan's node count is one recovery set itself): no spare and no
        minimum below the count, so a fault with a culprit can only end the job."""
        from ..planning.shared_rules import Naming, notes

        config = self.config
        values = {"recovery": True, "spares": config.spares, "nnodes": config.slots, "nnodes_min": config.minimum}
        naming = Naming(lambda key: {"spares": "NODEWEAVE_SPARES"}.get(key, key))
        for key, line in notes(values, (), naming):
            if key == "recovery":
                self.log(f"warning: recovery-cannot-replace: NODEWEAVE_RECOVERY {line}")

    def run(self):
        """After ``start.prepare``: node 0's generations or a worker's; the job's exit code."""
        from ..running.warm import WarmStart
        from ..stall.setup import HOOK

        start = self.start
        self.plan, self.checkin, self.ident_settings = start.plan, start.checkin, start.checkin_settings
        self.config = Config(self.settings, self.plan.topology)
        self.identity = NodeId(self.plan.topology.node_rank.value)  # among nodes + spares: never a generation rank
        self.warm = WarmStart(self.plan.launch.launcher, self.log, enabled=self.settings.get("warm_start", True),
                              ignored_paths=(HOOK,))
        self.log(f"recovery on: node {self.identity} of {self.config.nodes} "
                 f"({self.config.slots} training, {self.config.spares} spare(s)); restart budget "
                 f"{self.config.limits.max_restarts}, no-progress brake {self.config.limits.no_progress or 'off'}")
        self._say_cannot_replace()
        try:
            if self.checkin.hub is not None:
                from .hub import hub_loop

                code = hub_loop(self)
            else:
                from .node import node_loop

                code = node_loop(self)
        except SystemExit as stop:  # a stop signal with no launcher running (``supervise.stop_waiting``): 128+N
            if isinstance(stop.code, int) and stop.code > 128:
                self._close(stop.code, stopped=stop.code - 128)
            raise
        except EntrypointError as err:  # node 0 gone (exit 4), a refusal: the book closed, the line names the exit
            if self._close(err.exit_code, failed=str(err)):
                err.args = (f"{err}; this node exits {err.exit_code}",)
            raise
        finally:
            self.warm.discard()
        self._close(code)
        return code

    def keep(self, book):
        """This node's copy of the book kept (``setup.keep``) and remembered: the job's end closes it."""
        from .setup import keep

        self.book = book
        keep(self.settings, self.plan.topology, book)

    def _close(self, code, stopped=None, failed=None):
        """The job ended on this node by its launcher (exit 0: it finished), a stop signal (this node's, or node
        0's, which ends the job on every node) or an error (``failed``: node 0 gone, exit 4): its kept book says
        so, whatever its role, with its exit code and why in words, and its last line says the same
        (docs/recovery.md "Seen and kept"; walk16b B4, B12, walk17b B7, B17). A book node 0 already ended
        (recovery's stop) stands as it is. An end that leaves the job going (this node's own eviction, node 0
        gone) is kept ``rejoin``: a restart of the container checks in again (``ended_before``). True when the
        book was closed here and the line is the caller's (``failed``)."""
        import signal
        import time

        from ..news import said_stop
        from .hub import stop_asked
        from .setup import STOP_SIGNALS

        book = self.book
        if book is None or book.decision.ended:
            return
        names = {int(getattr(signal, name)): name for name in STOP_SIGNALS}
        sent = next((names[s] for s in self.received if s in names), None) or names.get(stopped)
        ending = self.ending  # node 0 stopped on purpose, as this member heard it (node.py)
        if code == 0:
            ended = "the job finished" + (f" after {book.restarts} recovery(ies)" if book.restarts else "")
            tail = "" if book.role in (None, Role.TRAINING) else f"; this node was not needed ({book.role.value})"
        elif sent is not None:
            ended = f"stopped by {said_stop(sent)} on node {self.identity}"
            tail = ("; node 0 decides what follows: the job goes on without this node when a spare or the minimum "
                    "allows, else it ends" if self.identity != 0 else
                    "" if sent == "SIGINT" or stop_asked(self.settings) else  # a person's stop ends the job
                    f"; the others wait up to {self.settings.get('wait_timeout', 600):g}s (wait_timeout) for node 0 "
                    "to come back (its restart policy: an eviction's SIGTERM); to end the job now: "
                    + end_job_hint())
        elif ending is not None:
            ended, tail = ending, ""
        elif failed is not None:  # said by the error's own line, which names the exit
            self.keep(decide.closed(book, code, time.time(), failed, rejoin=True))
            return True
        else:
            return
        self.keep(decide.closed(book, code, time.time(), ended, rejoin=bool(code and sent is not None and tail)))
        said = ended if code == 0 else f"this node stopped: {ended}" if tail else f"the job ends: {ended}"
        self.log(f"recovery: {said}{tail}; this node exits {code}")

    def ended_before(self, plan):
        """The exit code of a job that already ended in this container (its kept book closed: done, stopped on
        purpose, or given up) when a restart brought the container back, or None: a restart does not start it
        again over the same checkpoints, a new launch starts anew.

        The compose files restart a container on any non-zero exit (``restart: on-failure:N``, so a crashed
        node comes back), the StatefulSet's kubelet on any exit (``restartPolicy: Always``): a job that finished,
        was stopped on purpose or gave up must not start again as a new one, which would retrain over the
        finished run's saves and only loop (walk17b B15). An end that left the job going (``rejoin``: this node's
        eviction, node 0 gone) checks in again. A ``nodeweave run`` (a run id) is a new job the user asked for;
        so is a start after the book was removed, and any start :meth:`_new_launch` tells from a restart (walk18b
        B10, B11, B20: on a bare host or under Slurm /tmp outlives the job, and every later job of the same id
        and port was skipped, exit 0). A job that finished or was stopped, in a pod, then waits idle for the
        pod's stop: any exit would start it again (a job that gave up exits with its code, a failure the
        kubelet's back-off shows)."""
        book = last_book(self.settings, plan.topology)  # this job's book, never another's beside it (walk10 B8)
        if self.settings.get("run_id") or not book or not book.decision.ended or book.rejoin:
            return None
        code = book.code or 0
        ended = book.ended  # an older nodeweave's record said it in "why": Book.from_json reads it as ``ended``
        from ..running.runstate import job_dir_of
        from .setup import RECORD

        record = os.path.join(job_dir_of(self.settings.env, plan.topology), RECORD)
        new = self._new_launch(plan)
        if new:
            self.log(f"recovery: {record} is of a launch of job {plan.topology.job_id} that ended (exit {code}: "
                     f"{ended}); this start is a new launch, not a restart ({new}): the job starts anew")
            return None
        from ..detection.host import in_kubernetes
        from ..detection.sysfs import Root

        pod = in_kubernetes(Root(self.settings.sysroot), self.settings.env)
        anew = ("delete the pod (its StatefulSet makes a new one)" if pod else "recreate the containers (nodeweave up)")
        idle = pod and book.decision is not Decision.STOP
        self.log(f"recovery: this container's job already ended (exit {code}: {ended}); a restart brought "
                 f"it back (the same container, the same command): not starting it again. To start the job anew: "
                 f"{anew}, start it with `nodeweave run` (a run id), or remove {record}"
                 + ("; waiting idle for this pod's stop (its restartPolicy Always would start it again at any "
                    "exit)" if idle else ""))
        if idle:
            wait_for_stop()
        return code

    def _new_launch(self, plan):
        """Why this start is a new launch rather than a restart of the container whose job ended, in words, or
        None (docs/recovery.md "Restart policies"): only a container engine or the kubelet restarts an
        entrypoint, in the same container (``host.container_key``) with the same command, launcher and
        checkpoint folder. A bare host (no container) restarts nothing, nor does Slurm (a requeue is a new
        launch); a recreated container, another command or folder is a new launch. A record an older nodeweave
        kept (no ``launch``) in a container is taken as a restart's, as before."""
        from .setup import kept_launch, this_launch

        now = this_launch(self.settings)
        if self.settings.env.get("SLURM_JOB_ID"):
            return "a Slurm task: Slurm restarts none, a requeue is a new launch"
        if now["container"] is None:
            return "no container: nothing restarts an entrypoint on a bare host"
        then = kept_launch(self.settings, plan.topology)
        if then is None:
            return None
        if then.get("container") != now["container"]:
            return "another container: the containers were recreated"
        said = {"command": "the command", "launcher": "the launcher", "checkpoint_dir": "the checkpoint folder"}
        for key, what in said.items():
            if then.get(key) != now[key]:
                was = " ".join(then[key]) if key == "command" and isinstance(then.get(key), list) else then.get(key)
                return f"{what} differs: {was or 'none'} then, " \
                       f"{' '.join(now[key]) if key == 'command' else now[key] or 'none'} now"
        return None

    def _generation_plan(self, book, verdict):
        """This node's plan for the book's generation: its rank among the members, their count, the master."""
        from ..core import build_plan
        from ..planning.launch import apply_counts

        settings = generation_settings(self.settings, book, self.identity, self.plan.topology)
        plan = build_plan(settings)
        apply_counts(plan, verdict)
        return plan, settings

    def launch(self, book, verdict, watch):
        """Start this node's launcher for the generation under ``watch`` (``loop.Start``'s steps); its exit code.
        A start that fails here (the plan, the files, the launcher not found) is reported to node 0 as this
        node's fault."""
        pause = watch.silent_since_verdict()
        if pause is not None:  # stopped since the verdict: node 0 went on (or ended) without it (walk15b B13)
            return watch.declared_lost(pause)
        watch.start()  # beats go on while the generation's plan is made (DNS can take seconds under load)
        try:
            plan, settings = self._generation_plan(book, verdict)
            added = {"NODEWEAVE_RESTART_COUNT": str(book.generation)}
            if settings.get("checkpoint_dir"):  # where node 0 looks is where the script saves, however it was given
                added["NODEWEAVE_CHECKPOINT_DIR"] = settings.get("checkpoint_dir")
            if book.resume_from:
                added["NODEWEAVE_RESUME_FROM"] = book.resume_from
            launch = self.start.ready(plan, settings, watch, generation=book.generation, environ=added,
                                      identity=self.identity)
        except EntrypointError as err:
            from ..running.symptoms import start_failure

            self.log(f"error: {err}")
            return watch.finish(err.exit_code, f"its start failed: {err}", [str(err)], error=start_failure(err)) \
                or err.exit_code
        return self.start.go(launch, received=self.received, warm=self.warm)

    def watch_aside(self, watch):
        """Node 0 sitting a generation out (hub only) watches the members' ranks as a training node 0 does: the
        stall watch on ``watch`` with no ranks of its own, so stalls and stragglers are judged, `--status`,
        /status.json and top list the ranks, and goodput times the generation's training from its first
        collective (walk13b B7: with node 0 left out, `"ranks": []`, no stall judged, and minutes of node 1's
        training counted as recovery). Off when the stall watch is (NODEWEAVE_STALL_WARN 0), as for any node."""
        self.start.watch_aside(self.plan, self.settings, watch, identity=self.identity)

    def hold_warm(self, role):
        """A node that may train in a later generation (a spare, a node left out once) keeps its launcher held
        meanwhile (``running/warm.py``); a node out for good keeps none."""
        if role not in (Role.SPARE, Role.LEFT_OUT):
            self.warm.discard()
            return
        from ..running.supervise import resolve

        environ = self.plan.environ(self.settings.env)
        try:
            executable = resolve(self.plan.launch.argv[0], environ.get("PATH", os.defpath))
        except EntrypointError:
            return  # its launch will say so, if it ever trains
        self.warm.hold(executable, environ)

    def _say_role(self, book, role):
        why = book.why.get(self.identity)
        if role is Role.SPARE and book.present and self.identity not in book.present:  # joined late (decide.joined)
            self.log(f"generation {book.generation}: this node came after the generation started (a spare late "
                     "for the deadline): a spare, it waits to take a left-out node's place")
        elif role is Role.SPARE:
            self.log(f"generation {book.generation}: this node is a spare: it waits to take a left-out node's "
                     "place")
        elif role is Role.LEFT_OUT and why is None:  # never at fault: it did not check in again in time
            self.log(f"generation {book.generation}: this node came after the generation started: it waits, and "
                     "takes a place as a spare at the next generation")
        elif role is Role.LEFT_OUT:
            self.log(f"generation {book.generation}: this node is LEFT OUT of the job: {why}; it waits, and may "
                     "come back as a spare (left out twice: never)")
        else:
            self.log(f"generation {book.generation}: this node is LEFT OUT for good (left out {decide.FOR_GOOD} "
                     f"times; last: {why}); it waits idle until the job ends ({status_hint()} shows it)")


def wait_for_stop():
    """Block until a stop signal (the kubelet's SIGTERM, Ctrl-C) reaches this idle node."""
    import signal

    stops = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    signal.sigwait(stops)
