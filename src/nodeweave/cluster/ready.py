"""Wait until every node is up, with a live table; name the nodes that are not when the deadline passes.

Up means: in hold mode, the node's entrypoint answers ``--node status`` with
its hold record (it planned, printed the plan and holds); in run mode, it
answers at all (its container runs the job). The platform's own view
(container state, pod phase and waiting reason) is shown beside it and ends
the wait early for a node that cannot come up by waiting (an exited
container, a crash loop, an image that cannot be pulled).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List

from rich.console import Console
from rich.live import Live
from nodeweave.tables import Table

from nodeweave.cluster.base import Backend, Node, NodeAnswer, ask_status
from nodeweave.steps import fan_out
from nodeweave.usertext import styled
from nodeweave.errors import NodeweaveError
from nodeweave.entrypoint.nodelists import ranges



@dataclass
class Progress:
    nodes: List[Node]
    started: float = field(default_factory=time.monotonic)
    state: Dict[int, str] = field(default_factory=dict)  # what the table shows of each node
    failed: Dict[int, bool] = field(default_factory=dict)  # the platform says waiting will not bring it up
    ready: Dict[int, NodeAnswer] = field(default_factory=dict)
    since: Dict[int, float] = field(default_factory=dict)

    def update(self, index: int, text: str) -> bool:
        changed = self.state.get(index) != text
        if changed:
            self.state[index], self.since[index] = text, time.monotonic()
        return changed

    def table(self, backend: Backend) -> Table:
        table = Table(title=f"{backend.spec.name}: {backend.where}", title_justify="left")
        for column in ("node", "reached as", "state", "for"):
            table.add_column(column)
        now = time.monotonic()
        for node in self.nodes:
            style = "green" if node.index in self.ready else "yellow"
            table.add_row(node.name, node.remote.label, styled((self.state.get(node.index, "asking"), style)),
                          f"{now - self.since.get(node.index, self.started):.0f} s")
        return table


def _describe(answer: NodeAnswer, mode: str) -> str:
    plan = (answer.data or {}).get("plan") or {}
    if answer.holding:
        role = plan.get("role") or {}
        what = f"{role['kind']} (container {role.get('identity')})" if role.get("kind") not in (
            None, "training node") else f"rank {role.get('rank', plan.get('node_rank'))}"
        return f"holding: {what}, plan {plan.get('hash')}"
    if answer.up:
        return "running (not holding)" if mode == "hold" else "running"
    return f"not answering: {answer.error}"


def _poll(backend: Backend, progress: Progress, mode: str, command: List[str]) -> List[Node]:
    """One round: platform states, then an exec to each node that may be up; the nodes that failed for good."""
    pending = [n for n in progress.nodes if n.index not in progress.ready]
    states = backend.states(pending)  # a node it has no word on (bare hosts, no answer) is asked
    askable = [n for n in pending if n.index not in states or states[n.index].state.askable]
    answers = dict(zip([n.index for n in askable], fan_out(lambda n: ask_status(n, command), askable)))
    failed = []
    for node in pending:
        answer = answers.get(node.index)
        seen = states.get(node.index)
        if answer is not None and answer.up and (answer.holding or mode != "hold"):
            progress.ready[node.index] = answer
        progress.failed[node.index] = seen is not None and seen.state.failed
        if progress.failed[node.index]:
            failed.append(node)
        progress.update(node.index, _state_text(answer, seen.word if seen is not None else "", mode))
    return failed


def _state_text(answer, platform: str, mode: str) -> str:
    if answer is not None and answer.up:
        return _describe(answer, mode) + (f" ({platform})" if platform and platform != "running" else "")
    if platform:
        return platform
    return _describe(answer, mode) if answer is not None else "asking"


def _log_tail(backend: Backend, node: Node, lines: int = 5) -> str:
    try:
        out = subprocess.run(backend.logs(node, follow=False), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired, NodeweaveError):
        return ""
    from nodeweave.entrypoint.running.symptoms import cause

    text = (out.stdout + out.stderr).strip().splitlines()
    found = cause("\n".join(text))  # the worker's own error first, not torchrun's frames (walk9 A3)
    return (f"the cause: {found}; " if found else "") + " | ".join(text[-lines:])


def wait_until_up(backend: Backend, nodes: List[Node], mode: str, timeout: float, console: Console,
                  command: List[str], poll: float = 1.0) -> Progress:
    """Poll until every node is up; NodeweaveError (exit 1) naming the others at the deadline or on a dead end."""
    progress = Progress(nodes)
    live = Live(progress.table(backend), console=console, refresh_per_second=4, transient=False) \
        if console.is_terminal else None
    shown: Dict[int, str] = {}
    if live:
        live.start()
    try:
        while True:
            failed = _poll(backend, progress, mode, command)
            if live:
                live.update(progress.table(backend))
            else:
                for node in nodes:
                    if shown.get(node.index) != progress.state.get(node.index):
                        shown[node.index] = progress.state.get(node.index, "")
                        console.print(f"{node.name} ({node.remote.label}): {shown[node.index]}", highlight=False,
                                      markup=False)
            if len(progress.ready) == len(nodes):
                return progress
            elapsed = time.monotonic() - progress.started
            if failed or elapsed > timeout:
                raise NodeweaveError(_not_up(backend, progress, failed, elapsed, timeout))
            time.sleep(poll)
    finally:
        if live:
            live.stop()


def _not_up(backend: Backend, progress: Progress, failed: List[Node], elapsed: float, timeout: float) -> str:
    late = failed or [n for n in progress.nodes if n.index not in progress.ready]
    parts = []
    for node in late:
        tail = _log_tail(backend, node) if progress.failed.get(node.index) else ""
        parts.append(f"{node.name} ({node.remote.label}): {progress.state.get(node.index, 'no answer')}"
                     + (f"; its log ends: {tail}" if tail else ""))
    why = "cannot come up" if failed else f"not up after {elapsed:.0f} s (--timeout {timeout:.0f})"
    return f"{len(late)} of {len(progress.nodes)} node(s) {why}: " + ranges(parts, sep="; ")
