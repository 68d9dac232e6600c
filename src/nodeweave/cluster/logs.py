"""``nodeweave logs`` and ``exec``: every node's output, merged with ``[node-i]`` prefixes.

``logs`` passes the lines through ``logview.LogView``: each shows its node and, where the launcher marked
it, its rank (``[node-1 r3]``); ``--rank N`` keeps that rank's lines; the same line from several ranks is
printed once with their count (``[x8 node-0,node-1 r0-7]``); a rule marks where each new generation of a
recovering job starts (its lines go on in the same streams: the nodes relaunch inside their containers).

In run mode a container's own log is the job's (its entrypoint is the
training), read with ``podman/docker logs``, ``kubectl/oc logs`` or over ssh.
In hold mode the job runs in ``nodeweave run``, which writes every node's
output to the run folder as it arrives: those files are the logs, followed
(``-f``) until the run's ``run.json`` says it ended.

``exec`` runs one command on every node at once without the launcher (like ``sky exec`` or
pdsh), through each node's exec channel (``node.argv``, the one ``run`` uses); its lines are
printed the same way as they come, and every node's exit code is collected, none lost to the first.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from rich.console import Console
from rich.text import Text

from nodeweave.cluster.base import Backend, Node
from nodeweave.cluster.logview import LogView, rounds
from nodeweave.cluster.runfolder import own_log
from nodeweave.cluster.runner import COLOURS
from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.nodelists import ranges
from nodeweave.errors import EXIT_INTERRUPTED


def _print(console: Console, node_name: str, index: int, width: int, line: str) -> None:
    prefix = Text(f"[{node_name}]".ljust(width + 3), style=COLOURS[index % len(COLOURS)])
    console.print(prefix + Text(line), highlight=False, soft_wrap=True)


class _Printer:
    """Prints what a LogView lets through, each prefix in its node's colour and one space: `[node-1] text` stays
    what a grep finds, whatever prefix came before it (a collapsed line's is wider)."""

    def __init__(self, console: Console, colours: dict):
        self.console, self.colours = console, colours

    def __call__(self, rows) -> None:
        for node, prefix, text in rows:
            if not prefix:  # a generation's rule
                self.console.print(Text(text, style="bold"), highlight=False)
                continue
            style = COLOURS[self.colours.get(node, 0) % len(COLOURS)]
            self.console.print(Text(f"[{prefix}] ", style=style) + Text(text), highlight=False, soft_wrap=True)


def log_window(tail: Optional[int], since: Optional[str]) -> Tuple[str, ...]:
    """``--tail N`` and ``--since DURATION`` as podman, docker and kubectl all spell them; a duration of another
    shape is refused here (exit 2), not by the tool on every node."""
    if since is not None:
        import math

        from nodeweave.quantities import SINCE_WORDS, seconds, since_seconds

        back = since_seconds(since)
        if back is None:
            from nodeweave.errors import UsageError

            future = " (a time still to come)" if seconds(since) is None and since_seconds(since, now=1e12) else ""
            raise UsageError(f"--since {since!r} is not accepted{future}: {SINCE_WORDS}")
        if seconds(since) is None:  # a time (walk12 C2): the span back to it, which every engine and kubectl take
            since = f"{max(1, math.ceil(back))}s"
        elif not since.strip()[-1:].isalpha():  # plain seconds (walk9 A12), as the engines and kubectl take them
            since = f"{seconds(since):g}s"
    return (*(("--tail", str(tail)) if tail is not None else ()), *(("--since", since) if since else ()))


def _own_tail(node: Node, follow: bool, window: Tuple[str, ...]) -> Optional[int]:
    """N where ``--tail N`` is applied here to the node's whole log rather than by its engine: an engine whose tail
    splits lines written in pieces (``Remote.tail_splits_lines``, podman; walk14 A2: `--tail 1` gave an empty line,
    `--tail 3` two lines glued), with -f as without it (walk17 A21: `-f --tail 1` printed an empty line)."""
    if "--tail" not in window or not getattr(node.remote, "tail_splits_lines", False):
        return None
    return int(window[window.index("--tail") + 1])


def _lines_before(backend: Backend, node: Node, window: Tuple[str, ...], keep: int) -> int:
    """How many of the node's log lines a follow of its whole log skips to start at its last ``keep`` whole lines
    (the log as it is now, read once without -f: the follow replays it, then goes on with new lines)."""
    proc = subprocess.run(backend.logs(node, False, window), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL)
    return max(0, len(proc.stdout.splitlines()) - keep)


def _without_tail(window: Tuple[str, ...]) -> Tuple[str, ...]:
    at = window.index("--tail")
    return window[:at] + window[at + 2:]


def container_logs(backend: Backend, nodes: List[Node], follow: bool, console: Console, rank: Optional[int] = None,
                   collapse: bool = True, first_ranks: Optional[dict] = None, window: Tuple[str, ...] = ()) -> int:
    """Each node's container log; with ``follow``, interleaved as lines arrive until Ctrl-C. ``first_ranks``: {node
    name: its first global rank} where the spec fixes it (a static job), so torchrun's local ranks become global;
    ``window`` (``--tail N``, ``--since D``) is the engine's or kubectl's own, so a day's log is not read to show
    its end."""
    show = _Printer(console, {n.name: n.index for n in nodes})
    kept = {n.index: _own_tail(n, follow, window) for n in nodes}  # --tail N nodeweave applies itself, or None
    procs = [(n, subprocess.Popen(backend.logs(n, follow, window if kept[n.index] is None else _without_tail(window)),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
             for n in nodes]
    lines: "queue.Queue" = queue.Queue()
    skip = {n.index: _lines_before(backend, n, _without_tail(window), kept[n.index])
            for n in nodes if follow and kept[n.index] is not None}  # the follow's own --tail N (walk17 A21)

    def read(node, proc):
        for count, raw in enumerate(iter(proc.stdout.readline, b"")):
            if count >= skip.get(node.index, 0):
                lines.put((node, raw.decode("utf-8", errors="replace").rstrip("\r\n")))
        lines.put((node, None))

    if not follow:
        view = LogView(rank, collapse, first_ranks=first_ranks)
        streams = []
        for node, proc in procs:
            read = deque(proc.stdout, maxlen=kept[node.index])  # maxlen None: every line
            streams.append((node.name, [raw.decode("utf-8", errors="replace").rstrip("\r\n") for raw in read]))
            proc.wait()
        for name, line in rounds(streams):
            show(view.feed(name, line))
        show(view.flush())
        _refuse_unseen_rank(view)
        return max((p.returncode for _, p in procs), default=0)
    view = LogView(rank, collapse, hold_s=0.5, first_ranks=first_ranks)
    for node, proc in procs:
        threading.Thread(target=read, args=(node, proc), daemon=True).start()
    open_streams = len(procs)
    interrupted = False
    try:
        while open_streams:
            try:
                node, line = lines.get(timeout=0.2)
            except queue.Empty:
                show(view.tick())
                continue
            if line is None:
                open_streams -= 1
            else:
                show(view.feed(node.name, line))
    except KeyboardInterrupt:  # the end of -f, yet an interruption: 130 once the streams are closed (walk9 A17)
        interrupted = True
    finally:
        show(view.flush())
        for _, proc in procs:
            if proc.poll() is None:
                proc.terminate()
    return EXIT_INTERRUPTED if interrupted else 0


def run_logs(folder: Path, indices: List[int], follow: bool, console: Console, poll: float = 0.3,
             rank: Optional[int] = None, collapse: bool = True, tail: Optional[int] = None) -> int:
    """The node logs of a run folder; with ``follow``, new lines until the run has ended; ``tail``: only each
    node's last lines of what is there now (each file's end is read, not all of it), then what comes."""
    files = sorted(folder.glob("node-*.log"), key=lambda p: int(p.stem.split("-")[1]))
    files = [own_log(f, "--node") for f in files if not indices or int(f.stem.split("-")[1]) in indices]
    show = _Printer(console, {f.stem: int(f.stem.split("-")[1]) for f in files})
    view = LogView(rank, collapse, hold_s=2 * poll if follow else None, first_ranks=first_ranks(folder))
    handles = {f: open(f, "rb") for f in files}
    pending = {f: b"" for f in files}
    if tail is not None:
        for f, handle in handles.items():
            pending[f] = _last_lines(handle, tail)
    ended = False
    if follow and not _ended(folder):  # what the follow waits for, said once: a run cut off never records its end
        import sys

        print(f"nodeweave: logs: following {folder.name} until its run.json records the end; a run cut off (its "
              "`nodeweave run` killed, the cluster taken down) never does: `nodeweave status` says whether the "
              "nodes still run it, Ctrl-C stops following", file=sys.stderr, flush=True)
    interrupted = False
    try:
        while True:
            ended = _ended(folder)
            streams = []
            for f, handle in handles.items():
                data = pending[f] + handle.read()
                *complete, pending[f] = data.split(b"\n")
                streams.append((f.stem, [raw.decode("utf-8", errors="replace").rstrip("\r") for raw in complete]))
            if not follow or ended:  # a last line without its newline
                for (_, lines), rest in zip(streams, pending.values()):
                    if rest:
                        lines.append(rest.decode("utf-8", "replace"))
            for name, line in rounds(streams):
                show(view.feed(name, line))
            show(view.tick())
            if not follow or ended:
                break
            time.sleep(poll)
    except KeyboardInterrupt:  # the end of -f, yet an interruption: 130 once the streams are closed (walk9 A17)
        interrupted = True
    finally:
        show(view.flush())
        for handle in handles.values():
            handle.close()
    if interrupted:
        return EXIT_INTERRUPTED
    if not follow or ended:  # every line is read: a rank none of them is marked with is said
        _refuse_unseen_rank(view)
    return 0


def first_ranks(folder: Path) -> "dict[str, int]":
    """{node-i: its first global rank} from the run's ``node-i.plan.json``: node rank x processes per node, as
    torchrun numbers a static job's ranks; a node whose plan is missing, unreadable, elastic or under recovery
    (a role: the rendezvous numbers a generation's ranks) is left out, so its local ranks stay local."""
    found = {}
    for plan_file in folder.glob("node-*.plan.json"):
        try:
            plan = json.loads(bounded.read_own(plan_file, bounded.RECORD_CAP, "a node's plan"))
            topology = plan["topology"]
            rank, procs = topology["node_rank"]["value"], topology["nproc_per_node"]["value"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue
        role = plan.get("role") or {}  # every plan has one; a generation's (recovery) is the rendezvous' to number
        if topology.get("elastic") or not isinstance(role, dict) or role.get("generation") is not None:
            continue  # walk14 A5: the role of every plan, generation null, kept every static job's ranks local
        if isinstance(rank, int) and isinstance(procs, int) and not isinstance(rank, bool) and procs > 0:
            found[plan_file.name[:-len(".plan.json")]] = rank * procs
    return found


def _last_lines(handle, count: int, block: int = 1 << 16) -> bytes:
    """The last ``count`` complete lines of an open log (and a last line without its newline), read from its end;
    the handle is left at the end, where following goes on."""
    handle.seek(0, 2)
    end = handle.tell()
    at, data = end, b""
    while at > 0 and data.count(b"\n") <= count:
        at = max(0, at - block)
        handle.seek(at)
        data = handle.read(end - at)
    handle.seek(end)
    lines = data.split(b"\n")
    rest = lines.pop()  # after the last newline: a line still being written, one of the count as tail counts it
    if not count:
        return b""
    room = count - (1 if rest else 0)  # complete lines kept beside the partial one
    kept = lines[max(0, len(lines) - room):] if room else []
    return b"".join(line + b"\n" for line in kept) + rest


def _refuse_unseen_rank(view: LogView) -> None:
    problem = view.rank_problem()
    if problem is not None:
        from nodeweave.errors import UsageError

        raise UsageError(problem)


def _ended(folder: Path) -> bool:
    """Whether run.json says the run ended; a record cut short or not a mapping has not said so (yet)."""
    try:
        data = json.loads(bounded.read_own(folder / "run.json", bounded.RECORD_CAP, "a run record"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("ended") is not None


@dataclass
class NodeResult:
    node: Node
    exit_code: Optional[int]  # None: still running when the timeout came (its exec client killed)
    seconds: float
    last_line: str = ""
    cause: Optional[str] = None  # a failed node's worker's own error line (symptoms.cause, walk9 A3)
    ended: Optional[str] = None  # a node cut at the timeout: what ending its command there found (end_on_nodes)

    def to_dict(self) -> dict:
        return {"node": self.node.name, "reached_as": self.node.remote.label, "exit_code": self.exit_code,
                "seconds": round(self.seconds, 3), "last_line": self.last_line, "cause": self.cause,
                **({"ended": self.ended} if self.ended is not None else {})}


def exec_everywhere(nodes: List[Node], command: List[str], console: Optional[Console], env: Mapping[str, str] = (),
                    timeout: Optional[float] = None, argv: Optional[List[List[str]]] = None,
                    hidden=None, stoppers: Optional[List[List[str]]] = None) -> List[NodeResult]:
    """Run ``command`` on every node at once (``argv``: each node's, as its plan says); lines printed as they
    come (``console`` None: kept quiet). ``hidden``: the values of the hidden ``-e`` variables
    (``nodeweave.hidden.Hidden``), filled in here, at the spawn, and in each exec client's environment.
    ``stoppers``: each node's argv that ends its command there (``nodeweave.cluster.execstop``), run for every node
    still running it at the timeout or Ctrl-C (walk10 C4, C5); without them those nodes are named as left running."""
    import os

    from nodeweave.hidden import NONE

    hidden = hidden or NONE
    start = time.monotonic()
    width = max(len(n.name) for n in nodes)
    argv = argv if argv is not None else [node.argv(command, env) for node in nodes]
    from nodeweave.cluster.runner import spawn_client

    procs = [spawn_client(hidden.argv(line), env=hidden.environment(os.environ) if hidden else None)
             for line in argv]  # each in a session of its own: a terminal's Ctrl-C reaches only this process
    lines: "queue.Queue" = queue.Queue()
    last = {node.index: "" for node in nodes}
    ended = {}

    def read(node, proc):
        for raw in iter(proc.stdout.readline, b""):
            lines.put((node, raw.decode("utf-8", errors="replace").rstrip("\r\n")))
        proc.wait()
        ended[node.index] = time.monotonic() - start
        lines.put((node, None))

    for node, proc in zip(nodes, procs):
        threading.Thread(target=read, args=(node, proc), daemon=True).start()
    cut: "set[int]" = set()  # the clients this side ended (the timeout, Ctrl-C): their nodes' commands were not
    tails = {node.index: deque(maxlen=TAIL_LINES) for node in nodes}
    try:
        _drain(lines, len(nodes), last, console, width, start, timeout, procs, cut,
               lambda: [i for i, node in enumerate(nodes) if node.index not in ended], tails)
    except KeyboardInterrupt:
        from nodeweave.errors import NodeweaveError

        named = [nodes[i] for i in sorted(cut)]
        found = end_on_nodes(named, [stoppers[i] for i in sorted(cut)]) if stoppers and named else {}
        said = ended_line(named, found, command, "stopped") if named else ""
        before = ended_before(nodes, procs, cut)  # what the others had done (walk12c C15: every node's state)
        said = "; ".join(part for part in (said, before) if part)
        raise NodeweaveError((f"interrupted: {said}" if said else "interrupted") + "; " + AGAIN_EXEC,
                             EXIT_INTERRUPTED) from None
    found = end_on_nodes([nodes[i] for i in sorted(cut)], [stoppers[i] for i in sorted(cut)]) if stoppers and cut \
        else {}
    results = [NodeResult(node, None if i in cut or node.index not in ended else proc.returncode,
                          ended.get(node.index, time.monotonic() - start), last[node.index],
                          ended=found.get(node.index, "not asked") if i in cut and stoppers else None)
               for i, (node, proc) in enumerate(zip(nodes, procs))]
    from nodeweave.entrypoint.running.symptoms import cause, last_said

    for result in results:  # its last line that says something, never a banner rule (walk15a A12)
        result.last_line = last_said("\n".join(tails[result.node.index])) or result.last_line
        if result.exit_code is not None and result.exit_code != 0:
            result.cause = cause("\n".join(tails[result.node.index]))
    return results


TAIL_LINES = 200  # a node's last lines kept for its failure's cause (past torchrun's ChildFailedError frames)


AGAIN_EXEC = "`nodeweave exec` again runs the command on every node again (`--node N` picks some)"


def ended_before(nodes: List[Node], procs, cut: "set[int]") -> str:
    """"it had ended before the Ctrl-C on node-0 .. node-2 (exit 0), node-3 (exit 1)": the nodes whose command ended
    on its own, with their exits grouped as ranges (noted_ranges); "" when none had."""
    from nodeweave.entrypoint.nodelists import noted_ranges

    ended = [(node.name, f"exit {proc.returncode}") for i, (node, proc) in enumerate(zip(nodes, procs))
             if i not in cut and proc.returncode is not None]
    return f"it had ended before the Ctrl-C on {noted_ranges(ended)}" if ended else ""


def end_on_nodes(nodes: List[Node], stoppers: List[List[str]]) -> "dict[int, str]":
    """Each node's stopper (``nodeweave.cluster.execstop.STOP``) at once: {node index: its one word (ended, killed,
    gone, none), or "unreachable: <why>"}; a second Ctrl-C stops waiting (those not answered: "interrupted")."""
    from nodeweave.cluster.execstop import ANSWERS, GRACE_S

    found: "dict[int, str]" = {}

    def one(node: Node, line: List[str]) -> None:
        try:
            done = subprocess.run(line, capture_output=True, text=True, timeout=GRACE_S + 30,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            found[node.index] = f"unreachable: {err}"
            return
        words = done.stdout.split()
        if done.returncode == 0 and words and words[-1] in ANSWERS:
            found[node.index] = words[-1]
        else:
            why = (done.stderr or done.stdout).strip().splitlines()
            found[node.index] = (f"answered {words[-1][:40]!r}" if done.returncode == 0 and words else
                                 f"unreachable: {why[-1][:160] if why else f'exit {done.returncode}'}")

    threads = [threading.Thread(target=one, args=(n, line), daemon=True) for n, line in zip(nodes, stoppers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        pass
    return {n.index: found.get(n.index, "interrupted") for n in nodes}


def ended_line(named: List[Node], found: "dict[int, str]", command: List[str], verb: str) -> str:
    """What ending the command on the nodes ``named`` did, every node alike: "stopped on node-0, node-1" (``verb``:
    stopped at Ctrl-C, ended at the timeout), those SIGKILL was needed for said so, and the nodes it could not be
    ended on (no pid record, unreachable) named with the pkill that ends it (:func:`left_running`)."""
    from nodeweave.cluster.execstop import ANSWERS, GRACE_S

    done = [n for n in named if found.get(n.index) in ("ended", "killed", "gone")]
    killed = [n for n in named if found.get(n.index) == "killed"]
    left = [n for n in named if n not in done]
    parts = []
    if done:
        parts.append(f"{verb} on {ranges([n.name for n in done])}" + (
            f" (SIGKILL on {ranges([n.name for n in killed])}: still running {GRACE_S} s after SIGTERM)"
            if killed else ""))
    if left:
        why = ranges(f"{n.name} ({ANSWERS.get(found.get(n.index) or '', found.get(n.index) or 'not asked')})"
                     for n in left)
        parts.append(f"could not end it on {why}; {left_running(left, command)}")
    return "; ".join(parts)


def left_running(named: List[Node], command: List[str]) -> str:
    """What ending an exec client here leaves on the nodes ``named`` where the command could not be ended there
    (walk10 C4, C5): killing ``podman exec``, ``kubectl exec`` or ``ssh`` ends the client, not the command it
    started there; the nodes named, and the command that ends it."""
    import shlex

    pattern = shlex.quote(" ".join(command))
    picked = ",".join(str(n.index) for n in named)
    return (f"the command may still be running on {ranges([n.name for n in named])} (only its exec client here "
            f"was ended, not the command on the node): `nodeweave exec --node {picked} -- pkill -f {pattern}` ends "
            "it")


def _drain(lines, streams: int, last: dict, console, width: int, start: float, timeout, procs,
           cut: "set[int]", running, tails=None) -> None:
    """Print lines until every stream closed; past ``timeout`` (or on Ctrl-C) the rest are killed, their
    positions added to ``cut``; at a Ctrl-C, also those ``running()`` names (the clients run in sessions of their
    own, ``runner.spawn_client``: the terminal's Ctrl-C reaches this process alone, never them)."""
    try:
        while streams:
            left = None if timeout is None else timeout - (time.monotonic() - start)
            if left is not None and left <= 0:
                break
            try:
                node, line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                streams -= 1
                continue
            if line.strip():
                last[node.index] = line.strip()
                if tails is not None:
                    tails[node.index].append(line)
            if console is not None:
                _print(console, node.name, node.index, width, line)
    except KeyboardInterrupt:
        cut.update(running())
        raise
    finally:
        for i, proc in enumerate(procs):
            if proc.poll() is None:
                cut.add(i)
                proc.kill()
                proc.wait()


def common_exit(codes: List[Optional[int]]) -> int:
    """The exit of a command that ended on every node (``codes``, none cut): its own code where every node ended
    with the same one (a client that died of signal N: 128 + N, as a shell says it), else 1; 0 only for all 0."""
    same = set(128 - code if code is not None and code < 0 else code for code in codes)
    if len(same) == 1 and None not in same:
        return int(same.pop()) & 0xFF or (1 if any(codes) else 0)
    return 1


def summary(results: List[NodeResult], command: Optional[List[str]] = None) -> str:
    """``2 node(s): all exit 0``, or which nodes failed and how, and which timed out and what became of the command
    there: ended (:func:`ended_line`), or, where it could not be, what may still run (:func:`left_running`)."""
    bad = [r for r in results if r.exit_code != 0]
    if not bad:
        return f"{len(results)} node(s): all exit 0"
    failed = [r for r in bad if r.exit_code is not None]
    late = [r for r in bad if r.exit_code is None]
    parts = []
    if failed:
        described = ranges(f"{r.node.name} exit {r.exit_code}" + (f" ({r.cause[:160]})" if r.cause else
                                                                 f" ({r.last_line[:80]})" if r.last_line else "")
                           for r in failed)
        parts.append(f"{len(failed)} of {len(results)} node(s) failed: {described}")
    if late:
        names = [r.node for r in late]
        if command and all(r.ended is not None for r in late):
            what = ended_line(names, {r.node.index: r.ended for r in late}, command, "ended")
        elif command:
            what = left_running(names, command)
        else:
            what = ranges([n.name for n in names])
        parts.append(f"{len(late)} of {len(results)} node(s) timed out: {what}")
    return "; ".join(parts)
