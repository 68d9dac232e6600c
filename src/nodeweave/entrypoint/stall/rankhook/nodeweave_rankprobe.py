"""The stall probe inside each training rank: where it is, written to a small shared file, cheaply.

Started by ``sitecustomize`` (stdlib at import; torch is only touched after
the script imports it). It

- maps ``$NODEWEAVE_RANKWATCH_DIR/rank-<RANK>.bin`` (:data:`LAYOUT`) and keeps
  there the count of collectives entered, the one it is in and since when,
  the time spent inside and outside collectives (the straggler measure under
  gloo) and, for collectives on GPU tensors, the device time spent waiting in
  them (``nodeweave_device.py``: the measure under NCCL and RCCL), and the
  same summed from NCCL's flight recorder's per-collective durations
  (``nodeweave_flight.py``: every NCCL collective, DDP's reducer's too);
- wraps the ``torch.distributed`` collectives when ``distributed_c10d`` is
  imported (an import hook; the first call into one counts, nested calls do not);
- registers :data:`STACK_SIGNAL` with ``faulthandler`` (``all_threads``), which
  appends every thread's Python stack to ``rank-<RANK>.stack`` — from C, so it
  answers while the rank sleeps, reads a dead file system or waits in gloo;
- keeps a thread (``nodeweave_flight.py``) that, asked through a FIFO, writes
  where the main thread is (each frame's running instruction, so the node
  names the call that executes); once the process group exists and torch's
  flight recorder is on, the same thread counts the default group's collectives as the
  recorder sees them (C++-issued ones too: DDP's reducer) and dumps the
  recorder to ``rank-<RANK>.flight.json`` when asked.

Only a process with ``RANK`` and ``LOCAL_RANK`` set (a rank, not a launcher)
starts it, and not a process it started itself (DataLoader workers).
A record is written under a sequence lock (``gen`` odd while writing).
"""

import os
import struct
import sys
import time

MAGIC = b"NWR4"
# magic, gen, pid, rank, local rank, main thread ident, seq, changed, entered, inside_s, outside_s, name,
# the flight recorder's last enqueued and last completed collective of the default group (-1: not known),
# the device time waited in timed collectives and how many were timed; the same from the NCCL flight
# recorder's durations (every NCCL collective: C++-issued and async ones too) and the host time its reads span,
# and when the flight thread last read the recorder (0: never): a count read before the rank's last move is stale
LAYOUT = struct.Struct("<4sIIiiQQdddd24sqqdqdqdd")
SIZE = 4096
OWNER = "NODEWEAVE_RANKWATCH_PID"
COLLECTIVES = (
    "init_process_group", "new_group", "barrier", "monitored_barrier", "all_reduce", "all_reduce_coalesced",
    "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_gather_coalesced",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "gather_object",
    "scatter", "scatter_object_list", "broadcast_object_list", "send", "recv", "batch_isend_irecv",
    "_all_gather_base", "_reduce_scatter_base",
)


def stack_signal():
    import signal

    return signal.SIGRTMIN + 4  # documented; real-time, so no program's SIGUSR1/2 use collides


class Probe:
    """The rank's record: updated on every collective entry and exit (a few microseconds)."""

    def __init__(self, path, rank, local_rank):
        import _thread
        import mmap
        import threading

        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.ftruncate(fd, SIZE)
            self.map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        self.rank, self.local_rank, self.thread = rank, local_rank, _thread.get_ident()
        self.pid = os.getpid()  # a forked child never writes (``forked``): the rank's pid, read once
        self.gen = self.seq = 0
        self.depth = 0
        self.name = b""
        self.entered = 0.0
        self.inside = self.outside = 0.0
        self.changed = self.last_exit = time.monotonic()
        self.flight = (-1, -1)  # written by the flight thread (flight.py)
        self.polled = 0.0  # when the flight thread last read the recorder (monotonic; 0.0: never)
        self.device = None  # nodeweave_device.DeviceTimer, once a collective runs on a GPU tensor
        self.device_module = None  # nodeweave_device, imported at the first collective
        self.fr_seen = -1  # the last collective_seq_id whose duration was read (flight thread)
        self.fr_wait, self.fr_timed, self.fr_span, self.fr_read_at = 0.0, 0, 0.0, None
        self.lock = threading.Lock()  # the main thread and the flight thread both write
        self.forked = False
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)
        self.write()

    def _forked(self):
        """A process this rank forked (a DataLoader worker) shares the map: it must never write the rank's record."""
        import threading

        self.forked, self.lock = True, threading.Lock()

    def write(self):
        if self.forked:
            return
        with self.lock:
            self.gen += 1
            struct.pack_into("<I", self.map, 4, self.gen)  # odd: a reader retries
            LAYOUT.pack_into(self.map, 0, MAGIC, self.gen, self.pid, self.rank, self.local_rank, self.thread,
                             self.seq, self.changed, self.entered, self.inside, self.outside, self.name,
                             self.flight[0], self.flight[1], self.device.waited_s if self.device else 0.0,
                             self.device.timed if self.device else 0, self.fr_wait, self.fr_timed, self.fr_span,
                             self.polled)
            self.gen += 1
            struct.pack_into("<I", self.map, 4, self.gen)

    def recorded(self, enqueued, completed):
        """The flight thread read the recorder: when its counts moved, that counts as progress, like entering a
        collective; either way the read's time is kept, so a judge knows whether the counts are older than the
        rank's last move (a rank that exited, or is exiting, stopped reading them)."""
        self.polled = time.monotonic()
        if (enqueued, completed) != self.flight:
            self.flight = (enqueued, completed)
            self.changed = self.polled
        self.write()

    def timed_by_recorder(self, last_seq, seconds, count, now):
        """The flight thread read ``count`` more completed collectives' device durations (``seconds``) up to
        ``last_seq``; ``fr_span`` grows by the host time since its previous read, so a judge compares like
        with like: the time these reads cover against the device wait within it."""
        self.fr_seen = last_seq
        if self.fr_read_at is not None:
            self.fr_span += now - self.fr_read_at
            self.fr_wait += seconds
            self.fr_timed += count
        self.fr_read_at = now  # the first read only sets the start: what completed before it has no span
        if count or self.fr_timed:
            self.write()

    def enter(self, name):
        now = time.monotonic()
        self.seq += 1
        self.outside += now - self.last_exit
        self.entered = self.changed = now
        self.name = name
        self.write()

    def time_device(self, args, kwargs):
        """The device timer's token for this collective, or None (not on a GPU tensor; a timer that failed)."""
        try:
            if self.device is None:
                if self.device_module is None:
                    import nodeweave_device

                    self.device_module = nodeweave_device
                self.device = self.device_module.timer_for(args, kwargs)
                if self.device is None:
                    return None
            return self.device.begin(args, kwargs)
        except Exception:  # noqa: BLE001 - the measure is a bonus: the collective runs whatever happens here
            return None

    def device_end(self, token):
        try:
            self.device.end(token)
        except Exception:  # noqa: BLE001 - as above
            pass

    def leave(self):
        now = time.monotonic()
        self.inside += now - self.entered
        self.entered = 0.0
        self.last_exit = self.changed = now
        self.write()


def wrap(probe, name, fn):
    import functools

    label = name.encode()[:24]

    @functools.wraps(fn)
    def nodeweave_collective(*args, **kwargs):
        if probe.depth:
            return fn(*args, **kwargs)
        probe.depth += 1
        probe.enter(label)
        token = probe.time_device(args, kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            if token is not None:
                probe.device_end(token)
            probe.depth -= 1
            probe.leave()
    return nodeweave_collective


def patch(probe, module):
    for name in COLLECTIVES:
        fn = getattr(module, name, None)
        if callable(fn) and not hasattr(fn, "__wrapped_by_nodeweave__"):
            wrapped = wrap(probe, name, fn)
            wrapped.__wrapped_by_nodeweave__ = True
            setattr(module, name, wrapped)


class Finder:
    """An import hook that lets ``torch.distributed.distributed_c10d`` load as usual, then wraps its
    collectives before ``torch.distributed`` re-exports them."""

    TARGET = "torch.distributed.distributed_c10d"

    def __init__(self, probe):
        self.probe = probe

    def find_spec(self, name, path=None, target=None):
        if name != self.TARGET:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module
        probe = self.probe

        def exec_module(module):
            run(module)
            patch(probe, module)
        spec.loader.exec_module = exec_module
        return spec


def install(env):
    """Start the probe in this process when it is a training rank; return it (None elsewhere)."""
    if "RANK" not in env or "LOCAL_RANK" not in env:
        return None
    owner = env.get(OWNER)
    if owner and owner != str(os.getpid()):
        return None  # a process a rank started (a DataLoader worker): not a rank itself
    os.environ[OWNER] = str(os.getpid())
    folder = env["NODEWEAVE_RANKWATCH_DIR"]
    rank, local_rank = int(env["RANK"]), int(env["LOCAL_RANK"])
    probe = Probe(os.path.join(folder, f"rank-{rank}.bin"), rank, local_rank)
    import faulthandler

    probe.stacks = open(os.path.join(folder, f"rank-{rank}.stack"), "a")
    faulthandler.register(stack_signal(), file=probe.stacks, all_threads=True, chain=False)
    probe.folder = folder
    start_flight(probe)
    if "torch.distributed.distributed_c10d" in sys.modules:
        patch(probe, sys.modules["torch.distributed.distributed_c10d"])
    else:
        sys.meta_path.insert(0, Finder(probe))
    return probe


def start_flight(probe):
    """The answer thread (where the main thread is; torch's recorder, when on: the entrypoint sets its size)."""
    try:
        import nodeweave_flight

        nodeweave_flight.start(probe, os.environ)
    except Exception as err:  # noqa: BLE001 - the recorder is a bonus: training goes on without it
        sys.stderr.write(f"nodeweave: answer thread not started in rank {probe.rank}: {err}\n")


def read(data):
    """The record in ``data`` (bytes of a rank file) as a dict, or None while it is being written."""
    if len(data) < LAYOUT.size or data[:4] != MAGIC:
        return None
    (_, gen, pid, rank, local_rank, thread, seq, changed, entered, inside, outside,
     name, fr_enqueued, fr_completed, device_wait, device_timed, fr_wait, fr_timed,
     fr_span, polled) = LAYOUT.unpack_from(data, 0)
    if gen % 2:
        return None
    return {"pid": pid, "rank": rank, "local_rank": local_rank, "thread": thread, "seq": seq, "changed": changed,
            "entered": entered, "inside_s": inside, "outside_s": outside,
            "name": name.rstrip(b"\0").decode(errors="replace"), "fr_enqueued": fr_enqueued,
            "fr_completed": fr_completed, "device_wait_s": device_wait, "device_timed": device_timed,
            "fr_wait_s": fr_wait, "fr_timed": fr_timed, "fr_span_s": fr_span, "polled": polled}
