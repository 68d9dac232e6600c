"""SHA-256 and HMAC-SHA256 for the check-in, without loading OpenSSL at every node's start.

``hashlib`` and ``hmac`` load ``_hashlib`` (OpenSSL's libcrypto) when they are
imported: ~4 ms of CPU per start on a 2-core machine, paid by every node of a
``nodeweave run``, where a fingerprint hash and one HMAC are all the check-in
computes. CPython's own SHA-256 (``_sha256``, ``_sha2`` from 3.12) gives the
same digests without it; HMAC is RFC 2104 over it, as ``hmac`` does in pure
Python. Where neither built-in exists (a stripped build), ``hashlib`` serves.
tests/test_checkin_digest.py holds both to ``hashlib``/``hmac`` and RFC 4231.
"""

try:
    from _sha256 import sha256  # CPython 3.6-3.11
except ImportError:  # pragma: no cover - depends on the interpreter
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        from hashlib import sha256

try:
    from _operator import _compare_digest as compare_digest  # what hmac.compare_digest falls back to
except ImportError:  # pragma: no cover - depends on the interpreter
    from hmac import compare_digest

BLOCK = 64  # SHA-256's block size, bytes
_OUTER = bytes(x ^ 0x5C for x in range(256))
_INNER = bytes(x ^ 0x36 for x in range(256))


def hmac_sha256(key, data):
    """HMAC-SHA256 of ``data`` under ``key`` (bytes), as ``hmac.new(key, data, hashlib.sha256).digest()``."""
    if len(key) > BLOCK:
        key = sha256(key).digest()
    key = key.ljust(BLOCK, b"\0")
    inner = sha256(key.translate(_INNER) + data).digest()
    return sha256(key.translate(_OUTER) + inner).digest()
