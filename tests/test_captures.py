"""Real captured machines (tests/fixtures/captured/, made by ``nodeweave doctor --capture``) and the capture itself.

Each captured tree holds exactly the files detection read on the machine,
plus ``capture/``: nvidia-smi's text and the node the entrypoint detected
live (all GPUs, and each 1-GPU view under CUDA_VISIBLE_DEVICES). So detection
on the tree must give the node it gave on the machine, and the GPU proof's
comparison with nvidia-smi must agree on real text, not text written to
match. provenance.json says when, on what card and driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.entrypoint.snapshot import NEVER, capture, detect_node

REPO = Path(__file__).resolve().parents[1]
CAPTURED = REPO / "tests" / "fixtures" / "captured"
TREES = sorted(p.name for p in CAPTURED.iterdir() if (p / "capture" / "provenance.json").is_file())
sys.path.insert(0, str(REPO / "benchmarks"))


def comparable(node: dict) -> dict:
    """A detected node without where it was read from (the live root asks uname/statvfs, a tree reads files)."""
    node = {k: v for k, v in node.items() if k != "sysroot"}
    node["limits"] = {k: v for k, v in (node.get("limits") or {}).items() if not k.endswith("_source")}
    return node


def test_there_are_real_captures():
    assert "h100x2-vm" in TREES


@pytest.mark.parametrize("name", TREES)
@pytest.mark.parametrize("view", ["", "CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"])
def test_detection_on_the_tree_equals_detection_on_the_machine(name, view):
    tree = CAPTURED / name
    live_file = tree / "capture" / (f"node.{view}.json" if view else "node.json")
    if not live_file.is_file():
        pytest.skip(f"{name} has no {live_file.name} (captured without that view)")
    env = {"PATH": os.environ["PATH"], **dict([view.split("=", 1)] if view else [])}
    on_tree, live = comparable(detect_node(env, sysroot=str(tree))), comparable(json.loads(live_file.read_text()))
    # Fields detection gained after the capture are not in its record: each is checked against the
    # captured kernel file it is read from instead (a new capture records them live).
    for key in set(on_tree["limits"]) - set(live["limits"]):
        assert key in LATER_FIELDS, f"{key} is detected but neither in {live_file.name} nor in LATER_FIELDS"
        assert on_tree["limits"].pop(key) == LATER_FIELDS[key](tree), key
    assert on_tree == live


def cap_ipc_lock_from_status(tree: Path) -> bool:
    """Bit 14 (CAP_IPC_LOCK) of CapEff in the captured /proc/self/status, read here without detection's code."""
    line = next(x for x in (tree / "proc/self/status").read_text().splitlines() if x.startswith("CapEff:"))
    return bool(int(line.split()[1], 16) & (1 << 14))


# limits field -> how the captured kernel files say it (for records made before the field existed)
LATER_FIELDS = {"ipc_lock": cap_ipc_lock_from_status}


def test_the_h100_pair_agrees_with_nvidia_smi():
    """gpu_proof's detection check on real nvidia-smi text (NV18 between the two GPUs) and the real tree."""
    import gpu_proof

    folder = CAPTURED / "h100x2-vm" / "capture"
    names = {("--query-gpu=name,pci.bus_id,count", "--format=csv,noheader"): "query.csv",
             ("nvlink", "--status"): "nvlink-status.txt", ("topo", "-m"): "topo-m.txt"}
    result = gpu_proof.step_detection(smi=lambda *args: (folder / names[args]).read_text(),
                                      sysroot=str(CAPTURED / "h100x2-vm"))
    assert result["agree"], result["checks"]
    assert result["checks"]["count"] == (2, 2) and result["driver"] == "580.159.04"
    assert result["topo_gpu_links"] == {"GPU0": ["NV18"], "GPU1": ["NV18"]}
    assert result["nvidia_smi_nvlink_links_up"] == 2 * 18


def test_provenance_names_date_card_and_driver():
    for name in TREES:
        info = json.loads((CAPTURED / name / "capture" / "provenance.json").read_text())
        assert info["date"] and info["card"] and info["driver"], (name, info)


def test_a_capture_of_this_machine_reads_back_as_this_machine(tmp_path):
    """The capture on the test machine itself: the tree detects as the machine did, and holds no token."""
    folder = tmp_path / "cap"
    provenance = capture(str(folder), env={"PATH": os.environ["PATH"]})
    assert provenance["paths_read"] > 10
    live = json.loads((folder / "capture" / "node.json").read_text())
    assert comparable(detect_node({"PATH": os.environ["PATH"]}, sysroot=str(folder))) == comparable(live)
    for path in folder.rglob("*"):
        if path.is_symlink():
            assert not os.path.isabs(os.readlink(path)), path  # nothing points back at the live machine
    assert not any((folder / p.lstrip("/")).exists() for p in NEVER)


def test_doctor_capture_refuses_a_folder_with_something_in_it(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    out = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--capture", str(tmp_path)],
                         timeout=120)
    assert out.returncode == 2 and "is not empty" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"
