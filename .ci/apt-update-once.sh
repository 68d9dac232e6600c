#!/usr/bin/env bash
# apt-get update, unless the package lists were fetched in the last hour: the set-up scripts each install
# what is missing, and on a clean machine each would otherwise fetch the same lists again (.ci/run runs them
# one after another; apt allows one at a time).
set -euo pipefail
fresh=$(find /var/lib/apt/lists -maxdepth 1 -name '*Release' -mmin -60 2>/dev/null | head -1)
if [ -n "$fresh" ]; then
  echo "apt lists are fresh ($(basename "$fresh")): no apt-get update"
  exit 0
fi
apt-get update -qq
