#!/usr/bin/env bash
# Fill the wheelhouse an offline image build installs from (docs/design.md,
# image build contract): containers on a build network reach no package index,
# so every wheel comes from the host. The requirements are the variant's own
# pins (nodeweave.catalogue ... pip_requirements) plus their dependencies.
# Idempotent: wheels already there are kept.
# Usage: .ci/wheelhouse.sh [VARIANT [DIR]]   (default: cpu, wheelhouse/ — gitignored)
set -euo pipefail
cd "$(dirname "$0")/.."
variant="${1:-cpu}"
dest="${2:-wheelhouse}"
py="${PYTHON:-.venv/bin/python}"
[ -x "$py" ] || { echo "wheelhouse.sh: $py is missing; run 'make install' first" >&2; exit 3; }
mapfile -t reqs < <("$py" -c "
import sys
from nodeweave.catalogue import get_variant
print('\n'.join(get_variant(sys.argv[1]).pip_requirements))" "$variant")
[ "${#reqs[@]}" -gt 0 ] || { echo "wheelhouse.sh: variant $variant has no pip requirements" >&2; exit 1; }
mkdir -p "$dest"
# DeepSpeed publishes only an sdist: build its pure-Python wheel once, no ops
# compiled (they JIT-compile at run time), against the torch in .venv.
for req in "${reqs[@]}"; do
  case "$req" in
    deepspeed==*)
      ds_v="${req#deepspeed==}"
      if ! compgen -G "$dest/deepspeed-${ds_v}-*.whl" >/dev/null; then
        DS_BUILD_OPS=0 "$py" -m pip wheel -q --no-deps --no-build-isolation -w "$dest" "$req"
      fi ;;
  esac
done
# torch's CPU wheel lies on disk (pip's find-links); the rest come from the index.
"$py" -m pip download -q -d "$dest" --find-links "$dest" --only-binary=:all: "${reqs[@]}" \
  2> >(grep -v "is neither a file nor a directory" >&2)
echo "wheelhouse $dest for $variant: $(ls "$dest" | wc -l) files, $(du -sh "$dest" | cut -f1) (${reqs[*]})"
