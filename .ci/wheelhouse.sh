#!/usr/bin/env bash
# Fill the wheelhouse an offline image build installs from (docs/design.md,
# image build contract): containers on a build network reach no package index,
# so every wheel comes from the host. The requirements are the variant's own
# pins (nodeweave.catalogue ... pip_requirements) plus their dependencies, and nodeweave's own
# dependencies (a fresh venv installs the nodeweave wheel offline from here).
# Idempotent: wheels already there are kept.
# Usage: .ci/wheelhouse.sh [VARIANT [DIR]]   (default: cpu, the checkout's wheelhouse/ — gitignored; a relative DIR
# or PYTHON is read from where you type it; PYTHON defaults to the checkout's .venv/bin/python)
# A DIR or PYTHON given as a relative path is read from where the command was typed, not from the checkout the
# script moves to (walk13 A15's class: examples/demo.sh read a relative SPEC from the checkout).
set -euo pipefail
here=$PWD
typed() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$here/$1" ;; esac; }
variant="${1:-cpu}"
dest=wheelhouse py=.venv/bin/python
if [ -n "${2:-}" ]; then dest=$(typed "$2"); fi
case "${PYTHON:-}" in
  "") ;;
  */*) py=$(typed "$PYTHON") ;;
  *) py=$PYTHON ;;  # a bare name (python3) is looked up on PATH
esac
cd "$(dirname "$0")/.."
command -v "$py" >/dev/null 2>&1 || { echo "wheelhouse.sh: $py is missing; run 'make install' first" >&2; exit 3; }
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
# distributions only, as the build's own line counts them (its README is no package)
packages=$(find "$dest" -maxdepth 1 -type f \( -name '*.whl' -o -name '*.tar.gz' -o -name '*.zip' \) | wc -l)
echo "wheelhouse $dest for $variant: $packages packages, $(du -sh "$dest" | cut -f1) (${reqs[*]})"
