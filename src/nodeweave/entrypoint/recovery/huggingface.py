"""Is a Hugging Face Trainer or Accelerate checkpoint complete? Keyed on what each writes last.

- Trainer ``checkpoint-N`` (``Trainer._save_checkpoint``): ``trainer_state.json``
  is written after the model, optimizer, scheduler and RNG state; the shards a
  ``*.index.json`` names must all exist; with DeepSpeed the folder holds
  ``latest`` and ``global_stepN``, with FSDP a ``pytorch_model_fsdp_0`` DCP folder.
- Accelerate ``save_state`` (``checkpoint_N`` under ``checkpoints/`` with
  automatic naming, or any folder): ``random_states_<process>.pkl`` is written
  last, one per process, after the weights.
"""

import json
import re

from .layouts import DS_TAG_DIR, check_dcp, check_deepspeed_root, gap, leftovers
from .listing import Listing, Unreadable, first_few

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


def check_hf_trainer(listing):
    """A Trainer ``checkpoint-N``: ``trainer_state.json`` (written last) and complete weights."""
    left = leftovers(listing)
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
    left = leftovers(listing)
    if left:
        return False, left
    states = listing.matching(RANDOM_STATES)
    if not states:
        return False, "no random_states_0.pkl (save_state writes it last): the save had not finished"
    processes = {int(m.group(1)) for m, _ in states}
    missing = gap(processes)
    if missing is not None:
        return False, f"random_states_{missing}.pkl is missing"
    broken = listing.cut_off([n for _, n in states])
    if broken:
        return False, f"unfinished: {first_few(broken)}"
    files = [n for _, n in listing.matching(_SAFE_MODEL)]
    ok, text, found = _weights(listing, files)
    if not found:
        return False, "no model weights (model.safetensors, pytorch_model.bin, FSDP or DeepSpeed)"
    if not ok:
        return False, text
    return True, f"Accelerate: {text} and random_states of {len(processes)} process(es)"


