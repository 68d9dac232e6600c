"""The stall watch where no heartbeat runs: a single-node job, the exchange switched off, the ``command``
launcher on one node. This node judges its own ranks, every :data:`TICK_S`.

It stands in for node 0's side of the heartbeat (``exchange.HubStall``) with
no peers: the report is printed and kept here only, and after
``stall_timeout`` this node's launcher is stopped and the entrypoint exits 7.
A job of several nodes whose exchange is off sees only its own ranks: when
all of them wait inside the same collective, unmoving, the rank that has not
entered it is on another node, and the report says so (``judge.find_wait``).
"""

import os
import threading
import time

from ..errors import EXIT_STALLED
from ..planning.contract import STALL_WARN_S
from .fault import FaultSeam
from .setup import attach

TICK_S = 2.0
GRACE_S = 10.0


class LocalWatch(FaultSeam):
    """What ``running.supervise.run_supervised`` drives (start, finish) and ``watcher.StallWatch`` asks of
    node 0's heartbeat (peer views, stacks, reports, stop), for one node alone."""

    def __init__(self, log, why, other_nodes, clock=time.monotonic):
        self.log, self.why, self.other_nodes, self.clock = log, why, other_nodes, clock
        self.stall = None
        self.stopping = threading.Event()
        self.failure = None
        self.stop_launcher = None
        self.thread = None

    def silent_since_verdict(self):
        """One node alone had no check-in verdict to be silent past (``heartbeat.LinkWatch``'s question)."""
        return None

    def launch_with(self, stop_launcher, stop_signalled=None):
        """The launcher a stall stops; the watch starts with it (one node alone beats to nobody before). One node
        alone relays no failure a stop could cause: ``stop_signalled`` is not needed."""
        self.start(stop_launcher)

    def start(self, stop_launcher):
        self.stop_launcher = stop_launcher
        self.thread = threading.Thread(target=self._run, name="nodeweave-stallwatch", daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.wait(TICK_S):
            if self.stall is None or self.failure is not None:
                continue
            try:
                self.stall.hub_tick(self)
            except Exception as err:  # noqa: BLE001 - training goes on whatever the watch hits
                self.log(f"warning: stall watch off: {err!r}")
                return

    def finish(self, code, how, tail, peer_gone=None, error=None, stopped=None, aside=None):
        """The launcher ended: 7 when this watch stopped it, else None (its own status stands). ``stopped``: the
        stop signal this node was sent, said in one line naming ``aside``, the launcher's output after it
        (walk10 B9)."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(2 * TICK_S)
        if stopped and code and self.failure is None:
            from ..running.supervise import said_stopped

            self.log(said_stopped(stopped, code, aside, how=how))
        return EXIT_STALLED if self.failure is not None else None

    # --- node 0's side of the heartbeat, with no other node -------------------------------------------
    def views(self, own):
        """This node's ranks, and the others' where a test stands in for them (:meth:`peer_views`)."""
        return list(own) + self.peer_views()

    def peer_views(self):
        return []

    def ask_stacks(self):
        return 0

    def answered_stacks(self, request, deadline):
        return {}

    def broadcast_report(self, lines):
        pass

    def stop_all(self, label, how, code, node=None, cause=None, gap=None):  # the culprit: recovery's, unused alone
        if self.failure is not None:
            return
        self.failure = (label, how)
        aside = self.stall.aside_path() if self.stall is not None and self.stop_launcher else None
        self.log(f"the job stalled at {label}: {how}; stopping this node's launcher (exit {code}: stalled)"
                 + (f"; its output from here on: {aside}" if aside else ""))
        if self.stop_launcher:
            self.stop_launcher(GRACE_S, aside=aside)


LAUNCHERS = ("torchrun", "deepspeed", "accelerate")
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "deepspeed.launcher.runner", "accelerate")


def starts_ranks(argv, environ):
    """Whether a ``command`` launcher's command would start watchable ranks: it is itself a launcher
    (``torchrun``, ``deepspeed``, ``accelerate``, ``python -m torch.distributed.run``), or RANK and
    LOCAL_RANK are set for it. Anything else keeps the plain exec (its signals first hand)."""
    if "RANK" in environ and "LOCAL_RANK" in environ:
        return True
    if os.path.basename(argv[0]) in LAUNCHERS:
        return True
    module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
    return os.path.basename(argv[0]).startswith("python") and module.startswith(LAUNCHER_MODULES)


def watch_alone(plan, settings, environ, log):
    """(watch, environ) for a start with no heartbeat; (None, environ) when the stall watch is off or a
    ``command`` launcher's command starts no ranks."""
    if plan.launch.launcher == "command" and not starts_ranks(plan.launch.argv, environ):
        return None, environ
    why = (plan.exchange or {}).get("why") or "single node"
    nodes = plan.topology.nnodes_max
    watch = LocalWatch(log, why, other_nodes=nodes > 1)
    environ = attach(watch, plan, settings, environ, log, alone=why if nodes > 1 else None)
    if watch.stall is None:
        return None, environ
    return watch, environ




def watched(plan, settings):
    """Whether the stall watch will supervise even a ``command`` launcher (here: a command that starts ranks)."""
    if not settings.get("stall_warn", STALL_WARN_S) or plan.launch.launcher != "command":
        return False
    return starts_ranks(plan.launch.argv, plan.environ(settings.env))
