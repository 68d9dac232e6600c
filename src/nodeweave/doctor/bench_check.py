"""``doctor --bench``: a short all-reduce through the training launch path, as findings.

Wrong results are an error whatever the speed. On GPUs linked by NVLink,
NVSwitch or xGMI a bus bandwidth far under what those links give (FACTS.md
§5: 2x H200 NVLink 325 GB/s at 1 GiB, a P2P-disabled run 27.5) is a warning:
something between NCCL and the links is off.
"""

from __future__ import annotations

from nodeweave.doctor.findings import ERROR, INFO, WARNING, Finding

GPU_SIZES, CPU_SIZES = "16M,256M", "1M,16M"
# busbw under these at the largest size points at a transport problem, not at tuning.
LINK_FLOOR_GBPS = {"nvswitch": 100.0, "nvlink": 100.0, "xgmi": 50.0}


def bench_config(node, iters: int = 10):
    """The one short all_reduce launch ``doctor --bench`` makes (``--dry-run`` prints it)."""
    from nodeweave.bench.runner import BenchConfig

    gpus = node.gpus.count if node.gpus else 0
    return BenchConfig(ops=("all_reduce",), sizes=GPU_SIZES if gpus else CPU_SIZES, iters=iters, warmup=3,
                       nproc="auto" if gpus else "2", backend="auto", timeout_s=600)


def run_bench(node, iters: int = 10) -> "tuple[dict, list[Finding]]":
    from nodeweave.bench.runner import launch

    run = launch(bench_config(node, iters), "doctor", {})
    return run.as_dict(), judge(run, node)


def judge(run, node) -> "list[Finding]":
    """Findings for one bench run on ``node``."""
    if not run.report:
        cause = f": {run.cause}" if getattr(run, "cause", None) else ""  # the worker's own error first (walk9 A3)
        return [Finding(ERROR, "bench-failed", f"the bench launch exited {run.exit_code} without results{cause}; "
                        f"its output ended: {run.log_tail[-600:].strip()}",
                        "run nodeweave bench -v to see the whole output", "bench")]
    report = run.report
    if not run.correct:
        wrong = sum(row["wrong"] for row in report["results"])
        return [Finding(ERROR, "bench-wrong-results", f"all_reduce returned {wrong} wrong element(s) over "
                        f"{report['world_size']} ranks ({report['backend']})",
                        "a transport corrupts data: rerun with NCCL_DEBUG=INFO and check the GPUs/NICs involved",
                        "bench")]
    largest = max(report["results"], key=lambda row: row["bytes"])
    summary = (f"all_reduce busbw {largest['busbw_gbps']:.1f} GB/s at {largest['bytes'] >> 20} MiB on "
               f"{report['world_size']}x {report['device']} ({report['backend']}"
               + (f" {report['nccl']}" if report.get("nccl") else "") + "); results correct")
    floor = LINK_FLOOR_GBPS.get(node.gpus.interconnect if node.gpus else "none")
    if floor and report["backend"] == "nccl" and report["world_size"] > 1 and largest["busbw_gbps"] < floor:
        return [Finding(WARNING, "bench-low-busbw", f"{summary}, but {node.gpus.interconnect} links give "
                        f"over {floor:.0f} GB/s", "look at the findings above (NCCL_P2P_DISABLE, "
                        "NCCL_SHM_DISABLE, visibility) and NCCL_DEBUG=INFO's 'via P2P' lines", "bench")]
    return [Finding(INFO, "bench", summary, "nodeweave bench covers more sizes and operations", "bench")]
