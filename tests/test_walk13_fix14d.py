"""fix14d (issue 43; walk13b rows B13, B2): what the checkpoint finder walks, and what it says it left.

B13: the finder's bounds (``SEARCH_FOLDERS`` folders, ``SEARCH_DEPTH`` levels) ended its walk in silence, the folder
limit in name order, so a newer save in a folder past the limit (``ck/zzz/`` after 600 ``run<N>/`` folders) was never
seen and nothing said so. Now the newest folders are looked into first, and every folder left is named (``--explain``'s
passed-over notes, node 0's log at every restart) with the bound that left it.

B2: a link inside the checkpoint folder leading back into it (``loop/up -> ..``, ``current -> run-5``, a file linked
to a save elsewhere in the folder) walked the same saves again under a second name: each save counted twice and the
newest handed out as ``loop/up/step-100.pt``. Now every save is one save, under its own name.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import pytest

from nodeweave.entrypoint.recovery import checkpoints
from nodeweave.entrypoint.recovery.setup import newest_checkpoint

OLD = 1_600_000_000  # an mtime long before the test's own saves


def save(path: Path) -> Path:
    """A whole torch.save zip at ``path``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({}, protocol=2))
        archive.writestr("archive/data/0", b"\0" * 256)
        archive.writestr("archive/version", b"3\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


def past_the_folder_limit(ck: Path) -> tuple[Path, str]:
    """More folders than the finder looks into (each a run folder with a sub-folder, older), then one newer
    folder holding the newest save: the walker's ``ck/run<N>/sub`` and ``ck/zzz/ckpt_9000.pt``."""
    save(ck / "ckpt_1.pt")
    for index in range(checkpoints.SEARCH_FOLDERS // 2 + 20):
        (ck / f"run{index}" / "sub").mkdir(parents=True)
        os.utime(ck / f"run{index}", (OLD, OLD))
    save(ck / "zzz" / "ckpt_9000.pt")
    return ck / "zzz" / "ckpt_9000.pt", checkpoints.UNSCANNED_LIMIT


def past_the_depth(ck: Path) -> tuple[Path | None, str]:
    """A save more levels down than the finder looks: ``ck/a/b/c/d/ckpt_5.pt``."""
    save(ck / "ckpt_1.pt")
    save(ck / "a" / "b" / "c" / "d" / "ckpt_5.pt")
    return None, checkpoints.UNSCANNED_DEEP


@pytest.mark.parametrize("bound", [past_the_folder_limit, past_the_depth], ids=["SEARCH_FOLDERS", "SEARCH_DEPTH"])
def test_every_bound_of_the_finder_says_the_folders_it_left(tmp_path, bound):
    """B13: each of the finder's bounds names the folders it never looked into (in --explain's passed-over notes
    and node 0's restart log), and at the folder limit the newest folders are the ones looked into."""
    ck = tmp_path / "ck"
    newest, why = bound(ck)
    lines, passed = [], []
    found, _, _ = newest_checkpoint(str(ck), lines.append, passed_over=passed)
    if newest is not None:
        assert found == str(newest)  # the newest folder is looked into, the old run folders left
    left = [path for path, reason in passed if reason == why]
    assert left, passed
    assert all(os.path.isdir(path) for path in left)
    assert any("not looked into" in line and line.startswith("recovery: passed over") for line in lines), lines
    assert checkpoints.already_saved(str(ck)).count == (2 if newest is not None else 1)


def link_back_to_the_folder(ck: Path) -> set[str]:
    """The walker's ``loop/up -> ..``."""
    (ck / "loop").mkdir()
    (ck / "loop" / "up").symlink_to("..")
    return set()


def link_before_a_run_folder(ck: Path) -> set[str]:
    """``a_current -> run-5``: a link to a folder the finder also walks under its own name, met first."""
    save(ck / "run-5" / "ckpt_300.pt")
    (ck / "a_current").symlink_to("run-5")
    return {"run-5/ckpt_300.pt"}


def link_to_a_saved_file(ck: Path) -> set[str]:
    """``best/ckpt_200.pt -> ../ckpt_200.pt``: a save's file linked from another folder inside."""
    (ck / "best").mkdir()
    (ck / "best" / "ckpt_200.pt").symlink_to("../ckpt_200.pt")
    return set()


@pytest.mark.parametrize("link", [link_back_to_the_folder, link_before_a_run_folder, link_to_a_saved_file])
def test_a_link_inside_the_folder_never_makes_a_save_twice(tmp_path, link):
    """B2: a link inside the checkpoint folder to a folder or save there: every save counted once, named and handed
    out by its own path, never through the link."""
    ck = tmp_path / "ck"
    save(ck / "ckpt_100.pt")
    save(ck / "ckpt_200.pt")
    real = {"ckpt_100.pt", "ckpt_200.pt"} | link(ck)  # the saves, each by its own path
    found = checkpoints.scan(str(ck))
    named = sorted(os.path.relpath(path, ck) for path, _, _, _ in found.candidates)
    assert named == sorted(real)
    assert checkpoints.already_saved(str(ck)).count == len(real)
    newest = checkpoints.newest_complete(str(ck))
    assert os.path.relpath(newest.path, ck) in real
