#!/bin/bash
# `nodeweave check` on N GPUs of one machine as N simulated nodes (own GPU, own NCCL_HOSTID, own hostname;
# docs/gpu.md): the machines of the nodes (one boot id), the turns of each round, the Xid events read from
# the kernel log. Run from a folder holding src/ (PYTHONPATH) with $OUT set; results in $OUT.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH=$HERE/src PATH=$HERE/bin:$PATH
NODES=${NODES:-4}
mkdir -p "$HERE/bin" "$OUT"
command -v torchrun >/dev/null || printf '#!/bin/sh\nexec python3 -m torch.distributed.run "$@"\n' > "$HERE/bin/torchrun"
chmod +x "$HERE/bin/torchrun"
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  command -v dcgmi || echo "dcgmi: not installed"; command -v amd-smi || echo "amd-smi: not installed"; nproc;
  cat /proc/sys/kernel/dmesg_restrict; } > "$OUT/machine.txt" 2>&1
ADDR=$(hostname -I | awk '{print $1}')
UTS=(sh -c 'exec "$@"' ); unshare --uts true 2>/dev/null && UTS=(unshare --uts sh -c 'hostname "$0"; exec "$@"')
T0=$(date +%s.%N)
for ((i = 0; i < NODES; i++)); do
  CUDA_VISIBLE_DEVICES=$i NCCL_HOSTID=simnode$i TMPDIR=$(mktemp -d) \
    "${UTS[@]}" "simnode$i" timeout 240 python3 -m nodeweave.entrypoint --mode run --nnodes "$NODES" --node-rank "$i" \
      --master-addr "$ADDR" --master-port 29710 --launcher torchrun --nproc-per-node 1 \
      --launcher-options '' --max-restarts 0 -- -m nodeweave.check.worker --backend nccl > "$OUT/check-node$i.log" 2>&1 &
done
wait
echo "check wall seconds: $(python3 -c "import time; print(round(time.time() - $T0, 1))")" >> "$OUT/machine.txt"
grep -h "NODEWEAVE_CHECK_REPORT" "$OUT/check-node0.log" | sed 's/.*NODEWEAVE_CHECK_REPORT //' > "$OUT/check.json"
python3 - "$OUT/check.json" > "$OUT/verdict.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
from nodeweave.check.driver import CheckResult
from nodeweave.check.report import plain_text
from nodeweave.check.verdict import findings
doc = json.load(open(sys.argv[1]))
print(plain_text(CheckResult(Path("runs/x"), {"exit_code": 0}, doc, findings(doc, doc["threshold"]))))
print("turns", doc["turns"]); print("machines", doc["machines"]); print("stages", doc["stage_seconds"])
for n in doc["nodes"]:
    print(n["node"], n["facts"]["gpu_pci"], n["xid"], n["dcgm"], [(g["index"], g["pci"]) for g in n["gpus"]])
PY
tail -n 3 "$OUT"/check-node*.log; cat "$OUT/machine.txt" "$OUT/verdict.txt"
