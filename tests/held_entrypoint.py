"""The real ``nodeweave-entrypoint``, except that on a node with these variables set a step takes longer:

- ``NODEWEAVE_TEST_STACKS_HOLD_S``: gathering its ranks' stacks (``StallWatch.stacks``) takes that many seconds
  longer. A stopped rank alone gives no slow gather: it is not signalled (it could not answer), so a worker
  gathers in ~0.2 s, and a rank that does not answer costs at most ~4 s; the heartbeat counts a node lost after
  ``heartbeat.LOST_S`` (10 s) of silence. Holding the gather past that tells whether a worker's answer to node
  0's request for stacks holds up its heartbeat.
- ``NODEWEAVE_TEST_PLAN_HOLD_S``: making a recovery generation's plan (``Generations._generation_plan``) takes
  that many seconds longer, as a DNS answer late under load makes it (the master's name is looked up again
  each generation). A node must beat meanwhile, or node 0 counts it lost before its launcher ever started.
- ``NODEWEAVE_TEST_WARM_AFTER_S``: a held launcher (``running/warm.py``) imports that many seconds after it is
  started instead of ``WARM_AFTER_S`` (10 s), so a test's short generations still find it imported.
"""

import os
import sys
import time

from nodeweave.entrypoint.__main__ import main
from nodeweave.entrypoint.recovery.generations import Generations
from nodeweave.entrypoint.running import warm
from nodeweave.entrypoint.stall.watcher import StallWatch

HOLD_VARIABLE = "NODEWEAVE_TEST_STACKS_HOLD_S"
PLAN_HOLD_VARIABLE = "NODEWEAVE_TEST_PLAN_HOLD_S"
WARM_AFTER_VARIABLE = "NODEWEAVE_TEST_WARM_AFTER_S"


def held(step, hold_s):
    """``step``, then ``hold_s`` seconds more before its result is handed back."""
    def slower(*args, **kwargs):
        result = step(*args, **kwargs)
        time.sleep(hold_s)
        return result
    return slower


if __name__ == "__main__":
    stacks_hold = float(os.environ.get(HOLD_VARIABLE) or 0)
    if stacks_hold:
        StallWatch.stacks = held(StallWatch.stacks, stacks_hold)
    plan_hold = float(os.environ.get(PLAN_HOLD_VARIABLE) or 0)
    if plan_hold:
        Generations._generation_plan = held(Generations._generation_plan, plan_hold)
    if os.environ.get(WARM_AFTER_VARIABLE):
        warm.WARM_AFTER_S = float(os.environ[WARM_AFTER_VARIABLE])
    sys.exit(main())
