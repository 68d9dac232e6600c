"""One payload, many targets: a tar stream made once and written to every target of a group.

The stream is plain POSIX tar (PAX headers only where ustar cannot hold a
name), so the nodeweave receiver and a target's own ``tar -x`` read the same
bytes. Each file is read once, in 1 MiB blocks; small files are batched into
1 MiB writes. ``Fanout`` gives every target its own writer thread and a
bounded queue, so the targets of a group are fed concurrently and memory
stays bounded by the slowest reader's lag (``QUEUE_CHUNKS`` MiB).
"""

from __future__ import annotations

import os
import queue
import stat
import tarfile
import threading
from pathlib import Path
from typing import Callable, Iterator

CHUNK = 1 << 20
QUEUE_CHUNKS = 16
_BLOCK = tarfile.BLOCKSIZE


def _header(rel: str, st: os.stat_result, link: "str | None") -> bytes:
    """One member's header: plain ustar when it fits (the common case, built directly), else PAX."""
    is_dir = link is None and stat.S_ISDIR(st.st_mode)
    text = rel + "/" if is_dir else rel  # as tar writes a directory
    name = text.encode("ascii", "replace")
    target = (link or "").encode("ascii", "replace")
    size = 0 if link is not None or is_dir else st.st_size
    if name.decode("ascii") == text and target.decode("ascii") == (link or "") \
            and len(name) <= 100 and len(target) <= 100 and size < 8 ** 11:
        kind = b"2" if link is not None else (b"5" if is_dir else b"0")
        h = bytearray(_BLOCK)
        h[0:len(name)] = name
        h[100:148] = b"%07o\0%07o\0%07o\0%011o\0%011o\0" % (st.st_mode & 0o7777, 0, 0, size,
                                                              max(0, int(st.st_mtime)))
        h[148:156] = b" " * 8
        h[156:157] = kind
        h[157:157 + len(target)] = target
        h[257:265] = b"ustar\x0000"
        h[148:156] = b"%06o\0 " % sum(h)
        return bytes(h)
    info = tarfile.TarInfo(rel)
    info.mode = st.st_mode & 0o7777
    info.mtime = int(st.st_mtime)
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    else:
        info.size = st.st_size
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def tar_stream(root: Path, dirs: "tuple[str, ...]", files: "tuple[str, ...]",
               kinds: "dict[str, str]") -> Iterator[bytes]:
    """Chunks of a tar archive of ``dirs`` then ``files`` (relative to ``root``), each read once.

    Small files are batched into about 1 MiB chunks; a large file's blocks go
    out as read, uncopied. A file that shrinks while it is read is padded
    with zeros (and the digest check then names it); one that grows is cut
    at its listed size.
    """
    buf, sent, base = bytearray(), 0, str(root)
    for rel in dirs:
        buf += _header(rel, os.lstat(os.path.join(base, rel)), None)
    for rel in files:
        path = os.path.join(base, rel)
        st = os.lstat(path)
        if kinds.get(rel) == "l":
            buf += _header(rel, st, os.readlink(path))
            continue
        buf += _header(rel, st, None)
        with open(path, "rb") as f:
            if st.st_size < CHUNK:
                buf += _exactly(f.read(st.st_size), st.st_size)
            else:
                sent += len(buf)
                yield bytes(buf)
                buf.clear()
                left = st.st_size
                while left > 0:
                    block = _exactly(f.read(min(CHUNK, left)), min(CHUNK, left))
                    left -= len(block)
                    sent += len(block)
                    yield block
        buf += b"\0" * (-st.st_size % _BLOCK)
        if len(buf) >= CHUNK:
            sent += len(buf)
            yield bytes(buf)
            buf.clear()
    buf += b"\0" * (2 * _BLOCK)
    buf += b"\0" * (-(sent + len(buf)) % tarfile.RECORDSIZE)
    yield bytes(buf)


def _exactly(data: bytes, size: int) -> bytes:
    return data if len(data) == size else data + b"\0" * (size - len(data))


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to a pipe's descriptor (a write to a pipe may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Sink:
    """One target's stdin: its own prefix (the plan line), then the shared payload, from its own thread."""

    def __init__(self, fd: int, prefix: bytes = b"", on_bytes: "Callable[[int], None] | None" = None):
        self.fd, self.prefix, self.on_bytes = fd, prefix, on_bytes
        self.error: "str | None" = None
        self.sent = 0
        self._queue: "queue.Queue[bytes | None]" = queue.Queue(QUEUE_CHUNKS)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, chunk: "bytes | None") -> None:
        """Queue a chunk (None: the end); blocks while this target is QUEUE_CHUNKS behind."""
        self._queue.put(chunk)

    def join(self) -> None:
        self._thread.join()

    def _run(self) -> None:
        try:
            write_all(self.fd, self.prefix)
            while (chunk := self._queue.get()) is not None:
                write_all(self.fd, chunk)
                self.sent += len(chunk)
                if self.on_bytes:
                    self.on_bytes(self.sent)
        except OSError as err:  # the receiver went away; its exit code and stderr say why
            self.error = err.strerror or str(err)
            while self._queue.get() is not None:
                pass
        finally:
            os.close(self.fd)


class Fanout:
    """Write the same chunks to every sink concurrently; stop early only when all readers are gone."""

    def __init__(self, sinks: "list[Sink]"):
        self.sinks = sinks

    def run(self, chunks: Iterator[bytes]) -> int:
        """Feed every chunk to every sink; the number of payload bytes produced."""
        for sink in self.sinks:
            sink.start()
        produced = 0
        try:
            for chunk in chunks:
                if all(s.error for s in self.sinks):
                    break
                produced += len(chunk)
                for sink in self.sinks:
                    sink.put(chunk)
        finally:
            for sink in self.sinks:
                sink.put(None)
            for sink in self.sinks:
                sink.join()
        return produced
