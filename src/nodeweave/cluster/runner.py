"""Start a command on every node at once and see it through: live output, first failure, Ctrl-C.

Each node runs ``nodeweave-entrypoint --mode run --run-id ID -- COMMAND``
through its exec channel, so its rank, master, NCCL/RCCL variables and
launcher come from the plan its own entrypoint makes, as in run mode. The
exec clients run in sessions of their own: a Ctrl-C reaches nodeweave only,
which then stops the job on every node the way ``nodeweave stop`` does
(``nodeweave-entrypoint --node stop``: SIGTERM to every process of the run,
SIGKILL after the grace). The first node to fail stops the others the same
way (one its own entrypoint stopped because another failed, exit 5, is not
the one named: ``failed_first``); a client still running ``grace + 20`` s after a stop began is killed
here. Every line is written to the node's log in the run folder as it
arrives and shown with a ``[node-i]`` prefix.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Sequence

from rich.console import Console
from rich.control import strip_control_codes
from rich.text import Text

from nodeweave.cluster.base import Node
from nodeweave.entrypoint.nodelists import noted_ranges, ranges
from nodeweave.steps import fan_out
from nodeweave.usertext import styled

COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")
STOP_MARGIN = 20.0  # seconds past the grace before a still-running exec client is killed here
SPAWN_JOBS = 32  # exec clients started at once (ssh handshakes, kubectl/podman exec calls in flight)


@dataclass
class RunRequest:
    run_id: str
    command: List[str]
    env: Dict[str, str] = field(default_factory=dict)
    profile: Optional[str] = None
    grace: float = 10.0
    recovery: bool = False  # recovery.enabled: node 0 restarts the job; node 0's exit is the run's
    nnodes: Optional[int] = None  # run --nodes N: the entrypoint's --nnodes flag, which overrides every count

    def entrypoint_args(self) -> List[str]:
        profile = ["--profile", self.profile] if self.profile else []
        count = ["--nnodes", str(self.nnodes)] if self.nnodes is not None else []
        return ["--mode", "run", "--run-id", self.run_id, *profile, *count, "--", *self.command]

    def variables(self) -> Dict[str, str]:
        """``env``, and each topology flag nodeweave passes a node (run --nodes' ``--nnodes``, a check's
        ``--nproc-per-node 1``) as its own NODEWEAVE_* variable too, in front of the entrypoint: it replaces the
        node's up-time variable, which nodeweave wrote, so nodeweave's own plumbing never trips the entrypoint's
        "flag --nnodes (1) overrides NODEWEAVE_NNODES=2" warning, a line no user can act on (walk17a A16). The flag
        stays: it still wins over a platform's own count."""
        from nodeweave.entrypoint.planning.contract import SETTINGS

        args = self.entrypoint_args()
        args = args[:args.index("--")] if "--" in args else args
        given = dict(zip(args, args[1:]))
        flags = {row.flag: row.variable for row in SETTINGS if row.topology}
        return {**self.env, **{flags[flag]: value for flag, value in given.items() if flag in flags}}


# A node's last lines kept for its failure's summary: enough to reach past torchrun's ChildFailedError frames (about
# 30 lines) to the worker's own error line (``symptoms.cause``, walk9 A3).
TAIL_LINES = 200


@dataclass
class NodeRun:
    node: Node
    argv: List[str]
    proc: "subprocess.Popen[bytes]"
    log: object
    started: float
    first_output: Optional[float] = None
    ended: Optional[float] = None
    code: Optional[int] = None
    tail: Deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    stop_report: Optional[dict] = None
    killed_here: bool = False
    stream_done: bool = False          # its output read to the end
    exited_at: Optional[float] = None  # when its exit was first seen (its last lines may still be in the pipe)


OUTPUT_WAIT_S = 2.0  # how long an ended node's last lines are waited for before its exit is judged without them


def spawn_client(argv: Sequence[str], env=None) -> "subprocess.Popen[bytes]":
    """One exec client of a command that runs on a node (``podman exec``, ``kubectl exec``, ``ssh``, ``srun``): its
    output piped here, no stdin, and in a session of its own (walk14a A7). A terminal's Ctrl-C goes to its whole
    foreground process group: a client there would die of it at once while the command it started keeps running on
    the node, and its exit would read as the node failing. In its own session only nodeweave gets the Ctrl-C, which
    then ends the command on every node (``run``, ``check``: ``nodeweave stop``'s way; ``exec``: its pid's stopper)
    and says ``interrupted``. The one spawn of every verb that starts a command on the nodes."""
    return subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)


def launch_argv(nodes: List[Node], request: RunRequest) -> List[List[str]]:
    """What starts ``request`` on ``nodes``: every node's exec of its entrypoint, or the one launch that starts
    them all (a Slurm step). A run's or a check's plan records it (``runplan``, ``check.plan``); the one place
    it is derived."""
    group = nodes[0].group if nodes else None
    if group is not None:
        return [list(group.first(len(nodes)).argv(request))]
    return [node.entrypoint_argv(request.entrypoint_args(), request.variables()) for node in nodes]


class Runner:
    """One run over ``nodes``; :meth:`run` returns when every node's exec client has ended.

    ``argv``: what each node's exec client runs, exactly as the plan recorded it (``Phase.launches``), one per
    node (a Slurm step: one for all); the runner derives none of its own, so the dry run's argv is the spawned one.
    """

    def __init__(self, nodes: List[Node], request: RunRequest, argv: Sequence[Sequence[str]], folder,
                 console: Console, quiet: bool = False, hidden=None):
        from nodeweave.hidden import NONE

        self.nodes, self.request, self.folder, self.console, self.quiet = nodes, request, folder, console, quiet
        self.hidden = hidden or NONE  # hidden -e values: filled in at the spawn only (nodeweave.hidden)
        self.argv = [list(a) for a in argv]
        if len(self.argv) != self.launches:
            raise ValueError(f"{len(self.argv)} planned argv for {self.launches} launch(es)")  # a caller's bug
        self.lines: "queue.Queue[tuple]" = queue.Queue()
        self.runs: List[NodeRun] = []
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self.first_failure: Optional[NodeRun] = None
        self.interrupted = False
        self.abandoned = False
        self.stop_began: Optional[float] = None
        self.stop_due: Optional[float] = None  # a node stopped on purpose: when to stop the others from here
        self.stopper: Optional[threading.Thread] = None
        self.width = max(len(n.name) for n in nodes)
        self.prefixes: Dict[int, tuple] = {}
        self.kept_here = None  # a run folder whose record copies the nodes' kept files: their paths shown as here

    @property
    def launches(self) -> int:
        """How many exec clients a run starts: one per node."""
        return len(self.nodes)

    # --- starting ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Every node's exec client, SPAWN_JOBS at a time: a spawn returns only once the client has exec'd,
        which on a busy machine takes tens of ms, so one after another the 64th node started 1.3-1.8 s after
        the first (docs/benchmarks.md); the clients then all run at once."""
        self.runs = fan_out(self._spawn, list(zip(self.nodes, self.argv)), jobs=SPAWN_JOBS)

    def _spawn(self, planned: "tuple[Node, List[str]]") -> NodeRun:
        node, argv = planned
        log = open(self.folder.log_path(node.name), "wb")
        proc = spawn_client(self.hidden.argv(argv), env=self.spawn_env())
        run = NodeRun(node, argv, proc, log, time.monotonic() - self.t0)  # the argv as planned, never filled
        threading.Thread(target=self._read, args=(run,), daemon=True).start()
        return run

    def seen_here(self, text: str) -> str:
        """A node's line as this machine shows and logs it: the node paths of the files the run's record copies
        into the run folder (``runfolder.as_kept_here``) as the copies' paths (walk14a A1)."""
        if self.kept_here is None:
            return text
        from nodeweave.cluster.runfolder import as_kept_here

        return as_kept_here(text, self.kept_here)

    def _read(self, run: NodeRun) -> None:
        for raw in iter(run.proc.stdout.readline, b""):
            if self.kept_here is not None and b"launcher-after-stop-node-" in raw:
                raw = self.seen_here(raw.decode("utf-8", errors="replace")).encode()
            now = time.monotonic() - self.t0
            if run.first_output is None:
                run.first_output = now
            run.log.write(raw)
            run.log.flush()
            self.lines.put((run, raw.decode("utf-8", errors="replace").rstrip("\r\n"), now))
        self.lines.put((run, None, time.monotonic() - self.t0))

    def spawn_env(self):
        """An exec client's environment: this one's, with every hidden -e value (``podman exec -e NAME`` reads it
        there); None (this one's as it is) when there is none."""
        import os

        return self.hidden.environment(os.environ) if self.hidden else None

    # --- watching ------------------------------------------------------------------------------------
    def run(self) -> "Runner":
        # SIGTERM and SIGHUP (and a closed stdout) come here as SIGINT: nodeweave.endings, one rule for every verb
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT,)}
        try:
            self.start()
            open_streams = len(self.runs)
            while open_streams or any(r.code is None for r in self.runs):
                open_streams -= self._show(timeout=0.1)
                self._reap()
                self._enforce()
            if self.stopper is not None and not self.abandoned:  # the nodes' stop reports, for the record
                self.stopper.join(timeout=self.request.grace + STOP_MARGIN)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for run in self.runs:
                run.log.close()
        return self

    def _show(self, timeout: float) -> int:
        """Print what arrived (one write for every line waiting: at 64 nodes hundreds of lines come within
        a second, and a styled print per line cost the CLI ~1 ms each); the number of streams that ended."""
        ended, batch = 0, []
        deadline = time.monotonic() + timeout
        while not (batch and time.monotonic() > deadline):  # a node that never pauses cannot hold the loop
            try:
                run, line, _ = self.lines.get(timeout=max(0.0, deadline - time.monotonic()) if not batch else 0)
            except queue.Empty:
                break
            if line is None:
                ended += 1
                run.stream_done = True
                continue
            run.tail.append(line)
            if not self.quiet:
                start, label, end = self._prefix(run.node)  # control codes and tabs: as rich's Text does them
                batch.append(start + (label + strip_control_codes(line)).expandtabs(8) + end + "\n")
        if batch:
            self.console.file.write("".join(batch))
            self.console.file.flush()
        return ended

    def _prefix(self, node: Node) -> "tuple[str, str, str]":
        """The colour's start, ``[node-i]`` padded, the colour's end: the whole line in the node's colour where
        the console shows colour (as a styled print of it did); rendered once per node."""
        if node.index not in self.prefixes:
            with self.console.capture() as captured:
                self.console.print(Text("X", style=COLOURS[node.index % len(COLOURS)]), end="", highlight=False)
            start, _, end = captured.get().partition("X")
            self.prefixes[node.index] = (start, f"[{node.name}]".ljust(self.width + 3), end)
        return self.prefixes[node.index]

    def _reap(self) -> None:
        """Each node whose client ended, once its output is read to the end (or a moment after its exit, should
        something it started hold the pipe open): its last lines say why it ended, and how it is judged reads them
        (walk15a A11 on a loaded machine: node-0's exit 5 was judged before its "(exit 5: another node failed)"
        line arrived, and it was named as failing first)."""
        now = time.monotonic()
        for run in self.runs:
            if run.code is None and run.proc.poll() is not None:
                run.exited_at = run.exited_at or now
                if not run.stream_done and now - run.exited_at < OUTPUT_WAIT_S:
                    continue
                code = run.proc.returncode  # a client killed by signal N: 128+N, as exec and ssh report it
                run.code, run.ended = (128 - code if code < 0 else code), run.exited_at - self.t0
                if run.code != 0 and self.request.recovery and run.node.index != 0:
                    self._say(f"{run.node.name} ended with {exit_text(run.code)}; recovery is on: node 0 decides "
                              "what follows")
                elif run.code != 0 and self.first_failure is None and self.stop_began is None:
                    self._first_end(run)

    def _first_end(self, run: NodeRun, stopping: str = "") -> None:
        """The first node to end badly: the others stopped from here at once, or, where its entrypoint already
        has them stop (it was sent a stop, walk12c C3; it was stopped because another node failed, walk15a A11),
        only if they have not ended by themselves after the grace: a stop sent at once cut their own word short.
        ``stopping``: what else a stop from here does (a Slurm step's scancel)."""
        self.first_failure = run
        later = self.request.grace + STOP_MARGIN
        told = ("was stopped ({}): its entrypoint tells the other nodes to stop" if told_the_others_to_stop(run.tail)
                else "ended with {}: its entrypoint stopped it because another node failed; that node ends by "
                "itself" if stopped_for_a_peer(run) else None)
        if told is not None:
            self.stop_due = time.monotonic() + later
            self._say(f"{run.node.name} ({run.node.remote.label}) {told.format(exit_text(run.code))}; stopping "
                      f"the others from here too if they have not ended in {later:.0f} s")
            return
        self._say(f"{run.node.name} ({run.node.remote.label}) ended with {exit_text(run.code)}: stopping the other "
                  f"nodes (SIGTERM, SIGKILL after {self.request.grace:.0f} s{stopping})")
        self._stop_all()

    def _enforce(self) -> None:
        if self.stop_due is not None and self.stop_began is None and time.monotonic() >= self.stop_due:
            self._say(f"the other nodes have not ended since {self.first_failure.node.name} was stopped: stopping "
                      f"them (SIGTERM, SIGKILL after {self.request.grace:.0f} s)")
            self._stop_all()
        if self.interrupted and self.stop_began is None:
            self._say(f"interrupted: stopping every node (SIGTERM, SIGKILL after {self.request.grace:.0f} s); "
                      "Ctrl-C again to stop waiting")
            self._stop_all()
        late = self.stop_began is not None and time.monotonic() - self.stop_began > self.request.grace + STOP_MARGIN
        if self.abandoned or late:
            for run in self.runs:
                if run.proc.poll() is None:
                    run.proc.kill()
                    run.killed_here = True

    def _on_signal(self, _signum, _frame) -> None:
        self.interrupt()

    def interrupt(self) -> None:
        """What Ctrl-C does: stop every node; a second time, stop waiting for them."""
        if self.interrupted:
            self.abandoned = True
        self.interrupted = True

    def _say(self, text: str) -> None:
        self.console.print(styled(("nodeweave:", "bold"), f" {text}"), highlight=False)

    # --- stopping ------------------------------------------------------------------------------------
    def _stop_all(self) -> None:
        self.stop_began = time.monotonic()
        self.stopper = threading.Thread(target=lambda: fan_out(self._stop_node, self.runs), daemon=True)
        self.stopper.start()

    def _stop_node(self, run: NodeRun) -> None:
        args = ["--node", "stop", "--run", self.request.run_id, "--grace", f"{self.request.grace:g}"]
        try:
            out = subprocess.run(run.node.entrypoint_argv(args), capture_output=True, text=True,
                                 timeout=self.request.grace + STOP_MARGIN, stdin=subprocess.DEVNULL)
            run.stop_report = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else \
                {"error": (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]}
        except (OSError, ValueError, subprocess.TimeoutExpired) as err:
            run.stop_report = {"error": str(err)}

    # --- the outcome ---------------------------------------------------------------------------------
    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        if self.request.recovery and self.runs:  # node 0 saw the job through its generations
            return 0 if self.runs[0].code == 0 else 1
        return 0 if all(r.code == 0 for r in self.runs) else 1

    def summary(self) -> str:
        if self.abandoned_nodes():
            return (f"stopped waiting for {ranges(self.abandoned_nodes())}: a run may still be alive there "
                    "(`nodeweave stop` ends it); " + self._outcome())
        return self._outcome()

    def _outcome(self) -> str:
        if self.interrupted:
            from nodeweave.endings import ending_cause  # Ctrl-C, SIGTERM, SIGHUP or a reader gone (walk18a A2)

            return f"interrupted by {ending_cause()}: " + noted(self.runs)
        if self.first_failure is not None:
            f = failed_first(self.runs)
            others = noted(r for r in self.runs if r is not f)
            last = f" ({failure_line(f.tail)})" if f.tail else ""
            return (f"{f.node.name} ({f.node.remote.label}) failed first, {exit_text(f.code)} after {f.ended:.1f} s"
                    f"{last}; stopped the others: {others}")
        bad = [r for r in self.runs if r.code != 0]
        if bad and self.exit_code == 0:  # recovery: node 0 saw the job through (walk15a A28: "failed:", exit 0)
            return (f"ok: the job ended well on {self.runs[0].node.name} (exit 0; recovery on); ended on the way: "
                    f"{noted(bad)}")
        if bad:
            return "failed: " + noted(bad)
        return f"every node exit 0 in {max(r.ended or 0 for r in self.runs):.1f} s"

    def abandoned_nodes(self) -> List[str]:
        """Nodes whose exec client was killed here: their run may still be alive there."""
        return [r.node.name for r in self.runs if r.killed_here]


def told_the_others_to_stop(tail) -> bool:
    """Whether a node's last lines are its entrypoint's own word that it was sent a stop (`nodeweave stop --node
    N`, `docker stop`) and tells the other nodes to stop: a stop, not a failure, which the others end on by
    themselves."""
    last = list(tail)[-5:]
    return any("nodeweave-entrypoint: stopped on SIG" in line and "the others are told to stop" in line
               for line in last)


def stopped_for_a_peer(run: NodeRun) -> bool:
    """Whether a node ended because another failed: its entrypoint's exit 5 (``EXIT_PEER_FAILED``: the heartbeat
    stopped its launcher), which its own line says (``... failed: ...; stopping this node's launcher (exit 5``), so a
    plain command's own exit 5 is not taken for it."""
    from nodeweave.entrypoint.errors import EXIT_PEER_FAILED

    return run.code == EXIT_PEER_FAILED and any(f"(exit {EXIT_PEER_FAILED}: " in line for line in run.tail)


def failed_first(runs: Sequence[NodeRun]) -> NodeRun:
    """The node named as failed first, by what each exit means, not by which one reached here first (walk15a A11:
    node-0's exit 5, "another node failed", came a millisecond before node-1's exit 1 and was blamed): the earliest
    to end badly of its own accord, else the earliest to end badly."""
    bad = sorted((r for r in runs if r.code not in (0, None)), key=lambda r: r.ended or 0.0)
    return next((r for r in bad if not stopped_for_a_peer(r)), bad[0])


def noted(runs) -> str:
    """Each run's node and how it ended, a run of nodes that ended alike as ``node-0 .. node-9 exit 1``."""
    return noted_ranges(((r.node.name, exit_text(r.code)) for r in runs), form="{name} {note}")


def exit_text(code: Optional[int]) -> str:
    """``exit 1``, ``exit 143 (SIGTERM: stopped)``, ``exit 137 (SIGKILL: killed)``."""
    if code is None:
        return "still running"
    if code > 128:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            return f"exit {code}"
        what = {"SIGTERM": "stopped", "SIGINT": "interrupted", "SIGKILL": "killed"}.get(name, "signalled")
        return f"exit {code} ({name}: {what})"
    return f"exit {code}"



def failure_line(tail) -> str:
    """What a failed node's summary names of its output (``symptoms.told``): the worker's own error line (not
    torchrun's ``ChildFailedError`` frames, walk9 A3; argparse's ``error:`` line, walk15a A12), else its last line
    that says something (never a banner rule)."""
    from nodeweave.entrypoint.running.symptoms import told

    return told("\n".join(tail)) or "its output holds no line that says anything"
