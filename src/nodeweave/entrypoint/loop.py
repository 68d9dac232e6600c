"""The entrypoint's one way from a start to the launcher's exit: prepare the node once, then its generations.

Every start — recovery on or off, a training node, a spare, a single node with no check-in — runs
:func:`run`. :class:`Start` holds each start step once: :meth:`Start.prepare` (this node's plan through
``recovery/roles.plan_node``, the training script checked, the check-in made ready, the wait for the
master, the self-check) and :meth:`Start.launch` (the warnings and summary, the launch's files, the run's
record, the stall watch, the launcher supervised or exec'd). A policy says how many generations run:

- recovery off, :class:`OneGeneration`: one generation, then stop. The check-in once
  (``CheckIn.run``), the launch; a plain ``command`` launcher nobody watches replaces this process
  (``os.execve``: tini's signals reach it, its exit code is the container's); a supervised one's exit code
  is returned (128+N for a stop).
- recovery on, ``recovery/generations.Generations``: generations until the job finishes or the restart
  budget or the no-progress brake ends it; each generation is checked in through the same ``CheckIn``
  and launched through the same :meth:`Start.launch` (docs/recovery.md).

Recovery does not import this module: the loop hands it the :class:`Start` (``recovery`` stands below).
"""

import os

from .errors import EXIT_NOT_EXECUTABLE, EXIT_TOPOLOGY, EntrypointError, TopologyError
from .hostport import host_port
from .model import PATHS_FOR_RANKS, SUPERVISED
from .planning.contract import STALL_WARN_S


def run(settings, log):
    """The node's start to its exit: the launcher's exit code (an exec'd launcher never returns)."""
    from .metrics import arm  # node 0's /metrics and goodput timeline, once it watches (docs/observability.md)
    from .running.supervise import stops_said

    stops_said()  # a stop before any launcher (the check-in, a spare's wait) ends the node in its one line too
    try:
        arm(settings, log)
        if settings.get("run_id"):
            from .running.runstate import begin_run  # a run `nodeweave run` started: recorded before anything else

            begin_run(settings)
        start = Start(settings, log)
        if settings.get("recovery"):
            from .recovery.generations import Generations  # a fault starts the next generation (docs/recovery.md)

            policy = Generations(settings, log, start)
        else:
            policy = OneGeneration(start)
        ended = start.prepare(policy.requires, policy.ended_before)
        if ended is not None:
            return ended
    except EntrypointError as err:
        # refused before its check-in: the settings go with the refusal (``refused_before_checkin``)
        err.settings = settings
        raise
    return policy.run()


def refused_before_checkin(err, log):
    """Tell node 0 why this node will not start: every refusal before the check-in carries the settings it was
    made with (``err.settings``: a setting refused as it was read, or a start step of :func:`run`), so node 0
    and every other node stop within seconds naming it instead of waiting out the deadline (walk7 B48)."""
    from .checkin.refusal import tell_node_0

    tell_node_0(err.settings, err, log)


class OneGeneration:
    """Recovery off: one generation, then stop — the check-in once, one launch, its exit code."""

    def __init__(self, start):
        self.start = start

    def ended_before(self, plan):
        return None  # nothing is kept between starts without recovery

    def requires(self, plan):
        """Any plan runs one generation (single node, the exchange off: no check-in)."""

    def run(self):
        start, plan, session = self.start, self.start.plan, None
        if start.checkin is not None:
            from .planning.launch import apply_counts

            session = start.checkin.run()
            apply_counts(plan, session.verdict)
        watch = session.watch if session is not None else None
        return start.launch(plan, start.settings, watch, session=session)


def absolute_for_ranks(environ):
    """``environ`` with each of :data:`model.PATHS_FOR_RANKS` it holds made absolute from this node's working folder
    (walk13b B17: a relative NODEWEAVE_RESUME_FROM failed in a script that had changed folder). Empty stays empty."""
    return {name: (os.path.abspath(value) if name in PATHS_FOR_RANKS and value else value)
            for name, value in environ.items()}


class Launch:
    """One generation's launcher, made ready: what :meth:`Start.go` runs or execs."""

    __slots__ = ("plan", "executable", "argv", "environ", "watch")

    def __init__(self, plan, executable, argv, environ, watch):
        self.plan, self.executable, self.argv, self.environ, self.watch = plan, executable, argv, environ, watch


class Start:
    """This node's start steps, each once: :meth:`prepare` before the first generation, :meth:`launch` (or
    :meth:`ready` then :meth:`go`) for every generation. After :meth:`prepare`: ``plan`` (the node's own,
    its identity among nodes + spares under recovery), ``checkin`` (None without the exchange),
    ``checkin_settings`` (the settings it checks in with), ``root``."""

    def __init__(self, settings, log):
        from .detection.sysfs import Root

        self.settings, self.log = settings, log
        self.root = Root(settings.sysroot)
        self.plan = self.checkin = self.checkin_settings = None

    def prepare(self, requires=None, ended_before=None):
        """Plan the node, check its script, make the check-in ready (node 0 listens from here on), wait for the
        master, check rank 0 is this machine; ``requires(plan)`` is the policy's own refusal. Raises
        EntrypointError with the documented exit code. ``ended_before(plan)``: the exit code of a job this
        container already ended (its records are the plan's job's: ``runstate.job_dir``), returned at once
        before anything else; None otherwise."""
        from .planning.consistency import start_problem
        from .recovery.roles import plan_node, planning_settings

        settings = self.settings
        plan = plan_node(settings)  # a refusal from here on reaches node 0 through run's err.settings
        ended = ended_before(plan) if ended_before is not None else None
        if ended is not None:
            return ended
        problem = start_problem(plan.launch, settings, os.getcwd())
        if problem:  # here, once, before any wait: not in every rank the launcher would start, nor after check-in
            raise problem
        own = None  # node 0's own refusal of the job, said to every node through its check-in
        if requires is not None:
            try:
                requires(plan)
            except EntrypointError as err:  # recovery's checkpoint_dir held by another job now (walk8 B25)
                if not (plan.topology.is_master and err.exit_code == EXIT_TOPOLOGY):
                    raise
                own = err
        if plan.topology.is_master and plan.launch.launcher in SUPERVISED:  # one node too (walk9 B24)
            from .running.selfcheck import check_master_is_self  # only rank 0 pays for it

            check_master_is_self(plan, self.root)  # before node 0 listens: a refusal needs no port
            from .running.selfcheck import master_port_busy

            busy = master_port_busy(plan, self.root)  # walk8 B13: torchrun's EADDRINUSE traceback, exit 1
            if busy and settings.get("recovery"):
                busy = self._leftover_port_freed(plan, busy)
            own = own or (TopologyError(busy) if busy else None)
        self.checkin_settings = planning_settings(settings)
        exchange = plan.exchange and plan.exchange["enabled"]
        if own and not exchange:  # nobody to tell: this node's own refusal
            raise own
        if exchange:
            from .checkin.session import CheckIn  # sockets, threads, hashing: only a multi-node start pays for them

            self.checkin = CheckIn(plan, self.checkin_settings, self.root, self.log)
            if own and self.checkin.hub is not None:
                # node 0 refuses its own start through its exchange: every node exits 3 at once, told why (a busy
                # master port, walk8 B13; a checkpoint folder another job holds, replay8 N1: its nodes waited out
                # their deadline and blamed MASTER_ADDR)
                self.log(f"error: {own}")
                self.checkin.hub.refusals.append({"host": plan.node.hostname, "seen": "node 0 itself",
                                                  "reason": str(own), "rank": 0, "own": True})
            elif own:
                raise own
        self.plan = self._wait(plan)
        return None

    def _leftover_port_freed(self, plan, busy, grace=60.0):
        """``busy``, or None once the master port frees within ``grace`` seconds, for a node 0 that comes back under
        recovery (it kept a book): its own launcher of before, orphaned when the entrypoint was killed, holds the
        store's port until its ranks stop, seconds later; refusing then ended the job a restart would resume."""
        import time

        from .recovery.setup import last_book
        from .running.selfcheck import master_port_busy

        if last_book(self.settings, plan.topology) is None:
            return busy
        if plan.exchange and plan.exchange.get("enabled"):
            # the live node 0 of this very job answers on its exchange port: a second start, said at once, not a
            # minute waited for "its own launcher of before" (walk12b B12)
            from .checkin.exchange import second_node_0

            second = second_node_0(plan.exchange["port"], plan.topology.job_id)
            if second is not None:
                raise second
        self.log(f"{busy.split(';')[0]}: this node kept a recovery record, so its own launcher of before may hold "
                 f"it; waiting up to {grace:.0f} s for it to end")
        deadline = time.monotonic() + grace
        while busy and time.monotonic() < deadline:
            time.sleep(0.5)
            busy = master_port_busy(plan, self.root)
        return busy

    def _wait(self, plan):
        """A worker waits for the master (its check-in exchange) to accept connections; the plan, made again
        when the master's name resolves only now (the route toward it)."""
        wait = plan.launch.wait
        if not wait:
            return plan
        from .recovery.roles import plan_node
        from .running.wait import after_start_hint, wait_for

        what = wait.get("what", "master")
        self.log(f"waiting for {what} {host_port(wait['host'], wait['port'])} (up to {wait['timeout_s']}s)")
        waited = wait_for(wait["host"], wait["port"], wait["timeout_s"], log=self.log, first_delay=0.02, what=what,
                          steady_s=3.0, hint=after_start_hint(plan.launch.launcher, what))
        self.log(f"{what} {host_port(wait['host'], wait['port'])} accepts connections after {waited:.1f}s")
        if plan.node.interface_reason and "does not resolve" in plan.node.interface_reason:
            plan = plan_node(self.settings)  # the master resolves now: plan the route again
            if self.checkin is not None:
                self.checkin.replan(plan)
        return plan

    def launch(self, plan, settings, watch, session=None):
        """One generation's launch from its plan: its exit code (an exec'd launcher never returns)."""
        return self.go(self.ready(plan, settings, watch, session=session))

    def ready(self, plan, settings, watch, session=None, generation=None, environ=None, identity=None):
        """Say the plan, write its files, record the run, arm the stall watch: the :class:`Launch`.

        ``generation`` (recovery): its number, said before the summary; warnings are said at the first only
        (every generation's plan repeats them). ``environ``: variables added for this generation. ``identity``:
        the node's index among nodes + spares, said beside its training rank (``announce.summary``)."""
        from .announce import summary, write_files
        from .running.supervise import resolve
        from .stall.local import watched

        if not generation:
            for warning in plan.warnings:
                self.log(f"warning: {warning}")
        said = summary(plan, session, watched=watched(plan, settings), identity=identity)
        self.log(said if generation is None else f"generation {generation}: {said}")
        write_files(plan.launch.files)
        if settings.get("run_id"):
            from .running.runstate import record_run

            record_run(settings, plan)
        environ = dict(plan.environ(settings.env), **(environ or {}))
        if watch is not None:
            from .stall.setup import attach  # the ranks' stall hook rides on the heartbeat

            environ = attach(watch, plan, settings, environ, self.log, identity=identity)
        elif settings.get("stall_warn", STALL_WARN_S):
            from .stall.local import watch_alone  # no heartbeat: this node judges its own ranks

            watch, environ = watch_alone(plan, settings, environ, self.log)
        environ = absolute_for_ranks(environ)
        executable = resolve(plan.launch.argv[0], environ.get("PATH", os.defpath))
        return Launch(plan, executable, plan.launch.argv, environ, watch)

    def watch_aside(self, plan, settings, watch, identity=None):
        """Node 0 sitting a generation out (hub only): the stall watch on ``watch`` with no ranks of its own,
        reading the members' (``recovery.generations.Generations.watch_aside``, walk13b B7)."""
        from .stall.setup import attach

        attach(watch, plan, settings, {}, self.log, identity=identity)

    @staticmethod
    def go(launch, received=None, warm=None):
        """Run the launcher as this process's only child (supervised: signals passed on once, a stop is 128+N),
        or, a plain ``command`` nobody watches, exec it in this process's place."""
        if launch.plan.launch.launcher in SUPERVISED or launch.watch is not None:
            from .running.runstate import job_dir_of
            from .running.supervise import run_supervised

            return run_supervised(launch.executable, launch.argv, launch.environ, watch=launch.watch,
                                  received=received, warm=warm,
                                  records=job_dir_of(launch.environ, launch.plan.topology))
        try:
            os.execve(launch.executable, launch.argv, launch.environ)
        except OSError as err:
            raise EntrypointError(f"cannot exec {launch.argv[0]!r}: {err.strerror}", EXIT_NOT_EXECUTABLE) from None

