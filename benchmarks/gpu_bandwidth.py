"""Step 4 of the GPU proof: the entrypoint's environment never costs bus bandwidth.

All-reduce busbw at 1 MiB, 16 MiB (latency-bound: where tensor parallelism
lives and where the entrypoint's ``OMP_NUM_THREADS`` would show) and at
256 MiB and 1 GiB, launched through the entrypoint and through plain
torchrun with NCCL's defaults, in alternating rounds of the same run. Each
size gets the median per side, the ratio of medians (target >= 0.97) and the
paired statistic of ``gpu_stats`` (per-round ratios, exact 95% interval,
what it resolves). Cases: one node on every GPU, two simulated nodes of one
GPU, two simulated nodes of half the GPUs each. Then the hand settings
tutorials recommend, each alone, and what ``nodeweave doctor`` says of each.
"""

from __future__ import annotations

import json
import subprocess
import time

import gpu_checks as checks
import gpu_common as common
import gpu_stats as stats

SIZES = {"1M": 1 << 20, "16M": 16 << 20, "256M": 256 << 20, "1G": 1 << 30}
SMALL = {"1M": 1 << 20, "16M": 16 << 20}
TARGET = stats.TARGET
TUTORIAL = {"NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_ALGO": "Ring", "NCCL_SOCKET_IFNAME": "lo"}
# (sizes, iterations, warm-up) per kind of run. NVLink inside one node: 1 GiB takes ~5 ms, so 50 iterations
# are cheap; across simulated nodes the socket transport needs ~0.4 s for 1 GiB, so fewer. "latency" times
# only the small sizes, 1000 calls each (~25 ms of 1 MiB instead of ~1 ms), for a steadier small-size figure.
PROFILES = {"single": (SIZES, 50, 10), "multi": (SIZES, 20, 5), "latency": (SMALL, 1000, 100)}
PARTS = ("single", "latency", "tutorial", "two", "split")


def _run(nodes: "list[dict]", via: str, extra: "dict[str, str] | None" = None, profile: str = "") -> dict:
    sizes, iters, warmup = PROFILES[profile or ("multi" if len(nodes) > 1 else "single")]
    result = common.launch(nodes, via, "all_reduce", ",".join(sizes), iters=iters, warmup=warmup, extra_env=extra)
    logs = "\n".join(result["logs"])
    busbw = {label: common.busbw(result, "all_reduce", nbytes) for label, nbytes in sizes.items()}
    return {"busbw_gbps": busbw, "correct": common.correct(result), "exit_codes": result["exit_codes"],
            "seconds": round(result["seconds"], 1), "env_seen_by_workers": (result["report"] or {}).get("env"),
            **{key: (result["report"] or {}).get(key) for key in ("device", "torch", "nccl")},
            "torchrun_forced_omp_1": checks.torchrun_forced_one_omp_thread(logs),
            "log_tail": None if common.correct(result) else common.tail(logs)}


def compare(nodes: "list[dict]", rounds: int, budget_s: float = 0.0, progress=None, profile: str = "") -> dict:
    """Entrypoint vs NCCL defaults, alternating which goes first, until ``rounds`` or the time budget ends."""
    samples: "dict[str, list[dict]]" = {"entrypoint": [], "nccl_defaults": []}
    started = time.perf_counter()
    stopped = "all rounds ran"
    for index in range(rounds):
        round_start = time.perf_counter()
        order = ("entrypoint", "torchrun") if index % 2 == 0 else ("torchrun", "entrypoint")
        for via in order:
            samples["entrypoint" if via == "entrypoint" else "nccl_defaults"].append(_run(nodes, via, profile=profile))
        if progress:
            progress(summarise(samples, stopped="running"))
        if not all(s["correct"] for runs in samples.values() for s in runs[-1:]):
            stopped = f"round {index + 1} had a failed launch: stopped"
            break
        elapsed, last = time.perf_counter() - started, time.perf_counter() - round_start
        if budget_s and index + 1 < rounds and elapsed + last > budget_s:
            stopped = f"time budget {budget_s:g}s: stopped after {index + 1} of {rounds} rounds"
            break
    return summarise(samples, stopped)


def summarise(samples: "dict[str, list[dict]]", stopped: str) -> dict:
    """Medians per side, ratio of medians, and the paired statistic per size."""
    sizes = [size for size in SIZES if any(size in s["busbw_gbps"] for runs in samples.values() for s in runs)]
    medians = {key: {size: common.median([s["busbw_gbps"][size] for s in runs]) for size in sizes}
               for key, runs in samples.items()}
    ratio = {size: (medians["entrypoint"][size] / medians["nccl_defaults"][size]
                    if medians["entrypoint"][size] and medians["nccl_defaults"][size] else None) for size in sizes}
    paired = {size: stats.paired_summary([s["busbw_gbps"][size] for s in samples["entrypoint"]],
                                         [s["busbw_gbps"][size] for s in samples["nccl_defaults"]]) for size in sizes}
    spread = {key: {size: (min(v), max(v)) if (v := [s["busbw_gbps"][size] for s in runs if s["busbw_gbps"][size]])
                    else None for size in sizes} for key, runs in samples.items()}
    omp = {key: sorted({s["torchrun_forced_omp_1"] for s in runs}) for key, runs in samples.items()}
    return {"rounds": min(len(v) for v in samples.values()), "stopped": stopped, "median_busbw_gbps": medians,
            "ratio_entrypoint_vs_defaults": ratio, "paired": paired, "min_max_busbw_gbps": spread,
            "paired_ratio_median": {size: paired[size]["median_ratio"] for size in sizes},
            "meets_target": all(r is not None and r >= TARGET for r in ratio.values()),
            "torchrun_forced_omp_1": omp,
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


def _tutorial(single: "list[dict]", reference: dict) -> dict:
    tutorial = {}
    for variable, value in TUTORIAL.items():
        run = _run(single, "entrypoint", {variable: value})
        run["ratio_vs_entrypoint_plan"] = {size: (run["busbw_gbps"][size] / reference[size]
                                                  if run["busbw_gbps"][size] and reference[size] else None)
                                           for size in SIZES}
        run["doctor_single_node"] = doctor_says({variable: value}, 1)
        run["doctor_two_nodes"] = doctor_says({variable: value}, 2)
        tutorial[f"{variable}={value}"] = run
    return tutorial


def skipped_parts(gpus: int, parts: "tuple[str, ...]") -> "dict[str, str]":
    """The parts this host cannot run, each with the reason."""
    need = {"single": 1, "latency": 1, "tutorial": 1, "two": 2, "split": 4}
    return {part: f"needs {need[part]} GPUs, this host has {gpus}" for part in parts if gpus < need[part]}


def step_bandwidth(gpus: int, name: str, use_uts: bool, rounds: int, parts: "tuple[str, ...]" = PARTS,
                   budget_s: float = 0.0, progress=None) -> dict:
    skipped = skipped_parts(gpus, parts)
    result: dict = {"target_ratio": TARGET, "parts": list(parts), "sizes": list(SIZES), "skipped": skipped,
                    "profiles": {k: {"sizes": list(v[0]), "iters": v[1], "warmup": v[2]} for k, v in PROFILES.items()}}

    def report(key):
        def save(partial):
            result[key] = partial
            if progress:
                progress(result)
        return save

    single = common.single_node(gpus)
    todo = [p for p in parts if p not in skipped]
    if "single" in todo or "tutorial" in todo:
        result["single_node"] = compare(single, rounds, budget_s, report("single_node"))
    if "latency" in todo:
        result["latency_single_node"] = compare(single, rounds, budget_s, report("latency_single_node"), "latency")
    if "tutorial" in todo:
        result["tutorial_single_node"] = _tutorial(single, result["single_node"]["median_busbw_gbps"]["entrypoint"])
        result["doctor_all_tutorial_settings_two_nodes"] = doctor_says(TUTORIAL, 2)
    if "two" in todo:
        nodes = common.two_nodes(name, use_uts)
        result["two_nodes"] = compare(nodes, rounds, budget_s, report("two_nodes"))
        if "tutorial" in todo:
            lo = _run(nodes, "entrypoint", {"NCCL_SOCKET_IFNAME": "lo"})
            lo["note"] = ("both simulated nodes share one host, so lo still reaches the peer here; "
                          "across hosts it cannot")
            result["tutorial_two_nodes"] = {"NCCL_SOCKET_IFNAME=lo": lo}
    if "split" in todo:
        result["split_nodes"] = compare(common.two_nodes(name, use_uts, gpus // 2), rounds, budget_s,
                                        report("split_nodes"))
        result["split_nodes"]["shape"] = f"2 nodes x {gpus // 2} GPUs"
    cases = ("single_node", "latency_single_node", "two_nodes", "split_nodes")
    result["correct"] = all(result[key]["correct"] for key in cases if key in result)
    return result
