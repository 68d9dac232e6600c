"""A transport flag that does nothing for the nodes named directly (KIND:NAME, a hosts file), by their kinds.

``hosts probe`` and ``sync``'s direct targets reach each node by its kind (ssh, podman, pod, ...); --namespace,
--container and --kube-context are for pods, --ssh-option for ssh. Given for nodes none of which takes it, the
flag is refused, exit 2, from the kinds alone: before any value is judged, any hosts file read or any node
reached (walk5 W18). The cluster verbs judge their reach flags by target the same way
(``nodeweave.cluster.options.refuse_idle_flags``).
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from nodeweave.errors import UsageError


def kinds_named(words: Iterable[str], default: str, hosts_file: bool = False, also: Sequence = ()) -> list:
    """The transport classes of ``words`` (KIND:NAME, else ``default``'s kind; a hosts file's lines are
    ``default``'s too) and ``also`` (classes named another way), known before any name is judged."""
    from nodeweave import remote

    base = remote.kind_class(default, "--via")
    return [remote.target_kind(w) if ":" in w else base for w in words] + ([base] if hosts_file else []) + list(also)


def refuse_idle_transport_flags(kinds: list, what: str, namespace: Optional[str] = None,
                                container: Optional[str] = None, ssh_options: Sequence[str] = (),
                                kube_context: Optional[str] = None) -> None:
    """Exit 2 naming the first transport flag that none of ``kinds`` reads (``what``: "hosts", "targets")."""
    if not kinds:
        return  # nothing named: the verb says so itself
    names = ", ".join(sorted({k.kind for k in kinds}))
    if not any(k.namespaced for k in kinds):
        for flag, value in (("--namespace", namespace), ("--container", container), ("--kube-context", kube_context)):
            if value is not None:
                raise UsageError(f"{flag} {value} does nothing for {names} {what} (it is for pods: --node pod:NAME "
                                 "or oc:NAME): leave it out")
    if ssh_options and not any(k.kind.startswith("ssh") for k in kinds):
        raise UsageError(f"--ssh-option {ssh_options[0]} does nothing for {names} {what} (no ssh reaches them): "
                         "leave it out")
