"""Slurm hostlist expansion: ``gpu[01-04,07]``, ``a[1-2],b3``, ``r[1-2]-n[1-2]``.

The order is Slurm's: ranges as written, left bracket outermost, so the first
host is node 0 (the master) and ``SLURM_NODEID`` indexes the list.
"""

from .errors import UsageError


def _split_top(text):
    """Split on commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"unbalanced ']' in Slurm node list {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth:
        raise UsageError(f"unbalanced '[' in Slurm node list {text!r}")
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _expand_range(spec, whole):
    values = []
    for item in spec.split(","):
        lo, dash, hi = item.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise UsageError(f"bad range {item!r} in Slurm node list {whole!r}")
        if not dash:
            values.append(lo)
            continue
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        if int(hi) < int(lo):
            raise UsageError(f"descending range {item!r} in Slurm node list {whole!r}")
        values.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return values


def _expand_one(pattern, whole):
    start = pattern.find("[")
    if start < 0:
        return [pattern]
    end = pattern.find("]", start)
    head, spec, tail = pattern[:start], pattern[start + 1:end], pattern[end + 1:]
    return [head + value + rest for value in _expand_range(spec, whole) for rest in _expand_one(tail, whole)]


def expand_nodelist(text):
    """All host names of a Slurm node list, in order."""
    hosts = []
    for part in _split_top(text or ""):
        hosts.extend(_expand_one(part, text))
    return hosts
