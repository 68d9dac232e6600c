"""Is this one checkpoint complete? One rule per writer, each keyed on what that writer writes last.

(The Hugging Face Trainer and Accelerate rules are in ``huggingface.py``.)

Each rule takes a :class:`~.listing.Listing` of the checkpoint's folder and
returns ``(complete, text)``: what proved it complete, or why it is not.

- PyTorch DCP (``FileSystemWriter``, TorchTitan's ``step-N``, Megatron's
  ``torch_dist``): ``.metadata`` is renamed into place after every
  ``__<rank>_<n>.distcp``; it must unpickle (a cut one is a broken save), and
  each shard its ``storage_data`` lists must hold its bytes, checked by ``stat``.
- DeepSpeed tag (``global_stepN``): ``mp_rank_XX_model_states.pt`` (ZeRO-3:
  ``zero_pp_rank_D_mp_rank_XX_model_states.pt``) records ``dp_world_size``,
  ``mp_world_size``, ``global_steps`` and the ZeRO stage; every mp rank's
  model states and ZeRO's ``[bf16_]zero_pp_rank_D_mp_rank_XX_optim_states.pt``
  for every D below ``dp_world_size`` must be there, so a missing *highest*
  rank is seen too. Rank 0 writes ``latest`` without waiting for the other
  ranks, so ``latest`` alone proves nothing (checkpoints.py orders the tags).
- Megatron ``iter_XXXXXXX``: every ``mp_rank_TT[_PPP]`` of the tensor x
  pipeline grid holds ``model_optim_rng.pt`` (and ``distrib_optim.pt`` in all
  or none); the ``torch_dist`` format is a DCP folder whose ``metadata.json``
  is written after the shards.

Every file a loader opens (``.pt``/``.pth``/``.bin``/``.pkl``/``.ckpt``/
``.safetensors``/``.json``) is also checked whole (``listing.file_cut_off``):
a torch.save zip's central directory and entries, a safetensors file's header
and tensor bytes, a JSON file's parse, a pickle's STOP opcode.
"""

import re

from .dcp_metadata import METADATA_LIMIT, MetadataError, shard_sizes_of
from .inert_pickle import PickleError, cached, torch_save_top
from .listing import Listing, Unreadable, first_few

_DCP_METADATA = re.compile(r"\.metadata|__(\d+)\.metadata")
DISTCP = re.compile(r"__\d+_\d+\.distcp")


def leftovers(listing):
    """What unfinished writes left in the folder, as one phrase, or None."""
    temp = listing.leftovers()
    return f"unfinished files remain ({first_few(temp)})" if temp else None


def whole(listing, skip=()):
    """Why one of the files a loader opens in this folder is cut off, or None (``listing.file_cut_off``)."""
    broken = listing.cut_off([n for n in listing.loader_files() if n not in skip])
    return f"unfinished file(s): {first_few(broken)}" if broken else None


def check_dcp(listing):
    """A DCP folder: ``.metadata`` unpickles, and every shard its ``storage_data`` lists holds its bytes."""
    left = leftovers(listing)
    if left:
        return False, left
    metadata = [name for _, name in listing.matching(_DCP_METADATA)]
    shards = [name for _, name in listing.matching(DISTCP)]
    if not metadata:
        if shards:
            return False, (f"{len(shards)} shard file(s) but no .metadata (torch.distributed.checkpoint writes it "
                           "last): the save had not finished")
        return False, "no .metadata (torch.distributed.checkpoint writes it last)"
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
            listed.update(shard_sizes_of(listing.join(name)))
        except MetadataError as exc:
            return False, f"{name} does not unpickle as DCP metadata ({exc}): cut off, or not DCP's"
    for shard, needed in sorted(listed.items()):
        have = listing.size(shard)
        if have is None:
            return False, f"{shard}, listed in .metadata, is missing"
        if have < needed:
            return False, f"{shard} holds {have} bytes, .metadata needs {needed}"
    broken = whole(listing)
    if broken:
        return False, broken
    if notes:
        return True, f"DCP: {first_few(metadata)} present, {len(shards)} shard file(s) ({'; '.join(notes)})"
    return True, f"DCP: .metadata lists {len(listed)} shard file(s), all present with their sizes"


_DS_MODEL = re.compile(r"mp_rank_(\d+)_model_states\.pt")
_DS_ZERO_MODEL = re.compile(r"zero_pp_rank_(\d+)_mp_rank_(\d+)_model_states\.pt")
_DS_ZERO_OPTIM = re.compile(r"(?:bf16_|fp16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_?optim_states\.pt")
_DS_PIPE_LAYER = re.compile(r"layer_\d+-model_(\d+)-model_states\.pt")


def gap(numbers):
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
        missing = gap(every) if gap(every) is not None else min(every - dp, default=None)
        if missing is not None:
            return f"{kind} of data-parallel rank {missing} (mp rank {mp_rank:02d}) is missing"
    return None


_DS_RECORDS = ("mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt")


def deepspeed_record(listing):
    """What DeepSpeed records in a model-states file (``_common_checkpoint_state``): {dp_world_size,
    mp_world_size, global_steps, zero_stage}, read from the first mp rank's file without torch."""
    for name in _DS_RECORDS:
        if name in listing:
            top = cached(listing.join(name), torch_save_top)
            if not isinstance(top, dict):
                raise PickleError(f"{name} holds no dict")
            config = top.get("ds_config") if isinstance(top.get("ds_config"), dict) else {}
            zero = config.get("zero_optimization") if isinstance(config.get("zero_optimization"), dict) else {}
            record = {k: top.get(k) for k in ("dp_world_size", "mp_world_size", "global_steps")}
            record["zero_stage"] = zero.get("stage", 0)
            return name, {k: (v if isinstance(v, int) and not isinstance(v, bool) else None)
                          for k, v in record.items()}
    return None, {}


def _missing_zero_rank(ranks, dp_size, mp_size):
    """The first (mp, dp) pair of 0..mp_size-1 x 0..dp_size-1 with no ZeRO file, or None."""
    for mp_rank in range(mp_size):
        for dp_rank in range(dp_size):
            if dp_rank not in ranks.get(mp_rank, ()):
                return mp_rank, dp_rank
    return None


def check_deepspeed_tag(listing):
    """A DeepSpeed tag folder: the world sizes its model states record, every rank's file there, none cut off.

    Returns ``(complete, text, step)``: the step is ``global_steps`` from the model states.
    """
    left = leftovers(listing)
    if left:
        return False, left
    plain = listing.matching(_DS_MODEL)
    zero_model = listing.matching(_DS_ZERO_MODEL)
    zero_optim = listing.matching(_DS_ZERO_OPTIM)
    layers = listing.matching(_DS_PIPE_LAYER)
    plain = [(m, n) for m, n in plain if not n.startswith(("zero_pp_rank_", "expert_", "layer_"))]
    if not (plain or zero_model or layers):
        return False, "no *model_states.pt (DeepSpeed writes one per model-parallel rank)"
    with_model = {int(m.group(1)) for m, _ in plain} | set(_dp_ranks(zero_model))
    mp_ranks = with_model | set(_dp_ranks(zero_optim))
    if not layers:
        missing = gap(mp_ranks) if gap(mp_ranks) is not None else min(mp_ranks - with_model, default=None)
        if missing is not None:
            return False, f"model states of mp rank {missing:02d} are missing"
    broken = listing.cut_off([name for name in _DS_RECORDS if name in listing])  # before it is unpickled
    if broken:
        return False, f"unfinished file(s): {first_few(broken)}"
    try:
        source, record = deepspeed_record(listing)
    except PickleError as exc:
        return False, f"its model states do not read ({exc})"
    dp_size, mp_size = record.get("dp_world_size"), record.get("mp_world_size")
    if source is None or not dp_size or not mp_size:
        return False, "the model states record no dp_world_size/mp_world_size: cannot tell every rank wrote"
    if not layers:
        missing = next((r for r in range(mp_size) if r not in with_model), None)
        if missing is not None:
            return False, f"model states of mp rank {missing:02d} are missing ({source} records {mp_size})"
    zero_stage = record.get("zero_stage") or 0
    for kind, files, needed in (("ZeRO optimizer state", zero_optim, zero_stage > 0),
                                ("ZeRO-3 model state", zero_model, bool(zero_model))):
        hole = _missing_zero_rank(_dp_ranks(files), dp_size, mp_size) if needed else None
        if hole is not None:
            return False, (f"{kind} of data-parallel rank {hole[1]} (mp rank {hole[0]:02d}) is missing: {source} "
                           f"records dp_world_size {dp_size}")
    broken = whole(listing)  # last: every rank's file is there, now each is read
    if broken:
        return False, broken
    text = f"DeepSpeed: {len(plain) + len(zero_model) + len(layers)} model-state file(s)"
    if zero_optim:
        text += f", {len(zero_optim)} ZeRO optimizer file(s)"
    return True, text + f" for dp_world_size {dp_size} x mp_world_size {mp_size}, none cut off", \
        record.get("global_steps")


DS_TAG_DIR = re.compile(r"global_step(\d+)")


def check_deepspeed_root(listing):
    """A folder holding DeepSpeed tags: the tag ``latest`` names is complete (nested in Trainer/Accelerate)."""
    try:
        tag = listing.read("latest", 4096).decode("utf-8", "replace").strip()
    except Unreadable as exc:
        return False, f"no readable latest ({exc})"
    if not tag or not listing.is_dir(tag):
        return False, f"latest names {tag!r}, which is not a folder here"
    ok, text = check_deepspeed_tag(Listing(listing.join(tag)))[:2]
    return ok, f"latest -> {tag}: {text}"


MEGATRON_RANK_DIR = re.compile(r"mp_rank_(\d{2})(?:_(\d{3}))?(?:_(\d{3}))?")


def check_megatron_iter(listing):
    """A Megatron ``iter_XXXXXXX``: the legacy per-rank grid, or a torch_dist DCP folder."""
    left = leftovers(listing)
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
    if gap(tensor) is not None or gap(pipeline) is not None:
        return False, "the mp_rank_* folders have a gap in their ranks"
    with_optim = 0
    for _, name in grid:
        sub = Listing(listing.join(name))
        if sub.size("model_optim_rng.pt") is None:
            return False, f"{name}/model_optim_rng.pt is missing"
        broken = sub.cut_off(sub.loader_files())
        if broken:
            return False, f"{name}: unfinished {first_few(broken)}"
        leftover = leftovers(sub)
        if leftover:
            return False, f"{name}: {leftover}"
        with_optim += 1 if sub.size("distrib_optim.pt") else 0
    if with_optim not in (0, len(grid)):
        return False, f"distrib_optim.pt in {with_optim} of {len(grid)} mp_rank folders"
    extra = ", distrib_optim.pt in each" if with_optim else ""
    return True, f"Megatron: model_optim_rng.pt in all {len(grid)} mp_rank folders{extra}"
