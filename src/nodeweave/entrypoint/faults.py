"""``--explain``'s Faults section: what this node will do when something goes wrong, each with its source.

Why: ``--explain`` is where a user checks a node before a long run, and it showed the topology's sources but
nothing of recovery, the stall watch or the metrics port (walk 4, F2/F24): a recovery job whose checkpoint folder
was mistyped, or whose ``stall_warn 0`` had silently taken the stall timeout with it, looked like any other.
Each row is ``{"value", "source", "meaning"}`` like the Topology rows; ``source`` is ``default``, ``flag --x`` or
the variable. Stdlib only, like the whole entrypoint.
"""

import os

from .planning.contract import METRICS_PORT, RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, STALL_TIMEOUT_S, STALL_WARN_S


def _row(settings, key, value, meaning, source=None):
    return key, {"value": value, "source": source or settings.source(key), "meaning": meaning}


def _switch(value):
    return "on" if value else "off"


def _resume_from(settings, folder):
    """Which checkpoint node 0 would hand out now, in words (a live node only: a captured tree has no folder)."""
    if settings.sysroot not in ("/", "", None):
        return "not looked at (a captured tree, --sysroot)"
    path = folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)
    if not os.path.isdir(path):
        return f"{path} is not there yet: generation 0 starts from scratch"
    from .recovery.setup import newest_checkpoint

    said = []
    found, step, _ = newest_checkpoint(path, said.append)
    if found is None:
        return f"none complete in {path} yet: the next generation starts from scratch" + (
            f" ({'; '.join(said)})" if said else "")
    return f"{found}" + (f" (step {step})" if step is not None else "")


def _training_nodes(settings, topo):
    """(fewest, most, as given, source) of the training nodes: the count as given (``recovery.setup.job_size``:
    the shown topology is generation 0's, without the minimum), else the topology's; None when unknown."""
    from .errors import EntrypointError
    from .recovery.setup import job_size

    flag = settings.flags.get("nnodes")
    if flag or settings.env.get("NODEWEAVE_NNODES"):
        try:
            low, high = job_size(settings)
        except EntrypointError:
            return None
        source = settings.flag_sources.get("nnodes") or "flag --nnodes" if flag else "NODEWEAVE_NNODES"
        return low, high, flag or settings.env["NODEWEAVE_NNODES"], source
    if topo is None:
        return None
    return topo.nnodes_min, topo.nnodes_max, topo.nnodes.value, topo.nnodes.source


def _recovery_rows(settings, plan):
    rows = []
    count = _training_nodes(settings, plan.topology)
    if count is not None:
        low, high, given, source = count
        text = f"{high} training nodes start" + (f"; recovery goes on with as few as {low}" if low != high else
                                                  "; recovery goes on only with all of them (no minimum below)")
        if low != high:
            text += (f" ({given} under recovery: each generation is a fixed-size job, not torchrun's elastic range; "
                     f"the spec's nodes: {high} with recovery.min_nodes: {low} renders it)")
        rows.append(_row(settings, "nodes", f"{low}:{high}" if low != high else high, text, source))
    spares = settings.get("spares", 0) or 0
    rows.append(_row(settings, "spares", spares, f"{spares} more node(s) check in and wait to replace a left-out "
                     "node" if spares else "none: a left-out node's place stays empty"))
    folder = settings.get("checkpoint_dir")
    rows.append(_row(settings, "checkpoint_dir", folder or "-",
                     "node 0 hands the newest complete checkpoint to the ranks as NODEWEAVE_RESUME_FROM; now: "
                     f"{_resume_from(settings, folder)}" if folder else
                     "none: every generation starts the script from scratch (no NODEWEAVE_RESUME_FROM)"))
    restarts = settings.get("recovery_max_restarts", RECOVERY_RESTARTS)
    rows.append(_row(settings, "recovery_max_restarts", restarts, f"restarts of the whole job before exit 8"))
    brake = settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS)
    rows.append(_row(settings, "no_progress_restarts", brake, "generations in a row without a newer checkpoint "
                     "before exit 9" if brake else "never: generations without progress go on to the restart budget"))
    warm = settings.get("warm_start", True)
    rows.append(_row(settings, "warm_start", _switch(warm), "spares and left-out nodes hold their next launcher "
                     "started, its imports done" if warm else "each relaunch starts the launcher cold"))
    return rows


def _stall_rows(settings, recovery):
    from .stall.setup import fault_checks

    warn = settings.get("stall_warn", STALL_WARN_S)
    timeout = settings.get("stall_timeout", STALL_TIMEOUT_S)
    rows = [_row(settings, "stall_warn", warn, f"a stall is reported after {warn} s" if warn else
                 "the stall watch is off: no stall report, no stall stop, no straggler named")]
    if not warn:
        stop = "not applied: the stall watch is off (stall_warn 0)"
    elif not timeout:
        stop = "never: a stalled job runs on until someone stops it"
    else:
        stop = f"every node stops with exit 7 after {timeout} s of a stall" + (
            ", a fault: recovery starts a new generation" if recovery else "")
    rows.append(_row(settings, "stall_timeout", timeout, stop))
    checks = fault_checks(settings) if warn else 0
    acts = recovery and settings.get("straggler_is_fault")
    source = settings.source("straggler_fault")
    if source == "default" and acts:
        source = settings.source("straggler_is_fault")
    rows.append(_row(settings, "straggler_fault", checks,
                     (f"a straggler named {checks} checks in a row is a STRAGGLER FAULT; " +
                      ("recovery replaces its node" if acts else "reported only: recovery does not act on it "
                       "(straggler_is_fault off)")) if checks else "never: a straggler is reported, never a fault",
                     source))
    return rows


def fault_rows(settings, plan):
    """The Faults section: {key: {"value", "source", "meaning"}} in the order ``--explain`` prints them."""
    recovery = bool(settings.get("recovery"))
    exchange = plan.exchange or {}
    if recovery:
        ends = "a fault starts a new generation of the job (docs/recovery.md)"
    elif exchange.get("enabled") and exchange.get("heartbeat"):
        ends = "a fault ends the job: the heartbeat stops every node (exit 5)"
    elif plan.topology is not None and plan.topology.nnodes_max > 1:
        ends = (f"a fault ends this node's launcher only: the check-in exchange is off "
                f"({exchange.get('why') or 'no heartbeat for a plain command'}), so no heartbeat stops the other nodes")
    else:
        ends = "a fault ends the job (one node)"
    rows = [_row(settings, "recovery", _switch(recovery), ends)]
    if recovery:
        rows += _recovery_rows(settings, plan)
    rows += _stall_rows(settings, recovery)
    restarts = settings.get("max_restarts")
    if restarts:
        rows.append(_row(settings, "max_restarts", restarts, f"the launcher restarts this node's workers up to "
                         f"{restarts} time(s) before it fails"))
    metrics = settings.get("metrics", True)
    port = settings.get("metrics_port", METRICS_PORT)
    master = plan.topology is None or plan.topology.is_master
    rows.append(_row(settings, "metrics", _switch(metrics), "off: no /metrics, no /status.json (nodeweave top "
                     "has nothing to read)" if not metrics else
                     f"node 0 serves /metrics and /status.json on port {port}" +
                     ("" if master else " (not this node)")))
    if metrics:
        rows.append(_row(settings, "metrics_port", port, f"nodeweave top and Prometheus read node 0 at :{port}"))
    return dict(rows)
