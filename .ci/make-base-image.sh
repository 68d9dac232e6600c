#!/usr/bin/env bash
# Make the offline Debian base image the tests build on (no registry is reachable):
# debootstrap a minimal bookworm with Python, then import it into podman.
# Usage: make-base-image.sh [IMAGE]   (default localhost/nodeweave-base:bookworm)
set -euo pipefail
image="${1:-localhost/nodeweave-base:bookworm}"
if podman image exists "$image"; then echo "$image exists"; exit 0; fi
root=$(mktemp -d /var/tmp/nodeweave-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase \
  --include=python3,python3-venv,python3-pip,ca-certificates,rsync,procps,iproute2,tini \
  bookworm "$root" http://deb.debian.org/debian >/dev/null
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "made $image"
