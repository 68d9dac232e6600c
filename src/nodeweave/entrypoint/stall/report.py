"""The lines every node prints for a stall or a straggler, and where they are kept.

One report per stall: the culprit (node, rank, host, pod/container, process
state and CPU use), the collective the others wait in, and every rank's stack
grouped into identical classes. A run ``nodeweave run`` started also keeps
them in ``$TMPDIR/nodeweave/runs/<id>/stalls.txt`` on each node.
"""

import os
import time

from ..hints import status_hint
from .ranks import STATES
from .stacks import render

FILE = "stalls.txt"
SHOWN = 16  # stack classes, slow nodes, named ranks a report lists: every node is sent it, so a few and a count


def _who(v):
    pod = f", pod/container {v['pod']}" if v.get("pod") and v.get("pod") != v.get("host") else ""
    return f"rank {v['rank']} (node {v.get('node')}, host {v.get('host')}{pod})"


def _doing(v):
    state = v.get("state")
    if state in ("gone", "Z", "X"):
        return f"exited after collective #{v['seq']}"
    cpu = v.get("cpu_rate")
    use = f", CPU {cpu * 100:.0f}%" if isinstance(cpu, (int, float)) else ""
    where = f"inside {v['name']} #{v['seq']}" if v.get("inside") else (
        f"outside collectives for {v['since_s']:.0f}s (last: {v['name'] or 'none'} #{v['seq']})")
    return f"{STATES.get(state, state)}{use}, {where}"


def stall_lines(finding, classes, warn_s, timeout_s, stop_code, recorded=(), alone=None, recovery=False,
                kept="flight/rank-<N>.json in each node's run folder"):
    culprits, waiting = finding["culprits"], finding["waiting"]
    names = ", ".join(_who(v) for v in culprits[:4]) + (f" and {len(culprits) - 4} more" if len(culprits) > 4 else "")
    moved = f"nothing has moved for {finding['for_s']:.0f}s (stall_warn {warn_s}s)"
    if culprits:
        head = (f"STALL: {len(waiting)} rank(s) wait in {finding['where']} that {names} "
                f"{'has' if len(culprits) == 1 else 'have'} not entered; {moved}")
    else:  # a node that sees only its own ranks, all waiting
        head = (f"STALL: all {len(waiting)} rank(s) of this node wait in {finding['where']}; {moved}; the rank "
                f"that has not entered it is on another node, which this node cannot see ({alone})")
    lines = [head]
    for v in culprits[:8]:
        lines.append(f"  culprit {_who(v)}: {_doing(v)}, pid {v.get('pid')}")
    lines.append(f"  stacks of {sum(len(c['ranks']) for c in classes)} rank(s), {len(classes)} class(es):")
    lines += render(classes[:SHOWN], indent="    ")  # every node is sent the report: a few classes, then a count
    if len(classes) > SHOWN:
        lines.append(f"    ... and {len(classes) - SHOWN} more class(es) of "
                     f"{sum(len(c['ranks']) for c in classes[SHOWN:])} rank(s) ({status_hint('--stacks')} shows all)")
    if recorded:
        lines.append("  flight recorder, each rank's last collective entered and completed, by torch's sequence id "
                     "(seq: its own count per process group; the #N above count the rank's torch.distributed calls, "
                     f"init_process_group #1) (whole dumps: {kept}):")
        lines += list(recorded)
    lines.append(_stall_end(timeout_s, stop_code, recovery, culprits))
    return lines


def _stall_end(timeout_s, stop_code, recovery, culprits):
    """What the stall comes to: under recovery it is a fault and the next generation starts; nothing exits 7
    (walk8 B38: every node read "the job is stopped ... (exit 7)" while recovery went on)."""
    if not timeout_s:
        return "  stall_timeout is 0: the job is not stopped for it"
    if not recovery:
        return f"  the job is stopped after stall_timeout {timeout_s}s (exit {stop_code})"
    from ..errors import fault_comes_to

    whose = f" without node {culprits[0].get('node')}" if culprits else ""
    return "  " + fault_comes_to(f"stall_timeout {timeout_s}s", stop_code, recovery, whose)


def straggler_lines(named, nodes, window_s):
    """A line per slow node, then per named rank: the first :data:`SHOWN` of each, then a count (every node is
    sent these lines; `nodeweave status --ranks` lists every straggler)."""
    lines = []
    if len(nodes) > SHOWN or len(named) > SHOWN:
        lines.append(f"STRAGGLER: {len(nodes)} node(s) and {len(named)} rank(s) named; the first {SHOWN} of each "
                     f"({status_hint('--ranks')} lists all)")
        nodes = dict(sorted(nodes.items())[:SHOWN])
        named = named[:SHOWN]
    for node, gap in sorted(nodes.items()):
        host = next((n["host"] for n in named if n["node"] == node), "?")
        lines.append(f"STRAGGLER: node {node} (host {host}): all its ranks are {gap * 100:.0f}% or more slower "
                     f"than the others (own work per collective, last {window_s:.0f}s)")
    for n in named:
        how = "; the others wait for it on the GPU" if n.get("device") else ""
        lines.append(f"STRAGGLER: {_who(n)} is {n['gap'] * 100:.0f}% slower: {n['per_s'] * 1000:.0f} ms of own "
                     f"work per collective against {n['ref_s'] * 1000:.0f} ms (last {window_s:.0f}s{how})")
    return lines


def fault_line(fault, taken, recovery=False):
    """'STRAGGLER FAULT: node 1 (host h1): rank 1 named a straggler 10 checks in a row (300% slower); ...', saying
    what the plan's row says when recovery does not act on it, and what to set (walk8 B43)."""
    ranks = ", ".join(str(r) for r in fault["ranks"])
    then = ("handed to recovery" if taken else
            "reported only: recovery does not act on it (NODEWEAVE_STRAGGLER_IS_FAULT off; on, it would replace the "
            "node)" if recovery else
            "reported only: recovery is off (NODEWEAVE_RECOVERY=on with NODEWEAVE_STRAGGLER_IS_FAULT=on would "
            "replace the node)")
    return (f"STRAGGLER FAULT: node {fault['node']} (host {fault['host']}): rank{'s' if len(fault['ranks']) > 1 else ''}"
            f" {ranks} named a straggler {fault['checks']} checks in a row ({fault['gap'] * 100:.0f}% slower); {then}")


def keep(run_dir, lines):
    """Append the lines, stamped, to the run folder's stalls.txt (a run started by nodeweave run)."""
    if not run_dir:
        return
    try:
        os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, FILE), "a") as f:
            f.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
            f.write("".join(f"{line}\n" for line in lines))
    except OSError:
        pass
