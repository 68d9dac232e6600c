"""Which address a target's sync listeners (a relay hop's, a resident's) listen on, and the node's addresses.

Part of the program a target runs (``session.AGENT_PROGRAM``): stdlib only,
Python 3.6-compatible. A listener on every address is open to anything on
any network the node sits on (a host's other NICs, a pod's Multus
attachments); the job's peers reach a node at one address: the one it uses
toward the master, as the entrypoint's ``NODEWEAVE_EXCHANGE_BIND=route`` rule.
So ``NODEWEAVE_SYNC_BIND`` (the node's environment; a spec ``env`` entry sets it on
every node) says where:

- ``route`` (default): the source address of the route toward the master
  (``NODEWEAVE_MASTER_ADDR``, ``MASTER_ADDR`` or ``PET_MASTER_ADDR``), else of
  the default route (a pod's IP, a container's address on its network); no
  route, or a loopback address: every address, as before;
- ``any``: every address;
- an address of this node (``10.0.3.7``), or a network (``10.0.3.0/24``): the
  node's own address inside it. Anything else is refused, naming the variable.

Finding the route sends nothing: a UDP socket's ``connect`` only asks the
kernel's routing table.
"""

import os
import socket
import struct

BIND_VARIABLE = "NODEWEAVE_SYNC_BIND"
MASTER_VARIABLES = ("NODEWEAVE_MASTER_ADDR", "MASTER_ADDR", "PET_MASTER_ADDR")
NO_DESTINATION = "192.0.2.1"  # TEST-NET-1 (RFC 5737): only its route is looked up
_IFF_UP, _IFF_LOOPBACK = 0x1, 0x8


def _ipv4_addresses():
    """The IPv4 address of every interface that is up, loopback aside (Linux ioctls, stdlib only)."""
    import fcntl
    found = []
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            req = struct.pack("256s", name.encode()[:15])
            try:
                flags = struct.unpack("H", fcntl.ioctl(probe.fileno(), 0x8913, req)[16:18])[0]
                if not flags & _IFF_UP or flags & _IFF_LOOPBACK:
                    continue
                found.append(socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, req)[20:24]))
            except OSError:
                continue  # no IPv4 address on this interface
    finally:
        probe.close()
    return found


def _ipv6_addresses():
    """Global-scope IPv6 addresses (``/proc/net/if_inet6``; link-local ones need a scope id)."""
    found = []
    try:
        with open("/proc/net/if_inet6") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[3] == "00" and fields[5] != "lo":
                    found.append(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(fields[0])))
    except (OSError, ValueError):
        pass
    return found


def local_addresses():
    try:
        return _ipv4_addresses() + _ipv6_addresses()
    except (OSError, AttributeError):
        return []


def _source_toward(host):
    """The local IPv4 address the kernel would send from toward ``host``; None without a route or a name."""
    try:
        target = socket.getaddrinfo(host, 9, socket.AF_INET, socket.SOCK_DGRAM)[0][4]
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect(target)
            return probe.getsockname()[0]
        finally:
            probe.close()
    except (OSError, IndexError, UnicodeError):
        return None


def _route_address(env):
    """(address or None, why): the route rule."""
    for name in MASTER_VARIABLES:
        if env.get(name):
            where, address = "the route toward the master %s (%s)" % (env[name], name), _source_toward(env[name])
            break
    else:
        where, address = "the default route", _source_toward(NO_DESTINATION)
    if not address or address.startswith("127."):
        return None, "every address (%s gives %s)" % (where, address or "no address")
    return address, "%s, %s" % (address, where)


def _in_network(setting, addresses):
    """This node's address inside ``setting`` (``a.b.c.d/n``), or None; ValueError when it is no network."""
    base, _, bits = setting.partition("/")
    if not bits.isdigit() or not 0 <= int(bits) <= 32:
        raise ValueError(setting)
    mask = (0xFFFFFFFF << (32 - int(bits))) & 0xFFFFFFFF
    net = struct.unpack("!I", socket.inet_aton(base))[0] & mask
    for address in addresses:
        if ":" not in address and struct.unpack("!I", socket.inet_aton(address))[0] & mask == net:
            return address
    return None


def listen_address(env=None):
    """(the address to listen on, or None for every address; how it was chosen). Refuses a bad setting."""
    env = os.environ if env is None else env
    setting = (env.get(BIND_VARIABLE) or "route").strip()
    if setting == "route":
        return _route_address(env)
    if setting == "any":
        return None, "every address (%s=any)" % BIND_VARIABLE
    accepted = ("accepted: route (default), any, an address of this node, or a network such as 10.0.3.0/24 "
                "holding one")
    mine = local_addresses() + ["127.0.0.1"]
    try:
        if "/" in setting:
            address = _in_network(setting, mine)
        else:
            socket.inet_pton(socket.AF_INET6 if ":" in setting else socket.AF_INET, setting)
            address = setting if setting in mine or setting.startswith("127.") else None
    except (OSError, ValueError):
        raise ValueError("%s=%r is not an address or a network; %s" % (BIND_VARIABLE, setting, accepted))
    if address is None:
        raise ValueError("%s=%r: no address of this node (%s) is that; %s"
                         % (BIND_VARIABLE, setting, ", ".join(mine), accepted))
    return address, "%s (%s=%s)" % (address, BIND_VARIABLE, setting)
