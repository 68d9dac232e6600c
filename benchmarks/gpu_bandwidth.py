"""Step 4 of the GPU proof: the entrypoint's environment never costs bus bandwidth.

All-reduce busbw at 256 MiB and 1 GiB, launched through the entrypoint and
through plain torchrun with NCCL's defaults, in alternating rounds of the
same run (median of the rounds; target ratio >= 0.97), on one node and on
two simulated nodes. Then the hand settings tutorials recommend, each alone,
and what ``nodeweave doctor`` says of each.
"""

from __future__ import annotations

import json
import subprocess

import gpu_common as common

SIZES = {"256M": 256 << 20, "1G": 1 << 30}
TARGET = 0.97
TUTORIAL = {"NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_ALGO": "Ring", "NCCL_SOCKET_IFNAME": "lo"}


def _bw(result: dict) -> "dict[str, float | None]":
    return {label: common.busbw(result, "all_reduce", nbytes) for label, nbytes in SIZES.items()}


def _run(nodes: "list[dict]", via: str, extra: "dict[str, str] | None" = None) -> dict:
    result = common.launch(nodes, via, "all_reduce", ",".join(SIZES), iters=20, warmup=5, extra_env=extra)
    return {"busbw_gbps": _bw(result), "correct": common.correct(result), "exit_codes": result["exit_codes"],
            "env_seen_by_workers": (result["report"] or {}).get("env"),
            "log_tail": None if common.correct(result) else common.tail("\n".join(result["logs"]))}


def compare(nodes: "list[dict]", rounds: int) -> dict:
    """Entrypoint vs NCCL defaults, alternating so drift hits both alike."""
    samples: "dict[str, list[dict]]" = {"entrypoint": [], "nccl_defaults": []}
    for index in range(rounds):
        order = ("entrypoint", "torchrun") if index % 2 == 0 else ("torchrun", "entrypoint")
        for via in order:
            samples["entrypoint" if via == "entrypoint" else "nccl_defaults"].append(_run(nodes, via))
    medians = {key: {size: common.median([s["busbw_gbps"][size] for s in runs]) for size in SIZES}
               for key, runs in samples.items()}
    ratio = {size: (medians["entrypoint"][size] / medians["nccl_defaults"][size]
                    if medians["entrypoint"][size] and medians["nccl_defaults"][size] else None) for size in SIZES}
    # each round's own ratio, so slow drift of the machine cancels; the median of those
    paired = {size: common.median([e["busbw_gbps"][size] / d["busbw_gbps"][size]
                                   for e, d in zip(samples["entrypoint"], samples["nccl_defaults"])
                                   if e["busbw_gbps"][size] and d["busbw_gbps"][size]]) for size in SIZES}
    spread = {key: {size: (min(v), max(v)) if (v := [s["busbw_gbps"][size] for s in runs if s["busbw_gbps"][size]])
                    else None for size in SIZES} for key, runs in samples.items()}
    return {"rounds": rounds, "median_busbw_gbps": medians, "ratio_entrypoint_vs_defaults": ratio,
            "paired_ratio_median": paired, "min_max_busbw_gbps": spread,
            "meets_target": all(r is not None and r >= TARGET for r in ratio.values()),
            "correct": all(s["correct"] for runs in samples.values() for s in runs), "samples": samples}


def doctor_says(extra: "dict[str, str]", nnodes: int) -> dict:
    """``nodeweave doctor --json`` on this host with ``extra`` in the environment."""
    topology = {"NODEWEAVE_NNODES": str(nnodes), "NODEWEAVE_NODE_RANK": "0",
                "NODEWEAVE_MASTER_ADDR": common.host_ipv4() if nnodes > 1 else "127.0.0.1"}
    env = common.base_env({**extra, **topology})
    out = subprocess.run([common.PY, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())",
                          "doctor", "--json"], capture_output=True, text=True, env=env, timeout=120)
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"exit_code": out.returncode, "error": (out.stderr or out.stdout)[-1500:]}
    mentioned = [f for f in doc.get("findings", []) if any(name in f.get("message", "") for name in extra)]
    return {"exit_code": out.returncode,
            "findings": [{"severity": f["severity"], "code": f["code"], "message": f["message"]} for f in mentioned]}


def step_bandwidth(gpus: int, name: str, use_uts: bool, rounds: int,
                   parts: "tuple[str, ...]" = ("single", "tutorial", "two")) -> dict:
    single = common.single_node(gpus)
    result: dict = {"target_ratio": TARGET, "parts": list(parts)}
    if "single" in parts or "tutorial" in parts:
        result["single_node"] = compare(single, rounds)
        reference = result["single_node"]["median_busbw_gbps"]["entrypoint"]
    tutorial = {}
    for variable, value in TUTORIAL.items() if "tutorial" in parts else ():
        run = _run(single, "entrypoint", {variable: value})
        run["ratio_vs_entrypoint_plan"] = {size: (run["busbw_gbps"][size] / reference[size]
                                                  if run["busbw_gbps"][size] and reference[size] else None)
                                           for size in SIZES}
        run["doctor_single_node"] = doctor_says({variable: value}, 1)
        run["doctor_two_nodes"] = doctor_says({variable: value}, 2)
        tutorial[f"{variable}={value}"] = run
    if tutorial:
        result["tutorial_single_node"] = tutorial
        result["doctor_all_tutorial_settings_two_nodes"] = doctor_says(TUTORIAL, 2)
    if gpus >= 2 and "two" in parts:
        nodes = common.two_nodes(name, use_uts)
        result["two_nodes"] = compare(nodes, rounds)
        if "tutorial" in parts:
            lo = _run(nodes, "entrypoint", {"NCCL_SOCKET_IFNAME": "lo"})
            lo["note"] = "both simulated nodes share one host, so lo still reaches the peer here; across hosts it cannot"
            result["tutorial_two_nodes"] = {"NCCL_SOCKET_IFNAME=lo": lo}
    result["correct"] = all(result[key]["correct"] for key in ("single_node", "two_nodes") if key in result)
    return result
