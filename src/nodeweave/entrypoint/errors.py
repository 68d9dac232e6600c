"""Exit codes of ``nodeweave-entrypoint`` and the error that carries them.

A user mistake prints one line, ``nodeweave-entrypoint: error: <message>``,
and exits with its code; never a traceback. Any other code is the launcher's
own (a plain command is exec'd and *is* the process), or 128+N when a
supervised launcher (torchrun, deepspeed, accelerate) ended after signal N.
"""

import errno
import os
import sys


EXIT_OK = 0            # --explain printed the plan
EXIT_FAILURE = 1       # a file the launch needs (the DeepSpeed hostfile), or stdout, could not be written
EXIT_USAGE = 2         # bad input: a malformed flag or variable value, a missing training script
EXIT_TOPOLOGY = 3      # the node cannot tell who it is, or values contradict each other or the machine
EXIT_UNREACHABLE = 4   # the master's address did not resolve or its port did not open before the deadline
EXIT_PEER_FAILED = 5   # another node of the job failed (or vanished): this node stopped its launcher
EXIT_BUSY = 6          # another `nodeweave run` (a recorded --run-id), or another hold, is in progress on this node
EXIT_STALLED = 7       # the job stalled (a rank did not enter the collective the others waited in) for stall_timeout
EXIT_GAVE_UP = 8       # recovery gave up: its restart budget is spent, or too few nodes are left to go on
EXIT_NO_PROGRESS = 9   # recovery stopped: recovery.no_progress_restarts generations without a newer checkpoint
EXIT_JOB_ERROR = 10    # recovery stopped: the script failed the same way on every node (the job's own, no node's)
EXIT_NOT_EXECUTABLE = 126  # the launcher exists but cannot be executed
EXIT_NOT_FOUND = 127   # the launcher (torchrun, deepspeed, accelerate, the command) is not on PATH
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT) before any launcher started
EXIT_PIPE_CLOSED = 141  # stdout was closed early (`| head -1`): the rest of the output is dropped, quietly

# Recovery's own ends (README's exit table: 8, 9, 10): a restarted container or a replacement pod would only end
# the same way, so every restart policy (compose's restart, the Indexed Job's podFailurePolicy) reads this one table.
# Each with when it happens, for the plan's one line on how a job under recovery can end (walk7 B4: the line
# listed 8 and 9 and left 10 out).
RECOVERY_ENDS = {EXIT_GAVE_UP: "when the restarts are spent or too few nodes are left",
                 EXIT_NO_PROGRESS: "after generations without progress",
                 EXIT_JOB_ERROR: "at once when the script raises the same error or exits with the same error line on "
                                 "every node (or their start fails alike, save a refusal of their settings: its own "
                                 "2 or 3): the job's own, no restart spent"}
RECOVERY_FINAL = tuple(RECOVERY_ENDS)


def fault_comes_to(what, code, recovery, whose=""):
    """What a fault that stops every node with ``code`` (a stall's 7) comes to, for every line that says so (the
    stall report's last line, --explain's Faults rows): under recovery a new generation, never ``code`` (walk8
    B38, walk15b B12: the stall_timeout row read "every node stops with exit 7" under recovery)."""
    if not recovery:
        return f"every node stops its launcher after {what}, exit {code}"
    return (f"after {what} every node stops its launcher, a fault for recovery, not exit {code}: its next "
            f"generation starts{whose} (or, with no spare or minimum left to allow it, the job ends, exit "
            f"{EXIT_GAVE_UP})")


EXIT_CODES = {
    EXIT_OK: "--explain printed the plan (or --help)",
    EXIT_FAILURE: "a file the launch needs (the DeepSpeed hostfile under $TMPDIR or /tmp) could not be written, or "
                  "stdout could not (a full disk); also a launcher's own exit 1",
    EXIT_USAGE: "bad input: a flag or variable value; the message names it and what is accepted",
    EXIT_TOPOLOGY: "topology unknown or contradictory: no rank source, values that contradict each other or the "
                   "machine, the Kubernetes API refused, or node 0's check-in refused the job (a table names each "
                   "differing field per node)",
    EXIT_UNREACHABLE: "the master (node 0's check-in exchange) did not resolve or accept connections before the "
                      "deadline (names host and port), or gave no verdict",
    EXIT_PEER_FAILED: "another node failed or vanished during the job; this node stopped its launcher (the message "
                      "names the node, how it ended and its last output)",
    EXIT_BUSY: "another nodeweave run, or another hold, is still in progress on this node (the message names it)",
    EXIT_STALLED: "the job stalled: ranks waited in a collective one rank did not enter for launcher.stall_timeout "
                  "seconds; every node stopped its launcher (the report names the rank and every rank's stack)",
    EXIT_GAVE_UP: "recovery gave up: the restart budget is spent (--recovery-max-restarts, "
                  "NODEWEAVE_RECOVERY_MAX_RESTARTS, the spec's recovery.max_restarts; default 5), or a node was left "
                  "out and no spare or elastic minimum lets the job go on (the one-line verdict names the node and why)",
    EXIT_NO_PROGRESS: "recovery stopped: the no-progress brake's count of generations (--no-progress-restarts, "
                      "NODEWEAVE_NO_PROGRESS_RESTARTS, the spec's recovery.no_progress_restarts) in a row found no "
                      "newer complete checkpoint (\"3 restarts since step 4200, no newer checkpoint\"); do not requeue as is",
    EXIT_JOB_ERROR: "recovery stopped: the script raised the same error, or exited with the same error line, on "
                    "every node of the generation (a folder it cannot write, an exception in the script, a mistyped "
                    "flag): the job's own error, not a node's, so no node "
                    "was left out and no restart spent (the message names the error and the ranks' last lines)",
    EXIT_NOT_EXECUTABLE: "the launcher was found but is not executable",
    EXIT_NOT_FOUND: "the launcher is not installed / not on PATH",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C) before a launcher started",
    EXIT_PIPE_CLOSED: "the reader of stdout closed it early (`| head`): the rest of the output was dropped",
}


class EntrypointError(Exception):
    """An error whose message is for the user, as is, with its exit code."""

    def __init__(self, message, exit_code=EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code
        self.settings = None  # the settings a start was refused with before its check-in (loop.refused_before_checkin)


class UsageError(EntrypointError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)


class TopologyError(EntrypointError):
    def __init__(self, message):
        super().__init__(message, EXIT_TOPOLOGY)


class ExchangeError(Exception):
    """The exchange could not go on with this peer (closed, timed out, garbled, not of this job).

    Not for the user as is: the check-in (``checkin/``) and the stall watch's messages on its
    heartbeat (``stall/exchange.py``) both raise it, so it stands below both."""


def last_resort(main, argv, prog, write_failure=EXIT_FAILURE, pipe_closed=EXIT_PIPE_CLOSED):
    """``main(argv)``, with what no command handles itself turned into a quiet exit or one line, never a traceback.

    Why one wrapper at both programs' mains (``nodeweave`` and ``nodeweave-entrypoint``): any print can
    meet a reader that went away (``| head -1``: EPIPE, exit 141 quietly, as a tool killed by SIGPIPE) or a
    full disk (``> /dev/full``: ENOSPC, one line on stderr), and Ctrl-C can come before a command's own
    handler (exit 130). stdout is flushed here, inside the guard, so the interpreter's exit flush cannot
    print "Exception ignored" afterwards.
    """
    closed = stdout_closed(prog)
    if closed is not None:
        return closed
    try:
        code = main(argv)
        sys.stdout.flush()
        return code
    except (KeyboardInterrupt, OSError) as err:
        return ended_by(err, prog, write_failure, pipe_closed)


def stdout_closed(prog):
    """EXIT_FAILURE after one line on stderr when this program was started with stdout closed (``>&-``: a cron
    line, a unit or a script that closes fds; Python then has no sys.stdout and the first print was a traceback,
    walk10 A17), else None. Said before anything runs: every verb of both programs prints its result there."""
    if sys.stdout is not None:
        return None
    _tell("{}: error: cannot write the output to stdout: it is closed (>&-); send it elsewhere: > FILE, or "
          "> /dev/null to drop it".format(prog))
    return EXIT_FAILURE


def ended_by(err, prog, write_failure=EXIT_FAILURE, pipe_closed=EXIT_PIPE_CLOSED):
    """The exit code for ``err`` that reached a program's main, saying at most one line; other errors re-raised."""
    if isinstance(err, KeyboardInterrupt):
        _drop_stdout()
        return EXIT_INTERRUPTED
    if isinstance(err, BrokenPipeError):
        _drop_stdout()
        return pipe_closed
    if not is_output_failure(err):
        raise err
    if not _stdout_is_a_file():  # a terminal or a pipe fills no disk: the write that failed was another file's
        _tell("{}: error: cannot write a file: {} (a folder it writes in is on a full or failing disk: free space "
              "there)".format(prog, err.strerror or err))
        return write_failure
    _drop_stdout()
    _tell("{}: error: cannot write the output to stdout: {} (free space, or send it elsewhere)".format(
        prog, err.strerror or err))
    return write_failure


# What a path-less "No such file or directory" is when the current folder itself is gone: both programs say it in
# these words (walk10 A30: `cannot use: No such file or directory` from validate, runs ls, init after another
# terminal's `rm -rf` or a `git checkout`; replay11 A30: the entrypoint's plan asked os.getcwd() and printed a
# traceback). ``nodeweave``'s verbs meet it in ``failures.from_os_error``, the entrypoint in ``__main__._main``.
CWD_GONE = ("the current folder no longer exists (it was removed after this shell entered it): cd to the project "
            "again (or give paths that do not depend on it)")


def cwd_gone(err=None):
    """Whether the current folder is gone and ``err`` (when given) is the path-less FileNotFoundError that
    ``os.getcwd()`` (or a relative path resolved against it) raised for that."""
    if err is not None and not (isinstance(err, FileNotFoundError) and getattr(err, "filename", None) is None):
        return False
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _stdout_is_a_file():
    """Whether stdout can be what a full disk failed: anything but a terminal, a pipe or a socket, which fill no
    disk (walk10 C7: a full runs/ was said as stdout's); a file, a device such as /dev/full, or unknown: True."""
    import stat

    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
        return not (os.isatty(fd) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))
    except (OSError, ValueError, AttributeError):
        return True


def is_output_failure(err):
    """Whether ``err`` came from writing stdout: a full or failing disk (ENOSPC, EIO, EFBIG, EDQUOT) with no file name."""
    return getattr(err, "filename", None) is None and err.errno in (errno.ENOSPC, errno.EIO, errno.EFBIG,
                                                                      errno.EDQUOT)


def _drop_stdout():
    """Point stdout at /dev/null, so the exit flush of what is still buffered fails no more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _tell(line):
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
