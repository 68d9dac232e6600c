"""A Jinja bytecode cache that never fails a render: the compiled templates kept between calls.

Why: compiling the Dockerfile template (Jinja's lexer, parser and code generator) cost ~25 ms of
every ``nodeweave render`` call, the largest part of ``render all --check`` after the imports
(issue 20's start-up target). Jinja's own FileSystemBytecodeCache keys each entry by template
name and source checksum (and Jinja's bytecode version), so an edited template or another
Jinja compiles anew; the output is the same text either way. Where the cache folder cannot be
made or written (a read-only home, a sandbox), templates are compiled as before, silently.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import jinja2

from nodeweave.cachedir import cache_root



def cache_folder() -> Path:
    return cache_root() / "jinja"


class QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """FileSystemBytecodeCache in a folder of our own; an OSError on load or store means "no cache"."""

    def __init__(self) -> None:
        super().__init__(str(cache_folder()))
        self._made = False

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):  # unreadable or truncated entry: compile instead
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        try:
            if not self._made:
                Path(self.directory).mkdir(mode=0o700, parents=True, exist_ok=True)
                self._made = True
            super().dump_bytecode(bucket)
        except OSError:
            pass
