"""Whether exec would start this node's launcher program: the one check the plan (``launch.plan_launch``'s
``command-not-found`` warning) and the start (``consistency.start_problem``, exit 127/126 before any wait) share.
Its own module so that both import it and neither the other (they did, a circle)."""

import os


def launcher_missing(launcher, command, settings, setup_too=False):
    """(why, exit code) when exec would not start this node's launcher program (torchrun, deepspeed, accelerate,
    or the command's program), or None; one check for every launcher (walk7 B11: a bare host whose venv is not
    on PATH planned `run torchrun ...`, checked in, then failed on every node). A copy beside this entrypoint's
    Python (the venv it was installed in) is named. With launcher.setup lines None unless ``setup_too``: they
    run first and may put it on PATH."""
    from ..errors import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND

    if settings.get("setup") and not setup_too:
        return None
    program = command[0] if launcher == "command" else launcher
    missing = _program_missing(program, settings)
    if missing is None:
        return None
    said = f"launcher command execs {program!r}, but {missing}" if launcher == "command" else \
        f"launcher {program!r} not found on PATH"  # running/supervise.resolve's words, where exec finds out
    if "/" in program:
        return said, EXIT_NOT_EXECUTABLE if os.path.exists(program) else EXIT_NOT_FOUND
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), program)
    hint = (f" (found {beside} beside this entrypoint's Python: activate its environment, or put "
            f"{os.path.dirname(beside)} on PATH)") if os.path.isfile(beside) and os.access(beside, os.X_OK) else \
        "" if launcher == "command" else \
        f" ({(settings.env or {}).get('PATH') or 'PATH unset'}); install it in the image or choose another with " \
        "NODEWEAVE_LAUNCHER"
    return said + hint, EXIT_NOT_FOUND


def _program_missing(program, settings):
    """Why exec would not start ``program`` on this node, or None: a bare name is looked up in PATH (a file of
    that name in the working directory is not found without ``./``), a path must be executable (walk5 W72).
    Only on a live root: a captured tree's plan is not this machine's."""
    if settings.sysroot not in ("/", "", None):
        return None
    import shutil

    if "/" in program:
        from ..running.supervise import path_problem  # where exec finds out too (running never imports planning)

        return path_problem(program)
    if shutil.which(program, path=(settings.env or {}).get("PATH")) is not None:
        return None
    if os.path.isfile(program):
        return (f"{program} is a file here, not a program on PATH (exec looks bare names up in PATH: write "
                f"./{program}, executable, or use launcher torchrun for a training script)")
    return f"{program} is not on PATH"

