"""A plan's placeholders: where a value known only when the plan runs goes (a run's id, a Slurm job and nodes).

A placeholder is its name between two unit separators (``\\x1f``): no word a user types holds one, so
a user's ``-- train.py --tag RUN_ID`` reaches the node as typed (a bare word ``RUN_ID`` was replaced
wherever it stood). It is never printed raw: a dry run shows it as ``<run-id>``, ``<job-id>``,
``<node0>`` (:func:`shown`, :func:`command_text`), and only :func:`filled` replaces it.
"""

from __future__ import annotations

import re
import shlex
from typing import Mapping, Sequence

from nodeweave.hidden import hide
from nodeweave.steps import Step

MARK = "\x1f"  # the unit separator around a placeholder's name: no word a user types holds it
PLACEHOLDER = re.compile(MARK + r"([a-z0-9-]+)" + MARK)


def placeholder(name: str) -> str:
    """What a plan holds where a value known only when it runs goes; printed as ``<name>``."""
    return f"{MARK}{name}{MARK}"


RUN_ID = placeholder("run-id")  # a run's id: the folder's, made when the run starts
JOB_ID = placeholder("job-id")  # a Slurm allocation's job id, in the phases after the one that takes it
SCRATCH = placeholder("scratch")  # a new private folder of this machine's, made for one command and removed after it
# Placeholders a shell can fill itself: a command line shows them as the shell words that do (so the line can be
# pasted as printed), where the others read as <name>. For a local command's own words only: inside a remote
# command (one word ssh hands the host's shell) the local shell would fill it, unquoted for the host - which is
# why sync's agent program, a word of its exec on each target, stays the stand-in SYNC_AGENT.
SHELL_WORDS = {"scratch": '"$(mktemp -d)"'}


def node_placeholder(index: int) -> str:
    """The allocation's ``index``-th node (Slurm's to pick), in the phases after the one that takes it."""
    return placeholder(f"node{index}")


def shown(text: str) -> str:
    """``text`` as a person reads it: each placeholder as ``<name>``, a hidden ``-e`` value as ``$NAME`` or ``***``
    (``nodeweave.hidden``)."""
    return hide(PLACEHOLDER.sub(r"<\1>", text))


def filled(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder of ``values`` replaced by its value; a word a user typed is left as typed."""
    return PLACEHOLDER.sub(lambda found: values.get(found.group(0), found.group(0)), text) if MARK in text else text


def command_text(argv: Sequence[str]) -> str:
    """An argv as a shell line one could paste, a placeholder as the shell words that fill it (``SHELL_WORDS``),
    else as ``<name>`` (unquoted, so it reads as one)."""
    words = []
    for word in argv:
        parts = ANY_PLACEHOLDER.split(word)  # literal, name, literal, name, ...
        if len(parts) == 1:
            words.append(shlex.quote(word))
            continue
        words.append("".join(_shell_word(part) if odd else (shlex.quote(part) if part else "")
                             for odd, part in ((i % 2 == 1, p) for i, p in enumerate(parts))))
    return " ".join(words)


ANY_PLACEHOLDER = re.compile(MARK + r"([^" + MARK + r"]+)" + MARK)


def _shell_word(name: str) -> str:
    """A placeholder's name as a pasted line shows it: a hidden -e value as ``"$NAME"`` (given by name: the shell
    fills it) or ``***`` (nodeweave.hidden), a SHELL_WORDS one as its words, any other as ``<name>``."""
    hidden = name.lstrip("'")
    if hidden[:1] in "$*" and len(hidden) > 1:
        return f'"{hidden}"' if hidden[0] == "$" else "***"
    return SHELL_WORDS.get(name, f"<{name}>")


def shown_data(data):
    """A plan's ``to_dict()`` as printed: every placeholder in its strings as ``<name>``."""
    if isinstance(data, str):
        return shown(data)
    if isinstance(data, dict):
        return {shown_data(k): shown_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [shown_data(v) for v in data]
    return data
KINDS = ("files", "remove", "commands", "wait", "sweep", "run", "check", "stop", "exec", "shell", "allocate", "sync", "build",
         "stage")


def step_dict(step: Step) -> dict:
    """A step as data: its argv, the variables it adds, what its stdin is (never the text: it may be a secret)."""
    return {"what": step.what, "argv": list(step.argv), "env": dict(step.env),
            "stdin": step.stdin_name or None if step.stdin is not None else None,
            **({"stdin_from": list(step.stdin_from)} if step.stdin_from else {}), "timeout": step.timeout}


def step_text(step: Step) -> str:
    """A step as a shell line (``Step.text``), each placeholder as ``<name>``."""
    prefix = " ".join(f"{k}={command_text([v])}" for k, v in step.env)
    line = (prefix + " " if prefix else "") + command_text(step.argv)
    if step.stdin_from:
        return f"{command_text(step.stdin_from)} | {line}"
    return line + (f" < {step.stdin_name}" if step.stdin is not None else "")
