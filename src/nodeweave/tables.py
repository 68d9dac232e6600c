"""Tables that keep one line per row in a terminal of any width.

rich fits a table too wide for the terminal by folding its columns, down to one character a line: in 80 columns
`runs ls` printed a run's state one letter a line, 174 lines for 8 runs (walk15a A19), and `status` wrapped
``up (runnin/g)``. Every table nodeweave prints is a :class:`Table`: each row stays one line, as ``kubectl get``
and ``docker ps`` print theirs: where a table does not fit, its widest cells are cut with an ellipsis, the widest
first, never below :data:`FLOOR` characters; a key column (declared ``no_wrap=True``: an id, a node's name, an
address) only when the others cut to that floor still do not fit (rich crops a line at the terminal's edge). Off a terminal (a pipe, a file: ``habits.output.table_width``) and with
``-o json`` every cell is whole.
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
        yield from rich.table.Table.__rich_console__(shown, console, options.update_width(width))

    def __rich_measure__(self, console, options):
        shown, width = fitted(self, console, options)
        return rich.table.Table.__rich_measure__(shown, console, options.update_width(width))


def fitted(table: rich.table.Table, console, options):
    """(a copy of ``table`` whose every row is one line, the width to draw it at): cells cut with an ellipsis from
    the widest down to the level that fits ``options.max_width``, never below :data:`FLOOR` characters, the short
    columns never. The free text first; the key columns (``no_wrap``: an id, a node) only where the rest cut to the
    floor still does not fit (rich crops a line at the terminal's edge: a column past it would be lost whole); last,
    the free text below the floor. A column given a ``min_width`` of its own is never cut. Where nothing fits, the
    width is the table's own, its lines cropped by rich."""
    shown = copy(table)
    shown.columns = [replace(column) for column in table.columns]
    natural = [shown._measure_column(console, options, column).maximum for column in shown.columns]
    pads = [shown._get_padding_width(column._index) for column in shown.columns]
    content = [width - pad for width, pad in zip(natural, pads)]
    free = [i for i, column in enumerate(shown.columns) if not column.no_wrap and column.width is None]
    # a column given its own min_width (status's address: "cut in half helps no one") is never cut
    keys = [i for i, column in enumerate(shown.columns) if column.width is None and column.min_width is None]
    room = options.max_width - shown._extra_width - sum(pads)
    cut = {}
    for candidates, floor in ((free, FLOOR), ([i for i in keys if i not in free], FLOOR), (free, 1)):
        others = sum(cut.get(i, content[i]) for i in range(len(content)) if i not in candidates)
        level = _level([content[i] for i in candidates], room - others, floor)
        cut = {**{i: w for i, w in cut.items() if i not in candidates},
               **{i: level for i in candidates if level is not None and content[i] > level}}
        if sum(cut.get(i, width) for i, width in enumerate(content)) <= room:
            break
    for i, column in enumerate(shown.columns):
        column.no_wrap = True
        if i in cut:
            column.overflow, column.max_width = "ellipsis", cut[i]
        else:
            column.min_width = max(column.min_width or 0, content[i])
    drawn = shown._extra_width + sum(pads) + sum(cut.get(i, width) for i, width in enumerate(content))
    return shown, max(options.max_width, drawn)


def _level(widths, room: int, floor: int = FLOOR):
    """The width every cell wider than it is cut to so that ``widths`` fit in ``room`` (never below ``floor``), or
    None when they fit as they are."""
    if sum(widths) <= room:
        return None
    level = max(widths, default=0)
    while level > floor and sum(min(width, level) for width in widths) > room:
        level -= 1
    return level
