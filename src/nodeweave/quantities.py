"""Kubernetes quantities (``64Gi``, ``500m``) and the units compose and Slurm want instead.

One reading of a quantity, shared by the spec's checks (a request above its
limit) and by the renderers that translate it (compose's ``mem_limit``,
``cpus``; sbatch's ``--mem``, ``--cpus-per-task``), so they cannot disagree.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal

from nodeweave.entrypoint.durations import DURATION_UNITS, DURATION_WORDS, seconds  # noqa: F401 (the one reader)

SUFFIXES = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
            "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def value(text: str) -> Decimal:
    """The quantity's value: ``64Gi`` -> 68719476736, ``500m`` -> 0.5, ``1.5`` -> 1.5."""
    number = text.rstrip("kMGTPEim")
    return Decimal(number) * SUFFIXES[text[len(number):]]


def docker_bytes(text: str) -> str:
    """A memory quantity as docker/compose writes sizes (``g`` = GiB): ``512Gi`` -> ``512g``, else bytes."""
    amount = int(value(text).to_integral_value(ROUND_CEILING))
    for unit, size in (("g", 2**30), ("m", 2**20), ("k", 2**10)):
        if amount % size == 0:
            return f"{amount // size}{unit}"
    return f"{amount}b"


def binary_size(count: int) -> str:
    """A byte count in the largest binary unit it is a whole number of: 1073741824 -> ``1Gi``, 1536 -> ``3Ki``."""
    for unit in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        if count and count % SUFFIXES[unit] == 0:
            return f"{count // SUFFIXES[unit]}{unit}"
    return str(count)


def docker_cpus(text: str) -> str:
    """A CPU quantity as compose's ``cpus``: ``8`` -> ``8``, ``500m`` -> ``0.5``."""
    return format(value(text).normalize(), "f")


def slurm_megabytes(text: str) -> str:
    """A memory quantity as sbatch's ``--mem`` (MiB, rounded up): ``256Gi`` -> ``262144M``."""
    return f"{int((value(text) / 2**20).to_integral_value(ROUND_CEILING))}M"


def slurm_cpus(text: str) -> int:
    """A CPU quantity as whole CPUs for ``--cpus-per-task`` (rounded up: Slurm allocates whole CPUs)."""
    return int(value(text).to_integral_value(ROUND_CEILING))


def human_bytes(count: int) -> str:
    """A byte count as people read it: ``1924 B``, ``4.1 KiB``, ``85.2 MiB`` (tables; JSON keeps bytes)."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


# A duration as kubectl, podman and `logs --since` write one (30s, 5m, 2h, 1h30m, 1.5m), or plain seconds (300, 2.5):
# one reader for every option that takes seconds (walk9 A12: `--timeout 5s` was "not a number", and `logs --since
# 300` "not a duration"), the spec's seconds fields' and the entrypoint's seconds variables' (fix20b): the
# entrypoint's (nodeweave.entrypoint.durations, stdlib only), imported above.


# `logs --since` takes what docker and podman logs --since take: a duration, or a time (RFC 3339, as kubectl's
# --since-time): walk12 C2 (`--since 2026-11-30T21:00:00Z` was refused as no duration). A time becomes the
# duration back to it, which every engine and kubectl read the same way.
SINCE_WORDS = (f"{DURATION_WORDS}, or a time, 2026-11-30T21:00:00Z (RFC 3339; an offset, +01:00, or none: this "
               "machine's local time)")


def since_seconds(text: str, now: "float | None" = None) -> "float | None":
    """``text`` as the seconds back from ``now`` (default: this moment) it reaches: a duration as :func:`seconds`
    reads it, or a time (``2026-11-30T21:00:00Z``, ``2026-11-30 21:00:00+01:00``, ``2026-11-30``); None when it is
    neither, or a time still to come."""
    import time
    from datetime import datetime

    span = seconds(text)
    if span is not None:
        return span
    written = str(text).strip()
    if written[-1:] in ("Z", "z"):
        written = written[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(written)
    except ValueError:
        return None
    back = (time.time() if now is None else now) - when.timestamp()  # a naive time is local, as docker reads it
    return back if back >= 0 else None


def plain_number(number) -> str:
    """A number as a user types it: ``1000000000``, ``0.2``, ``-3`` (walk17a A6: a range said as ``0.2 to 1e+09``,
    Python's float repr, a number no one typed); only a number past 15 digits keeps an exponent (``1e+300``)."""
    number = float(number)
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:g}" if "e" in f"{number:g}" else repr(number)
