"""``nodeweave-entrypoint``: start (the one loop, ``loop.py``), hold, explain, or answer ``--status``/``--node``.

The image runs ``tini -g -- nodeweave-entrypoint train.py ...``. A plain
command replaces this process (``os.execve``), so tini's signals reach it
directly and its exit code is the container's. torchrun, deepspeed and
accelerate run as its only child instead (``supervise.py`` says why): signals
are passed on once and a stop shows as 128+N, not as the launcher's 1. Every
path plans this node the one way (``recovery/roles.plan_node``: a spare plans as one).
"""

import os
import sys

from .planning.consistency import missing_script
from .errors import CWD_GONE, EXIT_OK, EXIT_USAGE, EntrypointError, UsageError, cwd_gone, last_resort
from .planning.settings import HelpRequested, VersionRequested, check_no_wait, parse, usage
from .detection.sysfs import Root
from .announce import PROG, say as _say

def _plan_node(settings, partial=False):
    """This node's plan and role: the one way every path (start, hold, --explain, --status) plans it."""
    from .recovery.roles import plan_node

    return plan_node(settings, partial=partial)


def run(settings):
    """Start this node: the one loop every start goes through (``loop.py``): recovery off is one generation,
    recovery on generations until the job ends. Returns the exit code of a supervised launcher; an exec'd one
    never returns."""
    from .loop import run as start_loop

    return start_loop(settings, _say)


def main(argv=None):
    """The program: a closed pipe, a full disk or an early Ctrl-C end it quietly or in one line (errors.py)."""
    try:
        return last_resort(_main, sys.argv[1:] if argv is None else list(argv), PROG)
    except ImportError as err:
        if getattr(err, "name", None) != "dataclasses":
            raise
        # recovery's book is a dataclass (3.7+); every other path runs on the 3.6 an old image may bring
        _say("error: recovery (NODEWEAVE_RECOVERY) needs python3 3.7 or later in the image; this one is {}: "
             "install a newer python3 in the image, or turn recovery off".format(sys.version.split()[0]))
        return EXIT_USAGE


def _main(argv):
    env = dict(os.environ)
    try:
        if argv[:1] == ["--node"] or argv[:1] and argv[0].startswith("--node="):
            from .nodeinfo import node_main  # what nodeweave status/stop/run ask this node

            # --node=ACTION as every other option takes its value (walk14b B5)
            return node_main(argv[1:] if argv[0] == "--node" else [argv[0][len("--node="):], *argv[1:]], env)
        settings = parse(argv, env)
        _check_state_root(settings)
        check_no_wait(settings)
        if settings.status:
            from .checkin.session import print_status

            settings.command = settings.command or ("nodeweave-status",)  # a plan needs one; nothing is launched
            return print_status(settings, _plan_node(settings, partial=True))
        if settings.get("mode") == "hold" and not settings.explain:
            from .hold import hold

            return hold(settings, _say)
        if settings.explain:
            plan = _plan_node(settings, partial=True)
            if settings.get("recovery"):
                from .recovery.roles import shown_plan  # the launch generation 0 runs, not the identity plan

                plan = shown_plan(settings, plan)
            from .faults import fault_rows

            plan.faults = fault_rows(settings, plan)
            problem = plan.launch and missing_script(plan.launch.launcher, settings.command, os.getcwd())
            if problem and settings.sysroot == "/":  # a start here stops with exit 2: so does its plan (README)
                plan.errors.append({"message": problem, "exit_code": UsageError(problem).exit_code})
            if plan.launch and plan.topology is not None and settings.sysroot == "/":
                from .planning.rules import emit
                from .running.selfcheck import master_port_busy

                busy = master_port_busy(plan, Root(settings.sysroot))  # what the start refuses (walk8 B13)
                if busy and (plan.exchange or {}).get("enabled"):
                    from .checkin.exchange import second_node_0

                    second = second_node_0(plan.exchange["port"], plan.topology.job_id)  # walk16b B8: its own
                    if second is not None:
                        emit(plan.warnings, "start-refused-here",
                             f"master port {plan.topology.master_port.value} is held by this job's own node 0: "
                             f"{second}; a start here stops with exit {second.exit_code} before any check-in")
                        busy = None
                if busy:
                    emit(plan.warnings, "master-port-busy", f"{busy}: a start here refuses the job at its check-in, "
                                                            "exit 3 on every node")
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
            if not plan.errors:
                return EXIT_OK
            # a non-zero exit says why on stderr too, as every refusal does, text or JSON (walk9 B6: the line was
            # only inside the plan on stdout, so `--explain > plan.txt` ended 2 with nothing on the terminal)
            more = len(plan.errors) - 1
            _say("error: {}{}".format(plan.errors[0]["message"], " (and {} more in the plan's Errors)".format(more)
                                      if more else ""))
            return plan.errors[0]["exit_code"]
        return run(settings)
    except HelpRequested:
        print(usage())
        return EXIT_OK
    except VersionRequested:
        from .. import __version__

        print(f"{PROG} {__version__}")
        return EXIT_OK
    except EntrypointError as err:
        return _refused(err, argv)
    except FileNotFoundError as err:
        if not cwd_gone(err):
            raise
        return _refused(UsageError(CWD_GONE), argv)  # the plan resolves the script against it (replay11 A30)
    except KeyboardInterrupt:
        return 130
    return EXIT_OK


def _check_state_root(settings):
    """The folder every record of this node goes in ($TMPDIR/nodeweave) judged before anything is written, on
    every path (start, hold, --explain, --status; ``--node`` in ``nodeinfo.node_main``): one rule,
    ``runstate.state_root_problem`` (walk14b B14, B15)."""
    from .systemfolders import check_state_root

    try:
        check_state_root(settings.env)
    except EntrypointError as err:
        err.settings = settings  # node 0 is told, as of any setting refused before the check-in
        raise


def _refused(err, argv):
    """One line on stderr (and, for ``--explain --json``, a plan holding only the refusal); the exit code."""
    if err.settings is not None:  # refused before this node's check-in
        from .loop import refused_before_checkin

        refused_before_checkin(err, _say)
    _say(f"error: {err}")
    if _explain_json(argv):  # a pre-flight script reads one JSON object whatever refused (walk8 B36)
        from .explain import render_json
        from .model import Plan

        refused = Plan()
        refused.errors.append({"message": str(err), "exit_code": err.exit_code})
        sys.stdout.write(render_json(refused))
        sys.stdout.flush()
    return err.exit_code


def _explain_json(argv):
    """Whether the options (before ``--``) ask for ``--explain --json``: read from the words themselves, since a
    refusal as the settings were read leaves no settings to ask."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    return "--explain" in options and "--json" in options


if __name__ == "__main__":
    sys.exit(main())
