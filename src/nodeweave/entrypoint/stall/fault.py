"""The seam where a lasting straggler becomes a fault for the recovery engine (docs/stalls.md).

Mixed into node 0's watch (``exchange.HubStall``, ``local.LocalWatch``); no imports but ``surface.py``'s, so
the entrypoint's start-up path pays nothing for it.
"""

from .surface import WatchSurface


class FaultSeam(WatchSurface):
    """Where a lasting straggler goes: the recovery engine passes node 0's watch ``on_straggler_fault`` as it
    makes it (``heartbeat.HubWatch(..., on_straggler_fault=)``), a callable taking the watch and the fault
    ``{node, host, ranks, gap, checks}`` (``node``: the culprit node's rank) and returning True when it takes
    it (swaps the node for a spare: it stops the launch with ``stop_all(..., cause=STRAGGLER, gap=)``, which
    puts the fault on the failure news). None, the fault is reported only."""

    on_straggler_fault = None

    def straggler_fault(self, fault):
        handler = self.on_straggler_fault
        if handler is None:
            return False
        try:
            return bool(handler(self, fault))
        except Exception as err:  # noqa: BLE001 - the watch goes on; the fault stays reported
            self.log(f"warning: the recovery engine's straggler fault handler failed: {err!r}")
            return False
