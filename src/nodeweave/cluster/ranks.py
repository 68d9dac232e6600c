"""`nodeweave status --ranks` / `--stacks`: where every rank of the running job is, asked through its nodes.

Any node of the running job finds node 0 with its own variables, so the
first node whose ``nodeweave-entrypoint --status`` answers gives the stall
watch's view (docs/stalls.md): each rank's collective count, the collective
it is in or last left and for how long, its process state, the verdicts;
with ``--stacks`` every rank's stack, gathered now and grouped. Nothing is
stopped.
"""

from __future__ import annotations

import json
import subprocess
from typing import List, Optional, Tuple

STATES = {"R": "running", "S": "sleeping", "D": "disk wait", "T": "stopped", "t": "traced", "Z": "zombie",
          "gone": "exited"}


def ask_ranks(nodes, stacks: bool = False, timeout_s: float = 60.0) -> Tuple[Optional[dict], List[str]]:
    """(the ``ranks`` part of node 0's status, or None; why each node tried did not give it)."""
    tried = []
    argv = ["--status"] + (["--stacks"] if stacks else [])
    for node in nodes:
        try:
            out = subprocess.run(node.entrypoint_argv(argv), capture_output=True, text=True, timeout=timeout_s,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            tried.append(f"{node.name}: {err}")
            continue
        try:
            answer = json.loads(out.stdout) if out.returncode == 0 else None
        except ValueError:
            answer = None
        if answer is not None and answer.get("ranks"):
            return answer["ranks"], tried
        last = [line for line in out.stderr.splitlines() if line.strip()][-1:] or [f"exit {out.returncode}"]
        tried.append(f"{node.name}: " + ("the job runs without the stall watch" if answer is not None else last[0]))
    return None, tried


def rank_lines(ranks: dict) -> List[str]:
    """One line per rank, then the verdicts, then (when gathered) the grouped stacks."""
    from nodeweave.entrypoint.stall.stacks import render

    lines = []
    for r in sorted(ranks.get("ranks") or [], key=lambda r: (r.get("node") or 0, r["rank"])):
        where = (f"in {r['name']} #{r['seq']}" if r.get("inside") else
                 f"after {r.get('name') or 'no collective'} #{r['seq']}")
        cpu = f", CPU {r['cpu_rate'] * 100:.0f}%" if isinstance(r.get("cpu_rate"), (int, float)) else ""
        lines.append(f"rank {r['rank']} (node {r.get('node')}, {r.get('host')}): {where} for {r.get('since_s', 0):.0f}s, "
                     f"{STATES.get(r.get('state'), r.get('state'))}{cpu}")
    stall = ranks.get("stall")
    if stall:
        culprits = ", ".join(f"rank {c['rank']} (node {c['node']})" for c in stall["culprits"])
        lines.append(f"stall: {culprits} not in {stall['collective']} #{stall['seq']}, nothing moved for "
                     f"{stall['for_s']:.0f}s")
    for s in ranks.get("stragglers") or []:
        lines.append(f"straggler: rank {s['rank']} (node {s['node']}, {s['host']}) {s['gap'] * 100:.0f}% slower")
    if ranks.get("stacks"):
        lines.append(f"stacks ({len(ranks['stacks'])} class(es)):")
        lines += render(ranks["stacks"])
    return lines
