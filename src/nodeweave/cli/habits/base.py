"""The command classes every ``nodeweave`` verb and group is made with, so the habits hold everywhere.

Why: typer's defaults show ``<bool>`` after every flag (inviting ``--dry-run true``, which fails)
and suggest hidden, deprecated names for a typo (``validate`` → ``variants``). Making the habit a
class, not a per-option setting, keeps a new verb from forgetting it; tests/test_cli_conventions.py
walks every command and checks them.
"""

from __future__ import annotations

import os
import sys
from difflib import get_close_matches
from pathlib import Path

import typer
from typer.core import TyperCommand, TyperGroup

from nodeweave.cli.habits.coercion import refuse_split_durations, use_plain_conversion
from nodeweave.cli.habits.conflicts import refuse_conflicts, refuse_two_formats
from nodeweave.cli.habits.nearby import close_options  # noqa: F401 (the cli and dashes import it here)
from nodeweave.cli.habits.output import refuse_folder_spellings
from nodeweave.cli.habits.spec_path import SPEC_ENV, SPEC_NAME, find_spec  # noqa: F401 (verbs import them here)
from nodeweave.cli.habits.repeats import refuse_repeats, refuse_said_twice
from nodeweave.cli.habits.swallowed import refuse_swallowed_flags


def plain_placeholders(params, ctx):
    """A flag takes no value, so its help shows none (typer shows ``<bool>``); a repeated option shows
    one value per use, ``<str>...``, not ``<list[str]>`` (which invites ``--host a,b``)."""
    use_plain_conversion(params)
    for param in params:
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            param.metavar = ""
        elif getattr(param, "multiple", False) and param.metavar is None and hasattr(param, "display_type"):
            shown = param.display_type(ctx)
            if shown.startswith("<list[") and shown.endswith("]>"):
                param.metavar = f"<{shown[6:-2]}>..."
    return params


def plain_help_wanted() -> bool:
    """Help for a pipe or a file is plain text: no panels to grep through, and no rich import (0.1 s)."""
    from nodeweave.entrypoint.switch import parse_switch, switch_problem
    from nodeweave.errors import UsageError

    text = os.environ.get(RICH_HELP_ENV, "")
    wanted = parse_switch(text) if text.strip() else False
    if wanted is None:
        raise UsageError(switch_problem(RICH_HELP_ENV, text, "this environment"))
    return not sys.stdout.isatty() and not wanted


RICH_HELP_ENV = "NODEWEAVE_RICH_HELP"  # on: rich panels even when help goes to a pipe


def format_help(command, base_format, ctx, formatter) -> None:
    """typer's rich help on a terminal; click's plain help elsewhere, with rich's escapes (\\[) undone."""
    if not plain_help_wanted():
        light_rich_help()
        return base_format(ctx, formatter)
    mode, command.rich_markup_mode = command.rich_markup_mode, None
    try:
        base_format(ctx, formatter)
    finally:
        command.rich_markup_mode = mode
    formatter.buffer[:] = [part.replace("\\[", "[") for part in formatter.buffer]


def light_rich_help() -> None:
    """Import typer's rich help without importing rich's Markdown and Traceback (~40 ms: markdown-it, pygments).

    typer.rich_utils imports both at its top, yet uses Markdown only for help written in Markdown
    (nodeweave's is rich markup) and Traceback only for its pretty exceptions (off here). While it
    loads, each name is a stand-in that imports the real class on first use; the stand-in modules
    leave sys.modules at once, so any later ``import rich.markdown`` gets the real module.
    """
    if "typer.rich_utils" in sys.modules:
        return
    import types

    stand_ins = {}
    for module_name, attr in (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback")):
        if module_name not in sys.modules:
            stand_ins[module_name] = types.ModuleType(module_name)
            setattr(stand_ins[module_name], attr, _deferred(module_name, attr))
    sys.modules.update(stand_ins)
    try:
        import typer.rich_utils  # noqa: F401
    finally:
        for module_name, module in stand_ins.items():
            if sys.modules.get(module_name) is module:
                del sys.modules[module_name]


def _deferred(module_name: str, attr: str):
    """A class standing in for ``module_name.attr``: constructing it, or any class attribute, loads the real one."""
    import importlib

    def real():
        return getattr(importlib.import_module(module_name), attr)

    class Deferred(type):
        def __getattr__(cls, name):
            return getattr(real(), name)

    return Deferred(attr, (), {"__new__": lambda cls, *args, **kwargs: real()(*args, **kwargs)})


class NodeweaveCommand(TyperCommand):
    """A verb whose flags show no value placeholder, and whose help suits where it goes."""

    def get_params(self, ctx):
        return plain_placeholders(super().get_params(ctx), ctx)

    def format_help(self, ctx, formatter):
        return format_help(self, super().format_help, ctx, formatter)

    def parse_args(self, ctx, args):
        args = short_options_with_equals(self, args)
        given = list(args)  # click's parser consumes the list
        refuse_swallowed_flags(self, ctx.command_path, given)  # first: every later check pairs options and values
        refuse_split_durations(self, given)
        refuse_both_sides(self, given)
        refuse_said_twice(self, given)
        refuse_folder_spellings(self, given)
        try:
            rest = super().parse_args(ctx, args)
        except Exception as err:  # click's UsageError (typer's vendored copy), found by shape
            if hasattr(err, "ctx") and err.ctx is None:  # the option parser's errors carry no context: the
                err.ctx = ctx  # hint would name `nodeweave --help`, not this verb's help
            hint = spec_hint(self, ctx, given, err) or other_tools_option(self, given, err)
            if hint:
                err.message = f"{getattr(err, 'message', err)}{hint}"
            raise
        refuse_conflicts(self, given)  # after each value is read: an empty or bad value is named first
        refuse_two_formats(self, ctx)
        refuse_run_record_spec(self, ctx.params)
        refuse_repeats(self, ctx.params)
        return rest

    def collect_usage_pieces(self, ctx):
        """The usage line without hidden (deprecated) arguments, such as ``shell INDEX``'s."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


def short_options_with_equals(command, args) -> list:
    """``args`` with kubectl's ``-o=json`` spelling of a short option that takes a value read as ``-o json``, as
    ``-ojson`` and ``--output=json`` are (replay11 R1: click read the value as ``=json``, refused as ``--output
    '=json' is not accepted``; ``-n=ml`` the namespace ``=ml``). Only before ``--``: the command's words are its own."""
    import re

    takes_value = {name for param in getattr(command, "params", ()) if getattr(param, "param_type_name", "") ==
                   "option" and not getattr(param, "is_flag", False) and not getattr(param, "count", False)
                   for name in param.opts if len(name) == 2}
    out, args = [], list(args)
    for index, word in enumerate(args):
        if word == "--":
            return out + args[index:]
        found = re.fullmatch(r"(-[A-Za-z])=(.*)", word, re.DOTALL)
        out += [found.group(1), found.group(2)] if found and found.group(1) in takes_value else [word]
    return out


# Hidden, deprecated spellings and what a typo near them should be pointed to.
REPLACED = {"variants": "image variants"}

class NodeweaveGroup(TyperGroup):
    """A group whose typo suggestions name only visible commands, and whose own flags show no placeholder."""

    def get_params(self, ctx):
        return plain_placeholders(super().get_params(ctx), ctx)

    def format_help(self, ctx, formatter):
        return format_help(self, super().format_help, ctx, formatter)

    def parse_args(self, ctx, args):
        """A group's own options (the root's --version) get the habit hints a verb's get (walk15 A35: ``nodeweave
        -V``, python's and pip's version flag, said only "no such option")."""
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except Exception as err:  # click's UsageError (typer's vendored copy), found by shape
            hint = other_tools_option(self, given, err)
            if hint:
                err.message = f"{getattr(err, 'message', err)}{hint}"
            raise

    def parent_of_subverbs(self, ctx) -> bool:
        """Whether this group is a verb's own (``runs``, ``image``), not nodeweave itself."""
        return ctx.parent is not None

    def hidden_command(self, ctx, name: str) -> bool:
        return self.commands[name].hidden

    def resolve_command(self, ctx, args):
        try:
            return self._click_resolve_command(ctx, args)
        except Exception as err:  # click's UsageError (typer's vendored copy), found by shape
            message = getattr(err, "message", None)
            if message is None or not args:
                raise
            from nodeweave.cli.habits.othertools import verb_hint

            habit = verb_hint(ctx.info_name or "nodeweave", args[0])
            if habit and args[0] not in self.list_commands(ctx):
                err.message = f"{message.rstrip('.')}{habit}"
                raise
            close = get_close_matches(args[0], self.list_commands(ctx))
            matches = list(dict.fromkeys(REPLACED.get(name, name) for name in close
                                         if not self.hidden_command(ctx, name) or name in REPLACED))
            if matches:
                err.message = f"{message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise


# `-h` as well as `--help` (the entrypoint, and most tools, take both); subcommands inherit it from the root.
HELP_FLAGS = ["-h", "--help"]


class NodeweaveTyper(typer.Typer):
    """typer.Typer whose commands and groups are the classes above unless told otherwise."""

    def __init__(self, **kwargs):
        kwargs.setdefault("cls", NodeweaveGroup)
        kwargs.setdefault("context_settings", {"help_option_names": HELP_FLAGS})
        kwargs.setdefault("pretty_exceptions_enable", False)
        super().__init__(**kwargs)

    def command(self, name=None, *, cls=None, **kwargs):
        return super().command(name, cls=cls or NodeweaveCommand, **kwargs)


def refuse_both_sides(command, args) -> None:
    """``--hold --run``: both sides of one on/off flag given; click lets the last win, silently."""
    from nodeweave.errors import UsageError

    words = set(args[:args.index("--")] if "--" in args else args)
    for param in command.params:
        yes, no = set(getattr(param, "opts", ())) & words, set(getattr(param, "secondary_opts", ())) & words
        if yes and no:
            raise UsageError(f"{min(yes)} and {min(no)} contradict each other; give one of them")


COMMAND_ENDINGS = (".py", ".sh")  # an extra word a verb takes as the command of yours it does not run


def refuse_run_record_spec(command, params) -> None:
    """A run folder's ``spec.yaml`` (any file of a run folder) as ``--spec`` or $NODEWEAVE_SPEC, named as the run's
    record as the command line is read, on every verb that takes --spec: those that load it, those that only take
    its folder (``runs ls``, ``doctor --dry-run``) alike (walk9 A9; ``runfiles.refuse_run_record``, which loads no
    spec)."""
    name = next((param.name for param in command.params if "--spec" in getattr(param, "opts", ())), None)
    if name and params.get(name) is not None:
        from pathlib import Path

        from nodeweave.runfiles import refuse_run_record

        refuse_run_record(Path(params[name]))


def other_tools_option(command, args, err) -> str:
    """" (did you mean --spec FILE? ...)" for ``-f FILE`` and the other options of other tools' habits (walk9 A10);
    also for one of nodeweave's options typed with no value as another tool's flag (walk13 A4: `logs -t`, docker's
    timestamps, was "requires an argument")."""
    if type(err).__name__ != "NoSuchOption" and not (
            type(err).__name__ == "BadOptionUsage" and "requires an argument" in str(getattr(err, "message", ""))):
        return ""
    from nodeweave.cli.habits.othertools import option_hint

    hint = option_hint(command, str(getattr(err, "option_name", "") or ""), args)
    if hint:
        err.possibilities = []  # click's near names would name it a second time
    return hint


def spec_hint(command, ctx, args, err) -> str:
    """What an extra word a verb takes no place for was meant as, else "": " (did you mean --spec s3.yaml?)" when it
    looks like a spec and the verb takes --spec; when it is a command of yours (after ``--``, or a script's name)
    given to a verb that runs none, the verbs that do (walk9 A15: `up --run -- train.py` got only "unexpected
    extra argument")."""
    message = str(getattr(err, "message", "") or "")
    if "unexpected extra argument" not in message.lower():
        return ""
    takes_spec = any("--spec" in getattr(param, "opts", ()) for param in command.params)
    named = [word for word in args if word.endswith((".yaml", ".yml")) and not word.startswith("-")]
    if takes_spec and named:
        return f" (did you mean --spec {named[0]}?)"
    after = args[args.index("--") + 1:] if "--" in args else []
    script = after or [word for word in args if word.endswith(COMMAND_ENDINGS) and not word.startswith("-")]
    if not script:
        return ""
    import shlex

    verb = ctx.command_path if ctx is not None else "this verb"
    typed = " ".join(shlex.quote(word) for word in (after or script[:1]))
    started = ("--run starts the spec's launcher.script, --hold holds the nodes; then " if verb.endswith(" up")
               else "")
    return (f" (`{verb}` runs no command of yours: {started}`nodeweave run -- {typed}` starts it on the nodes, "
            "`nodeweave exec -- CMD` runs a command in each)")




def spec_option(what: str = "The cluster spec"):
    """``--spec``, the same on every verb: the flag, else $NODEWEAVE_SPEC, else the nearest nodeweave.yaml."""
    return typer.Option(None, "--spec", envvar=SPEC_ENV, show_envvar=False, show_default=False,
                        help=f"{what} (default: ${SPEC_ENV}, else {SPEC_NAME} here or in the nearest folder above, "
                             "as git finds its repository; -: read it from standard input)")


