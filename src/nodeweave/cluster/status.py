"""``nodeweave status``: one row per node, from the platform and from the node's own entrypoint.

Each node answers ``--node status`` through its exec channel: held or not,
its rank, the hash of the plan parts every node must share (launcher, node
count, processes, world size, master, command) so a node that disagrees
stands out, the run in progress and since when, and GPU use where
``nvidia-smi``, ``amd-smi`` or ``rocm-smi`` is installed.
"""

from __future__ import annotations

import time
from typing import List, Optional

from rich.markup import escape
from rich.table import Table

from nodeweave.cluster.base import Backend, Node, NodeAnswer, ask_status
from nodeweave.cluster.steps import fan_out
from nodeweave.failures import tool_message


def gather(backend: Backend, nodes: List[Node], command: List[str]) -> List[dict]:
    states = backend.states(nodes)
    answers = fan_out(lambda n: ask_status(n, command), nodes)
    return [row(node, answer, states.get(node.index)) for node, answer in zip(nodes, answers)]


def row(node: Node, answer: NodeAnswer, platform: Optional[str]) -> dict:
    data = answer.data or {}
    plan = data.get("plan") or {}
    runs = data.get("runs") or []
    return {"node": node.name, "reached_as": node.remote.label, "platform": platform, "up": answer.up,
            "error": answer.error or None, "mode": data.get("mode"), "rank": plan.get("node_rank"),
            "plan_hash": plan.get("hash"), "plan_errors": [e.get("message") for e in plan.get("errors") or []],
            "run": runs[0] if runs else None, "now": data.get("now"), "gpu": data.get("gpu")}


def agreement(rows: List[dict]) -> Optional[bool]:
    """Do all answering nodes share one plan hash (None when none answered with a plan)?"""
    hashes = {r["plan_hash"] for r in rows if r["up"] and r["plan_hash"]}
    return None if not hashes else len(hashes) == 1


def problems(rows: List[dict]) -> List[str]:
    """What makes ``status`` exit 1: nodes down, a node whose plan fails (it cannot start), plans that disagree."""
    found = []
    down = [r["node"] for r in rows if not r["up"]]
    if down:
        found.append("down: " + ", ".join(down))
    found += [f"{r['node']}'s plan fails: {'; '.join(r['plan_errors'])}" for r in rows if r["up"] and r["plan_errors"]]
    if agreement(rows) is False:
        found.append("the nodes' plans disagree")
    return found


def _since(run: Optional[dict], now: Optional[float]) -> str:
    if not run:
        return "-"
    started = run.get("started") or 0
    clock = time.strftime("%H:%M:%S", time.gmtime(started))
    return f"{run.get('run_id')} since {clock} UTC ({(now or time.time()) - started:.0f} s)"


def _gpus(gpu: Optional[dict]) -> str:
    if not gpu or not gpu.get("tool"):
        return "-"
    if gpu.get("error"):
        return f"{gpu['tool']}: {gpu['error'][:40]}"
    parts = [f"{g.get('util_pct') if g.get('util_pct') is not None else '?'}% "
             f"{(g.get('mem_used_mib') or 0) / 1024:.1f}/{(g.get('mem_total_mib') or 0) / 1024:.0f}G"
             for g in gpu.get("gpus", [])]
    return " ".join(parts) or f"{gpu['tool']}: no GPU"


def status_table(backend: Backend, rows: List[dict]) -> Table:
    agree = agreement(rows)
    title = f"{backend.spec.name}: {backend.where()}; plans " + {
        True: "agree", False: "DISAGREE", None: "unknown"}[agree]
    table = Table(title=title, title_justify="left")
    widest = max((len(r["reached_as"]) for r in rows), default=10)
    table.add_column("node", no_wrap=True)
    table.add_column("reached as", no_wrap=True, min_width=widest)  # an address cut in half helps no one
    for column in ("state", "mode", "rank", "plan", "run in progress", "GPU use, memory"):
        table.add_column(column, overflow="fold")
    hashes = [r["plan_hash"] for r in rows if r["plan_hash"]]
    common = max(set(hashes), key=hashes.count) if hashes else None
    for r in rows:
        state = "up" if r["up"] else "down"
        if r["platform"]:
            state = f"{state} ({r['platform']})"
        elif not r["up"]:
            state = f"down: {tool_message(r['error'] or '', 60)}"
        plan = r["plan_hash"] or ("; ".join(r["plan_errors"])[:60] if r["plan_errors"] else "-")
        style = "red" if r["plan_hash"] and r["plan_hash"] != common else ""
        table.add_row(escape(r["node"]), escape(r["reached_as"]), f"[{'green' if r['up'] else 'red'}]{escape(state)}[/]",
                      r["mode"] or "-", "-" if r["rank"] is None else str(r["rank"]),
                      f"[{style}]{escape(plan)}[/]" if style else escape(plan), escape(_since(r["run"], r["now"])),
                      escape(_gpus(r["gpu"])))
    return table
