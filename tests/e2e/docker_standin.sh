#!/bin/sh
# A stand-in for `docker` on the ssh test's hosts: no dockerd runs inside those containers.
# It answers exactly what nodeweave's hosts target sends over ssh, so the compose file, the
# per-host variables and the ssh+docker exec path arrive for real; the "container" is a process.
#   compose -p P -f FILE up -d    keep FILE and the variables compose got (NODE_RANK, MASTER_ADDR,
#                                 NNODES, NODEWEAVE_MODE), then start P-node: the entrypoint, in the
#                                 workspace (FILE's folder's parent), with those variables
#   compose -p P -f FILE down ... stop P-node
#   exec [-i] [-t] NAME CMD...    CMD in NAME's workspace with its variables (125: no such container)
#   logs [-f] NAME                NAME's output
set -eu
state=/var/lib/docker-standin
mkdir -p "$state"

compose() {
  project= file= action=
  while [ $# -gt 0 ]; do
    case "$1" in
      -p) project=$2; shift 2 ;;
      -f) file=$2; shift 2 ;;
      up|down) action=$1; shift ;;
      *) shift ;;
    esac
  done
  name="$project-node"
  if [ "$action" = up ]; then
    cp "$file" "$state/$name.yaml"
    env | grep -E '^(NODE_RANK|MASTER_ADDR|NNODES|NODEWEAVE_MODE|NODEWEAVE_IMAGE)=' | sort > "$state/$name.compose-env"
    printf 'NODE_RANK=%s\nMASTER_ADDR=%s\nNNODES=%s\nNODEWEAVE_NNODES=%s\nNODEWEAVE_MODE=%s\n' \
      "$NODE_RANK" "$MASTER_ADDR" "$NNODES" "$NNODES" "${NODEWEAVE_MODE:-run}" > "$state/$name.env"
    dirname "$(dirname "$file")" > "$state/$name.dir"
    cd "$(cat "$state/$name.dir")"
    setsid env $(cat "$state/$name.env") nodeweave-entrypoint -- train.py > "$state/$name.log" 2>&1 &
    echo $! > "$state/$name.pid"
  else
    [ -f "$state/$name.pid" ] && kill "$(cat "$state/$name.pid")" 2>/dev/null || true
    rm -f "$state/$name.dir" "$state/$name.pid"
  fi
}

case "${1:-}" in
  compose) shift; compose "$@" ;;
  exec)
    shift
    while [ "${1:-}" = -i ] || [ "${1:-}" = -t ]; do shift; done
    name=$1; shift
    [ -f "$state/$name.dir" ] || { echo "Error: No such container: $name" >&2; exit 125; }
    cd "$(cat "$state/$name.dir")"
    exec env $(cat "$state/$name.env") "$@" ;;
  logs)
    shift
    [ "${1:-}" = -f ] && { shift; exec tail -f -n +1 "$state/$1.log"; }
    exec cat "$state/$1.log" ;;
  *) echo "docker (stand-in): not a call nodeweave makes: $*" >&2; exit 99 ;;
esac
