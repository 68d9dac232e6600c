"""Rows B1-B4, B15, B16, B20 of walk 12b (issue 43), each fixed as a class.

Checkpoints as the real libraries write them (``torch.save``, DeepSpeed's tag layout with ``latest``), real
entrypoints; each test fails on the code before its fix.
"""

import json
import os

import pytest

import cli_run


def _deepspeed_tags(folder, torch, steps=(100, 200, 300)):
    for step in steps:
        tag = folder / f"global_step{step}"
        tag.mkdir(parents=True)
        torch.save({"module": {"w": torch.ones(2)}, "dp_world_size": 1, "mp_world_size": 1, "global_steps": step},
                   str(tag / "mp_rank_00_model_states.pt"))


def _megatron_iters(folder, torch, steps=(100, 200)):
    for step in steps:
        rank = folder / f"iter_{step:07d}" / "mp_rank_00"
        rank.mkdir(parents=True)
        torch.save({"iteration": step}, str(rank / "model_optim_rng.pt"))


# every pointer file a library reads for its own resume (checkpoints._pointers_to_nothing's table), each naming a
# save that is not there or naming none
POINTERS = [("latest", "global_step400\n"), ("latest", ""),
            ("latest_checkpointed_iteration.txt", "3000"), ("latest_checkpointed_iteration.txt", "")]


@pytest.mark.parametrize("pointer, text", POINTERS, ids=["latest-missing", "latest-empty", "tracker-missing",
                                                         "tracker-empty"])
def test_b4_a_pointer_file_is_no_save_and_never_cut_off(tmp_path, pointer, text):
    """B4: DeepSpeed's `latest` naming a tag not in the folder was counted as a save before the job that was cut off
    (`already holds 3 save(s) ..., 1 cut off (latest)`, `before_job.cut_off: ["latest"]`) while every save was
    whole. A pointer file (DeepSpeed's `latest`, Megatron's tracker) is said as a pointer, passed over, and never
    listed among the saves cut off."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import already_saved
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    folder = tmp_path / "ck"
    (_deepspeed_tags if pointer == "latest" else _megatron_iters)(folder, torch)
    (folder / pointer).write_text(text)
    saved = already_saved(str(folder))
    assert saved.cut_off == [], saved.cut_off
    passed = []
    newest_checkpoint(str(folder), lambda line: None, passed_over=passed)
    assert [why for path, why in passed if path.endswith(pointer)], passed  # still said, as passed over

    (tmp_path / "train.py").write_text("print(1)\n")
    out = cli_run.entrypoint("--explain", "--json", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                             "127.0.0.1", "--recovery", "on", "--spares", "1", "--checkpoint-dir", "ck", "--",
                             "train.py", cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)),
                             capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["faults"]["checkpoint_dir"]
    assert row["scan"]["before_job"]["cut_off"] == [], row["scan"]
    assert "cut off" not in row["meaning"].split("already holds", 1)[1].split(";", 1)[0], row["meaning"]
    assert any(entry["path"] == pointer for entry in row["scan"]["passed_over"]), row["scan"]


@pytest.mark.parametrize("suffix", [".tmp", ".partial", ".part", ".incomplete"])
def test_b20_a_save_that_never_reached_its_rename_is_named_by_the_file_there(tmp_path, suffix):
    """B20: `ckpt_500.pt.tmp` alone (no `ckpt_500.pt`) was named `ckpt_500.pt` in `passed_over` and
    `before_job.cut_off`: a path not in the folder. Every temporary suffix the finder knows (listing.TEMP_SUFFIXES)
    is named by the file that is there, the save's name said in the why."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.checkpoints import already_saved, scan
    from nodeweave.entrypoint.recovery.listing import TEMP_SUFFIXES

    assert suffix in TEMP_SUFFIXES
    torch.save({"w": torch.ones(2)}, str(tmp_path / "ckpt_100.pt"))
    torch.save({"w": torch.ones(2)}, str(tmp_path / f"ckpt_500.pt{suffix}"))
    paths = [path for path, _ in scan(str(tmp_path)).incomplete] + [path for path, _ in
                                                                      already_saved(str(tmp_path)).cut_off]
    assert paths == [str(tmp_path / f"ckpt_500.pt{suffix}")] * 2, paths
    assert all(os.path.exists(path) for path in paths)
    assert "ckpt_500.pt never reached its rename" in scan(str(tmp_path)).incomplete[0][1]
