"""A comma list in one option's value (``--node 0,2-3``, ``bench --ops a,b``, ``bench --sizes 1K,1M``): one rule.

Why: each list was read its own way. ``--node 0,0`` and ``run --sweep LR=a,a`` were refused, while ``--ops
all_reduce,all_reduce`` ran the collective once and ``--sizes 1K,,1024`` dropped the empty item and the second
spelling of 1K, all without a word (walk5, W20). An empty item is refused (never dropped: a list that shrinks to
nothing could mean "all"), and so is an item given twice, under any spelling ``key`` maps to the same thing.
Stdlib only (the bench worker reads its lists with it too). tests/test_walk5_run.py walks every option whose
help names a list.
"""

from __future__ import annotations

from typing import Callable, Hashable, List, Optional, Sequence


def comma_items(texts: "str | Sequence[str]", flag: str, accepted: str, each: str = "value",
                key: Optional[Callable[[str], Hashable]] = None) -> List[str]:
    """Every item of ``texts`` (one value, or the values of a repeated option), split at commas and stripped;
    exit 2 for an empty item or one given twice (judged by ``key``: two spellings of one thing)."""
    from nodeweave.errors import UsageError

    found: List[str] = []
    for text in [texts] if isinstance(texts, str) else list(texts or ()):
        items = [item.strip() for item in str(text).split(",")]
        if not all(items):
            raise UsageError(f"{flag} {str(text)!r} holds an empty item; accepted: {accepted}")
        found.extend(items)
    keys = [key(item) if key else item for item in found]
    for index, k in enumerate(keys):
        same = [item for item, other in zip(found, keys) if other == k]
        if len(same) > 1:
            spelt = found[index] if len(set(same)) == 1 else f"{' and '.join(dict.fromkeys(same))} (the same {each})"
            raise UsageError(f"{flag} {spelt} is given {len(same)} times; give each {each} once")
    return found
