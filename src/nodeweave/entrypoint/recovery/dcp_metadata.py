"""Read what a PyTorch Distributed Checkpoint's ``.metadata`` says about its shard files, without torch.

``FileSystemWriter.finish`` pickles a ``Metadata`` whose ``storage_data`` maps
every saved item to a ``_StorageInfo(relative_path, offset, length)``; it
writes ``.metadata.tmp`` and renames it to ``.metadata`` after every rank's
``__<rank>_<n>.distcp`` is written. Knowing each shard's name and the bytes it
must hold lets node 0 prove a checkpoint complete by ``stat`` alone.

The pickle is read by ``inert_pickle`` (no torch, nothing run), once per
(path, size, mtime_ns): a folder of 1,000 saves is unpickled once, not on
every scan.
"""

from .inert_pickle import PICKLE_LIMIT, PickleError, Stand, cached, loads

METADATA_LIMIT = PICKLE_LIMIT  # bytes: a larger .metadata is not read (the presence checks still hold)


class MetadataError(Exception):
    """The .metadata could not be read as a DCP Metadata pickle."""


def shard_sizes(data):
    """{relative shard path: bytes it must hold at least} from a ``.metadata``'s bytes.

    Raises :class:`MetadataError` when the bytes are not a DCP metadata pickle
    (truncated, another format, no ``storage_data``).
    """
    try:
        metadata = loads(data)
    except PickleError as exc:
        raise MetadataError(str(exc)) from None
    storage = metadata.state.get("storage_data") if isinstance(metadata, Stand) else None
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


def _read_shard_sizes(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(METADATA_LIMIT + 1)
    except OSError as exc:
        raise PickleError(f"cannot read: {exc.strerror or exc}") from None
    try:
        return shard_sizes(data)
    except MetadataError as exc:
        raise PickleError(str(exc)) from None


def shard_sizes_of(path):
    """:func:`shard_sizes` of the ``.metadata`` at ``path``, read once while its size and mtime stay."""
    try:
        return cached(path, _read_shard_sizes)
    except PickleError as exc:
        raise MetadataError(str(exc)) from None


def _int(value):
    return value if isinstance(value, int) and value >= 0 else 0
