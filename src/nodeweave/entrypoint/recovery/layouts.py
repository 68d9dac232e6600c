"""Is this one checkpoint complete? One rule per writer, each keyed on what that writer writes last.

Each rule takes a :class:`~.listing.Listing` of the checkpoint's folder and
returns ``(complete, text)``: what proved it complete, or why it is not.

- PyTorch DCP (``FileSystemWriter``, TorchTitan's ``step-N``, Megatron's
  ``torch_dist``): ``.metadata`` is renamed into place after every
  ``__<rank>_<n>.distcp``; it lists each shard's bytes, checked by ``stat``.
- DeepSpeed tag (``global_stepN``): ``mp_rank_XX_model_states.pt`` (ZeRO-3:
  ``zero_pp_rank_D_mp_rank_XX_model_states.pt``) and ZeRO's
  ``[bf16_]zero_pp_rank_D_mp_rank_XX_optim_states.pt``; the ranks must run
  0..N-1 with no gap. Rank 0 writes ``latest`` without waiting for the other
  ranks, so ``latest`` alone proves nothing (checkpoints.py orders the tags).
- Hugging Face Trainer (``checkpoint-N``): ``trainer_state.json`` is written
  after the model, optimizer and RNG state; the weights named by a sharded
  index must all exist.
- Accelerate ``save_state``: ``random_states_<process>.pkl`` is written last.
- Megatron ``iter_XXXXXXX``: every ``mp_rank_TT[_PPP]`` of the tensor x
  pipeline grid holds ``model_optim_rng.pt`` (and ``distrib_optim.pt`` in all
  or none); the ``torch_dist`` format is a DCP folder whose ``metadata.json``
  is written after the shards.
"""

import json
import re

from .dcp_metadata import METADATA_LIMIT, MetadataError, shard_sizes
from .listing import Listing, Unreadable, first_few

_DCP_METADATA = re.compile(r"\.metadata|__(\d+)\.metadata")
DISTCP = re.compile(r"__\d+_\d+\.distcp")


def _leftovers(listing):
    temp = listing.leftovers()
    return f"unfinished files remain ({first_few(temp)})" if temp else None


def check_dcp(listing):
    """A DCP folder: complete when ``.metadata`` exists and every shard it lists holds its bytes."""
    left = _leftovers(listing)
    if left:
        return False, left
    metadata = [name for _, name in listing.matching(_DCP_METADATA)]
    shards = [name for _, name in listing.matching(DISTCP)]
    if not metadata:
        if shards:
            return False, f"{len(shards)} shard file(s) but no .metadata (written last): the save had not finished"
        return False, "no .metadata"
    listed = {}
    notes = []
    for name in metadata:
        size = listing.size(name)
        if not size:
            return False, f"{name} is empty" if size == 0 else f"{name} is not a regular file"
        if size > METADATA_LIMIT:
            notes.append(f"{name} is {size} bytes, not read")
            continue
        try:
            listed.update(shard_sizes(listing.read(name, METADATA_LIMIT)))
        except MetadataError as exc:
            notes.append(f"{name} not parsed: {exc}")
    for shard, needed in sorted(listed.items()):
        have = listing.size(shard)
        if have is None:
            return False, f"{shard}, listed in .metadata, is missing"
        if have < needed:
            return False, f"{shard} holds {have} bytes, .metadata needs {needed}"
    if notes:
        return True, f"DCP: {first_few(metadata)} present, {len(shards)} shard file(s) ({'; '.join(notes)})"
    return True, f"DCP: .metadata lists {len(listed)} shard file(s), all present with their sizes"


_DS_MODEL = re.compile(r"mp_rank_(\d+)_model_states\.pt")
_DS_ZERO_MODEL = re.compile(r"zero_pp_rank_(\d+)_mp_rank_(\d+)_model_states\.pt")
_DS_ZERO_OPTIM = re.compile(r"(?:bf16_|fp16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_?optim_states\.pt")
_DS_PIPE_LAYER = re.compile(r"layer_\d+-model_(\d+)-model_states\.pt")
_DS_EXPERT = re.compile(r"(?:layer_\d+_)?expert_\d+_mp_rank_\d+_model_states\.pt")


def _gap(numbers):
    """The first missing number of 0..max, or None when the set runs from 0 with no gap."""
    for expected in range(max(numbers) + 1):
        if expected not in numbers:
            return expected
    return None


def _dp_ranks(matches):
    """{mp rank: {dp ranks}} from ZeRO file matches (dp rank, mp rank)."""
    ranks = {}
    for match, _ in matches:
        ranks.setdefault(int(match.group(2)), set()).add(int(match.group(1)))
    return ranks


def _zero_gaps(kind, ranks):
    """Every model-parallel rank needs the files of every data-parallel rank 0..D-1."""
    every = set().union(*ranks.values())
    for mp_rank, dp in sorted(ranks.items()):
        missing = _gap(every) if _gap(every) is not None else min(every - dp, default=None)
        if missing is not None:
            return f"{kind} of data-parallel rank {missing} (mp rank {mp_rank:02d}) is missing"
    return None


def check_deepspeed_tag(listing):
    """A DeepSpeed tag folder: model states of every mp rank, ZeRO files of every dp rank, none empty."""
    left = _leftovers(listing)
    if left:
        return False, left
    plain = listing.matching(_DS_MODEL)
    zero_model = listing.matching(_DS_ZERO_MODEL)
    zero_optim = listing.matching(_DS_ZERO_OPTIM)
    layers = listing.matching(_DS_PIPE_LAYER)
    experts = listing.matching(_DS_EXPERT)
    plain = [(m, n) for m, n in plain if not n.startswith(("zero_pp_rank_", "expert_", "layer_"))]
    if not (plain or zero_model or layers):
        return False, "no *model_states.pt (DeepSpeed writes one per model-parallel rank)"
    names = [n for group in (plain, zero_model, zero_optim, layers, experts) for _, n in group]
    empty = listing.empty_files(names)
    if empty:
        return False, f"empty file(s): {first_few(empty)}"
    with_model = {int(m.group(1)) for m, _ in plain} | set(_dp_ranks(zero_model))
    mp_ranks = with_model | set(_dp_ranks(zero_optim))
    if not layers:
        missing = _gap(mp_ranks) if _gap(mp_ranks) is not None else min(mp_ranks - with_model, default=None)
        if missing is not None:
            return False, f"model states of mp rank {missing:02d} are missing"
    problem = _zero_gaps("ZeRO optimizer state", _dp_ranks(zero_optim)) if zero_optim else None
    if not problem and zero_model:
        problem = _zero_gaps("ZeRO-3 model state", _dp_ranks(zero_model))
        if not problem and zero_optim and _dp_ranks(zero_model) != _dp_ranks(zero_optim):
            problem = "ZeRO-3 model and optimizer files name different data-parallel ranks"
    if problem:
        return False, problem
    text = f"DeepSpeed: {len(plain) + len(zero_model) + len(layers)} model-state file(s)"
    if zero_optim:
        text += f", {len(zero_optim)} ZeRO optimizer file(s)"
    return True, text + ", ranks without gaps, none empty"


_HF_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
_HF_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_FSDP_DIR = re.compile(r"pytorch_model_fsdp_\d+")
_FSDP_FILE = re.compile(r"pytorch_model_fsdp(?:_\d+)?\.bin")
_SAFE_MODEL = re.compile(r"model(?:_\d+)?\.safetensors|pytorch_model(?:_\d+)?\.bin")


def _sharded_index(listing, index_name):
    """(complete, text) for a ``*.index.json``: every shard in its weight_map exists and is not empty."""
    try:
        index = json.loads(listing.read(index_name).decode("utf-8"))
        shards = sorted(set(index["weight_map"].values()))
    except Unreadable as exc:
        return False, str(exc)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False, f"{index_name} is not a weight index (no weight_map)"
    gone = [s for s in shards if not listing.size(s)]
    if gone:
        return False, f"shard(s) listed in {index_name} missing or empty: {first_few(gone)}"
    return True, f"{index_name} and its {len(shards)} shard(s)"


def _weights(listing, files):
    """(complete, text, found) for the model weights of a Trainer or Accelerate folder."""
    for index_name in _HF_INDEXES:
        if index_name in listing:
            ok, text = _sharded_index(listing, index_name)
            return ok, text, True
    present = [n for n in files if n in listing]
    if present:
        empty = listing.empty_files(present)
        return (False, f"{first_few(empty)} empty", True) if empty else (True, first_few(present), True)
    for _, name in listing.matching(_FSDP_DIR):
        ok, text = check_dcp(Listing(listing.join(name)))
        return ok, (f"{name}: {text}"), True
    fsdp_files = [n for _, n in listing.matching(_FSDP_FILE)]
    if fsdp_files:
        return True, first_few(fsdp_files), True
    for name in listing.names:
        if listing.is_dir(name):
            sub = Listing(listing.join(name))
            if "latest" in sub or sub.matching(DS_TAG_DIR):
                ok, text = check_deepspeed_root(sub)
                return ok, f"{name}/: {text}", True
    if "latest" in listing or listing.matching(DS_TAG_DIR):
        ok, text = check_deepspeed_root(listing)
        return ok, text, True
    return False, "", False


def check_hf_trainer(listing):
    """A Trainer ``checkpoint-N``: ``trainer_state.json`` (written last) and complete weights."""
    left = _leftovers(listing)
    if left:
        return False, left
    size = listing.size("trainer_state.json")
    if not size:
        return False, "no trainer_state.json (the Trainer writes it last): the save had not finished"
    ok, text, found = _weights(listing, _HF_WEIGHTS)
    if not found:
        return False, "no model weights (model.safetensors, pytorch_model.bin, a sharded index, FSDP or DeepSpeed)"
    if not ok:
        return False, text
    return True, f"Trainer: trainer_state.json and {text}"


RANDOM_STATES = re.compile(r"random_states_(\d+)\.pkl")


def check_accelerate(listing):
    """An Accelerate ``save_state`` folder: weights and every process's ``random_states_N.pkl`` (written last)."""
    left = _leftovers(listing)
    if left:
        return False, left
    states = listing.matching(RANDOM_STATES)
    if not states:
        return False, "no random_states_0.pkl (save_state writes it last): the save had not finished"
    processes = {int(m.group(1)) for m, _ in states}
    missing = _gap(processes)
    if missing is not None:
        return False, f"random_states_{missing}.pkl is missing"
    empty = listing.empty_files([n for _, n in states])
    if empty:
        return False, f"{first_few(empty)} empty"
    files = [n for _, n in listing.matching(_SAFE_MODEL)]
    ok, text, found = _weights(listing, files)
    if not found:
        return False, "no model weights (model.safetensors, pytorch_model.bin, FSDP or DeepSpeed)"
    if not ok:
        return False, text
    return True, f"Accelerate: {text} and random_states of {len(processes)} process(es)"


DS_TAG_DIR = re.compile(r"global_step(\d+)")


def check_deepspeed_root(listing):
    """A folder holding DeepSpeed tags: the tag ``latest`` names is complete (nested in Trainer/Accelerate)."""
    try:
        tag = listing.read("latest", 4096).decode("utf-8", "replace").strip()
    except Unreadable as exc:
        return False, f"no readable latest ({exc})"
    if not tag or not listing.is_dir(tag):
        return False, f"latest names {tag!r}, which is not a folder here"
    ok, text = check_deepspeed_tag(Listing(listing.join(tag)))
    return ok, f"latest -> {tag}: {text}"


MEGATRON_RANK_DIR = re.compile(r"mp_rank_(\d{2})(?:_(\d{3}))?(?:_(\d{3}))?")


def check_megatron_iter(listing):
    """A Megatron ``iter_XXXXXXX``: the legacy per-rank grid, or a torch_dist DCP folder."""
    left = _leftovers(listing)
    if left:
        return False, left
    if ".metadata" in listing or listing.matching(DISTCP) or "metadata.json" in listing:
        if not listing.size("metadata.json"):
            return False, "no metadata.json (Megatron writes it after the shards): the save had not finished"
        ok, text = check_dcp(listing)
        return ok, f"Megatron torch_dist: {text}"
    grid = listing.matching(MEGATRON_RANK_DIR)
    if not grid:
        return False, "no mp_rank_* folders"
    tensor = {int(m.group(1)) for m, _ in grid}
    pipeline = {int(m.group(2) or 0) for m, _ in grid}
    cells = {(int(m.group(1)), int(m.group(2) or 0)) for m, _ in grid}
    for tp in sorted(tensor):
        for pp in sorted(pipeline):
            if (tp, pp) not in cells:
                return False, f"tensor rank {tp} x pipeline rank {pp} has no folder"
    for kind in (_gap(tensor), _gap(pipeline)):
        if kind is not None:
            return False, "the mp_rank_* folders have a gap in their ranks"
    with_optim = 0
    for _, name in grid:
        sub = Listing(listing.join(name))
        if not sub.size("model_optim_rng.pt"):
            return False, f"{name}/model_optim_rng.pt is missing or empty"
        leftover = _leftovers(sub)
        if leftover:
            return False, f"{name}: {leftover}"
        with_optim += 1 if sub.size("distrib_optim.pt") else 0
    if with_optim not in (0, len(grid)):
        return False, f"distrib_optim.pt in {with_optim} of {len(grid)} mp_rank folders"
    extra = ", distrib_optim.pt in each" if with_optim else ""
    return True, f"Megatron: model_optim_rng.pt in all {len(grid)} mp_rank folders{extra}"
