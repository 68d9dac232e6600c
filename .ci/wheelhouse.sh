#!/usr/bin/env bash
# Fill the wheelhouse an offline image build installs from (docs/design.md,
# image build contract): containers on a build network reach no package index,
# so every wheel comes from the host. The requirements are the variant's own
# pins (nodeweave.catalogue ... pip_requirements) plus their dependencies, and nodeweave's own
# dependencies (a fresh venv installs the nodeweave wheel offline from here).
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
# nodeweave's own dependencies and its `local` extra (podman-compose): tests/e2e/test_team_folder.py installs
# the built nodeweave wheel into a fresh venv with --no-index from here, as a team would from PyPI.
mapfile -t own < <("$py" -c "
import tomllib
with open('pyproject.toml', 'rb') as handle:
    project = tomllib.load(handle)['project']
print('\n'.join(project['dependencies'] + project['optional-dependencies']['local']))")
"$py" -m pip download -q -d "$dest" --find-links "$dest" --only-binary=:all: "${own[@]}" \
  2> >(grep -v "is neither a file nor a directory" >&2)
echo "wheelhouse $dest for $variant: $(ls "$dest" | wc -l) files, $(du -sh "$dest" | cut -f1) (${reqs[*]})"
