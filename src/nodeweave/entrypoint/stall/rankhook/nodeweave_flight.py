"""The answer thread inside a rank: where its main thread is, and what torch's own recorder says it did.

torch keeps a ring of every collective a process group issued, from Python or
from C++ (DDP's reducer, FSDP), with its sequence id, op, sizes and state,
when ``TORCH_FR_BUFFER_SIZE`` (or ``TORCH_NCCL_TRACE_BUFFER_SIZE``) is above
0; the entrypoint sets it for the ranks unless the user set either (``0``
turns this off). Started by the probe in every rank, this daemon thread

- on a byte written to the FIFO ``rank-<RANK>.ask`` writes the main thread's
  frames with the position of the instruction each is running
  (``rank-<RANK>.where.json``: ``frame.f_lasti`` into ``co_positions()``, Python
  3.11+), so the node names the call that is executing, not the first call on
  its line; it answers whenever the main thread lets go of the GIL (a sleep,
  a blocking read, gloo or NCCL, every 5 ms of Python code);
- once ``torch.distributed`` is imported and the recorder is on, every
  :data:`POLL_S` reads the default group's last enqueued and last
  completed collective (``pg_status``, about 20 µs) into the rank's record, so
  the node counts collectives no Python call made;
- when ``TORCH_NCCL_ENABLE_TIMING`` is on (the entrypoint sets it on a node
  with GPUs unless the user set it), every :data:`DURATIONS_S` reads NCCL's
  whole recorder and adds each newly completed collective's
  ``duration_ms`` (its device time, start event to end event: this rank's
  wait for the last rank plus the transfer) to the rank's record
  (:func:`completed_durations`), so a slow GPU is seen for every NCCL
  collective, DDP's reducer's, ``async_op=True`` and graph-captured ones too;
- on the same byte writes the whole recorder as JSON to ``rank-<RANK>.flight.json`` (written aside, then renamed): NCCL's
  (``_dump_nccl_trace_json``) and the generic one gloo uses
  (``_dump_fr_trace_json``), whichever this torch has.

It runs while the main thread waits inside gloo or NCCL or sleeps (they
release the GIL); a SIGSTOPped rank cannot answer. After a dump it stays
idle in ``select()`` for :data:`QUIET_S`: the node signals for the stacks
next, and faulthandler's dump of every thread, from a signal handler, is
safe only while no thread runs Python code (a dump taken while this thread
ran killed a rank with SIGSEGV in a container test). Stdlib only: torch is
looked up in ``sys.modules``, never imported here.
"""

import itertools
import json
import os
import select
import sys
import threading
import time

POLL_S = 1.0
DURATIONS_S = 10.0  # the whole-recorder read for durations (55 ms + 15 ms to parse, 2000 entries, H100)
TIMING_VARIABLE = "TORCH_NCCL_ENABLE_TIMING"
QUIET_S = 5.0  # after a dump the node signals for stacks: this thread then stays in select() (no Python runs)
SIZE_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
DEFAULT_GROUP = "0"


def enabled(env):
    """True when torch's flight recorder is on for this process (the first size variable set decides)."""
    for name in SIZE_VARIABLES:
        if env.get(name):
            try:
                return int(env[name]) > 0
            except ValueError:
                return False
    return False


def timing_on(env):
    """True when NCCL times each collective on the device (``TORCH_NCCL_ENABLE_TIMING``, as torch reads it)."""
    return env.get(TIMING_VARIABLE, "").strip().lower() in ("1", "true", "yes", "y", "on")


def completed_durations(dump, after):
    """(last seq id read, seconds, collectives, lost) of the default group's NCCL collectives in ``dump`` (torch's
    recorder JSON, parsed) with ``collective_seq_id`` above ``after``, completed and timed, oldest first.

    Reading stops at the first one not yet ``completed`` (or completed but not yet retired with its
    duration): it is read on a later pass, and none is counted twice. Point-to-point entries and other
    groups are left out, as in the collective count. ``lost``: the ring no longer holds the collective
    after ``after`` (more completed between two reads than the ring keeps)."""
    found = {}
    for e in dump.get("entries") or []:
        group = e.get("process_group") or [DEFAULT_GROUP]
        name = str(e.get("profiling_name") or "")
        if str(group[0]) != DEFAULT_GROUP or e.get("is_p2p") or not name.startswith("nccl:"):
            continue
        seq = e.get("collective_seq_id")
        if isinstance(seq, int) and seq > after:
            found[seq] = e
    last, seconds, count = after, 0.0, 0
    lost = after >= 0 and bool(found) and min(found) > after + 1
    for seq in sorted(found):
        e = found[seq]
        duration = e.get("duration_ms")
        if e.get("state") != "completed" or (duration is None and not e.get("retired")):
            break
        if duration is not None:
            seconds += float(duration) / 1000.0
            count += 1
        last = seq
    return last, seconds, count, lost


def ask_path(folder, rank):
    return os.path.join(folder, f"rank-{rank}.ask")


def dump_path(folder, rank):
    return os.path.join(folder, f"rank-{rank}.flight.json")


def where_path(folder, rank):
    return os.path.join(folder, f"rank-{rank}.where.json")


def start(probe, env):
    """Start the thread once per rank; it reads the recorder only when the recorder is on."""
    if getattr(probe, "flight_thread", None) is not None:
        return
    probe.recorder_on = enabled(env)
    probe.timing_on = probe.recorder_on and timing_on(env)
    path = ask_path(probe.folder, probe.rank)
    if not os.path.exists(path):
        os.mkfifo(path, 0o600)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # read-write: never sees end-of-file when a writer leaves
    probe.flight_thread = threading.Thread(target=_loop, args=(probe, fd), name="nodeweave-flight", daemon=True)
    probe.flight_thread.start()


RECORDERS = (("nccl", "_dump_nccl_trace_json"), ("generic", "_dump_fr_trace_json"))  # NCCL keeps its own


def _recorders(on):
    """{name: torch's JSON dump function} of each recorder this torch has, once the default group exists."""
    if not on:
        return {}
    dist = sys.modules.get("torch.distributed")
    c10d = sys.modules.get("torch._C._distributed_c10d")
    initialized = getattr(dist, "is_initialized", None)  # absent while torch.distributed is still importing
    if initialized is None or c10d is None or not initialized():
        return {}
    return {name: getattr(c10d, attr) for name, attr in RECORDERS if hasattr(c10d, attr)}


def _loop(probe, fd):
    quiet_until, failed, durations_at = 0.0, False, 0.0
    probe.durations_s = DURATIONS_S
    while True:
        ready, _, _ = select.select([fd], [], [], POLL_S)
        try:
            recorders = _recorders(probe.recorder_on)
            if ready:
                try:
                    os.read(fd, 64)
                except BlockingIOError:
                    pass
                if recorders:
                    _write(probe, {name: json.loads(dump(True, False)) for name, dump in recorders.items()})
                _write_where(probe)  # last: its new file tells the node the answer is complete
                quiet_until = time.monotonic() + QUIET_S
            now = time.monotonic()
            if recorders and now >= quiet_until:
                _poll(probe, recorders)
                if probe.timing_on and "nccl" in recorders and now >= durations_at:
                    durations_at = now + probe.durations_s
                    _durations(probe, recorders["nccl"], now)
        except Exception as err:  # noqa: BLE001 - torch half imported, a full disk: answer the next ask
            if not failed:
                sys.stderr.write(f"nodeweave: rank {probe.rank}'s answer thread: {err!r} (it goes on)\n")
            failed = True


def _poll(probe, recorders):
    """The default group's counts, summed over the recorders (a ``cpu:gloo,cuda:nccl`` group has two)."""
    enqueued = completed = 0
    for dump in recorders.values():
        own = (json.loads(dump(False, False)).get("pg_status") or {}).get(DEFAULT_GROUP) or {}
        enqueued += max(0, int(own.get("last_enqueued_collective", -1)))
        completed += max(0, int(own.get("last_completed_collective", -1)))
    probe.recorded(enqueued, completed)


MIN_DURATIONS_S = 1.0


def _durations(probe, dump, now):
    """Add the collectives completed since the last read to the record (``Probe.timed_by_recorder``). When
    the ring lost some since the last read, this read only starts a new span (a span whose wait is partly
    unread would count that wait as work), and the reads come twice as often from then on."""
    last, seconds, count, lost = completed_durations(json.loads(dump(True, False)), probe.fr_seen)
    if lost:
        probe.durations_s = max(MIN_DURATIONS_S, getattr(probe, "durations_s", DURATIONS_S) / 2)
        probe.fr_read_at = None
    probe.timed_by_recorder(last, seconds, count, now)


def _write(probe, recorders):
    """{"recorders": {name: torch's dump}} to the rank's dump file, whole or not at all."""
    _whole(dump_path(probe.folder, probe.rank), json.dumps({"rank": probe.rank, "recorders": recorders}))


def _whole(path, text):
    """``text`` to ``path`` whole or not at all, the ``.part`` removed again when the write or rename fails: the
    rank's copy of the node's one rule (``runstate.write_whole``; a rank imports nothing of the node's package)."""
    try:
        with open(path + ".part", "w") as f:
            f.write(text)
        os.replace(path + ".part", path)
    except BaseException:
        try:
            os.unlink(path + ".part")
        except OSError:
            pass
        raise


MAX_FRAMES = 64
CALLS = ("CALL", "PRECALL")  # CALL, CALL_KW, CALL_FUNCTION_EX, CALL_FUNCTION (older), CALL_METHOD (older)


def position(frame):
    """[line, end line, column, end column, is a call] of the instruction ``frame`` is running; None where
    this Python cannot say (before 3.11: no ``co_positions``)."""
    code = frame.f_code
    if not hasattr(code, "co_positions") or frame.f_lasti < 0:
        return None
    found = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
    if not found or None in found:
        return None
    import dis

    name = dis.opname[code.co_code[frame.f_lasti]]
    return [found[0], found[1], found[2], found[3], name.startswith(CALLS)]


def main_thread_frames(thread):
    """[[file, line, function] + position] of ``thread``'s frames, innermost first."""
    frame = sys._current_frames().get(thread)
    out = []
    while frame is not None and len(out) < MAX_FRAMES:
        entry = [frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name]
        try:
            entry += position(frame) or []
        except (IndexError, ValueError):
            pass
        out.append(entry)
        frame = frame.f_back
    return out


SNAPSHOTS, SNAPSHOT_GAP_S = 9, 0.04  # 0.3 s of looks: enough to outvote one unlucky instant


def _write_where(probe):
    """:data:`SNAPSHOTS` looks at the main thread, :data:`SNAPSHOT_GAP_S` apart: a rank running Python code
    is seen only where it lets go of the GIL, so one look could miss the line the node's stack shows."""
    snapshots = []
    for i in range(SNAPSHOTS):
        if i:
            time.sleep(SNAPSHOT_GAP_S)
        snapshots.append(main_thread_frames(probe.thread))
    _whole(where_path(probe.folder, probe.rank), json.dumps({"rank": probe.rank, "snapshots": snapshots}))
