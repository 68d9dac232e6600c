"""detect → discover → plan_env / plan_launch → Plan: the entrypoint without side effects."""

import os

from .detection.host import in_container
from .detection.kube import read_kube, statefulset_replicas
from .detection.net import default_route, read_routes
from .detection.node import detect, detect_with, locate_master  # detect: the package's own name for it
from .planning.exchange_plan import plan_exchange
from .planning.consistency import check_loopback_master, check_machine, check_reachable_sockets
from .errors import EntrypointError
from .planning.launch import exports, launcher_exports, plan_launch
from .model import Node, Plan
from .planning.policy import plan_env
from .planning.settings import parse
from .detection.sysfs import Root
from .planning.topology import ReplicasWanted, discover


def build_plan(settings, partial=False, audit=False):
    """The :class:`Plan` for parsed settings. With ``partial``, errors are recorded, not raised.

    ``audit`` (doctor) lets the rules judge the node on its own, beyond this launch.
    """
    root = Root(settings.sysroot)
    env = settings.env
    plan = Plan(mode=settings.get("mode") or "run")
    routes = read_routes(root)
    plan.node = detect_with(root, env, routes)
    try:
        check_machine(plan.node, settings)
        plan.topology = _discover(settings, plan.node, root, plan.warnings)
        master_ip = locate_master(plan.node, root, plan.topology.master_addr.value, routes)
        check_loopback_master(plan.topology, plan.node, settings, in_container(root, env), plan.warnings)
        check_reachable_sockets(plan.topology, plan.node, settings, master_ip, root, default_route(root, routes),
                                plan.warnings)
        plan.env = plan_env(plan.node, plan.topology, settings, root, plan.warnings, audit=audit)
        plan.launch = plan_launch(settings, plan.topology, plan.node, plan.warnings)
        _shared_notes(settings, plan.warnings, plan.topology)
        _checkpoint_access(settings, plan.warnings)
        plan.env += exports(plan.topology, env) + launcher_exports(plan.launch, plan.node, env)
        plan_exchange(plan, settings)
        _start_refusals(plan, root, settings)
    except EntrypointError as err:
        if not partial:
            raise
        plan.errors.append({"message": str(err), "exit_code": err.exit_code})
    return plan


def _start_refusals(plan, root, settings=None):
    """What the start refuses on this machine before any check-in (``loop.Start.prepare``), said in the plan as
    the ``start-refused-here`` warning: ``--explain`` on the node says what its start would do (walk8 B24), and the
    plan is often read off the node, so it does not exit with the start's code itself. Each refusal is the start's
    own check, read only: the master port held (``check_master_is_self``), and node 0's checkpoint folder claimed by
    another job now (``running.claim.refusal``; walk9 B14)."""
    if not plan.topology.is_master:  # node 0 of any job, one node too, hosts the rendezvous (walk9 B24)
        return
    from .planning.rules import emit
    from .running.selfcheck import check_master_is_self  # only rank 0 pays for it

    checks = [lambda: check_master_is_self(plan, root)]
    if settings is not None and settings.get("recovery") and plan.topology.node_rank.value in (0, "0") \
            and settings.sysroot in ("/", "", None):  # node 0 alone claims the folder (recovery.generations)
        from .running.claim import refusal

        def claimed():
            refused = refusal(settings.get("checkpoint_dir"), plan.topology.job_id, settings.get("run_id"))
            if refused is not None:
                raise refused
        checks.append(claimed)
    for check in checks:
        try:
            check()
        except EntrypointError as err:
            emit(plan.warnings, "start-refused-here", f"{err}; a start here stops with exit {err.exit_code} before "
                 "any check-in")


def _shared_notes(settings, warnings, topo=None):
    """What the spec notes at validate (``shared_rules.notes``), as this node's warnings."""
    from .planning.rules import emit
    from .planning.shared_rules import notes

    from .planning.shared_rules import Naming

    keys = ("recovery", "checkpoint_dir", "stall_warn", "stall_timeout", "metrics", "metrics_port", "step_pattern",
            "spares", "exchange_port")
    values = {key: settings.get(key) for key in keys}
    from .planning.contract import RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS

    values.update(no_progress_restarts=settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS),
                  recovery_max_restarts=settings.get("recovery_max_restarts", RECOVERY_RESTARTS))
    if topo is not None:  # a topology value, not a setting: weighed against the other rank sources
        values["master_port"] = topo.master_port.value
    if isinstance(values["checkpoint_dir"], str) and values["checkpoint_dir"]:
        import os

        # the folder judged where it is on this node (relative to the workspace, through a link), never by its
        # spelling (walk16b B5/B6: `ck` in a workspace under /tmp, and a link into /tmp, were passed over)
        values["checkpoint_where"] = os.path.realpath(values["checkpoint_dir"])
    # without spares every node trains; a count recovery set itself (``with_flags``: generation 0's re-plan) is no
    # one's choice, the node's own plan judged the count given
    if topo is not None and not values["spares"] and values["recovery"] and "nnodes" not in settings.flag_sources:
        low, high = topo.nnodes_min, topo.nnodes_max
        if settings.flags.get("nnodes") or settings.env.get("NODEWEAVE_NNODES"):
            from .planning.job_size import job_size  # MIN:MAX: recovery's minimum (a generation is a fixed size)

            low, high = job_size(settings)
        values.update(nnodes=high, nnodes_min=low)
    for key, line in notes(values, {key for key in keys if key in settings.options},
                           Naming(lambda key: _source_name(settings, key))):
        if key == "checkpoint_dir":
            emit(warnings, "checkpoint-dir-per-container", line)
        elif key == "recovery":
            emit(warnings, "recovery-cannot-replace", f"{_source_name(settings, key)} {line}")
        elif key == "no_progress_restarts":
            emit(warnings, "recovery-no-progress", line)
        elif key == "spares":
            continue  # the spares' own row says how many wait (faults.py)
        elif key in ("master_port", "exchange_port", "metrics_port"):
            name = _port_source_name(topo.master_port.source) if key == "master_port" else _source_name(settings, key)
            emit(warnings, "port-privileged", f"{name}: {line}")
        elif key == "step_pattern":
            emit(warnings, "step-pattern-loose", f"{_source_name(settings, key)}: {line}")
        else:
            emit(warnings, "stall-watch-off", f"{_source_name(settings, key)}: {line}")
    folder = values.get("checkpoint_dir")
    if values.get("recovery") and folder and str(folder).startswith("/"):  # in / on no mount (walk12b B14)
        from .systemfolders import mount_points, on_no_mount_in_root

        line = on_no_mount_in_root(str(folder), mount_points(settings.sysroot or "/"))
        if line:
            emit(warnings, "checkpoint-dir-unmounted", f"{_source_name(settings, 'checkpoint_dir')}: {line}")


def _checkpoint_access(settings, warnings):
    """The checkpoint folder as this process meets it (the image's user against a folder root made, a share of
    other owners): one it cannot list hands out no checkpoint, so every generation starts from scratch, silently;
    one it cannot write fails the script's first save on every node (walk7 B8/B9). A live node only."""
    folder = settings.get("checkpoint_dir")
    if not folder or not settings.get("recovery") or settings.sysroot not in ("/", "", None):
        return
    path = os.path.abspath(folder)
    try:
        info = os.stat(path)
    except OSError:
        return  # not there (yet): the script makes it
    if not os.path.isdir(path):
        return  # the checkpoint_dir row says so
    from .planning.rules import emit

    who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
    what = f"owner uid {info.st_uid}, mode {info.st_mode & 0o7777:04o}"
    if not os.access(path, os.R_OK | os.X_OK):
        emit(warnings, "checkpoint-dir-access", f"{_source_name(settings, 'checkpoint_dir')}: this process ({who}) "
             f"cannot list {path} ({what}): node 0 would find no checkpoint in it, so every generation would start "
             "from scratch")
    elif not os.access(path, os.W_OK | os.X_OK):
        emit(warnings, "checkpoint-dir-access", f"{_source_name(settings, 'checkpoint_dir')}: {path} is not writable "
             f"by this process ({who}; {what}): the script's saves there would fail on every node")


def _port_source_name(source):
    """The variable or flag a topology value came from (``NODEWEAVE_MASTER_PORT=22``: NODEWEAVE_MASTER_PORT)."""
    name = source.split("=", 1)[0]
    return name[len("flag "):] if name.startswith("flag ") else name


def _source_name(settings, key):
    from .planning.contract import BY_KEY

    source = settings.source(key)
    return BY_KEY[key].variable if source == "default" else source[len("flag "):] if source.startswith("flag ") \
        else source


def _discover(settings, node, root, warnings):
    """Planning weighs the Kubernetes facts read here; where it wants a StatefulSet's replica count
    (no source names the node count), the API is asked once and the topology planned again."""
    kube = read_kube(root, settings.env)
    first = []
    try:
        topology = discover(settings, node, root, kube, first)
    except ReplicasWanted as want:
        kube.replicas[want.name] = statefulset_replicas(root, settings.env, want.name, want.namespace)
        first = []
        topology = discover(settings, node, root, kube, first)
    warnings.extend(first)
    return topology


def make_plan(argv=None, env=None, sysroot=None):
    """Parse ``argv`` (no program name) against ``env`` and plan; raises EntrypointError."""
    env = dict(os.environ) if env is None else dict(env)
    settings = parse(list(argv or []), env)
    if sysroot is not None:
        settings.sysroot = sysroot
    return build_plan(settings)
