"""What the stall exchange, the fault seam and the stall watch use of the watch they ride on, declared.

``exchange.LinkStall`` and ``exchange.HubStall`` are mixed into the heartbeat's
watches (``checkin/heartbeat.py``), ``fault.FaultSeam`` into node 0's watch and
into ``local.LocalWatch``; they call back into that watch. Those names are
declared here, once, with what each holds, so a mixin uses only names it (or a
base) defines: ``checkin.heartbeat.Watch`` derives from :class:`WatchSurface`
and supplies them, and tests/test_recovery_book.py fails on a mixin that uses
a name nothing declares. :class:`HubReading` is the part of node 0's watch an
observer reads (``metrics/``): the same test fails on ``metrics/`` reading any
other name off a watch. No imports: the start-up path pays nothing for it.
"""


class WatchSurface:
    """Every watch: its log, its clock, the rank watch riding on it, and the failure that stopped this node."""

    log = None       # callable(line): the node's log
    clock = None     # callable() -> monotonic seconds (a test's own clock)
    stall = None     # ``watcher.StallWatch`` once the ranks are watched (``use_stall``), else None
    failure = None   # (label, report) of what stopped this node's launcher, or None

    def use_stall(self, stall):
        """Watch the ranks with ``stall`` (``stall.setup.attach``, once the launch is planned)."""
        self.stall = stall

    def note(self, line):
        """One line in this node's log from the supervisor (a clean end's known launcher noise, walk12c C1),
        asked of the watch rather than its ``log`` read off it."""
        self.log(line)

    def say_launcher_failed(self, how):
        """This node's own line for its launcher's failure, naming the worker's error (walk9 A3), unless the watch
        itself stopped the launcher (a peer's failure, a stall), whose line is said already."""
        if self.failure is None:
            self.log(f"this node's launcher failed: {how}")

    def _stop_for(self, label, report, code):
        """Stop this node's launcher for ``label``'s failure (the heartbeat's ``Watch._stop_for``)."""
        raise NotImplementedError


class LinkSurface(WatchSurface):
    """A worker's watch: it sends to node 0."""

    def _send(self, message):
        """One message to node 0 (the heartbeat's ``LinkWatch._send``)."""
        raise NotImplementedError


class HubReading:
    """What an observer of node 0's watch reads (``metrics/``: the live picture, the goodput timeline), declared:
    these names and no other (tests/test_stall_watch_interfaces.py reads ``metrics/`` for it). Its failure and
    its end are asked of the watch (:meth:`fault`, :meth:`over`), never read off its thread, events or fields."""

    clock = None      # callable() -> monotonic seconds (a node's heartbeat age is measured on it)
    hub = None        # ``checkin.exchange.Hub``: its ``peers`` (each node's fingerprint, beat, state) and ``own_fp``
    stall = None      # ``watcher.StallWatch`` once the ranks are watched, else None
    node_gpus = None  # node rank -> (source, [GPU readings]) the nodes' beats carried, or None

    def fault(self):
        """(when, label) of the failure that stopped this generation: epoch seconds when node 0 relayed it (or
        its own launcher failed first) and the node it named; None while none did."""
        raise NotImplementedError

    def over(self):
        """True once the generation ended without a failure: node 0's own launcher finished and the heartbeat
        stopped."""
        raise NotImplementedError


READABLE = tuple(name for name in vars(HubReading) if not name.startswith("_"))  # what an observer may read


class HubSurface(HubReading, WatchSurface):
    """Node 0's watch: the hub of every node's connection, and the heartbeat's own reading of it."""

    hub = None   # ``checkin.exchange.Hub``: its ``peers`` and their switchboard
    news = None  # ``news.News``: the failure news, where a stall or a lasting straggler goes as evidence

    def _broadcast(self, message):
        """``message`` to every node still running (the heartbeat's ``HubWatch._broadcast``)."""
        raise NotImplementedError

    def _late(self, peer):
        """A node checking in after the start (``HubWatch._late``)."""
        raise NotImplementedError

    def _read(self, peer):
        """Read what ``peer`` sent (``HubWatch._read``)."""
        raise NotImplementedError
