"""Is a Hugging Face Trainer or Accelerate checkpoint complete? Keyed on what each writes last.

- Trainer ``checkpoint-N`` (``Trainer._save_checkpoint``): ``trainer_state.json``
  is written after the model, optimizer, scheduler and RNG state; the shards a
  ``*.index.json`` names must all exist; with DeepSpeed the folder holds
  ``latest`` and ``global_stepN``, with FSDP a ``pytorch_model_fsdp_0`` DCP folder.
- Accelerate ``save_state`` (``checkpoint_N`` under ``checkpoints/`` with
  automatic naming, or any folder): the weights, optimizer, scheduler and
  sampler, then ``random_states_<process>.pkl`` (one per process), then
  ``custom_checkpoint_<i>.pkl`` for each ``register_for_checkpointing`` object.
"""

import json
import re

from .layouts import DISTCP, DS_TAG_DIR, check_dcp, check_deepspeed_root, gap, leftovers, whole
from .listing import SMALL_READ, Listing, Unreadable, file_cut_off, first_few

_HF_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
_HF_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_FSDP_DIR = re.compile(r"pytorch_model_fsdp_\d+")
_FSDP_FILE = re.compile(r"pytorch_model_fsdp(?:_\d+)?\.bin")
_SAFE_MODEL = re.compile(r"model(?:_\d+)?\.safetensors|pytorch_model(?:_\d+)?\.bin")


def _sharded_index(listing, index_name):
    """(complete, text) for a ``*.index.json``: every shard in its weight_map exists and is not cut off."""
    try:
        index = json.loads(listing.read(index_name).decode("utf-8"))
        shards = sorted(set(index["weight_map"].values()))
    except Unreadable as exc:
        return False, str(exc)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False, f"{index_name} is not a weight index (no weight_map)"
    gone = [s for s in shards if listing.size(s) is None]
    if gone:
        return False, f"shard(s) listed in {index_name} missing: {first_few(gone)}"
    broken = listing.cut_off(shards)
    if broken:
        return False, f"shard(s) listed in {index_name} unfinished: {first_few(broken)}"
    return True, f"{index_name} and its {len(shards)} shard(s)"


def _weights(listing, files):
    """(complete, text, found) for the model weights of a Trainer or Accelerate folder."""
    for index_name in _HF_INDEXES:
        if index_name in listing:
            ok, text = _sharded_index(listing, index_name)
            return ok, text, True
    present = [n for n in files if n in listing]
    if present:
        broken = listing.cut_off(present)
        return (False, f"unfinished: {first_few(broken)}", True) if broken else (True, first_few(present), True)
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


# TrainerState.save_to_json writes json.dumps(..., indent=2, sort_keys=True): global_step is a top-level key
# (two spaces in) before log_history, which is what grows; a long run's file is read from its head.
_TOP_GLOBAL_STEP = re.compile(rb'\n  "global_step": (\d+),?\n')
_STATE_HEAD = 64 << 10


def _trainer_state_step(listing):
    """``global_step`` from ``trainer_state.json``, or the reason it cannot be read. A file too large to parse
    whole (a long run's ``log_history``) is judged by its end and its step read from its leading keys."""
    if (listing.size("trainer_state.json") or 0) > SMALL_READ:
        why = file_cut_off(listing, "trainer_state.json")
        if why:
            return None, f"trainer_state.json: {why}"
        try:
            match = _TOP_GLOBAL_STEP.search(listing.head("trainer_state.json", _STATE_HEAD))
        except Unreadable as exc:
            return None, str(exc)
        if not match:
            return None, f"trainer_state.json holds no global_step in its first {_STATE_HEAD} bytes"
        return int(match.group(1)), None
    try:
        state = json.loads(listing.read("trainer_state.json").decode("utf-8"))
    except Unreadable as exc:
        return None, str(exc)
    except ValueError as exc:
        return None, f"trainer_state.json does not parse ({exc}): cut off mid-write"
    step = state.get("global_step") if isinstance(state, dict) else None
    if not isinstance(step, int) or isinstance(step, bool):
        return None, "trainer_state.json holds no global_step"
    return step, None


def _dcp_subfolders(listing):
    """Why a DCP folder inside the save (FSDP's ``pytorch_model_fsdp_0``, ``optimizer_0``) is not complete, or
    None: the Trainer's and Accelerate's FSDP resume opens each."""
    for name in listing.names:
        if not listing.is_dir(name) or name.startswith("."):
            continue
        sub = Listing(listing.join(name))
        if ".metadata" in sub or sub.matching(DISTCP):
            ok, text = check_dcp(sub)
            if not ok:
                return f"{name}/: {text}"
    return None


def check_hf_trainer(listing):
    """A Trainer ``checkpoint-N``: ``trainer_state.json`` (written last) parses, the weights and every file
    the Trainer's resume opens are whole. Returns ``(complete, text, step)``: ``global_step`` of the state."""
    left = leftovers(listing)
    if left:
        return False, left
    size = listing.size("trainer_state.json")
    if not size:
        return False, "no trainer_state.json (the Trainer writes it last): the save had not finished"
    step, why = _trainer_state_step(listing)
    if why:
        return False, why
    ok, text, found = _weights(listing, _HF_WEIGHTS)
    if not found:
        return False, "no model weights (model.safetensors, pytorch_model.bin, a sharded index, FSDP or DeepSpeed)"
    if not ok:
        return False, text
    broken = whole(listing, skip=("trainer_state.json",)) or _dcp_subfolders(listing)  # it was read above
    if broken:
        return False, broken
    return True, f"Trainer: trainer_state.json (global_step {step}) and {text}, every file whole", step


RANDOM_STATES = re.compile(r"random_states_(\d+)\.pkl")
CUSTOM_STATES = re.compile(r"custom_checkpoint_(\d+)\.pkl")


def registered_objects(listing):
    """How many ``register_for_checkpointing`` objects a save holds (``custom_checkpoint_0..N-1.pkl``)."""
    return len(listing.matching(CUSTOM_STATES))


def check_accelerate(listing, expected_objects=0):
    """An Accelerate ``save_state`` folder: weights, every process's ``random_states_N.pkl``, then the
    registered objects' ``custom_checkpoint_N.pkl`` (written last: ``expected_objects`` is how many the save
    before this one held, since the folder itself records no count), every file whole."""
    left = leftovers(listing)
    if left:
        return False, left
    states = listing.matching(RANDOM_STATES)
    if not states:
        return False, "no random_states_0.pkl (save_state writes it after the weights): the save had not finished"
    processes = {int(m.group(1)) for m, _ in states}
    missing = gap(processes)
    if missing is not None:
        return False, f"random_states_{missing}.pkl is missing"
    objects = {int(m.group(1)) for m, _ in listing.matching(CUSTOM_STATES)}
    missing = gap(objects) if objects else None
    if missing is None and len(objects) < expected_objects:
        missing = len(objects)
    if missing is not None:
        return False, (f"custom_checkpoint_{missing}.pkl is missing (registered objects are saved last"
                       + (f"; the save before held {expected_objects})" if expected_objects else ")"))
    files = [n for _, n in listing.matching(_SAFE_MODEL)]
    ok, text, found = _weights(listing, files)
    if not found:
        return False, "no model weights (model.safetensors, pytorch_model.bin, FSDP or DeepSpeed)"
    if not ok:
        return False, text
    broken = whole(listing) or _dcp_subfolders(listing)
    if broken:
        return False, broken
    extra = f", {len(objects)} registered object(s)" if objects else ""
    return True, f"Accelerate: {text} and random_states of {len(processes)} process(es){extra}, every file whole"
