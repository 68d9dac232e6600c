"""Switch the stall watch on for one supervised launch: the ranks' folder, their PYTHONPATH, the watch.

The ranks' folder is per job and per node (``$TMPDIR/nodeweave/ranks/<job id>-<master port>/node-<i>``):
two nodes of one job on one host sharing a TMPDIR (bare hosts, simulated nodes) never read each other's
records, stacks or flight dumps, and another job's launch never clears them.
"""

import os

from ..planning.contract import FAULT_CHECKS, STALL_TIMEOUT_S, STALL_WARN_S

HOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rankhook")
FOLDER_VARIABLE = "NODEWEAVE_RANKWATCH_DIR"
FLIGHT_ENTRIES = "2000"  # torch's recorder ring per process group (TorchTitan's choice): a few hundred KiB
FLIGHT_SIZES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")


def flight_recorder(environ, folder):
    """torch's flight recorder on for the ranks, unless the user set its size (``0`` turns it off); NCCL's own
    dump on a watchdog timeout lands in the ranks' folder too."""
    if any(environ.get(name) for name in FLIGHT_SIZES):
        return environ
    environ = dict(environ, TORCH_FR_BUFFER_SIZE=FLIGHT_ENTRIES)  # the older name draws a deprecation warning
    environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
    environ.setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", os.path.join(folder, "nccl-trace-rank-"))
    return environ


TIMING = "TORCH_NCCL_ENABLE_TIMING"


def device_timing(environ, gpus):
    """NCCL's per-collective device timing on for the ranks of a node with GPUs (NCCL and RCCL read it, gloo
    does not) while the flight recorder is on, so its entries carry ``duration_ms``; a user's own value,
    ``0`` included, is kept."""
    if not gpus or TIMING in environ:
        return environ
    from .rankhook.nodeweave_flight import enabled  # json, threading: only a node with GPUs pays for them

    if not enabled(environ):
        return environ
    return dict(environ, **{TIMING: "1"})




def fault_checks(settings):
    """Checks in a row that make a named straggler a fault: ``NODEWEAVE_STRAGGLER_FAULT`` when set, else
    :data:`FAULT_CHECKS` when the recovery engine's switch ``recovery.straggler_is_fault``
    (``NODEWEAVE_STRAGGLER_IS_FAULT``, a row of the recovery branch's contract) is on, else 0: never."""
    checks = settings.get("straggler_fault") or 0
    if not checks and settings.get("straggler_is_fault"):
        checks = FAULT_CHECKS
    return checks


def rank_folder_path(root, job_id, master_port, node):
    """``<root>/ranks/<job id>-<master port>/node-<node>``; the job id made safe as one path component."""
    from ..running.runstate import job_key

    return os.path.join(root, "ranks", job_key(job_id, master_port), f"node-{node}")


def attach(watch, plan, settings, environ, log, alone=None, identity=None):
    """The launcher's environment with the hook on PYTHONPATH, the ranks watched through ``watch.use_stall``
    (``surface.WatchSurface``). Unchanged when off. ``alone``: why this node sees only its own ranks in a job of
    several nodes (``local.py``), or None. ``identity`` (recovery's generations): the node's own index, which
    names its ranks' folder and its files, so a node's folder is never named by another node's index (walk12 B3:
    node 1 training as rank 2 kept ``node-2/``, and node 3's disk held a ``node-1/``)."""
    warn = settings.get("stall_warn", STALL_WARN_S)
    if not warn or watch is None:
        return environ
    from ..running.runstate import run_dir, state_root
    from .ranks import RankFolder
    from .watcher import StallWatch

    env = settings.env
    topo = plan.topology
    owner = topo.node_rank.value if identity is None else identity
    path = rank_folder_path(state_root(env), topo.job_id, topo.master_port.value, owner)
    folder = RankFolder(path, topo.node_rank.value, plan.node.hostname,
                        env.get("POD_NAME") or plan.node.hostname, owner=owner)
    try:
        folder.prepare()
    except OSError as err:
        log(f"warning: stall watch off: cannot make {folder.path}: {err.strerror or err}")
        return environ
    environ = flight_recorder(dict(environ), folder.path)
    environ = device_timing(environ, getattr(getattr(plan.node, "gpus", None), "count", 0))
    environ[FOLDER_VARIABLE] = folder.path
    environ["PYTHONPATH"] = os.pathsep.join([HOOK] + ([environ["PYTHONPATH"]] if environ.get("PYTHONPATH") else []))
    run_id = settings.get("run_id")
    watch.use_stall(StallWatch(folder, warn, settings.get("stall_timeout", STALL_TIMEOUT_S), log,
                               run_dir(env, run_id) if run_id else None, fault_checks=fault_checks(settings),
                               alone=alone))
    return environ
