"""The real ``nodeweave-entrypoint``, except that on a node with ``NODEWEAVE_TEST_STACKS_HOLD_S`` set, gathering
its ranks' stacks (``StallWatch.stacks``) takes that many seconds longer.

A stopped rank alone gives no slow gather: it is not signalled (it could not answer), so a worker gathers in
~0.2 s, and a rank that does not answer costs at most ~4 s; the heartbeat counts a node lost after
``heartbeat.LOST_S`` (10 s) of silence. Holding the gather past that lets a test tell whether a worker's answer
to node 0's request for stacks holds up its heartbeat (it must not: the node would be counted lost, not stalled).
"""

import os
import sys
import time

from nodeweave.entrypoint.__main__ import main
from nodeweave.entrypoint.stall.watcher import StallWatch

HOLD_VARIABLE = "NODEWEAVE_TEST_STACKS_HOLD_S"


def held(gather, hold_s):
    """``gather``, then ``hold_s`` seconds more before its stacks are handed back."""
    def stacks(self, view=None):
        described = gather(self, view)
        time.sleep(hold_s)
        return described
    return stacks


if __name__ == "__main__":
    hold = float(os.environ.get(HOLD_VARIABLE) or 0)
    if hold:
        StallWatch.stacks = held(StallWatch.stacks, hold)
    sys.exit(main())
