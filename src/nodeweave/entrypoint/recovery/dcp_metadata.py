"""Read what a PyTorch Distributed Checkpoint's ``.metadata`` says about its shard files, without torch.

``FileSystemWriter.finish`` pickles a ``Metadata`` whose ``storage_data`` maps
every saved item to a ``_StorageInfo(relative_path, offset, length)``; it
writes ``.metadata.tmp`` and renames it to ``.metadata`` after every rank's
``__<rank>_<n>.distcp`` is written. Knowing each shard's name and the bytes it
must hold lets node 0 prove a checkpoint complete by ``stat`` alone.

The pickle names torch classes; a restricted unpickler turns every class it
names into an inert stand-in that only records its arguments and state, so
nothing outside this module runs and torch is never imported.
"""

import io
import pickle

METADATA_LIMIT = 64 << 20  # bytes: a larger .metadata is not read (the presence checks still hold)


class _Stand:
    """Whatever class the pickle names: keeps the state it is given, runs nothing."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.state = {}
        self.items = {}

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state)
            merged = dict(state[0] or {})
            merged.update(state[1] or {})
            state = merged
        self.state = state if isinstance(state, dict) else {"value": state}

    def __setitem__(self, key, value):
        self.items[key] = value

    def append(self, value):
        self.items[len(self.items)] = value

    def extend(self, values):
        for value in values:
            self.append(value)

    def __call__(self, *args, **kwargs):
        return _Stand(*args, **kwargs)


def _stand_class(module, name):
    return type(name, (_Stand,), {"__module__": module})


class _InertUnpickler(pickle.Unpickler):
    """Maps every global to a stand-in class, so no real callable is reached."""

    def find_class(self, module, name):
        return _stand_class(module, name)


class MetadataError(Exception):
    """The .metadata could not be read as a DCP Metadata pickle."""


def shard_sizes(data):
    """{relative shard path: bytes it must hold at least} from a ``.metadata``'s bytes.

    Raises :class:`MetadataError` when the bytes are not a DCP metadata pickle
    (truncated, another format, no ``storage_data``).
    """
    try:
        metadata = _InertUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # a truncated or foreign pickle fails in many ways
        raise MetadataError(f"not a readable pickle ({type(exc).__name__}: {exc})") from None
    storage = getattr(metadata, "state", {}).get("storage_data") if isinstance(metadata, _Stand) else None
    if not isinstance(storage, dict):
        raise MetadataError("no storage_data in it")
    needed = {}
    for info in storage.values():
        fields = getattr(info, "state", None)
        if not isinstance(fields, dict) or not isinstance(fields.get("relative_path"), str):
            raise MetadataError("a storage_data entry has no relative_path")
        end = _int(fields.get("offset")) + _int(fields.get("length"))
        path = fields["relative_path"]
        needed[path] = max(needed.get(path, 0), end)
    return needed


def _int(value):
    return value if isinstance(value, int) and value >= 0 else 0
