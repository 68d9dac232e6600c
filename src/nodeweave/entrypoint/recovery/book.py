"""The job's book: one typed, immutable record of what recovery has seen and decided.

``decide.py`` is its only writer: every change is a new :class:`Book` made
there (``dataclasses.replace``); node 0's loop (``hub.py``) hands ``decide``
the facts it gathered (who checked in, the newest checkpoint, the fault) and
gets a new book back; the other modules only read it. It travels as JSON in
the verdict (:meth:`Book.to_json`, ``public=True``) and is kept on disk as
``recovery.json`` for ``nodeweave runs show``, ``status`` and a restarted
container (``setup.keep``, ``setup.last_book``); :meth:`Book.from_json`
reads that JSON back, an older nodeweave's included (``why`` a string once
the job stopped, roles and causes this module does not know).

Two numberings, never mixed, each a type of its own (``news.NodeId``,
``news.GenRank``; tests/test_node_identities.py reads the code for them):

- a node's **identity** (``NodeId``) is its container's node rank among nodes
  + spares (0..N+S-1): ``members``, ``spares``, ``present``, ``alive``,
  ``last_culprit``, the keys of ``left_out`` and ``why``, a fault's ``node``;
- a **generation rank** (``GenRank``) is a position in ``members`` (the
  training node rank the generation's launcher gets): only :meth:`Book.rank_of`
  and :meth:`Book.node_at` turn one into the other.

Recovery only: ``enum`` and ``dataclasses`` cost the start-up path
milliseconds, so nothing on it imports this module (``roles.Kind`` spells the
roles as plain strings, the same values).
"""

import dataclasses
import enum
from typing import Dict, Optional, Tuple

from ..news import FOR_GOOD, Cause, GenRank, NodeId, Word  # Cause: a fault's, as the failure news names it


class Role(Word):
    """What a node does in the book's generation (JSON: the value; ``roles.Kind`` spells the same)."""

    TRAINING = "member"
    SPARE = "spare"
    LEFT_OUT = "left out"
    OUT_FOR_GOOD = "out for good"


class Decision(Word):
    """What the book says of the job: a generation goes on, or the job ended and how."""

    START = "start"      # the generation in the book starts (continue)
    STOP = "stop"        # recovery ended the job (``code``, ``ended``): budget, no progress, too few nodes, its error
    DONE = "done"        # node 0's launcher finished: exit 0
    STOPPED = "stopped"  # a stop signal ended it

    @property
    def ended(self):
        return self is not Decision.START


def _identities(values):
    return tuple(NodeId(int(v)) for v in values or ())


def _by_identity(mapping):
    """A JSON object keyed by identity ("3") as {3: value}."""
    return {NodeId(int(k)): v for k, v in (mapping or {}).items()}


def _keyed(mapping):
    return {str(k): v for k, v in sorted(mapping.items())}


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault in the book's history: what ended ``generation``, and what the restart cost."""

    generation: int
    node: Optional[NodeId]        # the culprit's identity; None when no one node is (a stall, the job's own error)
    cause: Cause
    why: str                      # in words, as the logs say it
    at: float                     # when node 0 heard the evidence that decided it (epoch seconds)
    relaunched: Optional[float] = None   # when the next generation was decided
    recover_s: Optional[float] = None    # relaunched - at
    resumed_step: Optional[int] = None   # the next generation's checkpoint: its step and path
    resume_from: Optional[str] = None
    work_lost_s: Optional[float] = None  # training time between that checkpoint's newest file and the fault
    gap: Optional[float] = None          # a straggler's: how much slower (0.5 = 50%)
    error: Optional[dict] = None         # the job's own error: {line, lines, nodes}
    raised: Optional[str] = None         # a crash's: the exception line its culprit's script raised, if one did

    REQUIRED = ("generation", "node", "cause", "why", "at")

    def to_json(self):
        data = {name: getattr(self, name) for name in self.REQUIRED}
        data["cause"] = self.cause.value
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name not in self.REQUIRED and value is not None:
                data[field.name] = value
        return data

    @classmethod
    def from_json(cls, data):
        known = {field.name for field in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("generation", 0)
        values.setdefault("why", "")
        values.setdefault("at", 0.0)
        values["node"] = None if data.get("node") is None else NodeId(int(data["node"]))
        values["cause"] = Cause.read(data.get("cause"))
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class Book:
    """The job's book. Identities and generation ranks: see the module's docstring."""

    generation: int = 0
    decision: Decision = Decision.START
    restarts: int = 0                              # recoveries spent (recovery.max_restarts is their budget)
    members: Tuple[NodeId, ...] = ()               # identities that train; a member's position is its rank
    spares: Tuple[NodeId, ...] = ()                # identities waiting to take a left-out node's place
    left_out: Dict[NodeId, int] = dataclasses.field(default_factory=dict)  # identity -> times left out
    why: Dict[NodeId, str] = dataclasses.field(default_factory=dict)       # identity -> why it was last left out
    steps: Tuple = ()                              # the newest checkpoint's mark at each generation's start
    best_step: object = None                       # the newest mark seen (a step, or a save's time)
    stale: int = 0                                 # restarts since that mark grew (the no-progress brake)
    history: Tuple[Fault, ...] = ()                # every fault, oldest first
    resume_from: Optional[str] = None              # the checkpoint this generation resumes from, and its step
    step: Optional[int] = None
    master: Optional[str] = None                   # the rendezvous host when node 0's slot went to a spare
    present: Tuple[NodeId, ...] = ()               # identities checked in for this generation
    checkpoint_unjudged: Tuple[str, ...] = ()      # "path: why" of folders the checkpoint finder cannot judge
    saves_before: Optional[float] = None           # the newest save already in checkpoint_dir as the job started:
    #                                                saves not newer are another job's, never handed out
    code: Optional[int] = None                     # the job's exit code once it stopped
    ended: Optional[str] = None                    # why the job ended, in words
    error: Optional[dict] = None                   # the job's own error: {line, lines, nodes}
    finished: Optional[float] = None               # when the job finished (decision done)
    rejoin: Optional[bool] = None                  # the end was this node's alone: a restart checks in again
    # node 0's own bookkeeping (not in the verdict): the identities still up when the generation ended, its culprit
    alive: Tuple[NodeId, ...] = ()
    last_culprit: Optional[NodeId] = None
    # as one node keeps it (``decide.kept_by``): its role in the generation and, when it sits out, why
    role: Optional[Role] = None
    reason: Optional[str] = None

    PRIVATE = ("alive", "last_culprit")
    OPTIONAL = ("code", "ended", "error", "finished", "rejoin", "checkpoint_unjudged", "saves_before", "alive", "last_culprit",
                "role", "reason")

    def __post_init__(self):
        # lookups by identity: a generation of 8,192 nodes asks each node's role, N lookups must cost N, not N^2
        object.__setattr__(self, "_ranks", {node: GenRank(rank) for rank, node in enumerate(self.members)})
        object.__setattr__(self, "_spare_set", frozenset(self.spares))

    # --- reading ---------------------------------------------------------------------------------------
    def trains(self, node):
        """Whether ``node`` is a member of this generation."""
        return node in self._ranks

    def rank_of(self, node: NodeId) -> Optional[GenRank]:
        """``node``'s generation rank (its position among the members), or None when it does not train."""
        return self._ranks.get(node)

    def node_at(self, rank: Optional[GenRank]) -> Optional[NodeId]:
        """The identity training as generation rank ``rank``, or None."""
        return self.members[rank] if rank is not None and 0 <= rank < len(self.members) else None

    def rendezvous(self) -> Optional[NodeId]:
        """The identity training as generation rank 0: the launch's master (node 0 unless a spare took its slot)."""
        return self.node_at(GenRank(0))

    def role_of(self, node):
        """What ``node`` does in this generation: train, wait as a spare, or sit out (for good)."""
        if node in self._ranks:
            return Role.TRAINING
        if self.left_out.get(node, 0) >= FOR_GOOD:
            return Role.OUT_FOR_GOOD
        if node in self._spare_set:
            return Role.SPARE
        return Role.LEFT_OUT

    @property
    def for_good(self):
        """Identities left out for good."""
        return {node for node, times in self.left_out.items() if times >= FOR_GOOD}

    # --- JSON ------------------------------------------------------------------------------------------
    def to_json(self, public=False):
        """The JSON object (the keys an older nodeweave wrote: its readers read this one); ``public``: without
        node 0's bookkeeping, as every node is told and `nodeweave status` shows."""
        data = {}
        for field in dataclasses.fields(self):
            name, value = field.name, getattr(self, field.name)
            if public and name in self.PRIVATE:
                continue
            if name in self.OPTIONAL and value in (None, ()) and name not in ("role", "reason"):
                continue
            if name in ("role", "reason") and self.role is None:
                continue
            if isinstance(value, enum.Enum):
                value = value.value
            elif name in ("left_out", "why"):
                value = _keyed(value)
            elif name == "history":
                value = [fault.to_json() for fault in value]
            elif isinstance(value, tuple):
                value = list(value)
            data[name] = value
        return data

    @classmethod
    def from_json(cls, data):
        """The book a JSON object holds: this nodeweave's, or an older one's (unknown keys are ignored)."""
        if isinstance(data, Book):
            return data
        data = dict(data or {})
        why, ended = data.get("why"), data.get("ended")
        if isinstance(why, str):  # before issue 41: ``why`` said why the job ended once it stopped
            why, ended = {}, ended or why
        role = data.get("role")
        try:
            role = Role(role) if role is not None else None
        except ValueError:
            role = Role.TRAINING if role == "training node" else None
        try:
            decision = Decision(data.get("decision") or "start")
        except ValueError:
            decision = Decision.STOP
        return cls(
            generation=int(data.get("generation") or 0), decision=decision, restarts=int(data.get("restarts") or 0),
            members=_identities(data.get("members")), spares=_identities(data.get("spares")),
            left_out={k: int(v) for k, v in _by_identity(data.get("left_out")).items()},
            why={k: str(v) for k, v in _by_identity(why if isinstance(why, dict) else {}).items()},
            steps=tuple(data.get("steps") or ()), best_step=data.get("best_step"),
            stale=int(data.get("stale") or 0),
            history=tuple(Fault.from_json(h) for h in data.get("history") or () if isinstance(h, dict)),
            resume_from=data.get("resume_from"), step=data.get("step"), master=data.get("master"),
            present=_identities(data.get("present")),
            checkpoint_unjudged=tuple(data.get("checkpoint_unjudged") or ()), saves_before=data.get("saves_before"),
            code=data.get("code"), ended=ended, error=data.get("error"), finished=data.get("finished"),
            rejoin=data.get("rejoin") is True or None,
            alive=_identities(data.get("alive")),
            last_culprit=None if data.get("last_culprit") is None else NodeId(int(data["last_culprit"])),
            role=role, reason=data.get("reason"))
