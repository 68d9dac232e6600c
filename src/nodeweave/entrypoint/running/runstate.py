"""The records a node keeps of its held state and of the runs ``nodeweave run`` starts, and stopping them.

Everything lives under ``$TMPDIR/nodeweave`` (``/tmp/nodeweave``); a job's own
records (the check-in verdict, the recovery book, the goodput timeline, the heat
map, the DeepSpeed hostfile) in its folder ``jobs/<job id>-<master port>/``
(:func:`job_dir`, the only place that names it):

- ``hold.json``: written by a holding entrypoint (``hold.py``): its process,
  start time, command and plan summary;
- ``runs/<run id>/run.json`` and ``plan.json``: written by the entrypoint that
  ``nodeweave run`` starts (``--run-id``), just before it starts the launcher.

A record names a process by its pid *and* its start time (``/proc/<pid>/stat``
field 22), so a recycled pid is never taken for a live run. Stopping a run
signals every process that descends from its entrypoint, found in ``/proc``:
torchrun starts each worker in a session of its own, so the launcher's process
group alone would miss them. SIGTERM first (the entrypoint passes it to the
launcher once, as a ``podman stop`` would), SIGKILL to whatever is left after
the grace: no orphan rank keeps a GPU busy. Stdlib only; imported only when a
node is held, recorded or asked.
"""

import json
import os
import time

from ..errors import EXIT_BUSY, EntrypointError
from ..hints import stop_run_hint
# the folder's rule lives below every module that reads it, so a start judges it without loading this one (json)
from ..systemfolders import STATE_ACCEPTED, check_state_root, state_root, state_root_problem  # noqa: F401

RUN_SCHEMA = "nodeweave.run/1"
HOLD_SCHEMA = "nodeweave.hold/1"


SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"  # a path component as is


def job_key(job_id, master_port):
    """``<job id>-<master port>`` as one path component: what two jobs sharing a host (and a TMPDIR) never share."""
    job = "".join(c if c in SAFE else "_" for c in str(job_id or "job"))[:80]
    return f"{job}-{master_port}"


def job_dir(env, job_id, master_port):
    """``$TMPDIR/nodeweave/jobs/<job id>-<master port>``: the one folder of a job's records on this node, named
    here only. Node 0's check-in verdict (``checkin.json``), recovery book (``recovery.json``), goodput timeline
    (``goodput.json``) and heat map (``heat.json``), each node's copy of the book and of the verdict, the DeepSpeed
    hostfile and the launcher's output after a stop (without a stall watch) go here: two jobs whose nodes share a
    TMPDIR (bare hosts, a Slurm node's /tmp) never write over, nor read back, each other's (walk10 B8: job A's
    next save wrote over job B's finished goodput.json; a restarted node 0 read whichever book was last)."""
    return os.path.join(state_root(env), "jobs", job_key(job_id, master_port))


def job_dir_of(env, topo):
    """:func:`job_dir` of a plan's topology (its job id and master port, the same in every generation)."""
    return job_dir(env, topo.job_id, topo.master_port.value)


AFTER_STOP = "launcher-after-stop-node-{node}.log"  # per node: nodes on one host may share a run folder
STOP_ASKED = "stop-asked.json"  # in a run's folder: `--node stop` ended it on purpose (walk10 B3)


def run_dir(env, run_id):
    return os.path.join(state_root(env), "runs", run_id)


def write_json(path, data):
    """Write atomically, so a reader never sees half a record."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_whole(path, json.dumps(data, indent=1, sort_keys=True))


def write_whole(path, text, temporary=None):
    """``text`` to ``path`` whole or not at all: written to ``temporary`` (``<path>.<pid>``) beside it, then renamed
    over it. The one way the node writes a file atomically (its records, the claim in the user's checkpoint folder,
    the check-in verdict, the launcher's files): when the write or the rename fails (a full disk, a folder where
    the file goes) the temporary file is removed again before the error is raised, so nothing half-written of
    nodeweave's is left behind (walk14b B13: every start left ``.nodeweave-claim.<pid>.tmp`` in the user's
    checkpoint folder when ``.nodeweave-claim`` was a folder)."""
    temporary = temporary or f"{path}.{os.getpid()}"
    try:
        with open(temporary, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_record(path):
    """A run record (run.json) as a mapping, or None: absent, cut short, or damaged (a list, a number) is read as
    no record, never a crash of every verb that lists the node's runs."""
    data = read_json(path)
    return data if isinstance(data, dict) else None


# --- processes, from /proc ---------------------------------------------------------------------------

def proc_stat(pid):
    """``(state, ppid, pgid, starttime)`` of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    try:
        return fields[0], int(fields[1]), int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


def process_table():
    """Every process this namespace shows: pid -> (state, ppid, pgid, starttime)."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None:
                table[int(name)] = stat
    return table


def alive(pid, starttime):
    """The process still runs (not a zombie) and is the one the record names."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z" and stat[3] == starttime


def descendants(root, table):
    """``root`` and every process below it, as (pid, starttime)."""
    children = {}
    for pid, (_, ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        if pid in table:
            found.append((pid, table[pid][3]))
            queue.extend(children.get(pid, ()))
    return found


# --- run records -------------------------------------------------------------------------------------

def live_runs(env):
    """The run records of this node whose entrypoint still runs, oldest first."""
    root = os.path.join(state_root(env), "runs")
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    records = [read_record(os.path.join(root, name, "run.json")) for name in names]
    live = [r for r in records if r and alive(r.get("pid", -1), r.get("starttime"))]
    return sorted(live, key=lambda r: r["started"] if isinstance(r.get("started"), (int, float)) else 0)


def _own_root(pid):
    """The state folder (``$TMPDIR/nodeweave``) of process ``pid``, as a real path, or None when its environment
    cannot be read (another user's process: never this node's to stop)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    env = dict(p.decode("utf-8", "replace").split("=", 1) for p in pairs if b"=" in p)
    return os.path.realpath(os.path.join(cwd, state_root(env)))


ENTRYPOINT_NAMES = ("nodeweave-entrypoint", "nodeweave-entrypoint.pyz", "nodeweave.entrypoint")


def entrypoint_options(argv):
    """The entrypoint's own options in a command line (its words, before ``--`` or the training command), or None when
    the words are not the entrypoint's (:func:`entrypoint_run_id` says how that is told)."""
    words = list(argv)
    for at, word in enumerate(words[:8]):
        if os.path.basename(word) in ENTRYPOINT_NAMES:
            break
        # only an interpreter or a wrapper of the exec may come first: `python3 -m`, `tini -g --`, `setsid`, `env X=1`
        if not (word.startswith("-") or "=" in word or
                os.path.basename(word).startswith(("python", "env", "setsid", "tini", "dumb-init"))):
            return None
    else:
        return None
    options = words[at + 1:]
    return options[:options.index("--")] if "--" in options else options


def entrypoint_run_id(argv):
    """The ``--run-id`` of an entrypoint's command line (its words), or None when the words are not the entrypoint's
    (its program: ``nodeweave-entrypoint``, the zipapp, ``python -m nodeweave.entrypoint``, the first word that is
    no interpreter option) or give no run id among its options, before ``--`` or the training command: a wrapper
    script given ``--run-id hf1`` (``./start.sh ... --run-id hf1``) is no entrypoint of run hf1 (walk12b B6: a
    report of it answered an all-null report, exit 0, and ``--node stop --run hf1`` would stop the script)."""
    options = entrypoint_options(argv) or []
    for i, word in enumerate(options):
        if word == "--run-id" and i + 1 < len(options):
            return options[i + 1]
        if word.startswith("--run-id="):
            return word.partition("=")[2]
    return None


def run_entrypoints(run_id, skip=()):
    """[(pid, state folder)] of the live entrypoints on this machine started with ``--run-id RUN_ID``, whichever
    ``$TMPDIR`` each has (``_own_root``: None where its environment cannot be read)."""
    found = []
    needle = f"{run_id}\0".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle not in cmdline:
            continue
        words = [w.decode("utf-8", "replace") for w in cmdline.split(b"\0")[:-1]]
        if entrypoint_run_id(words) != run_id:
            continue
        stat = proc_stat(int(name))
        if stat is not None and stat[0] != "Z":
            found.append((int(name), _own_root(name), stat[3]))
    return found


# an entrypoint given one of these answers and ends, or holds: not a job run as the node's main command
NOT_A_MAIN_RUN = ("--node", "--explain", "--status", "--hold", "--run-id", "--help", "-h", "--version")


def main_runs(env):
    """[{"pid", "starttime", "main"}] of this node's entrypoints that run a job as the node's main command (run
    mode: a container's CMD, a process started by hand; no ``--run-id``, so no record ``--node stop`` reads) and
    share this ``$TMPDIR``: ``--node stop`` and ``status`` name them (walk15b B16: ``"stopped": []``, exit 0, read as
    a run that ended while the job went on). ``main``: it is the container's PID 1."""
    own, found = os.path.realpath(state_root(env)), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                words = [w.decode("utf-8", "replace") for w in f.read().split(b"\0")[:-1]]
        except OSError:
            continue
        options = entrypoint_options(words)
        if options is None or any(word.partition("=")[0] in NOT_A_MAIN_RUN for word in options) or \
                _holds(name, options):
            continue
        stat = proc_stat(int(name))
        if stat is not None and stat[0] != "Z" and _own_root(name) == own and not _entrypoint_parent(stat[1]):
            found.append({"pid": int(name), "starttime": stat[3], "main": int(name) == 1})
    return found


def _holds(pid, options):
    """Whether the entrypoint ``pid`` (its ``options``) was started in hold mode: ``--mode hold`` among its options,
    else ``NODEWEAVE_MODE=hold`` in its own environment (compose's ``up --hold`` starts PID 1 so; walk16a A3: the
    holding PID 1 was named a job run as the node's main command, and ``stop`` refused a node that held)."""
    for at, word in enumerate(options):
        if word == "--mode" and at + 1 < len(options):
            return options[at + 1] == "hold"
        if word.startswith("--mode="):
            return word.partition("=")[2] == "hold"
    try:
        with open("/proc/{}/environ".format(pid), "rb") as f:
            return b"NODEWEAVE_MODE=hold" in f.read().split(b"\0")
    except OSError:
        return False


def _entrypoint_parent(pid):
    """Whether ``pid`` is an entrypoint itself (a launcher's child named like one is not the node's main run)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = [w.decode("utf-8", "replace") for w in f.read().split(b"\0")[:-1]]
    except OSError:
        return False
    return entrypoint_options(words) is not None


def unrecorded_runs(run_id, recorded, env):
    """Entrypoints of this node started with ``--run-id RUN_ID`` that have not written their record yet (just
    exec'd). This node's only: an entrypoint whose ``$TMPDIR/nodeweave`` is another folder is another node's, even
    on this machine with the same run id (walk10 B9: node 1's ``--node stop --run ID`` SIGKILLed node 0, which
    `nodeweave run` had started beside it with a TMPDIR of its own)."""
    own = os.path.realpath(state_root(env))
    return [{"run_id": run_id, "pid": pid, "starttime": started, "state": "starting"}
            for pid, root, started in run_entrypoints(run_id, recorded) if root == own]


def still_in_progress(what, record, then):
    """The one refusal of a second start over a live record of the same kind (a run, a hold): exit 6, naming the
    live one's pid and since when, before anything is planned or written (walk9 B17, B29: each overwrote the live
    record, and `nodeweave status` read a busy node as idle). ``then``: what to do, after the colon."""
    started = record.get("started")
    since = time.strftime("%H:%M:%S", time.gmtime(started)) if isinstance(started, (int, float)) else "?"
    return EntrypointError(f"{what} is still in progress on this node (pid {record.get('pid')}, since {since} UTC)"
                           f"{then}", EXIT_BUSY)


def refuse_second_run(settings):
    """One ``nodeweave run`` per node at a time: a live run of the same id is refused as any other is (walk9 B17:
    a second start of a live run's id was taken, rewrote its record, and ``--node status`` then called the node
    idle while the first trained). Only this very process's record (none yet at the start) is not another's."""
    run_id = settings.get("run_id")
    # a live run of this very id is another node of the same run where nodes share one $TMPDIR (bare hosts that are
    # one machine, nodes as processes): taken, as before walk9 B17 (its refusal stopped those jobs' later nodes)
    others = [r for r in live_runs(settings.env) if r.get("pid") != os.getpid() and r.get("run_id") != run_id]
    if others:
        other = others[0]
        raise still_in_progress(f"run {other.get('run_id')}", other,
                                f": {stop_run_hint(other.get('run_id'), other.get('pid'))} ends it")


def held_by_another(path):
    """The run record at ``path`` is a live process's other than this one: never overwritten. A second start of a
    live run's id (another node of the run sharing this $TMPDIR, or a retried exec of the same node) keeps no record
    of its own: a refused repeat rewrote the live run's record with its own pid, so the node read as idle and the
    guard against a second run went off while the first still trained (walk11b B6)."""
    record = read_record(path)
    return bool(record) and record.get("pid") != os.getpid() and alive(record.get("pid", -1), record.get("starttime"))


def begin_run(settings):
    """First thing in a recorded run: refuse a second one, lead a process group, record this process.

    Recorded before the plan and the wait for the master, so ``nodeweave stop``
    finds a run that has not launched yet (a worker still waiting for a master
    that was stopped would otherwise wait out its whole timeout).
    """
    refuse_second_run(settings)
    try:
        os.setpgid(0, 0)  # the run's processes are this group and the groups below it
    except OSError:
        pass  # already a session leader (its group is its pid)
    run_id = settings.get("run_id")
    path = os.path.join(run_dir(settings.env, run_id), "run.json")
    if held_by_another(path):
        return  # its record stays (walk11b B6); `--node stop --run ID` finds this process by its command line
    write_json(path, {
        "schema": RUN_SCHEMA, "run_id": run_id, "pid": os.getpid(), "starttime": proc_stat(os.getpid())[3],
        "started": time.time(), "state": "starting", "command": list(settings.command)})


def record_run(settings, plan):
    """Just before the launch: the run's plan, and its record completed."""
    from ..explain import render_json

    folder = run_dir(settings.env, settings.get("run_id"))
    if held_by_another(os.path.join(folder, "run.json")):
        return  # the live run's record and plan stay its own (walk11b B6)
    with open(os.path.join(folder, "plan.json"), "w") as f:
        f.write(render_json(plan))
    record = read_record(os.path.join(folder, "run.json")) or {}
    topo = plan.topology
    record.update(state="launched", launched=time.time(), node_rank=topo.node_rank.value, nnodes=topo.nnodes.value,
                  launcher=plan.launch.launcher, argv=plan.launch.argv, hostname=plan.node.hostname)
    write_json(os.path.join(folder, "run.json"), record)


# --- stopping ----------------------------------------------------------------------------------------

def _protected():
    """Process groups never signalled: this process's own and PID 1's (the container's init)."""
    groups = {os.getpgrp()}
    init = proc_stat(1)
    if init is not None:
        groups.add(init[2])
    return groups


def _signal(members, table, sig, protected):
    """``sig`` to the run's root first, then to each process group from the top of the tree down: a worker
    that dies first would let its launcher end 0 before the entrypoint heard the stop, so the run would read
    as finished, not stopped."""
    root = members[0] if members else None
    if root and root[0] not in (os.getpid(), 1) and alive(*root):
        try:
            os.kill(root[0], sig)
        except OSError:
            pass
    groups = []
    for pid, _ in members:
        group = table[pid][2] if pid in table else None
        if group is not None and group not in protected and group not in groups:
            groups.append(group)
    for group in groups:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    for pid, start in members:
        if pid != os.getpid() and pid != 1 and alive(pid, start):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def stop_runs(runs, grace, poll=0.1, env=None):
    """SIGTERM every process of ``runs``, SIGKILL what is left after ``grace`` s; a report per run. Each run's
    folder is marked first (:data:`STOP_ASKED`, with ``env``): a node 0 under recovery reads its SIGTERM as a
    person ending the job, which ends on every node, not as an eviction the others wait out (walk10 B3). Two
    entries may share a run id (a recorded entrypoint and another of the same id that keeps no record): each is
    its own."""
    import signal

    for run in runs if env is not None else ():
        try:
            write_json(os.path.join(run_dir(env, run["run_id"]), STOP_ASKED), {"at": time.time(), "pid": run["pid"]})
        except OSError:
            pass  # unmarked: node 0 under recovery then waits for itself as after an eviction
    protected = _protected()
    started = time.monotonic()
    table = process_table()
    members = [descendants(r["pid"], table) for r in runs]
    for ms in members:
        _signal(ms, table, signal.SIGTERM, protected)
    killed = set()
    while True:
        table = process_table()
        for at, run in enumerate(runs):  # a process started after the snapshot is stopped too
            extra = [m for m in descendants(run["pid"], table) if m not in members[at]]
            members[at] += extra
            if extra:
                _signal(extra, table, signal.SIGTERM, protected)
        left = [[m for m in ms if alive(*m)] for ms in members]
        if not any(left) or time.monotonic() - started > grace + 5:
            break
        if time.monotonic() - started > grace:
            for at, ms in enumerate(left):
                if ms and at not in killed:
                    killed.add(at)
                    _signal(ms, table, signal.SIGKILL, protected)
        time.sleep(poll)
    took = round(time.monotonic() - started, 2)
    return [{"run_id": r["run_id"], "processes": len(members[at]), "killed": at in killed,
             "left": [pid for pid, _ in left[at]], "seconds": took} for at, r in enumerate(runs)]
