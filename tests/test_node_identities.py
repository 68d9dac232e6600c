"""Issue 41: one numbering for node identities, one for generation ranks, never mixed. A node's identity
(``news.NodeId``: its container's node rank among nodes + spares) and a generation rank (``news.GenRank``: its
position among the generation's training nodes) are types of their own, and only ``Book.rank_of`` and
``Book.node_at`` turn one into the other. Read from the code, not run: a position taken in ``members`` anywhere
else (an index, ``.index()``, ``enumerate``) is a conversion that skipped the book, and each type is made from a
plain int only where that numbering enters (JSON, a fingerprint, the node's plan, the ranks' views)."""

import ast
import pathlib
import typing

from nodeweave.entrypoint.news import GenRank, NodeId
from nodeweave.entrypoint.recovery.book import Book

ENTRYPOINT = pathlib.Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "entrypoint"
CONVERTER = "recovery/book.py"  # Book.rank_of, Book.node_at (and Book.rendezvous: node_at(GenRank(0)))
MADE_FROM_INTS = {
    "GenRank": {CONVERTER},
    # JSON; a fingerprint; the plan; the ranks' views, stamped with the identity of the node that beat them
    "NodeId": {CONVERTER, "checkin/heartbeat.py", "recovery/generations.py", "stall/exchange.py"},
}


def mixings(path, name):
    """(line, what) for each place in ``path`` (shown as ``name``) that takes a position in ``members`` or makes a
    NodeId / GenRank where that is not allowed."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Subscript) and _members(node.value):
            found.append((node.lineno, "members[...]"))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "index" and _members(func.value):
                found.append((node.lineno, "members.index()"))
            elif isinstance(func, ast.Name) and func.id == "enumerate" and node.args and _members(node.args[0]):
                found.append((node.lineno, "enumerate(members)"))
            elif isinstance(func, ast.Name) and func.id in MADE_FROM_INTS and name not in MADE_FROM_INTS[func.id]:
                found.append((node.lineno, f"{func.id}(...)"))
    return sorted((line, what) for line, what in found if name != CONVERTER or what.endswith("(...)"))


def _members(node):
    return isinstance(node, ast.Attribute) and node.attr == "members" or isinstance(node, ast.Name) and \
        node.id == "members"


def test_every_conversion_between_identities_and_ranks_goes_through_the_book():
    found = {}
    for path in sorted(ENTRYPOINT.rglob("*.py")):
        name = path.relative_to(ENTRYPOINT).as_posix()
        if name.startswith("running/runstate.py"):  # a run's process members, not the book's
            continue
        hits = mixings(path, name)
        if hits:
            found[name] = hits
    assert found == {}


def test_the_check_catches_each_form_it_names(tmp_path):
    bad = tmp_path / "hub.py"
    bad.write_text("def f(book, node, members, rank):\n"
                   "    head = book.members[0]\n"
                   "    mine = book.members.index(node)\n"
                   "    table = {n: r for r, n in enumerate(book.members)}\n"
                   "    ok = len(book.members), [m for m in members], book.rank_of(node)\n"
                   "    return GenRank(node), NodeId(rank), members[rank]\n")
    assert mixings(bad, "recovery/hub.py") == [(2, "members[...]"), (3, "members.index()"), (4, "enumerate(members)"),
                                              (6, "GenRank(...)"), (6, "NodeId(...)"), (6, "members[...]")]


def test_the_books_converters_say_their_types():
    assert typing.get_type_hints(Book.rank_of) == {"node": NodeId, "return": typing.Optional[GenRank]}
    assert typing.get_type_hints(Book.node_at) == {"rank": typing.Optional[GenRank], "return": typing.Optional[NodeId]}
    fields = typing.get_type_hints(Book)
    for name in ("members", "spares", "present", "alive"):
        assert fields[name] == typing.Tuple[NodeId, ...], name
    assert fields["left_out"] == typing.Dict[NodeId, int] and fields["last_culprit"] == typing.Optional[NodeId]


def test_a_spare_in_a_left_out_nodes_place_has_its_rank_and_the_others_keep_theirs():
    book = Book(members=(NodeId(0), NodeId(3), NodeId(2)), spares=(NodeId(4),))
    assert [book.rank_of(NodeId(n)) for n in (0, 1, 2, 3, 4)] == [0, None, 2, 1, None]
    assert [book.node_at(GenRank(r)) for r in (0, 1, 2, 3)] == [0, 3, 2, None] and book.node_at(None) is None
    assert book.rendezvous() == 0 and Book(members=(NodeId(4), NodeId(1))).rendezvous() == 4
    read = Book.from_json(book.to_json())
    assert read.members == book.members and all(type(n) is int for n in read.members)
