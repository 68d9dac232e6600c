"""Manifest files: the rendered-file header, comments, and multi-document files.

Quoting is :mod:`nodeweave.yamltext`'s, shared with the compose renderer.
"""

from __future__ import annotations

from typing import Any, Iterable

from nodeweave.yamltext import comment_lines, dump_yaml

HEADER = ("# Rendered by nodeweave from the cluster spec (nodeweave.yaml).\n"
          "# Edit the spec and run `nodeweave render {target}`; changes made here are overwritten.\n")


def dump(doc: Any, comment: str = "", target: str = "manifests") -> str:
    """One YAML document with the rendered-file header (naming the render target) and an optional comment."""
    return HEADER.format(target=target) + _comment(comment) + _body(doc)


def dump_all(docs: Iterable[Any], comment: str = "") -> str:
    """Several documents in one file, separated by ``---``."""
    return HEADER.format(target="manifests") + _comment(comment) + "---\n".join(_body(doc) for doc in docs)


def _body(doc: Any) -> str:
    return dump_yaml(doc, sort_keys=False)


def _comment(text: str) -> str:
    return comment_lines(text) if text else ""
