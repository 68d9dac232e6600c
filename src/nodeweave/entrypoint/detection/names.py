"""Name lookups a recovery does not wait on: each name's last answer, kept for the entrypoint's life.

When a container on podman's network is started or killed, its DNS server reloads, and a lookup made meanwhile
waits out the resolver's timeout: 5 s, seen in 2 of 6 such events on podman 4.3 (docs/recovery.md); a pod
deleted or recreated does the like to a cluster's DNS. That is when a recovery looks node 0's name up again (the
next generation's plan, its check-in), and each such wait is the whole job's: a generation starts when its last
node has checked in. So a name that has answered before is looked up on a thread of its own, and its answer
waited for :data:`PATIENCE_S`; past that, or when the lookup fails, the last answer is used, and the lookup
goes on for the next time. A name never answered is looked up as before: its wait, its error. Stdlib only.
"""

import socket

PATIENCE_S = 0.5

# One dict operation at a time is atomic here, so no lock: and ``threading`` is loaded only for a name asked
# again (a worker's first check-in loads no thread machinery: tests/test_checkin_digest.py).
_answers = {}   # (host, port, family, type) -> the last getaddrinfo answer
_pending = {}   # the same key -> its newest lookup thread (running, or done: then the next call starts one)


def getaddrinfo(host, port, family=0, kind=0):
    """``socket.getaddrinfo(host, port, family, kind)``, answered from memory when a name that answered before
    is slow or fails now (``host`` as ``net.lookup_host`` gives it)."""
    key = (host, port, family, kind)
    known = _answers.get(key)
    if known is None:
        answer = socket.getaddrinfo(host, port, family, kind)
        _answers[key] = answer
        return answer
    worker = _pending.get(key)
    if worker is None or not worker.is_alive():
        import threading

        worker = threading.Thread(target=_look_up, args=(key,), name="nodeweave-lookup", daemon=True)
        worker.start()  # before it is seen: another caller may join it at once (two at once: two lookups)
        _pending[key] = worker
    worker.join(PATIENCE_S)
    return _answers[key]


def _look_up(key):
    try:
        answer = socket.getaddrinfo(*key)
    except (OSError, UnicodeError):
        answer = None  # the last answer stands
    if answer:
        _answers[key] = answer


def create_connection(host, port, timeout_s):
    """``socket.create_connection`` through :func:`getaddrinfo`: each address in turn, the last error raised."""
    error = None
    for family, kind, proto, _, address in getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout_s)
            sock.connect(address)
            return sock
        except OSError as err:
            sock.close()
            error = err
    raise error if error is not None else OSError(f"no address for {host!r}")


def forget():
    """Every remembered answer dropped (tests)."""
    _answers.clear()
