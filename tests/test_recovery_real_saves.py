"""The checkpoint finder against saves the real libraries make, killed or cut as storage leaves them.

Each library here writes a whole save (torch DCP on two gloo ranks with
DTensor shards, and its ``async_save`` killed while it writes in the
background; ``torch.save``; safetensors; Accelerate ``save_state`` with
registered objects; DeepSpeed ``save_checkpoint`` with ZeRO-2 on two gloo
ranks and its CPU accelerator; the Hugging Face Trainer with a one-layer
GPT-2; Lightning's ``ModelCheckpoint`` with a metric in its names and its
``last.ckpt`` link). A kill mid-save leaves the files written before it, the
last one possibly cut short; so every prefix of the save's write order (its
files by mtime), with and without its last file cut in half, must never be
handed out, and the whole save must be, and must load back in the library.
A file cut anywhere (a lost page cache) must be refused too.

Marked ``slow`` and ``launchers`` (torch, accelerate, deepspeed: make install;
transformers and lightning: its ``saves`` extra). A library that is not
installed skips its tests, saying so. Nothing is downloaded: the models are
built here.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time
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


def write_order(folder, order=LIBRARY_ORDER):
    """The files of a save, oldest first (the order its writer wrote them; ``order``'s name prefixes break
    ties of mtime)."""
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    rank = {prefix: index for index, prefix in enumerate(order)}
    return sorted(files, key=lambda p: (p.stat().st_mtime_ns, next(
        (rank[x] for x in order if p.name.startswith(x)), len(rank)), p.name))


def killed_copies(whole, where, order=LIBRARY_ORDER):
    """(label, folder) for every point a kill could stop the save at: the first k files written, and the
    first k with the k-th cut in half."""
    files = write_order(whole, order)
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


def assert_never_handed_out(whole, older, tmp_path, order=LIBRARY_ORDER):
    """Beside a whole ``older`` save, no killed copy of ``whole`` is handed out; ``whole`` itself is."""
    for label, folder in killed_copies(whole, tmp_path / "killed", order):
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
    assert (found.step, found.layout) == (200, "dcp")
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


NOT_INSTALLED = ("{0} is not installed here, so no real {0} save is made (pip install {0}; make install adds it "
                 "with the 'saves' extra)")

TRAINER_SAVE = textwrap.dedent("""
    import sys
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

    class Tokens(torch.utils.data.Dataset):
        def __len__(self):
            return 16
        def __getitem__(self, index):
            ids = (torch.arange(8) + index) % 32
            return {"input_ids": ids, "labels": ids}

    class Resumed(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            print("resumed at", state.global_step, flush=True)

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=32, n_positions=16))
    args = TrainingArguments(output_dir=sys.argv[1], max_steps=4, save_steps=2, per_device_train_batch_size=2,
                             report_to="none", use_cpu=True, logging_steps=1, disable_tqdm=True,
                             save_strategy="steps")
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[Resumed()])
    trainer.train(resume_from_checkpoint=sys.argv[2] if len(sys.argv) > 2 else None)
""")
# Trainer._save_checkpoint: save_pretrained (config, generation config, weights), training_args.bin, optimizer,
# scheduler, scaler, RNG state, trainer_state.json last
TRAINER_ORDER = ("config", "generation_config", "model", "training_args", "optimizer", "scheduler", "scaler",
                 "rng_state", "trainer_state")


@pytest.fixture(scope="module")
def trainer_saves(tmp_path_factory):
    """checkpoint-2 and checkpoint-4 from the Hugging Face Trainer (a 1-layer GPT-2 built here, safetensors),
    its output_dir a level down as runs name it: checkpoints/run-2026-11-29/checkpoint-N."""
    pytest.importorskip("transformers", reason=NOT_INSTALLED.format("transformers"))
    root = tmp_path_factory.mktemp("trainer")
    (root / "save.py").write_text(TRAINER_SAVE)
    output = root / "checkpoints" / "run-2026-11-29"
    done = subprocess.run([sys.executable, str(root / "save.py"), str(output)], capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stderr[-1500:]
    return root, [output / "checkpoint-2", output / "checkpoint-4"]


def test_a_real_trainer_save_killed_anywhere_is_never_handed_out_and_the_trainer_resumes_from_the_pick(
        trainer_saves, tmp_path):
    root, (older, whole) = trainer_saves
    assert write_order(whole, TRAINER_ORDER)[-1].name == "trainer_state.json"  # written last
    found = newest_complete(root / "checkpoints")  # the run folder a level down is searched
    assert (found.path, found.step, found.layout) == (str(whole), 4, "hf-trainer")
    assert_never_handed_out(whole, older, tmp_path, TRAINER_ORDER)
    for cut in sorted(p.name for p in whole.iterdir()):  # a lost page cache: any one file cut, the rest whole
        folder = tmp_path / f"cut-{cut}"
        shutil.copytree(older, folder / older.name)
        shutil.copytree(whole, folder / whole.name)
        os.truncate(folder / whole.name / cut, (whole / cut).stat().st_size // 2)
        assert newest_complete(folder).path == str(folder / older.name), cut
    done = subprocess.run([sys.executable, str(root / "save.py"), str(tmp_path / "again"), found.path],
                          capture_output=True, text=True, timeout=400)
    assert "resumed at 4" in done.stdout, done.stderr[-1500:]  # the Trainer takes back what was handed out


LIGHTNING_SAVE = textwrap.dedent("""
    import sys
    import torch
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)
        def on_load_checkpoint(self, checkpoint):  # fit(ckpt_path=...) restores through here
            print("resumed at", checkpoint["global_step"], flush=True)
        def training_step(self, batch, index):
            # a loss whose digits are larger at step 2 than at step 4: a name's last number is no step
            loss = self.layer(batch[0]).pow(2).mean() * 1e-4 + (0.95 if self.global_step < 2 else 0.31)
            self.log("train_loss", loss)
            return loss
        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 8)), batch_size=2)
    checkpoint = ModelCheckpoint(dirpath=sys.argv[1], filename="{epoch}-{step}-{train_loss:.2f}",
                                 every_n_train_steps=2, save_top_k=-1, save_last="link")
    trainer = L.Trainer(max_steps=4, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[checkpoint])
    trainer.fit(Tiny(), data, ckpt_path=sys.argv[2] if len(sys.argv) > 2 else None)
""")


@pytest.fixture(scope="module")
def lightning_saves(tmp_path_factory):
    """Lightning's ModelCheckpoint every 2 steps, names with a metric, and its ``last.ckpt`` link."""
    pytest.importorskip("lightning", reason=NOT_INSTALLED.format("lightning"))
    root = tmp_path_factory.mktemp("lightning")
    (root / "save.py").write_text(LIGHTNING_SAVE)
    done = subprocess.run([sys.executable, str(root / "save.py"), str(root / "ckpts")], capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-1500:]
    return root, root / "ckpts"


def test_a_real_lightning_save_cut_anywhere_is_never_handed_out_and_lightning_resumes_from_the_pick(
        lightning_saves, tmp_path):
    root, folder = lightning_saves
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["epoch=0-step=2-train_loss=0.95.ckpt", "epoch=0-step=4-train_loss=0.31.ckpt", "last.ckpt"]
    assert (folder / "last.ckpt").is_symlink()
    found = newest_complete(folder)
    assert (Path(found.path).name, found.step, found.layout) == (names[1], 4, "lightning")
    data = (folder / names[1]).read_bytes()
    for cut in cut_points(len(data)):
        copy = tmp_path / f"cut{cut}"
        shutil.copytree(folder, copy, symlinks=True)
        (copy / names[1]).write_bytes(data[:cut])  # last.ckpt still links to it
        assert newest_complete(copy).path == str(copy / names[0]), cut
    done = subprocess.run([sys.executable, str(root / "save.py"), str(tmp_path / "again"), found.path],
                          capture_output=True, text=True, timeout=400)
    assert "resumed at 4" in done.stdout, done.stderr[-1500:]  # Lightning takes back what was handed out


ASYNC_SAVE = textwrap.dedent("""
    import os, sys, time
    import torch, torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    rank, port, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    mesh = init_device_mesh("cpu", (2,))
    for step in (100, 200):
        w = distribute_tensor(torch.full((1 << 22, 2), float(step)), mesh, [Shard(0)])  # 16 MiB per rank
        future = dcp.async_save({"model": {"w": w}, "step": step}, checkpoint_id=os.path.join(root, f"step-{step}"))
        if step == 100:
            future.result()
        else:
            open(os.path.join(root, f"saving-{rank}"), "w").close()  # the test kills both ranks from here on
            future.result()
            open(os.path.join(root, f"saved-{rank}"), "w").close()
    time.sleep(600)  # killed by the test
""")


def killed_async_save(root, delay):
    """Two gloo ranks: step-100 saved with async_save and waited for, step-200's async_save begun, then both
    ranks killed with SIGKILL ``delay`` seconds after it began writing in the background."""
    script = root / "save.py"
    script.write_text(ASYNC_SAVE)
    for _ in range(3):
        port = str(free_port())
        ranks = [subprocess.Popen([sys.executable, str(script), str(rank), port, str(root)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
        deadline = time.monotonic() + 300
        while not all((root / f"saving-{r}").exists() for r in (0, 1)) and time.monotonic() < deadline and all(
                rank.poll() is None for rank in ranks):
            time.sleep(0.01)
        time.sleep(delay)
        for rank in ranks:
            rank.kill()
        errors = [rank.communicate()[1] for rank in ranks]
        if all((root / f"saving-{r}").exists() for r in (0, 1)):
            return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        if not any("EADDRINUSE" in e for e in errors):
            pytest.fail(f"the async_save ranks did not reach step-200's save: {errors[0][-1500:]}")
        shutil.rmtree(root)
        root.mkdir()
        script.write_text(ASYNC_SAVE)
    pytest.fail("no free port pair for the async_save ranks")


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.5])
def test_a_real_async_save_killed_mid_save_is_never_handed_out(tmp_path, delay):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    left = killed_async_save(tmp_path, delay)
    finished = all((tmp_path / f"saved-{r}").exists() for r in (0, 1))
    found = newest_complete(tmp_path)
    assert found is not None and found.layout == "dcp", (left, scan(tmp_path).incomplete)
    state = {"model": {"w": torch.zeros(1 << 22, 2)}, "step": 0}
    dcp.load(state, checkpoint_id=found.path, no_dist=True)  # what was handed out loads back whole
    assert state["step"] == found.step and float(state["model"]["w"][-1, 0]) == found.step
    if found.step == 200:  # the background write finished before the kill: it is whole, and loads
        assert (tmp_path / "step-200" / ".metadata").is_file(), left
    else:
        assert found.step == 100 and not finished, left
        try:  # the library itself cannot load what the kill left of step-200
            dcp.load({"model": {"w": torch.zeros(1 << 22, 2)}, "step": 0},
                     checkpoint_id=str(tmp_path / "step-200"), no_dist=True)
        except (Exception, CheckpointException):  # DCP's own error is a BaseException
            pass
        else:
            pytest.fail(f"step-200 loads whole after the kill but was refused: {left}, "
                        f"{scan(tmp_path).incomplete}")
