"""Whether a JSON answer is node 0's live picture (``/status.json``, schema :data:`SCHEMA`), checked once where
it is read.

Every reader of the picture (``nodeweave-entrypoint --node live`` inside node 0, ``nodeweave top``, the
dashboard's poll) runs :func:`live_problem` on what it got before anything draws it: another program on the
metrics port, a proxy's answer or a damaged document is then one line naming what is wrong ("ranks is an
object, not a list"), never an ``AttributeError`` deep in a drawing function or the dashboard's server.
Stdlib only: the entrypoint uses it too.
"""

SCHEMA = "nodeweave.live/1"
SERVER_NAME = "nodeweave-metrics"  # node 0's metrics server's Server header: a reader tells its port from another's
GOODPUT_BUCKETS = ("training", "startup", "recovery", "redone", "stalled", "idle")  # goodput.py's BUCKETS

_NUMBER = (int, float)
_SCALAR = (str, int, float)
_NONE = type(None)

# the fields the drawings read, each with the types it may hold (None: absent or null is always fine)
_TOP = {"now": _NUMBER, "job": str, "book": dict, "nodes": list, "ranks": list, "verdicts": dict, "gpus": list,
        "gpu_source": str, "node_gpus": list, "step": list, "steps_per_s": _NUMBER, "step_note": str, "goodput": dict,
        "timeline": dict, "phase": str, "waiting": dict}
# while node 0 gathers: whom it waits for (``Hub.waiting``; top's and the dashboard's header say it)
_WAITING = {"expected": int, "checked_in": int, "not_in": list, "deadline_in_s": _NUMBER}
_BOOK = {"generation": int, "restarts": int}
_NODE = {"node": _SCALAR, "host": str, "state": str, "role": str, "heartbeat_age_s": _NUMBER}
_RANK = {"node": _SCALAR, "rank": _SCALAR, "host": str, "seq": int, "collectives": int, "state": str,
         "collectives_per_s": _NUMBER,
         "inside_s": _NUMBER, "outside_s": _NUMBER, "straggler_ratio": _NUMBER}
_GPU = {"index": _SCALAR, "util_ratio": _NUMBER, "mem_used_bytes": _NUMBER, "mem_total_bytes": _NUMBER,
        "power_watts": _NUMBER, "xid_errors": int}
_NODE_GPUS = {"node": _SCALAR, "source": str, "gpus": list}
_VERDICTS = {"stall": dict, "stragglers": list}
_STALL = {"for_s": _NUMBER}
_GOODPUT = {"wall_s": _NUMBER, "buckets": dict, "productive": _NUMBER}
# the newest step line, as ``live.Live.step`` holds it and top/the dashboard read it: step[0] its logger, step[1]
# its number (walk7 B14: a check that wanted two values refused every job whose step lines were read)
STEP = (("logger", str), ("number", int), ("time", _NUMBER))

_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a whole number",
          float: "a number", _NONE: "null"}


def kind(value) -> str:
    """What a JSON value is, in words ("a list", "a string")."""
    return _KINDS.get(type(value), type(value).__name__)


def _wanted(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(dict.fromkeys("a number" if t is float else _KINDS[t] for t in types))


def _fields(where: str, document: dict, fields: dict):
    """The first field of ``document`` whose value is of none of its types, in one phrase; None when all fit."""
    for name, types in fields.items():
        value = document.get(name)
        is_bool = isinstance(value, bool)  # JSON's true is no number of anything
        if value is not None and (is_bool or not isinstance(value, types)):
            return f"{where}{name} is {kind(value)}, not {_wanted(types)}"
    return None


def _each(where: str, items: list, fields: dict):
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return f"{where}[{i}] is {kind(item)}, not an object"
        problem = _fields(f"{where}[{i}].", item, fields)
        if problem:
            return problem
    return None


# what node 0 writes in every picture (collect.status): an answer without one of them is no picture of a job, even
# one with the right schema (walk10 B19: `{"schema": "nodeweave.live/1"}` was drawn as a healthy, moving job)
REQUIRED = {"now": _NUMBER, "job": (str, _NONE), "nodes": list, "ranks": list}


def _lacks(answer):
    missing = [name for name in REQUIRED if name not in answer]
    if missing:
        return f"an object with schema {SCHEMA} but no {', '.join(missing)} (node 0 writes every one)"
    if answer.get("now") is None or answer.get("nodes") is None or answer.get("ranks") is None:
        name = next(n for n in ("now", "nodes", "ranks") if answer.get(n) is None)
        return f"{name} is null, not {_wanted(REQUIRED[name])}"
    return None


def _non_finite(where, value):
    """A leaf number that is NaN or infinite, in one phrase: no JSON holds one (json.loads
    takes them, and `-o json` would print them back, which `jq` refuses; walk10 B19)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"{where.rstrip('.') or 'a value'} is {value!r}, not a finite number"
    return None


def _first_leaf(where, value, judge):
    """``judge(where, leaf)`` on every leaf of ``value`` (dict keys as ``a.b.``, list items as ``a[3].``), in
    order: its first phrase, or None. The one walk of the picture its number checks share."""
    if isinstance(value, dict):
        items = ((f"{where}{k}.", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where.rstrip('.')}[{i}].", v) for i, v in enumerate(value))
    else:
        return judge(where, value)
    return next(filter(None, (_first_leaf(w, v, judge) for w, v in items)), None)


# The one bound of every number in a picture (walk14b B9): past it a drawing's arithmetic fails (``10**400 / 2**30``
# is an OverflowError, a bar ``round(40 * 1e308 / wall)`` wide an OverflowError or a string of 10**18 blocks); no
# field node 0 writes comes near it (bytes of GPU memory ~1e12, epoch seconds ~2e9).
LARGEST = 2 ** 53
# The lowest (and highest) value of each number the drawings read, by its place (a list's index as ``[]``): a count,
# an age, a rate or a duration is never below 0, a fraction never above 1. Every field of the type tables above
# that holds a number has its row here (tests/test_walk14_fix16f.py reads both).
LIMITS = {
    "now": (0, None), "steps_per_s": (0, None),
    "book.generation": (0, None), "book.restarts": (0, None),
    "waiting.expected": (0, None), "waiting.checked_in": (0, None), "waiting.deadline_in_s": (None, None),
    "nodes[].node": (0, None), "nodes[].heartbeat_age_s": (0, None),
    "ranks[].node": (0, None), "ranks[].rank": (0, None), "ranks[].seq": (0, None),
    "ranks[].collectives": (0, None), "ranks[].collectives_per_s": (0, None), "ranks[].inside_s": (0, None),
    "ranks[].outside_s": (0, None), "ranks[].straggler_ratio": (0, None),
    "gpus[].index": (0, None), "gpus[].util_ratio": (0, None), "gpus[].mem_used_bytes": (0, None),
    "gpus[].mem_total_bytes": (0, None), "gpus[].power_watts": (0, None), "gpus[].xid_errors": (0, None),
    "node_gpus[].node": (0, None),
    "verdicts.stall.for_s": (0, None),
    "step[]": (None, None),
    "goodput.wall_s": (0, None), "goodput.productive": (0, 1),
    **{f"goodput.buckets.{name}": (0, None) for name in GOODPUT_BUCKETS},
}
LIMITS.update({key.replace("gpus[]", "node_gpus[].gpus[]"): limit for key, limit in LIMITS.items()
               if key.startswith("gpus[].")})


def _place(where):
    """``ranks[3].seq`` as its row of :data:`LIMITS`: ``ranks[].seq``."""
    import re

    return re.sub(r"\[\d+\]", "[]", where)


def _out_of_range(where, value):
    """A leaf number of the picture outside :data:`LARGEST` or its field's row of :data:`LIMITS`, in one phrase
    naming the field, its value and what it may be; None when every number fits (walk14b B9: goodput 1e308 ended
    top in an OverflowError, wall_s -5 was drawn as 'of -5s', productive 1e308 as 'goodput inf%')."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        name = where.rstrip(".") or "a value"
        if abs(value) > LARGEST:
            said = repr(value) if len(repr(value)) <= 24 else f"a number of {len(str(abs(value)))} digits"
            return f"{name} is {said}, beyond any value node 0 writes (at most 2**53 either way)"
        low, high = LIMITS.get(_place(name), (None, None))
        if (low is not None and value < low) or (high is not None and value > high):
            accepted = f"from {low} to {high}" if high is not None else f"{low} or more"
            return f"{name} is {value!r}, not {accepted}"
        return None
    return None


def _goodput_sum(goodput):
    """The goodput's buckets share its wall time (``goodput.account``: each rounded to 0.01 s): none, nor all of
    them together, may exceed it (walk14b B9: a bucket of 1e308 over a wall of 346 s)."""
    buckets, wall = goodput.get("buckets") or {}, goodput.get("wall_s")
    if not buckets or wall is None:
        return None
    slack = 0.01 * len(buckets) + 1e-6 * wall
    for name in GOODPUT_BUCKETS:
        if buckets.get(name, 0) > wall + 0.01:
            return f"goodput.buckets.{name} is {buckets[name]!r}, more than goodput.wall_s ({wall!r}) it is part of"
    total = sum(buckets.get(name, 0) for name in GOODPUT_BUCKETS)
    if total > wall + slack:
        return f"goodput.buckets add up to {total:g} s, more than goodput.wall_s ({wall!r}) they share"
    return None


def _step(step):
    """Why ``step`` is not (logger, number, time), in one phrase; None when it is, or absent."""
    if step is None:
        return None
    if len(step) != len(STEP):
        return f"step holds {len(step)} value(s), not {len(STEP)} (its logger, number and time)"
    return _fields("step.", {name: value for (name, _), value in zip(STEP, step)}, dict(STEP))


def not_http_problem(err) -> str:
    """Why a port gave no HTTP answer at all (``http.client.HTTPException``: a status line that is not HTTP's), in
    one phrase naming what answers there: node 0's check-in exchange greets every connection with a JSON
    challenge, which a URL pointed at the exchange port (master port + 1, on ``--explain``'s exchange line) gets."""
    said = str(getattr(err, "line", "") or err).strip()
    if said.startswith("{") and '"challenge"' in said:
        import json

        try:
            job = json.loads(said).get("job")
        except (ValueError, AttributeError):
            job = None
        return (f"node 0's check-in exchange answers there{f' (job {job})' if job else ''}, not its metrics port: "
                "/status.json is on metrics.port (9464 unless set; NODEWEAVE_METRICS_PORT on the node)")
    return f"no HTTP answer ({type(err).__name__}: {said[:80] or 'nothing'}): another program listens there"


def live_problem(answer):
    """Why ``answer`` is not node 0's live picture, in one phrase; None when every field the drawings read holds
    what they expect."""
    if not isinstance(answer, dict):
        return f"{kind(answer)}, not an object with schema {SCHEMA}"
    if answer.get("schema") != SCHEMA:
        got = f"schema {answer['schema']!r}" if "schema" in answer else "no schema"
        return f"an object with {got}, not {SCHEMA}"
    goodput = answer.get("goodput") or {}
    checks = (
        lambda: _fields("", answer, _TOP),
        lambda: _fields("book.", answer.get("book") or {}, _BOOK),
        lambda: _fields("waiting.", answer.get("waiting") or {}, _WAITING),
        lambda: _each("nodes", answer.get("nodes") or [], _NODE),
        lambda: _each("ranks", answer.get("ranks") or [], _RANK),
        lambda: _each("gpus", answer.get("gpus") or [], _GPU),
        lambda: _each("node_gpus", answer.get("node_gpus") or [], _NODE_GPUS),
        lambda: next(filter(None, (_each(f"node_gpus[{i}].gpus", e.get("gpus") or [], _GPU)
                                   for i, e in enumerate(answer.get("node_gpus") or []))), None),
        lambda: _fields("verdicts.", answer.get("verdicts") or {}, _VERDICTS),
        lambda: _fields("verdicts.stall.", (answer.get("verdicts") or {}).get("stall") or {}, _STALL),
        lambda: _step(answer.get("step")),
        lambda: _fields("goodput.", goodput, _GOODPUT),
        lambda: None if not goodput else _fields("goodput.buckets.", goodput.get("buckets") or {},
                                                 dict.fromkeys(GOODPUT_BUCKETS, _NUMBER)),
        lambda: None if not goodput or all(name in (goodput.get("buckets") or {}) for name in GOODPUT_BUCKETS) else
        f"goodput.buckets lacks {', '.join(n for n in GOODPUT_BUCKETS if n not in (goodput.get('buckets') or {}))}",
        lambda: _lacks(answer),  # after the types: a field of the wrong type is named as such first
        lambda: _first_leaf("", answer, _non_finite),
        lambda: _first_leaf("", answer, _out_of_range),
        lambda: _goodput_sum(goodput),
    )
    return next(filter(None, (check() for check in checks)), None)
