"""The root group imports a verb's module only when that verb runs, so a call pays for one verb's imports.

Why: importing all thirteen verb modules and building every command cost ~50 ms of each call
(issue 20's 0.2 s start-up target), while ``nodeweave status`` needs the cluster verbs only.
The root help lists every verb from a table (name, module, its one-line help) without importing
them, as click's "lazily loading subcommands" recipe does; tests/test_cli_startup.py checks that
table against the commands the modules really register, so the listing cannot drift.
"""

from __future__ import annotations

import importlib
from typing import Dict, NamedTuple

from nodeweave.cli.habits.base import NodeweaveGroup


class Verb(NamedTuple):
    """A root command as the help lists it: the module that registers it, and the help line shown."""

    module: str
    short_help: str
    hidden: bool = False


_BUILT: Dict[tuple, object] = {}  # (module, verb or None for all) -> click command(s), built once per process


def registered(module: str, only: "str | None" = None) -> Dict[str, object]:
    """The click commands ``nodeweave.cli.<module>.register`` adds (``only``: just that one, built alone:
    building a command reads every parameter's signature, and the cluster module registers six)."""
    if (module, only) not in _BUILT:
        import typer.main

        from nodeweave.cli.habits.base import NodeweaveTyper

        holder = NodeweaveTyper()
        importlib.import_module(f"nodeweave.cli.{module}").register(holder)
        if only is not None:
            holder.registered_commands = [c for c in holder.registered_commands if _name(c) == only]
            holder.registered_groups = [g for g in holder.registered_groups if g.name == only]
        _BUILT[(module, only)] = dict(typer.main.get_group(holder).commands)
    return _BUILT[(module, only)]


def _name(info) -> str:
    import typer.main

    return info.name or typer.main.get_command_name(info.callback.__name__)


class LazyVerbs(NodeweaveGroup):
    """A root group whose verbs are a table (``verbs``); a verb's module loads when it is resolved."""

    verbs: Dict[str, Verb] = {}
    _listing = False

    def list_commands(self, ctx):
        return list(self.verbs)

    def hidden_command(self, ctx, name: str) -> bool:
        return self.verbs[name].hidden

    def get_command(self, ctx, name):
        verb = self.verbs.get(name)
        if verb is None:
            return None
        if self._listing:  # the help's command list: the table's line, nothing imported
            from typer.core import TyperCommand

            return TyperCommand(name, help=verb.short_help, hidden=verb.hidden)
        return registered(verb.module, name).get(name)

    def format_help(self, ctx, formatter):
        self._listing = True
        try:
            return super().format_help(ctx, formatter)
        finally:
            self._listing = False


def every_command(group: LazyVerbs, ctx=None) -> Dict[str, object]:
    """Every verb loaded (tests, docs checks): name -> its real click command."""
    return {name: registered(verb.module)[name] for name, verb in group.verbs.items()}
