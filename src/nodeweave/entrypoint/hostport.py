"""A host and a port written as one text, and read back, one way everywhere (stdlib; the CLI uses it too).

Why: ``f"{host}:{port}"`` with an IPv6 address gives ``fd00::1:29501``, which reads as the address
``fd00::1:29501`` without a port (or, to a parser that splits at the last colon, as host ``fd00::1`` only
by luck). Listeners pick their family here too (:func:`listen_family`), so an address written in brackets
is one they answer on. The bracketed form ``[fd00::1]:29501`` (RFC 3986) is what torchrun's ``--rdzv-endpoint``
parser, urllib and a person all read the same way. A host alone (``MASTER_ADDR``, ``--master_addr``,
``--main_process_ip``) stays bare: torch's ``env://`` and the launchers take it as a host, not a URL part.
"""

PORT_ACCEPTED = "a port number from 1 to 65535"
DIGITS = frozenset("0123456789")  # str.isdigit also takes "²"
ACCEPTED = ("host:port, with an IPv6 address in brackets ([fd00::1]:29500); a name or an address alone "
            "takes the default port")


def is_ipv6(host):
    """Whether ``host`` is an IPv6 literal: a host name or an IPv4 address never holds a colon."""
    return ":" in str(host)


def listen_family(bind):
    """``(family, dual_stack)`` for a listener on ``bind``: empty (every address) is IPv4 and IPv6 both where the
    kernel has IPv6, so a peer given this node's IPv6 address reaches it as well as one given its IPv4 address
    or a name; an IPv6 ``bind`` is IPv6; any other is IPv4. OSError (as a name that does not resolve) for a
    ``bind`` the socket layer cannot even write as a host name (``\u202e``, a byte of a Latin-1 paste): it
    would raise TypeError from inside the bind, past every listener's ``except OSError``."""
    import errno
    import socket

    try:
        str(bind).encode("idna")
    except UnicodeError:
        raise OSError(errno.EINVAL, "not a host name or an address (it holds characters no host name has)") from None
    if not bind and socket.has_dualstack_ipv6():
        return socket.AF_INET6, True
    return (socket.AF_INET6 if is_ipv6(bind) else socket.AF_INET), False


def host_port(host, port):
    """``host`` and ``port`` as one text: ``[fd00::1]:29501``, ``10.0.0.1:29501``, ``node-0.svc:29501``."""
    host = str(host)
    if is_ipv6(host) and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def http_url(host, port, path="/", scheme="http"):
    """A URL to ``path`` on ``host``:``port``: ``http://[fd00::1]:9464/status.json`` for an IPv6 address."""
    return f"{scheme}://{host_port(host, port)}{path}"


def split_host_port(text, default_port=None):
    """``(host, port)`` of ``host:port`` a user or a platform wrote; ``port`` is ``default_port`` when the text
    names the host alone. ``[fd00::1]:29500`` and ``[fd00::1]`` are IPv6; an unbracketed text with more than one
    colon (``fd00::1``) is an IPv6 address taken whole, never host ``fd00:`` port 1. ValueError, saying
    what is wrong with ``text``, for an empty host, a port that is not a number from 1 to 65535, or text after
    the brackets that is not ``:PORT``."""
    text = str(text).strip()
    if text.startswith("["):
        inside, closed, rest = text[1:].partition("]")
        if not closed or not is_ipv6(inside):
            raise ValueError(f"{text!r} opens a bracket that does not hold an IPv6 address")
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r} has {rest!r} after the brackets, not ':PORT'")
        host, port = inside, rest[1:] if rest else None
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:  # a name, an IPv4 address, or an IPv6 address without brackets (it may end in what looks like a port)
        host, port = text, None
    if not host:
        raise ValueError(f"{text!r} names no host")
    if port is None:
        return host, default_port
    if not port or not set(port) <= DIGITS or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} has the port {port!r}, not {PORT_ACCEPTED}")
    return host, int(port)


def leading_zero_problem(host):
    """Why an IPv4 address written with a leading zero (``010.0.0.1``) is refused, or None. ssh, ping and glibc's
    ``inet_aton`` read such an octet as octal (``010.0.0.1`` is 8.0.0.1), Python's ``ipaddress`` refuses it: one
    list of hosts would name different machines to different readers (walk6 W46)."""
    parts = str(host).split(".")
    if len(parts) != 4 or not all(part and set(part) <= DIGITS for part in parts):
        return None
    if not any(len(part) > 1 and part[0] == "0" for part in parts):
        return None
    plain = ".".join(str(int(part)) for part in parts)
    try:
        octal = ".".join(str(int(part, 8)) if part[0] == "0" else part for part in parts)
    except ValueError:  # 08, 09: no octal reading; inet_aton refuses it
        octal = None
    read = f", which ssh and ping read as octal {octal}" if octal and octal != plain else ""
    return f"has a leading zero in an octet{read}: write {plain}" + (f" or {octal}" if read else "")


def host_key(host):
    """What makes two spellings one host: DNS names are case-insensitive (RFC 4343: ``VM`` is ``vm``) and ``gpu01.``
    is ``gpu01`` (the root's dot); an address is unchanged. The one rule for "is this the same host": the spec's
    ``hosts`` and the cluster verbs' ``--host`` flags refuse a host listed twice by it, and the entrypoint finds this
    node in a hostfile, a node list or the master by it (walk13 B4)."""
    return str(host or "").strip().lower().rstrip(".")


def host_count_form(word):
    """``(host, N)`` when a hostfile line's first word is MPICH's ``host:N`` (what ``mpirun -H`` and many cluster
    wikis write), else None: read as a host named ``gpu01:8`` it matched no node (walk8 B8). An IPv6 address holds
    more than one colon and is never this form. (The CLI's hosts files read ``host:N`` as ssh's host:port and
    refuse it so, naming ``--ssh-option Port=N``.)"""
    host, colon, count = str(word).rpartition(":")
    if colon and host and ":" not in host and count and set(count) <= DIGITS:
        return host, count
    return None


def host_count_refusal(word):
    """The accepted part of a refusal of ``host:N`` (see :func:`host_count_form`), or None."""
    found = host_count_form(word)
    if found is None:
        return None
    return (f"{word!r} is the host:N form (MPICH, mpirun -H), which is not read here; accepted: '<host> slots=<n>' "
            f"lines, e.g. '{found[0]} slots={found[1]}'")


def names_this_node(host, names):
    """Whether ``host`` (a hostfile line, a node list's item, a master) is one of ``names`` (this node's names
    and addresses, as :func:`host_key` writes them), whole or by its short name (``vm.example.com`` is ``vm``)."""
    key = host_key(host)
    return bool(key) and (key in names or key.split(".")[0] in names)
