"""The job's book as a typed record (nodeweave.entrypoint.recovery.book): its JSON both ways, an older
nodeweave's record read, and ``decide.py`` its only writer (issue 41: the book was an untyped dict written by
three modules)."""

import ast
import dataclasses
import json
import pathlib

import pytest

from nodeweave.entrypoint.errors import EXIT_GAVE_UP
from nodeweave.entrypoint.recovery import decide
from nodeweave.entrypoint.recovery.book import Book, Cause, Decision, Fault, Role
from nodeweave.entrypoint.recovery.decide import Limits

ENTRYPOINT = pathlib.Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "entrypoint"
WRITERS = {ENTRYPOINT / "recovery" / "decide.py", ENTRYPOINT / "recovery" / "book.py"}


def limits(slots=2, max_restarts=5):
    return Limits(slots, slots, max_restarts, 3)


def a_running_book():
    """A book two generations in, made the way node 0 makes it: every step through ``decide``."""
    lim = limits()
    book = decide.announced(decide.first({0, 1, 2, 3}, lim, None), {0, 1, 2, 3}, (None, None), {}, 100.0)
    book = decide.ended(book, 1, [0, 2, 3])
    fault = Fault(generation=0, node=1, cause=Cause.CRASH, why="node 1: its launcher failed (torchrun exited 1)",
                  at=90.0)
    nxt = decide.after_fault(book, fault.node, fault.why, {0, 2, 3}, 10, lim)
    return decide.announced(nxt, {0, 2, 3}, ("/ckpt/step-10", 10), {2: "10.0.0.12"}, 101.5, fault=fault,
                            work_lost_s=3.2, unjudged=["/ckpt/odd: no layout"])


def test_the_book_goes_to_json_and_back_unchanged():
    book = a_running_book()
    assert (book.generation, book.members, book.spares, book.left_out, book.why) == \
        (1, (0, 2), (3,), {1: 1}, {1: "node 1: its launcher failed (torchrun exited 1)"})
    [fault] = book.history
    assert (fault.resumed_step, fault.resume_from, fault.work_lost_s, fault.recover_s) == (10, "/ckpt/step-10", 3.2,
                                                                                         11.5)
    for kept in (book, decide.kept_by(book, 1), decide.job_error(book, [0, 2], {"line": "E", "lines": ["E"]}),
                 decide.closed(book, 0, 200.0), decide.finished(book)):
        data = json.loads(json.dumps(kept.to_json()))
        assert Book.from_json(data) == kept
    data = book.to_json()
    assert data["left_out"] == {"1": 1} and data["members"] == [0, 2] and data["decision"] == "start"
    assert data["history"][0]["cause"] == "crash" and data["checkpoint_unjudged"] == ["/ckpt/odd: no layout"]
    assert (data["alive"], data["last_culprit"]) == ([0, 2, 3], 1)
    assert "alive" not in book.to_json(public=True) and "last_culprit" not in book.to_json(public=True)


def test_identities_and_generation_ranks_meet_only_in_rank_of_and_node_at():
    book = decide.after_fault(decide.first({0, 1, 2}, limits()), 0, "node 0: crashed", {0, 1, 2}, None, limits())
    assert book.members == (2, 1)  # the spare (identity 2) trains as rank 0, node 1 keeps rank 1
    assert (book.rank_of(2), book.rank_of(1), book.rank_of(0)) == (0, 1, None)
    assert (book.node_at(0), book.node_at(1), book.node_at(2), book.node_at(None)) == (2, 1, None, None)
    assert book.role_of(0) is Role.LEFT_OUT and book.role_of(2) is Role.TRAINING


# keys and values as the previous nodeweave's hub.py wrote them (node 0's record once the job finished)
PREVIOUS = {
    "generation": 1, "restarts": 1, "members": [0, 2], "spares": [], "left_out": {"1": 1},
    "why": {"1": "node 1: its launcher failed (torchrun exited 1)"}, "steps": [None, 10], "best_step": 10,
    "stale": 0,
    "history": [{"generation": 0, "node": 1, "cause": "crash", "why": "node 1: its launcher failed (torchrun exited 1)",
                 "at": 1700000000.5, "resumed_step": 10, "resume_from": "/ckpt/step-10.pt", "work_lost_s": 0.8,
                 "relaunched": 1700000006.6, "recover_s": 6.1}],
    "decision": "done", "resume_from": "/ckpt/step-10.pt", "step": 10, "master": None, "present": [0, 2],
    "last_culprit": 1, "alive": [0, 2], "finished": 1700000100.0,
}


def test_a_record_the_previous_nodeweave_kept_reads_and_is_written_back_the_same():
    book = Book.from_json(PREVIOUS)
    assert book.decision is Decision.DONE and book.history[0].cause is Cause.CRASH
    assert book.left_out == {1: 1} and book.role_of(1) is Role.LEFT_OUT and book.rank_of(2) == 1
    assert book.to_json() == PREVIOUS


def test_a_stopped_record_from_before_issue_41_still_ends_a_restarted_container(tmp_path):
    """Before issue 41 ``why`` held why the job ended once it stopped (a string): a container its restart
    policy brings back must still read it and not start the job again over the same checkpoints."""
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.recovery.generations import Generations
    from nodeweave.entrypoint.recovery.roles import plan_node
    from nodeweave.entrypoint.recovery.setup import last_book

    folder = tmp_path / "nodeweave" / "jobs" / "nodeweave-29500"  # the job's folder (runstate.job_dir)
    folder.mkdir(parents=True)
    (folder / "recovery.json").write_text(json.dumps({
        "generation": 2, "restarts": 3, "members": [0, 2], "spares": [], "left_out": {"1": 2, "3": 1},
        "why": "restart budget spent: 2 restart(s) (recovery.max_restarts); the last fault: node 3: crashed",
        "steps": [None, None, None, None], "best_step": None, "stale": 3, "history": [
            {"generation": 0, "node": 1, "cause": "meteor", "why": "node 1: a cause this nodeweave does not know",
             "at": 1.0}],
        "decision": "stop", "code": EXIT_GAVE_UP, "role": "member", "reason": None}))
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on"}
    settings = parse(["--node-rank", "0", "--master-addr", "127.0.0.1", "--", "train.py"], env)
    topo = plan_node(settings, partial=True).topology
    book = last_book(settings, topo)
    assert book.why == {} and book.ended.startswith("restart budget spent") and book.code == EXIT_GAVE_UP
    assert book.history[0].cause is Cause.UNKNOWN and book.role_of(1) is Role.OUT_FOR_GOOD
    plan = plan_node(settings, partial=True)
    tree = tmp_path / "root" / "proc" / "self"  # in a container: its /etc/hostname is the engine's bind mount
    tree.mkdir(parents=True)
    (tree / "mountinfo").write_text("9 1 0:1 /var/lib/docker/containers/c1/hostname /etc/hostname rw - ext4 sda rw\n")
    settings.sysroot = str(tmp_path / "root")
    said = []
    assert Generations(settings, said.append).ended_before(plan) == EXIT_GAVE_UP
    assert "this container's job already ended (exit 8: restart budget spent" in said[0]


def test_a_record_nobody_can_read_is_as_if_none_was_kept(tmp_path):
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.recovery.setup import last_book

    folder = tmp_path / "nodeweave" / "jobs" / "nodeweave-29500"
    folder.mkdir(parents=True)
    settings = parse(["--", "train.py"], {"TMPDIR": str(tmp_path)})
    topo = type("Topology", (), {"job_id": "nodeweave", "master_port": type("Port", (), {"value": 29500})})()
    for text in ("[1, 2]", '{"members": "zero"}', "not json"):
        (folder / "recovery.json").write_text(text)
        assert last_book(settings, topo) is None, text


def test_the_book_cannot_be_changed_in_place():
    book = decide.first({0, 1}, limits())
    with pytest.raises(dataclasses.FrozenInstanceError):
        book.generation = 3
    assert isinstance(book.members, tuple) and isinstance(book.history, tuple)


def test_the_start_paths_plain_role_words_are_the_books():
    """``roles.Kind`` spells the roles as plain strings (the start-up path imports no enum)."""
    from nodeweave.entrypoint.recovery.roles import Kind

    assert (Kind.TRAINING, Kind.SPARE, Kind.LEFT_OUT, Kind.OUT_FOR_GOOD) == tuple(r.value for r in Role)
    assert set(Kind.ALL) == {r.value for r in Role}
    assert f"{Role.SPARE}" == "spare" and str(Cause.LOST) == "lost" and json.dumps(Decision.STOP) == '"stop"'


def _book_writes(path):
    """(line, what) for each place ``path`` changes a book or makes one: an assignment to, or a mutating call
    on, a name with ``book`` in it (``book["x"] = ``, ``book.x = ``, ``book.update(...)``), a ``Book(...)``,
    or ``dataclasses.replace``."""
    tree = ast.parse(path.read_text())
    found = []

    def bookish(node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and "book" in node.id.lower()

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(part.ctx, ast.Store) and \
                        bookish(part.value):
                    found.append((node.lineno, ast.unparse(target)))
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("update", "pop", "setdefault", "append", "extend",
                                                                 "clear", "__setitem__") and bookish(func.value):
                found.append((node.lineno, ast.unparse(func)))
            if isinstance(func, ast.Name) and func.id in ("Book", "replace"):
                found.append((node.lineno, func.id))
            if isinstance(func, ast.Attribute) and func.attr == "replace" and \
                    isinstance(func.value, ast.Name) and func.value.id == "dataclasses":
                found.append((node.lineno, "dataclasses.replace"))
        if isinstance(node, ast.ImportFrom) and node.module == "dataclasses" and \
                any(alias.name == "replace" for alias in node.names):
            found.append((node.lineno, "from dataclasses import replace"))
    return found


def test_decide_is_the_only_writer_of_the_book():
    assert _book_writes(ENTRYPOINT / "recovery" / "decide.py")  # the check sees decide's own writes
    writes = {str(path.relative_to(ENTRYPOINT)): found for path in sorted(ENTRYPOINT.rglob("*.py"))
              if path not in WRITERS and (found := _book_writes(path))}
    assert writes == {}, f"only recovery/decide.py changes the job's book: {writes}"


def test_the_check_catches_what_the_previous_hub_did(tmp_path):
    """The previous hub.py's writes, each one a finding."""
    old = tmp_path / "hub.py"
    old.write_text('def f(book, fault, watch):\n'
                   '    book["last_culprit"] = fault["node"]\n'
                   '    book.update(resume_from=None)\n'
                   '    book["history"].append(fault)\n'
                   '    kept_book = dict(book)\n'
                   '    kept_book.pop("present", None)\n')
    assert [line for line, _ in _book_writes(old)] == [2, 3, 4, 6]
