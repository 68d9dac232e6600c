"""``--node``: the one way every verb picks nodes; ``-t/--target`` (with its reach flags) names the cluster.

Why one selector: nodes used to be picked five ways (``--node I`` on status/logs/exec, ``shell
INDEX``, ``sync --to KIND:NAME``, ``hosts probe --via KIND NAMES``, ``doctor --on KIND:NAME``).
Now every verb that acts on nodes takes ``--node``, repeated or as a list, as kubectl's
``-l``/SkyPilot's cluster names read in one place: an index ``1``, a range ``0,2-3``, a node's
name (``node-1``, its container/pod/host name) or its address ``KIND:NAME``, the "reached as"
column of ``status``. Verbs that can reach nodes without a cluster (``sync``, ``doctor
--cluster``, ``hosts probe``) take an address there as the node itself. The old spellings work
for one release with a note (``nodeweave.cli.habits.spellings``); tests/test_cli_conventions.py
fails a verb that picks nodes another way.
"""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

import typer

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.errors import UsageError
from nodeweave.entrypoint.nodelists import ranges

NODE_HELP = ("Only these nodes (repeat, or a list): an index 1, a range 0,2-3, a node's name (node-1, its "
             "container, pod or host), or its address KIND:NAME as `status` shows it (podman:llama-0, pod:llama-0, "
             "ssh:gpu01); default: every node")
_RANGE = re.compile(r"^([0-9]+)-([0-9]+)$")  # ASCII digits: \d takes '١' (walk13 A22)
# what kubectl (--all), shells (*) and people write for every node: --node's default already is every node
EVERY_WORDS = ("all", "*", "every", "any", "each")


def span(count: int) -> str:
    """The indices of ``count`` nodes as --node takes them: ``0-3``, ``0`` (never ``0..3``, which it refuses)."""
    if count <= 0:
        return "none: there are no nodes"
    return "0" if count == 1 else f"0-{count - 1}"


def every_hint(word: str) -> str:
    """``; leave --node off for every node`` for a word that means every node (``all``), else nothing."""
    return "; leave --node off for every node" if word.strip().lower() in EVERY_WORDS else ""


def words(wanted: Sequence[str]) -> List[str]:
    """Every selector given, commas split: ``["0,2-3", "gpu01"]`` -> ``["0", "2-3", "gpu01"]``.

    An empty item (``--node ','``, ``--node 0,,2``) is refused, never dropped: a selector that
    shrinks to nothing would mean every node.
    """
    from nodeweave.comma_lists import comma_items

    # `--node 0,0`: picked once, said twice; never collapsed silently
    return comma_items(wanted, "--node", "indices, ranges, names or addresses separated by commas, e.g. --node 0,2-3 "
                       "(leave --node off for every node)", each="node")


def checked_selectors(value: List[str]) -> List[str]:
    """``--node``'s callback: a blank or empty item, and an index or range in another script's digits (``١``), are
    refused as the command line is read, before anything runs or any tool is looked for (walk13 A22: bad input is
    exit 2 whatever the machine has)."""
    from nodeweave.entrypoint.planning.contract import ascii_spelling

    for word in words(value):
        spelt = ascii_spelling(word)
        if spelt is not None and (digits(spelt) or _RANGE.match(spelt)):
            raise UsageError(f"--node {word!r} is not accepted: an index or a range in ASCII digits (0, 2-3), a name "
                             "or an address")
    return value


def complete_node(ctx: typer.Context, incomplete: str):
    """--node's shell completion: the nearest spec's node indices and names."""
    from nodeweave.cli.habits.output import complete_nodes

    return complete_nodes(ctx, incomplete)


NODE = typer.Option([], "--node", metavar="NODE", help=NODE_HELP, callback=checked_selectors,
                    autocompletion=complete_node)


def is_address(word: str) -> bool:
    """``KIND:NAME`` (``podman:trainer-0``, ``ssh:me@gpu01``): a node named by how it is reached."""
    return ":" in word


def split_addresses(wanted: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(the ``KIND:NAME`` addresses, the other selectors) of ``wanted``."""
    given = words(wanted)
    return [w for w in given if is_address(w)], [w for w in given if not is_address(w)]


def _indices(word: str, nodes: Sequence) -> List[int]:
    """The node indices ``word`` picks; a miss (an index, range or name) lists the nodes with their addresses."""
    last = len(nodes) - 1
    indices = span(len(nodes))
    known = ranges(f"{n.name} ({n.remote.label})" if getattr(n, "remote", None) else n.name
                   for n in nodes) or "none"
    if digits(word):
        low = high = int(word)
    elif _RANGE.match(word):
        low, high = (int(x) for x in _RANGE.match(word).groups())
        if low > high:
            raise UsageError(f"--node {word}: a range runs low to high, e.g. {high}-{low}")
    else:
        found = [n.index for n in nodes if word in _names(n) or _same_host(word, n)]
        if not found:
            raise UsageError(f"--node {word!r} names no node of this cluster: an index ({indices}), a range "
                             f"(0,2-3), a name or an address; the nodes: {known}{every_hint(word)}")
        return found
    if high > last:
        raise UsageError(f"--node {word} is not a node of this cluster ({indices}); the nodes: {known}")
    return list(range(low, high + 1))


def _names(node) -> Tuple[str, ...]:
    remote = node.remote
    return (node.name, remote.label, remote.name, getattr(remote, "host", remote.name), *_pod_addresses(remote))


# Every kind a pod is written with: the help's own example is pod:llama-0, and oc:/kubectl: name the same pod.
POD_KINDS = ("pod", "k8s", "kube", "kubectl", "oc", "openshift")


def _pod_addresses(remote) -> Tuple[str, ...]:
    """A pod's addresses as users type them (walk7 A41: only ``pod:NS/NAME[CONTAINER]``, status's column, was
    taken): any pod kind, with or without its namespace, with or without its container."""
    if not getattr(remote, "namespaced", False):
        return ()
    where = [remote.name] + ([f"{remote.namespace}/{remote.name}"] if remote.namespace else [])
    container = getattr(remote, "container", None)
    tails = where + ([f"{w}[{container}]" for w in where] if container else [])
    return tuple(f"{kind}:{tail}" for kind in POD_KINDS for tail in tails)


def _same_host(word: str, node) -> bool:
    """Whether ``word`` names the host of a node reached over ssh as ``up`` compares hosts (``hostport.host_key``: case,
    a trailing dot; a ``user@`` is the login, not the host), ``ssh:HOST`` whatever engine runs there (walk7 A27:
    ``GPU01``, ``gpu01.``, ``root@gpu01`` and ``ssh:gpu01`` named no node of a docker-engine hosts target)."""
    from nodeweave.entrypoint.hostport import host_key

    host = getattr(node.remote, "ssh_host", None)
    if not host:
        return False
    bare = word[len("ssh:"):] if word.startswith("ssh:") else word
    if ":" in bare or "/" in bare:
        return False
    return host_key(bare.rpartition("@")[2]) == host_key(host.rpartition("@")[2])


def pick_nodes(nodes: Sequence, wanted: Sequence[str], backend=None, verb: str = "act on") -> List:
    """The nodes ``wanted`` selects, in the cluster's order (node 0 first); none given: all of them. With the
    ``backend`` the nodes are of, an address that names none of them is answered as what it is
    (``onbackend.address_elsewhere``): another folder's container, or a job not up, exit 3."""
    given = words(wanted)
    if not given:
        return list(nodes)
    chosen: "dict[int, str]" = {}
    for word in given:
        try:
            picked = _indices(word, nodes)
        except UsageError:
            if backend is not None and is_address(word):
                from nodeweave.cluster.onbackend import address_elsewhere

                address_elsewhere(backend, nodes, word, verb)
            raise
        for index in picked:
            if index in chosen:  # `--node 0-2,1`, `--node 0 --node node-0`: two words, one node
                raise UsageError(f"--node {chosen[index]} and {word} both pick node-{index}; give each node once")
            chosen[index] = word
    return [n for n in nodes if n.index in chosen]


def pick_one(nodes: Sequence, wanted: Sequence[str], verb: str, backend=None):
    """The single node ``wanted`` selects (node 0 when none is given): ``shell`` works in one node."""
    picked = pick_nodes(nodes, wanted or ["0"], backend, verb)
    if len(picked) != 1:
        raise UsageError(f"`nodeweave {verb}` works in one node and --node {','.join(words(wanted))} selects "
                         f"{len(picked)}: give one index, name or address")
    return picked[0]


def first_nodes(nodes: Sequence, wanted: Sequence[str], verb: str, backend=None) -> int:
    """How many nodes a job starts on: ``--node`` must select ranks 0..N-1 (node 0 the master), so N."""
    picked = [n.index for n in pick_nodes(nodes, wanted, backend, verb)]
    if picked != list(range(len(picked))):
        count_flag = f" (or --nodes {max(picked) + 1})" if verb == "run" else ""  # only `run` takes --nodes
        raise UsageError(f"`nodeweave {verb}` starts one job whose ranks are the nodes' places (node 0 the "
                         f"master): --node {','.join(words(wanted))} selects {picked}; select "
                         f"--node 0-{max(picked)}{count_flag}")
    return len(picked)


def picked_indices(wanted: Sequence[str], count: int, where: str) -> List[int]:
    """Node indices where only indices are known (a run folder's node-<i>.log files); [] means all."""
    given = words(wanted)
    named = [w for w in given if not (digits(w) or _RANGE.match(w))]
    if named:
        raise UsageError(f"--node {named[0]!r}: {where} knows its nodes by index only; give an index or a range "
                         f"({span(count)}){every_hint(named[0])}")
    return sorted({n.index for n in pick_nodes([_Indexed(i) for i in range(count)], given)}) if given else []


def run_folder_indices(folder, wanted: Sequence[str]) -> List[int]:
    """``--node`` over a run folder read here (no cluster asked): its ``node-<i>.log`` files, by index."""
    return picked_indices(wanted, len(list(folder.glob("node-*.log"))), f"the run folder {folder.name}")


class _Indexed:
    """A node known only by its index (its log file), for :func:`picked_indices`."""

    def __init__(self, index: int) -> None:
        self.index, self.name = index, f"node-{index}"
