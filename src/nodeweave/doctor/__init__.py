"""``nodeweave doctor``: what this node is, what the entrypoint would do, and what is wrong.

Built on the entrypoint's Python API (``nodeweave.entrypoint.parse``, then
``recovery.roles.plan_node``: the one way every entrypoint path plans the node,
so a spare is judged as a spare), never on a copy of its detection: the node, the plan and its
warnings are what ``nodeweave-entrypoint`` would act on, with its rule table
evaluated in ``audit`` mode (the node on its own, not only this launch).
Doctor adds its own rows of the same type (``rules.py``); each finding takes
its severity and remedy from its row. No torch import here: ``--bench`` runs
the bench worker in processes of its own.

``diagnose(sysroot=None, env=None) -> Diagnosis``; ``Diagnosis.exit_code`` is
1 when any finding is an error, else 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nodeweave.doctor.findings import ERROR, INFO, WARNING, Finding, findings_of, grade_plan_warning, merge
from nodeweave.doctor.rules import own_hits
from nodeweave.errors import EXIT_FAILURE, EXIT_OK, UsageError

SCHEMA = "nodeweave.doctor/1"
# The plan needs a command to launch; doctor never launches it.
_PLACEHOLDER_COMMAND = ["nodeweave-doctor-placeholder"]


@dataclass
class Diagnosis:
    """The node, the entrypoint's plan for it, and the graded findings."""

    node: object
    plan: object
    findings: "list[Finding]"
    bench: "dict | None" = None

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURE if any(f.severity == ERROR for f in self.findings) else EXIT_OK

    def counts(self) -> "dict[str, int]":
        return {level: sum(f.severity == level for f in self.findings) for level in (ERROR, WARNING, INFO)}

    def to_dict(self) -> dict:
        plan = self.plan
        return {
            "schema": SCHEMA,
            "ok": self.exit_code == EXIT_OK,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "node": self.node.to_dict() if self.node is not None else None,
            "plan": None if plan is None else {
                "topology": plan.topology.to_dict() if plan.topology else None,
                "env": [var.to_dict() for var in plan.env],
                "warnings": list(plan.warnings),
                "errors": list(plan.errors),
                "role": plan.role,  # training node i, spare, left out (recovery/roles.py); null without a plan
            },
            "bench": self.bench,
        }


def _single_node(node):
    """The topology of this node on its own, for when the real one could not be found."""
    from nodeweave.entrypoint import Topology, Value

    source = "doctor: this node alone"
    return Topology(node_rank=Value(value=0, source=source), nnodes=Value(value="1", source=source),
                    nnodes_min=1, nnodes_max=1, nproc_per_node=Value(value=max(1, node.gpus.count), source=source),
                    master_addr=Value(value="127.0.0.1", source=source), master_port=Value(value=29500, source=source),
                    world_size=max(1, node.gpus.count), is_master=True)


def diagnose(sysroot: "str | None" = None, env: "dict[str, str] | None" = None) -> Diagnosis:
    """Everything doctor knows about the node under ``sysroot`` with the variables ``env``."""
    from nodeweave.entrypoint import EntrypointError, Root, detect, parse, plan_env
    from nodeweave.entrypoint.planning.rules import RULES, Context, evaluate
    from nodeweave.entrypoint.recovery.roles import plan_node

    env = dict(os.environ) if env is None else dict(env)
    given, source = (sysroot, "the command line") if sysroot is not None else \
        (env.get("NODEWEAVE_SYSROOT"), "the environment")
    if given:  # the entrypoint's own rule for --sysroot and NODEWEAVE_SYSROOT: one line, exit 2
        from nodeweave.entrypoint.planning.contract import read_sysroot

        try:
            read_sysroot(given, "--sysroot" if sysroot is not None else "NODEWEAVE_SYSROOT", source)
        except EntrypointError as err:
            raise UsageError(str(err)) from None
    argv = ["--no-wait"] + (["--sysroot", sysroot] if sysroot else []) + ["--"] + _PLACEHOLDER_COMMAND
    try:
        settings = parse(argv, env)
    except EntrypointError as err:  # a bad NODEWEAVE_* value: report it, still examine the hardware
        root = Root(sysroot or env.get("NODEWEAVE_SYSROOT") or "/")
        node = detect(root.path, env)
        finding = Finding(ERROR, "entrypoint-settings", str(err),
                          "fix the variable named; nodeweave-entrypoint --help lists what each accepts", "entrypoint")
        hits = evaluate(RULES, Context(node, env, root, audit=True))
        return Diagnosis(node, None, merge([finding] + findings_of(hits, "entrypoint"),
                                           findings_of(own_hits(node, env, root, False))))
    plan = plan_node(settings, partial=True, audit=True)  # as the entrypoint plans it: a spare plans as a spare
    if plan.topology is None:
        # No topology, so the env policy did not run: run it as for this node alone.
        plan.env = plan_env(plan.node, _single_node(plan.node), settings, Root(settings.sysroot), plan.warnings,
                            audit=True)
    node = plan.node
    graded = [grade_plan_warning(message) for message in plan.warnings]
    graded += [Finding(ERROR, "plan-error", error["message"],
                       "fix the value named (nodeweave-entrypoint --explain shows the whole plan); the "
                       f"entrypoint would exit {error['exit_code']}", "entrypoint") for error in plan.errors]
    multi = bool(plan.topology) and plan.topology.nnodes_max > 1
    own = findings_of(own_hits(node, env, Root(settings.sysroot), multi))
    return Diagnosis(node, plan, merge(graded, own))
