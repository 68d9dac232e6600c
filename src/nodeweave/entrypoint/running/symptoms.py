"""Tell a node whose ranks failed first from one whose ranks only saw a peer go.

When one rank dies, every rank in a collective with it fails a moment later with "Connection reset by peer"
(gloo), ``ncclRemoteError`` (NCCL) or a broken store connection. Those launchers end too, and under load their
reports can reach node 0 first. Recovery leaves the culprit's node out, so node 0 must not take the first
report at its word: a node whose output shows only that a peer went away is a *secondary* failure
(:func:`secondary`), and node 0 waits a moment for a primary one before it judges (``heartbeat.py``).

The other way round, :func:`script_error` finds the exception a rank's script raised (``PermissionError:
[Errno 13] ...``): the same line from every node is the job's own error, not a node's (recovery stops the job
naming it instead of leaving nodes out one by one, ``recovery/hub.py``).

A node's output is secondary when it holds a peer-gone line and no rank of its own was killed by a signal
(torchrun's summary: ``exitcode  : -9``, ``Signal 9 (SIGKILL) received by PID``; SIGABRT is how NCCL's
watchdog ends a rank whose peer went away, so it proves nothing). A rank that raised an error of
its own beside a peer-gone line of a sibling rank on the same node is not told apart: docs/recovery.md says so.
"""

import re

# Each names a failure that means "the other end went away": the backend's or the store's words, as they print.
PEER_GONE = re.compile("|".join([
    r"Connection (?:reset|closed) by (?:remote )?peer",  # gloo's pair.cc, NCCL's socket.cc, the c10d store
    r"Broken pipe",
    r"ncclRemoteError",                                   # NCCL 2.13+: a remote process exited or the network
    r"remote process exited or there was a network error",
    r"NCCL communicator was aborted",
    r"Gloo connectFullMesh failed",
    r"Application timeout caused pair closure",
    r"The connection to the C10d store has failed",       # torchrun's agent: node 0's store went away
    r"failed to recv, got 0 bytes",
]))
# torchrun's failure summary for a rank killed by a signal: that node's own rank died, whatever else it printed.
# Not SIGABRT (6): NCCL's watchdog aborts a rank whose peer went away ("terminate called after throwing ...").
OWN_SIGNAL = re.compile(r"exitcode\s*:\s*-(?!6\b)\d+|Signal (?!6\b)\d+ \(SIG\w+\) received by PID")


def secondary(text):
    """The line that shows this node's ranks failed only because a peer went away, or None (a failure of its
    own, or nothing to tell)."""
    if not text or OWN_SIGNAL.search(text):
        return None
    found = PEER_GONE.search(text)
    if found is None:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    return text[start:end if end >= 0 else len(text)].strip()[:300]


# A Python exception's last traceback line as a rank prints it (torchrun may prefix ``[rank0]:`` or ``[default0]:``).
EXCEPTION_LINE = re.compile(r"^(?:\[[\w.-]+\]:\s*)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::.*)?)$")
# Not the script's own: the launcher's summary of its children, and what a rank raises when a peer or the
# collective failed (every rank raises it, naming its own rank: a node's fault, or a stall's).
NOT_THE_SCRIPTS = re.compile(r"ChildFailedError|SignalException|DistBackendError|DistNetworkError|Watchdog|"
                             r"timed out|[Tt]imeout|NCCL|[Gg]loo")
SCRIPT_LINES = 6  # the traceback's last lines kept with the error


def start_failure(err):
    """A launch that failed before the script ran (its plan, its files, its launcher not found), in
    :func:`script_error`'s shape with ``"start": True``: the same on every member is the job's own (its image,
    its PATH), never the node that happened to report it first (walk7 B12: node 0 left node 1 out for the
    missing launcher both had)."""
    line = str(err)[:300]
    return {"line": line, "lines": [line], "start": True}


def script_error(text):
    """The exception the script raised, as its last output shows it: {"line": the exception line, "lines": the
    traceback's last lines}, or None (killed by a signal, a peer gone, an exit without a traceback)."""
    if not text or OWN_SIGNAL.search(text):
        return None
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        match = EXCEPTION_LINE.match(lines[i].strip())
        if not match or NOT_THE_SCRIPTS.search(lines[i]) or PEER_GONE.search(lines[i]):
            continue
        return {"line": match.group(1)[:300], "lines": [line[:300] for line in lines[max(0, i - SCRIPT_LINES + 1):i + 1]]}
    return None
