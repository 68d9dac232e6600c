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

from .errors import EXIT_NOT_EXECUTABLE, EntrypointError, UsageError
from .model import SUPERVISED
from .planning.contract import STALL_WARN_S


def run(settings, log):
    """The node's start to its exit: the launcher's exit code (an exec'd launcher never returns)."""
    from .metrics import arm  # node 0's /metrics and goodput timeline, once it watches (docs/observability.md)

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
    ended = policy.ended_before()
    if ended is not None:
        return ended
    start.prepare(policy.requires)
    return policy.run()


class OneGeneration:
    """Recovery off: one generation, then stop — the check-in once, one launch, its exit code."""

    def __init__(self, start):
        self.start = start

    def ended_before(self):
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

    def prepare(self, requires=None):
        """Plan the node, check its script, make the check-in ready (node 0 listens from here on), wait for the
        master, check rank 0 is this machine; ``requires(plan)`` is the policy's own refusal. Raises
        EntrypointError with the documented exit code."""
        from .planning.consistency import missing_script
        from .recovery.roles import plan_node, planning_settings

        settings = self.settings
        try:
            plan = plan_node(settings)
        except EntrypointError as err:
            from .checkin.refusal import tell_node_0  # node 0 would otherwise wait out its deadline for this node

            tell_node_0(settings, err, self.log)
            raise
        problem = missing_script(plan.launch.launcher, settings.command, os.getcwd())
        if problem:  # here, once, not in every rank the launcher would start
            raise UsageError(problem)
        if requires is not None:
            requires(plan)
        if plan.topology.is_master and plan.topology.nnodes_max > 1 and plan.launch.launcher in SUPERVISED:
            from .running.selfcheck import check_master_is_self  # only rank 0 of a multi-node job pays for it

            check_master_is_self(plan, self.root)  # before node 0 listens: a refusal needs no port
        self.checkin_settings = planning_settings(settings)
        if plan.exchange and plan.exchange["enabled"]:
            from .checkin.session import CheckIn  # sockets, threads, hashing: only a multi-node start pays for them

            self.checkin = CheckIn(plan, self.checkin_settings, self.root, self.log)
        plan = self._wait(plan)
        self.plan = plan
        return plan

    def _wait(self, plan):
        """A worker waits for the master (its check-in exchange) to accept connections; the plan, made again
        when the master's name resolves only now (the route toward it)."""
        wait = plan.launch.wait
        if not wait:
            return plan
        from .recovery.roles import plan_node
        from .running.wait import wait_for

        what = wait.get("what", "master")
        self.log(f"waiting for {what} {wait['host']}:{wait['port']} (up to {wait['timeout_s']}s)")
        waited = wait_for(wait["host"], wait["port"], wait["timeout_s"], log=self.log, first_delay=0.02, what=what,
                          steady_s=3.0)
        self.log(f"{what} {wait['host']}:{wait['port']} accepts connections after {waited:.1f}s")
        if plan.node.interface_reason and "does not resolve" in plan.node.interface_reason:
            plan = plan_node(self.settings)  # the master resolves now: plan the route again
            if self.checkin is not None:
                self.checkin.replan(plan)
        return plan

    def launch(self, plan, settings, watch, session=None):
        """One generation's launch from its plan: its exit code (an exec'd launcher never returns)."""
        return self.go(self.ready(plan, settings, watch, session=session))

    def ready(self, plan, settings, watch, session=None, generation=None, environ=None):
        """Say the plan, write its files, record the run, arm the stall watch: the :class:`Launch`.

        ``generation`` (recovery): its number, said before the summary; warnings are said at the first only
        (every generation's plan repeats them). ``environ``: variables added for this generation."""
        from .announce import summary, write_files
        from .running.supervise import resolve

        if not generation:
            for warning in plan.warnings:
                self.log(f"warning: {warning}")
        said = summary(plan, session, watched=watched(plan, settings))
        self.log(said if generation is None else f"generation {generation}: {said}")
        write_files(plan.launch.files)
        if settings.get("run_id"):
            from .running.runstate import record_run

            record_run(settings, plan)
        environ = dict(plan.environ(settings.env), **(environ or {}))
        if watch is not None:
            from .stall.setup import attach  # the ranks' stall hook rides on the heartbeat

            environ = attach(watch, plan, settings, environ, self.log)
        elif settings.get("stall_warn", STALL_WARN_S):
            from .stall.local import watch_alone  # no heartbeat: this node judges its own ranks

            watch, environ = watch_alone(plan, settings, environ, self.log)
        executable = resolve(plan.launch.argv[0], environ.get("PATH", os.defpath))
        return Launch(plan, executable, plan.launch.argv, environ, watch)

    @staticmethod
    def go(launch, received=None, warm=None):
        """Run the launcher as this process's only child (supervised: signals passed on once, a stop is 128+N),
        or, a plain ``command`` nobody watches, exec it in this process's place."""
        if launch.plan.launch.launcher in SUPERVISED or launch.watch is not None:
            from .running.supervise import run_supervised

            return run_supervised(launch.executable, launch.argv, launch.environ, watch=launch.watch,
                                  received=received, warm=warm)
        try:
            os.execve(launch.executable, launch.argv, launch.environ)
        except OSError as err:
            raise EntrypointError(f"cannot exec {launch.argv[0]!r}: {err.strerror}", EXIT_NOT_EXECUTABLE) from None


def watched(plan, settings):
    """Whether the stall watch will supervise even a ``command`` launcher (stall/local.py)."""
    if not settings.get("stall_warn", STALL_WARN_S) or plan.launch.launcher != "command":
        return False
    from .stall.local import starts_ranks

    return starts_ranks(plan.launch.argv, plan.environ(settings.env))
