"""Flags that contradict each other, or one that does nothing without another: one table, one wording, every verb.

Why: click takes each flag on its own, so ``--host gpu01 --hosts-file hosts.txt`` was read as one list (and
refused as gpu01 "given 2 times"), ``sync --check --delete`` deleted nothing without a word, and
``--replicas`` without ``--statefulset`` was dropped. A verb that has both flags of a row gets the row's
refusal before anything is read (``NodeweaveCommand.parse_args``); tests/test_walk_classes.py walks every
verb against this table. Flags that do nothing for the chosen *target* are judged once the target is known
(``nodeweave.cluster.options.refuse_idle_flags``).
"""

from __future__ import annotations

from typing import Dict, Iterable, Sequence, Tuple

# (flag, flag): both say the same thing two ways; only one may be given.
EXCLUSIVE: Dict[Tuple[str, str], str] = {
    ("--host", "--hosts-file"): "both name the hosts (node 0 first)",
    ("--statefulset", "--selector"): "both pick the pods to sync (the selector would win, silently)",
    ("--nodes", "--node"): "both pick the nodes the job starts on (--nodes N is --node 0-(N-1))",
    ("--tar", "--method"): "both pick how files are sent (--tar is --method tar)",
    # sync's targets named directly: one kind per call (docs/sync.md), never one silently winning
    ("--statefulset", "--compose-project"): "both name the targets to sync",
    ("--selector", "--compose-project"): "both name the targets to sync",
    ("--hosts-file", "--statefulset"): "both name the targets to sync",
    ("--hosts-file", "--selector"): "both name the targets to sync",
    ("--hosts-file", "--compose-project"): "both name the targets to sync",
    # sync: credentials travel only over each target's own exec channel; --relay sends every payload between
    # targets over TCP unencrypted (walk5 W34)
    ("--include-secrets", "--relay"): "contradict: --relay forwards the payload, and the credentials "
                                      "--include-secrets adds, between targets unencrypted",
}
# The reach flags (clusteropts.REACH_FLAGS declares them, once): how a verb reaches the cluster's nodes.
REACH = ("--target --engine --host --hosts-file --remote-dir --namespace --kube-cli --kube-context --overlay "
         "--ssh-option").split()
# (flag, flag): the second makes the first do nothing.
IDLE_WITH: Dict[Tuple[str, str], str] = {
    ("--delete", "--check"): "--check moves and deletes nothing",
    ("--compress", "--check"): "--check moves nothing",
    ("--compress", "--tar"): "--tar never runs rsync, and -z is rsync's compression",
    ("--relay", "--check"): "--check moves nothing to relay",
    ("--shared", "--check"): "--check writes nothing, and compares every target",
    ("--method", "--check"): "--check moves nothing, so no way of sending is used",  # walk7 A25
    ("--tar", "--check"): "--check moves nothing, so no way of sending is used",
    # top and dashboard: --url reads that address, so nothing that picks or reaches a node of the cluster is used
    ("--node", "--url"): "--url reads the picture there, not from a node of the cluster",
    ("--timeout", "--no-wait"): "--timeout is how long up waits for the nodes, and --no-wait does not wait",
    ("--quiet", "--detach"): "--detach shows no output to quiet: `nodeweave logs -f --run ID` shows it",
    **{(flag, "--url"): "--url reads the picture there, not through the cluster" for flag in REACH},
}
# dashboard and logs --run read a run's folder on this machine: nothing of the running job is read (walk5, W26, W31)
_FROM_THE_FOLDER = {(flag, "--run"): "--run reads the run's folder on this machine; no node is reached"
                    for flag in (*REACH, "--node", "--url")}
# verb: {(flag, flag): why}: as EXCLUSIVE, on that verb only (`status --hosts-file h --node 1` picks node 1 of the
# hosts; `hosts probe` takes its hosts from either, and would probe both lists as one).
EXCLUSIVE_ON: Dict[str, Dict[Tuple[str, str], str]] = {
    "probe": {("--node", "--hosts-file"): "both name the hosts to probe"},
}
# verb: {(flag, flag): why}: as IDLE_WITH, on that verb only. Never --force with --dry-run: a dry run of a forced
# write (``render``, ``init``, ``hosts probe --write-hostfile``) shows what --force would replace, and without
# --force refuses the existing file as the real run does (walk5 W80, W81).
IDLE_WITH_ON: Dict[str, Dict[Tuple[str, str], str]] = {
    "dashboard": {**_FROM_THE_FOLDER,
                  ("--interval", "--run"): "--run shows a run's folder; --interval is how often node 0 is read"},
    "logs": {**{pair: why for pair, why in _FROM_THE_FOLDER.items() if pair[0] != "--node"},  # a folder's node-i.log
             ("--container", "--run"): "--run reads the run folder's node logs; --container the live containers'"},
    "top": {("--interval", "--once"): "--once reads node 0 one time; --interval is the time between readings",
            ("--interval", "--json"): "--json prints node 0's /status.json one time; --interval is the time between "
                                      "readings"},
}
# (flag, option): {values of option: why}: the flag does nothing when the option has one of these values
# (``sync -z --method stream``: rsync never runs, walk5 W35).
IDLE_WITH_VALUE: Dict[Tuple[str, str], Dict[str, str]] = {
    ("--compress", "--method"): {"stream": "a stream never runs rsync, and -z is rsync's compression",
                                 "tar": "tar never runs rsync, and -z is rsync's compression"},
}
# verb: {(flag, option): {values: why}}: as IDLE_WITH_VALUE, on that verb only (walk10 B12: `top -o json --interval 5`
# printed once and said nothing of --interval, while `--once --interval` was refused).
_READ_ONCE = "it prints node 0's /status.json one time; --interval is the time between readings"
_NAMES_ALONE = "-o name prints each node that answers by name alone"
IDLE_WITH_VALUE_ON: Dict[str, Dict[Tuple[str, str], Dict[str, str]]] = {
    "top": {("--interval", "--output"): {"json": _READ_ONCE, "yaml": _READ_ONCE}},
    # walk18a A22: `status -o name --fingerprints` printed the names and asked for nothing more, without a word
    "status": {(flag, "--output"): {"name": f"{_NAMES_ALONE}; {flag} adds {what} to the table and the data"}
               for flag, what in (("--fingerprints", "every node's fingerprint"), ("--ranks", "every rank"),
                                  ("--stacks", "every rank's stack"))},
}
# flag: (the flag it needs, what it is): without that flag it does nothing.
NEEDS: Dict[str, Tuple[str, str]] = {
    "--replicas": ("--statefulset", "the pod count of --statefulset"),
}

# verb: {flag: (the flag it needs, what it is)}: as NEEDS, on that verb only (`runs compare --lower-is-better` ranks
# by the metric a sweep recorded; `run` has only its own --metric to rank by). "A or B": either one.
NEEDS_ON: Dict[str, Dict[str, Tuple[str, str]]] = {
    # --force replaces an earlier output the option names (habits.replace.refuse_foreign_file; replay11 A27)
    "bench": {"--force": ("--json-out or --plot", "what replaces an earlier result or chart there")},
    "compare": {"--force": ("--chart", "what replaces an earlier chart there")},
    "run": {"--lower-is-better": ("--metric", "which way --metric's values rank the sweep's points")},
    "dashboard": {"--runs-dir": ("--run", "where --run's folder is")},
}


def given_flags(command, words: Sequence[str]) -> "set[str]":
    """The long names of the options of ``command`` that appear in ``words`` (as ``--x``, ``--x=v`` or a short ``-x``);
    the off side of an on/off flag as itself (``--no-wait``)."""
    found = set()
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option":
            continue
        names = [*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())]
        longest = max(getattr(param, "opts", ()) or names, key=len)
        for word in words:
            if any(word == name or (name.startswith("--") and word.startswith(name + "=")) for name in names):
                said = word.split("=", 1)[0]
                found.add(said if said in getattr(param, "secondary_opts", ()) else longest)  # --no-wait as itself
    return found


def refuse_conflicts(command, words: Iterable[str]) -> None:
    """The one refusal (exit 2) for the first row of the tables that the given flags meet."""
    from nodeweave.errors import UsageError

    words = list(words)
    words = words[:words.index("--")] if "--" in words else words
    given = given_flags(command, words)
    verb = getattr(command, "name", None) or ""
    for (first, second), why in {**EXCLUSIVE, **EXCLUSIVE_ON.get(verb, {})}.items():
        if first in given and second in given:
            raise UsageError(f"{first} and {second} {why}: give one of them")
    idle = {**IDLE_WITH, **IDLE_WITH_ON.get(verb, {})}
    for (flag, other), why in idle.items():
        if flag in given and other in given:
            raise UsageError(f"{flag} does nothing with {other} ({why}): give one of them")
    for (flag, option), values in {**IDLE_WITH_VALUE, **IDLE_WITH_VALUE_ON.get(verb, {})}.items():
        value = next((v for v in (option_value(words, name) for name in _spellings(command, option)) if v), None) \
            if flag in given and option in given else None
        if value in values:
            raise UsageError(f"{flag} does nothing with {option} {value} ({values[value]}): leave {flag} out, or "
                             f"give another {option}")
    for flag, (needed, what) in {**NEEDS, **NEEDS_ON.get(verb, {})}.items():
        if flag in given and not given & set(needed.split(" or ")):  # "--json-out or --plot": either will do
            raise UsageError(f"{flag} does nothing without {needed} (it is {what}): give {needed} too, or leave "
                             f"{flag} out")


def refuse_two_formats(command, ctx) -> None:
    """``--json`` with another ``-o``, refused as the command line is read on every verb that has both (walk9 A2:
    bench printed JSON and dropped ``-o yaml``; shell and sync read the format only on a dry run): the one rule
    of ``output.data_format``, applied before the verb runs. An ``-o table`` the user typed is another ``-o`` too
    (walk10 A2: ``validate --json -o table`` printed JSON and dropped it); only the default gives way to --json."""
    from nodeweave.cli.habits.output import data_format

    params = ctx.params
    names = {opt: param.name for param in command.params for opt in getattr(param, "opts", ())}
    if "--json" in names and "--output" in names:
        source = ctx.get_parameter_source(names["--output"])
        typed = source is not None and getattr(source, "name", "") in ("COMMANDLINE", "ENVIRONMENT")
        output = params.get(names["--output"]) or "table"
        # -o name on a verb of output.NAME_LISTS only (walk11 A10, walk12 A7)
        data_format(bool(params.get(names["--json"])), output, typed=typed, command=command.name)


def _spellings(command, option: str) -> "list[str]":
    """Every name of the option whose long name is ``option`` (``--output`` and ``-o``)."""
    for param in getattr(command, "params", ()):
        if option in getattr(param, "opts", ()):
            return list(param.opts)
    return [option]


def option_value(words: Sequence[str], option: str) -> "str | None":
    """The last value given to ``option`` in ``words`` (``--method tar`` or ``--method=tar``), or None."""
    found = None
    for i, word in enumerate(words):
        if word == option and i + 1 < len(words):
            found = words[i + 1]
        elif word.startswith(option + "="):
            found = word.split("=", 1)[1]
    return found
