"""``nodeweave-entrypoint --node ACTION``: what ``nodeweave status``, ``stop`` and ``run`` ask a node.

Each action prints one JSON document (schema ``nodeweave.node/1``) on stdout:

- ``status [-- COMMAND...]``: the hold record, the runs in progress, this
  node's plan summary (the held plan, else one made now for COMMAND) with the
  hash of what every node must agree on, and GPU use from ``nvidia-smi``,
  ``amd-smi``, ``rocm-smi`` or AMD's sysfs (``detection.gpu_use``);
- ``stop [--run ID] [--grace S]``: stops this node's runs in progress (all, or ID): those its own
  ``$TMPDIR/nodeweave/runs/`` records, or an entrypoint of that ``--run-id`` and this ``$TMPDIR`` not recorded
  yet, never another node's on the same machine; SIGTERM then SIGKILL after S seconds (default 10); exit 1 if a
  process outlived it, or when the node runs its job as its main command (run mode, no ``--run-id``:
  ``runstate.main_runs``), which it names and does not stop;
- ``report RUN_ID``: the run's record and plan, its recovery book and goodput timeline, the workspace's sync stamp
  (``.nodeweave-sync.json`` in the working directory) and the profiler's files;
- ``stop --run ID`` and ``report ID`` of a run id this node never had: exit 1 with ``error`` naming it and the
  node's runs (a run that ended is no error: ``"stopped": []``, exit 0);
- ``live [--port P]``: node 0's live picture of the running job, as its ``/status.json`` on
  ``127.0.0.1:P`` (``NODEWEAVE_METRICS_PORT``, default 9464) answers it (``nodeweave top``); exit 1 with
  ``error`` when nothing answers there (not node 0, no job running, metrics off);
- ``ready``: the pods' readiness probe: exit 0 when the node holds (its hold
  record's process lives) or runs (run mode: the entrypoint is past its start,
  waiting to check in or running the launcher), 1 while a holding node is still
  planning. No network: a probe must not depend on node 0.

nodeweave reaches every node through its exec channel (``podman exec``,
``kubectl exec``, ``ssh``) and runs these, so the image's own entrypoint
answers for the image's own records. Stdlib only.
"""

import json
import math
import os
import sys
import time

from .errors import EXIT_FAILURE, EXIT_OK, UsageError
from .hints import stop_process_hint
from .hostport import host_port, http_url
from .planning.contract import NODE_USAGES as USAGES, read_port, read_run_id
from .running.runstate import (HOLD_SCHEMA, alive, live_runs, main_runs, read_json, read_record, run_dir,
                               run_entrypoints, state_root, stop_runs, unrecorded_runs)

NODE_SCHEMA = "nodeweave.node/1"
STAMP = ".nodeweave-sync.json"  # written by `nodeweave sync` at the workspace's root
ACTIONS = tuple(USAGES)


def read_grace(text, what, source):
    """Seconds between SIGTERM and SIGKILL: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise UsageError(f"{what} {text!r} (from {source}) is not accepted: a finite number of seconds, 0 or more "
                         "(default 10)")
    return value


# The options each action reads, each with one value and its reader: every one is judged the same way before the
# action runs (walk5 W7: an empty --run stopped every run, a negative --grace and a --run given twice passed).
OPTIONS = {"stop": {"--run": read_run_id, "--grace": read_grace}, "live": {"--port": read_port}}


def plan_summary(plan, command):
    """Who this node is, and a hash over what every node of the job must agree on."""
    import hashlib

    if plan.topology is None or plan.launch is None:
        return {"errors": plan.errors, "hash": None}
    t = plan.topology
    shared = {"launcher": plan.launch.launcher, "nnodes": str(t.nnodes.value), "nproc_per_node": t.nproc_per_node.value,
              "world_size": t.world_size, "master": host_port(t.master_addr.value, t.master_port.value),
              "command": list(command)}
    agreed = shared
    if str(t.nproc_per_node.source).startswith("auto") and plan.launch.launcher != "accelerate":
        # One process per GPU each node has: uneven counts are the plan, not a disagreement (the check-in
        # gives the launcher every node's count; accelerate is told one total before it, so it stays exact).
        agreed = dict(shared, nproc_per_node="auto", world_size="the sum of every node's processes")
    elif t.node_procs and len(set(t.node_procs)) > 1:  # uneven hostfile slots: the job's counts, not this node's,
        agreed = dict(shared, nproc_per_node=list(t.node_procs))  # are what every node agrees on (fix13d)
    digest = hashlib.sha256(json.dumps(agreed, sort_keys=True).encode()).hexdigest()[:12]
    return {"node_rank": t.node_rank.value, **shared, "hash": digest, "warnings": list(plan.warnings),
            "errors": plan.errors, "role": plan.role}


def gpu_usage():
    """GPU utilisation and memory from the node's one GPU reader (``detection.gpu_use``), in the units the
    ``nodeweave.node/1`` answer has always had (percent, MiB): ``tool`` None when there is none."""
    from .detection.gpu_use import read_gpu_use

    found = read_gpu_use()

    def mib(value):
        return None if value is None else round(value / 2**20)

    gpus = [{"index": g["index"], "util_pct": None if g.get("util_ratio") is None else round(100 * g["util_ratio"], 1),
             "mem_used_mib": mib(g.get("mem_used_bytes")), "mem_total_mib": mib(g.get("mem_total_bytes"))}
            for g in found["gpus"]]
    return dict(found, gpus=gpus)


def _plan_now(command, env):
    from .planning.settings import parse
    from .recovery.roles import plan_node

    settings = parse(["--mode", "run", "--", *command] if command else ["--mode", "run"], env)
    return plan_summary(plan_node(settings, partial=True), command)


# the plan of `--node status` with its optional command left out: not asked for, so no error with an exit code
# (walk11b B22: "no training command ..., exit 2" read as a node whose plan fails while its run trained)
NOT_JUDGED = {"hash": None, "errors": [], "not_judged": "no command given: `--node status -- COMMAND` plans this "
              "node for it"}


def status(args, env):
    command = args[args.index("--") + 1:] if "--" in args else []
    hold = read_json(os.path.join(state_root(env), "hold.json"))
    if hold and not alive(hold.get("pid", -1), hold.get("starttime")):
        hold = None  # a record left by a held entrypoint that has ended
    runs = [{k: r.get(k) for k in ("run_id", "pid", "started", "node_rank")} for r in live_runs(env)]
    data = {"schema": NODE_SCHEMA, "now": time.time(), "hostname": os.uname().nodename,
            "mode": "hold" if hold else "run", "hold": hold, "runs": runs,
            "main": [] if hold else [{k: m[k] for k in ("pid", "main")} for m in main_runs(env)],
            "plan": hold["plan"] if hold else _plan_now(command, env) if command else NOT_JUDGED, "gpu": gpu_usage(),
            "recovery": _recovery(env)}
    return data, EXIT_OK


def _recovery(env):
    """This node's last recovery record (docs/recovery.md): the generation, its role in it, the spares; ``job``
    names the job folder it was read from. Each job keeps its book in its own folder
    (``$TMPDIR/nodeweave/jobs/<job id>-<master port>/recovery.json``, ``runstate.job_dir``; walk10 B8): the one
    written last is this node's last, another job's beside it is never mixed in."""
    root = os.path.join(state_root(env), "jobs")
    try:
        names = os.listdir(root)
    except OSError:
        return None
    found = []
    for name in names:
        path = os.path.join(root, name, "recovery.json")
        try:
            found.append((os.stat(path).st_mtime, name, path))
        except OSError:
            continue
    for _, name, path in sorted(found, reverse=True):
        book = read_json(path)
        if isinstance(book, dict):
            from .news import left_out_now

            # the nodes left out now, and how often each ever was under its own key, as --status says (walk12 B2)
            return dict({k: book.get(k) for k in ("generation", "role", "reason", "decision", "members", "spares")},
                        left_out=left_out_now(book), times_left_out=book.get("left_out") or {}, job=name)
    return None


def read_options(action, args):
    """``{option: value}`` of ``--node ACTION``'s options, each read by its reader (``OPTIONS``); an option
    without a value, given twice, empty or bad, and a word that is no option, refused in one line."""
    readers, found, i = OPTIONS.get(action, {}), {}, 0
    while i < len(args):
        name = args[i]
        if name not in readers:
            raise UsageError(f"--node {action}: {name!r} is not accepted here; accepted: --node {USAGES[action]}")
        if i + 1 >= len(args):
            raise UsageError(f"--node {action}: {name} needs a value; accepted: --node {USAGES[action]}")
        text = args[i + 1]
        if name in found:
            raise UsageError(f"--node {action}: {name} is given twice ({found[name][0]!r}, {text!r}) and takes one "
                             "value; give it once")
        if not text.strip():
            raise UsageError(f"--node {action}: {name} is given an empty value; give one, or leave {name} out for "
                             "its default" + (" (every run)" if name == "--run" else ""))
        found[name] = (text, readers[name](text, f"--node {action} {name}", f"--node {action}"))
        i += 2
    return {name: value for name, (_, value) in found.items()}


def unknown_run(env, run_id, starting=()):
    """Why ``run_id`` is no run of this node, or None: it has no record folder here and no entrypoint of that id
    is starting (``starting``). One answer for every action given a run id (``report RUN_ID``, ``stop --run ID``):
    a typo read as a run with nothing to say, ``"run": null`` or ``"stopped": []``, exit 0, could not be told from
    a run that ended (walk9 B15)."""
    root = os.path.join(state_root(env), "runs")
    if starting or os.path.isdir(os.path.join(root, run_id)):
        return None
    try:
        names = sorted(name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name)))
    except OSError:
        names = []
    has = (f"its runs: {', '.join(names[-10:])}" + (f" (last 10 of {len(names)})" if len(names) > 10 else "")
           if names else "it has none")
    # an entrypoint of that id keeping its folder under another $TMPDIR (another node of the run on this machine,
    # or the same node asked from a shell without its TMPDIR): named, so the question can be asked there
    elsewhere = sorted({os.path.dirname(root) for _, root, _ in run_entrypoints(run_id) if root})
    there = (f"; an entrypoint of run {run_id!r} runs on this machine with TMPDIR={', '.join(elsewhere[:4])}: ask "
             "with that TMPDIR" if elsewhere else "")
    return f"no run {run_id!r} on this node (no {os.path.join(root, run_id)}): {has}{there}"


def stop(args, env):
    options = read_options("stop", args)
    wanted, grace = options.get("--run"), options.get("--grace", 10.0)
    runs = [r for r in live_runs(env) if wanted in (None, r.get("run_id"))]
    # a run whose entrypoint has just started is stopped too, and so is a second entrypoint of a live run's id,
    # which keeps no record over the live one's (walk11b B6)
    for run_id in ([wanted] if wanted is not None else sorted({r.get("run_id") for r in runs})):
        runs += unrecorded_runs(run_id, {r["pid"] for r in runs}, env)
    if wanted is not None:
        unknown = unknown_run(env, wanted, runs)
        if unknown:
            return {"schema": NODE_SCHEMA, "stopped": [], "left": False, "error": unknown}, EXIT_FAILURE
    main = main_runs(env) if wanted is None and not runs else []
    if main:
        return {"schema": NODE_SCHEMA, "stopped": [], "left": False, "main": main,
                "error": main_run_error(main)}, EXIT_FAILURE
    stopped = stop_runs(runs, grace, env=env) if runs else []
    left = any(r["left"] for r in stopped)
    return {"schema": NODE_SCHEMA, "stopped": stopped, "left": left}, EXIT_FAILURE if left else EXIT_OK


def main_run_error(main):
    """Why ``--node stop`` stops no job that runs as the node's main command, and what does."""
    pids = ", ".join(str(m["pid"]) for m in main)
    signals = stop_process_hint(" ".join(str(m["pid"]) for m in main))
    where = ("the container's main process (PID 1)" if any(m["main"] for m in main) else
             f"a process started without --run-id (pid {pids})")
    return (f"this node runs its job as its main command (run mode: nodeweave-entrypoint, {where}), not as a run "
            "`nodeweave run` recorded: --node stop stops only those, and nothing was stopped. To stop this job stop "
            f"the container (`nodeweave down`, or the engine's stop) or the process: {signals}; to "
            "stop jobs by their run id, start the nodes with `nodeweave up --hold` and each job with `nodeweave run`")


def report(args, env):
    if not args:
        raise UsageError("--node report needs the run id")
    unknown = unknown_run(env, args[0], unrecorded_runs(args[0], set(), env))
    if unknown:
        return {"schema": NODE_SCHEMA, "run": None, "error": unknown}, EXIT_FAILURE
    folder = run_dir(env, args[0])
    record = read_record(os.path.join(folder, "run.json"))
    profile = os.path.join(folder, "profile")
    files = []
    for base, _, names in os.walk(profile):
        files += [{"path": os.path.relpath(os.path.join(base, n), profile),
                   "bytes": os.path.getsize(os.path.join(base, n))} for n in sorted(names)]
    data = {"schema": NODE_SCHEMA, "run": record, "plan": read_json(os.path.join(folder, "plan.json")),
            "alive": bool(record) and alive(record.get("pid", -1), record.get("starttime")),
            "stamp": read_json(os.path.join(os.getcwd(), STAMP)), "profile_dir": profile, "profile": files,
            "stalls": _stall_reports(folder), "recovery": read_json(os.path.join(folder, "recovery.json")),
            "goodput": read_json(os.path.join(folder, "goodput.json")),
            "heat": read_json(os.path.join(folder, "heat.json")), "after_stop": _after_stop(folder)}
    return data, EXIT_OK


AFTER_STOP_CAP = 256 * 1024  # the end of the launcher's output after a stop, as the report carries it to the host


def _after_stop(folder):
    """{file name: its end} of the launcher's output after a stop (``runstate.AFTER_STOP``) kept in the run's folder
    on this node: the host's ``nodeweave run`` keeps a copy in its own run folder, so the file the node's stop
    line names can be read after ``down`` too (walk12c C3: it was only inside the container)."""
    from . import bounded
    from .running.runstate import AFTER_STOP

    head, _, tail = AFTER_STOP.partition("{node}")
    found = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        if name.startswith(head) and name.endswith(tail) and len(found) < 16:
            try:
                found[name] = bounded.read_tail(os.path.join(folder, name), AFTER_STOP_CAP, own=True)
            except (OSError, ValueError):
                continue
    return found


def ready(args, env):
    """Readiness: holds or runs (see the module docstring); one JSON line either way."""
    hold = read_json(os.path.join(state_root(env), "hold.json"))
    holding = bool(hold) and alive(hold.get("pid", -1), hold.get("starttime"))
    mode = env.get("NODEWEAVE_MODE") or "run"
    if holding:
        answer = {"schema": NODE_SCHEMA, "ready": True, "state": "holds"}
    elif mode == "hold":
        answer = {"schema": NODE_SCHEMA, "ready": False, "state": "planning (no hold record yet)"}
    else:
        answer = {"schema": NODE_SCHEMA, "ready": True, "state": "runs",
                  "runs": [r.get("run_id") for r in live_runs(env)]}
    return answer, EXIT_OK if answer["ready"] else EXIT_FAILURE


def live(args, env):
    """Node 0's ``/status.json`` (metrics/server.py), asked on loopback: what ``nodeweave top`` draws. An answer
    that is not that picture is another program on the port (node 0's metrics could not bind it), said so."""
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen

    from . import bounded
    from http.client import HTTPException

    from .metrics.shape import live_problem, not_http_problem

    port = read_options("live", args).get("--port")
    if port is None:
        port = read_port(env.get("NODEWEAVE_METRICS_PORT") or "9464", "--node live's port", "NODEWEAVE_METRICS_PORT")
    url = http_url("127.0.0.1", port, "/status.json")
    try:
        with urlopen(url, timeout=5) as answer:
            body = bounded.read_stream(answer, bounded.RECORD_CAP, "node 0's status", url)
        data = json.loads(body.decode("utf-8"))
        problem = live_problem(data)
    except HTTPError as err:
        problem = f"HTTP {err.code} {err.reason}"
    except HTTPException as err:  # no HTTP at all: the exchange's challenge or another protocol on the port
        problem = not_http_problem(err)
    except bounded.TooLarge as err:
        problem = str(err)
    except (OSError, URLError) as err:
        why = getattr(err, "reason", None) or err
        return {"schema": NODE_SCHEMA, "live": None, "error": f"nothing answers at {url} ({why}): not node 0, no job "
                "running, or its metrics off (NODEWEAVE_METRICS=off, the spec's metrics.enabled false)"}, EXIT_FAILURE
    except ValueError as err:  # not JSON, or not UTF-8
        problem = f"not JSON ({err})"
    if problem:
        return {"schema": NODE_SCHEMA, "live": None, "error": f"another program answers at {url}, not nodeweave's "
                f"/status.json ({problem}): the job's metrics are off on this host (port {port} was taken); move "
                "NODEWEAVE_METRICS_PORT (the spec's metrics.port)"}, EXIT_FAILURE
    return {"schema": NODE_SCHEMA, "live": data}, EXIT_OK


def _stall_reports(folder):
    """The stall watch's reports kept for this run (``stalls.txt``, docs/stalls.md), last 64 KiB, or None."""
    try:
        with open(os.path.join(folder, "stalls.txt"), "rb") as f:
            f.seek(max(0, os.path.getsize(f.name) - (64 << 10)))
            return f.read().decode(errors="replace")
    except OSError:
        return None


def check_arguments(argv):
    """The action and its arguments as USAGES writes them, else one line naming the bad word and the list:
    an unknown action, option or extra word did nothing before (``--node stop --rn x`` stopped every run)."""
    accepted = "; ".join(USAGES.values())
    if not argv:
        raise UsageError(f"--node needs an action; accepted: {accepted}")
    action, args = argv[0], argv[1:]
    if action not in ACTIONS:
        raise UsageError(f"--node: {action!r} is not an action; accepted: {accepted}")
    if action == "status":
        extra = args[:1] if args and args[0] != "--" else []
    elif action == "report":
        extra = args[1:]
        if args:
            read_run_id(args[0], "--node report's run id", "--node report")
    else:
        extra = []
        read_options(action, args)
    if extra:
        raise UsageError(f"--node {action}: {extra[0]!r} is not accepted here; accepted: --node {USAGES[action]}")


def node_main(argv, env):
    """``--node ACTION ARGS``: print the action's JSON; its exit code."""
    from .systemfolders import check_state_root

    check_arguments(argv)
    check_state_root(env)  # the folder every answer reads (walk14b B14, B15): judged as at a start
    data, code = {"status": status, "stop": stop, "report": report, "ready": ready,
                  "live": live}[argv[0]](argv[1:], env)
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()
    return code


__all__ = ["HOLD_SCHEMA", "node_main", "plan_summary", "gpu_usage"]
