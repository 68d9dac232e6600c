"""Plain dicts to YAML text: safe, byte-stable, and read the same by every parser.

The renderers build ordinary dicts in the order a reader expects and dump them
with PyYAML's safe dumper (never string templates, so no value can break out
of its field). PyYAML speaks YAML 1.1 and quotes ``yes`` or ``0x1f``, but
writes ``3e-4``, ``09`` and ``0o17`` bare: Go's YAML readers (kubectl,
kustomize) and YAML 1.2 take those for numbers, and the API server then
refuses a number where a string belongs (``args: [--lr, 3e-4]``). This dumper
quotes every string such a reader would not read back as a string.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import yaml

HEADER = "# Rendered by nodeweave from the cluster spec (nodeweave.yaml).\n# Edit the spec and run `nodeweave render manifests`; changes made here are overwritten.\n"


class _Dumper(yaml.SafeDumper):
    """SafeDumper that also quotes strings a YAML 1.2 reader would resolve to non-strings."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # PyYAML with allow_unicode writes NEL/LS/PS raw inside single quotes, where
    # a reader folds them into a space; double quotes escape them (\N, \L, \P).
    style = '"' if any(c in data for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)

# What YAML 1.2's core schema and Go's yaml (v2 and v3) resolve to numbers.
_GO_NUMBERS = {
    "tag:yaml.org,2002:int": r"^(?:[-+]?[0-9]+|0o[0-7]+|[-+]?0x[0-9a-fA-F]+)$",
    "tag:yaml.org,2002:float": r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
}
for _tag, _pattern in _GO_NUMBERS.items():
    _Dumper.add_implicit_resolver(_tag, re.compile(_pattern), list("-+.0123456789"))


def dump(doc: Any, comment: str = "") -> str:
    """One YAML document with the rendered-file header and an optional ``#`` comment block."""
    return HEADER + _comment(comment) + _body(doc)


def dump_all(docs: Iterable[Any], comment: str = "") -> str:
    """Several documents in one file, separated by ``---``."""
    return HEADER + _comment(comment) + "---\n".join(_body(doc) for doc in docs)


def _body(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096)


def _comment(text: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines())
