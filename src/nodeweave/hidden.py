"""A value of ``-e`` that is never written out: where it stands in a plan, and how it is filled in at the spawn.

``nodeweave run -e WANDB_API_KEY=...`` and ``exec -e HF_TOKEN`` put the value on every node's exec command line, into
the printed plan, ``-o json`` and each run's record (walk8 A31). Now such a value is, in every plan, a placeholder
(``nodeweave.plan.placeholders``: a name between two unit separators, which no word a user types holds): ``$NAME``
for a value given by name (``-e NAME``: this shell's), ``*NAME`` for a secret-looking name given with its value
(``-e TOKEN=...``, judged by ``spec.sections.job.env_looks_secret``). A plan prints the first as ``$NAME`` and the
second as ``***``; records keep the same. The value itself is filled in only when the exec client is spawned
(:func:`filled_secrets`), from the values the command line read (:class:`Hidden`), and reaches the node

- through the exec client's own environment where its tool takes a variable from there (``podman``/``docker exec
  -e NAME``: ``Remote.env_from_client``), never on a command line;
- else on the exec's command line (``kubectl exec``, ``ssh``, ``srun``), which the plan's note says.

Inside a command string a remote shell splits (ssh's), a placeholder sits in a single-quoted stretch
(:func:`in_single_quotes` marks it so), and is filled with the value shell-quoted, so no value reaches that shell
unquoted. Stdlib only, below every room that plans or spawns.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Sequence

MARK = "\x1f"  # nodeweave.plan.placeholders' separator (one character, the same on both sides)
BY_NAME, GIVEN = "$", "*"
QUOTED = "'"  # in front of the kind: the placeholder sits inside a single-quoted stretch of a shell's text
SECRET = re.compile(MARK + r"('?)([$*])([A-Za-z_][A-Za-z0-9_]*)" + MARK)


def secret_placeholder(name: str, by_name: bool) -> str:
    """Where ``name``'s hidden value goes in a plan: ``$NAME`` (by name) or ``*NAME`` (given, secret-looking)."""
    return f"{MARK}{BY_NAME if by_name else GIVEN}{name}{MARK}"


def is_secret(value: str) -> bool:
    return bool(SECRET.fullmatch(value or ""))


def secret_name(value: str) -> str:
    """The variable a hidden value's placeholder stands for."""
    return SECRET.fullmatch(value).group(3)


def shown_secret(found: "re.Match[str]") -> str:
    """How a plan, a record or a message shows a hidden value: ``$NAME`` given by name, ``***`` given."""
    return f"${found.group(3)}" if found.group(2) == BY_NAME else "***"


def hide(text: str) -> str:
    """``text`` with every hidden value's placeholder as it is shown."""
    return SECRET.sub(shown_secret, text) if MARK in text else text


def in_single_quotes(text: str) -> str:
    """``text``, a command a shell will split whose words were quoted whole (``shlex.quote``: a word holding the
    separator is single-quoted), with each placeholder marked as sitting in a single-quoted stretch."""
    return SECRET.sub(lambda m: f"{MARK}{QUOTED}{m.group(2)}{m.group(3)}{MARK}", text) if MARK in text else text


@dataclass(frozen=True)
class Hidden:
    """The values the command line read for hidden ``-e`` variables: name -> value. Never printed (no repr)."""

    values: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __bool__(self) -> bool:
        return bool(self.values)

    def fill(self, text: str) -> str:
        """``text`` with each hidden placeholder replaced by its value (shell-quoted inside a single-quoted
        stretch); a name with no value read is left as the placeholder (a caller's bug shows as ``$NAME``)."""
        if MARK not in text:
            return text

        def value(found: "re.Match[str]") -> str:
            name = found.group(3)
            if name not in self.values:
                return found.group(0)
            raw = self.values[name]
            return f"'{shlex.quote(raw)}'" if found.group(1) else raw

        return SECRET.sub(value, text)

    def argv(self, argv: Sequence[str]) -> List[str]:
        return [self.fill(word) for word in argv]

    def environment(self, base: Mapping[str, str]) -> Dict[str, str]:
        """The exec client's environment: ``base`` with every hidden value (``podman exec -e NAME`` reads it)."""
        return {**base, **self.values}


NONE = Hidden()
