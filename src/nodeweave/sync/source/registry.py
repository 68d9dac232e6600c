"""What the source knows of each node's resident agent (``resident.py``): its port, addresses and key.

Kept in ``$XDG_CACHE_HOME/nodeweave/sync/residents.json`` (default
``~/.cache``), mode 0600: a key lets whoever holds it write into that node's
DEST, as the exec user could. Entries are keyed by the target as the
command line names it (kind, name, namespace, container) and by the agent
program that started them: a resident of another nodeweave version is not
used. A node whose resident could not be reached is marked: the tunnel
skips it for ``UNREACHABLE_S`` (a firewall between the nodes would
otherwise cost every sync a dial timeout), unless its exec reports a new
resident (another key: the container restarted) before then.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from nodeweave.entrypoint import bounded
from nodeweave.remote import Remote

UNREACHABLE_S = 3600.0


def _path() -> Path:
    from nodeweave.cachedir import user_cache_base  # judged at start-up (walk13 A13, A14)

    return user_cache_base() / "nodeweave" / "sync" / "residents.json"


def key_of(target: Remote) -> str:
    return repr(target)  # the dataclass fields that name the node; options (ssh flags, context) are left out


def _load(path: Path) -> dict:
    try:
        data = json.loads(bounded.read_own(path, bounded.RECORD_CAP, "a sync registry"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def known(targets: "list[Remote]", program: str) -> "dict[Remote, dict]":
    """The residents recorded for ``targets`` that run ``program``."""
    data = _load(_path())
    found = {}
    for target in targets:
        info = data.get(key_of(target))
        if isinstance(info, dict) and info.get("program") == program and isinstance(info.get("port"), int) \
                and isinstance(info.get("key"), str) and isinstance(info.get("addrs"), list) \
                and not _recently_unreachable(info):
            found[target] = info
    return found


def _recently_unreachable(info: dict) -> bool:
    mark = info.get("unreachable_at")
    return isinstance(mark, (int, float)) and time.time() - mark < UNREACHABLE_S


def update(learnt: "dict[Remote, dict]", gone: "list[Remote]") -> None:
    """Record what this round's agents reported and mark what could not be reached (merged under a lock)."""
    if not learnt and not gone:
        return
    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = _load(path)
            for target in gone:  # the record the tunnel used
                if key_of(target) in data:
                    data[key_of(target)]["unreachable_at"] = time.time()
            for target, info in learnt.items():
                before = data.get(key_of(target)) or {}
                data[key_of(target)] = {k: info[k] for k in ("port", "addrs", "key", "program")}
                if before.get("key") == info["key"] and before.get("unreachable_at"):
                    data[key_of(target)]["unreachable_at"] = before["unreachable_at"]  # the same one, still
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
    except OSError:
        pass  # no cache folder: the next sync execs into every node, as without residents
