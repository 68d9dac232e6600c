#!/bin/bash
# `nodeweave check` on one machine's GPUs as simulated nodes (docs/gpu.md): each node a process
# tree with its own GPU (CUDA_VISIBLE_DEVICES), its own NCCL_HOSTID and, where allowed, its own
# hostname (unshare --uts), started through the real entrypoint exactly as `nodeweave check` starts
# it on a node: --mode run, launcher pinned to torchrun, one process, `-m nodeweave.check.worker`.
# Then the same two nodes run the bench worker's all_reduce for comparison, and nvidia-smi's own
# answers are kept; then a second check while another process runs a matmul loop on node 1's GPU (a
# noisy neighbour), which must name node 1. Run from a folder holding src/ (PYTHONPATH); results in $OUT.
set -u
FINAL=${OUT:-/tmp/gpu-check}; OUT=$(mktemp -d); mkdir -p "$FINAL"
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH=$HERE/src PATH=$HERE/bin:$PATH
NODES=${NODES:-2}
mkdir -p "$HERE/bin"
command -v torchrun >/dev/null || printf '#!/bin/sh\nexec python3 -m torch.distributed.run "$@"\n' > "$HERE/bin/torchrun"
chmod +x "$HERE/bin/torchrun" 2>/dev/null
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  command -v dcgmi || echo "dcgmi: not installed"; nproc; } > "$OUT/machine.txt" 2>&1
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
for prefix in clocks_throttle_reasons clocks_event_reasons; do
  python3 - "$prefix" > "$OUT/query-$prefix.csv" 2>&1 <<'PY'
import subprocess, sys
from nodeweave.check.gpu_facts import query_fields
out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(query_fields(sys.argv[1])), "--format=csv,noheader,nounits"], capture_output=True, text=True)
print(out.stdout + out.stderr, end="")
PY
done
nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv,noheader,nounits > "$OUT/remap.csv" 2>&1
ADDR=$(hostname -I | awk '{print $1}')
UTS=(sh -c 'exec "$@"' ); unshare --uts true 2>/dev/null && UTS=(unshare --uts sh -c 'hostname "$0"; exec "$@"')
start_nodes() {  # $1: port, $2: name, rest: the command after --
  local port=$1 name=$2; shift 2
  for ((i = 0; i < NODES; i++)); do
    CUDA_VISIBLE_DEVICES=$i NCCL_HOSTID=simnode$i TMPDIR=$(mktemp -d) \
      "${UTS[@]}" "simnode$i" timeout 200 python3 -m nodeweave.entrypoint --mode run --nnodes "$NODES" --node-rank "$i" \
        --master-addr "$ADDR" --master-port "$port" --launcher torchrun --nproc-per-node 1 \
        --launcher-options '' --max-restarts 0 -- "$@" > "$OUT/$name-node$i.log" 2>&1 &
  done
  wait
}
T0=$(date +%s)
start_nodes 29610 check -m nodeweave.check.worker --backend nccl
echo "check wall seconds: $(( $(date +%s) - T0 ))" >> "$OUT/machine.txt"
start_nodes 29620 bench -m nodeweave.bench.worker --ops all_reduce --sizes 64M,256M,1G --backend nccl --out "$OUT/bench.json"
# the reference: both GPUs in one process group without the simulated hosts (NVLink)
python3 -m torch.distributed.run --nproc-per-node "$NODES" --master-port 29630 -m nodeweave.bench.worker \
  --ops all_reduce --sizes 256M,1G --backend nccl --out "$OUT/bench-nvlink.json" > "$OUT/bench-nvlink.log" 2>&1
# a noisy neighbour on node 1's GPU: a matmul loop of another process shares it during a second check
CUDA_VISIBLE_DEVICES=1 timeout 120 python3 -c '
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
while True:
    torch.mm(a, a)
' > "$OUT/hog.log" 2>&1 &
HOG=$!
sleep 8
start_nodes 29640 check-hog -m nodeweave.check.worker --backend nccl
kill $HOG; wait $HOG 2>/dev/null
for run in check check-hog; do
  grep -h "NODEWEAVE_CHECK_REPORT" "$OUT/$run-node0.log" | sed 's/.*NODEWEAVE_CHECK_REPORT //' > "$FINAL/$run.json"
done
cp "$OUT"/bench*.json "$FINAL/" 2>/dev/null
tail -n 3 "$OUT"/*.log; cat "$OUT/machine.txt"
for run in check check-hog; do python3 - "$FINAL/$run.json" <<'PY'; done > "$FINAL/verdict.txt" 2>&1
import json, sys
from nodeweave.check.verdict import findings
doc = json.load(open(sys.argv[1]))
for node in doc["nodes"]:
    print(node["node"], node["facts"]["hostname"], node["facts"]["gpu_model"], node["samples"], node["per_gpu"],
          [(g["sm_clock_mhz"], g["sm_clock_max_mhz"], g["throttle"]) for g in node["gpus"]])
print(doc["links"], doc["allreduce"], doc["stage_seconds"])
print([f.text for f in findings(doc, doc["threshold"])] or "nothing named")
PY
cat "$FINAL/verdict.txt"
tar -C "$OUT" -czf "$FINAL/logs.tgz" .
