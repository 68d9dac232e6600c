#!/bin/sh
# An `ssh` stand-in for benchmarks/verbs_scale.py: every "host" is a folder of this machine.
# `ssh [-o X]... [-t] [-n] HOST -- CMD` runs CMD here with `sh -c`, as that host: in $NWSCALE_ROOT/HOST, with
# its own HOME and TMPDIR (where the entrypoint records its runs), and with /nwscale-remote (the benchmark's
# --remote-dir) meaning that host's own remote/ folder. nodeweave's hosts backend, its verbs and the
# entrypoint run unchanged; only the network hop is missing (and every host shares this machine's cores).
# A shell script, not Python: its own start-up is then ~1 ms, not ~25 ms, of each node's time.
# For benchmarks/sync_scale.py: with NWSCALE_NETNS=TAG, CMD runs in the network namespace nws-TAG-HOST (each
# host its own address, so the sync agents relay and dial each other as on a real network) and a mount
# namespace of its own where /nwscale-remote is the host's remote/ (the folder must exist); with
# NWSCALE_REMOTE_CPU set, under /usr/bin/time, which appends its CPU ("USER SYS") to $root/remote-cpu: what
# ran "on the host", kept apart from the source's own CPU.
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-i|-F|-l|-J|-S|-E) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=${1##*@}
shift
[ "$1" = "--" ] && shift
root="$NWSCALE_ROOT/$host"
mkdir -p "$root/tmp" "$root/remote"
cd "$root" || exit 255
export HOME="$root" TMPDIR="$root/tmp"
[ $# -eq 0 ] && exec sh
command=$(printf '%s' "$*" | sed "s#/nwscale-remote#$root/remote#g")
set -- sh -c "$command"
# a mount namespace too, where /nwscale-remote is this host's remote/: a resident agent the command leaves
# behind is handed DEST by the head, not on a command line this script could rewrite
[ -n "$NWSCALE_NETNS" ] && set -- nsenter "--net=/run/netns/nws-$NWSCALE_NETNS-$host" unshare -m sh -c \
  'mount --bind "$0" /nwscale-remote && exec "$@"' "$root/remote" "$@"
[ -n "$NWSCALE_REMOTE_CPU" ] && set -- /usr/bin/time -a -o "$root/remote-cpu" -f "%U %S" "$@"
exec "$@"
