"""The checkpoint finder against saves the real libraries make, killed or cut as storage leaves them.

Each library here writes a whole save (torch DCP on two gloo ranks with
DTensor shards, ``torch.save``, safetensors, Accelerate ``save_state`` with
registered objects, DeepSpeed ``save_checkpoint`` with ZeRO-2 on two gloo
ranks and its CPU accelerator). Not here: the Hugging Face Trainer and
Lightning (transformers and lightning are not installed; their layouts are
tested from files as they write them in tests/test_recovery_checkpoints.py). A kill mid-save leaves the files written before it, the
last one possibly cut short; so every prefix of the save's write order (its
files by mtime), with and without its last file cut in half, must never be
handed out, and the whole save must be, and must load back in the library.
A file cut anywhere (a lost page cache) must be refused too.

Marked ``slow`` and ``launchers`` (torch, accelerate, deepspeed installed: make install).
Nothing is downloaded: the models are built here.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from free_ports import free_port_pair as free_port

from nodeweave.entrypoint.recovery.checkpoints import newest_complete, scan

pytestmark = [pytest.mark.slow, pytest.mark.launchers]
torch = pytest.importorskip("torch")


# The order the libraries write in, for files whose mtimes tie (the kernel's clock ticks every few ms):
# Accelerate's save_state (accelerator.py), DCP's shards before its .metadata.
LIBRARY_ORDER = ("model", "optimizer", "scheduler", "sampler", "random_states", "custom_checkpoint", "__",
                 ".metadata")


def write_order(folder):
    """The files of a save, oldest first (the order its writer wrote them)."""
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    rank = {prefix: index for index, prefix in enumerate(LIBRARY_ORDER)}
    return sorted(files, key=lambda p: (p.stat().st_mtime_ns, next(
        (rank[x] for x in LIBRARY_ORDER if p.name.startswith(x)), len(rank)), p.name))


def killed_copies(whole, where):
    """(label, folder) for every point a kill could stop the save at: the first k files written, and the
    first k with the k-th cut in half."""
    files = write_order(whole)
    copies = []
    for keep in range(len(files)):
        for cut in (False, True):
            if cut and keep == 0:
                continue
            label = f"{keep} of {len(files)} files" + (f", {files[keep - 1].name} cut" if cut else "")
            folder = where / f"copy{len(copies)}" / whole.name
            shutil.copytree(whole, folder)
            for late in files[keep:]:
                (folder / late.relative_to(whole)).unlink()
            if cut:
                last = folder / files[keep - 1].relative_to(whole)
                os.truncate(last, last.stat().st_size // 2)
            copies.append((label, folder))
    return copies


def assert_never_handed_out(whole, older, tmp_path):
    """Beside a whole ``older`` save, no killed copy of ``whole`` is handed out; ``whole`` itself is."""
    for label, folder in killed_copies(whole, tmp_path / "killed"):
        shutil.copytree(older, folder.parent / older.name)
        found = newest_complete(folder.parent)
        assert found is not None and found.path == str(folder.parent / older.name), (label, found,
                                                                                      scan(folder.parent).incomplete)
    found = newest_complete(whole.parent)
    assert found is not None and found.path == str(whole), scan(whole.parent).incomplete
    return found


def run_on_free_ports(command, saves, timeout=300, tries=3):
    """Run ``command(port)``; again on other ports when another process took the port meanwhile."""
    for _ in range(tries):
        done = subprocess.run(command(free_port()), capture_output=True, text=True, timeout=timeout)
        if "EADDRINUSE" not in done.stderr:
            return done
        shutil.rmtree(saves, ignore_errors=True)
    return done


DCP_SAVE = textwrap.dedent("""
    import os, sys
    import torch, torch.distributed as dist, torch.multiprocessing as mp
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    def run(rank, path, port, step):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=2)
        mesh = init_device_mesh("cpu", (2,))
        w = distribute_tensor(torch.arange(512, dtype=torch.float32).reshape(64, 8) * step, mesh, [Shard(0)])
        dcp.save({"model": {"w": w}, "step": step}, checkpoint_id=path)
        dist.destroy_process_group()

    if __name__ == "__main__":
        for index, path in enumerate(sys.argv[2:]):
            port = int(sys.argv[1]) + index  # a port per save: the last one may still be in TIME_WAIT
            mp.spawn(run, args=(path, port, int(os.path.basename(path).split("-")[1])), nprocs=2)
""")


@pytest.fixture(scope="module")
def dcp_saves(tmp_path_factory):
    """step-100 and step-200, each saved by two gloo ranks with a DTensor sharded across them."""
    root = tmp_path_factory.mktemp("dcp")
    script = root / "save.py"
    script.write_text(DCP_SAVE)
    paths = [root / "saves" / "step-100", root / "saves" / "step-200"]
    done = run_on_free_ports(lambda port: [sys.executable, str(script), str(port)] + [str(p) for p in paths],
                             root / "saves")
    if done.returncode:
        pytest.skip(f"torch DCP could not save on two gloo ranks here: {done.stderr[-400:]}")
    return paths


def test_a_real_two_rank_dcp_save_killed_anywhere_is_never_handed_out(dcp_saves, tmp_path):
    older, whole = dcp_saves
    found = assert_never_handed_out(whole, older, tmp_path)
    assert (found.step, found.layout) == (200, "torchtitan")
    import torch.distributed.checkpoint as dcp

    state = {"model": {"w": torch.zeros(64, 8)}, "step": 0}
    dcp.load(state, checkpoint_id=found.path, no_dist=True)  # the library loads back what was handed out
    assert state["step"] == 200 and float(state["model"]["w"][1, 0]) == 8 * 200


def test_a_real_dcp_metadata_cut_at_any_point_is_refused(dcp_saves, tmp_path):
    older, whole = dcp_saves
    size = (whole / ".metadata").stat().st_size
    for cut in range(1, size, max(1, size // 16)):
        root = tmp_path / f"cut{cut}"
        shutil.copytree(older, root / older.name)
        shutil.copytree(whole, root / whole.name)
        os.truncate(root / whole.name / ".metadata", cut)
        assert newest_complete(root).path == str(root / older.name), cut


def cut_points(size, count=12):
    return sorted({max(1, size * i // count) for i in range(count)} | {size - 1})


@pytest.mark.parametrize("kind", ["torch.save", "safetensors"])
def test_a_real_single_file_save_cut_at_any_point_is_refused(tmp_path, kind):
    state = {"w": torch.randn(128, 16), "b": torch.randn(16)}
    if kind == "torch.save":
        torch.save(dict(state, step=100), tmp_path / "ckpt_100.pt")
        torch.save(dict(state, step=200), tmp_path / "whole.pt")
    else:
        safetensors = pytest.importorskip("safetensors.torch")
        safetensors.save_file(state, tmp_path / "ckpt_100.safetensors")
        safetensors.save_file(state, tmp_path / "whole.pt")
    newer = tmp_path / ("ckpt_200.pt" if kind == "torch.save" else "ckpt_200.safetensors")
    data = (tmp_path / "whole.pt").read_bytes()
    (tmp_path / "whole.pt").unlink()
    for cut in cut_points(len(data)):
        newer.write_bytes(data[:cut])
        assert newest_complete(tmp_path).step == 100, (kind, cut, len(data))
    newer.write_bytes(data)
    assert newest_complete(tmp_path).path == str(newer)


def test_real_per_rank_torch_save_files_are_one_save(tmp_path):
    for step in (100, 200):
        for rank in (0, 1):
            torch.save({"rank": rank, "w": torch.randn(8)}, tmp_path / f"ckpt_{step}_rank{rank}.pt")
    (tmp_path / "ckpt_200_rank1.pt").unlink()  # rank 1 killed before its save
    found = newest_complete(tmp_path)
    assert (found.path, found.step) == (str(tmp_path / "ckpt_100_rank0.pt"), 100)


ACCELERATE_SAVE = textwrap.dedent("""
    import sys
    import torch
    from accelerate import Accelerator
    from accelerate.utils import ProjectConfiguration

    class Counter:
        def __init__(self, n):
            self.n = n
        def state_dict(self):
            return {"n": self.n}
        def load_state_dict(self, state):
            self.n = state["n"]

    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True, project_config=ProjectConfiguration(
        project_dir=sys.argv[1], automatic_checkpoint_naming=True))
    model = torch.nn.Linear(8, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    counters = [Counter(1), Counter(2)]
    for counter in counters:
        accelerator.register_for_checkpointing(counter)
    for _ in range(2):
        model(torch.randn(2, 8)).sum().backward()
        optimizer.step(); scheduler.step(); counters[0].n += 10
        accelerator.save_state()
    if sys.argv[2:3] == ["load"]:
        counters[0].n = -1
        accelerator.load_state(sys.argv[3])
        print("loaded", counters[0].n)
""")


@pytest.fixture(scope="module")
def accelerate_saves(tmp_path_factory):
    """checkpoints/checkpoint_0 and checkpoint_1 from Accelerate's save_state, two registered objects."""
    pytest.importorskip("accelerate")
    root = tmp_path_factory.mktemp("accelerate")
    (root / "save.py").write_text(ACCELERATE_SAVE)
    done = subprocess.run([sys.executable, str(root / "save.py"), str(root / "project")], capture_output=True,
                          text=True, timeout=300)
    if done.returncode:
        pytest.skip(f"accelerate save_state failed here: {done.stderr[-400:]}")
    return root, [root / "project" / "checkpoints" / f"checkpoint_{i}" for i in (0, 1)]


def test_a_real_accelerate_save_killed_anywhere_is_never_handed_out(accelerate_saves, tmp_path):
    root, (older, whole) = accelerate_saves
    names = [p.name for p in write_order(whole)]
    assert names[-2:] == ["custom_checkpoint_0.pkl", "custom_checkpoint_1.pkl"], names  # written last
    killed = tmp_path / "killed"
    for label, folder in killed_copies(whole, killed):
        shutil.copytree(older, folder.parent / older.name)
        found = newest_complete(folder.parent)
        assert found is not None and found.path == str(folder.parent / older.name), (label, found)
    found = newest_complete(whole.parent)
    assert (found.path, found.layout) == (str(whole), "accelerate")
    done = subprocess.run([sys.executable, str(root / "save.py"), str(tmp_path / "again"), "load", found.path],
                          capture_output=True, text=True, timeout=300)
    assert "loaded 21" in done.stdout, done.stderr[-800:]  # load_state takes back what was handed out


DEEPSPEED_SAVE = textwrap.dedent("""
    import os, sys
    import torch, torch.distributed as dist, torch.multiprocessing as mp

    def run(rank, save_dir, port, stage):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                          LOCAL_RANK=str(rank), DS_ACCELERATOR="cpu")
        dist.init_process_group("gloo", rank=rank, world_size=2)
        import deepspeed
        import deepspeed.comm.torch  # noqa: F401  (the module, not the torch attribute deepspeed.comm also has)
        # its shared-memory all-reduce is JIT-compiled on first use (minutes; a kill leaves its build lock behind
        # for every later user): gloo alone carries this test's few collectives, the save path is untouched
        sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 8)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        config = {"train_batch_size": 2, "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True}
        engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
        for step in (1, 2):
            loss = engine(torch.randn(1, 16)).sum()
            engine.backward(loss)
            engine.step()
            engine.save_checkpoint(save_dir)
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])), nprocs=2)
""")


@pytest.fixture(scope="module")
def deepspeed_saves(tmp_path_factory):
    """global_step1 and global_step2 from two gloo ranks' save_checkpoint with ZeRO-2 on the CPU accelerator."""
    pytest.importorskip("deepspeed")
    root = tmp_path_factory.mktemp("deepspeed")
    (root / "save.py").write_text(DEEPSPEED_SAVE)
    try:
        done = run_on_free_ports(lambda port: [sys.executable, str(root / "save.py"), str(root / "saves"), str(port),
                                               "2"], root / "saves", timeout=240)
    except subprocess.TimeoutExpired:
        pytest.skip("deepspeed's two-rank save on the CPU accelerator took over 240 s here")
    if done.returncode:
        pytest.skip(f"deepspeed could not save on the CPU accelerator here: {done.stderr[-400:]}")
    return [root / "saves" / f"global_step{step}" for step in (1, 2)]


def test_a_real_deepspeed_zero_save_killed_anywhere_is_never_handed_out(deepspeed_saves, tmp_path):
    older, whole = deepspeed_saves
    assert sorted(p.name for p in whole.iterdir()) == [
        "mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "zero_pp_rank_1_mp_rank_00_optim_states.pt"]
    found = assert_never_handed_out(whole, older, tmp_path)
    assert (found.step, found.layout) == (2, "deepspeed") and "dp_world_size 2" in found.why
    root = tmp_path / "latest-ahead"  # rank 0 wrote latest; rank 1's ZeRO file is not there yet
    shutil.copytree(older, root / older.name)
    shutil.copytree(whole, root / whole.name)
    (root / whole.name / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    (root / "latest").write_text(whole.name)
    assert newest_complete(root).path == str(root / older.name)
