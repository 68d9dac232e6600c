"""Words other tools' users type for what nodeweave spells otherwise: each refusal names nodeweave's spelling.

Why: kubectl, helm, gh and podman users type ``X completion bash``, ``-f FILE`` for the file a command works from,
``--context`` for the kubeconfig context; nodeweave said only "no such command" or "no such option" (walk9 A1,
A10). One table of verbs and one of options, read where click's refusal is worded (``base.NodeweaveGroup`` and
``base.NodeweaveCommand``); a spelling is named only where nodeweave's own exists on that command.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

COMPLETION = ('shell completion is a variable, not a verb: eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)", '
              "source_zsh or source_fish for those shells, as README says")
# verb typed: what to type instead (a whole hint), for verbs nodeweave has under another name or as a flag
VERBS: Dict[str, str] = {
    "completion": COMPLETION,
    "version": "did you mean `nodeweave --version`?",
    "apply": "did you mean `nodeweave up`? (it starts the spec's job)",
    "ps": "did you mean `nodeweave status`?",
    "get": "did you mean `nodeweave status`?",
    "delete": "did you mean `nodeweave down`? (it removes the job's nodes)",
}
# option typed: (nodeweave's option on the same command, whose habit it is)
OPTIONS: Dict[str, "tuple[str, str]"] = {
    "-f": ("--spec", "the file a command works from, as kubectl apply -f, docker compose -f, helm -f"),
    "--file": ("--spec", "the file a command works from, as docker compose --file"),
    "--context": ("--kube-context", "the kubeconfig context, as kubectl --context"),
}


def verb_hint(typed: str) -> str:
    """" (HINT)" for a verb of another tool's habit, else ""."""
    return f" ({VERBS[typed]})" if typed in VERBS else ""


def option_hint(command, typed: str, args: Sequence[str]) -> str:
    """" (did you mean --spec nodeweave.yaml?)" for an option of another tool's habit whose nodeweave spelling
    ``command`` has, with the value typed after it; else ""."""
    name = typed.partition("=")[0]
    if name not in OPTIONS:
        return ""
    ours, habit = OPTIONS[name]
    if not any(ours in getattr(param, "opts", ()) for param in command.params):
        return ""
    value = _value_after(list(args), name)
    return f" (did you mean {ours}{' ' + value if value else ''}? {ours} is {habit})"


def _value_after(args: List[str], name: str) -> str:
    for i, word in enumerate(args):
        if word == "--":
            return ""
        if word == name and i + 1 < len(args) and not args[i + 1].startswith("-"):
            return args[i + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return ""
