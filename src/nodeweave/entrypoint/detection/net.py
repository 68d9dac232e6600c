"""RDMA ports, IP interfaces and the route toward the master.

RDMA ports come from ``/sys/class/infiniband`` (state, link layer, rate, the
RoCE v2 IPv4 GID, the netdev). Interfaces come from ``/sys/class/net``; their
IPv4 addresses from ``/proc/net/fib_trie`` (``/32 host LOCAL`` entries) matched
against ``/proc/net/route``, which works the same on a live machine and on a
captured tree. The interface toward the master is the kernel's answer on a
live machine (a UDP socket connected to it; no packet is sent), and a
longest-prefix match over ``/proc/net/route`` under a sysroot.
"""

from ..model import Interface, RdmaPort

IPV4_MAPPED = "0000:0000:0000:0000:0000:ffff:"
ARPHRD = {"1": "ether", "32": "infiniband", "772": "loopback"}


# --- IPv4 helpers (no ipaddress/socket import on the fast path) ---------------


def ip_to_int(text):
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not part.isdigit() or int(part) > 255:
            return None
        value = value << 8 | int(part)
    return value


def int_to_ip(value):
    return ".".join(str(value >> s & 0xFF) for s in (24, 16, 8, 0))


def is_ipv4(text):
    return ip_to_int(text) is not None


def lookup_host(host):
    """``host`` as ``socket.getaddrinfo`` should get it: an ASCII name as the bytes the "idna" codec's ASCII
    path gives (the same checks, the same UnicodeError), so a start does not import ``encodings.idna``
    (``unicodedata``, ``stringprep``: ~1.5 ms of CPU on every node); anything else unchanged."""
    try:
        name = host.encode("ascii")
    except (AttributeError, UnicodeEncodeError):
        return host
    labels = name.split(b".")
    if any(not 0 < len(label) < 64 for label in labels[:-1]) or len(labels[-1]) >= 64:
        raise UnicodeError("label empty or too long")
    return name


def _le_hex(text):
    """/proc/net/route's little-endian hex → integer in network order."""
    v = int(text, 16)
    return (v & 0xFF) << 24 | (v >> 8 & 0xFF) << 16 | (v >> 16 & 0xFF) << 8 | v >> 24


# --- RDMA ----------------------------------------------------------------------


def _state(text):
    return text.partition(":")[2].strip() if text and ":" in text else text


def _rate_gbps(text):
    try:
        return int(float(text.split()[0])) if text else None
    except ValueError:
        return None


def _roce_v2_gid(root, base):
    """Lowest GID index whose type is RoCE v2 and whose GID is IPv4-mapped."""
    misses = 0
    for index in root.listdir(f"{base}/gid_attrs/types"):
        kind = root.read(f"{base}/gid_attrs/types/{index}")
        if kind is None:
            misses += 1
            if misses > 16:
                break
            continue
        misses = 0
        if kind != "RoCE v2":
            continue
        gid = root.read(f"{base}/gids/{index}") or ""
        if gid.startswith(IPV4_MAPPED):
            h = gid[len(IPV4_MAPPED):].replace(":", "")
            ipv4 = int_to_ip(int(h, 16)) if len(h) == 8 else None
            return int(index), ipv4, root.read(f"{base}/gid_attrs/ndevs/{index}")
    return None, None, None


def _port_netdev(root, netdevs, port):
    """The netdev of one port of a PCI function (``dev_port`` counts from 0)."""
    if len(netdevs) > 1:
        for name in netdevs:
            if root.read_int(f"/sys/class/net/{name}/dev_port") == port - 1:
                return name
    return netdevs[0]


def detect_rdma(root):
    ports = []
    for dev in root.listdir("/sys/class/infiniband"):
        base = f"/sys/class/infiniband/{dev}"
        driver = root.link_name(f"{base}/device/driver")
        numa = root.read_int(f"{base}/device/numa_node")
        pci = root.link_name(f"{base}/device")
        netdevs = root.listdir(f"{base}/device/net")
        for port in root.listdir(f"{base}/ports"):
            pbase = f"{base}/ports/{port}"
            layer = root.read(f"{pbase}/link_layer")
            rate = root.read(f"{pbase}/rate")
            rdma = RdmaPort(device=dev, port=int(port) if port.isdigit() else port,
                            state=_state(root.read(f"{pbase}/state")),
                            phys_state=_state(root.read(f"{pbase}/phys_state")),
                            link_layer=layer, rate=rate, rate_gbps=_rate_gbps(rate), driver=driver,
                            numa_node=numa if numa is not None and numa >= 0 else None, pci=pci)
            netdev = None
            if layer == "Ethernet":
                rdma.roce_v2_gid_index, rdma.roce_v2_ipv4, netdev = _roce_v2_gid(root, pbase)
            if not netdev and netdevs:
                netdev = _port_netdev(root, netdevs, rdma.port)
            if netdev and root.isdir(f"/sys/class/net/{netdev}"):
                rdma.netdev = netdev  # present in this network namespace
            ports.append(rdma)
    return ports


# --- interfaces, addresses and routes ----------------------------------------


def read_routes(root):
    """[(iface, dest, mask, gateway, metric)] from /proc/net/route."""
    routes = []
    for line in (root.read("/proc/net/route") or "").splitlines()[1:]:
        f = line.split()
        if len(f) < 8:
            continue
        try:
            flags = int(f[3], 16)
            if not flags & 1:  # RTF_UP
                continue
            routes.append((f[0], _le_hex(f[1]), _le_hex(f[7]), _le_hex(f[2]), int(f[6])))
        except ValueError:
            continue
    return routes


def _local_addresses(root):
    """IPv4 addresses of this host: the ``/32 host LOCAL`` leaves of fib_trie (read once per root)."""
    if root.local_addresses is not None:
        return root.local_addresses
    found, last = [], None
    for line in (root.read("/proc/net/fib_trie") or "").splitlines():
        text = line.strip()
        if text.startswith("|--"):
            last = text[3:].strip()
        elif text.startswith("/32 host LOCAL") and last and last not in found:
            found.append(last)
    root.local_addresses = found
    return found


def _longest_match(routes, ip, connected_only=False):
    best = None
    for iface, dest, mask, gateway, metric in routes:
        if connected_only and gateway:
            continue
        if ip & mask == dest & mask:
            key = (bin(mask).count("1"), -metric)
            if best is None or key > best[0]:
                best = (key, iface)
    return best[1] if best else None


def address_owner(routes, ip_text):
    """Interface that holds a local address: its connected subnet (127/8: lo)."""
    ip = ip_to_int(ip_text)
    if ip is None:
        return None
    if ip >> 24 == 127:
        return "lo"
    return _longest_match(routes, ip, connected_only=True) or _longest_match(routes, ip)


def detect_interfaces(root, routes):
    addrs = {}
    for address in _local_addresses(root):
        owner = address_owner(routes, address)
        if owner:
            addrs.setdefault(owner, []).append(address)
    interfaces = []
    for name in root.listdir("/sys/class/net"):
        base = f"/sys/class/net/{name}"
        if not root.isdir(base) or name == "bonding_masters":
            continue
        speed = root.read_int(f"{base}/speed")
        kind = ARPHRD.get(root.read(f"{base}/type") or "", "other")
        interfaces.append(Interface(
            name=name, kind=kind, operstate=root.read(f"{base}/operstate"),
            mtu=root.read_int(f"{base}/mtu"), speed_mbps=speed if speed and speed > 0 else None,
            ipv4=addrs.get(name, ["127.0.0.1"] if kind == "loopback" else []),
            virtual=not root.exists(f"{base}/device"),
        ))
    return interfaces


def resolve(root, host):
    """IPv4 address of ``host``: a literal, the root's /etc/hosts, then DNS on a live root."""
    if is_ipv4(host):
        return host, "literal"
    if host == "localhost":
        return "127.0.0.1", "localhost"
    for line in (root.read("/etc/hosts") or "").splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) > 1 and host in fields[1:] and is_ipv4(fields[0]):
            return fields[0], "/etc/hosts"
    if root.real:
        import socket

        from . import names

        try:
            infos = names.getaddrinfo(lookup_host(host), None, socket.AF_INET, socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return None, "no DNS answer"
        if infos:
            return infos[0][4][0], "DNS"
        return None, "no DNS answer"
    return None, "not in the sysroot's /etc/hosts"


def route_to(root, routes, target_ip):
    """(interface, local address, how) for traffic to ``target_ip``."""
    if ip_to_int(target_ip) >> 24 == 127:
        return "lo", "127.0.0.1", "loopback: the master runs on this host"
    local_addrs = _local_addresses(root)
    if target_ip in local_addrs:
        owner = address_owner(routes, target_ip)
        return owner, target_ip, f"this node's own address, on {owner}"
    if root.real:
        import socket
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((target_ip, 9))
                local = s.getsockname()[0]
            owner = address_owner(routes, local)
            if owner:
                return owner, local, f"the kernel routes {target_ip} from {local}"
        except OSError:
            pass
    iface = _longest_match(routes, ip_to_int(target_ip))
    if iface is None:
        return None, None, f"no route to {target_ip} in /proc/net/route"
    local = next((a for a in local_addrs if address_owner(routes, a) == iface), None)
    return iface, local, f"longest-prefix route to {target_ip} in /proc/net/route"


def default_route(root, routes):
    """(interface, local address) of the default route, for an unresolved master."""
    best = None
    for iface, dest, mask, gateway, metric in routes:
        if mask == 0 and (best is None or metric < best[1]):
            best = (iface, metric)
    if best is None:
        return None, None
    local = next((a for a in _local_addresses(root) if address_owner(routes, a) == best[0]), None)
    return best[0], local
