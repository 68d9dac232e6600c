"""Reaching a node: one class per way in, in one table.

``KINDS`` maps each kind (``podman``, ``docker``, ``kubectl``, ``oc``,
``ssh``, ``ssh+podman``, ``ssh+docker``, ``srun``) to its class; ``ALIASES`` maps the
other spellings users type (``pod``, ``k8s``, ``kube`` -> kubectl,
``openshift`` -> oc, ``container`` -> podman). A remote gives the argv that
runs a command there (``exec_argv``), rsync's ``--rsh``, its logs and an
interactive shell, and says which failures a retry can fix; sync, hosts
probe and the cluster verbs use only this. Adding a transport is one class
in ``engine.py``/``kube.py``/``ssh.py`` (or a new module), one row in
``TRANSPORTS`` below, and its argv test in ``tests/test_remote.py``.
"""

from __future__ import annotations

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.remote.base import Remote, RemoteOptions
from nodeweave.remote.engine import DockerExec, PodmanExec
from nodeweave.remote.kube import KubectlExec, OcExec
from nodeweave.remote.names import check_delete_dest, check_dest, check_ssh_host, ipv6_literal, refuse
from nodeweave.remote.names import refuse_node_state
from nodeweave.remote.srun import Srun
from nodeweave.remote.ssh import Ssh, SshDocker, SshPodman

TRANSPORTS: "tuple[type[Remote], ...]" = (PodmanExec, DockerExec, KubectlExec, OcExec, Ssh,
                                          SshPodman, SshDocker, Srun)
KINDS: "dict[str, type[Remote]]" = {cls.kind: cls for cls in TRANSPORTS}
ALIASES: "dict[str, str]" = {alias: cls.kind for cls in TRANSPORTS for alias in cls.aliases}

__all__ = ["ALIASES", "KINDS", "Remote", "RemoteOptions", "TRANSPORTS", "check_delete_dest", "check_dest",
           "refuse_node_state", "check_ssh_host", "cluster_kind", "engine_kind", "kind_class", "make_target", "parse_target", "pod_kind",
           "refuse_host_port", "refuse_same_host", "target_kind"]


def _all_spellings() -> str:
    return ", ".join(list(KINDS) + list(ALIASES))


def kind_class(kind: str, what: str = "target kind") -> "type[Remote]":
    """The class for ``kind`` or one of its aliases."""
    cls = KINDS.get(ALIASES.get(kind, kind))
    if cls is None:
        raise refuse(what, kind, f"one of {_all_spellings()}")
    return cls


def make_target(kind: str, name: str, *, namespace: "str | None" = None,
                container: "str | None" = None, options: RemoteOptions = RemoteOptions()) -> Remote:
    """A validated remote of ``kind``; the message names the offending part."""
    return kind_class(kind).make(name, namespace=namespace, container=container, options=options)


def parse_target(text: str, *, namespace: "str | None" = None, container: "str | None" = None,
                 options: RemoteOptions = RemoteOptions()) -> Remote:
    """``KIND:NAME`` (``podman:trainer-0``, ``pod:llama-0``, ``ssh:me@gpu01``) to a remote."""
    kind, sep, name = text.partition(":")
    refuse_host_port(text)
    if not sep:
        raise refuse("target", text, f"KIND:NAME with KIND one of {_all_spellings()} "
                     "(e.g. podman:trainer-0, pod:llama-0, ssh:me@gpu01, ssh+docker:gpu01/trainer)")
    return make_target(kind, name, namespace=namespace, container=container, options=options)


def target_kind(text: str) -> "type[Remote]":
    """The class a ``KIND:NAME`` text names (to ask what it needs before building it)."""
    refuse_host_port(text)
    return kind_class(text.partition(":")[0])


def refuse_host_port(text: str) -> None:
    """A host where a target is read, judged by the host rule (``check_ssh_host``) rather than read as KIND:NAME:
    ``gpu01:2222`` is a host and its port, answered as ``--host gpu01:22`` is (walk7 A8: it read as kind ``gpu01``
    named ``2222``); an IPv6 address (``2001:db8::1``, ``::1``, ``[::1]``, ``me@[fd00::1]:22``) is refused as
    ``--host`` refuses it (walk13 A1: it read as kind ``2001``, ``''`` or ``[``)."""
    kind, sep, port = text.partition(":")
    if sep and ALIASES.get(kind, kind) not in KINDS and ipv6_literal(text):
        check_ssh_host(text, "host")
    if sep and digits(port) and ALIASES.get(kind, kind) not in KINDS:
        raise refuse("target", text, f"KIND:NAME, and a host takes no port: ssh takes the port apart, as "
                     f"--ssh-option Port={port} (or a `Host {kind.rpartition('@')[2]}` entry with `Port {port}` in "
                     f"~/.ssh/config), and ssh:{kind}")


def refuse_same_host(targets: "list[Remote]", flag: str = "--node") -> None:
    """Exit 2 when two ssh targets name one host: a host name is case-insensitive and a trailing dot names the
    same host (``hostport.host_key``, the rule of ``up --host`` and ``init --host``); a host's place is its rank, and a
    hostfile would list it twice (walk7 A8: ``hosts probe --node GPU01 --node gpu01`` planned two hosts)."""
    from nodeweave.entrypoint.hostport import host_key

    seen: "dict[tuple, Remote]" = {}
    for target in targets:
        if not target.kind.startswith("ssh"):
            continue
        host, slash, rest = target.name.partition("/")
        key = (target.kind, host_key(host.rpartition("@")[2]), rest)
        if key in seen:
            raise refuse(flag, target.label, f"each host once: {seen[key].label} names the same host (a host name "
                         "is case-insensitive and a trailing dot names the same host)")
        seen[key] = target


def pod_kind(kind: str, what: str = "--kube-cli") -> str:
    """``kind`` when it names a pod transport (kubectl, oc), else a usage error."""
    cls = KINDS.get(ALIASES.get(kind, kind))
    if cls is None or not cls.namespaced:
        raise refuse(what, kind, " or ".join(k for k, c in KINDS.items() if c.namespaced))
    return cls.kind


def cluster_kind(openshift: bool) -> str:
    """The pod transport a spec's cluster is reached with: oc on OpenShift, else kubectl."""
    return next(c.kind for c in TRANSPORTS if c.namespaced and c.openshift == openshift)


def engine_kind(kind: str, what: str = "--engine") -> str:
    """``kind`` when it names a local container engine (podman, docker), else a usage error."""
    cls = KINDS.get(ALIASES.get(kind, kind))
    if cls is None or not cls.engine:
        raise refuse(what, kind, " or ".join(k for k, c in KINDS.items() if c.engine))
    return cls.kind
