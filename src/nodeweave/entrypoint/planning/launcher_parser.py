"""The launcher's options judged whole, as the launcher's own parser reads them (walk13 B9).

``NODEWEAVE_LAUNCHER_OPTIONS=--log-dir`` (its value left out) planned ``torchrun ... --log-dir train.py``: torchrun
took the script as the folder and failed on every node, after the check-in. ``zz9`` or ``--log-dir logs extra`` (a
stray word) became the script. Each word was judged alone (``launcher_options.check``: is it an option nodeweave
passes, is it an option of the launcher at all); this judges them together, before the start and in ``--explain``.

Where the launcher is installed (torchrun: ``torch/distributed/run.py`` beside the Python its ``torchrun`` script
names), its parser is read from that source: every ``add_argument`` of ``get_args_parser`` with its option strings,
``action`` and ``nargs`` (a custom action class of the launcher's, torch's ``check_env``, takes no value when it
passes ``nargs=0`` to ``argparse.Action``), and built with argparse, which then parses the options followed by the
script. Nothing of the launcher is imported (an import of torch costs seconds; the entrypoint is stdlib-only).

Where it is not installed (or for deepspeed and accelerate), the stated rule: a word that is no option is the value
of the option right before it (an option written ``--opt=VALUE`` has its value already); the first word, or a word
after another value, is no option's value and would become the script.
"""

import ast
import argparse
import glob
import os

from ..bounded import TEXT_CAP, read_text
from ..errors import UsageError

# The launcher's parser: its script, the file below the Python's site-packages that defines it, and the function.
SOURCES = {"torchrun": ("torch/distributed/run.py", "get_args_parser")}
SCRIPT = "NODEWEAVE-SCRIPT"  # stand-ins for the command after the options: what a value must never take
ARGUMENT = "NODEWEAVE-SCRIPT-ARGUMENT"
STATED_RULE = ("a word that is no option is the value of the option right before it; the first word, or a word "
               "after another value, would become the script")
_CACHE = {}


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Refused(message)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _launcher_program(launcher, env):
    import shutil

    return shutil.which(launcher, path=(env or {}).get("PATH"))


def _interpreter(program):
    """The Python a launcher's script names on its first line (``#!/opt/venv/bin/python3``), or None."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        import shutil

        return shutil.which(words[-1])
    return words[0]


def source_of(launcher, env):
    """The installed file that defines ``launcher``'s parser (beside the Python its script runs), or None."""
    if launcher not in SOURCES:
        return None
    program = _launcher_program(launcher, env)
    python = _interpreter(program) if program else None
    if not python:
        return None
    relative = SOURCES[launcher][0]
    prefix = os.path.dirname(os.path.dirname(python))  # /opt/venv/bin/python3 -> /opt/venv
    patterns = [os.path.join(prefix, "lib", "python3*", where, relative) for where in ("site-packages",
                                                                                       "dist-packages")]
    patterns += [os.path.join(prefix, "local", "lib", "python3*", "dist-packages", relative),
                 os.path.join(prefix, "lib", "python3", "dist-packages", relative)]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return None


def _switch_classes(tree, path, relative):
    """Names of the launcher's own Action classes (imported into its parser's module, ``from torch.distributed.
    argparse_util import check_env``) that take no value: they pass ``nargs=0`` to ``argparse.Action``."""
    root = path
    for _ in relative.split("/"):
        root = os.path.dirname(root)  # the site-packages the parser's file is in
    switches = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        helper = os.path.join(root, *node.module.split(".")) + ".py"
        try:
            helper_tree = ast.parse(read_text(helper, TEXT_CAP, "a launcher's parser source"))
        except (OSError, SyntaxError, ValueError):  # NotText is a ValueError
            continue
        wanted = {alias.asname or alias.name: alias.name for alias in node.names}
        for item in helper_tree.body:
            if isinstance(item, ast.ClassDef) and item.name in wanted.values() \
                    and any(isinstance(k, ast.keyword) and k.arg == "nargs" and _literal(k.value) == 0
                            for k in ast.walk(item)):
                switches.update(name for name, real in wanted.items() if real == item.name)
    return switches


def parser_from_source(path, function, relative):
    """An argparse parser with every ``add_argument`` of ``function`` in the file ``path``, or None."""
    key = (path, function)
    if key in _CACHE:
        return _CACHE[key]
    parser = None
    try:
        tree = ast.parse(read_text(path, TEXT_CAP, "a launcher's parser source"))
        body = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == function)
        switches = _switch_classes(tree, path, relative)
        parser = _Parser(prog=os.path.basename(path), add_help=False)
        for call in ast.walk(body):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "add_argument"):
                continue
            names = [_literal(arg) for arg in call.args]
            if not names or not all(isinstance(name, str) for name in names):
                continue
            kwargs = {}
            for keyword in call.keywords:
                if keyword.arg == "nargs":
                    value = keyword.value
                    name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) \
                        else None
                    kwargs["nargs"] = argparse.REMAINDER if name == "REMAINDER" else _literal(value)
                elif keyword.arg == "action":
                    value = keyword.value
                    action = _literal(value)
                    if action in ("help", "version", "store_true", "store_false", "store_const", "count",
                                  "append_const"):
                        kwargs["action"] = "store_true"  # no value; help and version never end the judging
                    elif action in ("append", "extend"):
                        kwargs["action"] = "append"
                    elif isinstance(value, ast.Name) and value.id in switches:
                        kwargs["action"] = "store_true"
            if names[0].startswith("-"):
                kwargs["dest"] = names[0].lstrip("-").replace("-", "_")
            if kwargs.get("action") == "store_true":
                kwargs.pop("nargs", None)
            parser.add_argument(*names, **kwargs)
        if not any(action.option_strings == [] for action in parser._actions):
            parser = None  # no positional script: not the parser this was meant to read
    except (OSError, SyntaxError, ValueError, StopIteration, TypeError, argparse.ArgumentError):
        parser = None
    _CACHE[key] = parser
    return parser


def _with_the_parser(parser, options, launcher, script):
    """Why ``options`` then a script are not read as options then that script by ``parser``, or None."""
    try:
        parsed = parser.parse_args(list(options) + [SCRIPT, ARGUMENT])
    except _Refused as refused:
        return f"{launcher}'s parser refuses them ({refused})"
    values = vars(parsed)
    script_dest = next(action.dest for action in parser._actions if not action.option_strings)
    for action in parser._actions:
        if not action.option_strings:
            continue
        value = values.get(action.dest)
        taken = value if isinstance(value, list) else [value]
        if SCRIPT in taken:
            typed = next((word for word in reversed(options) if any(
                name.startswith(word) for name in action.option_strings if name.startswith("--")) or word in
                action.option_strings), action.option_strings[-1])
            return f"{typed} needs a value and none is given: it would take {script} as its value"
    if values.get(script_dest) != SCRIPT:
        return (f"{values.get(script_dest)!r} is no {launcher} option nor an option's value: {launcher} would run "
                f"it as the script (and {script} as its argument)")
    return None


def _by_the_stated_rule(options, launcher, script):
    after_option = False
    for word in options:
        if word.startswith("-") and word != "-":
            after_option = "=" not in word
            continue
        if not after_option:
            return (f"{word!r} is no {launcher} option nor an option's value: {launcher} would run it as the "
                    f"script (and {script} as its argument)")
        after_option = False
    return None


def judge(launcher, options, env, source, command=()):
    """Refuse (exit 2) launcher ``options`` that the launcher would not read as options before the script: an
    option missing its value (it would take the script), a stray word (it would become the script)."""
    options = list(options or ())
    if not options or launcher == "command":
        return
    script = repr(command[0]) if command else "the script"
    path = source_of(launcher, env)
    parser = parser_from_source(path, SOURCES[launcher][1], SOURCES[launcher][0]) if path else None
    if parser is not None:
        why = _with_the_parser(parser, options, launcher, script)
        how = f"as {launcher}'s own parser reads them, from {path}"
    else:
        why = _by_the_stated_rule(options, launcher, script)
        how = f"{launcher}'s parser is not installed here, so by the rule: {STATED_RULE}"
    if why is not None:
        raise UsageError(f"launcher options {' '.join(options)!r} (from {source}): {why}; accepted: each option "
                         f"with its value (--log-dir /workspace/logs, or --log-dir=/workspace/logs), the script after "
                         f"them ({how})")
