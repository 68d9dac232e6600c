"""Plain conversion of nodeweave's option values, so a command does not import pydantic to read them.

Why: typer 0.2x converts every parameter through a pydantic ``TypeAdapter``; importing pydantic
and building the adapters cost ~0.1 s of every ``nodeweave`` call (issue 20's 0.2 s start-up
target). Our parameters are all plain: str, int, float (optionally with min/max), Path, bool and
lists of those. For exactly those, a few lines convert here (errors worded as click words them:
"'abc' is not a valid integer", raised as click's BadParameter); anything else keeps typer's. tests/test_cli_startup.py checks the
errors and that the common verbs never import pydantic.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam

from nodeweave.quantities import plain_number  # noqa: F401  (the one way a number is said: quantities.py)

_PATH_CHECKS = ("exists", "writable", "resolve_path", "allow_dash")


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """typer's runtime-conversion slot, filled with a click type instead of a pydantic adapter."""

    click_type: Any = None  # anything with convert(value, param, ctx)

    def _coerce_value(self, value: Any, param, ctx) -> Any:
        if isinstance(value, (list, tuple)):
            if getattr(param, "param_type_name", "") == "argument":
                refuse_blank_words(value, param, ctx)
            return [self.click_type.convert(item, param, ctx) for item in value]
        return self.click_type.convert(value, param, ctx)


# Positionals whose words after the first are a program's own arguments, passed on as given (`-- train.py --tag ""`).
COMMAND_ARGUMENTS = ("command",)


def refuse_blank_words(words, param, ctx) -> None:
    """An empty word of a repeated positional is refused; in a COMMAND only its program (the first word) is checked."""
    checked = words[:1] if getattr(param, "name", "") in COMMAND_ARGUMENTS else words
    for word in checked:
        if not str(word).strip():
            raise BadParameter(blank_message(word, param), ctx=ctx, param=param)


def _click_type(annotation, info):
    if annotation is str:
        return _Plain(str, "text")
    if annotation is Path:
        return None if any(getattr(info, name, False) for name in _PATH_CHECKS) else _Plain(Path, "path")
    if annotation is int:
        return _Number(int, "integer", info.min, info.max)
    if annotation is float and getattr(info, SECONDS_MARK, False):
        return _Seconds(float, "duration", info.min, info.max)
    if annotation is float and getattr(info, PERCENT_MARK, False):
        return _Percent(float, "percentage", info.min, info.max)
    if annotation is float:
        return _Number(float, "number", info.min, info.max)
    if annotation is bool:
        return _Bool()
    return None


@dataclass(frozen=True)
class _Plain:
    kind: Any
    label: str

    def convert(self, value, param, ctx):
        kind = getattr(param, "param_type_name", "")
        if (kind == "option" or (kind == "argument" and getattr(param, "nargs", 1) == 1)) and not str(value).strip():
            raise BadParameter(blank_message(value, param), ctx=ctx, param=param)
        if self.kind is Path and str(value) == "-" and not set(getattr(param, "opts", ())) & set(STANDARD_STREAM):
            raise BadParameter(dash_message(param), ctx=ctx, param=param)
        if self.kind is Path and str(value).startswith("~"):
            value = expand_home(str(value), param, ctx)
        return value if isinstance(value, self.kind) else self.kind(value)


# The path options and arguments whose ``-`` is a stream: ``--spec -`` (and $NODEWEAVE_SPEC=-) reads the spec from
# standard input. Every other path's ``-`` is refused (walk10 A4: ``render --out -`` made and filled a folder named
# ``-``; ``hosts probe --write-hostfile -`` a file named ``-``), as the command line is read.
STANDARD_STREAM = ("--spec",)


def dash_message(param) -> str:
    """Why ``-`` is refused for a path that is no stream: what takes it, and how the name ``-`` itself is typed."""
    named = _flag(param)
    return (f"'-' is standard input or output only for --spec (`--spec -` reads the spec from stdin); {named} names "
            f"a path on this machine, which nodeweave reads or writes itself: give a file or folder (one named - "
            "is ./-)")


def expand_home(text: str, param, ctx) -> str:
    """A local path's leading ``~`` or ``~user`` that the shell left as it was (quoted, or after ``--opt=``) is
    expanded as the shell would: ``--spec=~/s.yaml`` is the home's s.yaml, never a folder named ``~`` here.
    (A remote path, ``--remote-dir`` or sync's DEST, keeps its ``~`` for each host's own home.)"""
    import os

    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        user = text[1:].split("/", 1)[0]
        raise BadParameter(f"{text!r}: no user {user!r} on this machine whose home ~{user} could be; give the "
                           "path without ~, or with ~/ for your own home", ctx=ctx, param=param)
    return expanded


def blank_message(value, param) -> str:
    """Why an empty value is refused: ``--node "$UNSET"`` must not mean every node, nor ``--out ''`` or
    ``sync "$UNSET" DEST`` here."""
    if getattr(param, "param_type_name", "") == "argument":
        return (f"{str(value)!r} is empty; an empty value never means 'all' or 'here' (an unset variable?): give "
                f"{_flag(param)}{_left_off(param)}")
    return f"{str(value)!r} is empty; an empty value never means 'all' or 'here': {_option_wanted(param)}"


def _option_wanted(param) -> str:
    """What an option takes, offering "leave it off for its default" only where it has one (walk15 A8: ``hosts probe
    --node ""`` offered it, and leaving --node off is "no hosts"): a value, or its help names one; else the first
    clause of its help, what it takes."""
    flag, said = _flag(param), str(getattr(param, "help", None) or "").strip()
    if param.default not in (None, (), []) or "default" in said.lower():
        return f"give a value, or leave {flag} off for its default"
    clause = said.replace("\\[", "[").split(", e.g.")[0]
    while re.search(r" \([^()]*\)", clause):  # its asides, "(repeat; or --hosts-file)", are not what it takes
        clause = re.sub(r" \([^()]*\)", "", clause)
    clause = clause.split("; ")[0].rstrip(".,")
    first = clause.split()[0] if clause else ""
    if not (len(first) > 1 and first.isupper()):  # "A host to probe" as words of the line; "REGEX whose" as it is
        clause = clause[:1].lower() + clause[1:]
    return f"give {flag} a value ({clause})" if clause else f"give {flag} a value"


def _left_off(param) -> str:
    """What leaving an argument off does, as its own declaration says (walk10 A1: ``runs compare ""`` offered "leave
    it off for its default" where leaving it off is "missing argument"): a default only where it has one (a value,
    or its help names one: "default: the spec's launcher.script"); a deprecated (hidden) one is what its help says;
    else what it takes, and that it has no default."""
    said = str(getattr(param, "help", None) or "").strip()
    if not getattr(param, "required", False) and (param.default is not None or "default" in said.lower()):
        return ", or leave it off for its default"
    if said[1:2].islower():  # "Run or sweep ids" as words of the line; "COMMAND ARGS" as it is
        said = said[:1].lower() + said[1:]
    if getattr(param, "hidden", False):
        return f", or leave it off ({said})" if said else ", or leave it off"
    return f" ({said}); it has no default" if said else "; it has no default"


def _flag(param) -> str:
    if getattr(param, "param_type_name", "") == "argument":
        return str(getattr(param, "human_readable_name", None) or param.name).upper()
    names = [name for name in getattr(param, "opts", ()) if name.startswith("--")]
    return names[0] if names else getattr(param, "name", "the option")


FLOAT_CEILING = 1e9  # about 31 years in seconds


@dataclass(frozen=True)
class _Number:
    kind: Any
    label: str
    low: Any = None
    high: Any = None

    def convert(self, value, param, ctx):
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        elif not str(value).isascii():  # int('٣٠') is 30: the CLI's numbers are ASCII, as the spec's (walk13 A22)
            raise BadParameter(f"{value!r} is not a valid {self.label}", ctx=ctx, param=param)
        elif (not _plain_int(str(value)) if self.kind is int else  # int() reads 2_0, +2, ' 2', 02 (walk17a A20)
              "_" in str(value) or str(value) != str(value).strip()):  # float() reads 1_0 and ' 2' too
            raise BadParameter(f"{value!r} is not a valid {self.label}", ctx=ctx, param=param)
        else:
            try:
                number = self.kind(str(value).strip())
            except ValueError:
                raise BadParameter(f"{value!r} is not a valid {self.label}", ctx=ctx, param=param) from None
        if self.kind is float and not math.isfinite(number):  # `nan` compares false with every bound, `1e999` is inf
            raise BadParameter(f"{value!r} is not a valid finite number{self._within()}", ctx=ctx, param=param)
        if number == 0:
            number = self.kind(0)  # `-0` is 0, and is shown so
        high = self._high()
        if (self.low is not None and number < self.low) or (high is not None and number > high):
            raise BadParameter(f"{plain_number(number)} is not{self._within()}" if self.kind is float else
                               f"{number} is not{self._within()}", ctx=ctx, param=param)
        return number

    def _high(self):
        """The option's own ceiling; a float option without one stops at FLOAT_CEILING (seconds, a percentage:
        nothing nodeweave reads means more), so ``1e300`` is refused, not printed as 301 digits (walk5 W57)."""
        return self.high if self.high is not None or self.kind is not float else FLOAT_CEILING

    def _within(self) -> str:
        high = self._high()
        bounds = [part for part in (f"x>={self.low}" if self.low is not None else "",
                                    f"x<={plain_number(high)}" if high is not None else "") if part]
        return f" in the range {' and '.join(bounds)}" if bounds else ""


def _plain_int(text: str) -> bool:
    """The one rule for a whole number typed to nodeweave, the spec's and --nproc-per-node's: plain decimal digits."""
    from nodeweave.entrypoint.planning.contract import plain_int

    return plain_int(text)


SECONDS_MARK = "nodeweave_seconds"


def seconds_option(info):
    """``typer.Option(...)`` of seconds, read by the one duration reader (``quantities.seconds``): ``300``, ``2.5``,
    ``30s``, ``5m``, ``1h30m``, as kubectl's ``--timeout=5s`` and ``logs --since`` take them (walk9 A12); its help
    says so. Every option of seconds is one of these (tests/test_walk9_fix9a1.py walks them)."""
    setattr(info, SECONDS_MARK, True)
    info.help = f"{info.help or ''} (or 30s, 5m, 1h)".strip()
    return info


@dataclass(frozen=True)
class _Seconds(_Number):
    """A float option of seconds: a number, or a number and a unit."""

    def convert(self, value, param, ctx):
        from nodeweave.quantities import seconds

        try:
            float(str(value).strip())  # a number as ever (1e300, nan, -0: the number's own refusals, walk4/5)
            return super().convert(value, param, ctx)
        except ValueError:
            pass
        number = seconds(str(value))
        if number is None:
            raise BadParameter(f"{value!r} is not a valid duration", ctx=ctx, param=param)
        return super().convert(number, param, ctx)


PERCENT_MARK = "nodeweave_percent"


def percent_option(info):
    """``typer.Option(...)`` of a percentage: ``25`` or ``25%``, as the docs write it (walk12 A18); its help says
    so. Every option of a percentage is one of these (tests/test_walk12_fix12a2.py walks them)."""
    setattr(info, PERCENT_MARK, True)
    info.help = f"{info.help or ''} (25 or 25%)".strip()
    return info


@dataclass(frozen=True)
class _Percent(_Number):
    """A float option of a percentage: a number, with or without a trailing ``%``."""

    def convert(self, value, param, ctx):
        text = value if isinstance(value, (int, float)) else str(value).strip()
        if isinstance(text, str) and text.endswith("%") and text[:-1].strip():
            text = text[:-1].strip()
        try:
            return super().convert(text, param, ctx)
        except BadParameter:
            if isinstance(text, str) and "%" in text:
                raise BadParameter(f"{value!r} is not a valid percentage (a number, as 25 or 25%)", ctx=ctx,
                                   param=param) from None
            raise


class _Bool:
    TRUE, FALSE = ("1", "true", "yes", "on", "y", "t"), ("0", "false", "no", "off", "n", "f")

    def convert(self, value, param, ctx):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in self.TRUE or text in self.FALSE:
            return text in self.TRUE
        raise BadParameter(f"{value!r} is not a valid boolean", ctx=ctx, param=param)


def plain_runtime_param(param):
    """A pydantic-free converter for ``param``, or None when typer's own is needed."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or descriptor.file_annotation is not None or descriptor.is_choice:
        return None
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    click_type = _click_type(annotation, info)
    if click_type is None:
        return None
    return PlainRuntimeParam(parameter_info=info, annotation=descriptor.annotation, click_type=click_type)


def use_plain_conversion(params) -> None:
    for param in params:
        if getattr(param, "_runtime_param", "absent") is None:
            plain = plain_runtime_param(param)
            if plain is not None:
                param._runtime_param = plain


def refuse_split_durations(command, args) -> None:
    """A duration typed with a space in it (``--timeout 5 m``): its unit is a stray word, which a verb would take
    as its command's program (``exec``: ``m``) or an extra argument; said as what it is, the option written whole
    (walk16a A27: the hint offered ``-- m true``, a program ``m`` on every node). Only before ``--``."""
    from nodeweave.errors import UsageError
    from nodeweave.quantities import seconds

    durations = {name for param in getattr(command, "params", ()) if getattr(param, "param_type_name", "") == "option"
                 and (getattr(getattr(getattr(param, "type_descriptor", None), "parameter_info", None), SECONDS_MARK,
                              False) or "DURATION" in (param.help or ""))  # seconds_option's, or logs --since
                 for name in param.opts}
    words = args[:args.index("--")] if "--" in args else list(args)
    for index, word in enumerate(words):
        name, equals, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name not in durations:
            continue
        value, stray = (value, index + 1) if equals else (words[index + 1] if index + 1 < len(words) else "", index + 2)
        unit = words[stray] if stray < len(words) else ""
        if re.fullmatch(r"[0-9.]+", value) and re.fullmatch(r"[hms]", unit.strip()) and seconds(value + unit.strip()):
            raise UsageError(f"{unit!r} after {name} {value}: a duration is one word, its number and unit together; "
                             f"write {name} {value}{unit.strip()}")
