"""Proof on a real NVIDIA host (1, 2, 4 or 8 GPUs) that nodeweave's entrypoint is right and costs nothing.

    PYTHONPATH=src python3 benchmarks/gpu_proof.py --out proof-out [--steps 1,2,3,4,5,6,7] [--rounds 3]

1. detection (``nodeweave-entrypoint --explain --json``) agrees with nvidia-smi:
   count, model, PCI bus IDs, NVLink, and NVSwitch where the entrypoint claims one;
2. the entrypoint starts torchrun and NCCL all_reduce/all_gather/reduce_scatter
   are correct on every GPU;
3. two nodes simulated on one host (one GPU, hostname and NCCL_HOSTID each)
   rendezvous through the entrypoint, are correct, and NCCL joins them only
   through its network transport (read from its NCCL_DEBUG=INFO log);
4. all-reduce busbw at 1 MiB, 16 MiB, 256 MiB and 1 GiB, entrypoint vs NCCL
   defaults in alternating rounds with a paired statistic, on one node, on
   2 x 1 and on 2 x half the GPUs; the tutorial hand settings and what doctor
   says of them (``gpu_bandwidth.py``);
5. entrypoint start -> exec against ``python3 -c pass``;
6. the commands themselves here: ``nodeweave doctor`` (plain, ``--bench``),
   ``nodeweave bench`` (table, JSON, plot) and a ``--sweep``;
7. two simulated nodes of half the GPUs each (2 x 2 on four GPUs): correct,
   and NCCL's log shows P2P over NVLink inside each node and NET between them.

A step this host cannot run (too few GPUs, no torch) is skipped with its
reason. Needs the stdlib, torch and this checkout; step 4's doctor part and
step 6 run the ``nodeweave`` CLI, so they also need typer and rich. Writes
``proof.json`` (and the NCCL logs of steps 3 and 7) under ``--out`` after
every step and prints a summary.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_bandwidth  # noqa: E402
import gpu_checks as checks  # noqa: E402
import gpu_common as common  # noqa: E402
import gpu_summary  # noqa: E402

SHOWN = ("checks", "median_ms", "transports", "skipped")  # dicts worth a line in the progress output


def _smi(*args: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"nvidia-smi failed: {err}"
    return out.stdout if out.returncode == 0 else f"nvidia-smi exit {out.returncode}: {out.stderr}"


def explain(extra: "dict[str, str] | None" = None, sysroot: "str | None" = None) -> dict:
    root = ["--sysroot", sysroot] if sysroot else []
    command = [common.PY, "-m", "nodeweave.entrypoint", *root, "--explain", "--json", "--launcher", "command",
               "--nnodes", "1", "--node-rank", "0", "--master-addr", "127.0.0.1", "--", "true"]
    out = subprocess.run(command, capture_output=True, text=True, env=common.base_env(extra), timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"entrypoint --explain exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def step_detection(smi=_smi, sysroot: "str | None" = None) -> dict:
    """The entrypoint's GPUs against nvidia-smi; ``smi`` and ``sysroot`` let the CPU tests replay an HGX."""
    plan = explain(sysroot=sysroot)
    gpus = plan["node"]["gpus"]
    query = smi("--query-gpu=name,pci.bus_id,count", "--format=csv,noheader")
    nvlink_status, topo = smi("nvlink", "--status"), smi("topo", "-m")
    result = checks.compare_detection(gpus, query, nvlink_status, topo)
    result.update({"driver": gpus.get("driver"), "nvidia_smi_query": query, "nvidia_smi_nvlink_status": nvlink_status,
                   "nvidia_smi_topo": topo, "plan_env": plan.get("env"), "plan_warnings": plan.get("warnings")})
    return result


def step_single_node(gpus: int) -> dict:
    result = common.launch(common.single_node(gpus), "entrypoint", "all_reduce,all_gather,reduce_scatter",
                           "1M:1G:4", iters=10, warmup=3)
    report = result["report"] or {}
    return {"correct": common.correct(result), "world_size": report.get("world_size"), "backend": report.get("backend"),
            "device": report.get("device"), "torch": report.get("torch"), "nccl": report.get("nccl"),
            "env_seen_by_workers": report.get("env"), "exit_codes": result["exit_codes"],
            "results": report.get("results"), "log_tail": common.tail(result["logs"][0])}


def step_simulated_nodes(name: str, use_uts: bool, per_node: int, out: Path) -> dict:
    """Two simulated nodes of ``per_node`` GPUs: correct collectives, and NCCL's own log of each connection.

    NCCL_DEBUG=INFO goes to files for this launch only (never into the bandwidth runs); the log is
    kept as ``nccl-2x<k>.log`` under ``--out`` and checked: P2P inside a node, NET between nodes,
    NVLink in each node's graph.
    """
    nodes = common.two_nodes(name, use_uts, per_node)
    with tempfile.TemporaryDirectory(prefix="nodeweave-nccl-") as folder:
        for index, node in enumerate(nodes):
            node["env"] = common.nccl_debug_env(folder, index)
        result = common.launch(nodes, "entrypoint", "all_reduce,all_gather,reduce_scatter", "1M,64M", iters=5, warmup=2)
        node_logs = common.read_node_logs(folder, len(nodes))
    if not any(node_logs.values()):  # NCCL writes to stdout when it cannot open the file
        node_logs = {f"node{i}": log for i, log in enumerate(result["logs"])}
    log_path = out / f"nccl-2x{per_node}.log"
    log_path.write_text("".join(f"##### {node}\n{text}" for node, text in node_logs.items()))
    summary = checks.nccl_transports(node_logs)
    report = result["report"] or {}
    return {"correct": common.correct(result), "transports_ok": checks.transports_ok(summary),
            "shape": f"2 nodes x {per_node} GPU(s)", "world_size": report.get("world_size"),
            "nnodes_seen_by_workers": report.get("nnodes"), "uts_namespace": use_uts, "nccl": report.get("nccl"),
            "nccl_log": str(log_path), "transports": summary, "env_seen_by_workers": report.get("env"),
            "exit_codes": result["exit_codes"], "results": report.get("results"),
            "log_tails": [common.tail(log, 1500) for log in result["logs"]]}


def _time(command: "list[str]", env: dict, runs: int) -> "list[float]":
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def step_startup(runs: int = 20) -> dict:
    env = common.base_env()
    entry = [common.PY, "-m", "nodeweave.entrypoint", "--launcher", "command", "--nnodes", "1", "--node-rank", "0",
             "--master-addr", "127.0.0.1", "--no-wait", "--"]
    bare = [common.PY, "-c", "pass"]
    _time(entry + bare, env, 2)  # warm the page cache
    cases = {"python3 -c pass": bare, "entrypoint -> exec python3 -c pass": entry + bare,
             "entrypoint -> exec /bin/true": entry + ["/bin/true"], "/bin/true": ["/bin/true"]}
    medians = {label: statistics.median(_time(cmd, env, runs)) for label, cmd in cases.items()}
    overhead = medians["entrypoint -> exec /bin/true"] - medians["/bin/true"]
    return {"runs": runs, "median_ms": medians, "entrypoint_overhead_ms": overhead,
            "ratio_vs_python_c_pass": overhead / medians["python3 -c pass"]}


def _cli(args: "list[str]", timeout: float = 400.0) -> dict:
    command = [common.PY, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())", *args]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=common.base_env({"COLUMNS": "160"}),
                         timeout=timeout)
    result = {"argv": ["nodeweave", *args], "exit_code": out.returncode,
              "seconds": round(time.perf_counter() - start, 1),
              "stdout": common.tail(out.stdout, 6000), "stderr": common.tail(out.stderr, 2000)}
    if "--json" in args and "-" not in args:  # parse the whole document: the kept tail may cut its start
        try:
            result["document"] = json.loads(out.stdout)
        except json.JSONDecodeError as err:
            result["document_error"] = f"stdout is not JSON: {err}"
    return result


def step_cli(out: Path) -> dict:
    """The user-facing commands on this host: doctor (plain and --bench), bench, and a sweep."""
    doctor = _cli(["doctor", "--json"])
    document = doctor.get("document") or {}
    return {
        "doctor": {"exit_code": doctor["exit_code"], "findings": document.get("findings"),
                   "counts": document.get("counts"), "stderr": doctor["stderr"],
                   "error": doctor.get("document_error")},
        "doctor_text": _cli(["doctor"]),
        "doctor_bench": _cli(["doctor", "--bench"]),
        "bench": _cli(["bench", "--sizes", "1M:1G:4", "--iters", "10", "--json-out", str(out / "bench.json"),
                       "--plot", str(out / "bench.png")]),
        "sweep": _cli(["bench", "--ops", "all_reduce", "--sizes", "64M,1G", "--sweep", "NCCL_MAX_NCHANNELS=4,16,32",
                       "--json-out", str(out / "sweep.json"), "--plot", str(out / "sweep.png")]),
    }


def _gpu_count() -> int:
    rows = _smi("--query-gpu=count", "--format=csv,noheader").split()
    return int(rows[0]) if rows and rows[0].isdigit() else 0


def skip_reasons(steps: "set[int]", gpus: int, torch_found: bool) -> "dict[int, str]":
    """The steps this host cannot run, each with the reason (printed, and kept in proof.json)."""
    need = {1: 1, 2: 1, 3: 2, 4: 1, 6: 1, 7: 4}
    reasons = {}
    for step in sorted(steps):
        if step not in need and step != 5:
            reasons[step] = f"no step {step}; steps are 1-7"
        elif step in need and gpus < need[step]:
            reasons[step] = (f"needs {need[step]} NVIDIA GPU(s); nvidia-smi reports {gpus}" if gpus else
                             "needs an NVIDIA GPU; nvidia-smi is missing or reports none")
        elif step in need and not torch_found:
            reasons[step] = f"needs torch, which {common.PY} cannot import"
    return reasons


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu-proof-out"))
    parser.add_argument("--steps", default="1,2,3,4,5,6,7")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per bandwidth comparison")
    parser.add_argument("--budget-s", type=float, default=0.0,
                        help="step 4: start no new round of a comparison past this many seconds (0: no limit)")
    parser.add_argument("--parts", default=",".join(gpu_bandwidth.PARTS),
                        help="step 4's parts: single (one node, every GPU), latency (one node, 1 MiB and 16 MiB, "
                             "1000 calls each), tutorial (hand settings + doctor), two (2 nodes x 1 GPU), "
                             "split (2 nodes x half the GPUs)")
    parser.add_argument("--name", default="nodeweave", help="simulated node names: <name>-0, <name>-1")
    args = parser.parse_args(argv)
    try:
        args.steps = {int(s) for s in args.steps.split(",") if s.strip()}
    except ValueError:
        parser.error(f"--steps: {args.steps!r} is not a comma list of step numbers 1-7")
    args.parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = [p for p in args.parts if p not in gpu_bandwidth.PARTS]
    if unknown:
        parser.error(f"--parts: unknown part {unknown[0]!r}; expected a comma list of {', '.join(gpu_bandwidth.PARTS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    steps, parts = args.steps, args.parts
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpus = _gpu_count()
    use_uts = common.uts_works()
    proof: dict = {"gpus": gpus, "uts_namespace": use_uts, "host_ipv4": common.host_ipv4(),
                   "nvidia_smi": _smi("--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"),
                   "skipped": {}}
    print(f"{gpus} GPU(s); UTS namespace for hostnames: {use_uts}", flush=True)

    def save(*_):
        (out / "proof.json").write_text(json.dumps(proof, indent=2, default=str) + "\n")

    def run(key: str, func, *fargs, **kwargs):
        start = time.perf_counter()
        try:
            proof[key] = func(*fargs, **kwargs)
        except Exception as err:  # record the failure and go on with the next step
            proof[key] = {"error": f"{type(err).__name__}: {err}"}
        proof[key]["step_seconds"] = round(time.perf_counter() - start, 1)
        shown = {k: v for k, v in proof[key].items()
                 if (not isinstance(v, (list, dict, str)) or k in SHOWN or (isinstance(v, str) and len(v) < 300))}
        print(f"== {key}: {json.dumps(shown, default=str)}", flush=True)
        save()

    skipped = skip_reasons(steps, gpus, importlib.util.find_spec("torch") is not None)
    for step, reason in skipped.items():
        proof["skipped"][str(step)] = reason
        print(f"== step {step} skipped: {reason}", flush=True)
    todo = steps - set(skipped)
    if 1 in todo:
        run("1_detection", step_detection)
    if 2 in todo:
        run("2_single_node", step_single_node, gpus)
    if 3 in todo:
        run("3_two_nodes", step_simulated_nodes, args.name, use_uts, 1, out)
    if 7 in todo:
        run("7_split_nodes", step_simulated_nodes, args.name, use_uts, gpus // 2, out)
    if 5 in todo:
        run("5_startup", step_startup)
    if 6 in todo:
        run("6_cli", step_cli, out)
    if 4 in todo:
        for part, reason in gpu_bandwidth.skipped_parts(gpus, parts).items():
            print(f"== step 4 part {part} skipped: {reason}", flush=True)
        run("4_bandwidth", gpu_bandwidth.step_bandwidth, gpus, args.name, use_uts, args.rounds, parts,
            budget_s=args.budget_s, progress=lambda partial: (proof.__setitem__("4_bandwidth", partial), save()))
    save()
    print(gpu_summary.table(proof), flush=True)
    failed = gpu_summary.failed_steps(proof)
    print("failed steps: " + (", ".join(failed) if failed else "none"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
