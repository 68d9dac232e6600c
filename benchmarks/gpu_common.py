"""Launch helpers shared by the GPU proof scripts (stdlib only).

Every collective run here starts the bench worker (``nodeweave.bench.worker``)
one of two ways, in the same environment apart from what is compared:

- through ``nodeweave-entrypoint`` with launcher torchrun, exactly as a
  training container does (the entrypoint adds its NCCL variables);
- through plain ``torchrun`` with NCCL's defaults (no NCCL variable set).

A "node" is one launch process; two nodes on one host get their own
GPUs (``CUDA_VISIBLE_DEVICES``: one each, or half the host's each), their
own ``NCCL_HOSTID`` and, where ``unshare --uts`` works, their own hostname,
so NCCL sees two hosts and uses its network transport between them.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
WORKER = SRC / "nodeweave" / "bench" / "worker.py"
PY = sys.executable
# NVLink multicast stays off on shared machines (see the device notes); set in every environment.
SAFETY = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
_SCRUB = ("NCCL_", "GLOO_", "RCCL_", "NODEWEAVE_", "CUDA_VISIBLE_DEVICES", "NODE_RANK", "NNODES",
          "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "PET_")


def base_env(extra: "dict[str, str] | None" = None) -> "dict[str, str]":
    """The caller's environment without any NCCL/rank variable, plus the safety switches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PATH"] = os.pathsep.join(p for p in (os.path.dirname(PY), env.get("PATH", "")) if p)  # its torchrun
    env.update(SAFETY)
    env.update(extra or {})
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def host_ipv4() -> str:
    """A non-loopback address of this host (what a second node would dial), else 127.0.0.1."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout.split()
        addresses = [a for a in out if "." in a and not a.startswith("127.")]
        if addresses:
            return addresses[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        return next(a for a in socket.gethostbyname_ex(socket.gethostname())[2] if not a.startswith("127."))
    except (OSError, StopIteration):
        return "127.0.0.1"


def uts_works() -> bool:
    """Whether ``unshare --uts`` can give a process its own hostname here (root only)."""
    try:
        out = subprocess.run(["unshare", "--uts", "sh", "-c", "hostname nodeweave-probe-0 && hostname"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "nodeweave-probe-0"


def with_hostname(command: "list[str]", hostname: "str | None") -> "list[str]":
    if not hostname:
        return command
    return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname, *command]


def worker_args(out: str, ops: str, sizes: str, iters: int, warmup: int, backend: str) -> "list[str]":
    return [str(WORKER), "--ops", ops, "--sizes", sizes, "--iters", str(iters), "--warmup", str(warmup),
            "--backend", backend, "--out", out]


def launch(nodes: "list[dict]", via: str, ops: str, sizes: str, iters: int = 20, warmup: int = 5,
           extra_env: "dict[str, str] | None" = None, timeout: float = 300.0, backend: str = "nccl") -> dict:
    """Run one collective job of ``len(nodes)`` launch processes; rank 0's report and every log.

    Each node dict has ``visible`` (CUDA_VISIBLE_DEVICES or None), ``nproc``, for several
    nodes ``hostname`` and ``hostid``, and optionally ``env`` (variables for that node alone).
    ``via`` is ``entrypoint`` or ``torchrun`` (NCCL defaults).
    """
    port, addr = free_port(), (host_ipv4() if len(nodes) > 1 else "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="nodeweave-proof-") as tmp:
        out = os.path.join(tmp, "rank0.json")
        procs, logs = [], []
        started = time.perf_counter()
        for rank, node in enumerate(nodes):
            topo = ["--nnodes", str(len(nodes)), "--node-rank", str(rank), "--master-addr", addr,
                    "--master-port", str(port)]
            if via == "entrypoint":
                command = [PY, "-m", "nodeweave.entrypoint", "--launcher", "torchrun",
                           "--nproc-per-node", str(node["nproc"]), *topo, "--"]
            else:
                command = [PY, "-m", "torch.distributed.run", "--nproc-per-node", str(node["nproc"]), *topo]
            command += worker_args(out, ops, sizes, iters, warmup, backend)
            env = base_env(extra_env)
            if node.get("visible") is not None:
                env["CUDA_VISIBLE_DEVICES"] = node["visible"]
            if node.get("hostid"):
                env["NCCL_HOSTID"] = node["hostid"]
            env.update(node.get("env") or {})
            log = open(os.path.join(tmp, f"node{rank}.log"), "w+")
            logs.append(log)
            procs.append(subprocess.Popen(with_hostname(command, node.get("hostname")), env=env,
                                          stdout=log, stderr=subprocess.STDOUT, text=True))
        codes = _wait_all(procs, started + timeout)
        texts = []
        for log in logs:
            log.seek(0)
            texts.append(log.read())
            log.close()
        report = json.loads(Path(out).read_text()) if os.path.exists(out) else None
    return {"via": via, "nodes": len(nodes), "exit_codes": codes, "seconds": time.perf_counter() - started,
            "report": report, "logs": texts, "extra_env": extra_env or {}}


def _wait_all(procs: "list[subprocess.Popen]", deadline: float) -> "list[int]":
    """Exit codes; once one node fails (or the deadline passes) the others are killed, not left waiting."""
    failed_at = None
    while any(proc.poll() is None for proc in procs):
        now = time.perf_counter()
        if failed_at is None and any(proc.poll() not in (None, 0) for proc in procs):
            failed_at = now
        if now > deadline or (failed_at is not None and now - failed_at > 10):
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            break
        time.sleep(0.2)
    return [124 if proc.returncode in (-9, None) else proc.returncode for proc in procs]


def busbw(result: dict, op: str, nbytes: int) -> "float | None":
    rows = [r for r in ((result.get("report") or {}).get("results") or []) if r["op"] == op and r["bytes"] == nbytes]
    return rows[0]["busbw_gbps"] if rows else None


def correct(result: dict) -> bool:
    return all(code == 0 for code in result["exit_codes"]) and bool((result.get("report") or {}).get("correct"))


def median(values: "list[float]") -> "float | None":
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def single_node(gpus: int) -> "list[dict]":
    return [{"visible": None, "nproc": gpus}]


def two_nodes(name: str, use_uts: bool, per_node: int = 1) -> "list[dict]":
    """Two simulated nodes of ``per_node`` GPUs each: GPUs 0..k-1 and k..2k-1."""
    return [{"visible": ",".join(str(i * per_node + g) for g in range(per_node)), "nproc": per_node,
             "hostid": f"{name}-{i}", "hostname": f"{name}-{i}" if use_uts else None} for i in range(2)]


def nccl_debug_env(folder: str, node: int, subsys: str = "INIT,GRAPH,NET,ENV") -> "dict[str, str]":
    """NCCL_DEBUG=INFO into one file per process under ``folder``, named by node (for one check only)."""
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": subsys,
            "NCCL_DEBUG_FILE": os.path.join(folder, f"node{node}.%h.%p.nccl.log")}


def read_node_logs(folder: str, nodes: int) -> "dict[str, str]":
    """The NCCL log files ``nccl_debug_env`` asked for, joined per node (``node0``, ``node1``...)."""
    texts = {}
    for node in range(nodes):
        files = sorted(Path(folder).glob(f"node{node}.*.nccl.log"))
        texts[f"node{node}"] = "".join(f"### {path.name}\n" + path.read_text(errors="replace") for path in files)
    return texts


def tail(text: str, limit: int = 3000) -> str:
    return text[-limit:]
