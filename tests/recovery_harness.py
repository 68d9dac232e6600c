"""Recovery's simulated nodes: real ``nodeweave-entrypoint`` processes on loopback (benchmarks/stall_nodes.py's),
``nodes`` training plus ``spares``, all on this one machine (``one_machine_env``), each with its own TMPDIR and
``NODEWEAVE_TEST_NODE`` (the node the workload's faults aim at), running tests/e2e/workspace/resumable.py with
checkpoints in a shared folder."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from one_machine import one_machine_env  # noqa: E402
from stall_nodes import ENTRY, ROOT, Node, free_port_pair, stop  # noqa: E402,F401

WORKLOAD = Path(__file__).resolve().parent / "e2e" / "workspace" / "resumable.py"


def start(tmp_path, args, nodes=2, spares=0, env=None, launcher="torchrun", per_node=None, entry=ENTRY):
    """``nodes`` + ``spares`` entrypoints (``entry``: the argv that starts one) with recovery on; node i has
    TMPDIR tmp_path/n<i>."""
    shutil.copy(WORKLOAD, tmp_path / "resumable.py")
    port = free_port_pair()
    started = []
    for rank in range(nodes + spares):
        node_env = one_machine_env({
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p),
            "HOME": str(tmp_path), "TMPDIR": str(tmp_path / f"n{rank}"), "OMP_NUM_THREADS": "1",
            "NODEWEAVE_WAIT_TIMEOUT": "90", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": str(spares),
            "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "checkpoints"), "NODEWEAVE_TEST_NODE": str(rank),
            "NODEWEAVE_NNODES": str(nodes), "NODEWEAVE_STALL_WARN": "0",
            **(env or {}), **((per_node or {}).get(rank, {}))})
        os.makedirs(node_env["TMPDIR"], exist_ok=True)
        argv = [*entry, "--launcher", launcher, "--node-rank", str(rank), "--nproc-per-node", "1",
                "--master-addr", "127.0.0.1", "--master-port", str(port), "--",
                "resumable.py", "--ckpt", str(tmp_path / "checkpoints"), *args]
        started.append(_spawn(argv, node_env, tmp_path))
    return started


def _spawn(argv, env, cwd):
    node = Node(subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    node.how = (argv, env, cwd)
    return node


def again(node):
    """The same node started again (its container restarted): a new process with the same command and variables."""
    return _spawn(*node.how)


def finish(nodes, limit=240):
    """Every node's exit code (killing what is left after ``limit`` seconds)."""
    try:
        return [node.wait(limit) for node in nodes]
    finally:
        stop(nodes)


def steps(node):
    """[(generation, step, world)] of the RECOVERY-STEP lines rank 0 printed on ``node``."""
    found = re.finditer(r"RECOVERY-STEP gen=(\d+) step=(\d+) world=(\d+)", node.text("out"))
    return [tuple(int(x) for x in m.groups()) for m in found]


def wait_for_step(node, step, limit=120):
    """Until rank 0 on ``node`` printed step ``step`` or later; fails naming the node's output after ``limit`` s."""
    import time

    until = time.monotonic() + limit
    while time.monotonic() < until:
        if any(s[1] >= step for s in steps(node)):
            return
        time.sleep(0.2)
    raise AssertionError(f"no step {step} within {limit}s:\n{node.text()}")


def resumed(nodes):
    """[(generation, path, step)] of every RECOVERY-RESUME line, on whichever node printed it."""
    found = []
    for node in nodes:
        for m in re.finditer(r"RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", node.text("out")):
            found.append((int(m.group(1)), m.group(2), int(m.group(3))))
    return sorted(found)


def done(nodes):
    return [m.group(0) for node in nodes for m in re.finditer(r"RECOVERY-DONE gen=\d+ step=\d+ state=\S+",
                                                                 node.text("out"))]


# -- the duplicate-rank start-up: a node started again while its job trains ----------------------------------------

def held_lines(folder):
    """Lines of a training script for the place its ranks should wait at: each rank marks its node up (a file in
    ``folder/up`` named by torchrun's GROUP_RANK, the node's rank; else the process's own pid), prints ``rank up``
    and waits until the test creates ``folder/release`` (at most 300 s). A
    test acts while every rank is up and held, however slowly a loaded machine started them, and no rank's work
    runs out first."""
    up, release = folder / "up", folder / "release"
    up.mkdir(exist_ok=True)
    return (f"import os as _os, time as _time\n"
            f"open(_os.path.join({str(up)!r}, 'up-%s' % _os.environ.get('GROUP_RANK', _os.getpid())), 'w').close()\n"
            f"print('rank up', flush=True)\n"
            f"_until = _time.monotonic() + 300\n"
            f"while not _os.path.exists({str(release)!r}) and _time.monotonic() < _until:\n"
            f"    _time.sleep(0.1)\n")


class LocalJob:
    """One job's ``nodeweave-entrypoint`` processes on loopback, node ``name`` in its own TMPDIR
    ``tmp_path/<name>``, running ``script`` (by default one that only holds: ``held_lines``) from ``tmp_path``."""

    def __init__(self, tmp_path, job_id, env=None, script=None, nnodes=2):
        from free_ports import free_port_pair

        from cli_run import home_beside

        self.tmp_path, self.nnodes = tmp_path, nnodes
        (tmp_path / "sl.py").write_text(script if script is not None else held_lines(tmp_path))
        self.env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": home_beside(tmp_path),
                    "NODEWEAVE_NNODES": str(nnodes), "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": job_id,
                    "NODEWEAVE_WAIT_TIMEOUT": "60", "NODEWEAVE_MASTER_PORT": str(free_port_pair()),
                    "NODEWEAVE_METRICS": "off", **(env or {})}

    def node(self, rank, name):
        """Node ``rank`` started (its output, stderr too, on a pipe)."""
        from cli_run import ENTRYPOINT, popen

        (self.tmp_path / name).mkdir(exist_ok=True)
        return popen([*ENTRYPOINT, "--", "sl.py"], cwd=self.tmp_path, stdout=-1, stderr=-2,
                     env=dict(self.env, NODE_RANK=str(rank), TMPDIR=str(self.tmp_path / name)))

    def wait_training(self, procs, limit=120):
        """Until every training rank of the job is up and held (``wait_up``)."""
        wait_up(self.tmp_path, self.nnodes, procs, limit)

    def release(self):
        """Every held rank goes on (and ends)."""
        release(self.tmp_path)


def wait_up(folder, count, procs, limit=120):
    """Until ``count`` nodes' ranks marked themselves up (``held_lines(folder)``): every node checked in and launched;
    fails naming what each of ``procs`` said after ``limit`` s, or as soon as one of them ended."""
    import time

    until = time.monotonic() + limit
    while len(list((folder / "up").glob("up-*"))) < count:
        if any(proc.poll() is not None for proc in procs) or time.monotonic() > until:
            release(folder)
            outs = [proc.communicate(timeout=60)[0] for proc in procs]
            raise AssertionError(f"{count} ranks were not up within {limit}s (exit codes "
                                 f"{[proc.returncode for proc in procs]}):\n" + "\n".join(map(str, outs)))
        time.sleep(0.2)


def release(folder):
    """Every rank held by ``held_lines(folder)`` goes on."""
    (folder / "release").touch()


def start_twice(tmp_path, job_id, rank=1, nodes=2, env=None, script=None):
    """The duplicate-rank start-up: ``nodes`` entrypoints of one job (training ranks held, ``held_lines``), node
    ``rank`` started again once every training rank is up, and the held ranks released once the second start has
    ended. Returns (the second start, its output, the first ones, their outputs)."""
    job = LocalJob(tmp_path, job_id, env=env, script=script)
    first = [job.node(n, f"t{n}") for n in range(nodes)]
    again = out = None
    try:
        job.wait_training(first)
        again = job.node(rank, f"t{rank}b")
        out = again.communicate(timeout=120)[0]
    finally:
        if again is not None and again.poll() is None:
            again.kill()
        job.release()
        outs = [proc.communicate(timeout=120)[0] for proc in first]
    return again, out, first, outs


def heard_until(stream, text, limit=120):
    """The lines read off ``stream`` (a process's text pipe) up to and with the first holding ``text``: a test
    acts once the process has said it reached that point, however slowly it started. Fails after ``limit`` s or
    at the stream's end, naming what was heard."""
    import queue
    import threading

    lines = queue.Queue()

    def read():
        for line in stream:
            lines.put(line)
            if text in line:
                break
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    heard = []
    while True:
        try:
            line = lines.get(timeout=limit)
        except queue.Empty:
            raise AssertionError(f"no line holding {text!r} within {limit}s:\n{''.join(heard)}") from None
        if line is None:
            raise AssertionError(f"the stream ended before a line holding {text!r}:\n{''.join(heard)}")
        heard.append(line)
        if text in line:
            return "".join(heard)
