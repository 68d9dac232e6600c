"""``--explain``'s Faults section: what this node will do when something goes wrong, each with its source.

Why: ``--explain`` is where a user checks a node before a long run, and it showed the topology's sources but
nothing of recovery, the stall watch or the metrics port (walk 4, F2/F24): a recovery job whose checkpoint folder
was mistyped, or whose ``stall_warn 0`` had silently taken the stall timeout with it, looked like any other.
Each row is ``{"value", "source", "meaning"}`` like the Topology rows; ``source`` is ``default``, ``flag --x`` or
the variable. Stdlib only, like the whole entrypoint.
"""

import os

from .planning.contract import METRICS_PORT, RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, STALL_TIMEOUT_S, STALL_WARN_S
from .planning.shared_rules import RANK_SERIES_OFF


def _row(settings, key, value, meaning, source=None):
    """One setting's row: the value the job uses and where it came from. A flag or variable is credited only with
    the value it gave: a row whose value is not that one says the given one went unused (walk7 B1: the straggler
    count showed 10 "<- NODEWEAVE_STRAGGLER_FAULT" when the variable said 0)."""
    source = source or settings.source(key)
    given = settings.options.get(key)
    if given is not None and source == given.source and not _shows(value, given.value):
        source = f"default ({given.source} {given.value} not used)"
    return key, {"value": value, "source": source, "meaning": meaning}


def _shows(value, given):
    """Whether a row's ``value`` is the ``given`` one (a switch is shown as on/off)."""
    return value == given or (isinstance(given, bool) and value == _switch(given))


def _switch(value):
    return "on" if value else "off"


def _resume_from(settings, folder, job=None):
    """(which checkpoint node 0 would hand out now, in words; the same as data, or None) -- a live node only: a
    captured tree has no folder. The data is what a pre-flight script reads from ``--explain --json`` (walk7 B28:
    it was only inside the prose): ``{"folder", "newest_complete", "step", "layout", "passed_over": [{"path",
    "why"}], "before_job": {"saves", "up_to_step", "newest_saved", "cut_off"} | None, "resume_from"}``:
    ``before_job``'s ``up_to_step`` is the newest complete save's, ``cut_off`` the newer saves cut off;
    ``newest_complete`` is the newest complete save there, ``resume_from`` what a fault would hand out (None while every save there
    is from before the job: walk8 B9)."""
    if settings.sysroot not in ("/", "", None):
        return "not looked at (a captured tree, --sysroot)", None
    path = folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)
    scan = {"folder": path, "newest_complete": None, "step": None, "layout": None, "passed_over": [],
            "before_job": None}
    if os.path.lexists(path) and not os.path.isdir(path):
        from .bounded import what_is_there

        return (f"{path} is {what_is_there(path)}, not a folder: node 0 finds no checkpoint in it, and the script cannot save "
                "there"), scan
    if not os.path.isdir(path):
        return f"{path} is not there yet: generation 0 starts from scratch", scan
    from .recovery.checkpoints import already_saved
    from .recovery.setup import earlier_saves, grouped, newest_checkpoint

    passed, kept = [], []
    found, step, _ = newest_checkpoint(path, lambda line: None, passed_over=passed, found_out=kept)
    scan.update(newest_complete=found, step=step, layout=kept[0].layout if kept else None,
                passed_over=[{"path": os.path.relpath(where, path), "why": why} for where, why in passed])
    # what was set aside, and why, so "none complete" can be trusted and a save fixed before the first fault
    aside = "; ".join(grouped(passed, lambda where: os.path.relpath(where, path)))
    aside = f"; passed over: {aside}" if aside else ""
    # a job starting now wrote none of them: how the finder judges them, then that none is handed out (B30)
    earlier = already_saved(path)
    if earlier is not None:
        scan["before_job"] = {"saves": earlier.count, "up_to_step": earlier.step,
                              "newest_saved": round(earlier.newest, 3),
                              "cut_off": [os.path.relpath(where, path) for where, _ in earlier.cut_off]}
    scan["resume_from"] = None if earlier is not None else found  # what a fault would resume from: none of those
    own = _running_own(path, job, found, step, earlier, scan)
    if own is not None:  # walk16b B8: the running job's own saves are no other run's
        return own + aside, scan
    earlier = f"; but {earlier_saves(path, earlier)}" if earlier is not None else ""
    if found is None:
        return f"none complete in {path} yet: the next generation starts from scratch{aside}{earlier}", scan
    if scan["before_job"] is not None:  # walk8 B9: "now: X" read as what a fault resumes from, and X never is
        newest = f"{found}" + (f" (step {step})" if step is not None else "")
        return (f"nothing this job saved yet ({newest}, the newest complete save there, is from before this job: "
                f"never handed out){aside}{earlier}"), scan
    return f"{found}" + (f" (step {step})" if step is not None else "") + aside + earlier, scan


def _running_own(path, job, found, step, earlier, scan):
    """While ``job`` itself runs now (its node 0's claim on the folder: ``running.claim.running``), what a fault
    resumes from: its newest complete save when written after its node 0 started (node 0's clock against the
    storage's), else none yet; None when the job does not run now or the folder holds no save."""
    from .running.claim import running, runs_now

    held = running(path, job) if job and earlier is not None else None
    if held is None or not isinstance(held.get("since"), (int, float)):
        return None
    from .recovery.checkpoints import newest_written

    head = runs_now(held)
    if found is not None and newest_written(found) > held["since"]:
        scan.update(resume_from=found, before_job=None, running=True)
        return (f"{head}; {found}" + (f" (step {step})" if step is not None else "") + ", the newest complete save "
                "there, is its own: a fault now resumes from it")
    scan["running"] = True
    return f"{head} and has saved nothing complete here yet: a fault now restarts the script from scratch"


def _training_nodes(settings, topo):
    """(fewest, most, as given, source) of the training nodes: the count as given (``planning.job_size.job_size``:
    the shown topology is generation 0's, without the minimum), else the topology's; None when unknown."""
    from .errors import EntrypointError
    from .planning.job_size import job_size

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
    now, scan = _resume_from(settings, folder, plan.topology and plan.topology.job_id) if folder else (None, None)
    key, row = _row(settings, "checkpoint_dir", folder or "-",
                    "node 0 hands the newest complete checkpoint this job saved to the ranks as "
                    f"NODEWEAVE_RESUME_FROM (never one from before the job started); now: {now}" if folder else
                    "none: every generation starts the script from scratch (no NODEWEAVE_RESUME_FROM)")
    if scan is not None:
        row["scan"] = scan  # the same, as data: --explain --json
    rows.append((key, row))
    restarts = settings.get("recovery_max_restarts", RECOVERY_RESTARTS)
    rows.append(_row(settings, "recovery_max_restarts", restarts, f"restarts of the whole job before exit 8"))
    brake = settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS)
    rows.append(_row(settings, "no_progress_restarts", brake, "never acts: the restart budget of "
                     f"{restarts} ends the job (exit 8) first" if brake and restarts and brake > restarts else
                     "generations in a row without a newer checkpoint before exit 9" if brake else
                     "never: generations without progress go on to the restart budget"))
    warm = settings.get("warm_start", True)
    rows.append(_row(settings, "warm_start", _switch(warm), "spares and left-out nodes hold their next launcher "
                     "started, its imports done" if warm else "each relaunch starts the launcher cold"))
    return rows


UNWATCHED = ("not watched: the command is exec'd in the entrypoint's place and starts no ranks nodeweave can see "
             "(stalls.md: only torchrun, deepspeed, accelerate, python -m torch.distributed.run, or a command with "
             "RANK and LOCAL_RANK set, runs as a watched child)")


def unwatched_command(settings, plan):
    """Whether the launch is a ``command`` the entrypoint execs unwatched (``stall.local.watched``: the one rule the
    start follows), so no stall row applies (walk7 B31: the plan promised a stall report and stop that cannot
    happen)."""
    launch = plan.launch
    if launch is None or launch.launcher != "command":
        return False
    from .stall.local import watched

    return not watched(plan, settings) and not (plan.exchange or {}).get("heartbeat")


def _stall_rows(settings, recovery, plan=None):
    from .stall.setup import fault_checks

    warn = settings.get("stall_warn", STALL_WARN_S)
    if plan is not None and warn and unwatched_command(settings, plan):
        return [_row(settings, "stall_warn", warn, UNWATCHED)] + [
            _row(settings, key, value, "not watched: the command is exec'd (stall_warn's row says why)")
            for key, value in (("stall_timeout", settings.get("stall_timeout", STALL_TIMEOUT_S)),
                               ("straggler_fault", fault_checks(settings)))]
    timeout = settings.get("stall_timeout", STALL_TIMEOUT_S)
    rows = [_row(settings, "stall_warn", warn, f"a stall is reported after {warn} s" if warn else
                 "the stall watch is off: no stall report, no stall stop, no straggler named; " + RANK_SERIES_OFF)]
    if not warn:
        stop = "not applied: the stall watch is off (stall_warn 0)"
    elif not timeout:
        stop = "never: a stalled job runs on until someone stops it"
    else:
        from .errors import EXIT_STALLED, fault_comes_to

        stop = fault_comes_to(f"{timeout} s of a stall", EXIT_STALLED, recovery) + (
            "; a longer wait the script allows (its init_process_group timeout, a long save) is stopped as a "
            "stall too: raise stall_timeout to match")
    rows.append(_row(settings, "stall_timeout", timeout, stop))
    exchange_off = _exchange_switched_off(settings)
    checks = fault_checks(settings) if warn and not exchange_off else 0
    acts = recovery and settings.get("straggler_is_fault")
    source = settings.source("straggler_fault")
    if source == "default" and acts:
        source = settings.source("straggler_is_fault")
    never = (f"never: the check-in exchange is off ({exchange_off}), and node 0 names a straggler fault over its "
             "heartbeat" if exchange_off else "never: a straggler is reported, never a fault")
    rows.append(_row(settings, "straggler_fault", checks,
                     (f"a straggler named {checks} checks in a row is a STRAGGLER FAULT; " +
                      ("recovery replaces its node" if acts else "reported only: recovery does not act on it "
                       "(straggler_is_fault off)")) if checks else never, source))
    return rows


def _exchange_switched_off(settings):
    """Why the settings switch the check-in exchange off, by the rule that refuses its settings then
    (``shared_rules.switch_off``), or None. A flag turning it off over a container's NODEWEAVE_STRAGGLER_FAULT
    leaves that variable be; its row then says it is not used (walk14b B3)."""
    from .planning.shared_rules import Naming, switch_off

    values = {key: value.value for key, value in settings.options.items()}
    values["no_wait"] = "--no-wait" if settings.no_wait else None
    off = switch_off(values, "exchange", Naming(lambda key: _source_name(settings, key)))
    return off[0] if off else None


def _source_name(settings, key):
    source = settings.source(key)
    return source[len("flag "):] if source.startswith("flag ") else source


def metrics_unserved(exchange):
    """Why node 0 serves no /metrics whatever the metrics switch says, or None: the endpoint starts on node 0's
    heartbeat watch (``metrics.hub_watch``), and there is none with the check-in exchange off (a single node, the
    exchange switched off) or for a plain command, which is exec'd (docs/observability.md)."""
    if exchange is None:
        return None  # not planned (a partial plan): nothing known to say
    from .planning.shared_rules import metrics_unserved as unserved

    return unserved(None if exchange.get("enabled") else exchange.get("why"), exchange.get("heartbeat", False))


def fault_rows(settings, plan):
    """The Faults section: {key: {"value", "source", "meaning"}} in the order ``--explain`` prints them."""
    recovery = bool(settings.get("recovery"))
    exchange = plan.exchange or {}
    from .planning.launch import elastic_ends_at_first_loss

    elastic = plan.topology is not None and plan.topology.elastic and not recovery
    if recovery:
        ends = "a fault starts a new generation of the job (docs/recovery.md)"
    elif elastic:  # walk10 B20: the heartbeat stops no node here; the launcher's rendezvous decides
        launcher = plan.launch.launcher if plan.launch is not None else None
        ends = (elastic_ends_at_first_loss(settings, plan.topology, launcher) or
                f"a lost node: {launcher or 'the launcher'}'s rendezvous decides what follows (max restarts "
                f"{settings.get('max_restarts') or 0}: it re-forms the job at {plan.topology.nnodes_min} or more "
                "nodes, up to that many times)")
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
    rows += _stall_rows(settings, recovery, plan)
    from .model import WATCHED_CHILD

    if plan.launch is not None and plan.launch.launcher == "command" and settings.get("stall_warn", STALL_WARN_S) \
            and not unwatched_command(settings, plan) and WATCHED_CHILD not in plan.launch.notes:
        plan.launch.notes.append(WATCHED_CHILD)  # explain's verb: run, not exec (as loop.Start.go does)
    restarts = settings.get("max_restarts")
    if restarts:  # under recovery the count is dropped from the launch (the warning says so too: walk11b B1)
        from .planning.launch import DROPPED_UNDER_RECOVERY

        rows.append(_row(settings, "max_restarts", restarts, "not passed to the launcher under recovery: "
                         f"{DROPPED_UNDER_RECOVERY}" if recovery else f"the launcher restarts this node's "
                         f"workers up to {restarts} time(s) before it fails"))
    metrics = settings.get("metrics", True)
    port = settings.get("metrics_port", METRICS_PORT)
    master = plan.topology is None or plan.topology.is_master
    unserved = metrics and metrics_unserved(plan.exchange)
    if unserved:  # on, but nothing to serve them from (walk6 W44/W45): said, not promised
        rows.append(_row(settings, "metrics", "off", f"{unserved}: no /metrics, no /status.json (nodeweave top "
                         "and Prometheus have nothing to read)", f"{settings.source('metrics')}, but"))
        return dict(rows + [_step_pattern_row(settings)])
    rows.append(_row(settings, "metrics", _switch(metrics), "off: no /metrics, no /status.json (nodeweave top "
                     "has nothing to read)" if not metrics else
                     f"node 0 serves /metrics and /status.json on port {port}" +
                     ("" if master else " (not this node)")))
    if metrics:
        rows.append(_row(settings, "metrics_port", port, f"nodeweave top and Prometheus read node 0 at :{port}"))
    return dict(rows + [_step_pattern_row(settings)])


def _step_pattern_row(settings):
    """Where node 0 reads the step from (the goodput timeline, top's step, recovery's progress), with metrics off
    too: a pattern the user set, or inherited, is seen before the job (walk8 B16)."""
    pattern = settings.get("step_pattern")
    return _row(settings, "step_pattern", pattern or "-",
                "node 0 reads the step from the lines it matches first, then the common loggers' formats" if pattern
                else "the common loggers' formats (TorchTitan, DeepSpeed, Megatron-LM, Lightning, tqdm, Hugging Face "
                "saves, `step N loss`)")
