"""The :class:`Node` this machine is: GPUs, NICs, interfaces, limits, cloud, and the interface toward the master.
Detection alone (no plan): what the plan (``core.build_plan``), a refusal's report and recovery's count check read
without planning, so none of them imports the planner for it."""

import os

from ..model import Node
from .gpu import detect_gpus
from .host import detect_cloud, detect_limits, hostname
from .net import default_route, detect_interfaces, detect_rdma, read_routes, resolve, route_to
from .sysfs import Root


def detect(sysroot="/", env=None, master=None):
    """The :class:`Node` under ``sysroot``; with ``master``, also the interface toward it."""
    root = Root(sysroot)
    return detect_with(root, os.environ if env is None else env, read_routes(root), master)


def detect_with(root, env, routes, master=None):
    nics = detect_rdma(root)
    node = Node(hostname=hostname(root), sysroot=root.path, gpus=detect_gpus(root, env), nics=nics,
                interfaces=detect_interfaces(root, routes), limits=detect_limits(root),
                cloud=detect_cloud(root, nics))
    if master:
        locate_master(node, root, master, routes)
    return node


def locate_master(node, root, master, routes=None):
    """Fill ``node.interface``/``local_ipv4``: the route toward ``master``; returns the master's IPv4 address
    where it resolves."""
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
    return ip
