"""``nodeweave status``: one row per node, from the platform and from the node's own entrypoint.

Each node answers ``--node status`` through its exec channel: held or not,
its rank, the hash of the plan parts every node must share (launcher, node
count, processes, world size, master, command) so a node that disagrees
stands out, the run in progress and since when, and GPU use where
``nvidia-smi``, ``amd-smi`` or ``rocm-smi`` is installed. ``--ranks`` and
``--stacks`` add every rank of the running job as the stall watch sees it.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import TYPE_CHECKING, List, Optional, Tuple

from nodeweave.cluster.base import Backend, Node, NodeAnswer, ask_status
from nodeweave.entrypoint.nodelists import ranges
from nodeweave.steps import fan_out
from nodeweave.failures import tool_message

if TYPE_CHECKING:  # rich is imported where the table is drawn: `status -o json` and the checks before it need none
    from nodeweave.tables import Table

FAN_OUT_JOBS = 16  # node execs at once: each is a process on this machine


def gather(backend: Backend, nodes: List[Node], command: List[str], say=None) -> List[dict]:
    """Every node's row: the platform's word for all of them in one call, then only the nodes it does not call
    down asked, 16 at a time (a missing container answers nothing an exec could add: at 2112 nodes with nothing
    up, asking each one took minutes to say so). ``say`` gets a line before a wait that grows with the job."""
    states = backend.states(nodes)
    asked = [n for n in nodes if n.index not in states or states[n.index].state.askable]
    if say is not None and len(asked) > FAN_OUT_JOBS:
        say(f"asking {len(asked)} node(s) how they are, {FAN_OUT_JOBS} at a time")
    answers = dict(zip([n.index for n in asked], fan_out(lambda n: ask_status(n, command), asked, FAN_OUT_JOBS)))
    return [row(node, answers.get(node.index) or NodeAnswer(node, None, states[node.index].word),
                states[node.index].word if node.index in states else None, asked=node.index in answers,
                held=backend.holds) for node in nodes]


def row(node: Node, answer: NodeAnswer, platform: Optional[str], asked: bool = True, held: bool = True) -> dict:
    """``asked``: False for a node the platform calls down (missing, exited), whose entrypoint was not asked;
    ``held``: the target's ``up`` starts the nodes in a mode (``Backend.holds``). Where it does not (bare hosts,
    Slurm's allocation) a node has no mode: its entrypoint's default ``run`` read as "up --run" training while
    nothing ran (walk11 A3), so the row's mode is None, as ``refuse_run_mode`` reads such a node."""
    data = answer.data or {}
    plan = data.get("plan") or {}
    runs = data.get("runs") or []
    return {"node": node.name, "reached_as": node.remote.label, "platform": platform, "up": answer.up,
            "error": answer.error or None, "mode": data.get("mode") if held else None, "rank": plan.get("node_rank"),
            "role": plan.get("role"),
            "procs": plan.get("nproc_per_node"),
            "plan_hash": plan.get("hash"), "plan_errors": [e.get("message") for e in plan.get("errors") or []],
            "run": runs[0] if runs else None, "now": data.get("now"), "gpu": data.get("gpu"),
            "recovery": data.get("recovery"), "asked": asked}


def _index(name: str) -> int:
    tail = str(name).rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


def agreement(rows: List[dict]) -> Optional[bool]:
    """Do all answering nodes share one plan hash (None when none answered with a plan)?"""
    hashes = {r["plan_hash"] for r in rows if r["up"] and r["plan_hash"]}
    return None if not hashes else len(hashes) == 1


def plan_verdict(answers) -> Tuple[str, List[str]]:
    """``up``'s word on the nodes' plans: "plans agree" only over plans that exist, and each failed plan.

    ``answers`` pairs each node with its ``--node status`` answer (None: none). A failed plan has no
    hash, so agreement is judged over the hashes that exist, and a node whose plan fails is named with
    its errors instead of counting as agreement.
    """
    failures, hashes = [], set()
    for node, answer in answers:
        plan = ((answer.data if answer is not None else None) or {}).get("plan") or {}
        errors = [e.get("message") for e in plan.get("errors") or [] if e.get("message")]
        if errors:
            failures.append(f"{node.name} ({node.remote.label}): its plan fails: {'; '.join(errors)}")
        elif plan.get("hash"):
            hashes.add(plan["hash"])
    if failures:
        verdict = f"{len(failures)} plan(s) FAIL"
    elif not hashes:
        verdict = "no node reported a plan"
    else:
        verdict = "plans agree" if len(hashes) == 1 else f"plans DISAGREE ({', '.join(sorted(map(str, hashes)))})"
    return verdict, failures


def plans_title(rows: List[dict], agree: Optional[bool]) -> str:
    """The title's word on the nodes: how many are down first (walk10 C24: "plans agree" above a node down, which
    has no plan to agree with), then the plans of those up."""
    down = sum(1 for r in rows if not r["up"])
    plans = "plans " + {True: "agree", False: "DISAGREE", None: "unknown"}[agree]
    if not down:
        return plans
    if down == len(rows):
        return f"{down} of {len(rows)} node(s) down"
    return f"{down} of {len(rows)} node(s) down; {plans} among the {len(rows) - down} up"


def problems(rows: List[dict], spec=None, made: Optional[int] = None) -> List[str]:
    """What makes ``status`` exit 1, with what to do next (walk12c C14: `down: node-1` named nothing, where every
    other verb says what starts the nodes): nodes down, a node whose plan fails (it cannot start), plans that
    disagree. ``spec``: the job's, whose ``launcher.mode`` the start hint follows. A spec changed since ``up``
    (``made``: the node count up made) is no problem of the nodes: status notes it, as run and exec do (walk15 A18),
    and the nodes past the made ones, never made, are not "down" with a last output to read (walk14 A14)."""
    from nodeweave.cluster.base import start_hint
    from nodeweave.entrypoint.nodelists import noted_ranges

    found: List[str] = []
    down = [r for r in rows if not r["up"] and (made is None or _index(r["node"]) < made)]
    book = generation_under_way(rows)
    left = [r for r in down if book is not None and _index(r["node"]) in (book.get("left_out") or ())]
    if left:  # recovery went on without them (walk15a A26): the run is healthy, nothing of it is to be stopped
        down = [r for r in down if r not in left]
        which = ",".join(str(_index(r["node"])) for r in left)
        found.append(f"{ranges([r['node'] for r in left])} {'is' if len(left) == 1 else 'are'} down and recovery "
                     f"left {'it' if len(left) == 1 else 'them'} out: generation {book.get('generation')} trains on "
                     f"{ranges([f'node-{i}' for i in book.get('members') or ()])} and the run goes on (nothing to "
                     f"stop); `nodeweave logs --container --node {which}` shows "
                     f"{'its' if len(left) == 1 else 'their'} last output; once the run has ended, "
                     + ("`nodeweave up`" if spec is not None and spec.launcher.mode == "hold" else
                        "`nodeweave up --hold`") + " brings every node back")
    if down:
        named = noted_ranges((r["node"], r["platform"] or tool_message(r["error"] or "", 80)) for r in down)
        which = ",".join(str(r["node"]).rpartition("-")[2] for r in down)
        running = any(r["up"] and r["run"] for r in rows)
        found.append(f"{named} {'is' if len(down) == 1 else 'are'} down: `nodeweave logs --container --node "
                     f"{which}` shows {'its' if len(down) == 1 else 'their'} last output (read it first: "
                     f"`nodeweave up` recreates every node and loses it), then "
                     + ("`nodeweave stop` the run on the others and " if running else "")
                     + start_hint("status", spec))
    # a plan's errors are its own words on what to change
    found += [f"{r['node']}'s plan fails: {'; '.join(r['plan_errors'])}" for r in rows if r["up"] and r["plan_errors"]]
    if agreement(rows) is False:
        found.append("the nodes' plans disagree (the plan column above; `nodeweave status --fingerprints` shows "
                     "what differs)")
    return found


# what a node started in run mode runs: the spec's job is its main process, no `nodeweave run` (walk10 C16: "-" read
# as nothing running while it trained)
RUN_MODE_JOB = "the spec's job (up --run: its main process)"


def _since(run: Optional[dict], now: Optional[float], mode: Optional[str] = None) -> str:
    if not run:
        return RUN_MODE_JOB if mode == "run" else "-"
    started = run.get("started") or 0
    clock = time.strftime("%H:%M:%S", time.gmtime(started))
    return f"{run.get('run_id')} since {clock} UTC ({(now or time.time()) - started:.0f} s)"


def _generation(recovery: Optional[dict]) -> str:
    """``; generation 1: spare`` for a node under recovery (docs/recovery.md), and why a node sits out
    (``; generation 1: left out: node 1: it was lost (...)``); else nothing."""
    if not recovery or recovery.get("generation") is None:
        return ""
    reason = f": {recovery['reason']}" if recovery.get("reason") else ""
    return f"; generation {recovery['generation']}: {recovery.get('role') or '?'}{reason}"


def generation_under_way(rows: List[dict]) -> Optional[dict]:
    """The recovery book (``--node status``'s ``recovery``) of a generation under way in the run in progress, as
    the first node up that runs it holds it; None without one (no recovery, no run, or the job ended)."""
    return next((r["recovery"] for r in rows if r.get("up") and r.get("run") and (r.get("recovery") or {}).get("decision")
                 == "start" and r["recovery"].get("generation") is not None), None)


def rank_text(r: dict) -> str:
    """The rank column: the node's rank, or what a node under recovery is that does not train (``spare (2)``),
    in the generation under way where its run is one (walk15a A27: a spare training since generation 1 read
    ``spare (2)``, the hold's plan from before it)."""
    book = generation_under_way([r])
    role = r.get("role") or {}
    identity = role.get("identity", r["rank"])
    if book is not None and isinstance(identity, int):
        members = list(book.get("members") or ())
        if identity in members:
            return str(members.index(identity))
        return f"{book.get('role') or '?'} ({identity})"
    if role.get("kind") and role["kind"] != "training node":
        return f"{role['kind']} ({role.get('identity')})"
    return "-" if r["rank"] is None else str(role.get("rank", r["rank"]) if role else r["rank"])


def _gpus(gpu: Optional[dict]) -> str:
    if not gpu or not gpu.get("tool"):
        return "-"
    if gpu.get("error"):
        return f"{gpu['tool']}: {gpu['error'][:40]}"
    parts = [f"{g.get('util_pct') if g.get('util_pct') is not None else '?'}% "
             f"{(g.get('mem_used_mib') or 0) / 1024:.1f}/{(g.get('mem_total_mib') or 0) / 1024:.0f}G"
             for g in gpu.get("gpus", [])]
    return " ".join(parts) or f"{gpu['tool']}: no GPU"


def status_table(backend: Backend, rows: List[dict], wide: bool = False) -> "Table":
    """One row per node; ``wide`` (-o wide) adds the processes per node, and keeps a down node's reason and a
    plan's errors whole instead of cut at 60 characters."""
    from nodeweave.tables import Table

    from nodeweave.usertext import styled

    agree = agreement(rows)
    title = f"{backend.spec.name}: {backend.where}; {plans_title(rows, agree)}"
    table = Table(title=title, title_justify="left")
    widest = max((len(r["reached_as"]) for r in rows), default=10)
    table.add_column("node", no_wrap=True)
    table.add_column("reached as", no_wrap=True, min_width=widest)  # an address cut in half helps no one
    extra = ("processes",) if wide else ()
    cut = 10_000 if wide else 60
    for column in ("state", "mode", "rank", "plan", "run in progress", "GPU use, memory", *extra):
        table.add_column(column, overflow="fold")
    hashes = [r["plan_hash"] for r in rows if r["plan_hash"]]
    common = max(set(hashes), key=hashes.count) if hashes else None
    for r in rows:
        state = "up" if r["up"] else "down"
        if r["platform"]:
            state = f"{state} ({r['platform']})"
        elif not r["up"]:
            state = f"down: {tool_message(r['error'] or '', cut)}"
        plan = r["plan_hash"] or ("; ".join(r["plan_errors"])[:cut] if r["plan_errors"] else "-")
        more = ("-" if r.get("procs") is None else str(r["procs"]),)
        style = "red" if r["plan_hash"] and r["plan_hash"] != common else ""
        table.add_row(r["node"], r["reached_as"], styled((state, "green" if r["up"] else "red")),
                      r["mode"] or "-", rank_text(r), styled((plan, style)) if style else plan,
                      _since(r["run"], r["now"], r["mode"]) + _generation(r.get("recovery")),
                      _gpus(r["gpu"]), *(more if wide else ()))
    return table


# --- `status --ranks` / `--stacks`: where every rank of the running job is (docs/stalls.md) ----------------
# Any node of the running job finds node 0 with its own variables, so the first node whose
# ``nodeweave-entrypoint --status`` answers gives the stall watch's view; ``--stacks`` gathers every
# rank's stack now, grouped. Nothing is stopped.

STATES = {"R": "running", "S": "sleeping", "D": "disk wait", "T": "stopped", "t": "traced", "Z": "zombie",
          "gone": "exited"}


def ask_ranks(nodes, stacks: bool = False, timeout_s: float = 60.0) -> Tuple[Optional[dict], List[str]]:
    """(the ``ranks`` part of node 0's status, or None; why each node tried did not give it)."""
    tried = []
    argv = ["--status"] + (["--stacks"] if stacks else [])
    for node in nodes:
        try:
            out = subprocess.run(node.entrypoint_argv(argv), capture_output=True, text=True, timeout=timeout_s,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            tried.append(f"{node.name}: {err}")
            continue
        try:
            answer = json.loads(out.stdout) if out.returncode == 0 else None
        except ValueError:
            answer = None
        if answer is not None and answer.get("ranks"):
            return answer["ranks"], tried
        last = [line for line in out.stderr.splitlines() if line.strip()][-1:] or [f"exit {out.returncode}"]
        tried.append(f"{node.name}: " + ("the job runs without the stall watch" if answer is not None else last[0]))
    return None, tried


def rank_lines(ranks: dict) -> List[str]:
    """One line per rank, then the verdicts, then (when gathered) the grouped stacks."""
    from nodeweave.entrypoint.stall.stacks import render

    lines = []
    summary = ranks.get("summary")
    if summary:  # a large job: node 0 sent the counts and the ranks most worth a look, not every rank
        states = ", ".join(f"{count} {STATES.get(state, state)}" for state, count in sorted(summary["states"].items()))
        inside = ", ".join(f"{count} in {name}" for name, count in sorted(summary["inside"].items()))
        lines.append(f"{summary['ranks']} rank(s): {states}" + (f"; {inside}" if inside else "")
                     + f"; the {summary['listed']} longest in one place below (every rank: "
                     "nodeweave-entrypoint --status --all on a node)")
    for r in sorted(ranks.get("ranks") or [], key=lambda r: (r.get("node") or 0, r["rank"])):
        where = (f"in {r['name']} #{r['seq']}" if r.get("inside") else
                 f"after {r.get('name') or 'no collective'} #{r['seq']}")
        cpu = f", CPU {r['cpu_rate'] * 100:.0f}%" if isinstance(r.get("cpu_rate"), (int, float)) else ""
        enqueued = r.get("fr_enqueued")
        recorded = (f", flight recorder: enqueued seq {enqueued}, "
                    f"completed seq {r.get('fr_completed')}"
                    if isinstance(enqueued, int) and enqueued >= 0 else "")
        lines.append(f"rank {r['rank']} (node {r.get('node')}, {r.get('host')}): {where} for {r.get('since_s', 0):.0f}s, "
                     f"{STATES.get(r.get('state'), r.get('state'))}{cpu}{recorded}")
    stall = ranks.get("stall")
    if stall:
        culprits = ", ".join(f"rank {c['rank']} (node {c['node']})" for c in stall["culprits"])
        where = stall.get("where") or f"{stall['collective']} #{stall['seq']}"
        lines.append(f"stall: {culprits} not in {where}, nothing moved for "
                     f"{stall['for_s']:.0f}s")
    for s in ranks.get("stragglers") or []:
        lines.append(f"straggler: rank {s['rank']} (node {s['node']}, {s['host']}) {s['gap'] * 100:.0f}% slower")
    if ranks.get("stacks"):
        lines.append(f"stacks ({len(ranks['stacks'])} class(es)):")
        lines += render(ranks["stacks"])
    if ranks.get("flight"):
        lines.append("flight recorder, each rank's last collective entered and completed:")
        lines += ranks["flight"]
    return lines


def rank_view(asked) -> List[str]:
    """What ``status --ranks``/``--stacks`` prints for :func:`ask_ranks`' answer (nothing when not asked)."""
    if asked is None:
        return []
    ranks, tried = asked
    return rank_lines(ranks) if ranks else [f"no rank view: {'; '.join(tried) or 'no node is up'}"]
