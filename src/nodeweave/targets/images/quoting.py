"""Quoting spec values into Dockerfile and bake-file text.

A Dockerfile has no JSON form for ``ARG``, ``ENV`` or ``LABEL``: values are
shell-like words in which ``$`` expands, ``"`` ends the word and ``\\``
escapes. :func:`dockerfile_word` turns any single-line string into a
double-quoted word that buildah and BuildKit read back verbatim (an engine
test builds an image to prove it). Exec-form instructions (``ENTRYPOINT``,
``CMD``) are JSON arrays, written with :func:`exec_form`.
"""

from __future__ import annotations

import json
from typing import Iterable

from nodeweave.errors import UsageError


def _control(ch: str) -> bool:
    return ord(ch) < 0x20 or ord(ch) == 0x7F


def is_single_line(value: str) -> bool:
    """True when no reader could take a character of ``value`` for a line break.

    Stricter than what a Dockerfile line can carry: C1 controls and U+2028/U+2029
    are line breaks to Python's ``str.splitlines`` (and so to Python tools that
    read Dockerfiles), though not to the engines' Go parsers.
    """
    return len(value.splitlines()) <= 1 and not any(_control(ch) or 0x80 <= ord(ch) <= 0x9F for ch in value)


def dockerfile_word(value: str, field: str) -> str:
    """``value`` as a double-quoted Dockerfile word with nothing left to expand."""
    if any(_control(ch) for ch in value):
        raise UsageError(f"{field}: {value!r} has a newline or control character, which a Dockerfile line "
                         "cannot hold; accepted: a single-line value")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def exec_form(argv: Iterable[str]) -> str:
    """A JSON array for exec-form ``ENTRYPOINT``/``CMD``: no shell, no expansion, ASCII only.

    Backslashes are written ``\\u005c``: a ``\\\\`` next to a quote makes hadolint
    (and any reader that scans for the escape character before parsing JSON)
    take the array for shell form.
    """
    return json.dumps(list(argv), ensure_ascii=True).replace("\\\\", "\\u005c")


def bake_literal(value: str) -> str:
    """``value`` with bake's HCL template markers escaped (``${`` and ``%{`` would interpolate)."""
    return value.replace("${", "$${").replace("%{", "%%{")


def run_lines(command: str) -> str:
    """A long ``a && b && c`` command as continuation lines, one step per line, as the template lays out RUN."""
    return " \\\n && ".join(part.strip() for part in command.split(" && "))
