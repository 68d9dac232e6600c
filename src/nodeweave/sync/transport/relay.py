"""Who feeds whom: the relay chain of one payload group, planned from the agents' answers (pure).

With relay the source streams a group's payload to its first target only;
each target forwards the bytes to the next as it reads them (``peer.py``),
so the source pays one relay per group however many targets there are.
Here: whether a group is relayed, which addresses of each target to try,
the chain (a tree of fan-out ``FANOUT``; 1 is a chain, which sends every
byte across each link once), each hop's token, and - from the forwarders'
hop reports - which targets the source must feed directly after all.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence

RELAY_MIN_BYTES = 4 << 20  # auto: smaller payloads go direct (the hop set-up would cost more than it saves)
FANOUT = 1
MODES = ("auto", "on", "off")


def wanted(mode: str, members: int, payload_bytes: int, transports_agree: bool) -> bool:
    """Whether a group is relayed: ``on`` always (2+ targets), ``auto`` for a big enough payload
    to targets whose transport allows it by default (``Remote.relay_by_default``)."""
    if mode == "off" or members < 2:
        return False
    return mode == "on" or (transports_agree and payload_bytes >= RELAY_MIN_BYTES)


def _routable(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not (address.is_loopback or address.is_link_local or address.is_unspecified or address.is_multicast)


def usable_addresses(listens: "dict[Hashable, dict | None]") -> "dict[Hashable, list[str]]":
    """Each listening target's addresses worth trying, in its own order.

    An address two targets both report (every host's ``docker0`` is
    172.17.0.1) reaches neither for sure, so it is left out; so are
    loopback, link-local and malformed ones.
    """
    seen = Counter(a for info in listens.values() if info for a in set(info.get("addrs") or ()))
    out = {}
    for member, info in listens.items():
        if not info or not isinstance(info.get("port"), int):
            continue
        addrs = [a for a in info.get("addrs") or () if isinstance(a, str) and _routable(a) and seen[a] == 1]
        if addrs:
            out[member] = addrs
    return out


@dataclass
class Chain:
    """``order[0]`` is fed by the source; every other member by its ``upstream``."""

    order: list
    forwards: dict = field(default_factory=dict)  # member -> the members it forwards to
    upstream: dict = field(default_factory=dict)  # member -> the member that feeds it
    tokens: dict = field(default_factory=dict)  # receiving member -> its hop's token

    def plan(self, member, listens: "dict[Hashable, dict]", addresses: "dict[Hashable, list[str]]") -> dict:
        """The ``relay`` part of ``member``'s plan: the token it accepts, the hops it forwards to."""
        return {"accept": self.tokens.get(member),
                "forward": [{"addrs": addresses[m], "port": listens[m]["port"], "token": self.tokens[m]}
                            for m in self.forwards.get(member, [])]}


def plan_chain(members: Sequence, addresses: "dict[Hashable, list[str]]", fanout: int = FANOUT,
               token: "Callable[[], str]" = lambda: secrets.token_hex(16)) -> "Chain | None":
    """The relay tree over ``members`` (first = head); members nobody can reach stay out of it.

    None when fewer than two members would be in it.
    """
    if not members:
        return None
    order = [members[0]] + [m for m in members[1:] if addresses.get(m)]
    if len(order) < 2:
        return None
    chain = Chain(order=order)
    for i, member in enumerate(order[1:], start=1):
        parent = order[(i - 1) // fanout]
        chain.forwards.setdefault(parent, []).append(member)
        chain.upstream[member] = parent
        chain.tokens[member] = token()
    return chain


def fed_directly(chain: Chain, hops: "dict[Hashable, list[dict]]") -> "list":
    """The chain members the source must stream to: the head, and each whose upstream's hop failed.

    ``hops`` holds each forwarder's report, one entry per member it forwards
    to, in order; a forwarder that sent no report counts as failed on all.
    """
    direct = [chain.order[0]]
    for member in chain.order[1:]:
        parent = chain.upstream[member]
        report = hops.get(parent) or []
        position = chain.forwards[parent].index(member)
        ok = position < len(report) and isinstance(report[position], dict) and report[position].get("ok") is True
        if not ok:
            direct.append(member)
    return direct
