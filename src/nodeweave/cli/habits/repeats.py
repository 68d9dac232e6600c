"""A value given twice to a repeatable option or argument: refused, never collapsed or resolved silently.

Why: click gathers a repeated option into a list and each verb read it its own way: ``run -e A=1 -e A=2`` let
the last win, ``--ssh-option Port=22 --ssh-option Port=23`` let ssh take the first, ``sync -x a -x a`` and
``init --host a --host a`` (which probed ``a`` twice over ssh before refusing) repeated work. One rule for
every such option, judged as the command line is read (``NodeweaveCommand.parse_args``), before anything is
reached; tests/test_walk_classes.py walks every repeatable option of every verb against it.
"""

from __future__ import annotations

from typing import Dict, List

# Options whose values are KEY=VALUE: the same KEY twice is two answers to one question (which one wins
# depends on the tool: env and podman take the last, ssh -o the first). The value: whether KEY ignores case.
KEYED: Dict[str, bool] = {"--env": False, "--build-arg": False, "--ssh-option": True}
# Judged where their meaning is known: --node picks nodes by index, name or address (habits/nodes.py: two
# spellings of one node), --host by host name (case-insensitive, nodeweave.cluster.options.refuse_repeated_hosts),
# --sweep by variable (nodeweave.bench.options), `runs compare`'s runs once resolved (last, a prefix), the
# command after `--` is the command's own.
OWN_JUDGE = ("--node", "--host", "--sweep", "--to", "runs", "command")


def repeatable(command) -> "list":
    """The params of ``command`` that take a value more than once (repeated options, nargs=-1 arguments)."""
    return [p for p in getattr(command, "params", ()) if getattr(p, "multiple", False) or getattr(p, "nargs", 1) == -1]


def shown_name(param) -> str:
    opts = list(getattr(param, "opts", ()))
    if getattr(param, "param_type_name", "") == "option":
        return max(opts, key=len)
    return (param.name or "").upper()


def refuse_repeats(command, values: "Dict[str, object]") -> None:
    """Exit 2 naming the first option whose values repeat (a KEY=VALUE option: whose keys repeat)."""
    from nodeweave.errors import UsageError

    for param in repeatable(command):
        name = shown_name(param)
        if name in OWN_JUDGE or param.name in OWN_JUDGE:
            continue
        given = [str(v) for v in values.get(param.name) or ()]
        if name in KEYED:
            keys: List[str] = [_key(v, KEYED[name]) for v in given]
            twice = next((k for k in keys if k and keys.count(k) > 1), None)  # no key: its own check names it
            if twice is not None:
                same = [v for v, k in zip(given, keys) if k == twice]
                why = "" if len(set(same)) == 1 else ": one of them would win silently"
                raise UsageError(f"{name} {twice} is given {len(same)} times ({', '.join(same)}){why}; give {twice} once")
            continue
        twice = next((v for v in given if given.count(v) > 1), None)
        if twice is not None:
            raise UsageError(f"{name} {twice} is given {given.count(twice)} times; give each value once")


def _key(value: str, ignore_case: bool) -> str:
    """KEY of ``KEY=VALUE`` (ssh also reads ``KEY VALUE``)."""
    key = value.split("=", 1)[0]
    words = key.split(None, 1)
    key = words[0] if words else key  # "=1" has an empty key: the option's own check names it
    return key.lower() if ignore_case else key


def refuse_said_twice(command, words) -> None:
    """``--spec a.yaml --spec b.yaml``, ``-o json -o yaml``, ``-t local -t hosts``: an option that takes one value,
    given twice (in any of its spellings), kept only the last, silently; refused (exit 2) naming both values. Only
    the words before ``--`` are nodeweave's."""
    from nodeweave.errors import UsageError

    words = list(words)
    words = words[:words.index("--")] if "--" in words else words
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option" or getattr(param, "multiple", False) or \
                getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        names = [name for name in param.opts if name not in ("-h", "--help")]
        given, index = [], 0
        while index < len(words):
            word = words[index]
            long_eq = next((n for n in names if n.startswith("--") and word.startswith(n + "=")), None)
            if long_eq:
                given.append(word[len(long_eq) + 1:])
            elif word in names and index + 1 < len(words):
                given.append(words[index + 1])
                index += 1
            index += 1
        if len(given) > 1:
            flag = max(names, key=len)
            raise UsageError(f"{flag} is given {len(given)} times ({', '.join(given)}) and takes one value (only the "
                             f"last would count); give it once")
