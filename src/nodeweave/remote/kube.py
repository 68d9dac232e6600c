"""Pods: ``kubectl exec`` and ``oc exec``.

kubectl parses flags anywhere on its command line, so every command goes
after ``POD --``; rsync, which appends ``HOST rsync --server ...`` to its
remote shell, therefore runs through ``nodeweave.remote.rsh``, a tiny
wrapper that puts the pod and ``--`` where kubectl wants them (what
krsync's shell wrapper does). A dropped API connection is worth a retry.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeweave.remote.base import Remote, RemoteOptions, flags, rsync_quote, transient_text
from nodeweave.remote.names import check_dns_label, check_pod_name, refuse
from nodeweave.errors import UsageError

RSH_MARK = "::"  # separates the wrapper's fixed argv from what rsync appends


@dataclass(frozen=True)
class KubeExec(Remote):
    """A pod (in a namespace, a container of it) reached through the cluster's API."""

    namespace: "str | None" = None
    container: "str | None" = None  # None: the pod's default container

    namespaced = True

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "KubeExec":
        name, namespace, container = cls.read_label(name, namespace, container)
        check_pod_name(name)
        if namespace is not None:
            check_dns_label(namespace, "namespace")
        if container is not None:
            check_dns_label(container, "container")
        return cls(name, options, namespace, container)

    @classmethod
    def read_label(cls, name: str, namespace: "str | None", container: "str | None") -> "tuple":
        """``NS/NAME[CONTAINER]``, the form ``label`` prints (walk10 A29: `pod:default/yjob-1[trainer]` pasted back
        from a plan was "pod name ... is not accepted"), read back as the name, its namespace and container; one
        also given as -n/-c must agree with it. Each part is judged after, as -n's and -c's are."""
        rest, bracket, tail = name.partition("[")
        space, slash, pod = rest.partition("/")
        if not (bracket or slash):
            return name, namespace, container
        form = "NAME, NAMESPACE/NAME or NAMESPACE/NAME[CONTAINER]"
        if bracket and not tail.endswith("]"):
            raise refuse("pod address", name, form)
        try:  # each part judged as -n's, -c's and a pod name are; the refusal names the address as typed
            check_pod_name(pod if slash else rest)
            for part, what in ([(space, "namespace")] if slash else []) + ([(tail[:-1], "container")] if bracket else []):
                check_dns_label(part, what)
        except UsageError as err:
            raise refuse("pod address", name, f"{form}, each part a DNS name ({err})") from None
        if bracket:
            container = cls._agreed(container, tail[:-1], "container", "-c/--container", name)
        if slash:
            namespace = cls._agreed(namespace, space, "namespace", "-n/--namespace", name)
            rest = pod
        return rest, namespace, container

    @staticmethod
    def _agreed(given: "str | None", typed: str, what: str, option: str, name: str) -> str:
        if given is not None and given != typed:
            raise refuse(f"pod address's {what}", typed, f"the {what} these pods are read in, {given!r} ({option}, "
                         "or the spec's), or the address without it")
        return typed

    @property
    def label(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        # the address that reaches it as typed: kubectl's pod:..., oc's oc:... (replay11 R2: `sync --node oc:x`
        # without oc named pod:default/x, the kubectl address)
        kind = "pod" if self.kind == "kubectl" else self.kind
        return f"{kind}:{where}" + (f"[{self.container}]" if self.container else "")

    @classmethod
    def cli_argv(cls, verb: str, options: RemoteOptions, namespace: "str | None" = None) -> "list[str]":
        """``kubectl [--context C] VERB [-n NS]``: the start of every call to the cluster."""
        argv = [cls.kind] + (["--context", options.kube_context] if options.kube_context else [])
        return argv + [verb] + (["-n", namespace] if namespace else [])

    def _where(self) -> "list[str]":
        return ((["-n", self.namespace] if self.namespace else [])
                + (["-c", self.container] if self.container else []))

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        return [*self.cli_argv("exec", self.options), *flags(stdin, tty), *self._where(),
                self.name, "--", *argv]

    def rsh(self) -> str:
        wrapper = [self.options.python, "-m", "nodeweave.remote.rsh",
                   *self.cli_argv("exec", self.options), "-i", *self._where(), RSH_MARK]
        return " ".join(rsync_quote(t) for t in wrapper)

    def logs_argv(self, follow: bool = True, window: "tuple[str, ...]" = ()) -> "list[str]":
        return [*self.cli_argv("logs", self.options), *(["-f"] if follow else []), *window, *self._where(),
                self.name]

    def transient(self, code: int, stderr: str) -> bool:
        return code not in (126, 127) and transient_text(stderr) and not api_unreachable(stderr)


@dataclass(frozen=True)
class KubectlExec(KubeExec):
    kind = "kubectl"
    aliases = ("pod", "k8s", "kube")
    tool = "kubectl"


@dataclass(frozen=True)
class OcExec(KubeExec):
    kind = "oc"
    aliases = ("openshift",)
    tool = "oc"
    openshift = True


def api_unreachable(stderr: str) -> bool:
    """kubectl/oc could not reach the API server at all (nothing listens, no kubeconfig, a context it lacks): no
    retry helps, and it is the same answer for every pod, so the verb says it once (exit 3). One list of kubectl's
    words for it, ``nodeweave.failures.API_UNREACHABLE``."""
    from nodeweave.failures import API_UNREACHABLE

    return bool(API_UNREACHABLE.search(stderr or ""))
