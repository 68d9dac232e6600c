"""Root-prefixed readers for sysfs, procfs and /etc.

Every read of the machine goes through a :class:`Root`, so the same code runs on
the live system (``Root("/")``) and on a captured tree in tests
(``Root("tests/fixtures/synthetic/hgx-h100")``). Missing files and kernel errors
(an unpopulated GID entry answers EINVAL) read as ``None``: detection reports
what is there and never raises on what is not.
"""

import os

from ..bounded import RECORD_CAP, read_bytes

# A file of a captured tree: captures keep at most 1 MiB of each (snapshot.MAX_BYTES); this leaves room.
CAPTURED_BYTES = RECORD_CAP

def natural_key(name):
    """Sort key that orders ``mlx5_2`` before ``mlx5_10``."""
    key, digits, text = [], "", ""
    for ch in name:
        if ch.isdigit():
            if text:
                key.append((1, text, 0))
                text = ""
            digits += ch
        else:
            if digits:
                key.append((0, "", int(digits)))
                digits = ""
            text += ch
    if digits:
        key.append((0, "", int(digits)))
    if text:
        key.append((1, text, 0))
    return key


class Root:
    """A filesystem root: ``/`` on a real machine, a fixture directory in tests."""

    def __init__(self, path="/"):
        path = os.path.abspath(path or "/")
        self.path = path
        self.real = path == "/"
        self.local_addresses = None  # detect_net's parsed /proc/net/fib_trie, read once

    def __repr__(self):
        return f"Root({self.path!r})"

    def at(self, path):
        """The host path of ``path`` (an absolute path inside this root)."""
        return path if self.real else self.path + path

    def read(self, path):
        """File text, stripped; ``None`` when absent or unreadable. A captured tree (``--sysroot``, named by a
        user) is read at most CAPTURED_BYTES a file: a link there to /dev/zero is no file of the machine's."""
        try:
            if not self.real:
                return read_bytes(self.at(path), CAPTURED_BYTES, "a captured file").decode("utf-8", "replace").strip()
            with open(self.at(path), "rb") as f:
                return f.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return None

    def read_int(self, path, base=10):
        text = self.read(path)
        if text is None:
            return None
        try:
            return int(text.split()[0], base) if text else None
        except (ValueError, IndexError):
            return None

    def listdir(self, path):
        """Entry names, naturally sorted; ``[]`` when absent."""
        try:
            return sorted(os.listdir(self.at(path)), key=natural_key)
        except OSError:
            return []

    def exists(self, path):
        return os.path.exists(self.at(path))

    def isdir(self, path):
        return os.path.isdir(self.at(path))

    def link_name(self, path):
        """Basename of a symlink's target (``device/driver`` → ``mlx5_core``)."""
        try:
            return os.path.basename(os.readlink(self.at(path)))
        except OSError:
            return None

    def realpath(self, path):
        """The resolved path, expressed inside this root."""
        real = os.path.realpath(self.at(path))
        if self.real:
            return real
        return real[len(self.path):] if real.startswith(self.path) else real
