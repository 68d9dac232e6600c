"""The launcher's descendants, found at its stop, so a rank in a session of its own is stopped too.

torchrun starts each rank in a new session, so the SIGTERM/SIGKILL the entrypoint sends the launcher's process
group never reaches the ranks; a rank that is stopped (SIGSTOP, a debugger) cannot take the SIGTERM torchrun
passes on, and once the SIGKILL ends torchrun it is left behind, stopped, holding its GPU memory. At the stop
the launcher is still alive, so its descendants are found by walking ``/proc`` for parent links
(``runstate.descendants``): no record kept at start, which would miss ranks a launcher restarts, and nothing
that is not below the launcher, so no other job's process is ever signalled. Each is named by pid and start
time, so a pid reused after it exits is left alone.
"""

import os
import time

from .runstate import alive, descendants, process_table


def find(root):
    """[(pid, start time)] of every process below ``root`` (not ``root`` itself: its group is signalled)."""
    return [(pid, start) for pid, start in descendants(root, process_table()) if pid != root]


def signal_all(processes, *signals):
    """Send ``signals`` in order to each of ``processes`` still running as the same process."""
    for pid, start in processes:
        if not alive(pid, start):
            continue
        for sig in signals:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def end(processes, deadline, poll_s=0.1):
    """Wait until ``deadline`` (monotonic) for ``processes`` to go, then SIGKILL the rest."""
    import signal

    while any(alive(pid, start) for pid, start in processes) and time.monotonic() < deadline:
        time.sleep(poll_s)
    signal_all(processes, signal.SIGKILL, signal.SIGCONT)
