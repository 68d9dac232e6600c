"""An option that takes a value never takes the verb's next flag as that value.

Why: with ``OUT`` unset, ``nodeweave render all --out $OUT --dry-run`` reached click as ``--out --dry-run``:
``--out`` took ``--dry-run`` as its folder and the dry run became a real render (walk7 A52; the same for
``bench --json-out``, ``run --runs-dir``, ``sync -x ... --delete``). Judged once for every verb, as the command
line is read (``NodeweaveCommand.parse_args``), before anything runs: the word after an option that takes a
value may not be one of the verb's own flags, nor any word that starts with ``--`` or with ``-`` and a letter
(``render --out -x``, ``--host -oProxyCommand=x``: walk9 A21), nor the bare ``--`` that ends the options (walk9
A39: ``doctor --capture --`` made a folder named ``--``). A value that really starts with ``-``
(``run --profile-options=--trace=cuda``) is written ``--OPTION=VALUE``, which is never refused.
"""

from __future__ import annotations

from typing import Sequence


def takes_value(param) -> bool:
    """Whether ``param`` is an option that reads the word after it (not a flag, not a counter)."""
    return (getattr(param, "param_type_name", "") == "option" and not getattr(param, "is_flag", False)
            and not getattr(param, "count", False))


def flag_words(command) -> "set[str]":
    """Every spelling of every option of ``command`` (both sides of a switch, ``-h``/``--help`` too)."""
    words = {"-h", "--help"}
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option":  # an argument's "opts" is its name (run's `command`)
            continue
        words.update(getattr(param, "opts", ()))
        words.update(getattr(param, "secondary_opts", ()))
    return words


# Options whose value is another program's options (`run --profile-options '--trace=cuda,nvtx'`, as docs/cluster.md
# shows it): a word starting with -- is their normal value, so only the verb's own flags are refused there.
VALUES_ARE_OPTIONS = ("--profile-options",)


def looks_like_a_flag(word: str, flags: "set[str]", values_are_options: bool = False) -> bool:
    """``--anything``, one of the verb's flags, or one of its short flags with a value joined (``-ojson``). A word
    holding a space is a quoted value: no flag has one (``--profile-options '--trace=cuda --stats=true'``)."""
    if any(c.isspace() for c in word):
        return False
    if word.split("=", 1)[0] in flags:
        return True
    if values_are_options:
        return False
    if word.startswith("--") and word != "--":
        return True
    # any -LETTER word: a short option of some program (walk9 A21: `render --out -x` planned a folder named -x);
    # not a number (`-inf`, `-nan`): the option's own reader names it and its range
    return len(word) > 1 and word[0] == "-" and word[1].isalpha() and not _a_number(word)


def _a_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def can_start_with_a_dash(param) -> bool:
    """Whether a value of ``param`` may itself start with ``-``: a path (a file named ``-x``) or another program's
    options. A name (a host, node, namespace, variable) or a number never does (a negative number is no flag)."""
    import typing
    from pathlib import PurePath

    if set(param.opts) & set(VALUES_ARE_OPTIONS) or type(getattr(param, "type", None)).__name__ == "Path":
        return True  # (click's own Path type, by name: nodeweave imports no click of its own)
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)  # typer's own option
    kinds = (annotation, *typing.get_args(annotation))
    return any(isinstance(kind, type) and issubclass(kind, PurePath) for kind in kinds)


# Options typed as text whose value names a file or folder (`init --script`, `logs --run` a run folder's path): a name
# starting with - is given as ./-x.py there, which every path option takes too (walk18a A18: `init --script -x.py`
# was offered no working form, while `--script=-x.py` was then told to write ./-x.py).
PATHS_AS_TEXT = ("--script", "--run")


def dotted_form(param, word: str, value: str) -> str:
    """The form that gives a file or folder named ``value`` (``-x.py``) to the option ``word`` on every option that
    names one: `` ./-x.py``, which no reader takes for an option; "" on any other option."""
    if set(param.opts) & set(VALUES_ARE_OPTIONS):
        return ""
    if not (set(param.opts) & set(PATHS_AS_TEXT) or can_start_with_a_dash(param)):
        return ""
    return (f", or {word} ./{value} for a file or folder of that name" if not can_start_with_a_dash(param)
            else f" (a file or folder of that name: {word} ./{value} too)")


def refuse_swallowed_flags(command, verb: str, words: Sequence[str]) -> None:
    """Exit 2 naming the first option whose value, read from the next word, is a flag or the bare ``--`` (only the
    words before the ``--`` that stands where an option could are nodeweave's; ``--OPTION=VALUE`` is the way to give a value that starts with ``--``)."""
    from nodeweave.errors import UsageError

    words = list(words)
    flags = flag_words(command)
    valued = {name: param for param in getattr(command, "params", ()) if takes_value(param)
              for name in getattr(param, "opts", ())}
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":  # the end of nodeweave's options (a "--" read as an option's value is refused below)
            break
        param = valued.get(word)
        if param is None:
            index += 1
            continue
        if index + 1 < len(words) and (words[index + 1] == "--" or looks_like_a_flag(
                words[index + 1], flags, bool(set(param.opts) & set(VALUES_ARE_OPTIONS)))):
            value = words[index + 1]
            longest = max(param.opts, key=len)
            if value == "--":
                what = "is the end of the options (a bare --)"
            elif value.split("=", 1)[0] in flags:
                what = f"is an option of `{verb}`"
            elif not value.startswith("--") and value[:2] in flags:
                what = f"reads as `{verb}`'s option {value[:2]} with its value joined"
            else:
                what = "looks like an option (it starts with -)"
            # the joined form only where such a value can be meant: a file or folder, another program's options
            # (replay10 A21: `--host=-oProxyCommand=x` was advised, which --host then refused as no host name)
            joined = (f", or {longest}={value} where the value itself starts with -"
                      if can_start_with_a_dash(param) else "") + dotted_form(param, word, value)
            raise UsageError(
                f"{word} {value!r}: {value!r} {what}, not a value for {word} (an unset variable before it?); "
                f"nothing was run; accepted: a value after {word}, quoted when it is a variable "
                f"({word} \"$VALUE\" refuses an empty one){joined}")
        index += 2
