"""Lists of nodes: a StatefulSet's pods, pods by label, a compose project's containers, a hosts file.

Ordinals give rank order (``<name>-0`` first). Asking the cluster or the
engine happens only here and only when a caller needs the list; reading a
hosts file and naming a StatefulSet's pods are pure.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from nodeweave.entrypoint import bounded
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.remote import RemoteOptions, kind_class, make_target, pod_kind
from nodeweave.remote.base import Remote
from nodeweave.remote.names import check_container_name, check_dns_label, hosts_file_lines, refuse


def statefulset_targets(name: str, replicas: int, *, kind: str = "kubectl",
                        namespace: "str | None" = None, container: "str | None" = None,
                        options: RemoteOptions = RemoteOptions()) -> "list[Remote]":
    """Pods ``<name>-0 .. <name>-(N-1)`` of a StatefulSet, rank 0 first."""
    check_dns_label(name, "StatefulSet name")
    if replicas < 1:
        raise refuse("replica count", str(replicas), "a whole number of at least 1")
    return [make_target(kind, f"{name}-{i}", namespace=namespace, container=container, options=options)
            for i in range(replicas)]


def read_hosts_file(path: Path, *, kind: str = "ssh", namespace: "str | None" = None,
                    container: "str | None" = None,
                    options: RemoteOptions = RemoteOptions()) -> "list[Remote]":
    """One node per line, master first; ``#`` comments; DeepSpeed ``host slots=N`` lines work too: the lines as
    ``names.hosts_file_lines`` reads them for every verb, each a target of ``kind``."""
    from nodeweave.remote import kind_class

    found = []
    for where, name in hosts_file_lines(path, fold_case=kind_class(kind).kind.startswith("ssh")):
        try:
            found.append(make_target(kind, name, namespace=namespace, container=container, options=options))
        except UsageError as err:
            raise UsageError(f"{where}: {err}") from err
    return found


def _need(tool: str) -> str:
    from nodeweave.failures import need_tool

    return need_tool(tool, "it lists the nodes of this target kind (or choose another kind)")


def _ask_cluster(kind: str, argv: "list[str]", what: str) -> str:
    from nodeweave.failures import tool_failure

    _need(argv[0])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise tool_failure(kind, what, out.returncode, out.stderr or out.stdout)
    return out.stdout


def pods_by_selector(selector: str, *, kind: str = "kubectl", namespace: "str | None" = None,
                     container: "str | None" = None,
                     options: RemoteOptions = RemoteOptions()) -> "list[Remote]":
    """Running pods matching a label selector, sorted by StatefulSet ordinal."""
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/=!,() -]*$", selector):
        raise refuse("label selector", selector, "a Kubernetes label selector such as app=llama")
    cls = kind_class(pod_kind(kind, "kind"))
    argv = [*cls.cli_argv("get", options, namespace), "pods", "-l", selector,
            "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"]
    names = _ask_cluster(kind, argv, f"get pods -l {selector}").split()
    if not names:
        raise EnvironmentProblem(f"no running pod matches label selector {selector!r}"  # not up: exit 3 (A21)
                                 + (f" in namespace {namespace}" if namespace else "") + ": nothing is up there")
    return [make_target(kind, n, namespace=namespace, container=container, options=options)
            for n in sorted(names, key=ordinal_key)]


def statefulset_replicas(name: str, *, kind: str = "kubectl", namespace: "str | None" = None,
                         options: RemoteOptions = RemoteOptions()) -> int:
    """``.spec.replicas`` of a StatefulSet (elastic jobs change it with ``oc scale``)."""
    argv = [*kind_class(pod_kind(kind, "kind")).cli_argv("get", options, namespace), "statefulset", name,
            "-o", "jsonpath={.spec.replicas}"]
    out = _ask_cluster(kind, argv, f"get statefulset {name}").strip()
    if not out.isdigit():
        raise NodeweaveError(f"{kind} get statefulset {name} gave no replica count: {out[:200]!r}")
    return int(out)


def compose_targets(project: str, *, engine: str = "podman",
                    options: RemoteOptions = RemoteOptions()) -> "list[Remote]":
    """The running containers of a compose project, ordered by name (node-0 first)."""
    check_container_name(project, "compose project")
    from python_on_whales import DockerClient
    from python_on_whales.exceptions import DockerException

    client = DockerClient(client_call=[_need(kind_class(engine).tool)])
    try:
        containers = client.container.list(filters={"label": f"com.docker.compose.project={project}"})
    except DockerException as err:
        raise EnvironmentProblem(f"{engine} could not list the containers of compose project "
                                 f"{project!r}: {err}") from err
    if not containers:  # nothing of that name is up: exit 3, as every verb's "not up" (walk7 A21)
        raise EnvironmentProblem(f"compose project {project!r} has no running container under {engine}: nothing "
                                 "is up there")
    return [make_target(engine, c.name, options=options)
            for c in sorted(containers, key=lambda c: ordinal_key(c.name))]


def ordinal_key(name: str) -> "tuple[str, int, str]":
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2)), name) if match else (name, -1, name)
