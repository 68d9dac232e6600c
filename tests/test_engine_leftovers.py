"""The end-of-run sweep of this checkout's test images, on real podman.

Other test groups use podman meanwhile, so each test sweeps a repository of
its own: the same start-then-finish logic the run's sweep uses on
``e2e_harness.REGISTRY``.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

import engine_leftovers

sys.path.insert(0, str(Path(__file__).parent / "e2e"))
from e2e_harness import REGISTRY  # noqa: E402


def _podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120)


def _import_image(ref: str) -> None:
    """A one-file image, made in a second with ``podman import``; its content differs with ``ref``."""
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        data = ref.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out = subprocess.run(["podman", "import", "-", ref], input=payload.getvalue(), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr


def _exists(ref: str) -> bool:
    return _podman("image", "exists", ref).returncode == 0


def test_the_sweep_reads_the_repository_the_e2e_images_are_built_under():
    assert engine_leftovers.REGISTRY == REGISTRY


@pytest.mark.engine
def test_the_images_the_run_made_or_moved_go_and_the_rest_stays(monkeypatch):
    monkeypatch.delenv(engine_leftovers.KEEP_VARIABLE, raising=False)
    monkeypatch.setattr(engine_leftovers, "engines", lambda: [engine_leftovers.Engine("podman", ["podman"])])
    mine = f"localhost/nwl-{uuid.uuid4().hex[:10]}"
    kept, moved, made = f"{mine}/e2e:kept", f"{mine}/e2e:moved", f"{mine}/other:made"
    outside = f"localhost/nwl-outside-{uuid.uuid4().hex[:10]}/e2e:cpu"
    try:
        _import_image(kept)
        _import_image(moved)
        sweep = engine_leftovers.Sweep(mine)
        sweep.start()
        assert set(sweep.before["podman"]) == {kept, moved}
        _import_image(moved + "-again")
        _podman("tag", moved + "-again", moved)  # a rebuild moves the tag to a new image
        _podman("rmi", moved + "-again")
        _import_image(made)
        _import_image(outside)

        line = sweep.finish()

        assert line is not None and line.startswith(f"removed the images this run built under {mine} (podman 2)")
        assert not _exists(moved) and not _exists(made)
        assert _exists(kept), "a tag the run neither made nor moved stays"
        assert _exists(outside), "an image outside the repository stays"
    finally:
        _podman("rmi", "-f", kept, moved, made, outside, moved + "-again")


@pytest.mark.engine
def test_a_run_that_built_nothing_removes_nothing(monkeypatch):
    monkeypatch.setattr(engine_leftovers, "engines", lambda: [engine_leftovers.Engine("podman", ["podman"])])
    mine = f"localhost/nwl-{uuid.uuid4().hex[:10]}"
    try:
        _import_image(f"{mine}/e2e:cpu")
        sweep = engine_leftovers.Sweep(mine)
        sweep.start()
        assert sweep.finish() is None
        assert _exists(f"{mine}/e2e:cpu")
    finally:
        _podman("rmi", "-f", f"{mine}/e2e:cpu")


def test_with_the_variable_set_the_images_are_kept(monkeypatch):
    monkeypatch.setenv(engine_leftovers.KEEP_VARIABLE, "1")
    sweep = engine_leftovers.Sweep("localhost/anything")
    assert sweep.finish() == f"the images this run built under localhost/anything are kept " \
                             f"({engine_leftovers.KEEP_VARIABLE}=1)"


def test_the_header_names_the_free_space_where_the_engines_write():
    line = engine_leftovers.disk_line()
    assert line.startswith("disk: ") and " GB free for the engines (/var/lib/containers)" in line
