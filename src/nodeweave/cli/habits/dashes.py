"""Verbs that take a command: nodeweave's options anywhere before ``--``, the command only after it.

Why: when the command began at the first positional word, ``nodeweave run train.py --lr 1e-3
--dry-run`` handed ``--dry-run`` to the script and started a real run. Now every option before
``--`` is nodeweave's (an unknown one is refused, the ``--`` form given as the hint), and only
what follows ``--`` reaches the command unread. A command that names a launcher nodeweave
starts itself, or the interpreter, is understood or refused here, before any node is asked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Sequence, Tuple

import typer

from nodeweave.cli.habits.base import NodeweaveCommand, close_options
from nodeweave.entrypoint.planning import launcher_options
from nodeweave.errors import UsageError

COMMAND_PARAM = "command"
LAUNCHER_WORDS = ("torchrun", "deepspeed", "accelerate")
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate.commands.launch")
# The launcher a typed word or module starts (`--launcher` of run), and its sub-command that is no option.
LAUNCHER_OF = {"torchrun": "torchrun", "torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
               "deepspeed": "deepspeed", "accelerate": "accelerate", "accelerate.commands.launch": "accelerate"}
SUB_COMMANDS = {"accelerate": ("launch",)}
PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")


# What each verb's hints show after `--`: a command that verb is for.
EXAMPLES = {"run": "train.py --lr 1e-3", "exec": "nvidia-smi -L"}
# nodeweave's own flags whose whole point is to do nothing, appended out of habit: after `--` they are the command's
# and the run would be real (walk18a A12: `run -- train.py --dry-run` was warned about, then started on every node),
# so each is refused with the command that has it before `--` (the command's own flag of that name goes in a shell's
# quoted words: `--launcher command -- sh -c '... --dry-run'`). Other options of ours there are warned about only.
HABIT_FLAGS = ("--dry-run",)


class CommandAfterDashes(NodeweaveCommand):
    """A typer command whose ``command`` argument is what follows ``--`` (or bare words before it)."""

    def parse_args(self, ctx, args: List[str]) -> List[str]:
        args = list(args)
        verb = f"nodeweave {ctx.info_name}"
        example = EXAMPLES.get(ctx.info_name, "COMMAND ARGS")
        cut = args.index("--") if "--" in args else len(args)
        before, after = args[:cut], args[cut + 1:]
        try:
            rest = super().parse_args(ctx, list(before))  # click consumes the list it is given
        except Exception as err:  # click's (or typer's vendored click's) NoSuchOption, found by shape
            option = getattr(err, "option_name", None)
            if option and type(err).__name__ == "NoSuchOption":
                known = [flag for param in self.get_params(ctx) for flag in getattr(param, "opts", ())
                         if flag.startswith("--") and flag != "--help"]
                close = close_options(option, known)[:2]  # --lr is no typo of --help, --name none of --namespace
                from nodeweave.cli.habits.othertools import option_hint

                habit = option_hint(self, option, before)  # -f FILE: --spec FILE (walk9 A10)
                hint = habit or (f" (did you mean {', '.join(close)}?)" if close else "")
                owner = "" if habit or close else other_verbs_option(ctx, option, before)
                close = close or ([habit] if habit else [])
                where = (owner if owner else
                         "" if close and "--" in args else  # a typo of ours, and `--` was used: the typo is all
                         f"; the command and its own options go after `--`: {verb} [OPTIONS] -- {example}")
                raise UsageError(f"{option!r} is not an option of `{verb}`{hint}{where}") from None
            raise
        words = tuple(ctx.params.get(COMMAND_PARAM) or ())
        if words and after:
            value_of = self.option_before(ctx, before, words[0])
            if value_of:  # a stray word after an option's value: never offered as the command's program (A27)
                raise UsageError(f"{words[0]!r} follows `{value_of}` before `--`, where nodeweave takes no more words: "
                                 f"{value_of.split()[0].split('=')[0]} takes one word (quote a value that has spaces), "
                                 f"and the command goes after `--` only ({' '.join(after)!r})")
            raise UsageError(f"the command is given twice ({' '.join(words)!r} before `--`, {' '.join(after)!r} "
                             f"after it); give it once, all of it after `--`: {verb} [OPTIONS] -- "
                             f"{' '.join(words + tuple(after))}")
        command = words + tuple(after)
        if command and not command[0].strip():
            raise UsageError(f"the command's program is empty ({command[0]!r}, an unset variable?); an empty value "
                             f"never means a default: {verb} [OPTIONS] -- {example}")
        for flag in HABIT_FLAGS:
            if flag in after and flag not in before:
                raise UsageError(f"{flag} comes after `--`, where it would go to the command "
                                 f"({' '.join(after[:after.index(flag) + 1])}), not to nodeweave, and the real "
                                 f"{ctx.info_name} would start: nothing is started; for nodeweave's {flag}, put it "
                                 f"before `--`: {verb} {' '.join([*before, flag])} -- "
                                 f"{' '.join(w for w in after if w != flag)}" + (
                                     f" (a script's own {flag}: read it from a variable, -e NAME=1)"
                                     if ctx.info_name == "run" else
                                     f" (the command's own {flag}: in a shell's quoted words, {verb} -- sh -c "
                                     f"'{' '.join(after)}')"))
        trailing = self.trailing_options(ctx, after)
        if trailing and not set(trailing) & set(HABIT_FLAGS):
            kept, replaced = self.without_once_options(ctx, before, trailing)
            instead = f" in place of {' '.join(replaced)}" if replaced else ""
            typer.echo(f"nodeweave: warning: {' '.join(trailing)} comes after `--`, so it goes to the command "
                       f"({' '.join(after)}), not to nodeweave; for nodeweave, put it before `--`{instead}: "
                       f"{verb} {' '.join(kept + trailing)} -- {' '.join(after[:len(after) - len(trailing)])}",
                       err=True)
        ctx.params[COMMAND_PARAM] = command
        return rest

    def option_before(self, ctx, before: List[str], word: str) -> str:
        """The option and value (``--node 1``, ``--node=1``) right before the first place ``word`` stands in
        ``before`` as no option's value, or "" (the word begins the options, or follows a flag)."""
        valued = {name for param in self.get_params(ctx) if getattr(param, "param_type_name", "") == "option"
                  and not getattr(param, "is_flag", False) for name in param.opts}
        index = 0
        while index < len(before):
            name = before[index].split("=", 1)[0]
            if name in valued and "=" not in before[index] and index + 1 < len(before):
                if index + 2 < len(before) and before[index + 2] == word:
                    return f"{before[index]} {before[index + 1]}"
                index += 2
                continue
            if before[index] == word:
                return before[index - 1] if index and "=" in before[index - 1] and \
                    before[index - 1].split("=", 1)[0] in valued else ""
            index += 1
        return ""

    def without_once_options(self, ctx, before: List[str], moved: List[str]) -> "tuple[List[str], List[str]]":
        """(``before`` less the options ``moved`` gives again, those words): an option taken once
        (``--spec a ... -- t.py --spec b``) is replaced by the moved one in the hint, never shown twice."""
        once = {}
        for param in self.get_params(ctx):
            if getattr(param, "param_type_name", "") == "option" and not getattr(param, "multiple", False):
                for name in (*param.opts, *getattr(param, "secondary_opts", ())):
                    once[name] = param
        again = {id(once[w.split("=", 1)[0]]) for w in moved if w.split("=", 1)[0] in once}
        kept, replaced, index = [], [], 0
        while index < len(before):
            word = before[index]
            param = once.get(word.split("=", 1)[0])
            if param is not None and id(param) in again:
                width = 1 if "=" in word or getattr(param, "is_flag", False) else 2
                replaced += before[index:index + width]
                index += width
                continue
            kept.append(word)
            index += 1
        return kept, replaced

    def trailing_options(self, ctx, after: List[str]) -> List[str]:
        """The words at the end of the command that are all options of this verb with their values (``exec -- ls -o
        json``: ``-o json``), as appended out of habit; [] when the command ends in words of its own. Options in the
        middle of a command are the command's (``run -- train.py --output out.txt --epochs 3``)."""
        takes_value, flags = {}, set()
        for param in self.get_params(ctx):
            if getattr(param, "param_type_name", "") != "option":
                continue
            for name in (*param.opts, *getattr(param, "secondary_opts", ())):
                if name in ("-h", "--help"):
                    continue
                (flags.add(name) if getattr(param, "is_flag", False) else takes_value.__setitem__(name, param))
        for start in range(1, len(after)):
            words, index, ok = after[start:], 0, True
            while index < len(words) and ok:
                word = words[index]
                name = word.split("=", 1)[0] if word.startswith("--") else word
                if name in flags and "=" not in word:
                    index += 1
                elif name in takes_value:
                    index += 1 if "=" in word else 2
                    ok = index <= len(words)
                else:
                    ok = False
            if ok and words:
                return words
        return []


def other_verbs_option(ctx, option: str, before: List[str]) -> str:
    """"; OPTION is `nodeweave VERB`'s option: ..." where ``option`` (not this verb's) is another verb's, so it is
    not sent after `--` to the command (walk18a A21: `run --threshold 10`, check's option, was told to go after
    `--`, where train.py would get it); "" where no verb has it. Every verb is loaded: this is an error's path."""
    from nodeweave.cli.habits.lazy import every_command

    name = option.partition("=")[0]
    root = ctx.find_root().command
    if not hasattr(root, "verbs"):
        return ""
    owners = []
    for verb, command in every_command(root).items():
        for sub, leaf in ([(f"{verb} {n}", c) for n, c in command.commands.items()] if hasattr(command, "commands")
                          else [(verb, command)]):
            if sub != ctx.info_name and any(name in getattr(p, "opts", ()) for p in leaf.params):
                owners.append(sub)
    if not owners:
        return ""
    value = _value_after(before, option)
    typed = f"{name}{' ' + value if value else ''}"
    if ctx.info_name == "run" and "check" in owners:  # the verb `run --check` runs, with its defaults (README)
        return (f"; it is `nodeweave check`'s option, and `run --check` runs check with its defaults: "
                f"`nodeweave check {typed}` first, then `nodeweave run`")
    return f"; it is an option of {' and '.join(f'`nodeweave {o}`' for o in owners)} (nodeweave {owners[0]} {typed})"


def _value_after(words: List[str], option: str) -> str:
    """The value typed with ``option`` (``--a 1`` or ``--a=1``), or ""."""
    name, sep, value = option.partition("=")
    if sep:
        return value
    if option in words:
        index = words.index(option)
        if index + 1 < len(words) and not words[index + 1].startswith("-"):
            return words[index + 1]
    return ""


def launcher_command(command: Sequence[str], launcher: str, verb: str = "nodeweave run",
                     workspace: "Path | None" = None) -> Tuple[List[str], str]:
    """(the script and its args for a launcher of type ``launcher``, from what the user typed; the note saying what
    was changed in it, or ""). ``workspace``: this machine's workspace folder, where a bare script name is looked
    for (the current folder when not given); a bare name that is none of its files is a program (walk7 A30).

    ``python train.py ...`` is understood (the launcher runs the script with the image's Python), and said: a
    command is never changed silently (walk5, W29); a launcher's own name (``torchrun ...``, ``python -m
    torch.distributed.run ...``) is refused with the command to type instead, since nodeweave starts that launcher
    itself on every node. A ``command``-type spec runs what it is given, unchanged.
    """
    words = list(command)
    if launcher == "command" or not words:
        return words, ""
    head = os.path.basename(words[0])
    if PYTHON.match(head) and len(words) > 1:
        if words[1] == "-m" and len(words) > 2 and words[2] in LAUNCHER_MODULES:
            _refuse_launcher(words, launcher, verb, words[3:], LAUNCHER_OF[words[2]])
        if not words[1].startswith("-") or (words[1] == "-m" and len(words) > 2):  # `python -m pkg.module`
            said = " ".join(words[1:3] if words[1] == "-m" else words[1:2])  # is the launcher's own `-m pkg.module`
            return words[1:], (f"`{words[0]} {said}` runs as `{said}`: {launcher} starts the "  # (walk12 A24)
                               f"{'module' if words[1] == '-m' else 'script'} with the image's Python, so "
                               f"{words[0]} is left out (--launcher command runs a command as given)")
        raise UsageError(f"`{' '.join(words[:3])}`: {launcher} runs the script with the image's Python; give the "
                         f"script path after `--`: {verb} -- train.py ARGS (interpreter options are not passed)")
    if head in LAUNCHER_WORDS:
        rest = words[1:]
        if rest[:1] and rest[0] in SUB_COMMANDS.get(head, ()):  # `accelerate launch ...`: the sub-command
            rest = rest[1:]
        _refuse_launcher(words, launcher, verb, rest, LAUNCHER_OF[head])
    from nodeweave.entrypoint.planning.consistency import is_a_program, program_problem, script_slip

    here = workspace if workspace is not None else Path.cwd()
    slip = None if (here / words[0]).exists() else script_slip(words[0])
    if slip:  # the entrypoint's own rule for the script word (walk11b B17)
        raise UsageError(f"script {slip}; accepted: the script's path in the workspace, e.g. {verb} -- train.py")
    if is_a_program(words[0], lambda word: (here / word).is_file()):
        import shlex

        raise UsageError(program_problem(launcher, words[0], verb,
                                         f"--launcher command ({verb} --launcher command -- {shlex.join(words)})"))
    return words, ""


# A variable's name as a shell or a template would spell a reference to it: $LR, ${LR}, $(LR), {LR}, {{LR}},
# {{ LR }}, %LR%. None of them is expanded on the nodes (walk6 W11: only the shell's spellings were noted).
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_REFERENCE = re.compile("|".join((rf"\$\{{{_NAME}\}}", rf"\$\({_NAME}\)", rf"\${_NAME}", rf"\{{\{{\s*{_NAME}\s*\}}\}}",
                                  rf"\{{{_NAME}\}}", rf"%{_NAME}%")))


def _referenced(match) -> str:
    return next(group for group in match.groups() if group)


def unexpanded_note(command: Sequence[str], variables: Sequence[str]) -> str:
    """The note for ``$NAME``, ``${NAME}`` or a template's ``{NAME}``, ``{{NAME}}``, ``%NAME%`` in the command after
    ``--``, where NAME is a variable this run sets (a ``--sweep`` or ``-e``): no shell or template reads the command
    on the nodes, so the script gets the text as typed; "" for none. A sweep of a script's own flag (``--lr '$LR'``) is the first thing an argparse user tries (walk5, W1)."""
    named = [m.group(0) for word in command for m in _REFERENCE.finditer(word) if _referenced(m) in set(variables)]
    if not named:
        return ""
    first = _referenced(_REFERENCE.match(named[0]))
    return (f"{', '.join(dict.fromkeys(named))} in the command reaches the script as typed: no shell or template "
            f"reads the command on the nodes; {first} is in each node's environment (the -e value, or each sweep point's): "
            f"read it in the script (os.environ['{first}'], e.g. as the flag's default), or run it through a shell: --launcher "
            f"command -- sh -c '... \"${first}\"' (docs/cluster.md, \"--sweep and --metric\")")


# A launcher option nodeweave sets itself, and where its value goes instead: a flag of `nodeweave run`
# (planning/launcher_options.py's table), or a spec field.
RUN_FLAGS = launcher_options.RUN_FLAGS


def _refuse_launcher(words: List[str], launcher: str, verb: str, rest: List[str], typed: str) -> None:
    """Refuse a launcher typed before the script, naming the command to type: the script alone, with
    ``--launcher`` where the typed launcher is not the spec's (``run -- deepspeed train.py``)."""
    from nodeweave.entrypoint.planning.launcher_options import clash

    script = next((i for i, w in enumerate(rest) if w.endswith(".py")), None)
    tail = rest[script:] if script is not None else ["train.py", "ARGS"]
    flags, notes, theirs = [], [], []
    if typed != launcher and verb == "nodeweave run":
        flags += ["--launcher", typed]
        launcher = typed
    for name, value in _options(rest[:script] if script else []):
        shown = f"{name} {value}".strip()
        if name in RUN_FLAGS and value.isdigit() and verb == "nodeweave run":
            flags += [RUN_FLAGS[name], value]
        elif _spec_field(words[0], name):
            notes.append(f"{shown} is the spec's {_spec_field(words[0], name)}")
        elif name in RUN_FLAGS or clash(os.path.basename(words[0]), name, _taken(words[0])):
            notes.append(f"{shown} is set by nodeweave from its plan (leave it out)")
        else:
            theirs.append(shown)
    if theirs:
        notes.append(f"{launcher}'s own options ({' '.join(theirs)}) go in the spec's launcher.options")
    command = " ".join([verb, *flags, "--", *tail])
    raise UsageError(f"`{' '.join(words[:2])} ...`: nodeweave starts {launcher} itself on every node (rank, master "
                     f"and node count from its plan); give only the script: `{command}`"
                     + "".join(f"; {note}" for note in notes))


def _spec_field(word: str, name: str):
    """The spec field that sets launcher option ``name`` (``launcher_options``' table, any spelling), or None."""
    own = launcher_options.clash(os.path.basename(word), name, _taken(word))
    field = launcher_options.own_option_field(own) if own else ""
    return field if field and ":" not in field else None


def _taken(word: str):
    from nodeweave.entrypoint.planning.launcher_options import ALWAYS, NEVER

    name = os.path.basename(word)
    return ALWAYS.get(name, ()) + NEVER.get(name, ())


def _options(words: List[str]) -> List["tuple[str, str]"]:
    """(name, value) of each option in ``words``: ``--a 1``, ``--a=1`` and a flag alone (value "")."""
    found, index = [], 0
    while index < len(words):
        word = words[index]
        name, sep, value = word.partition("=")
        if not sep and index + 1 < len(words) and not words[index + 1].startswith("-"):
            value, index = words[index + 1], index + 1
        found.append((name, value))
        index += 1
    return found
