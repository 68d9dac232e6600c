"""What an entrypoint's hints tell a person to run: the words that work where the entrypoint was started.

A node is started by a spec's cluster (``nodeweave up``/``run``, where ``nodeweave status`` and ``nodeweave stop``
reach it) or by hand (``nodeweave-entrypoint ... -- train.py``, no spec anywhere, where those verbs answer "no
nodeweave.yaml"). The entrypoint cannot tell which (a hand start may give ``--run-id`` too), so every hint it prints
names both, through these functions: no other module spells a spec-level verb in a line it prints (walk13b B3,
B8: a second start was told "`nodeweave stop` ends it", node 0's SIGTERM "Ctrl-C node 0 or `nodeweave stop`", and
both verbs refused where the nodes had been started by hand). Stdlib only.
"""

# what `nodeweave status FLAG` shows (a spec's cluster), and the entrypoint's own question that shows the same
# on a node started by hand: node 0's check-in answer (every fingerprint, the verdict, the recovery book, the ranks)
STATUS_BY_HAND = {
    "": "--status",
    "--fingerprints": "--status",
    "--ranks": "--status",
    "--stacks": "--status --stacks",
}


def status_hint(flag=""):
    """```nodeweave status FLAG``` for a spec's cluster, and what shows the same on nodes started by hand."""
    spec = "`nodeweave status" + (" " + flag if flag else "") + "`"
    return (f"{spec} (a spec's cluster) or `nodeweave-entrypoint {STATUS_BY_HAND[flag]}` with the job's settings "
            "(nodes started by hand)")


def stop_run_hint(run_id, pid):
    """What stops the live run ``run_id`` (process ``pid``) on this node, wherever it was started."""
    return (f"`nodeweave stop` (a spec's cluster), or `nodeweave-entrypoint --node stop --run {run_id}` or "
            f"`kill -INT {pid}` (a node started by hand)")


def end_job_hint():
    """What ends a job now whose node 0 is gone and whose other nodes wait for it (under recovery)."""
    return ("`nodeweave stop` (a spec's cluster), or Ctrl-C (`kill -INT PID`) each other node's entrypoint "
            "(nodes started by hand)")


def stop_process_hint(pids):
    """The signals that stop a job's entrypoint process ``pids`` (a comma list) by hand, and what each does under
    recovery: every stop hint names both, so no one is offered only the eviction (walk17b B8: ``kill -TERM``
    alone left the other nodes waiting wait_timeout for node 0)."""
    return (f"`kill -INT {pids}` (as Ctrl-C: on node 0 it ends the job on every node, under recovery too) or "
            f"`kill -TERM {pids}` (under recovery node 0's SIGTERM is read as an eviction the others wait for, up "
            "to wait_timeout, and any other node's ends its place: the job goes on without it when a spare or the "
            "minimum allows, else it ends)")


def asked_stop():
    """How a stop asked for through a run's folder mark came (``runstate.STOP_ASKED``): `nodeweave stop` runs
    ``--node stop`` on each node, and a person may run it there by hand; both leave the same mark."""
    return "`nodeweave stop` or `nodeweave-entrypoint --node stop`"
