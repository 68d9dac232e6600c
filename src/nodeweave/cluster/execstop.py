"""How ``nodeweave exec`` ends its command on the nodes at ``--timeout`` or Ctrl-C (walk10 C4, C5).

Killing an exec client here (``podman exec``, ``kubectl exec``, ``ssh``, ``srun``) does not end the command it
started on the node. So every target's command goes through one tiny POSIX ``sh`` wrapper (:data:`WRAP`, fixed
text; no new image: any ``/bin/sh`` runs it) that writes its own pid, and that pid's start time, to a file under
the node's ``/tmp`` named by a token of this call (:data:`EXEC_ID`, filled in when the exec starts), then ``exec``\\ s
the command: ``$$`` is then the command's own pid, its argv exactly as typed. At the timeout or Ctrl-C one more exec
per node still running it (:data:`STOP`, the same channel) sends SIGTERM to that pid, every process below it and
its process group, waits :data:`GRACE_S` seconds, then sends SIGKILL to what is left; it answers one word
(:data:`ANSWERS`). A pid whose start time is not the recorded one (the command ended, its pid reused) is left alone.
"""

from __future__ import annotations

from typing import List

from nodeweave.plan.placeholders import placeholder

EXEC_ID = placeholder("exec-id")  # this call's token: the pid file's name on every node


def pid_file(index: int, token: str = EXEC_ID) -> str:
    """Node ``index``'s pid file of call ``token``: named per node too, as hosts may share a ``/tmp``."""
    return f"/tmp/nodeweave-exec-{token}-node-{index}.pid"


GRACE_S = 5  # SIGTERM, then SIGKILL this many seconds later to what still runs

# $1: the pid file; the rest: the command. The files of earlier calls whose command has ended are removed (after
# `exec` nothing is left to remove its own), then the pid and its start time (/proc's field 22; none without /proc)
# are written, then exec: the command gets this very pid. A file that cannot be written leaves it to run unwatched.
WRAP = ('t() { read -r s <"/proc/$$/stat" && s=${s##*) } && set -- $s && echo "${20}"; }; '
        'for g in /tmp/nodeweave-exec-*.pid; do [ -d /proc/self ] && read -r p r <"$g" && [ ! -d "/proc/$p" ] && '
        'rm -f "$g"; done 2>/dev/null; f=$1; shift; { echo "$$ $(t)" >"$f"; } 2>/dev/null; exec "$@"')

# $1: the pid file, $2: the grace in seconds. Prints one word: ended, killed, gone or none (ANSWERS).
STOP = r'''f=$1; g=$2
st() { read -r s <"/proc/$1/stat" 2>/dev/null || return 1; s=${s##*) }; set -- $s; [ "$1" != Z ] && echo "${20}"; }
alive() { if [ -d /proc/self ]; then st "$1" >/dev/null; else kill -0 "$1" 2>/dev/null; fi; }
nap() { sleep 0.2 2>/dev/null || sleep 1; }
i=0; while [ ! -s "$f" ] && [ $i -lt 10 ]; do nap; i=$((i+1)); done
[ -s "$f" ] || { echo none; exit 0; }
read -r p t <"$f"; rm -f "$f"
if [ -d /proc/self ]; then now=$(st "$p") || now=; else now=; alive "$p" && now=$t; fi
if [ -z "$now" ] || { [ -n "$t" ] && [ "$now" != "$t" ]; }; then echo gone; exit 0; fi
L=" $p "
if [ -d /proc/self ]; then
  c=1
  while [ $c = 1 ]; do
    c=0
    for d in /proc/[0-9]*; do
      q=${d#/proc/}
      case "$L" in *" $q "*) continue;; esac
      read -r s <"$d/stat" 2>/dev/null || continue
      s=${s##*) }; set -- $s
      case "$L" in *" $2 "*) L="$L$q "; c=1; continue;; esac
      [ "$3" = "$p" ] && { L="$L$q "; c=1; }
    done
  done
fi
kill -TERM $L 2>/dev/null
i=0
while [ $i -lt $((g * 5)) ]; do
  a=; for q in $L; do alive "$q" && a="$a $q"; done
  [ -z "$a" ] && break
  nap; i=$((i+1))
done
a=; for q in $L; do alive "$q" && a="$a $q"; done
if [ -n "$a" ]; then kill -KILL $a 2>/dev/null; echo killed; else echo ended; fi
'''

ANSWERS = {"ended": "ended", "killed": f"killed (still running {GRACE_S} s after SIGTERM)",
           "gone": "had ended", "none": "no pid record"}


def wrapped(command: List[str], index: int) -> List[str]:
    """``command`` run through :data:`WRAP` on node ``index``: its words follow the wrapper's, each one argument,
    untouched."""
    return ["sh", "-c", WRAP, "sh", pid_file(index), *command]


def stop_command(token: str, index: int, grace: int = GRACE_S) -> List[str]:
    """The command that ends the wrapped command of call ``token`` on node ``index`` (:data:`STOP`)."""
    return ["sh", "-c", STOP, "sh", pid_file(index, token), str(grace)]
