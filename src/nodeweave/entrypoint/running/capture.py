"""Pass the launcher's output through, keeping its last lines for the failure report.

With the heartbeat on, a node whose launcher fails tells the others how it
ended *and what it last printed* (the traceback is usually there). The
launcher's stdout and stderr go to two pipes; one thread per pipe copies every
byte on to the entrypoint's own stdout/stderr (the container log sees the same
streams as before) and keeps the last :data:`KEEP_BYTES` of both, in arrival
order. Used only when the exchange runs; otherwise the launcher writes to the
container's streams directly.

Once the entrypoint has decided to stop its launcher for a stall
(:meth:`OutputTail.divert`), what the launcher and its ranks print from then on
goes to a file the stop line names instead of the node's streams: torchrun
answers the stop's SIGTERM with its ``SignalException`` traceback, which would
otherwise be the last thing the user reads, under the report that says why.
Nothing is dropped or filtered; it is moved where the stop line points.
"""

import os
import threading

KEEP_BYTES = 16384
OUTPUT_LISTENERS = []  # callables(target fd, chunk) that read the output too (metrics/live.py: the step lines)


class OutputTail:
    def __init__(self, keep=KEEP_BYTES):
        self.keep = keep
        self.data = bytearray()
        self.lock = threading.Lock()
        self.pipes = [list(os.pipe()), list(os.pipe())]  # [read, write] for stdout, stderr; None once closed
        self.threads = []
        self.aside = None  # the file descriptor output goes to once diverted

    def child_side(self):
        """In the forked child, before exec: stdout/stderr become the pipes' write ends."""
        for target, (read_end, write_end) in zip((1, 2), self.pipes):
            os.dup2(write_end, target)
            os.close(read_end)
            os.close(write_end)

    def parent_side(self):
        """In the entrypoint, after fork: copy each pipe to our own stream."""
        self.close_child_ends()
        for target, pair in zip((1, 2), self.pipes):
            thread = threading.Thread(target=self._pump, args=(pair[0], target), daemon=True,
                                      name=f"nodeweave-output-{target}")
            pair[0] = None  # the pump closes it
            thread.start()
            self.threads.append(thread)

    def close_child_ends(self):
        """In the entrypoint, after fork: the write ends are the child's alone (a held launcher's pipes are read
        only once it launches: ``warm.py``)."""
        for pair in self.pipes:
            _close(pair, 1)

    def abandon(self):
        """The fork failed, or the child was not needed: close every end still open here."""
        for pair in self.pipes:
            _close(pair, 0)
            _close(pair, 1)

    def _pump(self, source, target):
        try:
            while True:
                try:
                    chunk = os.read(source, 65536)
                except InterruptedError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                with self.lock:
                    aside = self.aside
                _write_all(target if aside is None else aside, chunk)
                with self.lock:
                    self.data += chunk
                    if len(self.data) > 2 * self.keep:
                        del self.data[:-self.keep]
                for listener in OUTPUT_LISTENERS:
                    try:
                        listener(target, chunk)
                    except Exception:  # noqa: BLE001 - a reader of the output must never stop the copy
                        pass
        finally:
            os.close(source)

    def divert(self, path):
        """From now on write both streams to ``path`` (appended) instead of ours; False when it cannot be opened
        (the output then stays on our streams)."""
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:
            return False
        with self.lock:
            if self.aside is None:
                self.aside = fd
                return True
        os.close(fd)
        return True

    def lines(self, count=20, wait_s=2.0):
        """The last ``count`` non-empty lines, once the pipes ended (or ``wait_s`` passed)."""
        return [line.rstrip() for line in self.text(wait_s).splitlines() if line.strip()][-count:]

    def text(self, wait_s=2.0):
        """The last :data:`KEEP_BYTES` of output, once the pipes ended (or ``wait_s`` passed), as a reader sees it
        (``symptoms.plain``: what is relayed and quoted holds no colour or control sequence; the node's own streams
        had every byte)."""
        from .symptoms import plain

        for thread in self.threads:
            thread.join(wait_s)
        with self.lock:
            return plain(bytes(self.data[-self.keep:]).decode("utf-8", "replace"))


def _close(pair, index):
    fd, pair[index] = pair[index], None
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return  # our own stream is gone: keep draining so the launcher never blocks
        view = view[written:]
