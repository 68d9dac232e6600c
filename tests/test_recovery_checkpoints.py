"""The newest complete checkpoint: every layout complete and half-written, built in tmp_path.

File names and contents mirror what each writer writes (torch.distributed.checkpoint's
FileSystemWriter, DeepSpeed's engine.save_checkpoint with the world sizes its
model states record, the Trainer's _save_checkpoint, Accelerate's save_state,
Megatron's checkpointing.py, Lightning's ModelCheckpoint); torch.save files
are zips built here without torch. tests/fixtures/recovery/dcp-2ranks is a
real two-rank DCP save (torch 2.13, gloo); its .metadata is read here without
torch. Saves made by the real libraries: tests/test_recovery_real_saves.py.
"""

import io
import json
import os
import pickle
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from nodeweave.entrypoint.recovery.checkpoints import Checkpoint, incomplete, newest_complete, scan
from nodeweave.entrypoint.recovery.progress import Progress

DCP_FIXTURE = Path(__file__).parent / "fixtures" / "recovery" / "dcp-2ranks"


def write(path, data=None):
    """A file with ``data``; by default what its name holds when whole: a torch.save zip, a safetensors file,
    ``{}`` for JSON, else 64 bytes."""
    if data is None:
        data = safetensors_bytes() if path.name.endswith(".safetensors") else b"{}" if path.name.endswith(
            ".json") else torch_save_zip({}) if path.name.endswith((".pt", ".pth", ".bin", ".ckpt", ".pkl")) else \
            b"x" * 64
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def torch_save_zip(obj):
    """The zip torch.save writes (``archive/data.pkl`` first, the end record last), made without torch."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(obj, protocol=2))
        archive.writestr("archive/data/0", b"\0" * 256)
        archive.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def safetensors_bytes():
    header = json.dumps({"w": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}}).encode()
    return len(header).to_bytes(8, "little") + header + b"\0" * 64


def reasons(folder):
    return {Path(path).name: reason for path, reason in incomplete(folder)}


def dcp(folder):
    shutil.copytree(DCP_FIXTURE, folder)
    return folder


# --- PyTorch DCP and TorchTitan ------------------------------------------------


def test_a_real_dcp_save_is_complete_and_its_shards_are_read_from_metadata(tmp_path):
    dcp(tmp_path / "step-100")
    dcp(tmp_path / "step-200")
    found = newest_complete(tmp_path)
    assert found == Checkpoint(str(tmp_path / "step-200"), 200, "dcp",
                               "DCP: .metadata lists 2 shard file(s), all present with their sizes")
    assert incomplete(tmp_path) == []


@pytest.mark.parametrize("damage, reason", [
    (lambda d: (d / ".metadata").unlink(), "2 shard file(s) but no .metadata (torch.distributed.checkpoint writes it last)"),
    (lambda d: (d / "__1_0.distcp").unlink(), "__1_0.distcp, listed in .metadata, is missing"),
    (lambda d: os.truncate(d / "__1_0.distcp", 100), "__1_0.distcp holds 100 bytes, .metadata needs 3666"),
    (lambda d: write(d / ".metadata.tmp"), "unfinished files remain (.metadata.tmp)"),
    (lambda d: os.truncate(d / ".metadata", 0), ".metadata is empty"),
])
def test_a_half_written_dcp_save_falls_back_to_the_one_before(tmp_path, damage, reason):
    dcp(tmp_path / "step-100")
    damage(dcp(tmp_path / "step-200"))
    assert newest_complete(tmp_path).path == str(tmp_path / "step-100")
    assert reason in reasons(tmp_path)["step-200"]


@pytest.mark.parametrize("metadata", ["cut", "foreign"])
def test_a_metadata_that_does_not_unpickle_is_incomplete(tmp_path, metadata):
    dcp(tmp_path / "step-100")
    folder = dcp(tmp_path / "step-300")
    data = (folder / ".metadata").read_bytes()
    write(folder / ".metadata", data[:len(data) // 2] if metadata == "cut" else b"not a pickle at all")
    assert newest_complete(tmp_path).step == 100
    assert ".metadata does not unpickle as DCP metadata" in reasons(tmp_path)["step-300"]


def test_the_folder_itself_may_be_one_dcp_checkpoint(tmp_path):
    folder = dcp(tmp_path / "ckpt-7")
    assert newest_complete(folder) == Checkpoint(str(folder), 7, "dcp", newest_complete(folder).why)


def test_a_dcp_save_of_the_installed_torch_is_read_without_torch(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp_api
    state = {"w": torch.zeros(32, 4), "extra": {"lr": 0.1}}
    with pytest.warns(UserWarning):
        dcp_api.save(state, checkpoint_id=str(tmp_path / "step-5"))
    found = newest_complete(tmp_path)
    assert found.step == 5 and "all present with their sizes" in found.why


# --- DeepSpeed -------------------------------------------------------------------


def deepspeed_states(step, mp=2, dp=4, zero3=False):
    """What DeepSpeed's _common_checkpoint_state puts in a model-states file (the fields read here)."""
    return torch_save_zip({"module": None, "optimizer": None, "global_steps": step, "dp_world_size": dp,
                           "mp_world_size": mp, "ds_config": {"zero_optimization": {"stage": 3 if zero3 else 2}}})


def deepspeed_tag(root, step, mp=2, dp=4, zero3=False, skip=(), tag=None):
    tag = root / (tag or f"global_step{step}")
    for mp_rank in range(mp):
        names = [f"bf16_zero_pp_rank_{dp_rank}_mp_rank_{mp_rank:02d}_optim_states.pt" for dp_rank in range(dp)]
        if zero3:
            names += [f"zero_pp_rank_{dp_rank}_mp_rank_{mp_rank:02d}_model_states.pt" for dp_rank in range(dp)]
        else:
            names.append(f"mp_rank_{mp_rank:02d}_model_states.pt")
        for name in names:
            if name not in skip:
                write(tag / name, deepspeed_states(step, mp, dp, zero3) if "model_states" in name else None)
    return tag


def test_deepspeed_takes_the_tag_latest_names_when_complete(tmp_path):
    deepspeed_tag(tmp_path, 100)
    deepspeed_tag(tmp_path, 200, zero3=True)
    write(tmp_path / "latest", "global_step200")
    write(tmp_path / "zero_to_fp32.py", "# copied by DeepSpeed")
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (200, "deepspeed")
    assert "8 model-state file(s), 8 ZeRO optimizer file(s)" in found.why


def test_deepspeed_latest_naming_a_half_written_tag_falls_back(tmp_path):
    deepspeed_tag(tmp_path, 100)
    deepspeed_tag(tmp_path, 200, skip=("bf16_zero_pp_rank_3_mp_rank_01_optim_states.pt",))
    write(tmp_path / "latest", "global_step200")
    assert newest_complete(tmp_path).step == 100
    assert "data-parallel rank 3 (mp rank 01) is missing" in reasons(tmp_path)["global_step200"]


def test_deepspeed_tags_newer_than_latest_were_still_being_written(tmp_path):
    deepspeed_tag(tmp_path, 100)
    deepspeed_tag(tmp_path, 200)  # every file there, but rank 0 had not yet written latest
    write(tmp_path / "latest", "global_step100")
    assert newest_complete(tmp_path).step == 100
    assert "newer than latest (global_step100)" in reasons(tmp_path)["global_step200"]


def test_deepspeed_empty_or_missing_model_states_are_incomplete(tmp_path):
    deepspeed_tag(tmp_path, 100)
    write(deepspeed_tag(tmp_path, 200) / "mp_rank_01_model_states.pt", b"")
    deepspeed_tag(tmp_path, 300, skip=("mp_rank_00_model_states.pt",))
    assert newest_complete(tmp_path).step == 100
    found = reasons(tmp_path)
    assert "unfinished file(s): mp_rank_01_model_states.pt (empty)" in found["global_step200"]
    assert "model states of mp rank 00 are missing" in found["global_step300"]


# --- Hugging Face Trainer and Accelerate -------------------------------------------


def trainer_checkpoint(root, step, weights="model.safetensors", state=True):
    folder = root / f"checkpoint-{step}"
    for name in ("config.json", "optimizer.pt", "scheduler.pt", "rng_state_0.pth", "rng_state_1.pth",
                 "training_args.bin"):
        write(folder / name)
    if weights:
        write(folder / weights)
    if state:
        write(folder / "trainer_state.json", f'{{"global_step": {step}}}')
    return folder


def test_trainer_checkpoints_need_trainer_state_json_written_last(tmp_path):
    trainer_checkpoint(tmp_path, 500)
    trainer_checkpoint(tmp_path, 1000, weights="pytorch_model.bin")
    trainer_checkpoint(tmp_path, 1500, state=False)
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (1000, "hf-trainer")
    assert found.why == "Trainer: trainer_state.json (global_step 1000) and pytorch_model.bin, every file whole"
    assert "no trainer_state.json (the Trainer writes it last)" in reasons(tmp_path)["checkpoint-1500"]


def test_trainer_sharded_weights_must_all_exist(tmp_path):
    trainer_checkpoint(tmp_path, 500)
    folder = trainer_checkpoint(tmp_path, 1000, weights=None)
    index = {"metadata": {"total_size": 128}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}}
    write(folder / "model.safetensors.index.json", json.dumps(index))
    write(folder / "model-00001-of-00002.safetensors")
    assert newest_complete(tmp_path).step == 500
    assert "model-00002-of-00002.safetensors" in reasons(tmp_path)["checkpoint-1000"]
    write(folder / "model-00002-of-00002.safetensors")
    assert "model.safetensors.index.json and its 2 shard(s)" in newest_complete(tmp_path).why


def test_trainer_with_deepspeed_checks_the_nested_tag(tmp_path):
    folder = trainer_checkpoint(tmp_path, 500, weights=None)
    deepspeed_tag(folder, 500)
    write(folder / "latest", "global_step500")
    half = trainer_checkpoint(tmp_path, 1000, weights=None)
    deepspeed_tag(half, 1000, skip=("mp_rank_01_model_states.pt",))
    write(half / "latest", "global_step1000")
    assert newest_complete(tmp_path).step == 500
    assert "mp rank 01 are missing" in reasons(tmp_path)["checkpoint-1000"]


def accelerate_state(folder, processes=2, skip=()):
    for name in ["model.safetensors", "optimizer.bin", "scheduler.bin", "sampler.bin"] + [
            f"random_states_{p}.pkl" for p in range(processes)]:
        if name not in skip:
            write(folder / name)
    return folder


def test_accelerate_automatic_naming_needs_every_random_states_file(tmp_path):
    accelerate_state(tmp_path / "checkpoints" / "checkpoint_0")
    accelerate_state(tmp_path / "checkpoints" / "checkpoint_1", skip=("random_states_0.pkl",))
    accelerate_state(tmp_path / "checkpoints" / "checkpoint_2", skip=("random_states_0.pkl", "random_states_1.pkl"))
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (0, "accelerate")
    found = reasons(tmp_path)
    assert "random_states_0.pkl is missing" in found["checkpoint_1"]
    assert "no random_states_0.pkl (save_state writes it after the weights)" in found["checkpoint_2"]


def test_accelerate_custom_folder_is_recognised_by_its_files(tmp_path):
    accelerate_state(tmp_path / "my_state_at_300", processes=1)
    found = newest_complete(tmp_path)
    assert (found.path, found.step, found.layout) == (str(tmp_path / "my_state_at_300"), None, "accelerate")


# --- Megatron ---------------------------------------------------------------------


def megatron_iter(root, iteration, tp=2, pp=2, distrib_optim=True, skip=()):
    folder = root / f"iter_{iteration:07d}"
    for t in range(tp):
        for p in range(pp):
            rank_dir = folder / (f"mp_rank_{t:02d}_{p:03d}" if pp > 1 else f"mp_rank_{t:02d}")
            for name in ["model_optim_rng.pt"] + (["distrib_optim.pt"] if distrib_optim else []):
                if f"{rank_dir.name}/{name}" not in skip:
                    write(rank_dir / name)
    return folder


def test_megatron_tracker_naming_a_half_written_save_falls_back(tmp_path):
    megatron_iter(tmp_path, 1000)
    megatron_iter(tmp_path, 2000, skip=("mp_rank_01_001/model_optim_rng.pt",))
    write(tmp_path / "latest_checkpointed_iteration.txt", "2000")
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (1000, "megatron")
    assert found.why == "Megatron: model_optim_rng.pt in all 4 mp_rank folders, distrib_optim.pt in each"
    assert "mp_rank_01_001/model_optim_rng.pt is missing" in reasons(tmp_path)["iter_0002000"]


def test_megatron_saves_past_the_tracker_and_grid_gaps_are_incomplete(tmp_path):
    megatron_iter(tmp_path, 1000, pp=1, distrib_optim=False)
    megatron_iter(tmp_path, 2000, pp=1, distrib_optim=False)
    write(tmp_path / "latest_checkpointed_iteration.txt", "1000")
    shutil.rmtree(megatron_iter(tmp_path, 3000, pp=2) / "mp_rank_01_000")
    assert newest_complete(tmp_path).step == 1000
    found = reasons(tmp_path)
    assert "newer than latest_checkpointed_iteration.txt (1000)" in found["iter_0002000"]
    assert "newer than" in found["iter_0003000"]


def test_megatron_torch_dist_needs_metadata_json_after_the_shards(tmp_path):
    write(dcp(tmp_path / "iter_0000100") / "metadata.json", '{"sharded_backend": "torch_dist"}')
    dcp(tmp_path / "iter_0000200")
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (100, "megatron")
    assert "no metadata.json" in reasons(tmp_path)["iter_0000200"]


# --- plain files written with an atomic rename ---------------------------------------


def torch_save_like(path, cut=0):
    """A zip as torch.save writes one (its end record last); ``cut`` bytes short when cut off mid-write."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00." + b"w" * 4096)
        archive.writestr("archive/data/0", b"\0" * 4096)
    data = buffer.getvalue()
    return write(path, data[:len(data) - cut])


def safetensors_like(path, cut=0):
    data = safetensors_bytes()
    return write(path, data[:len(data) - cut])


def test_plain_files_are_complete_when_not_empty_and_no_temporary_is_beside_them(tmp_path):
    torch_save_like(tmp_path / "ckpt_100.pt")
    write(tmp_path / "ckpt_200.pt")
    write(tmp_path / "ckpt_200.pt.tmp")
    write(tmp_path / "model_step300.pt", b"")
    write(tmp_path / "ckpt_400.pt.partial")
    write(tmp_path / "notes.txt")
    found = newest_complete(tmp_path)
    assert (found.path, found.step, found.layout) == (str(tmp_path / "ckpt_100.pt"), 100, "file")
    found = reasons(tmp_path)
    assert "ckpt_200.pt.tmp beside it" in found["ckpt_200.pt"]
    assert "empty" in found["model_step300.pt"]
    assert "only ckpt_400.pt.partial exists" in found["ckpt_400.pt.partial"]  # the file there (walk12 B20)
    assert set(found) == {"ckpt_200.pt", "model_step300.pt", "ckpt_400.pt.partial"}


def test_a_torch_save_or_safetensors_file_cut_off_mid_write_is_incomplete(tmp_path):
    torch_save_like(tmp_path / "step-100.pt")
    torch_save_like(tmp_path / "step-200.pt", cut=30)  # torch.save writing in place, killed
    write(tmp_path / "step-300.pt", b"PK\x03\x04 cut off")
    safetensors_like(tmp_path / "model_step400.safetensors", cut=1)
    assert newest_complete(tmp_path).step == 100
    found = reasons(tmp_path)
    assert "without its end record: cut off mid-write" in found["step-200.pt"]
    assert "without its end record" in found["step-300.pt"]
    assert "its header needs" in found["model_step400.safetensors"]
    safetensors_like(tmp_path / "model_step400.safetensors")
    assert newest_complete(tmp_path).step == 400


@pytest.mark.parametrize("zeros", [6, 18, 22, 300])  # 18: a zip end record past its signature
@pytest.mark.parametrize("kind", ["torch.save", "trainer_state.json", "pickle", "dcp .metadata"])
def test_a_file_whose_tail_reads_back_as_zeros_is_refused(tmp_path, kind, zeros):
    """ext4's delayed allocation after a crash: the file has its size, its last blocks were never written
    (a safetensors file's tail is its tensors' bytes: zeros there cannot be told from a model's)."""
    paths = {}
    for step in (100, 200):
        if kind == "torch.save":
            path, whole = tmp_path / f"ckpt_{step}.pt", torch_save_zip({"w": list(range(200))})
        elif kind == "dcp .metadata":
            path = dcp(tmp_path / f"step-{step}") / ".metadata"
            whole = path.read_bytes()
        else:
            folder = trainer_checkpoint(tmp_path, step)
            if kind == "pickle":
                path, whole = folder / "rng_state_0.pth", pickle.dumps({"python": list(range(400))}, protocol=4)
            else:
                path = folder / "trainer_state.json"
                whole = json.dumps({"global_step": step, "log_history": [{"loss": 1.5}] * 40}).encode()
        paths[step] = write(path, whole if step == 100 else whole[:len(whole) - zeros] + bytes(zeros))
    assert paths[200].read_bytes() != whole
    assert newest_complete(tmp_path).step == 100
    assert list(reasons(tmp_path)) == [paths[200].relative_to(tmp_path).parts[0]], kind


def test_a_cut_off_shard_inside_a_layout_is_found_too(tmp_path):
    deepspeed_tag(tmp_path, 100)
    torch_save_like(deepspeed_tag(tmp_path, 200) / "mp_rank_00_model_states.pt", cut=10)
    megatron_iter(tmp_path / "m", 100)
    torch_save_like(megatron_iter(tmp_path / "m", 200) / "mp_rank_00_001" / "distrib_optim.pt", cut=5)
    safetensors_like(trainer_checkpoint(tmp_path / "t", 100, weights=None) / "model.safetensors")
    safetensors_like(trainer_checkpoint(tmp_path / "t", 200, weights=None) / "model.safetensors", cut=3)
    assert [newest_complete(tmp_path / d).step for d in ("", "m", "t")] == [100, 100, 100]
    assert "mp_rank_00_model_states.pt (a zip (torch.save)" in reasons(tmp_path)["global_step200"]
    assert "mp_rank_00_001: unfinished distrib_optim.pt" in reasons(tmp_path / "m")["iter_0000200"]
    assert "model.safetensors (safetensors holds" in reasons(tmp_path / "t")["checkpoint-200"]


# --- mixed, unknown, empty, unreadable --------------------------------------------------


def test_mixed_layouts_take_the_highest_step_and_ignore_unknown_folders(tmp_path):
    trainer_checkpoint(tmp_path, 900)
    dcp(tmp_path / "step-1200")
    write(tmp_path / "ckpt_1100.pt")
    write(tmp_path / "logs" / "events.out")
    write(tmp_path / "runs" / "step-99" / "readme.md")
    (tmp_path / "empty-dir").mkdir()
    assert newest_complete(tmp_path).step == 1200
    assert incomplete(tmp_path) == []


def test_judging_every_save_in_threads_gives_the_serial_answer_in_the_same_order(tmp_path, monkeypatch):
    """incomplete() and scan() judge many saves in JUDGES threads; the verdicts, their order and the saves
    that turn out to hold nothing are those of one thread."""
    from nodeweave.entrypoint.recovery import checkpoints

    for step in range(100, 4100, 100):
        trainer_checkpoint(tmp_path, step, state=step % 300 != 0)  # every third one killed before its state
        deepspeed_tag(tmp_path, step, mp=1, dp=2, skip=("bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt",)
                      if step % 700 == 0 else ())
    write(tmp_path / "global_step5000" / "mp_rank_00_model_states.pt", b"PK\x03\x04cut")
    write(tmp_path / "runs" / "step-99" / "readme.md")  # named like a save, holds none
    assert len(scan(tmp_path).candidates) > 2 * checkpoints.JUDGES
    threaded = scan(tmp_path)
    monkeypatch.setattr(checkpoints, "JUDGES", 10 ** 6)  # one thread
    serial = scan(tmp_path)
    assert threaded.complete == serial.complete and threaded.incomplete == serial.incomplete
    assert len(serial.incomplete) == 13 + 5 + 1 and len(serial.complete) == 40 + 40 + 1 - 19
    assert serial.complete[0].step == 4000 and "runs/step-99" not in str(serial.incomplete)


def test_an_empty_or_missing_folder_has_no_checkpoint(tmp_path):
    assert newest_complete(tmp_path) is None and incomplete(tmp_path) == []
    assert newest_complete(tmp_path / "absent") is None and incomplete(tmp_path / "absent") == []


def test_unreadable_files_are_incomplete_never_a_traceback(tmp_path):
    dcp(tmp_path / "step-100")
    bad = dcp(tmp_path / "step-200")
    (bad / ".metadata").unlink()
    (bad / ".metadata").mkdir()  # read raises IsADirectoryError
    fifo = dcp(tmp_path / "step-300")
    (fifo / ".metadata").unlink()
    os.mkfifo(fifo / ".metadata")  # opening it would block: it must not be opened
    write(trainer_checkpoint(tmp_path, 400, weights=None) / "model.safetensors.index.json", b"\xff\xfe{")
    (tmp_path / "ckpt_500.pt").symlink_to(tmp_path / "nowhere")
    write(tmp_path / "latest_checkpointed_iteration.txt", b"\xff\xff")
    found = reasons(tmp_path)
    assert newest_complete(tmp_path).step == 100
    assert "is not a regular file" in found["step-200"] and "is not a regular file" in found["step-300"]
    assert "not a weight index" in found["checkpoint-400"]
    assert "not a regular file" in found["ckpt_500.pt"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_folder_without_read_permission_is_reported(tmp_path):
    dcp(tmp_path / "step-100")
    locked = dcp(tmp_path / "step-200")
    locked.chmod(0)
    try:
        assert newest_complete(tmp_path).step == 100
        assert "cannot list" in reasons(tmp_path)["step-200"]
    finally:
        locked.chmod(stat.S_IRWXU)


def test_a_checkpoint_record_is_frozen_and_turns_into_json(tmp_path):
    dcp(tmp_path / "step-1")
    found = newest_complete(tmp_path)
    with pytest.raises(AttributeError):
        found.step = 2
    assert found.to_dict() == {"path": found.path, "step": 1, "layout": "dcp", "why": found.why}
    assert scan(tmp_path).complete == [found]


# --- progress across generations -----------------------------------------------------------


def test_progress_stops_after_k_restarts_without_a_newer_checkpoint():
    progress = Progress(limit=3).record(None).record(4200)
    assert progress.verdict() is None  # the first restart found a newer checkpoint
    progress.record(4200).record(4200)
    assert not progress.stalled and progress.restarts_without_progress() == 2
    progress.record(4200)
    assert progress.stalled
    assert progress.verdict() == "3 restarts since step 4200, no newer checkpoint"
    progress.record(4800)
    assert not progress.stalled and progress.restarts == 5


def test_progress_without_any_checkpoint_and_a_step_that_went_backwards():
    progress = Progress(limit=2).record(None).record(None).record(None)
    assert progress.verdict() == "2 restarts since the job started, no checkpoint yet"
    progress = Progress(limit=2).record(600).record(500).record(600)
    assert progress.verdict() == "2 restarts since step 600, no newer checkpoint"
    assert Progress.from_dict(progress.to_dict()).verdict() == progress.verdict()


@pytest.mark.parametrize("limit", [0, -1, "3", True])
def test_progress_limit_is_checked(limit):
    with pytest.raises(ValueError, match="Progress limit must be a whole number >= 1"):
        Progress(limit=limit)


def test_progress_of_a_save_without_a_step_is_its_save_time():
    progress = Progress(limit=2).record(None).record({"saved": 100.0}).record({"saved": 200.0})
    progress.record({"saved": 300.5})
    assert not progress.stalled  # the folder saved over in place is written again: the job moves
    progress.record({"saved": 300.5}).record({"saved": 300.5})
    assert progress.verdict() == ("2 restarts since the checkpoint saved at 1970-01-01T00:05:00Z "
                                  "(it records no step), no newer save")
    assert not Progress(limit=1).record(300).record({"saved": 1.0}).stalled  # a change of kind is progress
    with pytest.raises(ValueError, match="a checkpoint mark is"):
        Progress().record({"saved": "yesterday"})


# --- issue 42: each case that handed out a broken save or misread a layout -----------------------------


def test_deepspeed_missing_the_highest_ranks_zero_file_is_refused_by_its_recorded_world_size(tmp_path):
    deepspeed_tag(tmp_path, 100)
    deepspeed_tag(tmp_path, 200, skip=("bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt",
                                       "bf16_zero_pp_rank_3_mp_rank_01_optim_states.pt"))
    write(tmp_path / "latest", "global_step200")  # rank 0 wrote it without waiting for rank 3
    assert newest_complete(tmp_path).step == 100
    assert ("ZeRO optimizer state of data-parallel rank 3 (mp rank 00) is missing: mp_rank_00_model_states.pt "
            "records dp_world_size 4") in reasons(tmp_path)["global_step200"]


def test_deepspeed_a_tag_named_by_the_user_takes_the_step_its_model_states_record(tmp_path):
    deepspeed_tag(tmp_path, 700, tag="best_9")
    deepspeed_tag(tmp_path, 300, tag="warmup_1000")
    found = newest_complete(tmp_path)
    assert (Path(found.path).name, found.step, found.layout) == ("best_9", 700, "deepspeed")


def test_deepspeed_model_states_that_do_not_read_are_refused(tmp_path):
    deepspeed_tag(tmp_path, 100)
    write(deepspeed_tag(tmp_path, 200) / "mp_rank_00_model_states.pt", torch_save_zip(["no", "dict"]))
    assert newest_complete(tmp_path).step == 100
    assert "mp_rank_00_model_states.pt holds no dict" in reasons(tmp_path)["global_step200"]


def test_accelerate_registered_objects_are_written_last_and_each_must_be_there(tmp_path):
    def save(name, objects):
        folder = accelerate_state(tmp_path / "checkpoints" / name)
        for index in objects:
            write(folder / f"custom_checkpoint_{index}.pkl", torch_save_zip({"n": index}))
        return folder
    save("checkpoint_0", (0, 1))
    save("checkpoint_1", ())       # killed between random_states_*.pkl and custom_checkpoint_0.pkl
    save("checkpoint_2", (1,))     # custom_checkpoint_0.pkl lost
    found = newest_complete(tmp_path)
    assert (found.step, "2 registered object(s)" in found.why) == (0, True)
    found = reasons(tmp_path)
    assert "custom_checkpoint_0.pkl is missing (registered objects are saved last; the save before held 2)" \
        in found["checkpoint_1"]
    assert "custom_checkpoint_0.pkl is missing" in found["checkpoint_2"]


@pytest.mark.parametrize("name, data, why", [
    ("optimizer.pt", torch_save_zip({"state": {}})[:-40], "optimizer.pt (a zip (torch.save) without its end record"),
    ("scheduler.pt", torch_save_zip({"lr": 1})[:300] + b"\0" * 400, "scheduler.pt (a zip (torch.save)"),
    ("trainer_state.json", b'{"global_step": 1000, "log_history": [{"loss"', "trainer_state.json does not parse"),
    ("config.json", b'{"hidden_size": 6', "config.json (JSON that does not parse"),
    ("rng_state_0.pth", b"\x80\x02}q\x00(X\x04\x00\x00\x00cuda", "rng_state_0.pth (a pickle without its STOP"),
], ids=["optimizer-cut", "scheduler-zeroed-tail", "trainer-state-cut", "config-cut", "rng-pickle-cut"])
def test_every_file_the_trainer_resume_opens_is_checked_whole(tmp_path, name, data, why):
    trainer_checkpoint(tmp_path, 500)
    write(trainer_checkpoint(tmp_path, 1000) / name, data)  # a lost page cache: the Trainer never fsyncs
    assert newest_complete(tmp_path).step == 500
    assert why in reasons(tmp_path)["checkpoint-1000"]


def test_the_trainer_step_is_the_global_step_its_state_records(tmp_path):
    write(trainer_checkpoint(tmp_path, 500) / "trainer_state.json", '{"global_step": 1500}')
    assert newest_complete(tmp_path).step == 1500


def test_a_long_runs_trainer_state_json_too_large_to_parse_whole_is_read_from_its_head(tmp_path):
    """A long run's log_history makes trainer_state.json larger than the 8 MiB parsed whole; the Trainer writes
    it with sort_keys and indent 2, so global_step comes before the log. It was refused as unreadable before."""
    history = [{"epoch": i / 1000, "learning_rate": 1e-4, "loss": 1.5, "step": i} for i in range(120_000)]
    state = json.dumps({"epoch": 120.0, "global_step": 120_000, "log_history": history}, indent=2, sort_keys=True)
    assert len(state) > 8 << 20
    write(trainer_checkpoint(tmp_path, 500) / "trainer_state.json", state + "\n")
    write(trainer_checkpoint(tmp_path, 600) / "trainer_state.json", state[:-5000])  # cut: no closing brace
    found = newest_complete(tmp_path)
    assert (Path(found.path).name, found.step) == ("checkpoint-500", 120_000), reasons(tmp_path)
    assert "JSON that does not end in } or ]" in reasons(tmp_path)["checkpoint-600"]


def many_tensors_zip(count, compress_pickle=False):
    """A torch.save-like zip with ``count`` tensor entries after data.pkl (a large model's optimizer.pt)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"global_steps": 7, "dp_world_size": 1,
                                                           "mp_world_size": 1}, protocol=2),
                         compress_type=zipfile.ZIP_DEFLATED if compress_pickle else zipfile.ZIP_STORED)
        for index in range(count):
            archive.writestr(f"archive/data/{index}", bytes([index % 251]) * 40)
        archive.writestr("archive/version", b"3\n")
    return buffer.getvalue()


@pytest.mark.parametrize("compress_pickle", [False, True], ids=["stored", "deflated"])
def test_a_zip_of_many_entries_is_walked_whole_and_its_pickle_read_from_the_central_directory(tmp_path,
                                                                                              compress_pickle):
    data = many_tensors_zip(900, compress_pickle)
    write(deepspeed_tag(tmp_path, 100) / "mp_rank_00_model_states.pt", data)
    assert newest_complete(tmp_path).step == 7  # the global_steps its data.pkl records, found by its entry
    central = data.rindex(b"PK\x01\x02")  # the last entry's record: its data said to run past the directory
    broken = bytearray(data)
    broken[central + 20:central + 24] = (10 ** 6).to_bytes(4, "little")
    write(tmp_path / "global_step100" / "mp_rank_00_model_states.pt", bytes(broken))
    assert newest_complete(tmp_path) is None
    assert "whose entry runs past its central directory" in reasons(tmp_path)["global_step100"]


def lightning_ckpt(path, step, epoch=0):
    """What Lightning's trainer.save_checkpoint dumps (the keys read here), as torch.save's zip."""
    return write(path, torch_save_zip({"epoch": epoch, "global_step": step, "pytorch-lightning_version": "2.5.0",
                                       "state_dict": {}, "loops": {}, "callbacks": {}, "optimizer_states": []}))


def test_lightning_steps_come_from_step_keys_never_from_a_metric(tmp_path):
    lightning_ckpt(tmp_path / "epoch=1-step=400-train_loss=0.52.ckpt", 400, 1)
    lightning_ckpt(tmp_path / "epoch=2-step=600-train_loss=0.31.ckpt", 600, 2)
    lightning_ckpt(tmp_path / "epoch=2-step=600-train_loss=0.31-v1.ckpt", 600, 2)
    found = newest_complete(tmp_path)
    assert (Path(found.path).name, found.step, found.layout) == ("epoch=2-step=600-train_loss=0.31-v1.ckpt", 600,
                                                                 "lightning")


def test_lightning_last_ckpt_and_names_without_keys_read_the_global_step_they_hold(tmp_path):
    lightning_ckpt(tmp_path / "3-800-0.27.ckpt", 800, 3)          # auto_insert_metric_name=False
    lightning_ckpt(tmp_path / "epoch=1-step=400.ckpt", 400, 1)
    lightning_ckpt(tmp_path / "last.ckpt", 900, 4)
    assert newest_complete(tmp_path).path == str(tmp_path / "last.ckpt")
    write(tmp_path / "last.ckpt", torch_save_zip({"global_step": 900})[:-30])  # last.ckpt cut while rewritten
    found = newest_complete(tmp_path)
    assert (Path(found.path).name, found.step) == ("3-800-0.27.ckpt", 800)


def test_lightnings_last_link_is_not_a_save_of_its_own(tmp_path):
    lightning_ckpt(tmp_path / "epoch=1-step=400.ckpt", 400, 1)
    (tmp_path / "last.ckpt").symlink_to(tmp_path / "epoch=1-step=400.ckpt")  # save_last="link"
    assert [c.path for c in scan(tmp_path).complete] == [str(tmp_path / "epoch=1-step=400.ckpt")]


def test_per_rank_files_are_one_save_and_a_rank_is_never_a_step(tmp_path):
    for rank in (0, 1):
        torch_save_like(tmp_path / f"ckpt_100_rank{rank}.pt")
    torch_save_like(tmp_path / "ckpt_200_rank0.pt")  # rank 1 had not written yet
    torch_save_like(tmp_path / "ckpt_300_rank0.pt")
    torch_save_like(tmp_path / "ckpt_300_rank1.pt", cut=20)
    found = newest_complete(tmp_path)
    assert (found.path, found.step, found.layout) == (str(tmp_path / "ckpt_100_rank0.pt"), 100, "per-rank files")
    found = reasons(tmp_path)
    assert "rank 1's file is missing (the save before had 2)" in found["ckpt_200_rank0.pt"]
    assert "ckpt_300_rank1.pt: a zip (torch.save) without its end record" in found["ckpt_300_rank0.pt"]


def test_a_root_dcp_save_does_not_hide_newer_checkpoint_folders_beside_it(tmp_path):
    for name in os.listdir(DCP_FIXTURE):
        shutil.copy(DCP_FIXTURE / name, tmp_path / name)
    trainer_checkpoint(tmp_path, 500)
    found = newest_complete(tmp_path)
    assert (found.step, found.layout) == (500, "hf-trainer")
    assert {c.path for c in scan(tmp_path).complete} == {str(tmp_path), str(tmp_path / "checkpoint-500")}


def test_a_folder_saved_over_in_place_has_its_save_time_as_progress(tmp_path):
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    folder = dcp(tmp_path / "run3")  # the DCP tutorial's pattern: one folder, saved again each time

    def saved_at(when):
        for path in [folder] + list(folder.iterdir()):
            os.utime(path, (when, when))
        return newest_checkpoint(str(folder), print)

    first = saved_at(1000)
    assert first == (str(folder), None, {"saved": 1000.0})  # "run3" names no step: its 3 is not one
    again = saved_at(1000)[2]
    later = saved_at(5000)[2]
    progress = Progress(limit=1).record(first[2]).record(later)
    assert later == {"saved": 5000.0} and not progress.stalled  # the brake lets a moving job go on
    assert progress.record(saved_at(5000)[2]).stalled and Progress(limit=1).record(first[2]).record(again).stalled


def test_a_trainer_output_dir_a_level_down_is_searched(tmp_path):
    trainer_checkpoint(tmp_path / "checkpoints" / "run-2026-11-28", 300)
    trainer_checkpoint(tmp_path / "checkpoints" / "run-2026-11-29", 700)
    write(tmp_path / "checkpoints" / "run-2026-11-29" / "runs" / "events.out.tfevents")
    found = newest_complete(tmp_path)
    assert (found.path, found.step) == (str(tmp_path / "checkpoints" / "run-2026-11-29" / "checkpoint-700"), 700)


def test_a_layout_the_finder_cannot_judge_is_said_in_the_log_never_handed_out(tmp_path):
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    write(tmp_path / "snapshots" / "weights.npz.bin")
    write(tmp_path / "snapshots" / "opt-state.pt")
    lines, kept = [], []
    assert newest_checkpoint(str(tmp_path), lines.append, kept) == (None, None, None)
    assert lines == [f"recovery: cannot judge {tmp_path / 'snapshots'}: checkpoint-like files (opt-state.pt, "
                     "weights.npz.bin) in a layout nodeweave does not know: never handed out"]
    assert kept == [lines[0][len("recovery: cannot judge "):]]  # node 0's record (recovery.json) keeps it too


def test_an_fsdp_optimizer_folder_inside_a_trainer_save_is_checked_like_any_dcp_save(tmp_path):
    for step in (500, 1000):
        folder = trainer_checkpoint(tmp_path, step, weights=None)
        dcp(folder / "pytorch_model_fsdp_0")
        dcp(folder / "optimizer_0")
    (tmp_path / "checkpoint-1000" / "optimizer_0" / "__1_0.distcp").unlink()
    assert newest_complete(tmp_path).step == 500
    assert "optimizer_0/: __1_0.distcp, listed in .metadata, is missing" in reasons(tmp_path)["checkpoint-1000"]
