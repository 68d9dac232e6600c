"""YAML text that every reader takes back exactly as nodeweave meant it.

The renderers build plain dicts and dump them with PyYAML's safe dumper (never
string templates, so no value can break out of its field). PyYAML speaks
YAML 1.1: it quotes ``yes`` or ``0x1f`` but writes ``3e-4``, ``0o17``, ``1_0``
or ``09`` bare, and Go's YAML readers (docker compose, kubectl, kustomize) and
YAML 1.2 take those for numbers, then refuse a number where a string belongs
(``args: [--lr, 3e-4]``). This dumper quotes every such string.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


# libyaml's emitter where PyYAML was built with it: the same text (the golden and property tests hold
# it to that), several times faster, which `render all --check` on every call feels.
_BASE = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Dumper(_BASE):
    """SafeDumper that also quotes strings a YAML 1.2 or Go reader would resolve to non-strings."""


class EscapingDumper(yaml.SafeDumper):
    """The same rules in PyYAML's own emitter, which writes a byte that is not UTF-8 (a file or folder name from a
    Latin-1 share, held as Python's surrogate escape) as ``"\\uDCFF"``, as ``-o json`` writes ``"\\udcff"``;
    libyaml's emitter refuses such a string with a traceback (walk7 A31)."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # PyYAML writes NEL/LS/PS raw inside plain or single-quoted scalars, where
    # readers fold them into a space; double quotes escape them (\N, \L, \P).
    style = '"' if any(c in data for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


for _dumper in (Dumper, EscapingDumper):
    _dumper.add_representer(str, _represent_str)

# What YAML 1.2's core schema and Go's yaml (v2 and v3) resolve to numbers.
for _tag, _pattern in {
    "tag:yaml.org,2002:int": r"^(?:[-+]?[0-9][0-9_]*|0o[0-7]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+)$",
    "tag:yaml.org,2002:float": r"^(?:[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
}.items():
    for _dumper in (Dumper, EscapingDumper):
        _dumper.add_implicit_resolver(_tag, re.compile(_pattern), list("-+.0123456789"))


def dump_yaml(document: Any, *, sort_keys: bool) -> str:
    """One document, byte-stable: no line wrapping, UTF-8 characters kept as they are, a byte that is not UTF-8
    escaped (``EscapingDumper``)."""
    options = dict(sort_keys=sort_keys, default_flow_style=False, allow_unicode=True, width=10_000)
    try:
        return yaml.dump(document, Dumper=Dumper, **options)
    except UnicodeEncodeError:
        return yaml.dump(document, Dumper=EscapingDumper, **options)


# What a YAML stream may not hold raw, even in a comment (YAML 1.2, 5.1 "c-printable"): C0 controls but tab, line
# feed and carriage return, DEL, C1 controls but NEL, surrogates, U+FFFE and U+FFFF; and the line breaks a reader
# counts as one (NEL, LS, PS) that would end a comment line midway.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff\x85\u2028\u2029]")


def comment_lines(text: str) -> str:
    """``text`` as YAML comment lines (``# ...``): a spec value quoted in it (a script named with a control
    character, say) is written as its escape, so the file stays one every YAML reader loads."""
    shown = _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return "".join(f"# {line}".rstrip() + "\n" for line in shown.split("\n"))
