"""The one executor: walk a verb's :class:`~nodeweave.plan.Plan`, phase by phase, as planned.

Each phase runs itself (``phase.run(job)``, one class per kind in ``nodeweave.plan.phases``); the
executor only iterates, handing each the verb's :class:`Execution`. The execution does the
cluster's own effects a phase asks for by name (``write_files``, ``write_rendered``: ``render``'s files,
``run_steps``, ``allocate``, ``wait_until_up``, ``stop``, ``exec``, ``shell``: they need nothing but the plan,
where files go, the console, the backend and the nodes) and carries the sessions a verb opens for the kinds that need
one of its own (``runs``: a run's folder and console; ``checks``: a check's report; ``syncs``: a
sync's request; ``builds``: an image build's engine). The ``allocate`` phase makes known what the
plan could only name (a Slurm allocation's placeholders ``<job-id>``, ``<node0>``, ...): it returns
their values, and every later phase runs with them filled in (``Phase.bound``); what any other phase
returns is kept in ``Execution.outcomes`` under its kind (a stop's reports, an exec's results, the
wait's nodes).

``NODEWEAVE_PLAN_RECORD=<file>`` (a debugging aid) writes the executed plan's ``to_dict()`` there as
JSON before the first phase runs: compare it with ``--dry-run -o json`` of the same command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from nodeweave.entrypoint.nodelists import ranges
from nodeweave.errors import UsageError
from nodeweave.plan import (JOB_ID, AllocatePhase, Builds, ChecksNodes, CommandsPhase, ExecPhase, FilesPhase, Plan,
                            RemoveFilesPhase, RenderFilesPhase, RunsPoints, ShellPhase, StopPhase, Syncs, WaitPhase, node_placeholder)

RECORD_ENV = "NODEWEAVE_PLAN_RECORD"


@dataclass
class Execution:
    """What one verb's phases run with: the spec's folder (files are written relative to it), how a line of what
    is done is said, the console the nodes' output goes to, the backend and the nodes the plan was made for, and
    the sessions the verb opened for its own kinds. ``outcomes``: what each kind's phases returned, in order."""

    spec_dir: Path
    say: Callable[[str], None]
    out: Optional[object] = None  # a rich Console
    backend: Optional[object] = None
    nodes: Sequence[object] = ()
    quiet: bool = False  # an exec: the summary only, not the nodes' lines
    runs: Optional[RunsPoints] = None  # run: the sweep's folder, each point's run
    checks: Optional[ChecksNodes] = None  # check, run --check, up --check
    syncs: Optional[Syncs] = None
    builds: Optional[Builds] = None  # image build: the engine's steps, the upload staged
    hidden: Optional[object] = None  # the values of hidden -e variables (nodeweave.hidden.Hidden), filled at spawn
    outcomes: Dict[str, List[object]] = field(default_factory=dict)

    def write_files(self, phase: FilesPhase) -> None:
        write_files(phase, self.spec_dir, self.say)

    def remove_files(self, phase: RemoveFilesPhase) -> None:
        """Each planned file that is still a plain file (never through a link: ``refuse_in_the_way``); one gone
        already is nothing to do."""
        from nodeweave.jobstate import refuse_in_the_way

        for planned in phase.files:
            path = self.spec_dir / planned.path
            refuse_in_the_way(self.spec_dir, path)
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            self.say(f"removed {planned.path} ({planned.what})")

    def write_rendered(self, phase: RenderFilesPhase) -> None:
        """``render``'s files, all or none, with the record ``--prune`` reads (``nodeweave.rendering``'s write)."""
        from nodeweave.rendering.plan import write_rendered

        write_rendered(phase)

    def run_steps(self, phase: CommandsPhase) -> None:
        """Local steps, at once; the phase after waits for the last."""
        from nodeweave.steps import execute_all

        for step in phase.steps:
            self.say(f"{step.what}: {step.text()}")
        execute_all(phase.steps)

    def allocate(self, phase: AllocatePhase) -> Mapping[str, str]:
        """The step that takes the nodes (Slurm's salloc): the job id and nodes it was granted, for the later
        phases."""
        (step,) = phase.steps
        self.say(f"{step.what}: {step.text()}")
        values = phase.take(phase)
        hosts = [values[node_placeholder(i)] for i in range(len(values) - 1)]
        self.say(f"took allocation {values[JOB_ID]} on {ranges(hosts)}")
        return values

    def wait_until_up(self, phase: WaitPhase) -> dict:
        """The live table until every node the backend has for ``up`` is up, then whether their plans agree (a
        node that answers but cannot start fails ``up``, naming it); what ``up -o json`` prints of the nodes."""
        from nodeweave.cluster.ready import wait_until_up
        from nodeweave.cluster.status import plan_verdict
        from nodeweave.errors import NodeweaveError

        backend, mode = self.backend, phase.mode
        nodes = backend.nodes(for_up=True)  # once the phases before ran (a Slurm allocation's: Slurm's to pick)
        command = [backend.spec.launcher.script, *backend.spec.launcher.args]  # what a held node's plan is for
        progress = wait_until_up(backend, nodes, mode, phase.timeout, self.out, command)
        agree, failures = plan_verdict([(n, progress.ready.get(n.index)) for n in nodes])
        what = f"in {mode} mode" if backend.holds else "and answer (bare hosts: nothing held)"
        self.out.print(f"{len(nodes)} node(s) up {what} on {backend.where}; {agree}", highlight=False)
        if failures:  # a node that answers but cannot start is no agreement (issue 33): up fails, naming it
            raise NodeweaveError(f"{len(failures)} of {len(nodes)} node(s) cannot start: " + ranges(failures, sep="; ")
                                 + "; `nodeweave status` shows each plan (fix the spec, then `nodeweave up` again)")
        return {"mode": mode, "where": backend.where, "nodes": [
            {"node": n.name, "reached_as": n.remote.label, "state": progress.state.get(n.index)} for n in nodes]}

    def stop(self, phase: StopPhase) -> list:
        """Every node's stop at once, then the platform's leftovers; the nodes' reports, as (planned node,
        report)."""
        from nodeweave.cluster.stop import stop_runs

        return list(zip(phase.nodes, stop_runs(phase, self.out)))

    def exec(self, phase: ExecPhase) -> list:
        """The command on every node at once, each node's argv as planned; every node's result."""
        import secrets

        from nodeweave.cluster.execstop import EXEC_ID, stop_command
        from nodeweave.cluster.logs import exec_everywhere

        token = secrets.token_hex(6)  # this call's: the pid file every node's wrapper writes (execstop)
        phase = phase.bound({EXEC_ID: token})
        return exec_everywhere(list(self.nodes), list(phase.command), None if self.quiet else self.out,
                               timeout=phase.timeout, argv=[list(n.argv) for n in phase.nodes], hidden=self.hidden,
                               stoppers=[n.argv(stop_command(token, n.index)) for n in self.nodes])

    def shell(self, phase: ShellPhase) -> None:
        """The one node's interactive shell: this process becomes its exec client. Its stdin must be a terminal:
        without one ``podman exec -it`` or ``ssh -t`` waits for input forever (walk10 C6); refused, exit 2, naming
        ``exec`` for a script, as ``docker exec -it`` refuses "the input device is not a TTY"."""
        said = shell_input_problem()
        if said:
            from nodeweave.errors import UsageError

            raise UsageError(said)
        argv = list(phase.nodes[0].argv)
        os.execvp(argv[0], argv)


def shell_input_problem() -> str:
    """Why ``shell`` cannot open its interactive shell with this standard input (not a terminal), or "": said by the
    real shell and by its dry run (walk15 A29: the dry run planned ``-i -t`` for a pipe)."""
    import sys

    if sys.stdin is not None and sys.stdin.isatty():
        return ""
    return ("shell's input is not a terminal (a pipe, a file, </dev/null: a script or CI step), and an interactive "
            "shell needs one; accepted: a terminal, or for a script `nodeweave exec --node N -- CMD` (one command on "
            "that node, its output and exit code back)")


def exec_input_problem() -> str:
    """Why ``exec`` refuses this standard input, or "": input waiting in a pipe or a file (``echo hi | nodeweave
    exec -- cat``, ``exec -- python3 - < script.py``, ssh's and ``kubectl exec -i``'s habit) that no node's command
    would read, where it was dropped without a word (walk15 A29). A terminal, ``</dev/null``, an empty file and a
    pipe closed with nothing in it pass; a pipe with nothing written yet is not waited for."""
    import select
    import stat
    import sys

    try:
        fd = sys.stdin.fileno() if sys.stdin is not None else -1
        mode = os.fstat(fd).st_mode if fd >= 0 else 0
    except (OSError, ValueError):  # no standard input at all (closed): nothing to drop
        return ""
    if stat.S_ISREG(mode):
        held = os.fstat(fd).st_size > os.lseek(fd, 0, os.SEEK_CUR)
        kind = "a file"
    elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        held = bool(select.select([fd], [], [], 0)[0]) and os.read(fd, 1) != b""  # EOF: an empty, closed pipe
        kind = "a pipe"
    else:
        return ""
    if not held:
        return ""
    return (f"exec passes no standard input on, and {kind} is waiting on it: the command on each node would read "
            "none; accepted: a file copied to the nodes first (`nodeweave sync`, then `nodeweave exec -- python3 "
            "script.py`), the text in the command (`nodeweave exec -- sh -c '...'`), or </dev/null to say no input "
            "is meant (a `while read` loop's exec)")


def execute(plan: Plan, job: Execution) -> Execution:
    """Every phase of ``plan`` in order, each running itself with ``job``; the first failure raises. ``job`` back,
    its ``outcomes`` filled."""
    record(plan)
    for line in plan.notes:
        job.say(line)
    from nodeweave import nodeprogress
    from nodeweave.endings import holding

    known: Dict[str, str] = {}
    for number, phase in enumerate(plan.phases, 1):
        BEGUN.append(plan.verb)  # from here a Ctrl-C is said by the phase (interrupted_line), not as an early one
        bound = phase.bound(known)
        nodeprogress.begin(*progress_names(bound))
        try:
            with holding(plan.verb):  # a closed stdout ends this phase as Ctrl-C does (nodeweave.endings)
                made = bound.run(job)
        except KeyboardInterrupt:
            said = interrupted_line(plan, bound, number, job)
            if said:
                import sys

                print(f"nodeweave: {said}", file=sys.stderr, flush=True)
            raise
        finally:
            nodeprogress.clear()
        if isinstance(phase, AllocatePhase):  # the placeholders' values it made known
            known.update(made)
        elif made is not None:
            job.outcomes.setdefault(phase.kind, []).append(made)
    return job


def progress_names(phase) -> "tuple[list[str], str]":
    """The names a phase's work marks as it goes (``nodeprogress``) and what they are: its nodes (sync, stop, exec),
    or its local steps where there are several (``up``/``down`` on hosts: one per host); none for the rest."""
    nodes = getattr(phase, "nodes", None)
    if isinstance(phase, WaitPhase):  # nothing to mark: each node is as the platform says (walk17a A13)
        return [], "node"
    if nodes and all(hasattr(n, "node") for n in nodes):
        return [n.node for n in nodes], "node"
    steps = getattr(phase, "steps", None) if isinstance(phase, CommandsPhase) else None
    if steps and len(steps) > 1:
        return [step.what for step in steps], "step"
    return [], "node"


# The phases whose verb says its own words on Ctrl-C (run's and check's "interrupted: stopping every node", exec's
# and shell's the nodes' command): every other phase's interruption is said here, one line (walk10 C15, C20).
SAYS_ITS_OWN = ("run", "check", "sweep", "exec", "shell")
# what each verb's interruption may leave, and what then works
AFTER_INTERRUPT = {
    "up": "what it started may be half made; `nodeweave status` shows it, `nodeweave down` takes it down, "
          "`nodeweave up` again starts the rest",
    "down": "some of the job may still be up; `nodeweave status` shows it, `nodeweave down` again takes the rest down",
    "sync": "`nodeweave sync` again finishes it: it sends each node only what differs from the source (a done "
            "node's copy is left as it is, a partial one completed; each file is replaced whole, never half-written)",
    "stop": "a node not stopped may still be running its run; `nodeweave status` shows it, `nodeweave stop` again "
            "stops what is left (a node already stopped says so)",
}


# The plans of this process whose first phase began: from then on a Ctrl-C is said by that phase
# (interrupted_line); before it, by the command line's ``interrupted_early`` (walk12c C15).
BEGUN: List[str] = []


def interrupted_line(plan: Plan, phase, number: int, job: Optional[Execution] = None) -> str:
    """"interrupted: VERB stopped at step N of M (WHAT); where each node stood; what is left and what works", or ""
    where the phase's own words say it."""
    if phase.kind in SAYS_ITS_OWN:
        return ""
    what = phase.what or phase.kind
    after = AFTER_INTERRUPT.get(plan.verb, f"the steps before it are done; `nodeweave {plan.verb}` again finishes it")
    from nodeweave import nodeprogress

    where = nodeprogress.said()  # each node's (or step's) state in that phase (walk12c C15), grouped, as ranges
    if not where and job is not None and plan.verb in ASKED_AFTER and isinstance(phase, (CommandsPhase, WaitPhase)):
        where = platform_now(job)  # one step for every node (compose, kubectl apply), or the wait: the platform says
    return (f"interrupted: {plan.verb} stopped at step {number} of {len(plan.phases)} ({what})"
            + (f"; {where}" if where else "") + f"; {after}")


ASKED_AFTER = ("up", "down")  # one step acts on every node: a Ctrl-C's line asks the platform what each is now
ASK_S = 10.0  # at most this long; a second Ctrl-C stops asking


def platform_now(job: Execution) -> str:
    """"each node now: node-0 (running), node-1 (missing)" as the platform answers (``backend.states``, what
    ``status`` reads), grouped as ranges; "" when it cannot say within :data:`ASK_S` seconds."""
    import threading

    from nodeweave.entrypoint.nodelists import noted_ranges

    backend, found = job.backend, {}

    def ask() -> None:
        try:
            nodes = list(job.nodes) or list(backend.nodes())
            seen = backend.states(nodes)
            found["pairs"] = [(n.name, seen[n.index].word if n.index in seen else "no answer") for n in nodes]
        except Exception:  # noqa: BLE001 - the line is said without it; the Ctrl-C is what is reported
            pass

    if backend is None or not hasattr(backend, "states"):
        return ""
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    try:
        asking.join(ASK_S)
    except KeyboardInterrupt:
        return ""
    pairs = found.get("pairs")
    return f"each node now: {noted_ranges(pairs)}" if pairs else ""


def record(plan: Plan) -> None:
    """``$NODEWEAVE_PLAN_RECORD``: the plan about to run, as JSON (what a dry run's ``-o json`` prints)."""
    target = os.environ.get(RECORD_ENV)
    if not target:
        return
    from nodeweave.newfile import write_new

    def earlier_record(path: Path) -> None:  # judged again at the moment of writing (walk12 A23): a variable has no
        from nodeweave.entrypoint import bounded

        try:  # --force, and replaces only an earlier record, as the start-up check (habits.variables) said
            doc = json.loads(bounded.read_own(path, bounded.RECORD_CAP, "a plan record"))
        except (OSError, ValueError):  # not a regular file (bounded.NotOwnFile), too big, not JSON
            doc = None
        if not (isinstance(doc, dict) and "verb" in doc and "phases" in doc):
            raise UsageError(f"{RECORD_ENV}={target}: a file that is not an earlier plan record appeared there after "
                             "this command started; it is kept: give the variable another file")

    try:
        write_new(Path(target), (json.dumps(plan.to_dict(), indent=2, default=str) + "\n").encode("utf-8"),
                  RECORD_ENV, earlier_record, subject=f"{RECORD_ENV}={target}")
    except OSError as err:
        raise UsageError(f"{RECORD_ENV}={target}: cannot write the plan there ({err.strerror or err})") from None


def write_files(phase: FilesPhase, spec_dir: Path, say: Callable[[str], None]) -> None:
    """The planned files, all or none (``nodeweave.rendering.plan.write_all``: staged, then renamed into place);
    one without content is a fresh secret, made (0600) once the others are in."""
    from nodeweave.cluster import token
    from nodeweave.jobstate import refuse_in_the_way
    from nodeweave.rendering.plan import write_all

    for planned in phase.files:  # planned so too; asked again here, as the write is now
        refuse_in_the_way(spec_dir, spec_dir / planned.path)
    write_all([(spec_dir / f.path, f.content) for f in phase.files if f.content is not None])
    for planned in phase.files:
        if planned.content is None:
            token.rotate(spec_dir / planned.path, planned.mode)
    for planned in phase.files:
        say(f"wrote {planned.path} ({planned.what})")
