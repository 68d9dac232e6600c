"""A target's session: start the agent, send the request, read what differs, then plan and payload.

Over the target's own exec, or over a channel of a tunnel through the head
(``headlink.py``), which looks the same from here.

The exec runs a constant ``sh`` launcher: with python3 it execs the agent
(the source of ``digest.py``, ``untar.py``, ``peer.py``, ``resident.py``,
``tunnel.py`` and ``agent.py``, as ``python3 -c``); without, it
prints ``nopython``, the tools it has and whether DEST was made, the sync's
probe folded into the same exec. So a target costs one exec start however
the sync goes, and a second only where python3 is missing.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import queue
import subprocess
import threading
from pathlib import Path

from nodeweave.remote import Remote
from nodeweave.sync.node import addresses, agent, digest, peer, resident, tunnel, untar
from nodeweave.sync.transport.plan import Manifest

# The agent's modules in the order each defines what the next uses; one program, sent as ``python3 -c``.
AGENT_PROGRAM = "\n".join(Path(m.__file__).read_text(encoding="utf-8")
                          for m in (digest, untar, addresses, peer, resident, tunnel, agent))
PROGRAM_ID = hashlib.sha256(AGENT_PROGRAM.encode()).hexdigest()[:16]  # a resident runs this program or is not used
# $1 = the agent's program, $2 = DEST, $3 = "dry" (create nothing), "make" or "tunnel" (``tunnel.py``). Constant.
# Both branches end only after stdin's EOF: podman 4.3's exec drops output now and then when the
# process exits while the client's stdin is still open, so the source closes it first.
LAUNCH = ('if command -v python3 >/dev/null 2>&1; then exec python3 -I -S -c "$1" "$2" "$3"; fi; echo nopython; '
          'for t in rsync tar find sha256sum; do command -v "$t" >/dev/null 2>&1 && echo "has:$t"; done; '
          'if [ "$3" = dry ] && [ ! -e "$2" ]; then echo dest:absent; '
          'else mkdir -p -- "$2" && test -w "$2" && echo dest:ok; fi; cat >/dev/null')
PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size: fewer wake-ups per MiB sent
MANIFEST_TIMEOUT_S = 900.0  # a cold cache hashes the whole tree on the target
RESULT_TIMEOUT_S = 900.0
MAX_LINE = agent.MAX_LINE  # an answer longer than this is refused (the agent bounds what it reads too)


class TransferError(Exception):
    def __init__(self, message: str, transient: bool):
        super().__init__(message)
        self.transient = transient


def stderr_tail(raw: "bytes | str") -> str:
    from nodeweave.failures import tool_message

    return tool_message(raw.decode(errors="replace") if isinstance(raw, bytes) else raw)


def session_argv(target: Remote, dest: str, mode: str, program: str = AGENT_PROGRAM) -> "list[str]":
    """The exec that starts the agent: ``mode`` is "dry", "make" or "tunnel"; ``program`` a word in its place
    in a plan (``nodeweave.sync.syncplan``)."""
    return target.exec_argv(["sh", "-c", LAUNCH, "sh", program, dest, mode])


class Session:
    """The agent's side of one target, driven line by line; nothing here knows the target's kind.

    ``proc`` is the exec running the agent: started here, or a tunnel's channel (``headlink.py``).
    """

    def __init__(self, target: Remote, dest: str, dry: bool, proc=None):
        self.target, self.dest = target, dest
        try:
            self.proc = proc or subprocess.Popen(session_argv(target, dest, "dry" if dry else "make"),
                                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, bufsize=0)
        except FileNotFoundError as err:
            raise TransferError(f"{err.filename} is not installed here", transient=False) from None
        try:
            fcntl.fcntl(self.proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass
        self._lines: "queue.Queue[bytes | None]" = queue.Queue()
        self._stderr: "list[bytes]" = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_thread = threading.Thread(target=lambda: self._stderr.append(self.proc.stderr.read()),
                                               daemon=True)
        self._stderr_thread.start()

    def _read_stdout(self) -> None:
        # stdin is unbuffered (bufsize=0: the payload goes straight to the pipe), so stdout is
        # too; a buffer here keeps readline() from reading a 400 KB manifest a byte at a time.
        reader = io.BufferedReader(self.proc.stdout, 1 << 16)
        while (line := reader.readline(MAX_LINE + 1)) and len(line) <= MAX_LINE:
            self._lines.put(line)
        self._lines.put(None)

    def _line(self, timeout: float, stage: str) -> bytes:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise TransferError(f"no answer from the target within {timeout:.0f}s ({stage})", transient=True)
        if line is None:
            raise self.failure(stage)
        return line

    def failure(self, stage: str) -> TransferError:
        """Why the exec ended early: its exit code and the last words of its stderr."""
        code = self.proc.wait()
        self._stderr_thread.join(timeout=10)
        stderr = stderr_tail(b"".join(self._stderr))
        what = "cannot reach it" if stage == "connect" else f"{stage} failed"
        transient = getattr(self.proc, "tunnel", False) or self.target.transient(code, stderr)
        return TransferError(f"{what} (exit {code}): {stderr}", transient)

    def open(self, request: "Request", timeout: float = MANIFEST_TIMEOUT_S) -> Manifest:
        """Send the request; the target's answer: what differs there, or (no python3) its tools."""
        self._writer = threading.Thread(target=self._write_quietly, args=(request.line, request.last),
                                        daemon=True)
        self._writer.start()
        first = self._line(timeout, "connect")
        self._writer.join()
        if first.strip() != b"nopython":
            answer = json.loads(first)
            return Manifest(python=True, tools=frozenset(answer["tools"]) | {"python3"},
                            dest_ok=bool(answer["dest_ok"]), dest_absent=bool(answer["dest_absent"]),
                            dest_why=answer.get("dest_why"),
                            quick=request.quick, differ=answer["differ"],
                            missing_dirs=frozenset(answer["missing_dirs"]),
                            extras=[(rel, bool(d)) for rel, d in answer.get("extras", [])],
                            stamp=answer.get("stamp"), done=bool(answer.get("done")),
                            listen=answer.get("listen"), resident=answer.get("resident"),
                            listen_error=answer.get("listen_error"), leftovers=answer.get("leftovers", []))
        self._close_stdin()
        lines = []
        while (line := self._lines.get(timeout=60)) is not None:
            lines.append(line.decode(errors="replace").strip())
        self.proc.wait()
        return Manifest(python=False, tools=frozenset(ln[4:] for ln in lines if ln.startswith("has:")),
                        dest_ok="dest:ok" in lines or "dest:absent" in lines,
                        dest_absent="dest:absent" in lines, quick=True)

    def _write_quietly(self, data: bytes, close: bool = False) -> None:
        try:
            self.proc.stdin.write(data)
        except (BrokenPipeError, ValueError, OSError):
            pass  # the far side ended; its exit code says why
        if close:
            self._close_stdin()

    def _close_stdin(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def say(self, message: dict, close: bool = False) -> None:
        """One line to the agent (a plan, a ``go``); ``close`` ends its stdin after it.

        Through a tunnel it returns once the line is on the head's link (``Channel.wait_framed``), so
        nothing written afterwards, to any node, can reach the head before it.
        """
        self._write_quietly(plan_line(message), close=close)
        wait_framed = getattr(self.proc, "wait_framed", None)
        if wait_framed is not None:
            wait_framed()

    def hear(self, timeout: float, stage: str) -> dict:
        """The agent's next line (a hop report, a result); a failure if it ends or says nothing in time."""
        return json.loads(self._line(timeout, stage))

    def payload_fd(self) -> int:
        """A descriptor of the agent's stdin for the payload writer, which closes it when done."""
        fd = os.dup(self.proc.stdin.fileno())
        self.proc.stdin.close()
        return fd

    def finish(self, plan: "dict | None" = None, timeout: float = RESULT_TIMEOUT_S) -> dict:
        """Send ``plan`` (unless the payload writer already did) and read the agent's result."""
        if plan is not None:
            self._write_quietly(plan_line(plan), close=True)
        answer = json.loads(self._line(timeout, "receive"))
        self.proc.wait()
        return answer

    def close(self) -> None:
        """End a session that was asked for its manifest only (dry run, check)."""
        self._close_stdin()
        self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def plan_line(plan: dict) -> bytes:
    return (json.dumps(plan) + "\n").encode("utf-8", "surrogateescape")


class Request:
    """The first line every agent of a round reads: encoded once, written to each."""

    def __init__(self, signatures: "dict[str, str]", dirs: "list[str]", *, then: str, dry: bool = False,
                 quick: bool = False, extras: bool = False, stamp: str = "", relay: bool = False,
                 keep: "float | None" = None):
        self.quick, self.last = quick, then != "plan"  # nothing follows an ``exit`` request: stdin ends
        message = {"sigs": signatures, "dirs": dirs, "dry": dry, "quick": quick, "extras": extras,
                   "then": then, "stamp": stamp, "relay": relay}
        if keep:  # each node keeps (or starts) its resident agent for this long without a sync
            message["keep"] = {"program": PROGRAM_ID, "idle": keep}
        self.line = plan_line(message)
