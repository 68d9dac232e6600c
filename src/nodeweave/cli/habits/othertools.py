"""Words other tools' users type for what nodeweave spells otherwise: each refusal names nodeweave's spelling.

Why: kubectl, helm, gh and podman users type ``X completion bash``, ``-f FILE`` for the file a command works from,
``--context`` for the kubeconfig context; nodeweave said only "no such command" or "no such option" (walk9 A1,
A10). One table of verbs (by group) and one of options, read where click's refusal is worded (``base.NodeweaveGroup`` and
``base.NodeweaveCommand``); a spelling is named only where nodeweave's own exists on that command.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

COMPLETION = ('shell completion is a variable, not a verb: eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)", '
              "source_zsh or source_fish for those shells, as README says")
# The verbs other tools' users type (docker, podman, kubectl, helm, gh), by group, and nodeweave's for them: said in
# place of a spelling-near guess that leads elsewhere (walk9 A33: `start` was told 'status', `ls` 'logs'; A1:
# `completion` was "no such command" with nothing leading to the recipe).
HABITS: Dict[str, Dict[str, str]] = {
    "nodeweave": {
        "completion": COMPLETION,
        "start": "`nodeweave up` starts the nodes (`up --run` the script too; `run` starts it on nodes already up)",
        "create": "`nodeweave up`", "apply": "`nodeweave up` (it starts the spec's job)",
        "restart": "`nodeweave stop` ends the run, `nodeweave run` starts the script again",
        "kill": "`nodeweave stop` (the run) or `nodeweave down` (the nodes)",
        "rm": "`nodeweave down`", "delete": "`nodeweave down` (it removes the job's nodes)",
        "ps": "`nodeweave status`", "get": "`nodeweave status`", "describe": "`nodeweave status`",
        "ls": "`nodeweave runs ls` (past runs) or `nodeweave status` (the nodes)", "list": "`nodeweave runs ls`",
        "attach": "`nodeweave logs -f` or `nodeweave shell`", "version": "`nodeweave --version`",
        "build": "`nodeweave image build`", "push": "`nodeweave image build --push`",
        "images": "`nodeweave image variants`",
    },
    "image": {"ls": "`nodeweave image variants`", "list": "`nodeweave image variants`"},
    "runs": {verb: ("the run folders are plain folders: delete one yourself (rm -r runs/<RUN>; `nodeweave runs ls` "
                    "names them)") for verb in ("rm", "delete", "prune")},
}
# option typed: (nodeweave's option on the same command, whose habit it is)
OPTIONS: Dict[str, "tuple[str, str]"] = {
    "-f": ("--spec", "the file a command works from, as kubectl apply -f, docker compose -f, helm -f"),
    "--file": ("--spec", "the file a command works from, as docker compose --file"),
    "--filename": ("--spec", "the file a command works from, as kubectl apply --filename"),
    "--context": ("--kube-context", "the kubeconfig context, as kubectl --context"),
}


def verb_hint(group: str, typed: str) -> str:
    """": nodeweave's word for it: HINT" for a verb of another tool's habit typed in ``group``, else ""."""
    said = HABITS.get(group, {}).get(typed)
    return f": nodeweave's word for it: {said}" if said else ""


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
