"""The plans of ``stop``, ``exec`` and ``shell``: each built from the verb's input in one function.

``up``'s and ``down``'s are the backend's own (``Backend.plan_up``, ``Backend.plan_down``). The command line
parses and opens the cluster; these decide what the verb does, as a
:class:`~nodeweave.plan.Plan` that its ``--dry-run`` prints and its real run hands to
``nodeweave.cluster.execute``. ``run`` has its own (``runplan``), ``check`` too (``nodeweave.check.plan``).
"""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence

from nodeweave.cluster.base import Backend, Node
from nodeweave.cluster.phases import node_commands, step_phases  # noqa: F401 (verbs' callers import them here)
from nodeweave.plan import ExecPhase, Plan, ShellPhase, StopPhase


def stop_plan(backend: Backend, nodes: List[Node], grace: float, every_node: bool = True, verb: str = "stop") -> Plan:
    """Every node's entrypoint stops its run; then, when every node was asked, what is left on the platform."""
    from nodeweave.cluster.onbackend import leftover_steps
    from nodeweave.cluster.stop import stop_argv

    leftovers = tuple(leftover_steps(nodes)) if every_node else ()
    phase = StopPhase(f"stop the run on {len(nodes)} node(s): SIGTERM, SIGKILL after {grace:g} s",
                  nodes=node_commands(nodes, stop_argv(nodes, grace)), steps=leftovers, timeout=grace)
    return Plan(verb, backend.where, (phase,))


def exec_plan(backend: Backend, nodes: List[Node], command: List[str], variables: Mapping[str, str],
              timeout: Optional[float]) -> Plan:
    from nodeweave.cluster.execstop import GRACE_S, wrapped

    argv = [n.argv(wrapped(list(command), n.index), variables) for n in nodes]  # the pid recorded: a timeout ends it there
    phase = ExecPhase(f"run {command[0]} on {len(nodes)} node(s) at once, through a sh wrapper that records its pid "
                      "and execs it, argv untouched (at --timeout or Ctrl-C one more exec per node still running it "
                      f"sends SIGTERM to it and its children, SIGKILL {GRACE_S} s later)",
                      nodes=node_commands(nodes, argv),
                      timeout=timeout, command=tuple(command))
    return Plan("exec", backend.where, (phase,))


def shell_plan(backend: Backend, node: Node) -> Plan:
    phase = ShellPhase(f"an interactive shell in {node.name}", nodes=node_commands([node], [node.remote.shell_argv()]))
    return Plan("shell", backend.where, (phase,))
