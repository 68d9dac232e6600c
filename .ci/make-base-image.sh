#!/usr/bin/env bash
# Make the offline Debian base image the tests build on (no registry is reachable):
# debootstrap a minimal bookworm with Python, then import it into each engine named.
# Usage: make-base-image.sh [IMAGE [ENGINE...]]   (default: localhost/nodeweave-base:bookworm podman)
# ENGINE is podman or docker (the dockerd of .ci/setup-docker.sh, at $NODEWEAVE_DOCKER_HOST).
# Every engine gets the same root filesystem: one debootstrap per run, and an image podman
# already holds is copied into docker as it is (podman save | docker load).
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
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates,rsync,procps,iproute2,tini \
    bookworm "$root" http://deb.debian.org/debian >/dev/null
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
}

for engine in "${engines[@]}"; do
  if has "$engine"; then echo "$image exists in $engine"; continue; fi
  if [ "$engine" = docker ] && [ -z "$root" ] && command -v podman >/dev/null && podman image exists "$image"; then
    podman image save --format docker-archive "$image" | docker load >/dev/null
    echo "copied $image from podman into docker"
    continue
  fi
  make_rootfs
  tar -C "$root" -c . | "$engine" import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
  echo "made $image in $engine"
done
