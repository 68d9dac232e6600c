"""The options a mistyped one is near: the one judgement every hint of a near option makes (click's refusals,
run/exec's before ``--``, the options typed before the verb, another verb's spelling of the hosts). Its own module
so that every habit module reads it without importing the parsers that use them.
"""

from __future__ import annotations


def close_options(typed: str, known) -> "list[str]":
    """The options a mistyped one is near, judged without the dashes: one judgement for every parser path (click's,
    run/exec's before ``--``, the options typed before the verb). Click's 0.6 offered --engine, --node and --spec for
    ``logs --since`` (each shares the dashes and two letters), and with the dashes counted ``run --name`` was near
    --namespace, ``--tag`` near --target (walk15 A30): a near name that means something else is noise, not a hint."""
    from difflib import SequenceMatcher

    bare = typed.lstrip("-")
    # the first words of one option, whole (``--dry`` for --dry-run, argparse's abbreviation habit); a word cut
    # short is not offered so (``--name`` is no start of --namespace's words: A30)
    words = [name for name in known if bare and name.lstrip("-").startswith(bare + "-")]
    if len(words) == 1:
        return words
    scored = [(SequenceMatcher(None, bare, name.lstrip("-")).ratio(), name) for name in known]
    return [name for score, name in sorted(scored, key=lambda pair: -pair[0]) if score >= 0.7]
