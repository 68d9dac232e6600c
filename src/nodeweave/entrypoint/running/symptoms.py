"""Tell a node whose ranks failed first from one whose ranks only saw a peer go.

When one rank dies, every rank in a collective with it fails a moment later with "Connection reset by peer"
(gloo), ``ncclRemoteError`` (NCCL) or a broken store connection. Those launchers end too, and under load their
reports can reach node 0 first. Recovery leaves the culprit's node out, so node 0 must not take the first
report at its word: a node whose output shows only that a peer went away is a *secondary* failure
(:func:`secondary`), and node 0 waits a moment for a primary one before it judges (``heartbeat.py``).

The other way round, :func:`script_error` finds the exception a rank's script raised (``PermissionError:
[Errno 13] ...``), or the error line it exited with (:func:`clean_exit`: argparse's ``prog: error: ...``): the
same line from every node is the job's own error, not a node's (recovery stops the job naming it instead of
leaving nodes out one by one, ``recovery/hub.py``).

A node's output is secondary when it holds a peer-gone line and no rank of its own was killed by a signal
(torchrun's summary: ``exitcode  : -9``, ``Signal 9 (SIGKILL) received by PID``; SIGABRT is how NCCL's
watchdog ends a rank whose peer went away, so it proves nothing). A rank that raised an error of
its own beside a peer-gone line of a sibling rank on the same node is not told apart: docs/recovery.md says so.
"""

import re

# What a terminal acts on rather than shows: ANSI colour and cursor sequences (CSI), title and hyperlink sequences
# (OSC), the other ESC pairs, and every other C0/C1 control character but tab and line ends (walk16a A24: rich,
# loguru and colorama colour a rank's lines; a cell or JSON string holding them was wide, raw, and replayed them).
CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[@-Z\\-_]|"
                     r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def plain(text):
    """``text`` as a reader sees it, without the control sequences a rank printed: the one cleaning of every line
    the tools quote from a node (its last line, its cause, its error, the tail relayed to node 0)."""
    return CONTROL.sub("", text) if text else text


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


# A launcher's own teardown noise after every rank of the node ended well (exit 0): said once by the entrypoint after
# it, so the log's last line is not a stranger's error beside exit 0 (walk12c C1, C18: torchrun's exit barrier on a
# node other than 0 races node 0's launcher, which holds the rendezvous store and may exit first; 1 clean run in 4
# ended in a 40-line C++ trace and `DistNetworkError: Failed to recv, got 0 bytes`). Each: (its words, what it is).
CLEAN_END_NOISE = (
    (re.compile(r"Error waiting on exit barrier"),
     "torchrun's `Error waiting on exit barrier` above (its DistNetworkError, `Failed to recv, got 0 bytes`, and "
     "the C++ frames before it) came after every rank here had finished: node 0's launcher, which holds the "
     "rendezvous store, exited first (a known torchrun race at the end of a run); harmless: this node's launcher "
     "exited 0"),
)


def clean_end_noise(text):
    """What each known teardown message in ``text`` (a launcher's output that exited 0) is, one line each."""
    return [what for pattern, what in CLEAN_END_NOISE if text and pattern.search(text)]


def secondary(text):
    """The line that shows this node's ranks failed only because a peer went away, or None (a failure of its
    own, or nothing to tell)."""
    text = plain(text)
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
# A script's refusal of its own arguments: argparse's ``train.py: error: argument --lr: invalid float value: 'abc'``
# (after its usage line), click's ``Error: Invalid value for '--lr'``; exit 2, no traceback (walk15a A12: neither
# was ever named, so a node's error line was torchrun's banner rule). Not nodeweave's own programs' lines.
USAGE_LINE = re.compile(r"^(?:\[[\w.-]+\]:\s*)?((?!nodeweave)[\w./-]+: error: .+|Error: .+)$")
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
    return {"line": line, "lines": [line], "start": True, "code": err.exit_code}


def script_error(text):
    """The script's own error, as its last output shows it: {"line": the exception line, "lines": the
    traceback's last lines}, or its clean exit's (:func:`clean_exit`, with ``"exit"``); None when killed by a
    signal or a peer went away."""
    text = plain(text)
    if not text or OWN_SIGNAL.search(text):
        return None
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        line = _scripts_own(lines[i].strip())
        if line is None:
            continue
        if USAGE_LINE.match(lines[i].strip()):  # its refusal of its arguments: a clean exit, read as one (its code)
            return clean_exit(text)
        return {"line": line[:300], "lines": [line[:300] for line in lines[max(0, i - SCRIPT_LINES + 1):i + 1]]}
    return clean_exit(text)


# A worker's exit with a code of its own (no signal), as its launcher reports it: torchrun's summary, deepspeed's
# launcher, accelerate's CalledProcessError.
EXIT_CODE = re.compile(r"exitcode\s*:\s*([1-9]\d*)|exits with return code = ([1-9]\d*)|"
                       r"returned non-zero exit status ([1-9]\d*)")
# What a program prints as it exits with an error but no traceback: argparse's `prog: error: ...` (a script's
# arguments, or the launcher's own: its start failing), Python's `can't open file` and `No module named` (the
# script or module missing), a shell's `not found`.
SAID_ERROR = re.compile(r"^(?:\[[\w.-]+\]:\s*)?(\S+: (?:error: .+|can't open file .+|No module named .+|"
                        r".*\bnot found))$")


def clean_exit(text):
    """A worker's (or its launcher's) exit on its own with an error it said, no traceback, no signal, no peer gone:
    {"line": the last ``prog: error: ...``-like line, or "exit N with no error printed", "lines": the lines
    before it, "exit": N}, or None. The same on every node is the job's own error (argparse's exit 2 for a
    mistyped flag, the script's file missing, ``sys.exit(2)``), as the same exception is (walk15b B15)."""
    text = plain(text)
    if not text or OWN_SIGNAL.search(text) or PEER_GONE.search(text):
        return None
    lines = [line.strip() for line in text.splitlines()]
    if any(EXCEPTION_LINE.match(line) and not LAUNCHERS_OWN.search(line) for line in lines):
        return None  # a worker raised (a timeout, a collective's error): not a clean exit
    codes = [next(g for g in m.groups() if g) for m in EXIT_CODE.finditer(text)]
    said = [(i, m.group(1)) for i, m in enumerate(map(SAID_ERROR.match, lines)) if m]
    if said:
        i, line = said[-1]
        found = {"line": line[:300], "lines": [kept[:300] for kept in lines[max(0, i - SCRIPT_LINES + 1):i + 1]]}
    elif codes:
        found = {"line": f"exit {codes[-1]} with no error printed", "lines": []}
    else:
        return None
    return dict(found, exit=int(codes[-1]) if codes else None)


def _scripts_own(line):
    """The error ``line`` (stripped) states as the script's own, its rank prefix dropped, or None: an exception it
    raised (not a peer gone, not a collective's timeout) or its refusal of its arguments (:data:`USAGE_LINE`)."""
    usage = USAGE_LINE.match(line)
    if usage:  # its own words on its own flags (`--timeout`, `--nccl-debug`): never a launcher's or a peer's
        return usage.group(1)
    match = EXCEPTION_LINE.match(line)
    if not match or NOT_THE_SCRIPTS.search(line) or PEER_GONE.search(line):
        return None
    return match.group(1)


# The launcher's own report of its children, never a worker's cause: torchrun's ``ChildFailedError`` (and its
# frames), the ``SignalException`` of a signal it was sent, accelerate's ``CalledProcessError`` for the worker
# command it ran.
LAUNCHERS_OWN = re.compile(r"ChildFailedError|SignalException|CalledProcessError: Command .* returned non-zero")
OWN_SIGNAL_NAMED = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID \d+|exitcode\s*:\s*-(\d+)")


def cause(text):
    """The worker's own error line in a failed launcher's output, as the worker printed it (``[rank1]:
    RuntimeError: ...``, a torch ``OutOfMemoryError``), or None: the one pick every relay of a failure names first,
    before the tail's torchrun frames (walk9 A3, left10): the node's own failure line, a peer's relayed failure,
    ``nodeweave run``'s summary, ``runs show``, ``up``'s readiness failure, ``bench`` and ``doctor``'s bench.

    In order: the exception the script raised or its refusal of its arguments (:func:`script_error`'s rules: not
    a peer gone, not a collective's timeout); a rank killed by a signal (torchrun's summary: the out-of-memory killer's SIGKILL); any other
    exception a worker printed (a peer gone, a timeout), never the launcher's own (:data:`LAUNCHERS_OWN`); a
    worker's plain exit code and the line before it (:func:`exited`)."""
    text = plain(text)
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines()]
    candidates = [(i, line) for i, line in enumerate(lines)
                  if (EXCEPTION_LINE.match(line) or USAGE_LINE.match(line)) and not LAUNCHERS_OWN.search(line)]
    own = [line for _, line in candidates if _scripts_own(line) is not None]
    if own and not OWN_SIGNAL.search(text):
        return own[-1][:300]
    signalled = OWN_SIGNAL.search(text) and [m for m in OWN_SIGNAL_NAMED.finditer(text)
                                             if (m.group(1) or m.group(3)) != "6"]
    if signalled:
        found = signalled[-1]
        number = found.group(1) or found.group(3)
        name = found.group(2) or {"9": "SIGKILL", "15": "SIGTERM", "11": "SIGSEGV", "2": "SIGINT"}.get(number)
        return (f"a worker was killed by signal {number}" + (f" ({name})" if name else "") +
                (": the out-of-memory killer, or a kill -9" if number == "9" else ""))
    if own:
        return own[-1][:300]
    said = clean_exit(text)
    if said and said["lines"]:
        return said["line"]
    if candidates:
        return candidates[-1][1][:300]
    return exited(text, said["exit"]) if said and said["exit"] else None


# A launcher's first report that a worker ended (torchrun's ``failed (exitcode: 3) local_rank: 0``, deepspeed's
# ``exits with return code = 3``, accelerate's ``CalledProcessError``), and torchrun's summary of whose it was.
REPORTED = re.compile(r"failed \(exitcode: -?\d+\)|exits with return code =|CalledProcessError|ChildFailedError|"
                      r"Traceback \(most recent call last\)")
WHOSE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*([1-9]\d*)")
LAUNCHER_LOG = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d|\[[\d\- :,.]+\] \[(?:INFO|WARNING|ERROR)\]|"
                          r"nodeweave-entrypoint:)")


def exited(text, code):
    """A worker's plain exit with a code of its own, no exception, no signal: ``rank 1 exited 3`` (torchrun's
    summary names the rank; else ``a worker``) and the last line before its launcher reported it, which is most
    often the script's own word on why (``sys.exit(3)`` after ``dataset shard missing``), as a signal is named
    (walk16b B15: only torchrun's ChildFailedError frames were relayed)."""
    whose = [m for m in WHOSE.finditer(text) if m.group(2) == str(code)]
    head = f"rank {whose[-1].group(1)} exited {code}" if whose else f"a worker exited {code}"
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if REPORTED.search(line)), 0)  # none: the tail began after it
    last = next((line.strip() for line in reversed(lines[:end]) if line.strip() and not WORDLESS.match(line.strip())
                 and not LAUNCHER_LOG.match(line.strip())), None)
    return f"{head} (last line before it: {last[:300]})" if last else head


def named_first(how, text):
    """``how`` (``torchrun exited 1``) with the worker's own error line after it when the output holds one: the
    first words of every failure nodeweave relays."""
    found = cause(text)
    return f"{how}: {found}" if found else how


# Lines that say nothing of their own: rules and frames of only punctuation (torchrun's ``=====`` banner), and a
# peer's output quoted under a node's own line (``nodeweave-entrypoint:   | ...``, headed ``... last output:``).
QUOTED = re.compile(r"^nodeweave-entrypoint:\s+\|")
QUOTE_HEAD = re.compile(r"last output:$")
WORDLESS = re.compile(r"^[^A-Za-z0-9]*$")


def last_said(text):
    """The last line of ``text`` that says something (stripped), or None: never a banner rule (walk15a A12: a
    failed node's "last line" was torchrun's ``=====``) nor another node's output quoted in this one's. The one
    pick of a node's "last line" wherever one is shown: ``nodeweave run``'s error, ``runs show``, ``exec``,
    ``status``."""
    text = plain(text)
    for line in reversed((text or "").splitlines()):
        bare = line.strip()
        if bare and not WORDLESS.match(bare) and not QUOTED.match(bare) and not QUOTE_HEAD.search(bare):
            return bare
    return None


def told(text):
    """What one line names of a node's output: ``the cause: `` the worker's own error line (:func:`cause`), else
    ``last line: `` the last line that says something (:func:`last_said`); None for no output."""
    found = cause(text)
    if found:
        return "the cause: " + found
    last = last_said(text)
    return "last line: " + last if last else None
