"""The four rows of the ninth walk fixed only in part (issue 43), each as a class; every test fails on the code
before its fix:

- B9: a stop signal this node was sent (Ctrl-C) diverts the launcher's own tracebacks of it to a file the node's
  one stop line names (exit 130), on every watch;
- A3: every relay of a failed launcher's output names the worker's own error line first, picked by one function
  (``symptoms.cause``), not torchrun's ``ChildFailedError`` frames;
- A29: pip's and uv's own index variables exported in this shell are named in the build plan with the way that
  works;
- A27: the real home folder ($HOME, the passwd entry's) is refused as a workspace wherever it is.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

# ---------------------------------------------------------------------------------------------------------- B9


def _wait_for(node, needle, limit=120.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if node.first(needle) is not None or node.proc.poll() is not None:
            return node.first(needle)
        time.sleep(0.2)
    return None


@pytest.mark.parametrize("nodes", [1, 2], ids=["one-node", "two-nodes"])
def test_b9_ctrl_c_on_node_0_is_one_line_and_no_launcher_traceback(tmp_path, nodes):
    """B9: Ctrl-C in node 0's terminal showed torchrun's and the script's tracebacks (`SignalException: Process N
    got signal: 2`, `KeyboardInterrupt`) and no nodeweave line; the node now says in one line it stopped on
    SIGINT (exit 130), the tracebacks kept in the file it names, and a peer hears a stop without any of them."""
    pytest.importorskip("torch")
    from stall_harness import start, stop

    started = start(tmp_path, "torchrun", ["--steps", "100000", "--interval", "0.2"], nodes=nodes)
    try:
        assert _wait_for(started[0], "NODEWEAVE-STEP rank=0") is not None, started[0].text()
        time.sleep(1.0)
        started[0].proc.send_signal(signal.SIGINT)
        codes = [node.wait(90) for node in started]
    finally:
        stop(started)
    err = started[0].text()
    assert codes[0] == 130, err
    said = [line for line in err.splitlines() if "stopped on SIGINT (Ctrl-C)" in line]
    assert len(said) == 1 and "(exit 130)" in said[0], err
    console = err + "\n" + started[0].text("out")
    assert "SignalException" not in console and "Traceback" not in console, console
    assert "KeyboardInterrupt" not in console, console
    kept = Path(said[0].rsplit(": ", 1)[1])
    assert "SignalException" in kept.read_text(), kept.read_text()
    if nodes == 2:  # node 1's ranks may fail on their own first (gloo: the peer closed), which is theirs to show
        other = started[1].text() + "\n" + started[1].text("out")
        assert codes[1] == 5, other
        assert "node 0 (" in other and ") was stopped (SIGINT, Ctrl-C): " in other and " failed: " not in other, other
        assert "SignalException" not in other and "KeyboardInterrupt" not in other, other
