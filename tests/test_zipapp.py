"""entrypoint/nodeweave-entrypoint.pyz: the stdlib entrypoint as one file, the same bytes every time.

The archive is rebuilt in fresh processes (and under every Python from 3.9
that pyenv holds here) and compared byte for byte; it runs with no nodeweave
installed (``python3 -I -S``: no site-packages at all, so every nodeweave
module comes from the archive), under the oldest python3 an image may bring;
it holds the entrypoint and nothing else of nodeweave, and every nodeweave
import inside it resolves inside it; and the render rules hold for a binary:
the mark in its head, a user's own zipapp never overwritten, written executable.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from nodeweave.rendering import is_marked, render_phase, write_rendered
from nodeweave.targets.zipapp import PATH, build, package_root

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / PATH
ARCHIVE_MODULE = REPO / "src" / "nodeweave" / "targets" / "zipapp" / "archive.py"
BUILD_IN_A_PROCESS = """
import hashlib, importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("archive", sys.argv[1])
archive = importlib.util.module_from_spec(spec)
spec.loader.exec_module(archive)
print(hashlib.sha256(archive.build(Path(sys.argv[2]))).hexdigest())
"""


def _digest_in_a_fresh_process(python: str, seed: str) -> str:
    out = subprocess.run([python, "-I", "-c", BUILD_IN_A_PROCESS, str(ARCHIVE_MODULE), str(package_root())],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": seed})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _pythons(minimum: "tuple[int, int]") -> "list[str]":
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    return [p for p in found if tuple(int(x) for x in Path(p).parents[1].name.split(".")[:2]) >= minimum]


def test_two_processes_build_the_same_bytes_as_the_committed_file():
    first = _digest_in_a_fresh_process(sys.executable, "1")
    second = _digest_in_a_fresh_process(sys.executable, "2")
    assert first == second
    assert first == hashlib.sha256(COMMITTED.read_bytes()).hexdigest(), "stale: run `make render` and commit"


def test_every_python_that_runs_nodeweave_builds_the_same_bytes():
    """zipfile's output for stored members does not change between Python releases (3.9 is nodeweave's floor)."""
    pythons = _pythons((3, 9))
    if len(pythons) < 2:
        pytest.skip("pyenv holds fewer than two Pythons >= 3.9 here")
    digests = {Path(p).parents[1].name: _digest_in_a_fresh_process(p, "0") for p in pythons}
    assert len(set(digests.values())) == 1, digests


def test_the_members_are_in_order_with_one_time_and_stored():
    infos = zipfile.ZipFile(COMMITTED).infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert {(i.date_time, i.compress_type, i.external_attr >> 16) for i in infos} == {
        ((1980, 1, 1, 0, 0, 0), zipfile.ZIP_STORED, 0o100644)}


def test_it_holds_the_entrypoint_and_the_check_worker_and_nothing_else_of_nodeweave():
    """The entrypoint, and what ``nodeweave check`` runs on a node (the rendered images put the archive on
    the venv's path): the worker and the modules it imports, not the CLI's workstation side."""
    names = set(zipfile.ZipFile(COMMITTED).namelist())
    sources = {p.relative_to(package_root().parent).as_posix()
               for p in (package_root() / "entrypoint").rglob("*.py") if "__pycache__" not in p.parts}
    assert {"__main__.py", "nodeweave/__init__.py", "nodeweave/check/worker.py"} | sources <= names
    others = {name.split("/")[1] for name in names - sources if name.count("/") >= 2}
    assert others == {"check", "bench"}, others
    assert "nodeweave/errors.py" in names  # bench/options.py's UsageError
    assert not {"nodeweave/check/driver.py", "nodeweave/bench/runner.py", "nodeweave/cli/__init__.py"} & names
    assert not any(n.endswith(".pyc") for n in names)


def test_the_check_worker_imports_from_the_archive_first_on_the_path(tmp_path):
    """As in a rendered image (the archive on the venv's path): the worker and its modules load from it."""
    pytest.importorskip("torch")
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import nodeweave.check.worker as w, nodeweave.bench.worker; "
             "print(w.__file__)")
    out = subprocess.run([sys.executable, "-I", "-c", probe, str(COMMITTED)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(COMMITTED)), out.stdout


def _imported(name: str, tree: ast.Module) -> "list[str]":
    """The modules an archive member imports (``import M``, ``from M import ...``), relative ones made absolute."""
    package = PurePosixPath(name).parent.as_posix().replace("/", ".").split(".")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.append(".".join([*base, *([node.module] if node.module else [])]))
    return found


def test_every_nodeweave_import_inside_resolves_inside():
    """Lazy imports too (``from ..running.profile import ...`` inside a function): each names a held module."""
    archive = zipfile.ZipFile(COMMITTED)
    held = {name[: -len(".py")].replace("/", ".").replace(".__init__", "") for name in archive.namelist()}
    missing = sorted((name, module) for name in archive.namelist()
                     for module in _imported(name, ast.parse(archive.read(name)))
                     if module.split(".")[0] == "nodeweave" and module not in held)
    assert not missing, f"the archive imports nodeweave modules it does not hold: {missing}"
    assert {"nodeweave.entrypoint.running.profile", "nodeweave.entrypoint.checkin.session"} <= held


def test_it_runs_with_no_nodeweave_installed(tmp_path):
    """-I -S: no site-packages, no PYTHONPATH, no current directory; the archive is all of nodeweave there is."""
    (tmp_path / "train.py").write_text("")  # a script --explain finds (a missing one is the plan's error, exit 2)
    out = subprocess.run([sys.executable, "-I", "-S", str(COMMITTED), "--explain", "--json", "--nnodes", "1",
                          "--", "train.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["topology"]["nnodes"]["value"] == "1" and plan["launch"]["argv"][0] == "torchrun"
    loaded = subprocess.run([sys.executable, "-I", "-S", "-c", "import runpy, sys; sys.argv = [sys.argv[1], '--help']; "
                             "sys.path.insert(0, sys.argv[0]); runpy.run_path(sys.argv[0], run_name='__main__')",
                             str(COMMITTED)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert loaded.returncode == 0 and "nodeweave-entrypoint" in loaded.stdout, loaded.stderr


def test_it_runs_as_a_program_under_the_oldest_python3_an_image_may_bring(tmp_path):
    oldest = _pythons((3, 6))[:1]
    if not oldest:
        pytest.skip("no pyenv Python here")
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(oldest[0])  # the shebang's `env python3` finds this one
    (tmp_path / "train.py").write_text("")
    out = subprocess.run([str(COMMITTED), "--explain", "--nnodes", "1", "--", "train.py"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path, env={"PATH": f"{link.parent}:/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "plan for" in out.stdout and "torchrun" in out.stdout


def test_the_mark_is_in_the_head_and_a_users_own_zipapp_is_not_marked():
    assert is_marked(COMMITTED.read_bytes())
    theirs = io.BytesIO()
    with zipfile.ZipFile(theirs, "w") as archive:  # a zip that names nodeweave inside is still theirs
        archive.writestr("__main__.py", "# Rendered by nodeweave\nprint('mine')\n")
    assert not is_marked(b"#!/usr/bin/env python3\n" + theirs.getvalue())


def test_render_never_overwrites_a_users_zipapp_and_writes_ours_executable(tmp_path):
    files = {PATH: build(package_root())}
    (tmp_path / "entrypoint").mkdir()
    (tmp_path / PATH).write_bytes(b"#!/usr/bin/env python3\nPK\x03\x04\x14\x00 my own\n")
    assert render_phase(files, tmp_path).refused == [PATH]
    (tmp_path / PATH).unlink()
    write_rendered(render_phase(files, tmp_path))
    assert (tmp_path / PATH).read_bytes() == files[PATH]
    assert os.stat(tmp_path / PATH).st_mode & 0o777 == 0o755
    assert render_phase(files, tmp_path).stale == []


def test_check_exits_4_when_the_zipapp_is_stale_and_render_refreshes_it(tmp_path, capsys):
    """What an entrypoint edit without `make render` looks like: a marked, differing archive at the path."""
    from nodeweave.cli import main
    from nodeweave.errors import EXIT_OK, EXIT_STALE

    spec = str(REPO / "nodeweave.yaml")
    (tmp_path / "entrypoint").mkdir()
    old = COMMITTED.read_bytes()
    (tmp_path / PATH).write_bytes(old[: len(old) // 2])  # its head, mark included: nodeweave's, but stale
    assert main(["render", "entrypoint", "--spec", spec, "--out", str(tmp_path), "--check"]) == EXIT_STALE
    assert PATH in capsys.readouterr().err
    assert main(["render", "entrypoint", "--spec", spec, "--out", str(tmp_path)]) == EXIT_OK
    assert (tmp_path / PATH).read_bytes() == old


def test_under_python_3_6_a_plan_with_a_master_runs_and_recovery_is_refused_in_one_line(tmp_path):
    """The oldest python3 an image may bring: the plan of a worker with a master address runs there (a 3.7 string
    method had crept in), and recovery, whose book needs 3.7, is refused in one line, exit 2, not a traceback."""
    found = [p for p in _pythons((3, 6)) if Path(p).parents[1].name.startswith("3.6.")][:1]
    if not found:
        pytest.skip("no pyenv Python 3.6 here")
    (tmp_path / "train.py").write_text("")
    env = {"PATH": f"{Path(found[0]).parent}:/usr/bin:/bin"}
    argv = [found[0], str(COMMITTED), "--explain", "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1",
            "--", "train.py"]
    plan = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert plan.returncode == 0 and "plan for" in plan.stdout, plan.stderr
    # `--node status` plans only when given the command (walk11b B22: without one it asks no plan)
    for extra in (["--explain"], ["--node", "status", "--", "train.py"]):
        args = argv[:2] + extra if extra[0] == "--node" else argv
        # a count of 2 for --node status too: recovery on one node is refused before its book (walk15b B11)
        out = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                             env=dict(env, NODEWEAVE_RECOVERY="on", NODEWEAVE_NNODES="2", NODE_RANK="1",
                                      MASTER_ADDR="10.0.0.1"))
        assert out.returncode == 2 and "needs python3 3.7 or later" in out.stderr, (extra, out.stderr)
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
