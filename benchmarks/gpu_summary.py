"""The GPU proof's closing table and its list of failed steps, from ``proof.json`` (pure)."""

from __future__ import annotations

CASES = {"single_node": "one node", "latency_single_node": "one node, 1000 calls", "two_nodes": "2 nodes x 1 GPU",
         "split_nodes": "2 nodes x half"}


def machine(proof: dict) -> str:
    """Card, driver, torch and NCCL, from nvidia-smi and the first worker report that names them."""
    runs = [proof.get(key) or {} for key in ("2_single_node", "7_split_nodes", "3_two_nodes")]
    for case in ((proof.get("4_bandwidth") or {}).get(key) or {} for key in CASES):
        runs += (case.get("samples") or {}).get("entrypoint", [])[:1]
    torch = next((r.get("torch") for r in runs if r.get("torch")), None)
    nccl = next((r.get("nccl") for r in runs if r.get("nccl")), None)
    text = proof.get("nvidia_smi") or "" if proof.get("gpus") else ""
    cards = sorted({line.strip() for line in text.splitlines() if line.strip()})
    return f"{proof.get('gpus', 0)} GPU(s): {'; '.join(cards) or 'none'}; torch {torch}; NCCL {nccl}"


def _interval(paired: dict) -> str:
    interval = paired.get("interval_95")
    return f"[{interval['low']:.3f},{interval['high']:.3f}]" if interval else "-"


def bandwidth_rows(bandwidth: dict) -> "list[str]":
    rows = []
    for case, label in CASES.items():
        comparison = bandwidth.get(case)
        if not comparison or "median_busbw_gbps" not in comparison:
            continue
        medians = comparison["median_busbw_gbps"]
        for size in medians["entrypoint"]:
            ours, base = medians["entrypoint"][size], medians["nccl_defaults"][size]
            ratio, paired = comparison["ratio_entrypoint_vs_defaults"][size], comparison["paired"][size]
            rows.append(f"{'busbw ' + label + ' vs NCCL defaults':<44} {size:>5} {ours or 0:>9.2f} {base or 0:>9.2f} "
                        f"{ratio or 0:>6.3f} {paired['median_ratio'] or 0:>6.3f} {_interval(paired):>15} "
                        f"{paired['rounds']:>3}  {'no 3% cost' if paired['no_cost_resolved'] else 'unresolved'}")
    reference = ((bandwidth.get("single_node") or {}).get("median_busbw_gbps") or {}).get("entrypoint") or {}
    for setting, run in (bandwidth.get("tutorial_single_node") or {}).items():
        for size, value in run["busbw_gbps"].items():
            rows.append(f"{'busbw ' + setting + ' vs plan':<44} {size:>5} {value or 0:>9.2f} "
                        f"{reference.get(size) or 0:>9.2f} {run['ratio_vs_entrypoint_plan'][size] or 0:>6.3f}")
    return rows


def table(proof: dict) -> str:
    """The numbers that matter, each ratio against its same-run baseline."""
    lines = [machine(proof),
             f"{'what':<44} {'size':>5} {'nodeweave':>9} {'baseline':>9} {'ratio':>6} {'paired':>6} "
             f"{'95% interval':>15} {'n':>3}  verdict"]
    lines += bandwidth_rows(proof.get("4_bandwidth") or {})
    startup = proof.get("5_startup") or {}
    if "median_ms" in startup:
        ms = startup["median_ms"]
        ours, base = ms["entrypoint -> exec /bin/true"], ms["python3 -c pass"]
        lines.append(f"{'start-up ms: entrypoint->exec vs python -c':<44} {'':>5} {ours:>9.1f} {base:>9.1f} "
                     f"{ours / base:>6.2f}")
    for key in ("3_two_nodes", "7_split_nodes"):
        step = proof.get(key) or {}
        if "transports" in step:
            t = step["transports"]
            lines.append(f"{key}: correct={step['correct']} intra-node {t['intra_node']} inter-node {t['inter_node']} "
                         f"NVLink in each node's graph={t['nvlink_inside_each_node']} hosts={t['hostnames_by_node']}")
    return "\n".join(lines)


def failed_steps(proof: dict) -> "list[str]":
    """Steps that raised, computed a wrong result, disagreed with nvidia-smi or saw the wrong transports."""
    return [key for key, value in proof.items() if isinstance(value, dict) and key[:1].isdigit() and
            (value.get("error") or value.get("correct") is False or value.get("agree") is False
             or value.get("transports_ok") is False)]
