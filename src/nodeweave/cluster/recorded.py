"""What this folder's ``up`` made, read back: the verbs act on it even after the spec's name or namespace changed.

``up`` records what it made in ``.nodeweave/<job>/cluster.json`` (``made``: the job's name, the folder's mark,
the namespace or compose project, the spec file). A spec renamed while its job is up leaves that record
under the old name: ``down`` takes the old job down too (a backend opened on the recorded name, options and
namespace), ``status`` says it is there, ``up`` notes it. A namespace changed in the spec while the job is
up: every verb but ``up`` keeps to the recorded namespace, and ``up`` refuses until ``down`` took the old one
down; the same for ``up`` on another target, or another engine (local, hosts), than the recorded one; a verb
that names no engine uses the recorded one, and a docker or podman daemon reached through $DOCKER_HOST or
$CONTAINER_HOST at ``up`` is named when a later shell lacks it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import List, Tuple

from nodeweave.cluster.base import Backend
from nodeweave.cluster.onbackend import refuse_foreign
from nodeweave.cluster.options import ClusterOptions, load_made, load_state, recorded_elsewhere
from nodeweave.jobstate import STATE_DIR
from nodeweave.errors import EnvironmentProblem


def renamed_jobs(spec, spec_path: Path) -> List[dict]:
    """What ``up`` of this spec file made under a name the spec no longer has, still recorded as up."""
    return recorded_elsewhere(spec_path, spec.name)


def renamed_line(made: dict, spec, spec_path: Path) -> str:
    """One line: where the old job is recorded, what it is, and the verb that takes it down."""
    return (f"{STATE_DIR}/{made['job']}/ records a cluster `nodeweave up` started as job {made['job']} "
            f"({made.get('where') or made.get('target')}), which {spec_path.name} no longer names (its name is now "
            f"{spec.name}); `nodeweave down` takes it down")


def renamed_down(spec, spec_path: Path) -> List[Tuple[Backend, str]]:
    """(backend, why) for each job this spec's ``up`` made under an old name, each checked to be this folder's."""
    found = []
    for made in renamed_jobs(spec, spec_path):
        old = open_recorded(spec, spec_path, made)
        refuse_foreign(old)
        found.append((old, renamed_line(made, spec, spec_path).replace("; `nodeweave down` takes it down",
                                                                        ": this down takes it down first")))
    return found


def open_recorded(spec, spec_path: Path, made: dict) -> Backend:
    """A backend on the job ``made`` records: its name, the options ``up`` was told, the namespace it used."""
    from nodeweave.cluster import open_backend

    options = load_state(spec_path, made["job"])
    if made.get("namespace"):
        options = replace(options, namespace=made["namespace"])
    old = replace(spec, name=made["job"])
    return open_backend(old, spec_path, options.checked())


def recorded_namespace(spec, spec_path: Path, checked: ClusterOptions, given: ClusterOptions,
                       for_up: bool) -> ClusterOptions:
    """Kubernetes: the namespace ``up`` made the job in, for every verb but ``up`` unless ``--namespace`` says
    otherwise; ``up`` into another namespace while the recorded one is up is refused (exit 3), and so is ``up`` on
    another target than the recorded one (walk7 A17: the first cluster kept its GPUs, and down, status and logs
    followed the second only)."""
    made = load_made(spec_path, spec.name)
    if for_up and made is not None and made.get("target") and made["target"] != checked.target:
        where = made.get("where") or made.get("namespace") or made.get("project") or made["target"]
        raise EnvironmentProblem(
            f"{STATE_DIR}/{spec.name}/cluster.json records {spec.name} up on {made['target']} ({where}), and this up "
            f"would start it on {checked.target}: a second cluster beside the first, which down, status and logs "
            f"would then no longer see; `nodeweave down` takes the recorded one down first (then `nodeweave up`)")
    checked = recorded_engine(spec, made, checked, for_up)
    if checked.target != "kubernetes":
        return checked
    if made is None or made.get("target") != "kubernetes" or not made.get("namespace"):
        return checked
    wanted = checked.namespace or spec.kubernetes.namespace
    if made["namespace"] == wanted:
        return checked
    if for_up:
        raise EnvironmentProblem(
            f"{STATE_DIR}/{spec.name}/cluster.json records {spec.name} up in namespace {made['namespace']}, and this "
            f"up would start it in {wanted}: `nodeweave down` takes the recorded one down first (then `nodeweave up`)")
    if given.namespace is not None:
        return checked
    return replace(checked, namespace=made["namespace"])


def recorded_engine(spec, made, checked: ClusterOptions, for_up: bool) -> ClusterOptions:
    """The engine ``up`` made the job on is part of where it is, as the target is: a verb that names no engine
    (--engine, $NODEWEAVE_ENGINE) uses the recorded one, and ``up`` on another engine than the recorded one is
    refused, exit 3, as ``up`` on another target is (walk10 C19: ``up --engine podman`` beside a job up on docker
    wrote a new job token the docker nodes mount and started a second cluster the verbs no longer saw)."""
    from nodeweave.engines import engine_said

    if made is None or not made.get("engine") or made.get("target") != checked.target:
        return checked
    said = checked.engine or (engine_said() if checked.target == "local" else None)
    if said is None:
        return replace(checked, engine=made["engine"])
    if said == made["engine"]:
        return checked
    import os

    from nodeweave.engines import ENGINE_VARIABLE

    where = made.get("where") or made["engine"]
    by_variable = not checked.engine or os.environ.get(ENGINE_VARIABLE) == said  # the variable, named as such
    source = f"{ENGINE_VARIABLE}={said} in this environment" if by_variable else f"--engine {said}"
    if for_up:
        raise EnvironmentProblem(
            f"{STATE_DIR}/{spec.name}/cluster.json records {spec.name} up on {made['engine']} ({where}), and this up "
            f"would start it on {said} ({source}): a second cluster beside the first, which down, status and logs "
            f"would then no longer see; `nodeweave down --engine {made['engine']}` takes the recorded one down first "
            f"(then `nodeweave up --engine {said}`)")
    # every other verb: the cluster is where up made it, and the engine said is not there (walk17a A4: "docker's
    # daemon does not answer: start it" was said for a cluster up on podman, naming neither)
    raise EnvironmentProblem(
        f"{STATE_DIR}/{spec.name}/cluster.json records {spec.name} brought up on {made['engine']} ({where}), and "
        f"{source} asks for {said}, where it is not: "
        + (f"unset {ENGINE_VARIABLE}" if by_variable else "leave out --engine")
        + f" (every verb then follows the record), or give --engine {made['engine']}")
