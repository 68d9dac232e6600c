"""detect → discover → plan_env / plan_launch → Plan: the entrypoint without side effects."""

import os

from .detection.gpu import detect_gpus
from .detection.host import detect_cloud, detect_limits, hostname, in_container
from .detection.kube import read_kube, statefulset_replicas
from .detection.net import default_route, detect_interfaces, detect_rdma, read_routes, resolve, route_to
from .planning.exchange_plan import plan_exchange
from .planning.consistency import check_loopback_master, check_machine
from .errors import EntrypointError
from .planning.launch import exports, launcher_exports, plan_launch
from .model import Node, Plan
from .planning.policy import plan_env
from .planning.settings import parse
from .detection.sysfs import Root
from .planning.topology import ReplicasWanted, discover


def detect(sysroot="/", env=None, master=None):
    """The :class:`Node` under ``sysroot``; with ``master``, also the interface toward it."""
    root = Root(sysroot)
    return _detect(root, os.environ if env is None else env, read_routes(root), master)


def _detect(root, env, routes, master=None):
    nics = detect_rdma(root)
    node = Node(hostname=hostname(root), sysroot=root.path, gpus=detect_gpus(root, env), nics=nics,
                interfaces=detect_interfaces(root, routes), limits=detect_limits(root),
                cloud=detect_cloud(root, nics))
    if master:
        locate_master(node, root, master, routes)
    return node


def locate_master(node, root, master, routes=None):
    """Fill ``node.interface``/``local_ipv4``: the route toward ``master``."""
    routes = read_routes(root) if routes is None else routes
    ip, how = resolve(root, master)
    if ip is None and ":" in master:  # an IPv6 literal needs no DNS; this node reads IPv4 routes only (walk5 W47)
        iface, _ = ("lo", None) if master == "::1" else default_route(root, routes)
        node.interface, node.local_ipv4 = iface, None  # no IPv4 --local-addr beside an IPv6 master
        node.interface_reason = ("loopback (::1): the master runs on this host" if master == "::1" else
                                 f"{master} is an IPv6 address: no name to resolve, but only IPv4 routes are read "
                                 "here; the default route's interface" if iface else
                                 f"{master} is an IPv6 address and there is no IPv4 default route to go by")
        return
    if ip is None:
        iface, local = default_route(root, routes)
        node.interface, node.local_ipv4 = iface, local
        node.interface_reason = (f"{master} does not resolve yet ({how}); the default route's interface"
                                 if iface else f"{master} does not resolve ({how}) and there is no default route")
        return
    iface, local, why = route_to(root, routes, ip)
    node.interface, node.local_ipv4 = iface, local
    node.interface_reason = why if how == "literal" else f"{master} is {ip} ({how}); {why}"


def build_plan(settings, partial=False, audit=False):
    """The :class:`Plan` for parsed settings. With ``partial``, errors are recorded, not raised.

    ``audit`` (doctor) lets the rules judge the node on its own, beyond this launch.
    """
    root = Root(settings.sysroot)
    env = settings.env
    plan = Plan()
    routes = read_routes(root)
    plan.node = _detect(root, env, routes)
    try:
        check_machine(plan.node, settings)
        plan.topology = _discover(settings, plan.node, root, plan.warnings)
        locate_master(plan.node, root, plan.topology.master_addr.value, routes)
        check_loopback_master(plan.topology, plan.node, settings, in_container(root, env), plan.warnings)
        plan.env = plan_env(plan.node, plan.topology, settings, root, plan.warnings, audit=audit)
        plan.launch = plan_launch(settings, plan.topology, plan.node, plan.warnings)
        _shared_notes(settings, plan.warnings)
        plan.env += exports(plan.topology, env) + launcher_exports(plan.launch, plan.node, env)
        plan_exchange(plan, settings)
    except EntrypointError as err:
        if not partial:
            raise
        plan.errors.append({"message": str(err), "exit_code": err.exit_code})
    return plan


def _shared_notes(settings, warnings):
    """What the spec notes at validate (``shared_rules.notes``), as this node's warnings."""
    from .planning.rules import emit
    from .planning.shared_rules import notes

    from .planning.shared_rules import Naming

    keys = ("recovery", "checkpoint_dir", "stall_warn", "stall_timeout")
    values = {key: settings.get(key) for key in keys}
    for key, line in notes(values, {key for key in keys if key in settings.options},
                           Naming(lambda key: _source_name(settings, key))):
        if key == "checkpoint_dir":
            emit(warnings, "checkpoint-dir-per-container", line)
        else:
            emit(warnings, "stall-watch-off", f"{_source_name(settings, key)}: {line}")


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
