"""Name lookups a recovery does not wait on (``entrypoint/detection/names.py``).

The resolver stands in for the system's (``socket.getaddrinfo`` replaced for the test): a lookup that waits out
a DNS server's reload for 5 s, as podman's does when a container on its network starts or stops, and one that
fails. The first lookup of a name is the system's as before; a name that answered before is answered from
memory within ``PATIENCE_S`` and learns the new answer once the slow lookup ends.
"""

import socket
import threading
import time

import pytest

from nodeweave.entrypoint.detection import names

ADDRESS = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 29501))]
MOVED = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.9", 29501))]


class Resolver:
    """Answers from ``answers`` in turn; each entry is (seconds to wait, the answer or an exception)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0
        self.released = threading.Event()

    def __call__(self, host, port, family=0, kind=0):
        self.calls += 1
        wait, answer = self.answers.pop(0) if self.answers else (0.0, ADDRESS)
        if wait:
            self.released.wait(wait)
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def resolver(monkeypatch):
    names.forget()
    holder = {}

    def install(*answers):
        holder["r"] = Resolver(*answers)
        monkeypatch.setattr(names.socket, "getaddrinfo", holder["r"])
        return holder["r"]
    yield install
    if "r" in holder:
        holder["r"].released.set()
    names.forget()


def test_a_name_never_answered_is_looked_up_as_before_its_error_too(resolver):
    resolver((0.0, socket.gaierror(-2, "Name or service not known")))
    with pytest.raises(socket.gaierror):
        names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM)
    assert names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM) == ADDRESS  # answered now: as the system


def test_a_slow_lookup_of_a_known_name_is_answered_from_memory_and_learns_the_new_answer(resolver):
    fake = resolver((0.0, ADDRESS), (5.0, MOVED))
    assert names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM) == ADDRESS
    began = time.monotonic()
    assert names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM) == ADDRESS  # the last answer
    assert time.monotonic() - began < 4.0, "it waited out the slow lookup"
    fake.released.set()  # the DNS server is back: the lookup still running ends with the new address
    deadline = time.monotonic() + 5
    while names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM) != MOVED:
        assert time.monotonic() < deadline, "the background lookup's answer was not kept"
        time.sleep(0.05)


def test_a_failing_lookup_of_a_known_name_keeps_its_last_answer(resolver):
    resolver((0.0, ADDRESS), (0.0, socket.gaierror(-3, "Temporary failure in name resolution")))
    names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM)
    assert names.getaddrinfo(b"node-0", 29501, 0, socket.SOCK_STREAM) == ADDRESS


def test_calls_while_a_lookup_hangs_share_it(resolver):
    """A wait loop asking every 0.25 s during a 5 s hang starts one lookup, not twenty."""
    fake = resolver((0.0, ADDRESS), (5.0, ADDRESS))
    names.getaddrinfo(b"node-0", 29501)
    for _ in range(4):
        names.getaddrinfo(b"node-0", 29501)
    assert fake.calls == 2


def test_create_connection_reaches_the_address_answered(resolver):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    local = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
    resolver((0.0, local))
    with server, names.create_connection(b"node-0", port, 5.0) as sock:
        assert sock.getpeername()[1] == port
