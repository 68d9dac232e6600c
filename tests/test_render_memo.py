"""``render --check``'s memo (``nodeweave.rendering.memo``): an identical check that passed is answered from it,
and every change to what the answer rests on is noticed (issue 43, item 4).

Each case runs the real program in a fresh interpreter (``main()`` as the ``nodeweave`` program: the memo is on)
and the same call as a library (``main(argv)``: the memo is off, the full check), and asks the two for the same
exit code, stdout and stderr, byte for byte. A stale "up to date" is far worse than a slow one, so each input is
changed in turn after a check left its record: the spec, a file it names, a rendered file, the render record,
the folders, a variable, the call, nodeweave's own templates and sources (in a copy of the package).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
SPEC = """name: nwmemo
image: {variant: cpu, requirements: requirements.txt}
nodes: 2
launcher: {script: train.py}
"""
# argv[1]: "program" (main() as the nodeweave program) or "library" (main(argv)); the rest: nodeweave's words.
# What the call loaded goes to $PROBE_OUT, so stdout and stderr are the command's alone.
PROBE = ("import json, os, sys; from nodeweave.cli import main; how = sys.argv.pop(1); sys.argv[0] = 'nodeweave'; "
         "code = main() if how == 'program' else main(sys.argv[1:]); sys.stdout.flush(); "
         "open(os.environ['PROBE_OUT'], 'w').write(json.dumps({'code': code, 'full': 'nodeweave.spec' in sys.modules,"
         " 'jinja2': 'jinja2' in sys.modules}))")


class Project:
    """A folder with a spec, a requirements file and the tree rendered from them, and a cache folder of its own."""

    def __init__(self, root: Path, src: Path = SRC) -> None:
        self.root, self.src = root, src
        self.cache = root.parent / f"{root.name}-cache"
        self.env = {**os.environ, "PYTHONPATH": str(src), "NODEWEAVE_CACHE_DIR": str(self.cache), "COLUMNS": "100"}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        root.mkdir(exist_ok=True)
        (root / "nodeweave.yaml").write_text(SPEC)
        (root / "requirements.txt").write_text("numpy==1.26.4\n")
        (root / "train.py").write_text("print('hi')\n")
        done = self.call("library", "render", "all")
        assert done["code"] == 0, done

    def call(self, how: str, *words: str, cwd: "Path | None" = None) -> dict:
        probe = self.root.parent / f"{self.root.name}-probe.json"
        done = subprocess.run([sys.executable, "-c", PROBE, how, *words], cwd=cwd or self.root,
                              env={**self.env, "PROBE_OUT": str(probe)}, capture_output=True, timeout=120)
        assert probe.exists(), done.stderr.decode()[-2000:]
        found = json.loads(probe.read_text())
        probe.unlink()
        return {**found, "out": done.stdout, "err": done.stderr}

    def records(self) -> "list[Path]":
        return sorted((self.cache / "render-check").glob("*.json"))

    def check_both(self, *words: str, cwd: "Path | None" = None, target: str = "all") -> "tuple[dict, dict]":
        """The check as the program (memo on) and as a library (the full check), asked to say the same."""
        words = ("render", target, "--check", *words)
        program, library = self.call("program", *words, cwd=cwd), self.call("library", *words, cwd=cwd)
        assert library["full"]
        assert (program["code"], program["out"], program["err"]) == (library["code"], library["out"], library["err"])
        return program, library


@pytest.fixture
def project(tmp_path) -> Project:
    return Project(tmp_path / "proj")


def kept(project: Project, target: str = "all", *words: str) -> dict:
    """A check that passed in full and left its record, then one answered from the record."""
    first, _ = project.check_both(*words, target=target)
    assert first["code"] == 0 and first["full"] and len(project.records()) == 1
    second, _ = project.check_both(*words, target=target)
    assert second["code"] == 0 and not second["full"] and not second["jinja2"], "the second check was not kept"
    return second


def test_an_identical_check_that_passed_is_answered_from_the_memo_byte_for_byte(project):
    answered = kept(project)
    assert b"unchanged" in answered["out"] and b" unchanged in " in answered["err"]
    for how in ("-o", "json"), ("-o", "yaml"), ("--json",):  # another format: its own full check, then kept
        first, _ = project.check_both(*how)
        again, _ = project.check_both(*how)
        assert first["full"] and not again["full"] and again["code"] == 0


def test_a_library_call_neither_reads_nor_writes_the_memo(project):
    kept(project)
    for record in project.records():
        record.unlink()
    assert project.call("library", "render", "all", "--check")["code"] == 0
    assert project.records() == []


def change_spec(p: Project):
    (p.root / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", "nodes: 3"))


def change_spec_same_size(p: Project):
    (p.root / "nodeweave.yaml").write_text(SPEC.replace("nwmemo", "nwmeme"))


def change_named_file(p: Project):
    (p.root / "requirements.txt").write_text("numpy\n")  # unpinned: the spec is refused (exit 2)


def change_rendered_file(p: Project):
    compose = p.root / "compose" / "node.yaml"
    compose.write_text(compose.read_text() + "# mine\n")


def remove_rendered_file(p: Project):
    (p.root / "images" / "cpu" / "Dockerfile").unlink()


def change_record(p: Project):
    (p.root / ".nodeweave" / "rendered.json").write_text("{}")  # damaged: named, exit 2


def link_rendered_file(p: Project):
    dockerfile = p.root / "images" / "cpu" / "Dockerfile"
    (p.root / "Dockerfile.copy").write_bytes(dockerfile.read_bytes())
    dockerfile.unlink()
    dockerfile.symlink_to(p.root / "Dockerfile.copy")  # the same bytes, through a link


def add_users_file(p: Project):
    (p.root / "images" / "notes.txt").write_text("mine\n")


def set_variable(p: Project):
    p.env["NODEWEAVE_SPEC_TYPO"] = "1"  # an unknown NODEWEAVE_ variable: a warning line


def set_unrelated_variable(p: Project):
    p.env["SOME_TOOL_HOME"] = "/opt/x"


def damage_memo(p: Project):
    for record in p.records():
        record.write_text('{"version": 1, "call": ')


@pytest.mark.parametrize("change, code", [
    (change_spec, 4), (change_spec_same_size, 4), (change_named_file, 2), (change_rendered_file, 4),
    (remove_rendered_file, 4), (link_rendered_file, None), (change_record, 2), (add_users_file, 0), (set_variable, 0),
    (set_unrelated_variable, 0), (damage_memo, 0),
])
def test_every_change_to_what_the_answer_rests_on_is_noticed(project, change, code):
    kept(project)
    change(project)
    after, _ = project.check_both()  # byte for byte what the full check says
    assert after["full"] and after["code"] == (code if code is not None else after["code"])


def test_a_file_the_render_record_names_coming_back_is_noticed(project):
    """A file an earlier render wrote and no renderer makes now, removed by hand: the check passes. Put back (a
    checkout), it is obsolete again, so stale, even where no file the check read sits beside it (`render compose`
    reads nothing at the top of a tree beside the spec)."""
    import hashlib

    assert project.call("library", "render", "all", "--out", "tree")["code"] == 0
    tree = project.root / "tree"
    record = tree / ".nodeweave" / "rendered.json"
    data = json.loads(record.read_text())
    data["files"]["compose/hosts"] = {"sha256": hashlib.sha256(b"old\n").hexdigest(), "target": "compose",
                                          "job": "nwmemo"}  # a name compose renders (with hosts), not for this spec
    record.write_text(json.dumps(data))
    kept(project, "compose", "--out", "tree")
    (tree / "compose" / "hosts").write_text("old\n")  # one of the target's own names (the record's rule)
    after, _ = project.check_both("--out", "tree", target="compose")
    assert after["full"] and after["code"] == 4 and b"compose/hosts" in after["out"]


def test_another_call_is_its_own_check(project, tmp_path):
    kept(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = str(project.root / "nodeweave.yaml")
    first, _ = project.check_both("--spec", spec, cwd=elsewhere)  # another folder: paths print otherwise
    assert first["full"] and first["code"] == 0
    narrower, _ = project.check_both("--spec", spec, "--out", str(project.root), cwd=elsewhere)
    assert narrower["full"]


def test_a_check_that_finds_stale_files_keeps_nothing(project):
    change_rendered_file(project)
    stale, _ = project.check_both()
    assert stale["code"] == 4 and project.records() == []
    again, _ = project.check_both()
    assert again["full"] and again["code"] == 4


def test_a_spec_on_standard_input_is_never_kept(project):
    words = ("render", "all", "--check", "--spec", "-")
    for _ in range(2):
        with open(project.root / "nodeweave.yaml", "rb") as spec:
            done = cli_run.run([*cli_run.NODEWEAVE, *words], cwd=project.root, env=project.env, stdin=spec,
                               text=False, timeout=120)
        assert done.returncode == 0, done.stderr
    assert project.records() == []


@pytest.fixture
def own_package(tmp_path) -> Project:
    """A project rendered by a copy of nodeweave's package, which the test may edit."""
    src = tmp_path / "src"
    shutil.copytree(SRC / "nodeweave", src / "nodeweave", ignore=shutil.ignore_patterns("__pycache__"))
    return Project(tmp_path / "proj", src)


def test_an_edit_to_nodeweaves_own_files_is_noticed(own_package):
    package = own_package.src / "nodeweave"
    kept(own_package)
    template = package / "targets" / "images" / "templates" / "Dockerfile.j2"
    template.write_text(template.read_text() + "# one more line\n")
    after, _ = own_package.check_both()
    assert after["full"] and after["code"] == 4  # every Dockerfile is stale
    template.write_text(template.read_text().replace("# one more line\n", ""))
    # this check compiles the template again into Jinja's cache (a file it read and rewrote): it keeps nothing
    assert own_package.check_both()[0]["full"]
    kept(own_package)
    # a module that render --check never imports, but the entrypoint zipapp carries: the zipapp is stale
    worker = package / "check" / "worker.py"
    worker.write_text(worker.read_text() + "\n# one more line\n")
    after, _ = own_package.check_both()
    assert after["full"] and after["code"] == 4 and b"nodeweave-entrypoint.pyz" in after["err"]


def test_the_memo_is_the_program_s_only_while_it_runs(tmp_path, monkeypatch):
    """main() marks the process as the program while it runs, never after: a test's main(argv) that follows
    one that ran the program (in the same process) still takes the full check."""
    from nodeweave.cli import as_program, main

    seen = []
    monkeypatch.setattr(sys, "argv", ["nodeweave", "--version"])
    monkeypatch.setattr("nodeweave.cli._main", lambda argv: seen.append(as_program()) or 0)
    try:
        assert main() == 0 and seen == [True]
    finally:
        import gc

        gc.unfreeze()  # what main() as the program froze for its exit: this process goes on
    assert not as_program()
    main(["--version"])
    assert seen == [True, False]


def test_an_edit_to_nodeweaves_code_during_the_check_keeps_nothing(own_package):
    """The check ran the code as it was; a record stamped with the edited code would vouch for code that never
    ran. Here the compose renderer is changed after it rendered and before the check ends (by an import hook,
    as the zipapp target loads): that check passes, keeps nothing, and the next identical one finds compose
    stale."""
    (own_package.src / "sitecustomize.py").write_text(  # runs in every child
        "import os, sys\n"
        "if os.environ.get('EDIT_DURING_CHECK'):\n"
        "    class Edit:\n"
        "        def find_spec(self, name, path=None, target=None):\n"
        "            f = os.environ['EDIT_DURING_CHECK']\n"
        "            if name == 'nodeweave.targets.zipapp' and '# edited' not in open(f).read():  # once\n"
        "                open(f, 'a').write(EDIT)\n"
        "            return None\n"
        "    EDIT = '\\n_rendered = render_files\\n\\n\\ndef render_files(spec):\\n'\\\n"
        "           '    return {k: v + \"# edited\\\\n\" for k, v in _rendered(spec).items()}\\n'\n"
        "    sys.meta_path.insert(0, Edit())\n")
    kept(own_package)
    for record in own_package.records():
        record.unlink()
    own_package.env["EDIT_DURING_CHECK"] = str(own_package.src / "nodeweave" / "targets" / "compose" / "__init__.py")
    during = own_package.call("program", "render", "all", "--check")
    assert during["full"] and during["code"] == 0  # it ran the renderer from before the edit
    assert own_package.records() == []
    after, _ = own_package.check_both()  # the same call: a record kept would have answered "up to date"
    assert after["full"] and after["code"] == 4 and b"compose/" in after["err"]
