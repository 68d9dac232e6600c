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
IMAGE_REMOVAL = ("none: nodeweave removes no image; `podman rmi localhost/nodeweave/<job>:<variant>` (or docker rmi) "
                 "does, and `podman images | grep nodeweave` lists them")
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
        "images": "`nodeweave image variants`", "rmi": IMAGE_REMOVAL,
        "diff": "`nodeweave render --diff` prints what a render would change in each file, as kubectl diff",
    },
    # walk14a A19: docker/podman image's verbs (push, rm, rmi, prune) were "no such command" while `ls` was answered
    "image": {"ls": "`nodeweave image variants`", "list": "`nodeweave image variants`",
              "push": ("`nodeweave image build VARIANT --push`: the push is part of the build (it tags "
                       "<registry>/<name>:<variant>-<git sha> and :<variant>, and records the digest)"),
              **{verb: IMAGE_REMOVAL for verb in ("rm", "rmi", "delete", "remove", "prune")}},
    "runs": {verb: ("the run folders are plain folders: delete one yourself (rm -r runs/<RUN>; `nodeweave runs ls` "
                    "names them)") for verb in ("rm", "delete", "prune")},
}
# option typed: (nodeweave's option on the same command, whose habit it is)
OPTIONS: Dict[str, "tuple[str, str]"] = {
    "-f": ("--spec", "the file a command works from, as kubectl apply -f, docker compose -f, helm -f"),
    "--file": ("--spec", "the file a command works from, as docker compose --file"),
    "--filename": ("--spec", "the file a command works from, as kubectl apply --filename"),
    "--context": ("--kube-context", "the kubeconfig context, as kubectl --context"),
    "-V": ("--version", "the version, as python -V and pip -V print it"),  # walk15 A35
    # walk10 C14: the daily docker/kubectl/tail spellings, each named where nodeweave's own is on that command
    "-F": ("--follow", "following the log as it grows (-f), as tail -F"),
    "-v": ("--delete-claims", "what also deletes the job's workspace claims (Kubernetes), as docker compose down -v "
           "deletes volumes"),
    "--volumes": ("--delete-claims", "what also deletes the job's workspace claims (Kubernetes), as docker compose "
                  "down --volumes deletes volumes"),
    "--previous": ("--run", "an earlier run's logs (its id from `nodeweave runs ls`, or last), as kubectl logs "
                   "--previous"),
    "--since-time": ("--since", "the containers' logs since a time (--since 2026-11-30T21:00:00Z, RFC 3339, as "
                     "kubectl logs --since-time; a duration too, 5m)"),
    "--timestamps": ("--since", "the engine's log of a window of time (with --container); a run's log lines carry "
                     "no time, so the run folder's logs have no --timestamps"),
}
# option typed on a command (by its name): nodeweave's word for it, where that command has no option for it but
# another verb or option does the job (walk10 C14: `status -w` is kubectl get -w's watch, which `top` is)
ELSEWHERE: Dict["tuple[str, str]", str] = {
    **{("status", typed): "`nodeweave top` redraws the running job (nodes, ranks, step), as kubectl get -w watches"
       for typed in ("-w", "--watch")},
    **{("ls", typed): "`nodeweave runs ls -o name` prints the runs' ids alone, one a line, as docker ps -q does"
       for typed in ("-q", "--quiet", "--no-headers")},
    # replay11 C14: docker's and kubectl's `exec -it` is an interactive shell, which `nodeweave shell` opens
    **{("exec", typed): "`nodeweave shell` opens an interactive shell on a node, as docker exec -it and kubectl "
                        "exec -it do; exec runs one command and gives back its output and exit code"
       for typed in ("-i", "-it", "--interactive", "--tty", "--stdin")},  # -t is exec's --target
    # walk15 A30: kubectl run's --image habit; the nodes' image is chosen where they start
    ("run", "--image"): "the image is the nodes', chosen as they start: `nodeweave up --image REF` (compose targets; "
                        "`nodeweave image build` builds the spec's variant); run uses the nodes already up",
    # walk13 A4: docker compose up's habits
    **{("up", typed): "`nodeweave up` already returns once every node is up, as docker compose up -d does "
                      "(--no-wait returns at once, without waiting); the nodes run on in the background"
       for typed in ("-d", "--detach")},
    ("up", "--build"): "`nodeweave image build` builds the image first (the spec's variant), and `up --image REF` "
                       "runs one built already; up builds nothing itself",
    ("up", "--scale"): "the spec's nodes says how many nodes up starts (N, or MIN:MAX for an elastic job); "
                       "`nodeweave run --nodes 2` runs a run on the first two of them",
    ("logs", "-t"): "-t is --target here (local, hosts, slurm, kubernetes); docker logs -t's timestamps: a run's log "
                    "lines carry no time, and --since picks a window of them",
    # walk16a A25: docker ps -a, compose down --remove-orphans and docker logs --until, answered with what nodeweave does
    **{("status", typed): "`nodeweave status` already lists every node of the spec, a stopped or missing one too "
                          "(as down), as docker ps -a does" for typed in ("-a", "--all")},
    ("down", "--remove-orphans"): "`nodeweave down` takes down the nodes and network `up` made from the spec as it is "
                                  "now; a node an earlier spec with more nodes made is not in it: `podman ps -a` (or "
                                  "docker ps -a) lists it, `podman rm -f NAME` removes it",
    ("logs", "--until"): "a run's log lines carry no time, so no window ends earlier than now: --since DURATION takes "
                         "the last DURATION, --tail N each node's last N lines; the engine's own `podman logs --since "
                         "T --until T NAME` (or docker's) cuts a container's log at a time",
    # walk13 A9: a GPU cluster's spec written from a machine without GPUs (init detects this machine's)
    **{("init", typed): "init writes what it detects: for a GPU cluster's spec from a machine without GPUs, "
                        "`init --host GPU-HOST` probes a GPU node, `init --sysroot DIR` reads a `nodeweave doctor "
                        "--capture` of one, or edit image.variant and gpus_per_node (torchrun's --nproc-per-node) "
                        "in the spec it writes"
       for typed in ("--variant", "--gpus", "--gpus-per-node", "--nproc-per-node", "--nproc", "--image")},
}


# nodeweave's own spellings of the hosts a verb reaches, which differ by verb (walk16a A7, A22): init, up, sync and
# check take --host (and, but init, --hosts-file); hosts probe names its hosts with --node, as every verb names a
# node. One typed on a verb that spells them otherwise, or a near typo of one (--hots), gets that verb's spelling.
HOST_SPELLINGS: Dict[str, str] = {"--host": "--host HOST", "--node": "--node HOST", "--hosts-file": "--hosts-file FILE"}
# Other tools' plural (walk17a A28: `--hosts gpu01` was offered --hosts-file, by spelling): answered by its value,
# the verb's way to name a host, each of a comma list its own option, or --hosts-file where the value is a file.
HOSTS_HABITS = ("--hosts",)


def verb_hint(group: str, typed: str) -> str:
    """": nodeweave's word for it: HINT" for a verb of another tool's habit typed in ``group``, else ""."""
    said = HABITS.get(group, {}).get(typed)
    return f": nodeweave's word for it: {said}" if said else ""


def option_hint(command, typed: str, args: Sequence[str]) -> str:
    """" (did you mean --spec nodeweave.yaml?)" for an option of another tool's habit whose nodeweave spelling
    ``command`` has, with the value typed after it; else ""."""
    name = typed.partition("=")[0]
    if (command.name, name) in ELSEWHERE:
        return f" ({name} is another tool's habit: nodeweave's word for it: {ELSEWHERE[(command.name, name)]})"
    counted = _count_hint(command, name, _value_after(list(args), name))
    if counted:
        return counted
    sibling = host_spelling(command, name, args)
    if sibling:
        return sibling
    if name not in OPTIONS:
        return ""
    ours, habit = OPTIONS[name]
    if not any(ours in getattr(param, "opts", ()) for param in command.params):
        return ""
    value = _value_after(list(args), name)
    refused = _refused_as(ours, value)
    if refused:  # walk12 A11: `-f images/cpu/Dockerfile` offered `--spec images/cpu/Dockerfile`, refused on paste
        return f" ({ours} is {habit}; {refused})"
    return f" (did you mean {ours}{' ' + value if value else ''}? {ours} is {habit})"


# A node count typed as other tools take it (walk18a A6: `up --nodes 3` was offered `--host 3`, a near typo of
# --node by spelling): on a verb without --nodes, a count is answered by how that verb's node count is set.
COUNT_SPELLINGS = ("--nodes", "--nnodes", "--num-nodes", "--num_nodes", "--scale")
SPEC_COUNT = ("the spec's nodes says how many nodes up starts (N, or MIN:MAX for an elastic job); `nodeweave run "
              "--nodes 2` runs a run on the first two of them")
COUNT_BY_VERB = {
    "down": "down takes down every node `up` made, however many; the run on one node ends with `nodeweave stop "
            "--node N`",
    "bench": "bench measures the processes of this machine, --nproc N of them; every node's links, each pair "
             "measured: `nodeweave check --node N,M`",
}


def _count_hint(command, name: str, value: str) -> str:
    """" (--nodes 3 is a node count ...)" for a count option ``command`` lacks, given a count; else ""."""
    import re

    if name not in COUNT_SPELLINGS or not re.fullmatch(r"\d+(:\d+)?", value or ""):
        return ""
    if any(name in getattr(param, "opts", ()) for param in command.params):
        return ""
    return f" ({name} {value} is a node count, not a host: {COUNT_BY_VERB.get(command.name, SPEC_COUNT)})"


def host_spelling(command, typed: str, args: Sequence[str] = ()) -> str:
    """" (did you mean --node? ...)" for another verb's spelling of the hosts (:data:`HOST_SPELLINGS`), or a near
    typo of one, or another tool's (:data:`HOSTS_HABITS`), typed on ``command``, which spells them otherwise; else
    ""."""
    from nodeweave.cli.habits.nearby import close_options

    mine = [flag for param in command.params for flag in getattr(param, "opts", ())]
    if typed in HOSTS_HABITS:
        return _hosts_habit(typed, [flag for flag in HOST_SPELLINGS if flag in mine], _value_after(list(args), typed))
    others = [flag for flag in HOST_SPELLINGS if flag not in mine]
    if typed not in others and close_options(typed, [flag for flag in mine if flag.startswith("--")]):
        return ""  # a typo of this verb's own option: click names it (init --node is no typo of --nodes)
    meant = typed if typed in others else next(iter(close_options(typed, others)), None)
    ours = [flag for flag in HOST_SPELLINGS if flag in mine]
    if meant is None or not ours:
        return ""
    said = " or ".join(HOST_SPELLINGS[flag] for flag in ours)
    return (f" (did you mean {ours[0]}? this verb names its hosts with {said} (repeat {ours[0]}, node 0 first); "
            f"{meant} is another verb's spelling of them)")


def _hosts_habit(typed: str, ours: List[str], value: str) -> str:
    """The verb's own spelling of ``typed VALUE`` (``--hosts a,b``): ``--host a --host b`` (or ``--node``), or
    ``--hosts-file VALUE`` where VALUE is a file; "" where the verb names no hosts."""
    import os

    if not ours:
        return ""
    said = " or ".join(HOST_SPELLINGS[flag] for flag in ours)
    named = [flag for flag in ours if flag != "--hosts-file"]
    if "--hosts-file" in ours and (not named or (value and os.path.isfile(value))):
        return (f" (did you mean --hosts-file {value or 'FILE'}? this verb names its hosts with {said}; {typed} is "
                "another tool's spelling of them)")
    hosts = [word for word in value.split(",") if word] if value else []
    meant = " ".join(f"{named[0]} {host}" for host in hosts) or f"{named[0]} HOST"
    return (f" (did you mean {meant}? this verb names its hosts with {said} (repeat {named[0]}, node 0 first); "
            f"{typed} is another tool's spelling of them)")


def _refused_as(ours: str, value: str) -> str:
    """Why ``ours VALUE`` would itself be refused, where the option's own rule says it (a file nodeweave rendered,
    or its own state, given as the spec: that rule's line names the spec to give); else ""."""
    if ours != "--spec" or not value or value == "-":
        return ""
    from pathlib import Path

    from nodeweave.errors import UsageError
    from nodeweave.spec.loader import read_spec_text, refuse_nodeweaves_own

    try:
        text = read_spec_text(Path(value))
    except (UsageError, OSError, UnicodeDecodeError):  # missing, unreadable: said by --spec itself once given
        return ""
    try:
        refuse_nodeweaves_own(Path(value), text)
    except UsageError as err:
        return str(err)
    return ""


def _value_after(args: List[str], name: str) -> str:
    for i, word in enumerate(args):
        if word == "--":
            return ""
        if word == name and i + 1 < len(args) and not args[i + 1].startswith("-"):
            return args[i + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return ""


# A short option nodeweave gives one meaning that another tool's users type for another (walk10 C13: `logs -n 5` is
# tail's and docker logs' "last 5 lines", `exec -n 1` pdsh's "node 1"; here -n is --namespace, which does nothing
# for a target other than kubernetes). Given a count for a target it does nothing for: the refusal names the option
# -n is and the command's own option for what was meant, with the value typed.
SHORT_MEANT: Dict[str, "tuple[str, tuple]"] = {
    "namespace": ("-n", (("--tail", "the last lines, as tail -n and docker logs -n"),
                         ("--node", "one node, as pdsh -w"))),
}


def short_meant(given, target: str, idle_for: Dict[str, "tuple[str, tuple]"]) -> str:
    """" (-n is --namespace here ...; did you mean --tail 5?)" when a value of a SHORT_MEANT field looks like the
    other tools' meaning (a count) and the field does nothing for ``target``; else "". ``idle_for``: the cluster
    options' table of each flag and the targets it is for."""
    from typer._click.globals import get_current_context  # typer's own click (>= 0.22): click is not a dependency

    ctx = get_current_context(silent=True)
    names = {opt for param in (ctx.command.params if ctx else ()) for opt in getattr(param, "opts", ())}
    for field, (short, meanings) in SHORT_MEANT.items():
        value = getattr(given, field, None)
        flag, targets = idle_for[field]
        if not value or not str(value).isdigit() or target in targets:
            continue
        for ours, habit in meanings:
            if ours in names:
                return (f"{short} is {flag} (for target {' or '.join(targets)}), which does nothing for target "
                        f"{target}; {habit}: did you mean {ours} {value}?")
    return ""

