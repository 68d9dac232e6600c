"""Read what a pickle written by torch says, without torch: every class it names becomes an inert stand-in.

DCP's ``.metadata``, ``torch.save``'s ``data.pkl`` (DeepSpeed's model states,
Lightning's ``.ckpt``) and Accelerate's pickles name torch classes. A
restricted unpickler turns each class into a stand-in that only records its
arguments and state, and each tensor storage (a pickle "persistent id") into
None, so nothing outside this module runs and torch is never imported.

A result is kept per (path, size, mtime_ns): a restart's scan, and the next,
read each file once while it stays the same.
"""

import io
import os
import pickle

from .whole_files import NotWhole, torch_save_pickle

PICKLE_LIMIT = 64 << 20  # bytes: a larger pickle is not read (the presence and size checks still hold)


class Stand:
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
        return Stand(*args, **kwargs)


_STAND_CLASSES = {}
_STAND_LIMIT = 10_000


def _stand_class(module, name):
    """One stand-in class per (module, name), made once: making a class costs more than the rest of a read."""
    key = (module, name)
    made = _STAND_CLASSES.get(key)  # a local: another judging thread may clear the table meanwhile
    if made is None:
        if len(_STAND_CLASSES) >= _STAND_LIMIT:
            _STAND_CLASSES.clear()
        made = _STAND_CLASSES[key] = type(str(name), (Stand,), {"__module__": str(module)})
    return made


class _InertUnpickler(pickle.Unpickler):
    """Maps every global to a stand-in class and every storage to None, so no real callable is reached."""

    def find_class(self, module, name):
        return _stand_class(module, name)

    def persistent_load(self, pid):
        return None


class PickleError(Exception):
    """The bytes could not be read as a pickle (cut off, another format); the text says why."""


def loads(data):
    """The object a pickle holds, classes as :class:`Stand`; :class:`PickleError` when it does not unpickle."""
    try:
        return _InertUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # a truncated or foreign pickle fails in many ways
        raise PickleError(f"not a readable pickle ({type(exc).__name__}: {exc})") from None


_CACHE = {}
_CACHE_LIMIT = 4096


def cached(path, reader):
    """``reader(path)``, kept while the file keeps its size and mtime (an exception is kept too, and raised)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise PickleError(f"cannot stat: {exc.strerror or exc}") from None
    key = (path, info.st_size, info.st_mtime_ns, reader)
    kept = _CACHE.get(key)  # a local: another judging thread may clear the cache meanwhile
    if kept is None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        try:
            kept = (True, reader(path))
        except PickleError as exc:
            kept = (False, exc)
        _CACHE[key] = kept
    ok, value = kept
    if not ok:
        raise value
    return value


def torch_save_top(path):
    """The top-level object a ``torch.save`` zip holds (tensors as None), read from its ``data.pkl``, which the
    file's whole-file check found in its central directory (``whole_files.torch_save_pickle``)."""
    try:
        return loads(torch_save_pickle(path, PICKLE_LIMIT))
    except NotWhole as exc:
        raise PickleError(f"not a readable torch.save zip ({exc})") from None


def torch_save_fields(path, *names):
    """{name: value} of the top-level dict's plain fields (ints, strings) a ``torch.save`` file holds."""
    top = cached(path, torch_save_top)
    if not isinstance(top, dict):
        return {}
    return {name: top[name] for name in names if isinstance(top.get(name), (int, str)) and not isinstance(
        top.get(name), bool)}
