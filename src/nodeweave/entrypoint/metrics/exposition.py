"""Prometheus' text exposition format (version 0.0.4), from plain families: pure, no I/O.

A family is ``(name, type, help, samples)`` with samples ``[(labels dict, value)]`` (or, for the large
per-rank families, :data:`Columns` of label texts and values). Names follow
Prometheus' conventions (base units, ``_total`` on counters, ``_seconds``/``_bytes``/``_ratio``);
``promtool check metrics`` reads the output in tests/test_metrics_exposition.py.
"""

import collections
import math
import re

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = ("counter", "gauge", "untyped")


def _escape_help(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text):
    text = str(text)
    if "\\" not in text and "\n" not in text and '"' not in text:
        return text
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


Columns = collections.namedtuple("Columns", "labels values")
Columns.__doc__ = """A family's samples as two parallel sequences in place of ``[(labels, value)]``: the per-rank
families at 8,192 ranks, without a tuple made (and unpacked again) for each of their 49,152 samples."""

SPECIAL = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}


def number(value):
    """A sample value as Prometheus writes it (``+Inf``, ``NaN``, no exponent noise for whole numbers).
    From ``repr`` alone: a scrape at 8,192 ranks formats ~50,000 of them."""
    if type(value) is not float:
        if type(value) is int:
            return str(value)
        value = float(value)
    text = repr(value)
    if text[-2:] == ".0":  # whole: as an int below 1e15 (-0.0 too), repr's own digits above
        if -1e15 < value < 1e15:
            return text[:-2] if value else "0"
        return text
    return SPECIAL.get(text, text)


def label_text(labels, checked=None):
    """``{a="1",b="x"}`` of one sample's labels (sorted; None values left out); ``checked``: names known good.
    A family may carry this text in place of a labels dict (the per-rank families: made once a rank)."""
    pairs = []
    for key in sorted(labels):
        if checked is None or key not in checked:
            if not LABEL.match(key) or key.startswith("__"):
                raise ValueError(f"not a label name: {key!r}")
            if checked is not None:
                checked.add(key)
        text = labels[key]
        if text is not None:
            pairs.append(f'{key}="{_escape_value(text)}"')
    return "{" + ",".join(pairs) + "}" if pairs else ""


def family_lines(name, samples, text_of):
    """The lines ``name{labels} value`` of one family's samples (None values left out), each value as
    :func:`number` writes it, at a family's pace rather than a call of :func:`number` a sample: at 8,192 ranks
    these lines are most of a scrape's CPU, and a float's ``repr`` most of that.

    Ints are written by the f-string itself. Floats that many ranks share (a stalled job's rates of 0, the
    straggler ratio 1 of typical ranks) are formatted once per distinct value; otherwise by ``repr`` inline,
    and only the lines that may need putting right (a whole float's ``.0``, ``nan``, ``inf``: the text ends in
    0, n or f) go through :func:`number` again. Anything else (a bool) goes through it line by line."""
    labels, values = samples if type(samples) is Columns else zip(*samples)
    if None in values:
        kept = [(label, value) for label, value in zip(labels, values) if value is not None]
        if not kept:
            return []
        labels, values = zip(*kept)
    if not set(map(type, labels)) <= {str}:
        labels = list(map(text_of, labels))
    kinds = set(map(type, values))
    if kinds <= {int}:
        return [f"{name}{label} {value}" for label, value in zip(labels, values)]
    if not kinds <= {int, float}:
        return [f"{name}{label} {number(value)}" for label, value in zip(labels, values)]
    # (floats alone: 1e15 and 10**15 are one key but two texts; the first 64 say whether all are worth a look)
    if kinds == {float} and len(set(values[:64])) * 4 <= len(values[:64]):
        distinct = set(values)
        if len(distinct) * 4 <= len(values):
            texts = {value: number(value) for value in distinct}
            return [f"{name}{label} {texts[value]}" for label, value in zip(labels, values)]
    lines = [f"{name}{label} {value!r}" for label, value in zip(labels, values)]
    for i in [i for i, line in enumerate(lines) if line[-1] in "0nf"]:
        lines[i] = f"{name}{labels[i]} {number(values[i])}"
    return lines


def render(families):
    """The exposition text of ``families``; families without samples are left out (promtool flags them).
    A family's samples are ``[(labels, value)]`` or :class:`Columns`. A sample's labels are a dict, or their
    text from :func:`label_text`; a labels dict shared by several samples (one rank's, in every per-rank
    family) is written once."""
    out = []
    seen, checked, written = set(), set(), {}

    def text_of(labels):
        if type(labels) is str:
            return labels
        key = id(labels)
        text = written.get(key)
        if text is None or text[0] is not labels:
            text = written[key] = (labels, label_text(labels, checked))
        return text[1]

    for name, kind, help_text, samples in families:
        if not NAME.match(name) or kind not in TYPES:
            raise ValueError(f"not a metric family: {name!r} {kind!r}")
        if name in seen:
            raise ValueError(f"metric family {name} given twice")
        seen.add(name)
        lines = family_lines(name, samples, text_of) if samples and samples[0] else []
        if lines:  # one block a family: its lines are freed before the next family's are made
            out.append(f"# HELP {name} {_escape_help(help_text)}\n# TYPE {name} {kind}\n" + "\n".join(lines))
    return "\n".join(out) + "\n" if out else ""
