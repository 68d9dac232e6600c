"""What a node's check-in computes and loads: HMAC-SHA256 proofs, and hosts without the idna codec.

The check-in's proofs are ``hmac``/``hashlib`` of the standard library (RFC 4231's vectors hold them
here); ``detection.net.lookup_host`` stands in for the "idna" codec (it costs every node CPU at start-up,
issue 22) and must give exactly what the codec gives. A worker's check-in modules must not load
``encodings.idna``, ``threading`` or node 0's loop (a fresh interpreter says).
"""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeweave.entrypoint.checkin.wire import proof, verify
from nodeweave.entrypoint.detection.net import lookup_host

# RFC 4231, test cases 1, 2 and 6 (a key longer than the block)
RFC4231 = [
    (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
]


@pytest.mark.parametrize("key,data,expected", RFC4231)
def test_a_proof_without_a_body_is_hmac_sha256_of_the_challenge(key, data, expected):
    assert proof(key, data.decode()) == expected


def test_proof_and_verify_are_hmac_of_the_challenge():
    token, body = b"t" * 32, {"rank": 1, "job": "j"}
    mac = proof(token, "nonce", body)
    assert verify(token, "nonce", mac, body)
    assert not verify(token, "nonce", mac[:-1] + ("0" if mac[-1] != "0" else "1"), body)
    assert not verify(b"u" * 32, "nonce", mac, body)
    assert not verify(token, "nonce", None, body)


def _idna(host):
    try:
        return host.encode("idna")
    except UnicodeError:
        return UnicodeError


def _ours(host):
    """What getaddrinfo ends up with: our bytes, or the codec's own for what we pass on unchanged."""
    try:
        found = lookup_host(host)
        return found.encode("idna") if isinstance(found, str) else found
    except UnicodeError:
        return UnicodeError


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab.-_0é"), max_size=80) | st.text(max_size=80))
def test_lookup_host_gives_what_the_idna_codec_gives(host):
    assert _ours(host) == _idna(host)


@pytest.mark.parametrize("host", ["127.3.0.1", "node-0.cluster.local", "a" * 63 + ".b", "a" * 64, "a..b", ".x", "x."])
def test_lookup_host_named_cases(host):
    assert _ours(host) == _idna(host)


def test_a_worker_check_in_loads_no_idna_codec_nor_threads():
    code = ("import sys\n"
            "from nodeweave.entrypoint.checkin import exchange, fingerprint, session, wire\n"
            "from nodeweave.entrypoint.running import wait\n"
            "wire.proof(b'k', 'n', {'a': 1}); fingerprint.sha256(b'x').hexdigest()\n"
            "import socket; socket.getaddrinfo(wire.lookup_host('127.0.0.1'), 1)\n"
            "print(sorted(m for m in ('encodings.idna', 'threading', "
            "'nodeweave.entrypoint.checkin.switchboard') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
