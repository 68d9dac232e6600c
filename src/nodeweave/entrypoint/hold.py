"""Hold mode (``--mode hold``, ``NODEWEAVE_MODE=hold``): plan, print the plan, keep the container up.

A team that iterates keeps its containers or pods up and starts jobs in them
(``nodeweave run``, through each node's exec channel) instead of restarting
them for every change. A holding entrypoint makes the same plan a start would
(so a contradiction is refused at ``nodeweave up``, not at the first run),
prints it, records it in ``$TMPDIR/nodeweave/hold.json`` for ``nodeweave
status``, and then waits for a stop signal with nothing launched: no wait for
the master, no check for the training script (the workspace may be synced
after the container starts). A stop signal (SIGTERM from ``podman stop`` or
the kubelet, SIGINT, SIGHUP, SIGQUIT) ends the hold with exit 0: nothing ran
that could have failed. Runs started in the container are not its children;
``nodeweave stop`` or the container's own stop ends them.
"""

import os
import time

from .hostport import host_port
from .recovery.roles import plan_node
from .running.runstate import HOLD_SCHEMA, alive, proc_stat, read_record, state_root, still_in_progress, \
    write_json

STOPPING = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
NO_COMMAND = "SCRIPT"  # the plan's stand-in when the container was given no command


def hold(settings, say):
    """Plan, print, record, then block until a stop signal; returns the exit code (0)."""
    import signal

    stopping = {getattr(signal, name) for name in STOPPING}
    signal.pthread_sigmask(signal.SIG_BLOCK, stopping)  # a signal during planning waits for sigwait below
    path = os.path.join(state_root(settings.env), "hold.json")
    refuse_second_hold(path)  # before the plan: nothing is printed or recorded over the live hold's
    if not settings.command:
        settings.command = (NO_COMMAND,)
    plan = plan_node(settings)  # refuses what a start would refuse, here and now; a spare plans as a spare
    from .explain import render_text
    from .nodeinfo import plan_summary

    print(render_text(plan), end="", flush=True)
    summary = plan_summary(plan, settings.command)
    own = {"pid": os.getpid(), "starttime": proc_stat(os.getpid())[3]}
    write_json(path, dict(own, schema=HOLD_SCHEMA, started=time.time(), command=list(settings.command), plan=summary))
    for warning in plan.warnings:
        say(f"warning: {warning}")
    master = host_port(plan.topology.master_addr.value, plan.topology.master_port.value)
    say(f"holding: {holding_as(plan, settings)}, master {master}, plan {summary['hash']}; nothing launched "
        "(`nodeweave run -- SCRIPT` starts a job here; a stop signal ends the hold)")
    received = signal.sigwait(stopping)
    record = read_record(path)
    if record and (record.get("pid"), record.get("starttime")) == (own["pid"], own["starttime"]):
        try:  # only this hold's own record: one another process wrote since is not this hold's to remove
            os.unlink(path)
        except OSError:
            pass
    say(f"hold ended by {signal.Signals(received).name}")
    return 0


def refuse_second_hold(path):
    """One hold per node (per ``$TMPDIR``) at a time, as one run is (``runstate.refuse_second_run``): a second
    hold would write its record over the live one's and remove it when it ends, and ``nodeweave status`` would
    then read a node that holds as one that does not (walk9 B29). A record whose process has ended is no hold."""
    record = read_record(path)
    if record and alive(record.get("pid", -1), record.get("starttime")):
        raise still_in_progress("a hold", record, f", recorded in {path}: one hold per node; stop it first (a stop "
                                f"signal to pid {record.get('pid')}, or its container's stop), or use it: "
                                "`nodeweave run -- SCRIPT` starts a job in it")


def holding_as(plan, settings):
    """``node 1 of 2``, or under recovery with spares what the container is: a training node or a spare."""
    t, role = plan.topology, plan.role or {}
    spares = settings.get("spares", 0) if settings.get("recovery") else 0
    if not spares:
        return f"node {t.node_rank.value} of {t.nnodes.value}"
    training = int(t.nnodes.value) - spares
    if role.get("kind") == "training node":
        return f"node {role['rank']} of {training} training node(s) (+{spares} spare(s))"
    kind = {"spare": "a spare", "left out": "a node left out", "out for good": "a node left out for good"}
    return f"as {kind.get(role.get('kind'), role.get('kind'))}: {role.get('why') or f'container {t.node_rank.value}'}"
