"""Every way ``nodeweave`` is ended from outside ends it as Ctrl-C does.

A verb holding something on the nodes (a run, an exec's command, a sync, an ``up`` half made) has one cleanup, the one
its Ctrl-C gets: stop what it started on every node, record the run's end, say where it stood. Three other endings
skipped it and left the nodes' work running with no one collecting it (walk16a A1, A2, A17): SIGTERM (a CI step's
timeout, a ``kill``), SIGHUP (the terminal closed) and a reader that went away (``| head``: EPIPE on stdout). The
program (``nodeweave.cli.main``) installs :func:`install` once: SIGTERM and SIGHUP become the Ctrl-C a terminal
gives (:func:`ctrl_c`: SIGINT to the processes below this one in its group, then to this one, whose handler of the
moment, a verb's own or Python's KeyboardInterrupt, does the rest), and stdout's first failed write, while a
plan's phase holds the nodes (:func:`holding`), drops the rest of the output, says one line on stderr and ends the
verb by that same Ctrl-C. Outside a phase a closed stdout ends the verb as before (quietly, exit 1): nothing is held.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from contextlib import contextmanager
from typing import List

ENDINGS = (signal.SIGTERM, signal.SIGHUP)  # what a CI timeout, a kill and a closed terminal send
READER_GONE = (errno.EPIPE, errno.EIO)  # stdout's reader went away: a closed pipe, a hung-up terminal

# What the verb now holds on the nodes (its plan's verb), innermost last: a closed stdout ends only these by Ctrl-C.
HELD: List[str] = []
# Set once stdout's reader went away: the rest of the output is dropped.
GONE: List[bool] = []
# What ended the program from outside, first first: a run's record keeps it (walk18a A2: a `| head` that went away
# and a Ctrl-C were both recorded as a bare "interrupted", and the line saying why went to the closed pipe too).
CAUSES: List[str] = []
_SIGNALLED = {signal.SIGTERM: "SIGTERM (a kill, a CI step's timeout)", signal.SIGHUP: "SIGHUP (its terminal closed)"}
READER_WENT = "its output's reader going away (stdout closed by `| head` or a closed terminal)"


def ending_cause() -> str:
    """What interrupted the program, in words for a run's record (no colon: the record's summary is "interrupted
    by CAUSE: ..."): the first ending from outside, else a Ctrl-C (SIGINT, which no one else sends)."""
    return CAUSES[0] if CAUSES else "Ctrl-C"


@contextmanager
def holding(verb: str):
    """While the body runs, a closed stdout ends ``verb`` as Ctrl-C does (its cleanup), not by an exception past it."""
    HELD.append(verb)
    try:
        yield
    finally:
        HELD.pop()


def install() -> None:
    """SIGTERM and SIGHUP as Ctrl-C, stdout guarded; only in the program itself (never in a test's process)."""
    for sig in ENDINGS:
        try:
            if signal.getsignal(sig) != signal.SIG_IGN:  # ignored where started (nohup): it stays so
                signal.signal(sig, as_ctrl_c)
        except (ValueError, OSError):  # not the main thread (embedded): nothing of ours to guard
            return
    if sys.stdout is not None and not isinstance(sys.stdout, GuardedOutput):
        sys.stdout = GuardedOutput(sys.stdout)


def as_ctrl_c(signum, frame) -> None:
    """A signal that ends the program, handled by SIGINT's handler of the moment: the verb's Ctrl-C cleanup."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_DFL:  # the command has returned (nodeweave.start): the signal's
        signal.signal(signum, signal.SIG_DFL)  # own ending, at once
        os.kill(os.getpid(), signum)
        return
    CAUSES.append(_SIGNALLED.get(signum, f"signal {signum}"))
    ctrl_c()


def ctrl_c() -> None:
    """What a terminal's Ctrl-C does, sent from here: SIGINT to every process below this one in its process group (a
    local step's compose or kubectl and what they started; the nodes' exec clients run in sessions of their own, out
    of a Ctrl-C's reach, and so out of this one's), then to this process, whose SIGINT handler of the moment (a verb's
    own, or Python's KeyboardInterrupt in the main thread) does the rest."""
    for pid in below_in_group():
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:  # ended meanwhile
            pass
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # a script's background job (`&`) ignores Ctrl-C, not this
        raise KeyboardInterrupt
    os.kill(os.getpid(), signal.SIGINT)


def below_in_group() -> "list[int]":
    """The pids of this process's descendants that share its process group (Linux's /proc; none elsewhere): whom a
    terminal's Ctrl-C would reach with it, and never a process beside it (a shell's pipeline, a CI runner)."""
    from nodeweave.entrypoint.running.runstate import descendants, process_table

    try:
        table = process_table()  # pid -> (state, ppid, pgid, starttime), the entrypoint's one reading of /proc
    except OSError:
        return []
    group, me = os.getpgrp(), os.getpid()
    return [pid for pid, _ in descendants(me, table) if pid != me and table[pid][2] == group]


def reader_gone() -> None:
    """stdout failed while a phase holds the nodes: every later write goes nowhere, one line says what happens, and
    Ctrl-C is delivered (:func:`ctrl_c`)."""
    if GONE:
        return
    GONE.append(True)
    CAUSES.append(READER_WENT)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # what is still buffered, and any child writing to fd 1, goes nowhere from here
        os.close(devnull)
    except OSError:
        pass
    try:
        sys.stderr.write(f"nodeweave: the output's reader went away (stdout closed: `| head`, a closed terminal): "
                         f"{HELD[-1]} is ended as Ctrl-C ends it, and the rest of its output is dropped\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr gone too: the exit code says it
        pass
    ctrl_c()


class GuardedOutput:
    """sys.stdout, whose failed write (its reader gone) while the nodes are held is :func:`reader_gone`."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _guarded(self, action, *args):
        if GONE:
            try:
                return action(*args)
            except OSError:
                return None
        try:
            return action(*args)
        except OSError as err:
            if not HELD or err.errno not in READER_GONE:
                raise
            reader_gone()
            try:
                return action(*args)  # into /dev/null now
            except OSError:
                return None

    def write(self, text):
        done = self._guarded(self._stream.write, text)
        return len(text) if done is None else done

    def writelines(self, lines):
        self._guarded(self._stream.writelines, lines)

    def flush(self):
        self._guarded(self._stream.flush)
