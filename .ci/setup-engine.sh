#!/usr/bin/env bash
# Install and configure a rootful podman from Debian's packages (see ../shared/ENGINE.md).
# Idempotent: safe to run on a machine that already has it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
for cmd in podman buildah runc slirp4netns debootstrap rsync docker-registry nft nsenter; do
  command -v "$cmd" >/dev/null 2>&1 || need+=("$cmd")
done
if [ "${#need[@]}" -gt 0 ]; then
  bash "$(dirname "$0")/apt-update-once.sh"
  # docker-registry: a real registry on loopback for the --push test (no public one is reachable)
  # nftables, util-linux (nsenter): the check-in's firewall test sets a rule in one container's
  # network namespace from the host (tests/e2e/test_exchange.py)
  apt-get install -y -qq podman buildah runc slirp4netns uidmap debootstrap rsync \
    containernetworking-plugins iproute2 docker-registry nftables util-linux >/dev/null
fi
mkdir -p /etc/containers
# The sandbox has no CAP_SYS_RESOURCE (rlimits may not be raised) and crun
# refuses its hybrid cgroup layout, so pin ulimits under the hard limits and use runc.
nofile=$(ulimit -Hn); nproc_lim=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=1048576
[ "$nproc_lim" = unlimited ] && nproc_lim=1048576
nf=$(( nofile < 10000 ? nofile : 10000 )); np=$(( nproc_lim < 4096 ? nproc_lim : 4096 ))
# Written whole and only when it changes: tests/e2e/test_readme_flow.py runs this script while other test
# groups start containers, and podman must never read a half-written file.
conf=$(mktemp /etc/containers/.containers.conf.XXXXXX)
cat > "$conf" <<CONF
[containers]
default_ulimits = ["nofile=${nf}:${nf}", "nproc=${np}:${np}"]
[engine]
runtime = "runc"
CONF
if cmp -s "$conf" /etc/containers/containers.conf; then
  rm -f "$conf"
else
  chmod 0644 "$conf" && mv -f "$conf" /etc/containers/containers.conf
fi
podman info --format '{{.Host.OCIRuntime.Name}} {{.Version.Version}}'
