"""Bench inputs and the nccl-tests bandwidth formulas, stdlib only.

The worker (under torchrun) and the driver (the CLI) both import this
module, so it must not import torch. Message sizes follow nccl-tests: the
size of a collective is the size of the *whole* array (for all_gather the
output, for reduce_scatter the input), and bus bandwidth corrects the
algorithm bandwidth by a factor that depends only on the operation and the
number of ranks (nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import re
from nodeweave.errors import UsageError

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BACKENDS = ("auto", "nccl", "gloo")
DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}
DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}  # taken as their names

# Default sizes when --sizes is not given: a GPU run covers what nccl-tests
# users look at; a CPU (gloo) run stops where memory and time stay small.
DEFAULT_SIZES = {"nccl": "1K:1G", "gloo": "1K:64M"}

# Units as nccl-tests' -b/-e read them, powers of 1024, upper case; KiB/MiB (and the spec's Ki/Mi) say so. MB, GB
# and lower-case m/g are refused, naming these (walk17a A11: 1MB was read as 1 MiB, while the spec's 500M is 10^9).
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*([0-9]+)\s*(?:([KMGT])(?:i|iB)?|B)?\s*$")  # ASCII digits (walk13 A22)
_ANY_UNIT_RE = re.compile(r"^\s*([0-9]+)\s*([a-zA-Z]+)\s*$")
_SIZES_HELP = ("a range MIN:MAX[:FACTOR] (e.g. 1K:1G, 1M:256M:4) or a comma list "
               "(e.g. 256M,1G); units K, M, G, T (powers of 1024, as nccl-tests: 1M is 1048576 bytes; also "
               "written KiB, MiB, GiB) or none (bytes)")


def busbw_factor(op: str, nranks: int) -> float:
    """nccl-tests' correction from algorithm to bus bandwidth."""
    if nranks < 1:
        raise ValueError(f"number of ranks must be >= 1, got {nranks}")
    if op == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    if op in ("all_gather", "reduce_scatter"):
        return (nranks - 1) / nranks
    raise ValueError(f"unknown operation {op!r}; known: {', '.join(OPS)}")


def bandwidths(op: str, nbytes: int, seconds: float, nranks: int) -> "tuple[float, float]":
    """(algbw, busbw) in GB/s (10**9 bytes per second), as nccl-tests prints them."""
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * busbw_factor(op, nranks)


def parse_size(text: str, flag: str = "--sizes") -> int:
    """One size such as ``256M``, ``1GiB`` or ``4096`` in bytes."""
    match = _SIZE_RE.match(text)
    if not match:
        unit = _ANY_UNIT_RE.match(text)
        if unit and unit.group(2).upper().rstrip("B").rstrip("I") in ("K", "M", "G", "T"):
            number, letter = unit.group(1), unit.group(2).upper()[0]
            raise UsageError(f"{flag}: {text!r} is not a size: the unit {unit.group(2)!r} is read two ways "
                             f"(powers of 1000 by some tools, of 1024 by others); accepted: {number}{letter} or {number}{letter}iB "
                             f"({int(number) * _UNITS[letter]} bytes: units are powers of 1024), or a number of "
                             f"bytes ({number}{'000' * 'KMGT'.index(letter) + '000'} for {number} x 10^"
                             f"{3 * ('KMGT'.index(letter) + 1)})")
        raise UsageError(f"{flag}: {text!r} is not a size; expected {_SIZES_HELP}")
    value = int(match.group(1)) * _UNITS[match.group(2) or ""]
    if value <= 0:
        raise UsageError(f"{flag}: size {text!r} must be positive; expected {_SIZES_HELP}")
    return value


def parse_sizes(text: str, flag: str = "--sizes") -> "list[int]":
    """Sizes in bytes, ascending, from a range or a comma list."""
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"{flag}: {text!r} has {len(parts)} ':'-parts; expected {_SIZES_HELP}")
        low, high = parse_size(parts[0], flag), parse_size(parts[1], flag)
        factor = 2
        if len(parts) == 3:
            from nodeweave.entrypoint.planning.contract import digits  # ASCII only (walk13 A22)

            if not digits(parts[2].strip()) or int(parts[2]) < 2:
                raise UsageError(f"{flag}: factor {parts[2]!r} in {text!r} must be an integer >= 2")
            factor = int(parts[2])
        if low > high:
            raise UsageError(f"{flag}: minimum {parts[0]} is larger than maximum {parts[1]} in {text!r}")
        sizes = []
        size = low
        while size <= high:
            sizes.append(size)
            size *= factor
        return sizes
    if not text:
        raise UsageError(f"{flag}: empty value; expected {_SIZES_HELP}")
    from nodeweave.comma_lists import comma_items  # one rule for every comma list

    items = comma_items(text, flag, _SIZES_HELP, each="size", key=lambda item: parse_size(item, flag))
    return sorted(parse_size(item, flag) for item in items)


def measured_bytes(nbytes: int, item: int, nranks: int) -> int:
    """The bytes a collective asked for ``nbytes`` measures: nccl-tests rounds the element count down so the array
    splits evenly over the ranks, and gives each rank one element at least. The one rule: the worker builds its
    buffers by it, and the driver says what it changes before any launch (walk10 A5)."""
    return max(nranks, nbytes // item // nranks * nranks) * item


def measured_sizes(sizes: "list[int]", dtype: str, nranks: int, text: str = "",
                   flag: str = "--sizes") -> "tuple[list[int], str]":
    """(the sizes measured, a note naming those that differ from ``sizes``, or "") for ``nranks`` ranks of ``dtype``;
    two sizes measured as one are refused as the duplicate they become (walk10 A5: ``--sizes 3,5`` measured 8 B
    twice, as ``1K,1024`` is refused)."""
    item = DTYPES[dtype]
    step = item * nranks
    why = (f"each of the {nranks} rank(s) holds a whole number of {dtype} elements ({item}B), so a size is a "
           f"multiple of {format_bytes(step)} (at least {format_bytes(step)})")
    measured = [measured_bytes(size, item, nranks) for size in sizes]
    for got in sorted(set(measured)):
        asked = [size for size, m in zip(sizes, measured) if m == got]
        if len(asked) > 1:
            given = f"{flag} {text}" if text else flag
            named = f"{', '.join(format_bytes(a) for a in asked[:-1])} and {format_bytes(asked[-1])}"
            raise UsageError(f"{given}: {named} are {'both' if len(asked) == 2 else 'all'} measured as "
                             f"{format_bytes(got)}, one size measured {len(asked)} times: {why}; accepted: sizes that "
                             f"differ after that, each once (e.g. "
                             f"{','.join(format_bytes(got + step * i) for i in range(len(asked)))})")
    changed = [f"{format_bytes(size)} as {format_bytes(m)}" for size, m in zip(sizes, measured) if size != m]
    given = f"{flag} {text}" if text else flag
    note = f"{given}: {changed[0].replace(' as ', ' is measured as ', 1)}{''.join(', ' + c for c in changed[1:])}: " \
           f"{why}" if changed else ""
    return measured, note


def parse_ops(text: str) -> "list[str]":
    """A comma list of collective names; ``all`` means every one."""
    from nodeweave.comma_lists import comma_items  # one rule for every comma list

    accepted = f"a comma list of {', '.join(OPS)} (or 'all')"
    names = comma_items(text, "--ops", accepted, each="operation", key=lambda name: name.replace("-", "_"))
    names = [name.replace("-", "_") for name in names]
    if names == ["all"]:
        return list(OPS)
    unknown = [name for name in names if name not in OPS]
    if unknown:
        raise UsageError(f"--ops: unknown operation {unknown[0]!r}; expected a comma list of "
                         f"{', '.join(OPS)} (or 'all')")
    return names


def format_bytes(nbytes: int) -> str:
    """``1073741824`` -> ``1G``; exact powers of 1024 only get a unit."""
    for unit in ("T", "G", "M", "K"):
        scale = _UNITS[unit]
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"
