"""Where a sync goes: typed targets, name validation, and the ways to list them.

Every name that reaches an argv (pod, namespace, container, host, path) is
checked here against the rule of the system that owns it, so nothing a user
types can become an option (leading ``-``) or a shell metacharacter on the
far side of ``ssh``. Listing pods or compose services asks the cluster or the
engine once; everything else is pure.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError

KINDS = ("podman", "docker", "kubectl", "oc", "ssh")
KIND_ALIASES = {"pod": "kubectl", "k8s": "kubectl", "kube": "kubectl", "openshift": "oc",
                "container": "podman"}

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONTAINER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")  # docker/podman's own rule
_HOST_LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$")
_SSH_USER = re.compile(r"^[a-z_][a-z0-9_.-]*$")
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._@+=,/-]*$")
_ROOTISH = {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt",
            "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin",
            "/usr/lib", "/usr/local", "/usr/local/bin", "/var", "/var/lib", "/var/log", "/var/tmp"}


@dataclass(frozen=True)
class Target:
    """One place to sync to, named the way its own system names it."""

    kind: str  # one of KINDS
    name: str  # container, pod, or [user@]host
    namespace: "str | None" = None  # kubectl/oc only
    container: "str | None" = None  # kubectl/oc only; None = the pod's default container

    @property
    def label(self) -> str:
        """Short unique name for tables and messages."""
        if self.kind in ("kubectl", "oc"):
            where = f"{self.namespace}/{self.name}" if self.namespace else self.name
            return f"pod:{where}" + (f"[{self.container}]" if self.container else "")
        return f"{self.kind}:{self.name}"


def _refuse(what: str, value: str, accepted: str) -> UsageError:
    return UsageError(f"{what} {value!r} is not accepted: {accepted}")


def check_dns_label(value: str, what: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise _refuse(what, value, "a DNS-1123 label (lowercase letters, digits and '-', "
                      "starting and ending with a letter or digit, at most 63 characters)")
    return value


def check_pod_name(value: str, what: str = "pod name") -> str:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.match(value):
        raise _refuse(what, value, "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                      "starting and ending with a letter or digit, at most 253 characters)")
    return value


def check_container_name(value: str, what: str = "container name") -> str:
    if len(value) > 255 or not _CONTAINER_NAME.match(value):
        raise _refuse(what, value, "a container name or ID ([a-zA-Z0-9][a-zA-Z0-9_.-]*)")
    return value


def check_ssh_host(value: str, what: str = "host") -> str:
    user, _, host = value.rpartition("@")
    if user and not _SSH_USER.match(user):
        raise _refuse(what, value, "[user@]host, where user is a POSIX login name ([a-z_][a-z0-9_.-]*)")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.version == 6:
        raise _refuse(what, value, "a host name or IPv4 address (give IPv6 hosts a name in "
                      "/etc/hosts or ~/.ssh/config: rsync's host:path form cannot carry one)")
    labels = host.rstrip(".").split(".") if host else []
    if (address is None and (not labels or len(host) > 253
                             or not all(len(lab) <= 63 and _HOST_LABEL.match(lab) for lab in labels))):
        raise _refuse(what, value, "[user@]host with an RFC 1123 host name (letters, digits, '-' "
                      "and '.') or an IPv4 address")
    return value


def check_dest(dest: str, what: str = "DEST") -> str:
    """An absolute, normalised path that is not a system directory."""
    if not dest.startswith("/"):
        raise _refuse(what, dest, "an absolute path on the targets such as /workspace "
                      "('~' and relative paths mean different places on different nodes)")
    if not _SAFE_PATH.match(dest):
        raise _refuse(what, dest, "an absolute path of letters, digits and . _ @ + = , - / "
                      "(no spaces, quotes or shell characters)")
    parts = [p for p in dest.split("/") if p]
    if ".." in parts or "." in parts:
        raise _refuse(what, dest, "a normalised absolute path without '.' or '..' components")
    normal = "/" + "/".join(parts)
    if normal in _ROOTISH:
        raise _refuse(what, dest, "a workspace directory such as /workspace or /home/me/project, "
                      "not a system directory (a sync with --delete there would wipe it)")
    return normal


def parse_target(text: str, *, namespace: "str | None" = None,
                 container: "str | None" = None) -> Target:
    """``KIND:NAME`` (``podman:trainer-0``, ``pod:trainer-0``, ``ssh:me@gpu01``) to a Target."""
    kind, sep, name = text.partition(":")
    if not sep:
        raise _refuse("target", text, "KIND:NAME with KIND one of "
                      f"{', '.join(KINDS + tuple(KIND_ALIASES))} (e.g. podman:trainer-0, "
                      "pod:llama-0, ssh:me@gpu01)")
    kind = KIND_ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise _refuse("target kind", kind, f"one of {', '.join(KINDS + tuple(KIND_ALIASES))}")
    return make_target(kind, name, namespace=namespace, container=container)


def make_target(kind: str, name: str, *, namespace: "str | None" = None,
                container: "str | None" = None) -> Target:
    """A validated Target; the message names the offending part."""
    if kind in ("kubectl", "oc"):
        check_pod_name(name)
        if namespace is not None:
            check_dns_label(namespace, "namespace")
        if container is not None:
            check_dns_label(container, "container")
        return Target(kind, name, namespace, container)
    if kind in ("podman", "docker"):
        return Target(kind, check_container_name(name))
    if kind == "ssh":
        return Target(kind, check_ssh_host(name))
    raise _refuse("target kind", kind, f"one of {', '.join(KINDS)}")


def statefulset_targets(name: str, replicas: int, *, kind: str = "kubectl",
                        namespace: "str | None" = None,
                        container: "str | None" = None) -> "list[Target]":
    """Pods ``<name>-0 .. <name>-(N-1)`` of a StatefulSet, rank 0 first."""
    check_dns_label(name, "StatefulSet name")
    if replicas < 1:
        raise _refuse("replica count", str(replicas), "a whole number of at least 1")
    return [make_target(kind, f"{name}-{i}", namespace=namespace, container=container)
            for i in range(replicas)]


def read_hosts_file(path: Path) -> "list[Target]":
    """One host per line, master first; ``#`` comments; DeepSpeed ``host slots=N`` lines work too."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"hosts file {path}: cannot read it ({err})") from err
    targets, seen = [], set()
    for number, line in enumerate(lines, start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        host = words[0]
        try:
            target = make_target("ssh", host)
        except UsageError as err:
            raise UsageError(f"hosts file {path}, line {number}: {err}") from err
        if host in seen:
            raise UsageError(f"hosts file {path}, line {number}: host {host!r} is listed twice")
        seen.add(host)
        targets.append(target)
    if not targets:
        raise UsageError(f"hosts file {path} lists no host: write one host name per line, master first")
    return targets


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise EnvironmentProblem(f"{tool} is not on PATH; install it or choose another target kind")
    return found


def pods_by_selector(selector: str, *, kind: str = "kubectl", namespace: "str | None" = None,
                     container: "str | None" = None) -> "list[Target]":
    """Running pods matching a label selector, sorted by StatefulSet ordinal."""
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/=!,() -]*$", selector):
        raise _refuse("label selector", selector, "a Kubernetes label selector such as app=llama")
    argv = [_need(kind), "get", "pods", "-l", selector, "--field-selector=status.phase=Running",
            "-o", "jsonpath={.items[*].metadata.name}"]
    if namespace:
        argv[2:2] = ["-n", namespace]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise NodeweaveError(f"{kind} get pods -l {selector} failed: {out.stderr.strip()[:500]}")
    names = out.stdout.split()
    if not names:
        raise NodeweaveError(f"no running pod matches label selector {selector!r}"
                             + (f" in namespace {namespace}" if namespace else ""))
    return [make_target(kind, n, namespace=namespace, container=container)
            for n in sorted(names, key=_ordinal_key)]


def statefulset_replicas(name: str, *, kind: str = "kubectl", namespace: "str | None" = None) -> int:
    """``.spec.replicas`` of a StatefulSet (elastic jobs change it with ``oc scale``)."""
    argv = [_need(kind), "get", "statefulset", name, "-o", "jsonpath={.spec.replicas}"]
    if namespace:
        argv[2:2] = ["-n", namespace]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or not out.stdout.strip().isdigit():
        raise NodeweaveError(f"{kind} get statefulset {name} failed: "
                             f"{(out.stderr or out.stdout).strip()[:500]}")
    return int(out.stdout.strip())


def compose_targets(project: str, *, engine: str = "podman") -> "list[Target]":
    """The running containers of a compose project, ordered by name (node-0 first)."""
    check_container_name(project, "compose project")
    from python_on_whales import DockerClient
    from python_on_whales.exceptions import DockerException

    client = DockerClient(client_call=[_need(engine)])
    try:
        containers = client.container.list(filters={"label": f"com.docker.compose.project={project}"})
    except DockerException as err:
        raise NodeweaveError(f"{engine} could not list the containers of compose project "
                             f"{project!r}: {err}") from err
    if not containers:
        raise NodeweaveError(f"compose project {project!r} has no running container under {engine}")
    return [make_target(engine, c.name) for c in sorted(containers, key=lambda c: _ordinal_key(c.name))]


def _ordinal_key(name: str) -> "tuple[str, int, str]":
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2)), name) if match else (name, -1, name)
