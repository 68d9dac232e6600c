"""What a Dockerfile reads from its build context, and whether the context holds it.

A context that lacks a file the Dockerfile COPYs or ADDs fails only when the
engine reaches that line, after the apt, torch and DeepSpeed layers; so
``nodeweave image build`` (and ``--target openshift``, and ``--dry-run``)
reads the Dockerfile's COPY/ADD sources first and refuses, naming the file,
when one is missing or the context's ``.dockerignore`` keeps it out. The
reading follows the Dockerfile reference: ``\\`` continues a line, flags
(``--chown``, ``--chmod``, ``--link``) come before the sources, the last word
is the destination, a JSON array is the exec form, and ``--from`` copies from
another stage or image, not from the context. ``.dockerignore`` follows
Docker's rules: patterns relative to the context, ``*`` within one path
element, ``**`` across any number, ``!`` re-admits, the last match wins, and a
path is out when a folder above it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List, Optional, Sequence

from nodeweave.entrypoint import bounded

_CONTEXT_READERS = ("COPY", "ADD")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


def logical_lines(text: str) -> List[str]:
    """The instructions of a Dockerfile: comments dropped, ``\\`` continuations joined."""
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") and not current:
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip():
            lines.append(current.strip())
        current = ""
    if current.strip():
        lines.append(current.strip())
    return lines


def _sources(arguments: str) -> Optional[List[str]]:
    """The sources of one COPY/ADD (None when it reads another stage or image, ``--from``)."""
    words = arguments.split()
    while words and words[0].startswith("--"):
        if words[0].startswith("--from"):
            return None
        words.pop(0)
    rest = " ".join(words)
    if rest.startswith("["):
        try:
            words = json.loads(rest)
        except ValueError:
            return []
    if len(words) < 2:
        return []
    return [word for word in words[:-1] if not _URL.match(word)]


def copied_sources(text: str) -> List[str]:
    """Every context path the Dockerfile's COPY and ADD instructions read, in order, each once."""
    found: List[str] = []
    for line in logical_lines(text):
        instruction, _, arguments = line.partition(" ")
        if instruction.upper() not in _CONTEXT_READERS:
            continue
        for source in _sources(arguments) or []:
            cleaned = source.strip("/") or "."
            if cleaned.startswith("./"):
                cleaned = cleaned[2:]
            if cleaned not in found:
                found.append(cleaned)
    return found


def _pattern(line: str) -> re.Pattern:
    """A .dockerignore pattern as a regular expression over context-relative paths."""
    parts = []
    text = line.strip("/")
    index = 0
    while index < len(text):
        if text.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif text.startswith("**", index):
            parts.append(".*")
            index += 2
        elif text[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif text[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(text[index]))
            index += 1
    return re.compile("^" + "".join(parts) + "$")


class DockerIgnore:
    """The patterns of a context's ``.dockerignore`` (none: everything is admitted)."""

    def __init__(self, lines: Sequence[str]):
        self.rules = []
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            body = line[1:].strip() if negated else line
            if body.startswith("./"):
                body = body[2:]
            self.rules.append((negated, _pattern(body)))

    @classmethod
    def of(cls, context: Path) -> "DockerIgnore":
        """The context's patterns; a ``.dockerignore`` that is a folder, a pipe or a device is refused (exit 2):
        the engine would fail on it, or send the whole context unfiltered (replay N9)."""
        path = context / ".dockerignore"
        if (path.exists() or path.is_symlink()) and not path.is_file():
            import stat

            from nodeweave.errors import UsageError

            mode = path.stat().st_mode if path.exists() else 0
            what = ("a link to nothing" if not mode else "a folder" if stat.S_ISDIR(mode) else
                    "a named pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket")
            raise UsageError(f"{path} is {what}, not a file: the engine reads the build context's .dockerignore as "
                             "its list of what stays out; accepted: a file of patterns, or none (move that one away)")
        return cls(bounded.read_text(path, bounded.TEXT_CAP, "a .dockerignore").splitlines() if path.is_file() else [])

    def excludes(self, path: str) -> bool:
        """Whether ``path`` stays out of the build: the last pattern matching it or a folder above it has no ``!``."""
        parts = path.strip("/").split("/")
        prefixes = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
        out = False
        for negated, pattern in self.rules:
            if any(pattern.match(prefix) for prefix in prefixes):
                out = not negated
        return out


def missing_sources(context: Path, dockerfile_text: str) -> List[str]:
    """One line per COPY/ADD source the context lacks or its ``.dockerignore`` keeps out; empty when all is there."""
    ignore = DockerIgnore.of(context)
    problems = []
    for source in copied_sources(dockerfile_text):
        if any(ch in source for ch in "*?["):
            if not any(context.glob(source)):
                problems.append(f"{source} matches nothing in {context}")
            continue
        if source != "." and not (context / source).exists():
            problems.append(f"{source} is not in {context}")
        elif source != "." and ignore.excludes(source):
            problems.append(f"{source} is kept out by {context / '.dockerignore'}")
    return problems
