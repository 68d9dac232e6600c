"""The pure parts of the fan-out: differences, payload groups, the method, and dry-run lines."""

from __future__ import annotations

import pytest

from nodeweave.sync.node.digest import quick_files, quick_signature
from nodeweave.sync.filters import build_filter
from nodeweave.sync.transport.plan import (DELTA_MIN_BYTES, Difference, Manifest, choose_method, difference,
                                 group_payloads, itemize, local_quick, protected)


@pytest.fixture()
def tree(tmp_path):
    src = tmp_path / "src"
    for rel, text in {"train.py": "print(1)\n", "pkg/model.py": "x = 1\n", "big.bin": "b" * 2_000_000,
                      ".venv/keep": "venv\n"}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    (src / "link.py").symlink_to("train.py")
    filt = build_filter(src, use_gitignore=False)
    return filt, filt.walk(src)


LOCAL = {"train.py": "aa", "pkg/model.py": "bb", "big.bin": "cc", "link.py": "l:dd"}


def manifest(have=None, missing_dirs=(), extras=(), python=True, tools=("tar",)):
    return Manifest(python=python, tools=frozenset(tools) | ({"python3"} if python else set()), dest_ok=True,
                    have=dict(have or {}), missing_dirs=frozenset(missing_dirs), extras=list(extras))


def test_a_fresh_target_needs_every_file_and_directory(tree):
    filt, fileset = tree
    diff = difference(fileset, LOCAL, manifest(missing_dirs={"pkg"}), filt, delete=False)
    assert diff.send == ("big.bin", "link.py", "pkg/model.py", "train.py") and diff.dirs == ("pkg",)
    assert diff.update_bytes == 0 and not diff.empty


def test_only_what_differs_is_sent_and_update_bytes_count_old_copies(tree):
    filt, fileset = tree
    have = {**LOCAL, "big.bin": "old", "train.py": "old"}
    diff = difference(fileset, LOCAL, manifest(have), filt, delete=False)
    assert diff.send == ("big.bin", "train.py") and diff.dirs == ()
    assert diff.update_bytes == 2_000_000 + len("print(1)\n")
    assert difference(fileset, LOCAL, manifest(LOCAL), filt, delete=False).empty


def test_delete_spares_excluded_paths_and_removes_directories_deepest_first(tree):
    filt, fileset = tree
    extras = [("old", True), ("old/deep", True), ("old/deep/x.py", False), ("stale.py", False),
              (".venv", True), (".venv/bin/python", False), ("pkg/__pycache__/m.pyc", False),
              (".nodeweave-sync.json", False)]
    diff = difference(fileset, LOCAL, manifest(LOCAL, extras=extras), filt, delete=True)
    assert diff.delete == ("old/deep/x.py", "stale.py") and diff.rmdirs == ("old/deep", "old")
    assert difference(fileset, LOCAL, manifest(LOCAL, extras=extras), filt, delete=False).empty
    assert protected(filt, ".venv/bin/python", False) and protected(filt, ".nodeweave-sync.json", False)
    assert not protected(filt, "stale.py", False)


def test_targets_needing_the_same_files_share_one_payload():
    fresh = Difference(send=("a", "b"), dirs=("d",))
    diffs = {"t0": fresh, "t1": Difference(send=("a",)), "t2": fresh, "t3": Difference(),
             "t4": Difference(delete=("x",)), "t5": Difference(send=("a", "b"), dirs=("d",), delete=("y",))}
    groups = group_payloads(diffs)
    assert [(d.payload_key, members) for d, members in groups] == [
        ((("a", "b"), ("d",)), ["t0", "t2", "t5"]),  # deletions differ: still one payload
        ((("a",), ()), ["t1"])]  # t3 (nothing) and t4 (deletions only) need no payload


def test_the_method_follows_what_each_end_has():
    fresh, update = Difference(send=("a",)), Difference(send=("a",), update_bytes=DELTA_MIN_BYTES)
    py_rsync = manifest(tools=("rsync", "tar"))
    assert choose_method("auto", py_rsync, update, network_link=False, local_rsync=True) == ("stream", None)
    assert choose_method("auto", py_rsync, update, network_link=True, local_rsync=True) == ("rsync", None)
    assert choose_method("auto", py_rsync, fresh, network_link=True, local_rsync=True) == ("stream", None)
    assert choose_method("auto", py_rsync, update, network_link=True, local_rsync=False) == ("stream", None)
    plain = manifest(python=False, tools=("rsync", "tar"))
    assert choose_method("auto", plain, fresh, network_link=False, local_rsync=True) == ("rsync", None)
    assert choose_method("auto", plain, fresh, network_link=False, local_rsync=False) == ("tar", None)
    assert choose_method("tar", py_rsync, fresh, network_link=False, local_rsync=True) == ("tar", None)
    assert choose_method("stream", plain, fresh, network_link=False, local_rsync=True)[1] == (
        "--method stream: the target has no python3")
    assert choose_method("auto", manifest(python=False, tools=()), fresh, network_link=False,
                         local_rsync=True)[1] == "the target has neither python3, rsync nor tar"


def test_a_dry_run_speaks_rsyncs_itemize_words(tree):
    _, fileset = tree
    diff = Difference(send=("link.py", "train.py", "pkg/model.py"), dirs=("pkg",), delete=("extra.txt",),
                      rmdirs=("old",))
    lines = itemize(diff, manifest({"train.py": "old"}), fileset)
    assert lines == ["cd+++++++++ pkg/", "cL+++++++++ link.py", "<fc........ train.py",
                     "<f+++++++++ pkg/model.py", "*deleting   extra.txt", "*deleting   old/"]


def test_quick_signatures_agree_between_a_stat_and_a_find_listing(tree):
    _, fileset = tree
    quick = local_quick(fileset)
    st = (fileset.root / "train.py").stat()
    assert quick["train.py"] == quick_signature("f", st.st_size, int(st.st_mtime) + 0.999, st.st_mode)
    assert quick["link.py"] == quick_signature("l", 8, 0, 0o777, "train.py")
    (fileset.root / "train.py").chmod(0o755)
    assert quick_files(str(fileset.root), ["train.py"])["train.py"] != quick["train.py"]  # the x bit counts
