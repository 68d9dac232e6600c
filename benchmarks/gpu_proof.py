"""Proof on a real 1- or 2-GPU NVIDIA host that nodeweave's entrypoint is right and costs nothing.

    PYTHONPATH=src python3 benchmarks/gpu_proof.py --out proof-out [--steps 1,2,3,4,5,6] [--rounds 3]

1. detection (``nodeweave-entrypoint --explain --json``) agrees with nvidia-smi:
   count, model, PCI bus IDs, NVLink;
2. the entrypoint execs torchrun and NCCL all_reduce/all_gather/reduce_scatter
   are correct on every GPU;
3. two nodes simulated on one host (one GPU, hostname and NCCL_HOSTID each)
   rendezvous through the entrypoint, are correct, and NCCL uses its network
   transport (checked once with NCCL_DEBUG=INFO);
4. busbw at 256 MiB and 1 GiB, entrypoint vs NCCL defaults, single- and
   two-node, plus the tutorial hand settings and what doctor says of them
   (``gpu_bandwidth.py``);
5. entrypoint start -> exec against ``python3 -c pass``;
6. the commands themselves here: ``nodeweave doctor`` (plain, ``--bench``),
   ``nodeweave bench`` (table, JSON, plot) and a ``--sweep``.

Needs the stdlib, torch and this checkout; step 4's doctor part and step 6
run the ``nodeweave`` CLI, so they also need typer and rich. Writes ``proof.json`` under
``--out`` after every step and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_common as common  # noqa: E402


def _smi(*args: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"nvidia-smi failed: {err}"
    return out.stdout if out.returncode == 0 else f"nvidia-smi exit {out.returncode}: {out.stderr}"


def _bus(bus_id: str) -> str:
    """``00000000:18:00.0`` (nvidia-smi) and ``0000:18:00.0`` (sysfs) -> ``0000:18:00.0``."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def explain(extra: "dict[str, str] | None" = None) -> dict:
    out = subprocess.run([common.PY, "-m", "nodeweave.entrypoint", "--explain", "--json", "--launcher", "command",
                          "--nnodes", "1", "--node-rank", "0", "--master-addr", "127.0.0.1", "--", "true"],
                         capture_output=True, text=True, env=common.base_env(extra), timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"entrypoint --explain exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def step_detection() -> dict:
    plan = explain()
    gpus = plan["node"]["gpus"]
    query = _smi("--query-gpu=name,pci.bus_id,count", "--format=csv,noheader")
    rows = [[cell.strip() for cell in line.split(",")] for line in query.strip().splitlines() if line.count(",") == 2]
    nvlink_status, topo = _smi("nvlink", "--status"), _smi("topo", "-m")
    smi_links = len(re.findall(r"Link \d+: [\d.]+ GB/s", nvlink_status))
    smi_nvlink = smi_links > 0 or bool(re.search(r"\bNV\d+\b", topo))
    found = [(d["model"], _bus(d["pci"])) for d in gpus["devices"]]
    expected = [(name, _bus(bus)) for name, bus, _ in rows]
    checks = {
        "count": (gpus["count"], int(rows[0][2]) if rows else 0),
        "models_and_bus_ids": (sorted(found), sorted(expected)),
        "nvlink": (gpus["interconnect"] in ("nvlink", "nvswitch"), smi_nvlink),
    }
    return {"agree": all(a == b for a, b in checks.values()), "checks": checks, "interconnect": gpus["interconnect"],
            "driver": gpus.get("driver"), "nvidia_smi_query": query, "nvidia_smi_nvlink_links_up": smi_links,
            "nvidia_smi_topo": topo, "plan_env": plan.get("env"), "plan_warnings": plan.get("warnings")}


def step_single_node(gpus: int) -> dict:
    result = common.launch(common.single_node(gpus), "entrypoint", "all_reduce,all_gather,reduce_scatter",
                           "1M:1G:4", iters=10, warmup=3)
    report = result["report"] or {}
    return {"correct": common.correct(result), "world_size": report.get("world_size"), "backend": report.get("backend"),
            "device": report.get("device"), "torch": report.get("torch"), "nccl": report.get("nccl"),
            "env_seen_by_workers": report.get("env"), "exit_codes": result["exit_codes"],
            "results": report.get("results"), "log_tail": common.tail(result["logs"][0])}


def step_two_nodes(name: str, use_uts: bool) -> dict:
    debug = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    result = common.launch(common.two_nodes(name, use_uts), "entrypoint", "all_reduce,all_gather,reduce_scatter",
                           "1M,64M", iters=5, warmup=2, extra_env=debug)
    logs = "\n".join(result["logs"])
    transport = sorted(set(re.findall(r"via (NET/\w+(?:/\d+)?|P2P/\w+|SHM)", logs)))
    # NCCL prefixes each INFO line with "<hostname>:<pid>:<tid>": the names each node really had
    hostnames = sorted(set(re.findall(r"^([\w.-]+):\d+:\d+ \[\d+\] NCCL INFO", logs, re.MULTILINE)))
    report = result["report"] or {}
    return {"correct": common.correct(result), "world_size": report.get("world_size"),
            "nnodes_seen_by_workers": report.get("nnodes"), "uts_namespace": use_uts,
            "transports_in_nccl_log": transport, "uses_net_socket": "NET/Socket" in logs,
            "uses_p2p_or_shm": any(t.startswith(("P2P", "SHM")) for t in transport),
            "exit_codes": result["exit_codes"], "results": report.get("results"),
            "nccl_net_lines": [line for line in logs.splitlines() if "NET/" in line][:12],
            "log_tails": [common.tail(log, 1500) for log in result["logs"]], "hostnames_in_log": hostnames}


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
    return {"argv": ["nodeweave", *args], "exit_code": out.returncode, "seconds": round(time.perf_counter() - start, 1),
            "stdout": common.tail(out.stdout, 6000), "stderr": common.tail(out.stderr, 2000)}


def step_cli(out: Path) -> dict:
    """The user-facing commands on this host: doctor (plain and --bench), bench, and a sweep."""
    doctor = _cli(["doctor", "--json"])
    try:
        findings = json.loads(doctor["stdout"])["findings"]
    except (json.JSONDecodeError, KeyError):
        findings = None
    return {
        "doctor": {"exit_code": doctor["exit_code"], "findings": findings, "stderr": doctor["stderr"]},
        "doctor_text": _cli(["doctor"]),
        "doctor_bench": _cli(["doctor", "--bench"]),
        "bench": _cli(["bench", "--sizes", "1M:1G:4", "--iters", "10", "--json", str(out / "bench.json"),
                       "--plot", str(out / "bench.png")]),
        "sweep": _cli(["bench", "--ops", "all_reduce", "--sizes", "64M,1G", "--sweep", "NCCL_MAX_NCHANNELS=4,16,32",
                       "--json", str(out / "sweep.json"), "--plot", str(out / "sweep.png")]),
    }


def summary(proof: dict) -> str:
    """The numbers that matter, as a plain table with each ratio against its same-run baseline."""
    lines = [f"{'what':<44} {'size':>6} {'nodeweave':>10} {'baseline':>10} {'ratio':>7} {'paired':>7}"]
    bandwidth = proof.get("4_bandwidth") or {}
    for case in ("single_node", "two_nodes"):
        comparison = bandwidth.get(case)
        if not comparison or "median_busbw_gbps" not in comparison:
            continue
        medians = comparison["median_busbw_gbps"]
        for size in medians["entrypoint"]:
            ours, base = medians["entrypoint"][size], medians["nccl_defaults"][size]
            ratio, paired = comparison["ratio_entrypoint_vs_defaults"][size], comparison["paired_ratio_median"][size]
            lines.append(f"{'busbw ' + case + ' (GB/s) vs NCCL defaults':<44} {size:>6} {ours or 0:>10.2f} "
                         f"{base or 0:>10.2f} {ratio or 0:>7.3f} {paired or 0:>7.3f}")
    for setting, run in (bandwidth.get("tutorial_single_node") or {}).items():
        for size, value in run["busbw_gbps"].items():
            lines.append(f"{'busbw ' + setting + ' vs plan':<44} {size:>6} {value or 0:>10.2f} "
                         f"{bandwidth['single_node']['median_busbw_gbps']['entrypoint'][size] or 0:>10.2f} "
                         f"{run['ratio_vs_entrypoint_plan'][size] or 0:>7.3f} {'':>7}")
    startup = proof.get("5_startup") or {}
    if "median_ms" in startup:
        ms = startup["median_ms"]
        ours, base = ms["entrypoint -> exec /bin/true"], ms["python3 -c pass"]
        lines.append(f"{'start-up ms: entrypoint->exec vs python3 -c pass':<44} {'':>6} {ours:>10.1f} {base:>10.1f} "
                     f"{ours / base:>7.2f} {'':>7}")
    return "\n".join(lines)


def _gpu_count() -> int:
    rows = _smi("--query-gpu=count", "--format=csv,noheader").split()
    return int(rows[0]) if rows and rows[0].isdigit() else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu-proof-out"))
    parser.add_argument("--steps", default="1,2,3,4,5,6")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per bandwidth comparison")
    parser.add_argument("--parts", default="single,tutorial,two",
                        help="step 4's parts: single (one node), tutorial (hand settings + doctor), two (two nodes)")
    parser.add_argument("--name", default="nodeweave", help="simulated node names: <name>-0, <name>-1")
    args = parser.parse_args(argv)
    steps = {int(s) for s in args.steps.split(",") if s.strip()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpus = _gpu_count()
    use_uts = common.uts_works()
    proof: dict = {"gpus": gpus, "uts_namespace": use_uts, "host_ipv4": common.host_ipv4(),
                   "nvidia_smi": _smi("--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")}
    print(f"{gpus} GPU(s); UTS namespace for hostnames: {use_uts}", flush=True)

    def save():
        (out / "proof.json").write_text(json.dumps(proof, indent=2, default=str) + "\n")

    def run(key: str, func, *fargs):
        start = time.perf_counter()
        try:
            proof[key] = func(*fargs)
        except Exception as err:  # record the failure and go on with the next step
            proof[key] = {"error": f"{type(err).__name__}: {err}"}
        proof[key]["step_seconds"] = round(time.perf_counter() - start, 1)
        print(f"== {key}: {json.dumps({k: v for k, v in proof[key].items() if not isinstance(v, (list, dict)) or k in ('checks', 'median_ms', 'transports_in_nccl_log')}, default=str)}", flush=True)
        save()

    if 1 in steps:
        run("1_detection", step_detection)
    if 2 in steps and gpus >= 1:
        run("2_single_node", step_single_node, gpus)
    if 3 in steps and gpus >= 2:
        run("3_two_nodes", step_two_nodes, args.name, use_uts)
    if 5 in steps:
        run("5_startup", step_startup)
    if 6 in steps:
        run("6_cli", step_cli, out)
    if 4 in steps and gpus >= 1:
        import gpu_bandwidth

        parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
        run("4_bandwidth", gpu_bandwidth.step_bandwidth, gpus, args.name, use_uts, args.rounds, parts)
    save()
    print(summary(proof), flush=True)
    failed = [key for key, value in proof.items() if isinstance(value, dict) and
              (value.get("error") or value.get("correct") is False or value.get("agree") is False)]
    print("failed steps: " + (", ".join(failed) if failed else "none"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
