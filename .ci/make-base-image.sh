#!/usr/bin/env bash
# Make the offline Debian base image the tests build on (no registry is reachable):
# debootstrap a minimal bookworm with Python, then import it into each engine named.
# Usage: make-base-image.sh [IMAGE [ENGINE...]]   (default: localhost/nodeweave-base:bookworm podman)
# ENGINE is podman or docker (the dockerd of .ci/setup-docker.sh, at $NODEWEAVE_DOCKER_HOST).
# The engines named in one run import the same root filesystem (one debootstrap). Its / is 0755:
# bases made before had mktemp's 0700, which overlay storage hides (the container's own layer
# gives /) but docker's vfs keeps, and uid 1000 then cannot start anything. So docker never
# copies an older podman base: it imports a fresh root filesystem.
set -euo pipefail
image="${1:-localhost/nodeweave-base:bookworm}"
[ "$#" -gt 0 ] && shift
engines=("${@:-podman}")
export DOCKER_HOST="${NODEWEAVE_DOCKER_HOST:-unix:///run/nodeweave-docker/docker.sock}"

has() {
  case "$1" in
    podman) podman image exists "$image" ;;
    docker) docker image inspect "$image" >/dev/null 2>&1 ;;
    *) echo "make-base-image.sh: engine '$1' is not podman or docker" >&2; exit 2 ;;
  esac
}
root=""
trap '[ -z "$root" ] || rm -rf "$root"' EXIT
make_rootfs() {
  [ -n "$root" ] && return 0
  root=$(mktemp -d /var/tmp/nodeweave-rootfs.XXXXXX)
  chmod 0755 "$root"  # the image's /: mktemp's 0700 would lock every non-root user out
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates,rsync,procps,iproute2,tini \
    bookworm "$root" http://deb.debian.org/debian >/dev/null
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
}

for engine in "${engines[@]}"; do
  if has "$engine"; then echo "$image exists in $engine"; continue; fi
  make_rootfs
  tar -C "$root" -c . | "$engine" import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
  echo "made $image in $engine"
done
