"""Tables that keep one line per row in a terminal of any width.

rich fits a table too wide for the terminal by folding its columns, down to one character a line: in 80 columns
`runs ls` printed a run's state one letter a line, 174 lines for 8 runs (walk15a A19), and `status` wrapped
``up (runnin/g)``. Every table nodeweave prints is a :class:`Table`: each row stays one line, as ``kubectl get``
and ``docker ps`` print theirs: where a table does not fit, its free text is cut with an ellipsis, the widest first,
never below :data:`FLOOR` characters; a key column (declared ``no_wrap=True``: an id, a node's name, an address) is
never cut, as it is what the user types next (walk16a A6); where that still does not fit, whole columns are left
out and a caption names them. Off a terminal (a pipe, a file: ``habits.output.table_width``) and with ``-o json``
every cell is whole.
"""

from __future__ import annotations

from copy import copy
from dataclasses import replace

import rich.table

FLOOR = 10  # characters a cut column keeps (its header's, when shorter)


class Table(rich.table.Table):
    """rich's table, fitted to the width it is drawn at (:func:`fitted`) each time it is drawn."""

    def __rich_console__(self, console, options):
        shown, width = fitted(self, console, options)
        if not console.is_terminal:  # a title or caption starts at column 0 off a terminal, as its rows do
            shown.title_justify = shown.caption_justify = "left"
        drawn = rich.table.Table.__rich_console__(shown, console, options.update_width(width))
        yield from drawn if console.is_terminal else _unpadded(drawn, console, options.update_width(width))

    def __rich_measure__(self, console, options):
        shown, width = fitted(self, console, options)
        return rich.table.Table.__rich_measure__(shown, console, options.update_width(width))


def _unpadded(drawn, console, options):
    """``drawn`` without the spaces that end its lines: off a terminal (a pipe, a file) the title, padded to the
    table's width, and the rows end where their text does, as ``kubectl get`` prints (walk17a A2: 32 spaces after
    ``status``'s title in a pipe); a centred title or caption is drawn from column 0 there (note18)."""
    from rich.segment import Segment

    segments = []
    for item in drawn:
        segments.extend([item] if isinstance(item, Segment) else console.render(item, options))
    for line in Segment.split_lines(segments):
        while line and not line[-1].control and not line[-1].text.rstrip():
            line.pop()
        if line and not line[-1].control:
            line[-1] = Segment(line[-1].text.rstrip(), line[-1].style)
        yield from line
        yield Segment.line()


def fitted(table: rich.table.Table, console, options):
    """(a copy of ``table`` whose every row is one line, the width to draw it at): the free text cut with an
    ellipsis from the widest down to the level that fits ``options.max_width``, never below :data:`FLOOR`
    characters, the short columns never. A key column (``no_wrap``: an id, a node, a time) or one given a
    ``min_width`` of its own is never cut: an id cut to ``20261201T…`` is one the user cannot type next (walk16a
    A6). Where all of them do not fit, whole columns are left out: the first column is kept, then each key column,
    then each free one, left to right, that still fits; a caption names those left out."""
    shown = copy(table)
    shown.columns = [replace(column) for column in table.columns]
    everyone = shown.columns
    keys = [c for c in everyone[1:] if c.no_wrap or c.width is not None or c.min_width is not None]
    kept = everyone
    if _drawn(shown, everyone, console, options)[0] > options.max_width:
        kept = everyone[:1]
        for candidate in keys + [c for c in everyone[1:] if c not in keys]:
            trial = [c for c in everyone if c in kept or c is candidate]
            if _drawn(shown, trial, console, options)[0] <= options.max_width:
                kept = trial
    drawn, cut, content = _drawn(shown, kept, console, options)
    for i, column in enumerate(shown.columns):
        column.no_wrap = True
        if i in cut:
            column.overflow, column.max_width = "ellipsis", cut[i]
        else:
            column.min_width = max(column.min_width or 0, content[i])
    left_out = [str(c.header) or f"column {i + 1}" for i, c in enumerate(everyone) if c not in kept]
    if left_out:
        note = (f"not shown in {options.max_width} columns: {', '.join(left_out)} (a wider terminal, or a pipe, "
                "shows every column)")
        shown.caption = f"{shown.caption}\n{note}" if shown.caption else note
        shown.caption_justify = "left"
    return shown, max(options.max_width, drawn)


def _drawn(shown: rich.table.Table, columns, console, options):
    """(the width ``shown`` draws at with only ``columns``, {column: the width it is cut to}, each column's content
    width): ``shown`` is left holding just those columns."""
    shown.columns = list(columns)
    for index, column in enumerate(shown.columns):
        column._index = index
    cut, content, pads = _cuts(shown, console, options)
    return shown._extra_width + sum(pads) + sum(cut.get(i, width) for i, width in enumerate(content)), cut, content


def _cuts(table: rich.table.Table, console, options):
    """({column: the width its free text is cut to}, each column's content width, each column's padding): only
    the free columns (not ``no_wrap``, no ``width`` or ``min_width`` of their own) are cut, never below
    :data:`FLOOR`."""
    natural = [table._measure_column(console, options, column).maximum for column in table.columns]
    pads = [table._get_padding_width(column._index) for column in table.columns]
    content = [width - pad for width, pad in zip(natural, pads)]
    free = [i for i, column in enumerate(table.columns)
            if not column.no_wrap and column.width is None and column.min_width is None]
    room = options.max_width - table._extra_width - sum(pads)
    others = sum(content[i] for i in range(len(content)) if i not in free)
    level = _level([content[i] for i in free], room - others)
    return {i: level for i in free if level is not None and content[i] > level}, content, pads


def _level(widths, room: int, floor: int = FLOOR):
    """The width every cell wider than it is cut to so that ``widths`` fit in ``room`` (never below ``floor``), or
    None when they fit as they are."""
    if sum(widths) <= room:
        return None
    level = max(widths, default=0)
    while level > floor and sum(min(width, level) for width in widths) > room:
        level -= 1
    return level
