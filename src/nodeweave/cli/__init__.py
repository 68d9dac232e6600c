"""The ``nodeweave`` command.

One typer app; each command group lives in its own module under
``nodeweave.cli`` and adds itself through ``register(app)``. The root group
imports a module only when one of its verbs runs (``VERBS``), and heavy
libraries (python-on-whales, the renderers' jinja2, rich) are imported inside
the command that needs them, so ``--help`` and the other commands stay quick.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Optional

import typer

from nodeweave import __version__
from nodeweave.cli.habits.base import NodeweaveTyper, close_options
from nodeweave.cli.habits.lazy import LazyVerbs, Verb
from nodeweave.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, NodeweaveError, UsageError
from nodeweave.usertext import shell_shown, visible

# Every verb: the module whose ``register(app)`` adds it, and the line the root help shows for it
# (its help's first sentence; tests/test_cli_startup.py holds the two equal). A module is imported
# only when one of its verbs runs (habits/lazy.py).
VERBS = {
    "init": Verb("init", "Write a first spec from this machine's (or the hosts') GPUs and RDMA ports, validated."),
    "validate": Verb("init", "Check the spec (every independent mistake, one line each: file:line, field, what is "
                             "accepted; exit 2) and summarise it; with -o json or yaml a refused spec is "
                             "{\"valid\": false, \"errors\": [...]} on stdout too."),
    "bench": Verb("bench", "Measure all_reduce, all_gather and reduce_scatter bandwidth (nccl-tests formulas) and "
                           "check every result."),
    "check": Verb("check", "Check every node (facts, CPU/GPU probes, nvidia-smi or amd-smi, the Xid events of its "
                           "GPUs in the kernel log where readable, dcgmi where installed) and every link "
                           "(point-to-point bandwidth in ceil(log2 N) rounds of disjoint pairs, in turns where pairs "
                           "would share a machine unequally, through torch.distributed with the job's backend, then "
                           "one ring all-reduce) and name what is more than --threshold below the median of its "
                           "peers, with the figure and the likely cause."),
    "up": Verb("cluster", "Bring the cluster up: compose on this machine, compose over ssh on every host, or apply "
                          "-k on Kubernetes."),
    "down": Verb("cluster", "Take down what `up` made (keeps Kubernetes claims unless --delete-claims)."),
    "status": Verb("cluster", "One row per node: up, hold or run, rank, plan hash (do all agree?), run in "
                              "progress, GPU use."),
    "stop": Verb("cluster", "Stop the current run on every node: SIGTERM to all its processes, SIGKILL after the "
                            "grace; a sweep of `run --sweep` walking its points here starts no further point (nodes "
                            "started with `up --run` run the spec's job as their main process: `nodeweave down` "
                            "ends it)."),
    "shell": Verb("cluster", "An interactive shell in one node (--node; default node 0)."),
    "logs": Verb("cluster", "Every node's output with \\[node-i rN] prefixes, the same line from N ranks once with "
                            "its count: the containers' logs in run mode, the runs' logs in hold mode, across a "
                            "recovering job's generations."),
    "top": Verb("top", "The running job, redrawn: nodes and their heartbeats, ranks with their collective rate and "
                       "straggler ratio, the stall state, the step, every node's GPUs and the goodput so far."),
    "dashboard": Verb("dashboard", "The running job as a web page on this machine, read from node 0 every second: "
                                   "nodes and ranks with their state, the step and collective rates over time, a "
                                   "per-rank step-time heat map (a straggler in red), the generations on a timeline "
                                   "with each fault, left-out node, spare and resumed checkpoint, every node's GPUs "
                                   "and the goodput so far; --run shows a finished run's folder the same way."),
    "doctor": Verb("doctor", "Check this node for NCCL/RCCL settings, limits and hardware that hurt multi-node "
                             "training."),
    "render": Verb("render", "Render images, compose files, manifests, the entrypoint zipapp (and Slurm, OpenShift "
                             "build, TrainJob, JobSet) into --out, byte-stable."),
    "run": Verb("run", "Start COMMAND (default: the spec's script and args) on every node at once, through each "
                       "node's entrypoint, and see it through: output with \\[node-i] prefixes; runs/<UTC "
                       "time>-<job>/ with logs, plans, exit codes, commit and sync digest; the first node to fail "
                       "stops the others; Ctrl-C stops every node."),
    "exec": Verb("execute", "Run COMMAND on every node at once through its exec channel, without the launcher (as "
                            "`sky exec` or pdsh): each line prefixed with \\[node-i], every node's exit code "
                            "collected."),
    "sync": Verb("sync", "Push SRC (default: the spec's workspace.host_path, else .) to DEST on every target at "
                         "once."),
    "variants": Verb("variants", "Deprecated spelling of `nodeweave image variants` (kept for one release).",
                     hidden=True),
    "runs": Verb("runs", "List, show and compare past runs and sweeps (the run folders)."),
    "hosts": Verb("hosts", "Find out what GPUs, RDMA NICs and interfaces each host has."),
    "image": Verb("image", "Build and push the training images; list the variants."),
}


class RootGroup(LazyVerbs):
    verbs = VERBS


def environment_epilog() -> str:
    """The root help's "Environment:" list, as git's and kubectl's manuals have one: every variable this command
    reads (``CLI_VARIABLES``), where the unknown-variable warning points (walk16a A15: it pointed at the
    entrypoint's help, which names none of them). ``\b`` keeps click from refilling the lines."""
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    lines = [f"  {name}: {accepted}" for name, accepted in CLI_VARIABLES.items()]
    return "\n".join(["\b", "Environment (read by this command; the nodes' variables: `nodeweave-entrypoint --help`):",
                      *lines])


app = NodeweaveTyper(
    name="nodeweave",
    help="Multi-node GPU training in containers from one cluster spec.",
    epilog='Shell completion: eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)" (source_zsh, source_fish too).'
           "\n\n" + environment_epilog(),
    no_args_is_help=True,
    add_completion=False,
    cls=RootGroup,
)


# `eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)"` (source_zsh, source_fish): shell completion.
COMPLETE_VAR = "_NODEWEAVE_COMPLETE"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nodeweave {__version__}")
        raise typer.Exit()


def _typed_before_the_verb(option):
    """A verb's option (``VERB_OPTIONS_WITH_VALUE``, ``VERB_FLAGS``) on the root too: the shell completes its values
    there as after the verb (`nodeweave -o <TAB>` offered the verbs, walk5 W54), and ``nodeweave --help`` lists it,
    saying it is the verb's (walk12 A2: the root's help listed only --version, yet the refusal of another option
    there named these three). A real call never reaches the root with it: ``verb_options_first`` has moved it after
    the verb."""
    import copy

    option = copy.copy(option)
    option.help = f"(the verb's option, taken before it too) {option.help}"
    return option


def _root_options():
    from nodeweave.cli.habits.base import spec_option
    from nodeweave.cli.habits.output import json_option, output_option

    return {"--output": output_option(every=True), "--spec": spec_option("The cluster spec (doctor reads one only when given)"), "--json": json_option()}


_ROOT = _root_options()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print the version and exit"
    ),
    output: str = _typed_before_the_verb(_ROOT["--output"]),
    spec: "Optional[Path]" = _typed_before_the_verb(_ROOT["--spec"]),
    as_json: bool = _typed_before_the_verb(_ROOT["--json"]),
) -> None:
    """Multi-node GPU training in containers from one cluster spec."""


def _click_error_line(err: Exception) -> "tuple[str, int] | None":
    """One line for a command-line parsing error, or None when ``err`` is not one.

    typer raises click's exceptions, or (typer >= 0.22) those of its vendored
    copy; both carry ``format_message()`` and ``exit_code``, so they are
    recognised by shape and click itself is never imported (nodeweave does not
    depend on it directly).
    """
    format_message = getattr(err, "format_message", None)
    exit_code = getattr(err, "exit_code", None)
    if not callable(format_message) or not isinstance(exit_code, int):
        return None
    if getattr(err, "possibilities", None) and getattr(err, "option_name", None):
        err.possibilities = close_options(err.option_name, err.possibilities)
    if type(err).__name__ == "NoArgsIsHelpError":  # `nodeweave` or `nodeweave hosts` alone: the help, as click shows it
        return str(format_message()).rstrip("\n"), exit_code
    message = " ".join(str(format_message()).split()).rstrip(".")
    message = re.sub(r" ?\(Possible options: ([^)]*)\)| Did you mean ([^ ?]*)\?",
                     lambda m: f" (did you mean {m.group(1) or m.group(2)}?)", message)  # one wording everywhere
    message = numeric_refusal(message)
    ctx = getattr(err, "ctx", None)
    command = getattr(ctx, "command_path", None) or "nodeweave"
    if not message:  # no arguments at all: click has printed the help already
        return "", exit_code
    verb = command.split()[-1]
    if getattr(err, "option_name", None) in FORMAT_OPTIONS and verb in NO_FORMAT:
        return f"nodeweave: error: {no_format_line(verb, err.option_name)}", exit_code
    if getattr(err, "option_name", None) == "--node" and verb in NO_NODE:
        return f"nodeweave: error: {verb} takes no --node: {NO_NODE[verb]}", exit_code
    if getattr(err, "option_name", None) == "--dry-run" and verb in READ_ONLY:
        return (f"nodeweave: error: {verb} takes no --dry-run: it only reads (it asks the nodes or a run folder and "
                "changes nothing), so there is nothing to rehearse; leave --dry-run out"), exit_code
    if exit_code == EXIT_USAGE:
        message = f"{message[:1].lower()}{message[1:]}; `{command} --help` lists what is accepted"
    return f"nodeweave: error: {message}", exit_code


_OUT_OF_RANGE = re.compile(r"^invalid value for '(-[\w-]+)'(?: / '-\w+')?: (.+?) is not in the range (.+)$", re.I)
_NOT_A_NUMBER = re.compile(r"^invalid value for '(-[\w-]+)'(?: / '-\w+')?: '(.*)' is not a valid "
                           r"(integer|float|number|finite number|duration)(?: in the range (.+))?$", re.I)
# What every whole-number option takes, the spec's rule (spec/nodes.py, contract.plain_int): walk17a A20.
INTEGER_WORDS = "a whole number in plain decimal digits (not 02, +2, 2_0 or ' 2')"
_BOUNDS = {">=": "{} or more", ">": "more than {}", "<=": "at most {}", "<": "less than {}"}


def numeric_refusal(message: str) -> str:
    """click's words for a number out of its option's range, or not a (finite) number, in the one form every
    numeric refusal of nodeweave's own takes: ``--OPTION VALUE is not accepted: RANGE`` (walk3 F25); other
    messages as they are."""
    found = _NOT_A_NUMBER.match(message)
    if found:
        option, value, label, bounds = found.groups()
        from nodeweave.quantities import DURATION_WORDS

        kind = {"integer": INTEGER_WORDS, "finite number": "a finite number",
                "duration": DURATION_WORDS}.get(label.lower(), "a number")
        accepted = _accepted_range(bounds) if bounds else None
        shown = value if label.lower() == "finite number" else repr(value)  # nan, inf: numbers, written as numbers
        return f"{option} {shown} is not accepted: {kind}" + (f", {accepted}" if accepted else "")
    found = _OUT_OF_RANGE.match(message)
    if not found:
        return message
    option, value, bounds = found.groups()
    try:
        from nodeweave.cli.habits.coercion import plain_number

        value = plain_number(value)
    except ValueError:
        pass
    accepted = _accepted_range(bounds)
    return message if accepted is None else f"{option} {value} is not accepted: {accepted}"


def _accepted_range(bounds: str) -> "str | None":
    """``x>=1 and x<=256`` as ``1 to 256``; ``x>=0.2`` as ``0.2 or more``; None for other words."""
    parts = [re.match(r"^x(>=|>|<=|<)(.+)$", b.strip()) for b in bounds.split(" and ")]
    if not all(parts):
        return None
    words = [_BOUNDS[m.group(1)].format(m.group(2)) for m in parts]
    low = [m for m in parts if m.group(1) == ">="]
    high = [m for m in parts if m.group(1) == "<="]
    return f"{low[0].group(2)} to {high[0].group(2)}" if low and high and len(parts) == 2 else " and ".join(words)


# The verbs that print no data to format (README: "every verb that prints data takes -o"), and where the data is;
# `top -o json` was "no such option: -o" (walk2, row W4), then named `status --ranks -o json`, which lacks top's
# header and goodput (walk6 W1): top now prints node 0's /status.json itself.
# The cluster verbs that only read: no --dry-run, said so by name (docs/cluster.md); their --help says it too.
READ_ONLY = ("status", "logs", "top", "dashboard")
FORMAT_OPTIONS = ("-o", "--output", "--json")
NO_FORMAT = {
    "dashboard": "it serves a page for a browser; the same data: `nodeweave top -o json` (node 0's live "
                 "/status.json), `nodeweave runs show RUN -o json` (a run's folder)",
    "logs": "it prints the nodes' own output as it is; a run's record: `nodeweave runs show RUN -o json`",
    "init": "it writes a spec (`init --dry-run` prints it); its summary: `nodeweave validate -o json`",
    # takes -o for its --dry-run's plan only (no_format_line): the real shell prints nothing to format
    "shell": "it opens an interactive shell and prints no rows (its plan: `nodeweave shell --dry-run -o json`); a "
             "command's output as data: `nodeweave exec --node N -o json -- CMD`",
}


# The verbs that reach nodes yet take no --node (README: "--node picks nodes on every verb but up, down and bench"),
# what each acts on, and what does the thing for one node: `down --node 1` and `up --node 1` were "no such option"
# with no word on what takes one node down or brings it back (walk12 C8, C17).
NO_NODE = {
    "up": "it brings up every node of the spec at once (compose, the hosts or the StatefulSet are one cluster); a "
          "node that went down comes back with every other one in `nodeweave up --hold` (refused while a run goes: "
          "`nodeweave stop` first); one node's shell or command: `nodeweave shell --node N`, `nodeweave exec --node "
          "N -- CMD`",
    "down": "it takes down the whole cluster `up` made (nothing removes one node of it); the run on one node "
            "ends with `nodeweave stop --node N`",
    "bench": "it measures the collectives among the processes of this machine (or of the node it runs in); every "
             "node's links, each pair measured: `nodeweave check --node N,M`",
}


def no_format_line(verb: str, option: str) -> str:
    """The one refusal of ``-o``/``--json`` by a verb that prints no data (``NO_FORMAT``), whether click refuses the
    option (the verb has none) or the verb does (``shell`` has one, for its dry run's plan)."""
    return f"{verb} takes no {option}: {NO_FORMAT[verb]}"


# Options every verb that has them reads the same way, typed before the verb as kubectl and docker take theirs
# (`nodeweave -o json status`): the verb gets them (and refuses them, naming itself, where it has none).
VERB_OPTIONS_WITH_VALUE = ("-o", "--output", "--spec")
VERB_FLAGS = ("--json",)


def verb_options_first(argv: "list[str]") -> "list[str]":
    """``-o json status`` as ``status -o json``, and ``runs -o json ls`` as ``runs ls -o json``: the verb's own
    options, typed before it or between a group and its sub-verb, moved after it."""
    verb_option_typed_first(argv)
    argv = _leading_options_moved(argv)
    if argv[:1] and argv[0] in GROUPS:
        group_end = 1
        while group_end < len(argv) and argv[group_end] in GROUPS[argv[0]]:
            group_end += 1
        if group_end == 1:  # `runs -o json ls` (walk6 W30): the options between the group and its sub-verb
            try:
                rest = _leading_options_moved(argv[1:])
            except UsageError:  # `runs -o json`: no sub-verb follows
                example = f"nodeweave {argv[0]} {GROUPS[argv[0]][0]} {' '.join(argv[1:])}"
                raise UsageError(f"{' '.join(argv[1:])} is an option of {argv[0]}'s sub-verbs and none follows it; "
                                 f"accepted: a sub-verb ({', '.join(GROUPS[argv[0]])}) before or after it, e.g. "
                                 f"`{example}`") from None
            if rest != argv[1:] and rest[:1] and rest[0] in GROUPS[argv[0]]:
                return [argv[0], *rest]
    return argv


def _leading_options_moved(argv: "list[str]") -> "list[str]":
    """``argv`` with the verb options it starts with moved after its first word (and a group's sub-verbs)."""
    moved, index, valueless = [], 0, False
    while index < len(argv):
        word = argv[index]
        name = _option_name(word)
        if name in VERB_OPTIONS_WITH_VALUE and "=" not in word and word in VERB_OPTIONS_WITH_VALUE:
            if index + 1 >= len(argv):
                moved.append(word)  # `nodeweave -o`: no value, and no verb
                index, valueless = index + 1, True
                break
            moved += argv[index:index + 2]
            index += 2
        elif name in VERB_OPTIONS_WITH_VALUE or word in VERB_FLAGS:
            moved.append(word)
            index += 1
        else:
            break
    if not moved:
        return argv
    if index < len(argv) and argv[index] in ("--help", "-h"):
        return argv[index:]  # `nodeweave -o json --help`: the program's help, which lists the verbs
    if index >= len(argv) or argv[index].startswith("-"):  # `nodeweave -o json`: the verb is missing
        typed = " ".join(moved)
        lacking = {"-o": "json", "--output": "json", "--spec": "nodeweave.yaml"}[moved[-1]] if valueless else None
        example = f"{typed} {lacking}" if lacking else typed
        raise UsageError(f"{typed} is a verb's option and no verb follows it; accepted: a verb after it, e.g. "
                         f"`nodeweave {example} status` (`nodeweave --help` lists the verbs)")
    verb_end = index + 1
    while verb_end < len(argv) and argv[verb_end] in GROUPS.get(argv[index], ()):  # `runs ls`, `image build`
        verb_end += 1
    return [*argv[index:verb_end], *moved, *argv[verb_end:]]


def _option_name(word: str) -> str:
    """The option a word names: ``--output=json`` and ``-o=json`` name theirs, and so does a short option with its
    value attached, ``-ojson`` (click's and kubectl's attached form; walk10 A24: before the verb it was read as
    the root's own hidden ``-o`` and dropped)."""
    name = word.split("=", 1)[0]
    if not word.startswith("--") and len(name) > 2 and name[:2] in VERB_OPTIONS_WITH_VALUE:
        return name[:2]
    return name


# Options of the program itself: the only ones that stay before the verb.
ROOT_OPTIONS = ("--version", "--help", "-h")


def verb_option_typed_first(argv: "list[str]") -> None:
    """Refuse an option of a verb typed before it (``nodeweave -n ml run --dry-run``, walk10 A25), or of a sub-verb
    typed between its group and it (``nodeweave image --dry-run build``, replay11 A25), naming where it goes, where
    a (sub-)verb follows; the root and the group knew only their own options and answered "no such option". The
    options every verb reads the same way (``VERB_OPTIONS_WITH_VALUE``, ``VERB_FLAGS``) are moved, not refused
    (``verb_options_first``)."""
    group_at, start, verbs = None, 0, VERBS
    while True:
        at = _past_moved(argv, start)
        if at >= len(argv):
            return
        word = argv[at]
        if word in verbs:
            if group_at is None and word in GROUPS:  # a group: its sub-verb's options are judged the same way
                group_at, start, verbs = at, at + 1, GROUPS[word]
                continue
            return
        if not word.startswith("-") or word in ROOT_OPTIONS or word == "-":
            return
        verb_at = next((i for i in range(at, len(argv)) if argv[i] in verbs), None)
        if verb_at is None or any(typed in ROOT_OPTIONS for typed in argv[at:verb_at]):
            return
        break
    verb_end = verb_at + 1
    while group_at is None and verb_end < len(argv) and argv[verb_end] in GROUPS.get(argv[verb_at], ()):
        verb_end += 1
    above = [] if group_at is None else [argv[group_at]]
    typed = [w for i, w in enumerate(argv[:verb_at]) if i != group_at]
    verb = " ".join([*above, *argv[verb_at:verb_end]])
    example = " ".join(shlex_quote(w) for w in ["nodeweave", *above, *argv[verb_at:verb_end], *typed, *argv[verb_end:]])
    whose, goes = (("nodeweave itself", "a verb's options go after the verb") if group_at is None else
                   (f"nodeweave {above[0]}", "a sub-verb's options go after the sub-verb"))
    name = _option_name(word)
    takes = _verb_options(verb.split())
    if takes is not None and name not in takes:  # walk12 A1: the after-the-verb form was offered, then refused
        near = close_options(name, [*ROOT_OPTIONS[:1], *(o for o in takes if o.startswith("--") and o != "--help")])
        if not near:
            raise UsageError(f"no such option: {name} (neither {whose} nor {verb} takes it); "
                             f"`nodeweave {verb} --help` lists {verb}'s options")
        if near[0] in (*ROOT_OPTIONS, *VERB_OPTIONS_WITH_VALUE, *VERB_FLAGS):  # walk15 A35: as after the verb
            raise UsageError(f"no such option: {name} (did you mean {near[0]}?); `nodeweave {verb} --help` lists "
                             f"{verb}'s options")
        meant = [near[0] + w[len(name):] if w == word else w for w in typed]
        example = " ".join(shlex_quote(w) for w in ["nodeweave", *above, *argv[verb_at:verb_end], *meant,
                                                    *argv[verb_end:]])
        raise UsageError(f"no such option: {name} (did you mean {near[0]}? it is {verb}'s, after the verb: "
                         f"`{example}`)")
    raise UsageError(f"{word} is not an option of {whose}: {goes} (only -o/--output, --spec and --json may come "
                     f"before it); accepted: `{example}` (`nodeweave {verb} --help` lists {verb}'s options)")


def _verb_options(words: "list[str]") -> "list[str] | None":
    """The options of the verb ``words`` (``validate``, ``image build``), every spelling; None when it cannot be
    told."""
    from nodeweave.cli.habits.lazy import registered

    try:
        command = registered(VERBS[words[0]].module, words[0])[words[0]]
        for word in words[1:]:
            command = command.commands[word]
    except (KeyError, AttributeError, ImportError):
        return None
    return [name for param in command.params for name in (*param.opts, *param.secondary_opts)]


def _past_moved(argv: "list[str]", index: int) -> int:
    """The index of the first word at or after ``index`` that is not an option ``verb_options_first`` moves."""
    while index < len(argv):
        word = argv[index]
        name = _option_name(word)
        if name in VERB_OPTIONS_WITH_VALUE and "=" not in word and word in VERB_OPTIONS_WITH_VALUE:
            index += 2
        elif name in VERB_OPTIONS_WITH_VALUE or word in VERB_FLAGS:
            index += 1
        else:
            break
    return index


def shlex_quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


# Verbs that are groups, and their sub-verbs: options typed before the group go after the sub-verb.
GROUPS = {"runs": ("ls", "show", "compare"), "image": ("build", "variants"), "hosts": ("probe",)}


from nodeweave.cli.habits.invocation import AS_PROGRAM, INVOKED, as_program, invoked_argv  # noqa: E402,F401


def _error(line) -> None:
    """One error line on stderr: a byte that is not UTF-8 as the shell writes it, and a character no terminal shows
    as itself (a right-to-left override, a control character) as Python writes it (usertext.visible)."""
    typer.echo(f"nodeweave: error: {shell_shown(visible(digits_hint(str(line))))}", err=True)


def digits_hint(line: str) -> str:
    """``line`` with, when it quotes a number written in another script's digits (``'٣٠'``, which every reader of a
    number refuses: ``contract.digits``), the number to type instead: one wording for every refusal of one
    (walk13 A22)."""
    from nodeweave.entrypoint.planning.contract import ascii_spelling

    for word in re.findall(r"'([^']*)'", line):
        spelt = ascii_spelling(word)
        if spelt is not None:
            said = f"nodeweave reads numbers in ASCII digits only: type {spelt} for {word}"
            head, sep, tail = line.partition("; `nodeweave ")  # before click's "`... --help` lists what is accepted"
            return f"{head}; {said}{sep}{tail}"
    return line


def main(argv: "list[str] | None" = None) -> int:
    """Run the CLI; user errors print one message and exit with their code.

    Called as the program (no ``argv``), everything it made is frozen for the garbage collector at
    the end, so the interpreter's exit skips one last look at every object (~20 ms of a short call,
    docs/benchmarks.md); atexit handlers and threads end as usual, and ``render --check`` may answer
    from its memo (``nodeweave.rendering.memo``). With ``argv`` (tests, embedding) nothing is frozen
    and the memo is off.
    """
    if argv is not None:
        return _main(list(argv))
    from nodeweave.entrypoint.errors import stdout_closed  # one rule for both programs

    closed = stdout_closed("nodeweave")
    if closed is not None:
        return closed
    AS_PROGRAM[:] = [True]
    from nodeweave import endings
    from nodeweave.usertext import people_stream

    endings.install()  # SIGTERM, SIGHUP and a closed stdout end a verb as its Ctrl-C does (walk16a A1, A2, A17)

    stderr = sys.stderr
    sys.stderr = people_stream(stderr)  # a byte that is not UTF-8 is said as the shell writes it, $'\xff'
    if hasattr(sys.stdout, "reconfigure"):  # ... and printed as the byte itself, whatever the locale's handler
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        code = _main(sys.argv[1:])
        sys.stdout.flush()  # here, so a full disk is met inside the guard, not by the interpreter's exit
        return code
    except (KeyboardInterrupt, OSError) as err:  # a closed pipe, a full disk, Ctrl-C before a verb's own handler
        from nodeweave.entrypoint.errors import ended_by  # one rule for both programs (imported only here)

        if isinstance(err, KeyboardInterrupt):  # before the plan's first step: said, as a step's is (walk12c C15)
            _interrupted_early()

        return ended_by(err, "nodeweave", EXIT_FAILURE, pipe_closed=EXIT_FAILURE)  # click ends EPIPE with 1 too
    finally:
        if sys.stderr is not stderr:
            sys.stderr.flush()
            sys.stderr.detach()  # the wrapper shares stderr's buffer: never let it close that
            sys.stderr = stderr
        AS_PROGRAM.clear()  # a later main(argv) in this process (a test after one that ran the program) is not it
        import gc

        gc.freeze()


# Verbs whose own report grades an unknown NODEWEAVE_* variable (a finding with what to do): the warning line is
# theirs, so it is not said twice (`doctor` read this shell's variables as the entrypoint would and said each
# twice). Each: argv -> whether this call makes that report (doctor's --cluster, --dry-run, --capture do not).
REPORT_VARIABLES_ITSELF = {
    "doctor": lambda argv: not {"--cluster", "--dry-run", "--capture", "--help", "-h"} & {
        word.split("=", 1)[0] for word in argv},
}


# Verbs (and the flags that make them so) that read this environment as the node's own, as the entrypoint here
# would (doctor --cluster asks node 0's exchange with this node's job id, token and master: doctor/cluster.py,
# survey_here): the nodes' variables are read here, and "neither reads it nor passes it on" told a user to drop
# NODEWEAVE_JOB_ID, the one variable that found the job (walk11b B19).
READS_NODE_VARIABLES = {
    "doctor": lambda argv: "--cluster" in {word.split("=", 1)[0] for word in argv},
}


def _warn_unknown_variables(argv: "list[str]") -> None:
    """One line per NODEWEAVE_* variable neither program knows (the entrypoint's list, one for both), and one per
    variable only the nodes read (``habits.variables.node_variables``): a mistyped name, or one this command
    ignores, is said, never silently ignored, and said once."""
    if not any(name.upper().startswith("NODEWEAVE_") for name in os.environ):  # nodeweave_x too (walk18b B12)
        return
    reports_itself = REPORT_VARIABLES_ITSELF.get(argv[0] if argv else "")
    if reports_itself is not None and reports_itself(argv[1:]):
        return
    from nodeweave.cli.habits.variables import CLI_VARIABLES, node_variable_lines
    from nodeweave.entrypoint.planning.variables import unknown_lines

    as_a_node = READS_NODE_VARIABLES.get(argv[0] if argv else "")
    as_a_node = as_a_node is not None and as_a_node(argv[1:])
    # a verb that plans as this node reads every node variable: none is "not read here" (walk11b B19)
    listed = ("`nodeweave --help` lists the variables this command reads, under Environment; "
              "`nodeweave-entrypoint --help` those the nodes read")
    for line in unknown_lines(os.environ, read_here=None if as_a_node else CLI_VARIABLES, listed=listed):
        typer.echo(f"nodeweave: warning: {visible(line)}", err=True)
    for line in ([] if as_a_node else node_variable_lines()):  # a right name ignored here: said (walk6 W13)
        typer.echo(f"nodeweave: warning: {visible(line)}", err=True)


COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")  # typer's completion classes
COMPLETION_INSTRUCTIONS = ("source", "complete")


def completion_instruction(value: str) -> "str | None":
    """$_NODEWEAVE_COMPLETE as typer reads it (``source_bash``: instruction first), from either order: click 8 and
    typer document ``bash_source`` too (walk7 A53: it answered "Shell source not supported."). None: neither."""
    first, _, second = value.partition("_")
    if first in COMPLETION_INSTRUCTIONS and second in COMPLETION_SHELLS:
        return value
    if first in COMPLETION_SHELLS and second in COMPLETION_INSTRUCTIONS:
        return f"{second}_{first}"
    return None


# The verb this call runs (its first two words, `image build`), for the line a Ctrl-C before its plan says.
CALLED: "list[str]" = []
# The verbs whose plan nodeweave.cluster.execute runs, and what a Ctrl-C before the plan's first step left undone:
# nothing, as yet (walk12c C15: `down`, `sync` and `exec` interrupted while they planned exited 130 with no word, the
# nodes as they were). Once a step began, it says its own line (execute.interrupted_line, or the verb's own).
BEFORE_FIRST_STEP = {"up": "nothing was started", "down": "nothing was taken down", "sync": "nothing was sent",
                     "exec": "no command was started on any node", "run": "no run was started",
                     "check": "no check was started", "stop": "nothing was stopped", "shell": "no shell was opened",
                     "render": "no file was written", "image build": "nothing was built"}


def interrupted_early(called: "list[str]", begun: bool) -> str:
    """The line for a Ctrl-C that ended the verb ``called`` (its first words) before its plan's first step ("" where
    a step began, ``begun``: that step said its own; or for a verb whose plan is not run by execute)."""
    verb = " ".join(called[:2]) if called[:1] == ["image"] else " ".join(called[:1])
    if begun or verb not in BEFORE_FIRST_STEP:
        return ""
    return (f"interrupted: {verb} stopped while it was still planning, before its first step: "
            f"{BEFORE_FIRST_STEP[verb]}; `nodeweave {verb}` again starts it over")


def _interrupted_early() -> None:
    """Say :func:`interrupted_early`'s line. Nothing is imported here: the Ctrl-C may have landed inside an import
    (a module half made), so the plan module is only looked at when it is loaded (not loaded: no step began)."""
    running = sys.modules.get("nodeweave.cluster.execute")
    try:
        line = interrupted_early(CALLED, bool(getattr(running, "BEGUN", None)))
        if line:
            print(f"nodeweave: {line}", file=sys.stderr, flush=True)
    except (KeyboardInterrupt, OSError, ValueError):  # a second Ctrl-C, or stderr gone: the exit code says it
        pass


def asks_for_help(argv: "list[str]") -> bool:
    """Whether this call only prints help (``--help``/``-h`` before any ``--``, ``nodeweave help VERB``, or no
    words at all): the start-up checks of the environment are for a verb that acts, and help prints only help, as
    git's, kubectl's and click's do (walk16b B1: ten NODEWEAVE_* warnings under `status --help`)."""
    words = argv[:argv.index("--")] if "--" in argv else argv
    return not argv or argv[:1] == ["help"] or bool({"--help", "-h"} & set(words))


def _main(argv: "list[str]") -> int:
    if os.environ.get(COMPLETE_VAR):  # the shell asks for completions: click's own mechanism, typer's shells
        instruction = completion_instruction(os.environ[COMPLETE_VAR])
        if instruction is None:
            typer.echo(f"nodeweave: error: {COMPLETE_VAR}={os.environ[COMPLETE_VAR]!r} is not accepted: "
                       f"{COMPLETE_VAR} takes source_bash, source_zsh or source_fish (bash_source, zsh_source, "
                       "fish_source too), e.g. eval \"$(_NODEWEAVE_COMPLETE=source_bash nodeweave)\"", err=True)
            return EXIT_USAGE
        os.environ[COMPLETE_VAR] = instruction
        from typer._completion_classes import completion_init

        completion_init()
    try:
        moved, refusal = verb_options_first(argv), None
    except NodeweaveError as err:
        moved, refusal = argv, err
    if COMPLETE_VAR not in os.environ and not asks_for_help(moved):
        _warn_unknown_variables(moved)
        from nodeweave.cli.habits.variables import variable_problem

        empty = variable_problem()
        if empty:  # one rule for every variable the CLI reads, before any verb reads one its own way
            _error(empty)
            return EXIT_USAGE
    if refusal is not None:
        _error(refusal)
        return refusal.exit_code
    argv = moved
    CALLED[:] = [word for word in argv[:2]]
    if argv[:1] in (["sync"], ["bench"]):
        from nodeweave.cli.habits.spellings import upgrade

        argv = upgrade(argv)
    if argv[:1] == ["bench"]:
        from nodeweave.cli.bench import upgrade_old_spelling

        argv = ["bench", *upgrade_old_spelling(argv[1:])]
    if argv[:1] == ["help"]:  # `nodeweave help [VERB ...]`: that verb's help, as git and pip give it
        argv = [*[word for word in argv[1:] if word != "help"], "--help"]
    INVOKED[:] = argv
    try:
        # with standalone_mode=False, a command's typer.Exit(code) comes back as the return value
        result = app(args=argv, prog_name="nodeweave", standalone_mode=False)
    except NodeweaveError as err:
        for line in str(err).splitlines() or [""]:  # several mistakes (a spec's): each line stands on its own
            _error(line)
        return err.exit_code
    except typer.Exit as ex:
        return ex.exit_code
    except OSError as err:  # a tool or path no verb checked first: still one line, never a traceback
        from nodeweave.entrypoint.errors import is_output_failure
        from nodeweave.failures import from_os_error

        if isinstance(err, BrokenPipeError) or is_output_failure(err):
            raise  # stdout itself failed: main's guard ends it quietly or in one line

        problem = from_os_error(err)
        _error(problem)
        return problem.exit_code
    except typer.Abort:
        typer.echo("nodeweave: aborted", err=True)
        return 130
    except UnicodeError as err:  # a text no reader or printer above handled: still one line, never a traceback
        from nodeweave.entrypoint.bounded import NotText

        said = str(err) if isinstance(err, NotText) else (
            f"{err}: what you gave (an argument, a folder's or a file's name, a file of yours) holds bytes that are "
            "not UTF-8 text here; save or rename it as UTF-8")
        _error(said)
        return EXIT_USAGE
    except Exception as err:  # click's usage errors arrive here with standalone_mode=False
        line = _click_error_line(err)
        if line is None:
            raise
        if line[0]:
            typer.echo(shell_shown(visible(digits_hint(line[0]))), err=True)
        return line[1]
    if result == EXIT_INTERRUPTED:  # typer turns a Ctrl-C into exit 130, returned: said before a plan's first step
        _interrupted_early()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
