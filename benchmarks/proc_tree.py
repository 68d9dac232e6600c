"""A simulated node's processes, found as a container's would be: every process below its first one.

A node here is a process tree (entrypoint, launcher, ranks), and the entrypoint puts its launcher in a
process group of its own, so one ``killpg`` does not take the whole node as losing a container does.
These read the parent links in /proc (the kernel's ``/proc/<pid>/stat``: field 4 is the parent's pid,
field 3 the state) and signal every process of the tree at once.
"""

import os
import signal


def _stat(pid):
    """(state, parent pid) of a process, or None when it is gone; the command name may hold spaces and ')'."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def tree(root):
    """The pids of ``root`` and every process below it, as {pid: (state, command line)}."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                parents[int(name)] = stat
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in parents and pid not in found:
            found[pid] = (parents[pid][0], _cmdline(pid))
            frontier.extend(child for child, (_, ppid) in parents.items() if ppid == pid)
    return found


def kill_tree(root, sig=signal.SIGKILL):
    """Signal the whole tree at once (a container killed): the pids it reached."""
    reached = []
    for pid in tree(root):
        try:
            os.kill(pid, sig)
            reached.append(pid)
        except ProcessLookupError:
            pass
    return reached
