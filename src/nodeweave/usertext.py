"""User text that is not UTF-8: one way for every printer and hasher of it.

An argument, a folder or a file name the user typed or owns may hold bytes that are not UTF-8 (a file from an old
Latin-1 share, a tarball made on another machine). Python holds each such byte as a "surrogate escape"
(``'\\udcff'`` for byte 0xff), which a strict encoder refuses with a traceback (walk7 A31, A32). So:

- what is hashed or counted in bytes takes :func:`as_bytes` (the bytes the file system holds, as ``os.fsencode``);
- what is printed on stdout goes out as those same bytes (``surrogateescape``, set once in ``cli.main``), so a plan's
  line pasted back into the shell names the same file;
- what is said to a person on stderr shows each such byte as the shell writes it, ``$'\\xff'``, never Python's
  ``'\\udcff'`` (:func:`shell_shown`, applied to every line ``cli.main`` writes there).

Text a user or a node wrote (a log line, a recorded command, a node's name, a path) is printed as text, never read as
rich markup: ``[/x]`` in a log line is no closing tag (replay10 R1, R2: a traceback), ``[rank0]:`` no style. So every
rich console nodeweave prints through is made by :func:`console` (``markup=False``: a ``str`` printed, a table's cell or
title, is its own text), and nodeweave's own colours are given as :class:`rich.text.Text` styles (:func:`styled`).
"""

from __future__ import annotations

import io
import re

_RAW = re.compile("[\udc80-\udcff]+")
# A Python repr in a message (`{value!r}`) that holds a surrogate escape: '...\udcff...'
_QUOTED = re.compile(r"'((?:[^'\\\n]|\\.)*?\\udc[89a-f][0-9a-f](?:[^'\\\n]|\\.)*?)'")
_ESCAPE = re.compile(r"\\udc([89a-f][0-9a-f])")


def cell(value) -> str:
    """A table cell for a person: ``-`` for a value not known (yet), never Python's ``None`` (walk9 A18: a run still
    going has no exit code or seconds); every other value as ``str`` gives it."""
    return "-" if value is None else str(value)


def console(**options):
    """A rich console that reads no markup in what it prints (a ``str``, a table's cell or title: each is its text as
    written); nodeweave's own styles go as :func:`styled` text. ``options`` as ``rich.console.Console`` takes them."""
    from rich.console import Console

    return Console(markup=False, **options)


def styled(*parts):
    """One line of parts, each a ``str`` (plain, as written) or ``(str, style)``: nodeweave's colours around a user's
    text, which is never read as markup (``rich.text.Text.assemble``)."""
    from rich.text import Text

    return Text.assemble(*[part if isinstance(part, tuple) else str(part) for part in parts])


def as_bytes(text) -> bytes:
    """``text`` as the bytes the file system (or the shell) holds: UTF-8, a surrogate escape as its own byte."""
    return str(text).encode("utf-8", "surrogateescape")


def is_utf8(text) -> bool:
    """Whether ``text`` holds no byte that is not UTF-8."""
    return not _RAW.search(str(text))


def visible(text: str) -> str:
    """``text`` with each character a terminal would not show as itself written as Python writes it in a string
    (``\\u202e``, ``\\x07``): a right-to-left override, a zero-width or control character in a value the user gave
    would reorder or hide the rest of the line it is echoed in (replay10 R4: ``--bind $'\\u202e'``). A line break
    and a tab stay; a byte that is not UTF-8 is left to :func:`shell_shown`. Applied to every error line
    ``cli.main`` writes, as ``top --url``'s own refusal quotes such a value (``repr``); its words and lines are
    bounded as the entrypoint's are (``quoting.bounded``: a value 100,000 characters long, walk18b B9)."""
    from nodeweave.entrypoint.quoting import bounded

    text = bounded(text)
    return "".join(char if char.isprintable() or char in "\n\t" or "\udc80" <= char <= "\udcff"
                   else repr(char)[1:-1] for char in text)


def shell_shown(text: str) -> str:
    """``text`` with each byte that is not UTF-8 written as the shell writes it: ``d$'\\xff'ir`` for a raw one,
    ``$'d\\xffir'`` for one inside a Python repr (``'d\\udcffir'``)."""
    text = _QUOTED.sub(lambda m: "$'" + _ESCAPE.sub(r"\\x\1", m.group(1)) + "'", text)
    return _RAW.sub(lambda m: "$'" + "".join(f"\\x{ord(c) - 0xDC00:02x}" for c in m.group(0)) + "'", text)


class ShellShownStream(io.TextIOWrapper):
    """A text stream that writes :func:`shell_shown` of what it is given: standard error, for people."""

    def write(self, text):
        return super().write(shell_shown(text))


def people_stream(stream):
    """``stream`` (standard error) rewrapped so every line it carries shows a byte that is not UTF-8 as the shell
    does; ``stream`` itself where it has no byte buffer (a test's capture)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None or isinstance(stream, ShellShownStream):
        return stream
    stream.flush()
    return ShellShownStream(buffer, encoding=getattr(stream, "encoding", None) or "utf-8", errors="surrogateescape", line_buffering=True,
                            write_through=True)
