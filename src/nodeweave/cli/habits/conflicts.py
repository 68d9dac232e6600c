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
}
# (flag, flag): the second makes the first do nothing.
IDLE_WITH: Dict[Tuple[str, str], str] = {
    ("--delete", "--check"): "--check moves and deletes nothing",
    ("--compress", "--check"): "--check moves nothing",
    # top and dashboard: --url reads that address, so nothing that picks or reaches a node of the cluster is used
    ("--node", "--url"): "--url reads the picture there, not from a node of the cluster",
    ("--timeout", "--no-wait"): "--timeout is how long up waits for the nodes, and --no-wait does not wait",
    ("--quiet", "--detach"): "--detach shows no output to quiet: `nodeweave logs -f --run ID` shows it",
    **{(flag, "--url"): "--url reads the picture there, not through the cluster" for flag in (
        "--target --engine --host --hosts-file --remote-dir --namespace --kube-cli --kube-context --overlay "
        "--ssh-option").split()},  # the reach flags (clusteropts.REACH_FLAGS declares them, once)
}
# verb: {(flag, flag): why}: as EXCLUSIVE, on that verb only (`status --hosts-file h --node 1` picks node 1 of the
# hosts; `hosts probe` takes its hosts from either, and would probe both lists as one).
EXCLUSIVE_ON: Dict[str, Dict[Tuple[str, str], str]] = {
    "probe": {("--node", "--hosts-file"): "both name the hosts to probe"},
}
# verb: {(flag, flag): why}: as IDLE_WITH, on that verb only. None now: a dry run of a forced write (``render``,
# ``init``, ``hosts probe --write-hostfile``) shows what --force would replace, and without --force refuses the
# existing file as the real run does (walk5 W80, W81), so --force is never idle with --dry-run.
IDLE_WITH_ON: Dict[str, Dict[Tuple[str, str], str]] = {}
# flag: (the flag it needs, what it is): without that flag it does nothing.
NEEDS: Dict[str, Tuple[str, str]] = {
    "--replicas": ("--statefulset", "the pod count of --statefulset"),
}

# verb: {flag: (the flag it needs, what it is)}: as NEEDS, on that verb only (`runs compare --lower-is-better` ranks
# by the metric a sweep recorded; `run` has only its own --metric to rank by).
NEEDS_ON: Dict[str, Dict[str, Tuple[str, str]]] = {
    "run": {"--lower-is-better": ("--metric", "which way --metric's values rank the sweep's points")},
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
    for flag, (needed, what) in {**NEEDS, **NEEDS_ON.get(verb, {})}.items():
        if flag in given and needed not in given:
            raise UsageError(f"{flag} does nothing without {needed} (it is {what}): give {needed} too, or leave "
                             f"{flag} out")
