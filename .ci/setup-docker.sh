#!/usr/bin/env bash
# Install Debian's docker.io and start its dockerd beside podman (see ../shared/ENGINE.md), for the
# docker-path tests (tests/e2e/test_docker_path.py). Idempotent: a dockerd that answers is kept.
#
#   socket   $NODEWEAVE_DOCKER_HOST, default unix:///run/nodeweave-docker/docker.sock: not docker's
#            default socket, so commands without DOCKER_HOST (the README flow's `nodeweave image build`)
#            keep finding podman; point DOCKER_HOST at it to use this dockerd
#   storage  /var/lib/nodeweave-docker (overlay2 where the kernel allows it, else vfs); BuildKit's cache
#            is kept under $NODEWEAVE_DOCKER_BUILD_CACHE (default 4GB) by its own garbage collector:
#            without it every run's build contexts and layers stayed (46 GB after a day of runs here)
#   log      /run/nodeweave-docker/dockerd.log
#
# Where dockerd cannot start it fails, with the reason (also written to /run/nodeweave-docker/unavailable,
# which the docker tests' skip quotes off CI): with CI=true those tests may not skip (tests/ci_gate.py).
set -uo pipefail
run_dir=/run/nodeweave-docker
data_root=/var/lib/nodeweave-docker
host=${NODEWEAVE_DOCKER_HOST:-unix://$run_dir/docker.sock}
# Debian's docker 20.10 client has BuildKit built in; a newer client first on PATH (docker 28 here)
# has no buildx plugin, and without one it cannot build with BuildKit at all.
client=/usr/bin/docker
why=$run_dir/unavailable
mkdir -p "$run_dir"

answers() { [ -x "$client" ] && DOCKER_HOST=$host timeout 20 "$client" info >/dev/null 2>&1; }
give_up() {
  echo "$1" >"$why"
  echo "setup-docker: dockerd is not running: $1" >&2
  exit 1
}

if answers; then rm -f "$why"; echo "dockerd answers at $host"; exit 0; fi
if ! command -v dockerd >/dev/null 2>&1 || [ ! -x "$client" ]; then
  export DEBIAN_FRONTEND=noninteractive
  { bash "$(dirname "$0")/apt-update-once.sh" && apt-get install -y -qq docker.io >/dev/null; } \
    || give_up "apt-get install docker.io failed (see the output above)"
fi

config=$run_dir/daemon.json
printf '{"builder": {"gc": {"enabled": true, "defaultKeepStorage": "%s"}}}\n' \
  "${NODEWEAVE_DOCKER_BUILD_CACHE:-4GB}" >"$config"

start() {  # start dockerd with storage driver $1; succeed once it answers
  setsid nohup dockerd --config-file "$config" --iptables=false --storage-driver="$1" --data-root "$data_root" \
    --exec-root "$run_dir/exec" --pidfile "$run_dir/dockerd.pid" --host "$host" \
    >"$run_dir/dockerd.log" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 60); do
    answers && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 1
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  return 1
}

for driver in overlay2 vfs; do
  if start "$driver"; then
    rm -f "$why"
    echo "dockerd $(DOCKER_HOST=$host "$client" info --format '{{.ServerVersion}} {{.Driver}}') answers at $host"
    exit 0
  fi
  echo "dockerd with --storage-driver=$driver did not start: $(grep -E 'level=(error|fatal)' "$run_dir/dockerd.log" | tail -1)" >&2
done
give_up "dockerd did not start (overlay2, then vfs): $(grep -E 'level=(error|fatal)' "$run_dir/dockerd.log" | tail -1 | cut -c1-300)"
