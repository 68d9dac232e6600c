"""walk16 rows fixed by fix18e, one test per class: narrow-terminal tables, one concept spelt per verb, a hint's
pointer that holds what it promises, a metric's best read the user's way, --dry-run reaching no host, and --help
running no start-up check."""

import io


def test_a6_a_narrow_table_never_cuts_an_id_and_names_the_columns_it_leaves_out():
    """A6: at 60 columns `runs ls` cut the run id to `20261201T…` and every other column to a letter; `status` the
    same. A key column (the id, the node, its address) is never cut: columns that do not fit are left out whole,
    and a caption names them."""
    from nodeweave.tables import Table
    from nodeweave.usertext import console

    run_id = "20261201T122459Z-proj-01-OMP_NUM_THREADS-1"
    runs = Table(title="runs")
    for column in ("run", "job", "started", "state", "seconds", "nodes", "command"):
        runs.add_column(column, no_wrap=column in ("run", "started"), overflow="fold")
    runs.add_row(run_id, "proj", "2026-12-01T12:24:59.719Z", "running (2 nodes)", "14.5", "2", "train.py")
    status = Table(title="proj")
    status.add_column("node", no_wrap=True)
    status.add_column("reached as", no_wrap=True, min_width=13)
    for column in ("state", "mode", "rank", "plan", "run in progress", "GPU use, memory"):
        status.add_column(column, overflow="fold")
    status.add_row("node-0", "podman:proj-0", "up (running)", "hold", "0", "f793a3c", "-", "-")
    for table, key, cells in ((runs, run_id, ()), (status, "podman:proj-0", ("node-0",))):
        for width in (60, 80):
            out = console(file=io.StringIO(), width=width, color_system=None)
            out.print(table)
            text = out.file.getvalue()
            assert all(len(line) <= width for line in text.splitlines()), text
            row = next(line for line in text.splitlines() if key in line)  # the id whole, on one line
            assert all(cell in row for cell in cells), text
            assert "…" not in row.split("│")[1], text
            missing = [str(c.header) for c in table.columns if str(c.header)[:6] not in text.splitlines()[2]]
            if missing:
                assert f"not shown in {width} columns: {', '.join(missing)}" in " ".join(text.split()), text
                assert not any(len(cell.strip()) <= 2 and "…" in cell for cell in row.split("│")), text  # "u…"
