"""What a node carries of the job's book into its next hello, and how node 0 reads it back.

Why a module of its own: the worker's loop (``node.py``) writes it and node 0's (``hub.py``) reads it when node 0
itself came back and must learn the job's state from the nodes still up; neither loop imports the other for it.
"""

CARRIED = ("generation", "restarts", "members", "spares", "left_out", "why", "steps", "best_step", "stale",
           "present", "history", "saves_before")
CARRIED_HISTORY = 20   # the newest faults of the history: a check-in stays small however long the job ran


def carried(book):
    """What a node's next hello carries of ``book``: its ``CARRIED`` keys, the newest faults of its history, and
    its lists of node ranks as runs of consecutive ranks (``verdict.runs``: a few pairs, not 4,096 numbers in
    each of 4,096 hellos). Node 0 reads it back with :func:`kept`."""
    from ..checkin.verdict import RANK_LISTS, runs

    out = {key: book[key] for key in CARRIED if key in book}
    out["history"] = (book.get("history") or [])[-CARRIED_HISTORY:]
    for key in RANK_LISTS:
        if isinstance(out.get(key), list):
            out[key + "_runs"] = runs(out.pop(key))
    return out


def kept(carried_json):
    """The JSON of a book a node carried (:func:`carried`), its rank lists whole again (a new dict: the book
    itself is only ever made by ``decide``); a book of a nodeweave that sent them whole is taken as it is."""
    from ..checkin.verdict import RANK_LISTS, unruns

    def whole(pairs):
        try:
            return unruns(pairs)
        except (TypeError, ValueError):
            return None  # not runs of ranks: the list is left out, as a book without it

    packed = {key + "_runs": key for key in RANK_LISTS}
    lists = {packed[k]: whole(v) for k, v in carried_json.items() if k in packed and isinstance(v, list)}
    plain = {k: v for k, v in carried_json.items() if k not in packed}
    return {**plain, **{k: v for k, v in lists.items() if v is not None}}
