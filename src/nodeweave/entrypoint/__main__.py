"""``nodeweave-entrypoint``: plan, explain or wait, then exec the launcher.

The image runs ``tini -g -- nodeweave-entrypoint train.py ...``. A plain
command replaces this process (``os.execve``), so tini's signals reach it
directly and its exit code is the container's. torchrun, deepspeed and
accelerate run as its only child instead (``supervise.py`` says why): signals
are passed on once and a stop shows as 128+N, not as the launcher's 1.
"""

import os
import sys

from .planning.consistency import missing_script
from .errors import EXIT_NOT_EXECUTABLE, EXIT_OK, EntrypointError, UsageError, last_resort
from .planning.settings import HelpRequested, VersionRequested, parse, usage
from .model import SUPERVISED
from .planning.contract import STALL_WARN_S
from .running.supervise import resolve, run_supervised
from .detection.sysfs import Root
from .announce import PROG, say as _say, summary as _summary, write_files as _write_files

def _plan_node(settings, partial=False):
    """This node's plan and role: the one way every path (start, hold, --explain, --status) plans it."""
    from .recovery.roles import plan_node

    return plan_node(settings, partial=partial)


def _watched(plan, settings):
    """Whether the stall watch will supervise even a ``command`` launcher (stall/local.py)."""
    if not settings.get("stall_warn", STALL_WARN_S) or plan.launch.launcher != "command":
        return False
    from .stall.local import starts_ranks

    return starts_ranks(plan.launch.argv, plan.environ(settings.env))


def run(settings):
    """Plan, wait if this is a worker, write files, then exec (or supervise) the launcher.

    Returns the exit code of a supervised launcher; an exec'd one never returns.
    """
    from .metrics import arm  # node 0's /metrics and goodput timeline, once it watches (docs/observability.md)

    arm(settings, _say)
    if settings.get("run_id"):
        from .running.runstate import begin_run  # a run `nodeweave run` started: recorded before anything else

        begin_run(settings)
    if settings.get("recovery"):
        from .recovery.generations import Generations  # a fault starts the next generation (docs/recovery.md)

        return Generations(settings, _say).run()
    try:
        plan = _plan_node(settings)
    except EntrypointError as err:
        from .checkin.refusal import tell_node_0  # node 0 would otherwise wait out its deadline for this node

        tell_node_0(settings, err, _say)
        raise
    problem = missing_script(plan.launch.launcher, settings.command, os.getcwd())
    if problem:  # here, once, not in every rank the launcher would start
        raise UsageError(problem)
    if plan.topology.is_master and plan.topology.nnodes_max > 1 and plan.launch.launcher in SUPERVISED:
        from .running.selfcheck import check_master_is_self  # only rank 0 of a multi-node job pays for it

        check_master_is_self(plan, Root(settings.sysroot))  # before node 0 listens: a refusal needs no port
    checkin = None
    if plan.exchange and plan.exchange["enabled"]:
        from .checkin.session import CheckIn  # sockets, threads, hashing: only a multi-node start pays for them

        checkin = CheckIn(plan, settings, Root(settings.sysroot), _say)  # node 0 listens from here on
    wait = plan.launch.wait
    if wait:
        from .running.wait import wait_for
        what = wait.get("what", "master")
        _say(f"waiting for {what} {wait['host']}:{wait['port']} (up to {wait['timeout_s']}s)")
        waited = wait_for(wait["host"], wait["port"], wait["timeout_s"], log=_say, first_delay=0.02, what=what,
                          steady_s=3.0)
        _say(f"{what} {wait['host']}:{wait['port']} accepts connections after {waited:.1f}s")
        if plan.node.interface_reason and "does not resolve" in plan.node.interface_reason:
            plan = _plan_node(settings)  # the master resolves now: plan the route again
            if checkin is not None:
                checkin.replan(plan)
    session = None
    if checkin is not None:
        from .planning.launch import apply_counts

        session = checkin.run()
        apply_counts(plan, session.verdict)
    for warning in plan.warnings:
        _say(f"warning: {warning}")
    _say(_summary(plan, session, watched=_watched(plan, settings)))
    _write_files(plan.launch.files)
    if settings.get("run_id"):
        from .running.runstate import record_run

        record_run(settings, plan)
    argv = plan.launch.argv
    environ = plan.environ(settings.env)
    watch = session.watch if session is not None else None
    if watch is not None:
        from .stall.setup import attach  # the ranks' stall hook rides on the heartbeat

        environ = attach(watch, plan, settings, environ, _say)
    elif settings.get("stall_warn", STALL_WARN_S):
        from .stall.local import watch_alone  # no heartbeat: this node judges its own ranks

        watch, environ = watch_alone(plan, settings, environ, _say)
    executable = resolve(argv[0], environ.get("PATH", os.defpath))
    if plan.launch.launcher in SUPERVISED or watch is not None:  # the command launcher is exec'd unless watched
        return run_supervised(executable, argv, environ, watch=watch)
    try:
        os.execve(executable, argv, environ)
    except OSError as err:
        raise EntrypointError(f"cannot exec {argv[0]!r}: {err.strerror}", EXIT_NOT_EXECUTABLE) from None


def main(argv=None):
    """The program: a closed pipe, a full disk or an early Ctrl-C end it quietly or in one line (errors.py)."""
    return last_resort(_main, sys.argv[1:] if argv is None else list(argv), PROG)


def _main(argv):
    env = dict(os.environ)
    try:
        if argv[:1] == ["--node"]:
            from .nodeinfo import node_main  # what nodeweave status/stop/run ask this node

            return node_main(argv[1:], env)
        settings = parse(argv, env)
        if settings.status:
            from .checkin.session import print_status

            settings.command = settings.command or ("nodeweave-status",)  # a plan needs one; nothing is launched
            return print_status(settings, _plan_node(settings, partial=True))
        if settings.get("mode") == "hold" and not settings.explain:
            from .hold import hold

            return hold(settings, _say)
        if settings.explain:
            plan = _plan_node(settings, partial=True)
            problem = plan.launch and missing_script(plan.launch.launcher, settings.command, os.getcwd())
            if problem and settings.sysroot == "/":  # a start here stops with exit 2: so does its plan (README)
                plan.errors.append({"message": problem, "exit_code": UsageError(problem).exit_code})
            if plan.launch and plan.exchange is not None:
                from .checkin.session import explain_exchange

                explain_exchange(plan, settings, Root(settings.sysroot))
            if settings.json:
                from .explain import render_json
                sys.stdout.write(render_json(plan))
            else:
                from .explain import render_text
                sys.stdout.write(render_text(plan))
            sys.stdout.flush()
            return plan.errors[0]["exit_code"] if plan.errors else EXIT_OK
        return run(settings)
    except HelpRequested:
        print(usage())
        return EXIT_OK
    except VersionRequested:
        from .. import __version__

        print(f"{PROG} {__version__}")
        return EXIT_OK
    except EntrypointError as err:
        _say(f"error: {err}")
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
