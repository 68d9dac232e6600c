"""Where each node (or step) of the phase running now stands, for the line a Ctrl-C prints.

Why: a verb interrupted while it acted on several nodes at once (``sync`` sending, ``stop`` stopping, ``up`` and
``down``'s per-host steps) said which step it stopped at, not what each node got (walk12c C15: "node-0 synced,
node-1 not"). The executor (``cluster.execute``) names the phase's nodes as it begins it (:func:`begin`); whatever
does the work marks each one as it starts and ends (:func:`mark`); the interrupted line reads :func:`said`, grouped
by state and written with node ranges (``node-0 .. node-511``), so it stays one short line at thousands of nodes.
A name that is not of the running phase is ignored, so a helper that marks (``steps.execute_all``) may also run
outside a phase. Stdlib only, thread-safe (the work runs in pools).
"""

import threading
from typing import Dict, Iterable, List, Tuple

from nodeweave.entrypoint.nodelists import ranges

DONE = "done"
FAILED = "failed"
PARTIAL = "partial"  # begun and not ended: some of it may be there
WAITING = "nothing sent yet"  # reached, nothing changed there yet (sync's connect)
NOT_STARTED = "not started"
ORDER = (DONE, FAILED, PARTIAL, WAITING, NOT_STARTED)  # the line's order: what is there first
MOST_PARTS = 8  # a state's names past this many pieces (ranges that do not join): the first ones and a count

_lock = threading.Lock()
_states: Dict[str, str] = {}
_order: List[str] = []
_unit = ["node"]


def begin(names: Iterable[str], unit: str = "node") -> None:
    """A phase begins on ``names`` (its nodes, or its steps: ``unit``), each not started."""
    with _lock:
        _states.clear()
        _order[:] = []
        for name in names:
            if name not in _states:
                _order.append(name)
                _states[name] = NOT_STARTED
        _unit[0] = unit


def clear() -> None:
    begin(())


def mark(name: str, state: str) -> None:
    """``name``'s state now (one of :data:`ORDER`); a name of no running phase is left alone."""
    with _lock:
        if name in _states:
            _states[name] = state


def snapshot() -> List[Tuple[str, str]]:
    with _lock:
        return [(name, _states[name]) for name in _order]


def _names(names: List[str]) -> str:
    parts = ranges(names, sep="\0").split("\0")
    if len(parts) <= MOST_PARTS:
        return ", ".join(parts)
    return f"{', '.join(parts[:MOST_PARTS])}, ... ({len(names)} in all)"


def said() -> str:
    """"per node: done: node-0 .. node-3; partial: node-4; not started: node-5 .. node-7", or "" (no phase's
    nodes known, or only one name with nothing to tell apart)."""
    pairs = snapshot()
    if not pairs:
        return ""
    groups = {state: [name for name, at in pairs if at == state] for state in ORDER}
    groups.update({state: [name for name, at in pairs if at == state] for _, state in pairs if state not in groups})
    text = "; ".join(f"{state}: {_names(names)}" for state, names in groups.items() if names)
    return f"per {_unit[0]}, where each stood: {text}"
