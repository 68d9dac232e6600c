"""What ``nodeweave check`` prints: one row per node, the heat map of the link matrix, the findings.

The heat map has a cell per direction of every measured link (row: from,
column: to), coloured by its figure against the median link: green within
half the threshold, yellow above the line, red below it; ``·`` was not
measured (only ⌈log2 N⌉ partners per node are). Plain text of the same goes
into the run folder as ``check.txt``.
"""

from __future__ import annotations

import io
from typing import List, Optional

from rich.console import Console, Group
from nodeweave.tables import Table
from rich.text import Text

from nodeweave.check.links import cleared, link_values, step_ratios
from nodeweave.check.metrics import fmt_bytes, fmt_rate, fmt_value
from nodeweave.check.peers import best, median
from nodeweave.usertext import console as people_console, styled


def _named(findings, node: int) -> List[str]:
    return [f.metric for f in findings if f.node == node]


def _number(value: Optional[float], form: str = "{:.3g}") -> str:
    return "-" if value is None else form.format(value)


def _gpu_cell(node: dict) -> str:
    facts, samples = node.get("facts", {}), node.get("samples", {})
    if not facts.get("gpu_count"):
        return "-"
    tflops, gbps = best(samples.get("gpu_tflops", [])), best(samples.get("gpu_mem_gbps", []))
    figures = f" {tflops:.0f} TF/s {gbps:.0f} GB/s" if tflops and gbps else ""
    return f"{facts['gpu_count']}x {facts.get('gpu_model') or '?'}{figures}"


def node_table(document: dict, findings) -> Table:
    table = Table(title=f"nodeweave check: {document['world']} node(s), {document['backend']} "
                        f"({document.get('device')}), threshold {document['threshold'] * 100:g}% below the peers' median")
    for name in ("node", "host", "CPUs", "CPU GFLOP/CPU-s", "CPU share", "/dev/shm", "memlock", "disk free", "interface", "RDMA",
                 "GPUs", "verdict"):
        table.add_column(name, justify="left" if name in ("node", "host", "interface", "GPUs", "verdict") else "right")
    for node in document["nodes"]:
        facts, named = node.get("facts", {}), _named(findings, node["node"])
        iface = f"{facts.get('interface') or '-'} {fmt_value('link_speed_mbps', facts.get('link_speed_mbps'))} " \
                f"MTU {facts.get('mtu') or '-'}"
        memlock = facts.get("memlock_bytes")
        cells = [f"node-{node['node']}", facts.get("hostname") or "-", f"{facts.get('cpus_effective')}",
                 _number(best(node.get("samples", {}).get("cpu_gflops", []))),
                 _number(median(node.get("samples", {}).get("cpu_share", [])), "{:.2f}"),
                 fmt_bytes(facts["shm_bytes"]) if facts.get("shm_bytes") else "-",
                 fmt_bytes(memlock) if memlock else "unlimited", fmt_bytes(facts["disk_free_bytes"])
                 if facts.get("disk_free_bytes") is not None else "-", iface,
                 f"{facts['rdma_active_ports']} active" if facts.get("rdma_active_ports") is not None else "-",
                 _gpu_cell(node), styled((", ".join(named), "red")) if named else styled(("ok", "green"))]
        table.add_row(*cells)
    return table


def _colour(value: Optional[float], reference: Optional[float], threshold: float) -> str:
    if value is None or not reference:
        return "dim"
    ratio = value / reference
    return "green" if ratio >= 1 - threshold / 2 else ("yellow" if ratio >= 1 - threshold else "bold red")


def heat_map(document: dict) -> Table:
    """Rows send, columns receive; each cell the best of that direction's samples."""
    values = link_values(document.get("links", []))
    cells = {}
    for (a, b), v in values.items():
        cells[(a, b)], cells[(b, a)] = v["forward"], v["back"]
    reference = median([v for v in cells.values() if v is not None])
    world = document["world"]
    table = Table(title=f"link bandwidth, from (row) to (column); median {fmt_rate(reference)}", show_lines=False)
    table.add_column("from \\ to")
    for j in range(world):
        table.add_column(f"n{j}", justify="right")
    for i in range(world):
        row = [Text("■", style="dim") if i == j else (
            Text("·", style="dim") if (i, j) not in cells else
            Text(fmt_rate(cells[(i, j)]).replace(" ", ""), style=_colour(cells[(i, j)], reference,
                                                                          document["threshold"])))
            for j in range(world)]
        table.add_row(f"node-{i}", *row)
    return table


def _nodes(ranks: List[int]) -> str:
    return ", ".join(f"node-{r}" for r in ranks)


def vendor_lines(document: dict) -> List[str]:
    """What the vendors' records could not say, and what they said that is not named: the kernel log
    (Xid) unreadable, Xid codes that are usually the application's, DCGM or the GPU tool absent."""
    lines, nodes = [], document.get("nodes", [])
    unreadable = [(n["node"], n["xid"]) for n in nodes if n.get("xid") and not n["xid"].get("readable")]
    for rank, xid in unreadable:
        lines.append(f"Xid: node-{rank} cannot read the kernel log ({'; '.join(xid.get('errors', []))}): its Xid "
                     "events are unknown (CAP_SYSLOG, or kernel.dmesg_restrict=0 on the host, lets it)")
    readable = [n["node"] for n in nodes if (n.get("xid") or {}).get("readable")]
    if readable:
        lines.append(f"Xid: kernel log read on {_nodes(readable)} "
                     f"({', '.join(sorted({n['xid']['source'] for n in nodes if (n.get('xid') or {}).get('readable')}))})")
    for node in nodes:
        minor = [e for e in (node.get("xid") or {}).get("events", []) if not e.get("hardware")]
        if minor:
            codes = sorted({e["code"] for e in minor})
            lines.append(f"Xid on node-{node['node']}, not named (usually the application's fault): "
                         + ", ".join(f"{c} x{sum(e['code'] == c for e in minor)}" for c in codes))
    no_dcgm = [n["node"] for n in nodes if n.get("dcgm") and n["dcgm"].get("installed") is False]
    if no_dcgm:
        lines.append(f"DCGM: dcgmi is not installed on {_nodes(no_dcgm)}: no dcgmi diag -r 1 there")
    no_tool = [n["node"] for n in nodes if n.get("facts", {}).get("gpu_count") and not n.get("gpu_tool", {}).get("tool")
               and document.get("backend") == "nccl"]
    if no_tool:
        lines.append(f"GPU counters: neither nvidia-smi nor amd-smi answered on {_nodes(no_tool)}: no ECC, "
                     "throttle or remap counters there")
    return lines


def summary_lines(result) -> List[str]:
    document, lines = result.document, []
    values = link_values(document.get("links", []))
    latencies = [v["latency_us"] for v in values.values() if v["latency_us"] is not None]
    if latencies:
        rounds = len(document.get("rounds", []))
        turns = sum(len(r) for r in document.get("turns", [])) or rounds
        shared = f" in {turns} turns (pairs that share a machine take turns)" if turns > rounds else ""
        lines.append(f"point-to-point: {len(values)} link(s) in {rounds} round(s){shared} "
                     f"x {document['repeated'].get('link_passes', 1)} pass(es), "
                     f"latency {min(latencies):.0f}-{max(latencies):.0f} us")
    for check in document.get("confirmations") or []:
        (a, b), (c, d) = check["pair"], check["reference"]
        steps = ", ".join(f"{100 * r:.0f}%" for r in step_ratios(check))
        verdict = "cleared" if cleared(check, document.get("threshold", 0.25)) else "below the line each step"
        lines.append(f"measured again alone: link {a}-{b} beside link {c}-{d}, step by step {steps} of it ({verdict})")
    ring = document.get("allreduce")
    if ring:
        lines.append(f"ring all-reduce of {fmt_bytes(ring['bytes'])}: busbw {fmt_rate(ring['busbw_gbps'])}, "
                     f"{'correct' if ring['correct'] else 'WRONG RESULT'}")
    lines += vendor_lines(document)
    for finding in result.findings:
        lines.append(f"NAMED {finding.subject}: {finding.text}")
    lines.append("healthy: nothing named" if not result.findings else
                 f"{len({f.subject for f in result.findings})} named (exit {result.exit_code})")
    return lines


def render(result) -> Group:
    parts = [node_table(result.document, result.findings)]
    if result.document.get("links"):
        parts.append(heat_map(result.document))
    parts += [Text(line, style="bold red" if line.startswith("NAMED") else "") for line in summary_lines(result)]
    return Group(*parts)


def plain_text(result) -> str:
    out = people_console(width=200, record=True, file=io.StringIO(), color_system=None)
    out.print(render(result))
    return out.export_text()
