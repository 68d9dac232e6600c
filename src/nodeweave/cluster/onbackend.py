"""What every verb asks of a target that only combines the target's five (nodes, states, plan up, plan down, logs)
and the data it declares: which nodes are up, the one line that says why a verb cannot act, whether another
folder made the job, what ``up`` records.

Why here and not on :class:`~nodeweave.cluster.base.Backend`: a method on the base that only combines other
methods made every target look wider than it is (23 public methods), and a target overriding one of them
(``no_nodes_line``, ``live_nodes``) changed a verb's refusal for that target alone. A new target implements
the five; these work for it unchanged.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from nodeweave.cluster.base import MOUNTED_SYNC, Backend, Node, nothing_to, start_hint
from nodeweave.entrypoint.nodelists import noted_ranges, ranges
from nodeweave.errors import EnvironmentProblem


def not_up(backend: Backend, nodes: List[Node]) -> Dict[int, str]:
    """The nodes the platform says are not there or not running (missing, exited), with its word."""
    return {i: seen.word for i, seen in backend.states(nodes).items() if seen.state.down}


def count_changed(backend: Backend) -> Optional[str]:
    """The spec's node count against the one the cluster up here was made with, when they differ: the nodes past
    the made ones were never made (walk14 A14: `nodes: 2` -> `3` while up made node-2 "down (missing)", with a hint
    to read its last output, and exec and logs said the job "is not up" while its two nodes held). The other
    fields changed since are named too (:func:`spec_changed`)."""
    made = backend.made_count()
    wanted = backend.spec.containers
    if made is None or made == wanted:
        return None
    others = [f for f in unseen_fields(changed_fields(backend)) if not f.startswith("nodes ")]
    return (f"{backend.spec_path.name} now asks for {wanted} node container(s) and {backend.spec.name} is up with "
            f"{made} (what `nodeweave up` made: {_made_file(backend)})"
            + (f", and changed {', '.join(others)} since" if others else "") + f": {_applies(backend)}")


def spec_changed(backend: Backend) -> Optional[str]:
    """The spec changed since ``up`` made the nodes, in what the nodes were made from (the local target's compose
    file: ``Backend.made_stale``), the node count aside (:func:`count_changed` says that one): held nodes do not see
    it, and run, exec and status say so, naming the fields (walk15 A17: `gpus_per_node: 1` -> `2` and a new `env`
    ran with one process a node and no variable, under "plans agree"). None: nothing changed, or not known here."""
    if _made_record(backend) is None or not backend.made_stale() or count_changed(backend):
        return None
    changed = changed_fields(backend)
    fields = unseen_fields(changed)
    if changed and not fields:  # only what each run reads from the spec again (walk16a A12)
        return None
    said = ", ".join(fields) if fields else "what the nodes are made from"
    return (f"{backend.spec_path.name} changed since `nodeweave up` made {backend.spec.name}'s nodes ({said}): the "
            f"nodes run as up made them ({_made_file(backend)}); {_applies(backend)}")


def held_launcher(backend: Backend, flag: Optional[str]) -> Optional[str]:
    """Why a run refuses to start while the held nodes were made with another ``launcher.type`` than the spec now
    says, and ``--launcher`` is not given (walk16a A26: a run judged the command with the spec's torchrun, the nodes
    ran it with the held command, and node 0's error said to use torchrun, which the spec already did). None:
    the same launcher, ``--launcher`` given, or not known here."""
    import yaml

    if flag is not None or not backend.made_stale():
        return None
    then = _made_spec_text(backend)
    try:
        made = ((yaml.safe_load(then or "") or {}).get("launcher") or {}).get("type") or "torchrun"
    except (yaml.YAMLError, AttributeError):
        return None
    now = backend.spec.launcher.type
    if then is None or made == now:
        return None
    up = "`nodeweave up --hold`" if backend.holds else "`nodeweave up`"
    return (f"{backend.spec_path.name} says launcher.type {now}, but {backend.spec.name}'s nodes were made with "
            f"launcher {made} (what `nodeweave up` made: {_made_file(backend)}), which a run on them uses: "
            f"{up} applies the spec's {now}, recreating every node (what sync and exec put outside the mounts is "
            f"lost), or give this run --launcher {now}")


def note_spec_changed(backend: Backend) -> None:
    """:func:`spec_changed`'s line on stderr, once per command, before a verb reaches the nodes."""
    import sys

    if getattr(backend, "_spec_change_said", False):
        return
    backend._spec_change_said = True
    line = spec_changed(backend)
    if line:
        print(f"nodeweave: note: {line}", file=sys.stderr)


def ran_spec_text(backend: Backend) -> Optional[str]:
    """The spec text the held nodes were made from, where they miss a field of the spec's text now
    (:func:`spec_changed`, :func:`count_changed`): a run folder keeps it beside the spec the run was started from
    (``runfolder.UP_SPEC``, walk16a A13); None: the nodes see the spec now, or it is not recorded."""
    if spec_changed(backend) is None and count_changed(backend) is None:
        return None
    return _made_spec_text(backend)


# The spec's fields that `nodeweave run` reads from the spec each time it starts a run (its default command, the
# script and its args: clusteropts.spec_command). They reach a node's compose file only as its `command:`, which a node
# held for runs never runs: an edit of one is taken by the next run, never missed by the held nodes (walk16a A12).
# Every other field the compose file carries (env, gpus_per_node, image, resources, volumes, ...) is baked into the
# nodes by `up`.
READ_EACH_RUN = ("launcher.script", "launcher.args")


def unseen_fields(fields: "list[str]") -> "list[str]":
    """The fields of :func:`changed_fields` that the held nodes do not see: those ``READ_EACH_RUN`` left out."""
    return [f for f in fields if f.split(" ", 1)[0] not in READ_EACH_RUN]


def _made_record(backend: Backend) -> Optional[dict]:
    """What this folder's ``up`` recorded it made for the job (None: nothing up, or a record the verbs' own reading
    of it names as damaged)."""
    from nodeweave.cluster.options import load_made
    from nodeweave.errors import NodeweaveError

    try:
        return load_made(backend.spec_path, backend.spec.name)
    except NodeweaveError:
        return None


def _made_spec_text(backend: Backend) -> Optional[str]:
    made = _made_record(backend)
    return made.get("spec_text") if made else None


def changed_fields(backend: Backend) -> "list[str]":
    """Each field of the spec file that differs from the text ``up`` recorded (``made.spec_text``), dotted
    (``gpus_per_node 1 -> 2``, ``env.WALK_X (unset) -> "hello"``); none where up recorded no text."""
    import yaml

    from nodeweave.errors import NodeweaveError
    from nodeweave.spec.loader import read_spec_text

    then = _made_spec_text(backend)
    if then is None:
        return []
    try:
        old, new = yaml.safe_load(then), yaml.safe_load(read_spec_text(backend.spec_path))
    except (yaml.YAMLError, NodeweaveError, OSError):
        return []
    found: "list[str]" = []
    _differ(old, new, "", found)
    return found


_UNSET = object()


def _differ(old, new, path: str, found: "list[str]") -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            _differ(old.get(key, _UNSET), new.get(key, _UNSET), f"{path}.{key}" if path else str(key), found)
    elif old != new:
        found.append(f"{path} {_shown(old)} -> {_shown(new)}")


def _shown(value) -> str:
    import json

    if value is _UNSET:
        return "(unset)"
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _made_file(backend: Backend) -> str:
    return backend.state.shown(backend.compose_file) if hasattr(backend, "state") else "its compose file"


def _applies(backend: Backend) -> str:
    up = "`nodeweave up --hold`" if backend.holds else "`nodeweave up`"
    return f"{up} applies it, recreating every node (what sync and exec put outside the mounts is lost)"


def down_line(backend: Backend, nodes: List[Node], verb: str, down: "dict | None" = None) -> Optional[str]:
    """Why ``verb`` cannot act on ``nodes`` (they are not up), naming them and what starts them; None: all up.
    ``down``: {index: word} already asked of the platform (one inspect per verb, test_walk6_scale). Nodes past the
    count the cluster up was made with are said as that (``count_changed``), never as down."""
    down = not_up(backend, nodes) if down is None else down
    if not down:
        return None
    made = backend.made_count()
    if made is not None and all(i >= made for i in down):
        return f"{count_changed(backend)}; {nothing_to(verb)} until then"
    named = noted_ranges((n.name, down[n.index]) for n in nodes if n.index in down)
    return (f"{backend.spec.name} is not up on {backend.where}: {named}; {nothing_to(verb)}{runs_kept(backend, verb)}"
            f"; {start_hint(verb, backend.spec, backend.holds)}"
            + renamed_tail(backend))


# Verbs whose answer the run folders beside the spec still give with no node up (walk12c C16: `logs` said "no logs to
# show" and offered `up`, which shows none either, while runs/ held every run's node logs): {verb: (command, what)}.
READ_HERE = {"logs": ("logs --run last", "its node logs"), "read logs of": ("logs --run last", "its node logs"),
             "status": ("runs show last", "how it ended")}


def runs_kept(backend: Backend, verb: str) -> str:
    """``; but the last run (<id>) is kept in runs/: `nodeweave logs --run last` shows its node logs`` for a verb of
    ``READ_HERE`` when runs/ beside the spec holds a run of the job; "" otherwise."""
    if verb not in READ_HERE:
        return ""
    from nodeweave.cluster.runfolder import latest_run

    folder = getattr(backend, "spec_dir", None)  # a backend with no folder of its own here has no runs/ either
    try:
        last = latest_run(folder / "runs", backend.spec.name) if folder is not None else None
    except OSError:
        return ""
    if last is None:
        return ""
    command, what = READ_HERE[verb]
    return f"; but the last run ({last.name}) is kept in runs/: `nodeweave {command}` shows {what}"


def with_logs(backend: Backend, nodes: List[Node]) -> "tuple[List[Node], List[str]]":
    """(the nodes whose own log can be read, a note per node whose process ended): a node that exited or crash-loops
    keeps its container's or pod's log, which is what a user wants after it died (walk10 C21: `logs` refused, naming
    `nodeweave up`, which recreates the container and loses that log). Nodes with no log at all (not made, never
    started) are refused as before when no node has one; else said and left out."""
    from nodeweave.cluster.base import NodeState

    states = backend.states(nodes)
    ended = {i for i, seen in states.items() if seen.state in (NodeState.ENDED, NodeState.STUCK)}
    down = {i: seen.word for i, seen in states.items() if seen.state.down and i not in ended}
    readable = [n for n in nodes if n.index not in down]
    if not states:  # bare hosts: no platform says; ssh is asked, as every verb asks it (walk9 A35)
        require_up(backend, nodes, "logs")
    elif not readable:
        raise EnvironmentProblem(down_line(backend, nodes, "logs", down))
    notes = [f"{n.name} is not running ({states[n.index].word}): its last log follows; `nodeweave up` would recreate "
             "it and lose that log, so read it first" for n in nodes if n.index in ended]
    notes += [f"{n.name} has no log ({down[n.index]}): left out" for n in nodes if n.index in down]
    return readable, notes


def unreached_hosts(backend: Backend, nodes: List[Node]) -> "list[tuple[str, str]]":
    """The hosts of ``nodes`` ssh never reached, each with why ("name not resolved", ...), asked as ``status`` asks
    them, all at once; only on bare hosts: no platform stands over them to say (``states`` is empty there), and a
    verb that went on would fail on each with ssh's exit 255 (walk9 A35)."""
    from concurrent.futures import ThreadPoolExecutor

    from nodeweave.cluster.base import ask_status
    from nodeweave.failures import ssh_unreached

    if backend.target != "hosts" or not nodes:
        return []
    command = [backend.spec.launcher.script, *backend.spec.launcher.args]
    with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
        answers = list(pool.map(lambda n: ask_status(n, command, timeout=30), nodes))
    found = [(getattr(n.remote, "host", n.remote.name), ssh_unreached(a.error or "")) for n, a in zip(nodes, answers)]
    return list(dict.fromkeys((host, why) for host, why in found if why))


def unreached_line(backend: Backend, unreached: "list[tuple[str, str]]") -> str:
    """status's line for hosts ssh never reached: `up` cannot help there, the names, the network or the keys can."""
    from nodeweave.failures import unreached_hosts_line

    return (f"{backend.spec.name} cannot be asked on {backend.where}: "
            f"{unreached_hosts_line(unreached, backend.remote.ssh_options)}")


def require_up(backend: Backend, nodes: List[Node], verb: str) -> None:
    """Refuse ``verb`` (exit 3) when the platform says nodes are not up, naming them and ``nodeweave up``; on bare
    hosts, when ssh reaches a host of ``nodes`` at all, with status's line (nothing run, no run folder made)."""
    refuse_changing(backend, verb)
    unreached = unreached_hosts(backend, nodes)
    if unreached:
        raise EnvironmentProblem(unreached_line(backend, unreached))
    line = down_line(backend, nodes, verb)
    if line is not None:
        raise EnvironmentProblem(line)


# The verbs that only read what the nodes are (and are named so to live_nodes and require_up): they go on while an
# `up` or `down` changes the nodes; every other verb that uses them waits for it (walk17a A31).
ONLY_READ = ("logs", "read logs of", "watch", "fingerprint")


def refuse_changing(backend: Backend, verb: str) -> None:
    """Exit 3 naming the `up` or `down` (pid, since) of another process that holds the job's lock, for a verb that
    uses the nodes (run, exec, sync, check, stop, shell, ask), its dry run too: the real one would be refused so."""
    folder = getattr(backend, "spec_dir", None)
    if verb in ONLY_READ or folder is None:
        return
    from nodeweave.jobstate import refuse_while_changing

    named = {MOUNTED_SYNC: "sync", "open a shell in": "shell"}.get(verb, verb)
    refuse_while_changing(folder, backend.spec.name, named)


def no_nodes_line(backend: Backend, verb: str) -> str:
    """Why the cluster has no node, in one line with the command that brings nodes back."""
    if backend.dormant is not None:
        what, how = backend.dormant
        return f"{backend.spec.name} {what} to {verb}; {how}"
    return (f"{backend.spec.name} has no node on {backend.where}: {nothing_to(verb)}{runs_kept(backend, verb)}; "
            f"{start_hint(verb, backend.spec, backend.holds)}")


def live_nodes(backend: Backend, verb: str, dry_run: bool = False) -> List[Node]:
    """The nodes ``verb`` acts on (a dry run only reads); exit 3 naming the workload when there are none."""
    refuse_changing(backend, verb)
    nodes = backend.nodes(dry_run=dry_run)
    if not nodes:
        raise EnvironmentProblem(no_nodes_line(backend, verb) + renamed_tail(backend))
    nodes = _made_past_spec(backend, nodes, verb, dry_run)
    note_spec_changed(backend)
    return nodes


def address_elsewhere(backend: Backend, nodes: List[Node], word: str, verb: str) -> None:
    """``--node KIND:NAME`` that names none of the job's ``nodes``, answered as sync and ``doctor --cluster`` answer
    it (walk18a A4: exec, stop and shell said exit 2 listing the nodes of a job not up): a container or pod another
    folder's ``up`` made is that folder's, exit 3 naming it; with this job not up, "not up", exit 3. Returns where
    neither holds: the address is then a mistake, said by ``--node`` itself (exit 2)."""
    from nodeweave import remote
    from nodeweave.cluster.identity import foreign_owner, reached_marks
    from nodeweave.errors import NodeweaveError

    try:
        target = remote.parse_target(word)
        found = {name: mark for name, mark in reached_marks([target]).items() if mark is not None}
    except NodeweaveError:  # no address, or an API that does not answer: --node's own refusal says the address
        return
    if found:
        foreign_owner(backend.mark, found, "node")
    down = not_up(backend, list(nodes))
    if nodes and len(down) == len(nodes):
        line = down_line(backend, list(nodes), verb, down)
        if line:
            raise EnvironmentProblem(line)


# Verbs that launch one job across the nodes, each of which `up` made for the count it was made with: a spec asking
# for fewer since is refused for them, as one asking for more is (down_line); every other verb reaches what up made.
LAUNCHES = ("run", "check")


def _made_past_spec(backend: Backend, nodes: List[Node], verb: str, dry_run: bool) -> List[Node]:
    """The spec's node count lowered since ``up`` (walk18a A13: exec, stop and run acted on node-0 alone, node-1
    silently left out, where a count raised is refused): a launch is refused (exit 3, the dry run notes it), and
    every other verb reaches each node up made, said once; ``stop`` so stops every node of the run."""
    import sys

    made = backend.made_count()
    if made is None or made <= len(nodes):
        return nodes
    line = count_changed(backend)
    if verb in LAUNCHES:
        said = f"{line}; {nothing_to(verb)} until then"
        if not dry_run:
            raise EnvironmentProblem(said)
        print(f"nodeweave: note: the real {verb} would end with exit 3: {said}", file=sys.stderr)
        return nodes
    every = backend.made_nodes(dry_run)
    print(f"nodeweave: note: {line}; until then every node it made is reached, "
          f"{ranges(n.name for n in every[len(nodes):])} too", file=sys.stderr)
    return every


def renamed_tail(backend: Backend) -> str:
    """What ``up`` made under the spec's old name, after a refusal's line: it may be why nothing is up."""
    return "".join(f"; {line}" for line in backend.renamed)


def refuse_foreign(backend: Backend) -> None:
    """Exit 3 naming the folder when what this job's names point at was made by another folder's ``up``."""
    from nodeweave.cluster.identity import foreign_owner

    foreign_owner(backend.mark, backend.marks(), backend.marked_kind, backend.unmarked_removal,
                  busy=lambda: _run_there(backend))


def _run_there(backend: Backend) -> Optional[str]:
    """The run in progress on the job's nodes as :func:`busy_line` words it (``run ... is in progress on node-0,
    node-1 since ...``); None: none, or the nodes cannot be asked."""
    from nodeweave.errors import NodeweaveError

    try:
        nodes = backend.nodes()
        return "; ".join(runs_said(runs_in_progress(backend, nodes))) or None if nodes else None
    except NodeweaveError:
        return None


def made(backend: Backend) -> dict:
    """What ``up`` records it made (options.record_made): the verbs of a renamed job act on it; the spec's text, which
    the verbs compare the spec with (:func:`spec_changed`)."""
    from nodeweave.spec.loader import read_spec_text

    return {"job": backend.spec.name, "folder": backend.mark.folder, "owner": backend.mark.owner,
            "spec": backend.spec_path.resolve().name, "target": backend.target, "where": backend.where,
            "spec_text": read_spec_text(backend.spec_path), **backend.recorded}


def leftover_steps(nodes: List[Node]) -> list:
    """After every node's entrypoint stopped its run: what else ends it on the platform (a Slurm step's
    ``scancel``), as the nodes' launch group says; nothing for nodes that are not one launch."""
    group = nodes[0].group if nodes else None
    return list(group.leftover_steps()) if group is not None else []


def refuse_idle_up_flags(backend: Backend, hold: Optional[bool], image: Optional[str], check: bool,
                         wait: bool, mode: str, force_recreate: bool = False) -> None:
    """``up``'s own flags that would do nothing on this target, refused (exit 2) by one rule over the target's data:
    --hold/--run where ``up`` starts the nodes in no mode (``holds``: a Slurm allocation, bare hosts), --image where
    the image is not ``up``'s to pick (``fixed_image``). --check checks the nodes once ``up`` waited for them: where
    nodes hold, they must hold (a node running the spec's job is busy), elsewhere they are idle between runs."""
    from nodeweave.errors import UsageError

    said = {"--hold": (hold is True, backend.unheld), "--run": (hold is False, backend.unheld),
            "--image": (image is not None, backend.fixed_image),
            "--force-recreate": (force_recreate, "" if backend.knows_unchanged else
                                 f"the {backend.target} target's up never leaves a node as it was "
                                 "(--force-recreate asks the local target to recreate nodes already up as up "
                                 "would start them)")}
    for flag, (given, why) in said.items():
        if given and why:
            raise UsageError(f"{flag} does nothing for target {backend.target}: {why}; leave it out")
    if check and not wait:
        raise UsageError("--check does nothing with --no-wait: it checks the nodes up waited for; leave out "
                         "--no-wait")
    if check and backend.holds and mode != "hold":  # name what is wrong: the --run typed, or the spec's mode
        if hold is False:
            raise UsageError(f"--check needs nodes that hold on target {backend.target}, and --run starts the "
                             "spec's job on them: give --hold in place of --run")
        raise UsageError(f"--check needs nodes that hold on target {backend.target} (the spec's launcher.mode is "
                         "run: these would run the spec's job): add --hold")


# What a verb that would start a run, or recreate the nodes, does to the run in progress there (walk10 C1, C8).
BUSY_CONSEQUENCE = {
    "run": "each node refuses a second run while one is in progress, so none would start",
    "check": "each node refuses a check while a run is in progress (it would share the GPUs and the network)",
    "up": "up recreates the nodes, which would kill it",
    "down": "down removes the nodes, which would kill it (SIGKILL, no grace to write a checkpoint, and the run "
            "recorded as failed)",
}


def node_rows(backend: Backend, nodes: List[Node]) -> List[dict]:
    """Every node's row as ``status`` asks it (a node the platform calls down is not asked)."""
    from nodeweave.cluster.status import gather

    return gather(backend, nodes, [backend.spec.launcher.script, *backend.spec.launcher.args])


def runs_in_progress(backend: Backend, nodes: List[Node]) -> "list[tuple[Node, dict]]":
    """Each node of ``nodes`` with the run in progress there, as ``status`` asks (its own rows: a node the platform
    calls down is not asked, one that does not answer has none)."""
    return runs_of(nodes, node_rows(backend, nodes))


def runs_of(nodes: List[Node], rows: List[dict]) -> "list[tuple[Node, dict]]":
    """:func:`runs_in_progress` from rows already asked."""
    return [(node, row["run"]) for node, row in zip(nodes, rows) if row.get("up") and row.get("run")]


def busy_line(backend: Backend, nodes: List[Node], verb: str, rows: Optional[List[dict]] = None) -> Optional[str]:
    """Why ``verb`` must not act while a run is in progress on ``nodes`` (the run, where, since when, what would
    happen, and ``nodeweave stop``); None: no run is in progress there. The one rule for every verb that starts a
    run or recreates the nodes (``BUSY_CONSEQUENCE``): refused before anything starts or is written."""
    busy = runs_in_progress(backend, nodes) if rows is None else runs_of(nodes, rows)
    if not busy:
        return None
    said = runs_said(busy)
    return (f"{'; '.join(said)}: {BUSY_CONSEQUENCE[verb]}; `nodeweave stop` ends it (`nodeweave logs -f` follows "
            f"it, `nodeweave status` shows it), then `nodeweave {verb}` again")


def runs_said(busy: "list[tuple[Node, dict]]") -> List[str]:
    """``run <id> is in progress on node-0, node-1 since 13:50:46 UTC``, one per run of ``busy``."""
    import time

    ids: Dict[str, list] = {}
    for node, run in busy:
        ids.setdefault(str(run.get("run_id") or "?"), []).append((node, run))
    said = []
    for run_id, where in ids.items():
        started = min((run.get("started") or 0) for _, run in where)
        since = f" since {time.strftime('%H:%M:%S', time.gmtime(started))} UTC" if started else ""
        said.append(f"run {run_id} is in progress on {', '.join(n.name for n, _ in where)}{since}")
    return said


def up_busy_line(backend: Backend) -> Optional[str]:
    """:func:`busy_line` for ``up`` over the nodes there now; None where the record or the platform says nothing
    of the job is up (nothing asked then), or where the platform or its nodes cannot be asked (no engine here, a
    Slurm allocation not taken): the real up meets that in its own words."""
    return up_over(backend)[0]


def up_over(backend: Backend, verb: str = "up") -> "tuple[Optional[str], List[Node]]":
    """What ``up`` (or ``down``: ``verb``) would act on, asked once: :func:`busy_line` (a run in progress, refused)
    and the nodes that are up now (their entrypoints answer), which a target whose ``up`` recreates every node
    (``recreates_nodes``) would recreate (walk12c C7). Nothing asked where the record or the platform says nothing
    of the job is up, or where the platform cannot be asked (no engine here: a dry run goes on)."""
    from nodeweave.errors import NodeweaveError

    try:  # a platform that cannot be asked (no engine: a dry run goes on) has no run to lose
        if backend.recorded_nothing() or backend.nothing_up_line() is not None:
            return None, []
        nodes = backend.nodes()
        if not nodes:
            return None, []
        rows = node_rows(backend, nodes)
        return busy_line(backend, nodes, verb, rows), [n for n, r in zip(nodes, rows) if r.get("up")]
    except NodeweaveError:
        return None, []


# What a recreated node loses (walk12c C7): every target whose ``up`` recreates the nodes says it so.
RECREATE_LOSS = ("what `nodeweave sync` put outside the mounts and what `nodeweave exec` installed or wrote there is "
                 "lost, as is each node's own log (`nodeweave logs --container`)")


def recreate_note(backend: Backend, live: List[Node], forced: bool) -> str:
    """The plan's note where ``up`` recreates nodes that are up now: which, why, and what they lose."""
    names = noted_ranges((n.remote.label, "") for n in live)
    if forced:
        why = "--force-recreate"
    elif backend.knows_unchanged:
        why = "not every node is up as this up would start it: a node is down, or the compose file, mode or image changed"
    else:
        why = f"the {backend.target} target's up recreates every node"
    return (f"up recreates {len(live)} node(s) up now ({names}; {why}): {RECREATE_LOSS}"
            + ("" if forced or not backend.knows_unchanged else "; an up with nothing changed leaves them running"))


def unchanged_line(backend: Backend, live: List[Node]) -> str:
    """The plan's note where every node is up as this ``up`` would start it: nothing recreated (compose's habit)."""
    return (f"{backend.spec.name} is already up ({len(live)} node(s)), as this up would start it (the same compose "
            f"file, mode and image): nothing recreated, so what sync and exec put on the nodes stays; "
            f"`nodeweave up --force-recreate` recreates them ({RECREATE_LOSS})")


def refuse_busy(backend: Backend, nodes: List[Node], verb: str) -> None:
    """Exit 3 with :func:`busy_line` when a run is in progress on ``nodes``."""
    line = busy_line(backend, nodes, verb)
    if line is not None:
        raise EnvironmentProblem(line)
