#!/usr/bin/env bash
# `make demo`: the main job for real where a container engine runs, else what nodeweave would do here.
#
# With podman answering: build the cpu image offline (the local Debian base and the wheelhouse, as the
# engine tests do), bring up a 2-node local cluster that holds (`nodeweave up --hold`), run the spec's
# training script on both nodes (`nodeweave run`), show the run folder, take the cluster down.
# Without an engine: render everything for the spec into build/demo, explain the entrypoint's plan for
# this machine, and print the one command that installs an engine.
# Exit 3 before anything runs without nodeweave in the venv's bin; with podman, outside a nodeweave checkout (.ci/)
# or without podman-compose.
# Usage: examples/demo.sh [SPEC]   (default the checkout's nodeweave.yaml; .venv/bin, or NODEWEAVE_VENV/bin as `make
# demo VENV=...` passes it, must hold nodeweave; a relative SPEC or NODEWEAVE_VENV is read from where you type it)
# A SPEC or NODEWEAVE_VENV given as a relative path is read from where the command was typed, not from the checkout
# the script moves to (walk13 A15: `examples/demo.sh ./nodeweave.yaml` rendered, built and ran the checkout's job).
set -euo pipefail
here=$PWD
typed() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$here/$1" ;; esac; }
spec=nodeweave.yaml bin=.venv/bin
if [ -n "${1:-}" ]; then spec=$(typed "$1"); fi
if [ -n "${NODEWEAVE_VENV:-}" ]; then bin=$(typed "$NODEWEAVE_VENV")/bin; fi
cd "$(dirname "$0")/.."
base=localhost/nodeweave-base:bookworm

# What the demo needs, said before anything runs (walk16a A28: from examples/ copied into a project of one's own it
# ran until bash met a missing file, exit 127): nodeweave in the venv's bin, and with an engine the checkout's .ci/.
if [ ! -x "$bin/nodeweave" ] || [ ! -x "$bin/nodeweave-entrypoint" ]; then
  echo "demo.sh: $bin/nodeweave not found: the demo runs nodeweave from the checkout's venv: make cli (it makes" \
    ".venv with nodeweave[local]), or NODEWEAVE_VENV=DIR for a venv of yours that holds it" >&2
  exit 3
fi

explain() {
  "$bin/nodeweave" render all --spec "$spec" --out build/demo
  # Node 0 of 2 with both nodes on this machine: --exchange-allow address says so, or in a container with a network
  # namespace of its own (a devcontainer, a CI runner) the plan refuses the loopback master (exit 3).
  "$bin/nodeweave-entrypoint" --explain --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --exchange-allow address \
    -- examples/train.py
}

if ! command -v podman >/dev/null 2>&1 || ! podman info >/dev/null 2>&1; then
  explain
  echo
  echo "No container engine answers here, so the demo stopped at rendering and explaining."
  echo "Install podman (as CI does) and run 'make demo' again to train on a 2-node local cluster:"
  echo "  bash .ci/setup-engine.sh"
  exit 0
fi

if [ ! -f .ci/make-base-image.sh ] || [ ! -f .ci/wheelhouse.sh ]; then
  echo "demo.sh: $PWD is no nodeweave checkout (.ci/ not found): with an engine, examples/demo.sh builds the image" \
    "with the nodeweave repository's .ci/ scripts (there: make demo); in a project of your own: nodeweave init," \
    "nodeweave render all, nodeweave image build, nodeweave up --hold, nodeweave run (README, \"Your own project\")" >&2
  exit 3
fi

# the local cluster's nodes are started by podman-compose: said before a minutes-long image build, not after it
if [ ! -x "$bin/podman-compose" ] && ! command -v podman-compose >/dev/null 2>&1; then
  echo "demo.sh: podman answers, but podman-compose is not in $bin nor on PATH; the local cluster starts the nodes" \
    "with it: make cli (it installs nodeweave[local]), or $bin/pip install 'nodeweave[local]'" >&2
  exit 3
fi

step() { printf '\n== %s\n' "$*"; }
step "image: the cpu variant, offline, from $base and wheelhouse/"
bash .ci/make-base-image.sh "$base"
bash .ci/wheelhouse.sh cpu
"$bin/nodeweave" image build cpu --spec "$spec" --base "$base" --offline --network host --quiet

step "up: 2 node containers on this machine that plan and hold (compose/local.yaml)"
trap '"$bin/nodeweave" down --spec "$spec" >/dev/null 2>&1 || true' EXIT
"$bin/nodeweave" up --spec "$spec" --hold --timeout 300
"$bin/nodeweave" status --spec "$spec"

step "run: the spec's training script on both nodes at once, through each node's entrypoint"
"$bin/nodeweave" run --spec "$spec"

step "the run folder"
run=$(ls -1dt "$(dirname "$spec")"/runs/*/ | head -1)  # the run folders' store beside the spec
ls -l "$run"
"$bin/python" - "$run" <<'PY'
import json, sys
record = json.load(open(sys.argv[1] + "run.json"))
print(f"{record['run_id']}: {record['summary']}")
for node in record["nodes"]:
    exported = node["exported"]
    print(f"  {node['node']} ({node['reached_as']}): exit {node['exit_code']}, first output after "
          f"{node['first_output_s']} s, NODE_RANK={exported.get('NODE_RANK')} MASTER_ADDR={exported.get('MASTER_ADDR')}")
PY

step "down"
trap - EXIT
"$bin/nodeweave" down --spec "$spec"
