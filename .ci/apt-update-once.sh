#!/usr/bin/env bash
# apt-get update, unless every source apt is configured with had its lists fetched in the last hour: the
# set-up scripts each install what is missing, and on a clean machine each would otherwise fetch the same
# lists again (.ci/run runs them one after another; apt allows one at a time).
# Each source counts, not any one list: a machine debootstrapped minutes before (a fresh CI image) holds a
# fresh list of the one suite debootstrap read and none of its other sources (bookworm-updates, -security), or
# none of a mirror its sources name instead; skipping the update there installed from the wrong lists or found
# no package at all.
set -euo pipefail
lists=/var/lib/apt/lists/
eval "$(apt-config shell lists Dir::State::lists/d)"
# `apt-get update --print-uris` names each source's release file and downloads nothing
mapfile -t releases < <({ apt-get update --print-uris 2>/dev/null || true; } | awk '$2 ~ /_InRelease$/ {print $2}')
why=""
[ "${#releases[@]}" -gt 0 ] || why="apt-get update --print-uris named no source"
for name in "${releases[@]}"; do
  base=${name%InRelease}
  if [ -z "$(find "$lists" -maxdepth 1 \( -name "${base}InRelease" -o -name "${base}Release" \) -mmin -60 2>/dev/null)" ]; then
    why="no list of ${base%_} fetched in the last hour"
    break
  fi
done
if [ -z "$why" ]; then
  echo "apt lists are fresh (all ${#releases[@]} sources, fetched in the last hour): no apt-get update"
  exit 0
fi
echo "apt-get update: $why"
apt-get update -qq
