"""The plans of ``up``, ``down``, ``stop``, ``exec`` and ``shell``: each built from the verb's input in one function.

The command line parses and opens the cluster; these decide what the verb does, as a
:class:`~nodeweave.plan.Plan` that its ``--dry-run`` prints and its real run hands to
``nodeweave.cluster.execute``. ``run`` has its own (``runplan``), ``check`` too (``nodeweave.check.plan``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from nodeweave.cluster.base import Backend, Node
from nodeweave.plan import (AllocatePhase, CommandsPhase, ExecPhase, FilesPhase, NodeCommand, Phase, Plan,
                            ShellPhase, StopPhase, WaitPhase)


def node_commands(nodes: Sequence[Node], argv: Sequence[Sequence[str]]) -> tuple:
    return tuple(NodeCommand(n.name, n.remote.label, tuple(a)) for n, a in zip(nodes, argv))


def step_phases(phases) -> List[Phase]:
    """A backend's phases of steps (each phase's steps at once) as plan phases."""
    return [CommandsPhase("; ".join(s.what for s in steps), steps=tuple(steps)) for steps in phases if steps]


def up_plan(backend: Backend, mode: str, image: Optional[str], timeout: float, wait: bool,
            check: Optional[Callable[[List[Node]], Phase]] = None) -> Plan:
    """Write the job's files, take the nodes (a Slurm allocation), run the backend's up steps, wait for every
    node, then (``--check``: the phase ``check`` makes for the nodes) check them. Planning takes nothing."""
    files = backend.up_files(mode)
    notes = tuple(backend.up_notes(image))  # the image, and what this environment changes in the steps
    notes += tuple(backend.renamed)  # what up made under the spec's old name stays up beside the new job
    spec = getattr(backend, "spec", None)
    if spec is not None and spec.start_differs:  # a range or recovery: the count is not simply `nodes`
        notes += (f"{spec.name} {spec.starts}",)
    phases = [FilesPhase("the job's files", files=tuple(files))] if files else []
    allocation = backend.allocation_step()  # Slurm: later phases name its job and nodes <job-id>, <node0>, ...
    if allocation is not None:
        phases.append(AllocatePhase(allocation.what, steps=(allocation,)))
    phases += step_phases(backend.up_steps(mode, image))
    nodes = backend.nodes(for_up=True)
    if wait:
        waited = mode if backend.holds else "run"  # bare hosts: nothing to hold; up means every host answers
        what = (f"until {len(nodes)} node(s) {'hold' if waited == 'hold' else 'run'}: "
                + ", ".join(n.remote.label for n in nodes))
        phases.append(WaitPhase(what, nodes=node_commands(nodes, [()] * len(nodes)), timeout=timeout, mode=waited))
    if check is not None:
        phases.append(check(nodes))
    return Plan("up", backend.where(), tuple(phases), notes)


def down_plan(backend: Backend, delete_claims: bool, renamed: Sequence[Tuple[Backend, str]] = ()) -> Plan:
    """What ``up`` made, taken down; bare hosts have nothing to take down but the runs, which are stopped.
    ``renamed``: jobs this spec's ``up`` made under a name it no longer has (backend, why), taken down first."""
    phases = backend.down_steps(delete_claims)
    if backend.target == "hosts" and not phases and not renamed:  # bare hosts: the runs stopped, the mark taken back
        stopped = stop_plan(backend, backend.nodes(), 10.0, verb="down")
        (stop,) = stopped.phases
        return replace(stopped, phases=(replace(stop, steps=stop.steps + tuple(backend.release_steps())),))
    earlier: List[Phase] = []
    notes: Tuple[str, ...] = ()
    for old, why in renamed:
        old_files = old.down_files(delete_claims)
        notes += (why,)
        earlier += [FilesPhase(f"job {old.spec.name}'s files", files=tuple(old_files))] if old_files else []
        earlier += step_phases(old.down_steps(delete_claims))
    files = backend.down_files(delete_claims)
    planned = [FilesPhase("the job's files", files=tuple(files))] if files else []
    return Plan("down", backend.where(), tuple(earlier + planned + step_phases(phases)), notes)


def stop_plan(backend: Backend, nodes: List[Node], grace: float, every_node: bool = True, verb: str = "stop") -> Plan:
    """Every node's entrypoint stops its run; then, when every node was asked, what is left on the platform."""
    from nodeweave.cluster.stop import stop_argv

    leftovers = tuple(backend.leftover_steps()) if every_node else ()
    phase = StopPhase(f"stop the run on {len(nodes)} node(s): SIGTERM, SIGKILL after {grace:g} s",
                  nodes=node_commands(nodes, stop_argv(nodes, grace)), steps=leftovers, timeout=grace)
    return Plan(verb, backend.where(), (phase,))


def exec_plan(backend: Backend, nodes: List[Node], command: List[str], variables: Mapping[str, str],
              timeout: Optional[float]) -> Plan:
    argv = [n.argv(list(command), variables) for n in nodes]
    phase = ExecPhase(f"run {command[0]} on {len(nodes)} node(s) at once", nodes=node_commands(nodes, argv),
                      timeout=timeout, command=tuple(command))
    return Plan("exec", backend.where(), (phase,))


def shell_plan(backend: Backend, node: Node) -> Plan:
    phase = ShellPhase(f"an interactive shell in {node.name}", nodes=node_commands([node], [node.remote.shell_argv()]))
    return Plan("shell", backend.where(), (phase,))
