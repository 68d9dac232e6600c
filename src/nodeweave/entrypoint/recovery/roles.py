"""A node's role in its job, and the one way every entrypoint path plans this node.

A start, hold mode, ``--explain``, ``--status``, ``--node status`` and
``nodeweave doctor`` (on the node, ``--spec``, ``--cluster``) all plan this node
through :func:`plan_node`, so a spare is a spare everywhere: with
``recovery.spares`` the job's containers are its training nodes plus its
spares, and a container's node rank is its *identity* among them (0..N+S-1,
``setup.identity_settings``), never a training rank past the node count. The
role says what the node does: a training node (its rank), a spare (it waits to
take a left-out node's place), or a node left out (and why), read from the
book this node kept while the job runs (``recovery.json``).
"""

from ..core import build_plan
from ..errors import EntrypointError
from ..planning.job_size import job_size
from .setup import Config, derived, generation_settings, identity_settings, last_book, with_flags



class Kind:
    """What a node does in a generation: the values of the book's ``book.Role`` (`nodeweave status`'s), spelt
    as plain strings here: this module is on every start's path, and importing enum costs it milliseconds
    (test_entrypoint_cli); tests/test_recovery_book.py holds the two spellings equal."""

    TRAINING = "member"
    SPARE = "spare"
    LEFT_OUT = "left out"
    OUT_FOR_GOOD = "out for good"
    ALL = (TRAINING, SPARE, LEFT_OUT, OUT_FOR_GOOD)

    @classmethod
    def shown(cls, kind):
        """The word a person reads: ``training node`` for a member."""
        return "training node" if kind == cls.TRAINING else kind


class Role:
    """This node's role: ``kind``, its ``identity`` (its container's node rank among nodes + spares), its
    training ``rank`` in the generation (None unless it trains), ``why`` in words, the ``generation`` it
    holds for (None: the job's start, before node 0 decided anything)."""

    __slots__ = ("kind", "identity", "rank", "why", "generation")

    def __init__(self, kind, identity, rank=None, why="", generation=None):
        self.kind, self.identity, self.rank, self.why, self.generation = kind, identity, rank, why, generation

    def __eq__(self, other):
        return isinstance(other, Role) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"Role({self.text()!r})"

    def text(self):
        """``training node 1``, ``spare``, ``left out`` — then why."""
        name = f"training node {self.rank}" if self.kind == Kind.TRAINING else self.kind
        when = f"generation {self.generation}: " if self.generation is not None else ""
        return f"{when}{name}" + (f" ({self.why})" if self.why else "")

    def to_dict(self):
        return {"kind": Kind.shown(self.kind),
                "identity": self.identity, "rank": self.rank, "why": self.why, "generation": self.generation}


def plan_node(settings, partial=False, audit=False):
    """This node's plan with ``plan.role`` set; with ``partial``, errors are recorded (``--explain``, doctor);
    ``audit`` (doctor) as ``core.build_plan``'s."""
    if not settings.get("recovery"):
        plan = build_plan(settings, partial=partial, audit=audit)
        if plan.topology is not None:
            rank = plan.topology.node_rank.value
            plan.role = Role(Kind.TRAINING, rank, rank).to_dict()
        return plan
    try:
        ident = identity_settings(settings)
    except EntrypointError as err:
        if not partial:
            raise
        plan = build_plan(settings, partial=True, audit=audit)
        plan.errors.insert(0, {"message": str(err), "exit_code": err.exit_code})
        return plan
    plan = build_plan(ident, partial=partial, audit=audit)
    if plan.topology is not None:
        try:
            plan.role = role_at_start(settings, plan.topology).to_dict()
        except EntrypointError as err:
            if not partial:
                raise
            plan.errors.append({"message": str(err), "exit_code": err.exit_code})
    return plan


def planning_settings(settings):
    """The settings this node plans and checks in with: under recovery, its identity among nodes + spares."""
    return identity_settings(settings) if settings.get("recovery") else settings


def role_at_start(settings, topo):
    """The role this node holds now: the one in the book it kept while its job runs, else the job's first
    layout (the lowest identities train, the rest are spares: ``decide.first``)."""
    config = Config(settings, topo)
    identity = topo.node_rank.value
    book = last_book(settings, topo)
    # a book whose generation is under way (a finished or stopped job's roles are history)
    if book and not book.decision.ended and book.role is not None:  # a run id's: that run's own (last_book)
        return from_book(book, identity)
    layout = (f"the job trains on {config.slots} node(s), identities 0..{config.slots - 1}; "
              f"{config.spares} spare(s) wait" if config.spares else "")
    if identity < config.slots:
        return Role(Kind.TRAINING, identity, identity, layout)
    return Role(Kind.SPARE, identity, None, f"container {identity} of {config.nodes}: {layout} to take a "
                                            "left-out node's place (recovery.spares)")


def from_book(book, identity):
    """The role the book (``book.Book``) gives ``identity`` (its training rank is its position among the
    members)."""
    kind = book.role_of(identity).value
    rank = book.rank_of(identity)
    why = book.reason or ""
    if kind == Kind.SPARE:
        why = "waits to take a left-out node's place"
    elif kind == Kind.TRAINING and rank != identity:
        why = f"container {identity} trains as rank {rank}"
    return Role(kind, identity, rank, why, book.generation)


def shown_plan(settings, plan, partial=True):
    """What ``--explain`` shows of this node under recovery: a training node's launch as its generation runs it
    (its rank among the members, their count: ``setup.generation_settings`` from the book it keeps while its job
    runs, or the job's first generation before), not the identity plan it checks in with (nodes + spares); a
    spare's, a left-out node's or one out for good with a note that it launches nothing now. ``plan`` itself when
    recovery is off or the plan could not be made."""
    return _counts_of_containers(settings, _shown(settings, plan, partial))


def _shown(settings, plan, partial):
    role = getattr(plan, "role", None)
    if not settings.get("recovery") or not role or plan.topology is None or plan.launch is None:
        return plan
    config = Config(settings, plan.topology)
    if role["kind"] in WAITING:
        return _spare_plan(settings, plan, config, partial, WAITING[role["kind"]])
    if role["kind"] != Kind.shown(Kind.TRAINING):
        return plan
    if role.get("generation") is not None:  # a running job's generation: as this node launches it, from its book
        book = last_book(settings, plan.topology)
        if book is None or book.generation != role["generation"]:
            return plan
        first = generation_settings(settings, book, role["identity"], plan.topology)
    elif config.spares or config.minimum != config.slots:
        # with spares, or MIN:MAX (recovery.min_nodes): generation 0 is a fixed-size job of every training node
        first = derived(settings, "generation 0's training nodes", node_rank=role["rank"], nnodes=config.slots)
    else:
        return plan
    shown = build_plan(first, partial=partial)
    if shown.topology is None:
        return plan
    shown.role, shown.exchange = plan.role, plan.exchange  # it checks in as its identity among nodes + spares
    # recovery's own rank and count override the node's identity, as every generation's launch does: no warning
    shown.warnings = [w for w in shown.warnings if not any(why in w for why in set(first.flag_sources.values()))]
    shown.topology.platform = plan.topology.platform  # what told its identity, not "flags" (walk5 W5)
    shown.errors = plan.errors + [e for e in shown.errors if e not in plan.errors]
    return shown


def _counts_of_containers(settings, plan):
    """With spares, the scheduler's node count (SLURM_NNODES, PET_NNODES, the hosts file's) is every container, as
    the start weighs it (``setup._platform_holds``), not the training count the shown launch plans with: the plan's
    nnodes notes and warnings about it ("SLURM_NNODES=2 agrees with NODEWEAVE_NNODES=2" beside the refusal that
    SLURM_NNODES=2 is short of 3 containers; "overrides SLURM_NNODES=3" for a right allocation) are replaced by that
    comparison, and left out when it is the refusal (issue 43 N4)."""
    from .setup import container_counts, count_shown, fits

    spares = settings.get("spares", 0) or 0
    if not settings.get("recovery"):
        return plan
    try:
        slots = job_size(settings)[1]
        counts = container_counts(settings)
    except EntrypointError:
        return plan  # the plan's own error says why
    sources = [source for source, _, _ in counts]
    _recovery_judges_the_count(plan, sources)
    if not spares or plan.topology is None:
        return plan

    def about(line):
        return str(line).startswith("nnodes: ") and any(source in str(line) for source in sources)

    plan.topology.notes = [note for note in plan.topology.notes if not about(note)]
    plan.warnings = [warning for warning in plan.warnings if not about(warning)]
    if all(fits(origin, count, slots, spares) for _, count, origin in counts):
        holds = {"plain variables": "it counts"}  # torchrun's count, as typed; else the scheduler's allocation
        plan.topology.notes += [f"nnodes: {count_shown(source, count)} agrees with recovery's containers, "
                                f"{slots + spares} ({slots} training + {spares} spare(s)): "
                                f"{holds.get(origin, 'the scheduler' + chr(39) + 's count holds')} the spares"
                                for source, count, origin in counts if count == slots + spares]
    return plan


def _recovery_judges_the_count(plan, sources):
    """Where recovery's rule refused the scheduler's count (nodes + spares, or the spares forgotten), the plain
    "nnodes sources disagree ...: remove one, or pass --nnodes" beside it is the rule without recovery, and its fixes
    fail (walk18b B5: --nnodes 4 met the refusal again and a rank past the count; removing NODEWEAVE_NNODES met
    "NODEWEAVE_SPARES needs the training node count"): only recovery's refusal, whose fixes work, is said."""
    def ours(error):
        return str(error.get("message", "")).startswith("node count sources disagree")

    def plain(error):
        text = str(error.get("message", ""))
        return text.startswith("nnodes sources disagree") and any(source in text for source in sources)

    if any(ours(error) for error in plan.errors):
        plan.errors = [error for error in plan.errors if not plain(error)]


# the roles that launch nothing now and what each waits for: the words of its plan's note (``--explain``'s Launch)
WAITING = {Kind.SPARE: "a spare launches nothing until node 0 gives it a left-out node's place",
           Kind.LEFT_OUT: "a node left out launches nothing until node 0 gives it a place again",
           Kind.OUT_FOR_GOOD: "a node out for good launches nothing again"}


def _spare_plan(settings, plan, config, partial, waits=WAITING[Kind.SPARE]):
    """A spare launches nothing until node 0 gives it a left-out node's place; then it runs as that node's rank
    among the training nodes. Its plan shows that launch (``--nnodes`` the training nodes, their world size),
    not the identity plan's node count of nodes + spares, which no generation runs (walk5 W3); the rank is the
    last training node's, standing for whichever node is left out."""
    rank = config.slots - 1
    then = derived(settings, "the training nodes (the spare's container count, nodes + spares, is only its "
                   "check-in's)", nnodes=config.slots)
    then = with_flags(then, f"a left-out node's rank, once this node takes its place (shown: {rank})",
                      node_rank=rank)
    own = plan.topology.nproc_per_node if plan.topology is not None else None
    from ..world import from_a_line

    if own is not None and from_a_line(own.source):  # its own line's slots, as a generation runs it (fix13d)
        then = with_flags(then, f"this spare's own line ({own.source})", nproc_per_node=own.value)
    shown = build_plan(then, partial=partial)
    if shown.launch is None or shown.topology is None:
        return plan
    shown.role, shown.exchange, shown.warnings = plan.role, plan.exchange, plan.warnings  # it checks in as itself
    shown.topology.platform = plan.topology.platform  # what told its identity, not "flags"
    shown.errors = plan.errors + [e for e in shown.errors if e not in plan.errors]
    then = f"; then it runs this as that node's rank among the {config.slots} training node(s)"
    shown.launch.notes.insert(0, waits + ("" if waits == WAITING[Kind.OUT_FOR_GOOD] else then))
    return shown
