"""torch's flight recorder, as the stall report tells it: each rank's last collective entered and completed.

A rank's dump (``rankhook/nodeweave_flight.py``) holds torch's JSON per
recorder (NCCL's, and the generic one gloo uses): ``entries`` of every collective its process groups
issued, Python's and C++'s alike (DDP's reducer), each with
``collective_seq_id``, ``profiling_name`` (``nccl:all_reduce``), sizes, dtypes
and whether it finished (``retired``, or ``state`` ``completed``). Each node
keeps the whole dumps in its own run folder (``$TMPDIR/nodeweave/runs/<run id>/flight/rank-<N>.json``), or, without
a run id, in its ranks folder (``rank-<N>.flight.json``): :func:`kept_at` says which; the report carries one line
per class of ranks saying the same.
"""

import json
import os

FOLDER = "flight"


def _entry(e):
    """'seq 13 gloo:all_reduce [[1000]] Float' (and the group, when not the default one): torch's own sequence id,
    labelled so, never '#13', which in the same report is the stall watch's count of the rank's Python calls
    (init_process_group #1): one number per meaning (walk5 W45)."""
    group = e.get("process_group") or ["0", "default_pg"]
    where = "" if str(group[0]) == "0" else f" in group {group[1] or group[0]}"
    sizes = e.get("input_sizes")
    dtypes = ",".join(sorted(set(e.get("input_dtypes") or [])))
    seq = e.get("p2p_seq_id") if e.get("is_p2p") else e.get("collective_seq_id")
    text = f"seq {seq} {e.get('profiling_name') or '?'} {json.dumps(sizes, separators=(',', ':'))} {dtypes}"
    return text.rstrip() + where


def _finished(e):
    return bool(e.get("retired")) or e.get("state") == "completed"


def summary(text):
    """'entered seq 13 gloo:all_reduce [[1000]] Float (not completed); completed seq 12 ...' of one dump, or why
    none."""
    try:
        recorders = json.loads(text)["recorders"].values()
        entries = [e for r in recorders for e in (r.get("entries") or [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return "flight recorder: unreadable dump"
    if not entries:
        return "flight recorder: no collective recorded"
    entries = sorted(entries, key=lambda e: (e.get("time_created_ns") or 0, e.get("record_id") or 0))
    last = entries[-1]
    done = next((e for e in reversed(entries) if _finished(e)), None)
    entered = f"entered {_entry(last)}" + ("" if _finished(last) else f" (not completed, {last.get('state')})")
    return f"{entered}; completed {_entry(done) if done else 'none'}"


def waits_in(text):
    """The collective one dump says its rank entered and has not completed, as Python names it (``all_reduce`` of
    ``gloo:all_reduce``), or None (every entry completed, no entry, an unreadable dump)."""
    try:
        recorders = json.loads(text)["recorders"].values()
        entries = [e for r in recorders for e in (r.get("entries") or [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None
    if not entries:
        return None
    last = sorted(entries, key=lambda e: (e.get("time_created_ns") or 0, e.get("record_id") or 0))[-1]  # summary's
    name = str(last.get("profiling_name") or "")
    return None if _finished(last) or not name else name.rsplit(":", 1)[-1]


MAX_CLASSES = 16  # lines of a report every node is sent: the rest is counted, the dumps keep every rank
MAX_SPANS = 8     # runs of ranks one line names


def spans(ranks):
    """'0-511, 513-1023' for sorted ranks: a class of 65,536 ranks is a few characters, not 400 KB; past
    :data:`MAX_SPANS` runs, '... (N ranks)'."""
    runs = []
    for rank in ranks:
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:MAX_SPANS])
    return text + (f", ... ({len(ranks)} ranks)" if len(runs) > MAX_SPANS else "")


def lines(described, indent="    ", kept="flight/rank-<N>.json"):
    """One line per class of ranks whose recorders say the same: 'ranks 0-2: entered seq 13 ...'; the
    :data:`MAX_CLASSES` largest classes, then a count of the rest (every node is sent these lines)."""
    said = {}
    for item in described:
        if item.get("flight"):
            said.setdefault(item["flight"], []).append(item["rank"])
    out = []
    classes = sorted(said.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
    for text, ranks in classes[:MAX_CLASSES]:
        ranks = sorted(ranks)
        out.append(f"{indent}rank{'s' if len(ranks) > 1 else ''} {spans(ranks)}: {text}")
    if len(classes) > MAX_CLASSES:
        rest = sum(len(ranks) for _, ranks in classes[MAX_CLASSES:])
        out.append(f"{indent}... and {len(classes) - MAX_CLASSES} more class(es) of {rest} rank(s) "
                   f"(each rank's dump: {kept})")
    return out


def kept_at(run_dir, ranks_folder):
    """Where each node keeps its ranks' whole dumps, as every report says it: the path pattern of every node, with
    node 0's own (the report's writer) beside it. A job started without a run id has no run folder: its dumps stay
    in each node's ranks folder (walk10 B2: the report sent the user to a run folder that did not exist)."""
    if run_dir:
        return (f"{FOLDER}/rank-<N>.json in each node's $TMPDIR/nodeweave/runs/{os.path.basename(run_dir)}/ "
                f"(node 0's: {os.path.join(run_dir, FOLDER)})")
    if not ranks_folder:
        return "rank-<N>.flight.json in each node's ranks folder"
    job = os.path.basename(os.path.dirname(ranks_folder.rstrip("/")))
    return (f"rank-<N>.flight.json in each node's $TMPDIR/nodeweave/ranks/{job}/node-<i>/ (node 0's: "
            f"{ranks_folder}; no run folder: not started by `nodeweave run`)")


def keep(run_dir, dumps):
    """Write each rank's dump under ``<run folder>/flight/rank-<N>.json``; the folder, or None when not kept."""
    if not run_dir or not dumps:
        return None
    folder = os.path.join(run_dir, FOLDER)
    try:
        os.makedirs(folder, exist_ok=True)
        for rank, text in dumps.items():
            with open(os.path.join(folder, f"rank-{rank}.json"), "w") as f:
                f.write(text)
    except OSError:
        return None
    return folder
