"""Start the launcher so that a stop signal still shows in the container's exit status.

torchrun, deepspeed's launcher and accelerate catch SIGTERM, stop their
workers and exit 1, so a pod stopped by the kubelet or ``docker stop`` would
look like a crash (1) instead of a stop (143), and restart policies, Job
failure policies and dashboards would all misread it. For those launchers the
entrypoint stays as a thin parent: the child execs the launcher in a process
group of its own (so tini's group-wide signal reaches the parent only), the
parent passes each signal on exactly once, and when the launcher ends after a
stop signal the entrypoint exits 128+N, as a process killed by N would. The
``command`` launcher is exec'd outright: a user's program takes its signals
first hand and its status is already the truth (unless the stall watch must
stay beside ranks it starts: ``stall/local.py``).
"""

import os

from ..errors import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EntrypointError
# Signal names, resolved only when supervising: ``signal`` pulls in ``enum``
# (~4 ms here), which the exec path and --explain need not pay for.
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
STOPPING = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")


def _numbers(names):
    import signal

    return tuple(getattr(signal, name) for name in names)


def resolve(program, path):
    """The launcher's file from PATH, or the entrypoint's error (127 not found, 126 not executable)."""
    if "/" in program:  # a path is never looked up in PATH: said as what it is (walk10 A14)
        problem = path_problem(program)
        if problem is None:
            return program
        raise EntrypointError(f"launcher {program!r} cannot be executed: {problem}",
                              EXIT_NOT_EXECUTABLE if os.path.exists(program) else EXIT_NOT_FOUND)
    candidates = [os.path.join(d or ".", program) for d in path.split(os.pathsep)]
    found = [c for c in candidates if os.path.isfile(c)]
    for candidate in found:
        if os.access(candidate, os.X_OK):
            return candidate
    if found:
        raise EntrypointError(f"launcher {program!r} is not executable ({found[0]})", EXIT_NOT_EXECUTABLE)
    raise EntrypointError(
        f"launcher {program!r} not found on PATH ({path}); install it in the image "
        f"or choose another with NODEWEAVE_LAUNCHER", EXIT_NOT_FOUND)


def path_problem(program):
    """Why exec would not start ``program``, a path (it holds a ``/``), or None: it is not there, a link to nothing,
    no regular file (a folder, a pipe, a device: exec's EACCES, walk10 A14: a folder was said "not found on PATH",
    which a path is never looked up in), or not executable. The one judgement of a path that the plan and the start
    (``planning.programs``) and :func:`resolve` share."""
    try:
        mode = os.stat(program).st_mode  # a link followed, as exec follows it
    except OSError:
        mode = None
    if mode is None:
        if os.path.islink(program):
            return f"{program} is a link to {os.readlink(program)!r}, which does not exist"
        return f"{program} does not exist (on this node, from {_here()})"
    import stat

    if not stat.S_ISREG(mode):
        from ..bounded import file_kind

        return f"{program} is {file_kind(mode)}, not a program"
    if not os.access(program, os.X_OK):
        return f"{program} is not executable (chmod +x, or run it through its interpreter: -- python {program})"
    return None


def _here():
    try:
        return os.getcwd()
    except OSError:
        return "a working directory that no longer exists"


def exit_status(wait_status, received):
    """The entrypoint's exit code for the launcher's wait status and the signals passed on."""
    code = os.waitstatus_to_exitcode(wait_status)
    stopping = _numbers(STOPPING)
    stop = next((s for s in received if s in stopping), None)
    if stop is not None and code != 0:  # the stop this process was sent, however its launcher then ended (B18)
        return 128 + int(stop)
    if code < 0:  # killed by a signal: the shell's convention
        return 128 - code
    return code


def _stop_with_parent(parent):
    """Ask Linux to send the launcher SIGTERM if the entrypoint dies first (even by SIGKILL).

    Without it a killed entrypoint would leave torchrun and its workers running;
    with exec they would have died with the PID. ctypes is imported here, in the
    child only, so the entrypoint's own start-up does not pay for it.
    """
    import signal

    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: nothing to ask
    if os.getppid() != parent:  # the entrypoint died before the request took effect
        os._exit(128 + int(signal.SIGTERM))


def how_it_ended(name, wait_status, received):
    """'torchrun exited 1', 'torchrun was killed by SIGKILL', 'torchrun exited 1 after SIGTERM'."""
    import signal

    code = os.waitstatus_to_exitcode(wait_status)
    if code < 0:
        return f"{name} was killed by {_signal_name(signal, -code)}"
    after = f" after {_signal_name(signal, received[0])}" if received else ""
    return f"{name} exited {code}{after}"


def launcher_gone(previous):
    """Once the launcher is reaped, nothing is left to forward a signal to: a stop (SIGTERM, SIGINT, SIGHUP,
    SIGQUIT) ends this process with 128+N, said in one line, whatever it waits for next (node 0's next generation,
    the hear-back, a stop of the others), and the other signals go back to what they did before the launch.
    (walk9 B23: the forwarding handler stayed, so a training node waiting for node 0 to come back took SIGTERM,
    SIGINT and SIGHUP to a launcher long gone, and only SIGKILL ended it.) ``previous``: signal -> handler."""
    import signal

    stopping = _numbers(STOPPING)
    for sig, handler in previous.items():
        signal.signal(sig, stop_waiting if sig in stopping else handler)


def said_stopped(stopped, code, aside=None, others=None, how=None):
    """The one line a node sent a stop signal says once its launcher ended (every watch's: walk9 B9, walk10 B9):
    the signal, how the launcher ended (``how_it_ended``'s words, as node 0's line and the book say it) apart from
    this node's own exit code (walk16b B3: "launcher ended (exit 143)" beside node 0's "torchrun exited 1"), what
    the others hear, and the file holding the launcher's tracebacks of it."""
    ctrl_c = " (Ctrl-C)" if stopped == "SIGINT" else ""
    ended = f"{how}; this node exits {code}" if how else f"this node exits {code}"
    return (f"stopped on {stopped}{ctrl_c}: this node's launcher ended ({ended})" +
            (f"; {others}" if others else "") +
            (f"; the launcher's output after the signal (its traceback of it): {aside}" if aside else ""))


def stops_said():
    """From the node's start: a stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT) with no launcher running ends it with 128+N
    in one line (:func:`stop_waiting`), as :func:`launcher_gone` says it once a launcher is reaped: node 0 waiting at
    its check-in, a node waiting for node 0, a spare waiting to be called (replay10 B23: those ended 143 by the
    default action, atexit's work undone, or 130 by a KeyboardInterrupt, without a word). A launch forwards them to
    its launcher meanwhile (``forward``); a hold sets its own. The C module ``_signal``: the public ``signal``
    imports ``enum`` (~5 ms), which the start-up path never pays for (tests/test_entrypoint_cli.py)."""
    import _signal

    for name in STOPPING:
        sig = getattr(_signal, name)
        # SIGHUP ignored by nohup stays ignored: surviving the terminal's hangup is what it asked. SIGINT and SIGQUIT
        # ignored by a script's `&` (pdsh, an ssh loop) are handled all the same: the launch forwards them anyway,
        # and the documented `kill -INT PID` did nothing during the check-in wait only (walk18b B18)
        if name != "SIGHUP" or _signal.getsignal(sig) != _signal.SIG_IGN:
            _signal.signal(sig, stop_waiting)


def stop_waiting(signum, _frame):
    """A stop sent to a node with no launcher running: its exit, 128+N, with atexit's work done (a checkpoint
    folder's claim released, the goodput timeline written)."""
    import signal
    import sys

    sys.stderr.write(f"nodeweave-entrypoint: stopped by {_signal_name(signal, signum)} with no launcher running "
                     f"(exit {128 + signum})\n")
    sys.stderr.flush()
    raise SystemExit(128 + signum)


def stop_aside_path(watch, env, records=None):
    """Where the launcher's output goes once this node is sent a stop signal (Ctrl-C, ``docker stop``): torchrun
    and every rank answer it with a traceback (``SignalException: Process N got signal: 2``,
    ``KeyboardInterrupt``), the launcher's noise about a signal nodeweave passed on, never the cause; the node's
    one stop line names the file instead (walk10 B9). The stall watch's file beside the run when it watches,
    else one in the job's folder ``records`` (``runstate.job_dir``: two jobs sharing a TMPDIR never write one
    file; walk10 B8), else under this node's state folder. None: nowhere to keep it (the output stays where it
    was)."""
    stall = getattr(watch, "stall", None)
    if stall is not None:
        return stall.aside_path()
    from .runstate import AFTER_STOP, state_root

    node = "".join(c for c in str(env.get("NODE_RANK") or "0") if c.isalnum())[:12] or "0"
    return os.path.join(records or state_root(env), AFTER_STOP.format(node=node))


def _signal_name(signal, number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _stopper(pid, reaped, tail=None, ranks=None):
    """stop(grace, aside=None): SIGTERM to the launcher's process group now, SIGKILL after ``grace`` seconds;
    the same to every descendant of the launcher found at the stop (``descendants.py``: torchrun's ranks run in
    sessions of their own), kept in ``ranks`` ({"processes": ..., "deadline": ...}) for :func:`run_supervised`
    to finish once the launcher is gone. With ``aside`` (a file) the launcher's output is diverted there first
    (``capture.OutputTail.divert``). True when the output went aside."""
    import signal
    import threading
    import time

    from . import descendants

    ranks = {} if ranks is None else ranks

    def kill(sig):
        if not reaped:
            try:
                os.killpg(pid, sig)
            except OSError:
                pass

    def kill_all(sig):
        kill(sig)
        descendants.signal_all(ranks.get("processes") or [], sig, signal.SIGCONT)

    def stop(grace, aside=None):
        diverted = bool(aside and tail is not None and tail.divert(aside))
        if not reaped and "processes" not in ranks:
            ranks.update(processes=descendants.find(pid), deadline=time.monotonic() + grace)
        kill(signal.SIGTERM)
        kill(signal.SIGCONT)  # a stopped rank (SIGSTOP, a debugger) takes its SIGTERM now, not at the SIGKILL
        descendants.signal_all(ranks.get("processes") or [], signal.SIGTERM, signal.SIGCONT)
        timer = threading.Timer(grace, kill_all, args=(signal.SIGKILL,))
        timer.daemon = True
        timer.start()
        return diverted
    return stop


def _become_launcher(executable, argv, env, parent, tail, forwarded, saved, keep=None):
    """In the forked child: a process group of its own, default signals, output to the tail's pipes, exec
    (``keep``: a descriptor the exec'd program inherits, the held launcher's link)."""
    import signal

    try:
        os.setpgid(0, 0)
        _stop_with_parent(parent)
        if tail is not None:
            tail.child_side()
        if keep is not None:
            os.set_inheritable(keep, True)
        for sig in forwarded:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
        os.execve(executable, argv, env)
    except OSError as err:
        os.write(2, f"nodeweave-entrypoint: error: cannot exec {executable!r}: {err.strerror}\n".encode())
    os._exit(EXIT_NOT_EXECUTABLE)


def _fork_launcher(executable, argv, env, parent, tail, forwarded, saved, keep=None):
    """Fork; the child becomes the launcher (:func:`_become_launcher`, ``keep`` as there), the parent puts it in
    a process group of its own (whichever runs first does it) and gets its pid."""
    pid = os.fork()
    if pid == 0:
        _become_launcher(executable, argv, env, parent, tail, forwarded, saved, keep)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or already exec'd
    return pid


def spawn_held(python, bootstrap, executable, after_s, env, tail):
    """A launcher process to hold (``warm.py``): forked as :func:`run_supervised` forks the launcher, running
    ``python -c bootstrap LINK EXECUTABLE AFTER_S``; (its pid, the entrypoint's end of its link)."""
    import signal
    import socket

    forwarded = _numbers(FORWARDED)
    ours, theirs = socket.socketpair()
    parent = os.getpid()
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
    try:
        pid = _fork_launcher(python, [python, "-c", bootstrap, str(theirs.fileno()), executable, str(after_s)],
                             env, parent, tail, forwarded, saved, keep=theirs.fileno())  # ours: closed at exec
    except OSError:
        ours.close()
        theirs.close()
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
    theirs.close()
    tail.close_child_ends()
    return pid, ours


def run_supervised(executable, argv, env, watch=None, received=None, warm=None, records=None):
    """Fork, exec the launcher in the child, forward signals, and return the exit code to use.

    With ``watch`` (the heartbeat, ``heartbeat.py``) the launcher's output is
    passed through :class:`capture.OutputTail`, the watch may stop the launcher
    when another node fails, and it hears how the launcher ended. ``received``: a list the caller keeps, to
    learn which signals this process was sent (recovery stops for those, not for a fault). ``warm``
    (``warm.WarmStart``, with ``watch``): a launcher held ready takes this launch, and once this one runs the
    next one is held. ``records``: the job's folder on this node (``runstate.job_dir``), where the launcher's
    output after a stop goes without a stall watch.
    """
    import signal

    pause = watch.silent_since_verdict() if watch is not None else None
    if pause is not None:  # node 0 went past the verdict while this node was stopped: no launch (walk15b B13)
        return watch.declared_lost(pause)
    forwarded = _numbers(FORWARDED)
    received = [] if received is None else received
    parent = os.getpid()
    tail = None
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)  # none may slip between fork and handlers
    warm = warm if watch is not None else None  # a held launcher's output is read through the watch's tail
    held = warm.take(executable, argv, env, os.getcwd()) if warm is not None else None
    if held is not None:  # already running this launch: signals wait for the handlers below
        tail, pid = held.tail, held.pid
    else:
        if watch is not None:
            from .capture import OutputTail

            tail = OutputTail()
        pid = _fork_launcher(executable, argv, env, parent, tail, forwarded, saved)

    stopping = _numbers(STOPPING)
    aside = stop_aside_path(watch, env, records) if tail is not None else None
    diverted = []

    def forward(signum, _frame):
        received.append(signum)
        if aside and signum in stopping and not diverted and tail.divert(aside):
            diverted.append(aside)  # first: the launcher's traceback of this signal goes there (walk10 B9)
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.getsignal(sig) for sig in forwarded}
    for sig in forwarded:
        signal.signal(sig, forward)
    reaped, ranks = [], {}
    if watch is not None:
        tail.parent_side()
        stopper = _stopper(pid, reaped, tail, ranks)
        stopper.aside = aside  # where a stop the watch decides sends the output, with no stall watch's file
        # beating from now on, or since before the plan (recovery's generations); a stop sent wins over what it causes
        watch.launch_with(stopper, lambda: any(s in stopping for s in received))
    signal.pthread_sigmask(signal.SIG_SETMASK, saved)
    if warm is not None:
        warm.hold(executable, env)  # the next generation's launcher, while this one runs
    _, status = os.waitpid(pid, 0)  # PEP 475: retried after each forwarded signal
    reaped.append(pid)
    launcher_gone(previous)
    if ranks.get("processes"):  # stopped: no rank outlives its launcher (the stop's grace, then SIGKILL)
        from .descendants import end

        end(ranks["processes"], ranks["deadline"])
    code = exit_status(status, received)
    if watch is not None:
        from .symptoms import named_first, script_error, secondary

        text = tail.text()
        sent = next((_signal_name(signal, s) for s in received if s in stopping), None)
        # a stop this node was sent: said as one (walk9 B9), naming where the launcher's output went (walk10 B9)
        stop = dict({"stopped": sent}, **({"aside": diverted[0]} if diverted else {})) if sent and code else {}
        how = how_it_ended(os.path.basename(argv[0]), status, received)
        if code and not sent:  # the worker's own error first, in this node's line and every relay (walk9 A3)
            how = named_first(how, text)
            watch.say_launcher_failed(how)
        stopped = watch.finish(code, how, tail.lines(),
                               peer_gone=secondary(text) if code and not sent else None,
                               error=script_error(text) if code and not sent else None, **stop)
        if stopped is not None and not any(s in stopping for s in received):
            return stopped  # a stop this node was sent itself still shows as 128+N
        if not code:  # a clean end: the launcher's known teardown noise said for what it is (walk12c C1)
            from .symptoms import clean_end_noise

            for note in clean_end_noise(text):
                watch.note(note)
    return code
