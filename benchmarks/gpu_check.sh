#!/bin/bash
# `nodeweave check` on one machine's GPUs as simulated nodes (docs/gpu.md): each node a process
# tree with its own GPU (CUDA_VISIBLE_DEVICES), its own NCCL_HOSTID and, where allowed, its own
# hostname (unshare --uts), started through the real entrypoint exactly as `nodeweave check` starts
# it on a node: --mode run, launcher pinned to torchrun, one process, `-m nodeweave.check.worker`.
# Then the same two nodes run the bench worker's all_reduce for comparison, and nvidia-smi's own
# answers are kept. Run from a folder holding src/ (PYTHONPATH); results under $OUT.
set -u
OUT=${OUT:-/tmp/gpu-check}; mkdir -p "$OUT"
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
grep -h "NODEWEAVE_CHECK_REPORT" "$OUT"/check-node0.log | sed 's/.*NODEWEAVE_CHECK_REPORT //' > "$OUT/check.json"
tail -n 5 "$OUT"/*.log; cat "$OUT/machine.txt"
python3 - "$OUT/check.json" <<'PY' > "$OUT/verdict.txt" 2>&1
import json, sys
from nodeweave.check.verdict import findings
doc = json.load(open(sys.argv[1]))
for node in doc["nodes"]:
    print(node["node"], node["facts"]["hostname"], node["facts"]["gpu_model"], node["samples"], node["per_gpu"],
          [(g["sm_clock_mhz"], g["sm_clock_max_mhz"], g["throttle"]) for g in node["gpus"]])
print(doc["links"], doc["allreduce"], doc["stage_seconds"])
print([f.text for f in findings(doc, doc["threshold"])] or "nothing named")
PY
cat "$OUT/verdict.txt"
