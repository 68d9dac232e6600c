"""The repository's shape: no build artefacts committed, every room a package that says what it owns.

Reads what git tracks (``git ls-files``), so a stray wheel or tarball at the
root fails here before it ships. Which room may import which, and that no
import runs in a circle, is tests/test_house_map.py's (docs/design.md's map);
a room's size is a reader's judgement, not a number held here.
"""

import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTEFACT_SUFFIXES = (".whl", ".tar.gz", ".tgz", ".zip", ".egg", ".pyz", ".pyc", ".so")
ARTEFACT_DIRS = ("build", "dist", "__pycache__")
PYZ_HOME = "entrypoint"  # the one place a rendered zipapp may live (issue 23's entrypoint/nodeweave-entrypoint.pyz)


def tracked() -> "list[str]":
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in out.stdout.decode().split("\0") if name]


def artefacts(paths: "list[str]") -> "list[str]":
    """Build outputs among ``paths``: wheels, sdists, eggs, zipapps (outside entrypoint/), bytecode, build dirs."""
    found = []
    for name in paths:
        path = PurePosixPath(name)
        if path.parts[0] in ARTEFACT_DIRS or path.parts[0].endswith(".egg-info") or "__pycache__" in path.parts:
            found.append(name)
        elif name.endswith(ARTEFACT_SUFFIXES) and not (name.endswith(".pyz") and path.parts[0] == PYZ_HOME):
            found.append(name)
    return found


def test_no_build_artefact_is_committed():
    found = artefacts(tracked())
    assert found == [], f"build artefacts committed (remove them with git rm; .gitignore keeps them out): {found}"


def test_the_artefact_check_catches_what_it_names():
    """The rule itself: a stray wheel at the root is caught, the project's own files are not."""
    caught = artefacts(["pyflakes-4.1.0-py2.py3-none-any.whl", "nodeweave-0.1.0.tar.gz", "dist/x.txt",
                        "build/lib/a.py", "nodeweave.egg-info/PKG-INFO", "src/nodeweave/__pycache__/a.pyc",
                        "tool.pyz", "images/tool.pyz"])
    assert len(caught) == 8, caught
    assert artefacts(["entrypoint/nodeweave-entrypoint.pyz", "pyproject.toml", "src/nodeweave/build/__init__.py",
                      "wheelhouse/README.md", "images/cpu/Dockerfile"]) == []


def test_every_room_is_a_package_that_says_what_it_owns():
    """A folder of modules without ``__init__.py`` is a namespace package: the zipapp's import check and a
    reader both miss it. Each room's ``__init__`` opens with a docstring (what it owns, what it may import)."""
    package = ROOT / "src" / "nodeweave"
    import ast

    for folder in sorted(p for p in package.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        if not list(folder.glob("*.py")):
            continue  # data folders (templates)
        init = folder / "__init__.py"
        assert init.is_file(), f"{folder.relative_to(ROOT)} holds modules but no __init__.py"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), \
            f"{init.relative_to(ROOT)} has no docstring saying what the room owns"


def test_no_entrypoint_module_imports_another_rooms_private_names():
    """Issue 41: recovery imported four private helpers of checkin/session.py; a room's ``_names`` are its own,
    and what another room needs is public API (docs/design.md)."""
    import house_map

    assert house_map.private_imports() == []


def _fake_package(tmp_path, files):
    """``files`` ({path under the package: source}) written as a package ``nodeweave`` under ``tmp_path``;
    {module name: path}, as ``house_map.private_imports`` takes them."""
    found = {}
    for rel, source in files.items():
        path = tmp_path / "nodeweave" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        parts = ["nodeweave", *rel[:-3].split("/")]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_the_private_import_check_catches_what_it_names(tmp_path):
    """The rule itself, on a throwaway tree: a private name across rooms is caught, within a room it is not."""
    import house_map

    files = {"__init__.py": "", "entrypoint/__init__.py": "", "entrypoint/checkin/__init__.py": "",
             "entrypoint/checkin/session.py": "def _record(): pass\ndef record(): pass\n",
             "entrypoint/checkin/wire.py": "from .session import _record\n",
             "entrypoint/recovery/__init__.py": "",
             "entrypoint/recovery/hub.py": "def go():\n    from ..checkin.session import _record, record\n",
             "entrypoint/recovery/node.py": "from ..checkin import session\n"}
    found = _fake_package(tmp_path, files)
    saved = house_map.PACKAGE
    house_map.PACKAGE = tmp_path / "nodeweave"  # room_of reads folders under the package
    try:
        assert house_map.private_imports(found) == [
            "nodeweave.entrypoint.recovery.hub -> nodeweave.entrypoint.checkin.session._record"]
    finally:
        house_map.PACKAGE = saved


def test_no_module_anywhere_imports_another_rooms_private_names():
    """Issue 41's rule is the whole package's, not only the entrypoint's: ``cli/`` taking a ``_helper`` of
    ``cluster/`` (or ``rendering/`` one of ``targets/``) is the same reach into another room's business."""
    import house_map

    assert house_map.private_imports(inside="nodeweave") == []


def test_the_package_wide_check_catches_a_private_name_across_top_level_rooms(tmp_path):
    import house_map

    files = {"__init__.py": "", "cli/__init__.py": "", "cli/run.py": "from nodeweave.cluster.base import _state\n",
             "cli/up.py": "from .run import _local\n", "cluster/__init__.py": "",
             "cluster/base.py": "def _state(): pass\n"}
    found = _fake_package(tmp_path, files)
    saved = house_map.PACKAGE
    house_map.PACKAGE = tmp_path / "nodeweave"
    try:
        assert house_map.private_imports(found, inside="nodeweave") == [
            "nodeweave.cli.run -> nodeweave.cluster.base._state"]
    finally:
        house_map.PACKAGE = saved
