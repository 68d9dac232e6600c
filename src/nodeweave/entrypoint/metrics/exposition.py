"""Prometheus' text exposition format (version 0.0.4), from plain families: pure, no I/O.

A family is ``(name, type, help, samples)`` with samples ``[(labels dict, value)]``. Names follow
Prometheus' conventions (base units, ``_total`` on counters, ``_seconds``/``_bytes``/``_ratio``);
``promtool check metrics`` reads the output in tests/test_metrics_exposition.py.
"""

import math
import re

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = ("counter", "gauge", "untyped")


def _escape_help(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def number(value):
    """A sample value as Prometheus writes it (``+Inf``, ``NaN``, no exponent noise for whole numbers)."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(families):
    """The exposition text of ``families``; families without samples are left out (promtool flags them)."""
    out = []
    seen = set()
    for name, kind, help_text, samples in families:
        if not NAME.match(name) or kind not in TYPES:
            raise ValueError(f"not a metric family: {name!r} {kind!r}")
        if name in seen:
            raise ValueError(f"metric family {name} given twice")
        seen.add(name)
        rows = [(labels, value) for labels, value in samples if value is not None]
        if not rows:
            continue
        out.append(f"# HELP {name} {_escape_help(help_text)}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in rows:
            pairs = []
            for key, text in sorted(labels.items()):
                if not LABEL.match(key) or key.startswith("__"):
                    raise ValueError(f"not a label name: {key!r}")
                if text is None:
                    continue
                pairs.append(f'{key}="{_escape_value(text)}"')
            out.append(f"{name}{{{','.join(pairs)}}} {number(value)}" if pairs else f"{name} {number(value)}")
    return "\n".join(out) + "\n" if out else ""
