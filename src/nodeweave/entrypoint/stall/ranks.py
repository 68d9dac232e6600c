"""This node's ranks as the entrypoint sees them: their probe records, their /proc state, their stacks.

The ranks write ``rank-<N>.bin`` (``rankhook/nodeweave_rankprobe.py``); this
reads them, adds each process's state and CPU time from ``/proc/<pid>/stat``,
and on request signals a rank to append its stacks to ``rank-<N>.stack``
(a stopped or exited rank is not signalled: it could not answer).
"""

import os
import time

from .rankhook.nodeweave_flight import ask_path, dump_path, where_path
from .rankhook.nodeweave_rankprobe import read, stack_signal

STATES = {"R": "running", "S": "sleeping", "D": "in uninterruptible I/O", "T": "stopped", "t": "stopped by a tracer",
          "Z": "exited (zombie)", "X": "exited"}
STACK_WAIT_S = 2.0
SETTLE_S = 0.2


def proc_state(pid):
    """(state letter, CPU seconds) of ``pid`` from /proc, or (None, None) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None, None
    fields = text[text.rindex(")") + 2:].split()
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return fields[0], (int(fields[11]) + int(fields[12])) / ticks


class RankFolder:
    """The folder this node's ranks write to, and what can be read from it."""

    def __init__(self, path, node, host, pod, owner=None):
        """``node``: the node rank the launch gave (the ranks' views name it); ``owner``: the node's own index
        among nodes + spares under recovery (its files are named by it, walk12 B3), else ``node``."""
        self.path, self.node, self.host, self.pod = path, node, host, pod
        self.owner = node if owner is None else owner
        self.cpu_seen = {}  # rank -> (monotonic time, cpu seconds) of the previous sample

    def prepare(self):
        """Create the folder; remove what an earlier launch's ranks left in it (only our own file names)."""
        os.makedirs(self.path, exist_ok=True)
        for name in os.listdir(self.path):
            if name.startswith("rank-") and name.endswith((".bin", ".stack", ".ask", ".flight.json", ".where.json")):
                try:
                    os.unlink(os.path.join(self.path, name))
                except OSError:
                    pass

    def records(self):
        """{rank: record dict} of every rank file that reads whole."""
        found = {}
        try:
            names = os.listdir(self.path)
        except OSError:
            return found
        for name in names:
            if not (name.startswith("rank-") and name.endswith(".bin")):
                continue
            for _ in range(3):  # a record being written reads as None: try again
                try:
                    with open(os.path.join(self.path, name), "rb") as f:
                        record = read(f.read(256))
                except OSError:
                    record = None
                if record is not None:
                    found[record["rank"]] = record
                    break
        return found

    def sample(self, now=None):
        """This node's view: one small dict per rank (what the heartbeat carries to node 0)."""
        now = time.monotonic() if now is None else now
        view = []
        for rank, rec in sorted(self.records().items()):
            state, cpu = proc_state(rec["pid"])
            before = self.cpu_seen.get(rank)
            rate = None
            if cpu is not None:
                if before and now > before[0]:
                    rate = round((cpu - before[1]) / (now - before[0]), 3)
                self.cpu_seen[rank] = (now, cpu)
            view.append({
                "rank": rank, "local_rank": rec["local_rank"], "node": self.node, "host": self.host, "pod": self.pod,
                "pid": rec["pid"], "seq": rec["seq"], "name": rec["name"], "inside": rec["entered"] > 0,
                "since_s": round(max(0.0, now - rec["changed"]), 2), "inside_s": round(rec["inside_s"], 4),
                "outside_s": round(rec["outside_s"], 4), "state": state or "gone", "cpu_s": cpu, "cpu_rate": rate,
                "thread": rec["thread"], "fr_enqueued": rec["fr_enqueued"], "fr_completed": rec["fr_completed"],
                "device_wait_s": round(rec["device_wait_s"], 4), "device_timed": rec["device_timed"],
                "fr_wait_s": round(rec["fr_wait_s"], 4), "fr_timed": rec["fr_timed"],
                "fr_span_s": round(rec["fr_span_s"], 4),
                "polled_s": round(max(0.0, now - rec["polled"]), 2) if rec["polled"] else None})
        return view

    def stacks(self, view, wait_s=STACK_WAIT_S):
        """{rank: dump text, or why there is none}: signal every live rank at once, then read what each appended."""
        offsets, texts = {}, {}
        for rank in view:
            number = rank["rank"]
            path = os.path.join(self.path, f"rank-{number}.stack")
            if rank["state"] in ("gone", "Z", "X"):
                texts[number] = "exited"
                continue
            if rank["state"] in ("T", "t"):
                texts[number] = f"stopped ({STATES[rank['state']]}, e.g. SIGSTOP): a stopped process cannot dump"
                continue
            try:
                offsets[number] = (path, os.path.getsize(path))
                os.kill(rank["pid"], stack_signal())
            except OSError as err:
                texts[number] = f"no stack: {err.strerror or err}"
                offsets.pop(number, None)
        deadline = time.monotonic() + wait_s
        seen = {}
        while offsets and time.monotonic() < deadline:
            time.sleep(0.05)
            for number, (path, offset) in list(offsets.items()):
                text = _appended(path, offset)
                if text and seen.get(number) == len(text):  # written, and no longer growing
                    texts[number] = text
                    del offsets[number]
                seen[number] = len(text)
        for number in offsets:
            texts[number] = f"no stack within {wait_s:g}s (the rank did not answer the signal)"
        return texts


    def ask(self, view):
        """Ask every live rank's answer thread for where it is and its recorder's dump (a byte on its FIFO);
        {rank: (where path, its mtime before, dump path, its mtime before)}."""
        asked = {}
        for rank in view:
            if rank["state"] in ("gone", "Z", "X", "T", "t"):
                continue
            number = rank["rank"]
            try:
                fd = os.open(ask_path(self.path, number), os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # no FIFO: a probe of an older nodeweave, or one that could not start its thread
            try:
                where, dump = where_path(self.path, number), dump_path(self.path, number)
                asked[number] = (where, _mtime(where), dump, _mtime(dump))
                os.write(fd, b"d")
            except OSError:
                asked.pop(number, None)
            finally:
                os.close(fd)
        return asked

    def collect(self, asked, wait_s=1.5):
        """({rank: the recorder's JSON text}, {rank: [snapshots of the main thread's frames with positions]}) of
        each asked rank that answers within ``wait_s`` (its where file, written last, is new)."""
        dumps, wheres, deadline = {}, {}, time.monotonic() + wait_s
        while True:
            for number, (where, where_before, dump, dump_before) in list(asked.items()):
                if _mtime(where) == where_before:
                    continue
                wheres[number] = _json(where, "snapshots")
                if _mtime(dump) != dump_before:
                    try:
                        with open(dump) as f:
                            dumps[number] = f.read()
                    except OSError:
                        pass
                del asked[number]
            if not asked or time.monotonic() >= deadline:
                time.sleep(SETTLE_S)  # let a main thread the answer parked at a GIL hand-off move on first
                return dumps, wheres
            time.sleep(0.05)


def _json(path, key):
    import json

    try:
        with open(path) as f:
            return json.load(f).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _appended(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(1 << 16).decode(errors="replace")
    except OSError:
        return ""

