#!/usr/bin/env bash
# Tools some tests use as the real thing they check against: Slurm (a local slurmctld and two
# slurmd "nodes" judge and run the rendered sbatch scripts: tests/slurm_cluster.py) and
# shellcheck (every rendered shell script). Idempotent; where a package cannot be installed the
# tests that need it skip with the reason.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
if [ "${#need[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || echo "setup-tools: could not install ${need[*]}; their tests will skip" >&2
fi
echo "slurm: $(slurmctld -V 2>/dev/null || echo absent); shellcheck: $(shellcheck --version 2>/dev/null | sed -n 2p || echo absent)"
