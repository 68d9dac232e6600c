"""The sweep that removes what a test run made in the engines, on real podman.

Other test groups use podman meanwhile, so the engine here sees only objects
carrying this test's own label: the same note-then-remove logic the run's
sweep uses, with a narrower listing.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import uuid

import pytest

import engine_leftovers

def _podman(*args: str) -> str:
    out = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout.strip()


def _import_image(ref: str, label: str) -> None:
    """A one-file image, made in a second with ``podman import``."""
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        data = ref.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out = subprocess.run(["podman", "import", "--change", f"LABEL {label}", "-", ref],
                         input=payload.getvalue(), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr


def _labelled_engine(label: str, kept: str) -> engine_leftovers.Engine:
    only = ["--filter", f"label={label}"]
    kinds = {kind: (listing + only, removal) for kind, (listing, removal) in engine_leftovers.PODMAN_KINDS.items()
             if kind in ("image", "network", "volume")}
    return engine_leftovers.Engine("podman", ["podman"], {}, kinds, engine_leftovers.PODMAN_STORAGE,
                                   kept_images=(kept,))


def _exists(*args: str) -> bool:
    return subprocess.run(["podman", *args], capture_output=True, timeout=60).returncode == 0


@pytest.mark.engine
def test_what_the_run_made_goes_and_what_was_there_before_stays():
    tag = uuid.uuid4().hex[:10]
    label = f"nodeweave-leftovers-test={tag}"
    older_volume, newer_volume, network = f"nwl-old-{tag}", f"nwl-new-{tag}", f"nwl-net-{tag}"
    older_image, newer_image, kept_image = (f"localhost/nwl-{name}-{tag}:t" for name in ("old", "new", "kept"))
    engine = _labelled_engine(label, kept_image)
    try:
        _podman("volume", "create", "--label", label, older_volume)
        _import_image(older_image, label)
        engine.note()
        assert engine.before["volume"] == {older_volume}
        _podman("volume", "create", "--label", label, newer_volume)
        _podman("network", "create", "--label", label, network)
        _import_image(newer_image, label)
        _import_image(kept_image, label)

        removed = engine.remove_new()

        assert removed == {"image": 1, "network": 1, "volume": 1}
        assert not _exists("volume", "inspect", newer_volume)
        assert not _exists("network", "inspect", network)
        assert not _exists("image", "inspect", newer_image)
        assert _exists("volume", "inspect", older_volume)
        assert _exists("image", "inspect", older_image)
        assert _exists("image", "inspect", kept_image)
    finally:
        for args in (("volume", "rm", "-f", older_volume, newer_volume), ("network", "rm", "-f", network),
                     ("rmi", "-f", older_image, newer_image, kept_image)):
            subprocess.run(["podman", *args], capture_output=True, timeout=120)


def test_a_run_with_the_variable_set_keeps_everything(monkeypatch):
    monkeypatch.setenv(engine_leftovers.KEEP_VARIABLE, "1")
    sweeper = engine_leftovers.Sweeper()
    sweeper.start()
    assert sweeper.engines == []
    sweeper.finish()
    assert sweeper.summary == f"engine objects this run made are kept ({engine_leftovers.KEEP_VARIABLE}=1)"
