"""Node 0's live picture as collect.status really writes it, for tests that serve or read one (no hand-made shape:
the readers check the shape, walk6 W51/W53). The state is node 0's own :class:`Live`, fed a step line through the
launcher-output seam it listens on, so a field the writer changes is a field the readers' check sees changed
(walk7 B14: a hand-made stand-in held a step of another shape than the real one, and the check refused the real)."""

import json
import tempfile
import time

STEP_LINE = b"step: 21  loss:  2.3456  memory: 1.2GiB\n"  # TorchTitan's, the first format observability.md names


class _Settings:
    def __init__(self, folder):
        self.env = {"TMPDIR": folder}

    def get(self, key, default=None):
        return {"metrics": False}.get(key, default)


def live(folder=None, lines=(STEP_LINE,)):
    """Node 0's Live with one generation under way (as watching() makes it, without the recorder thread and the
    server) that has read ``lines`` from the launcher's output."""
    from nodeweave.entrypoint.metrics.live import Live

    state = Live(_Settings(folder or tempfile.mkdtemp(prefix="nodeweave-live-")), lambda line: None)
    state.generation = {"generation": 0, "began": time.time(), "first": None, "last": None, "ended": None,
                        "fault": None, "stalls": [], "steps": []}
    state.timeline["generations"].append(state.generation)
    state.timeline["job"] = "team"
    for line in lines:
        state.output(1, line)
    return state


def document(now: float = None, lines=(STEP_LINE,)) -> dict:
    """The /status.json node 0 serves, through JSON as it travels."""
    from nodeweave.entrypoint.metrics import collect

    return json.loads(json.dumps(collect.status(live(lines=lines), now=now)))
