"""Every module nodeweave imports outside the standard library is one its wheel declares (or one the code that
imports it runs beside), so the installed wheel in a fresh venv imports what it needs. A developer's venv holds more
(click came in with huggingface_hub): `init --force` then worked here and died with ModuleNotFoundError from the
wheel (CI stop 50, tests/e2e/test_team_folder.py)."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "nodeweave"

# Imported only where something else provides them, each kept behind its own guard or in its own process:
BESIDE = {
    "torch": "the rank-side probes and bench/check workers run in the training image, beside torch",
    "matplotlib": "the `plot` extra: PNG/SVG charts, refused with a line naming the extra when absent",
    "nodeweave_device": "the rank hook's own modules, put on the ranks' path together (entrypoint/stall/rankhook)",
    "nodeweave_flight": "the rank hook's own modules",
    "nodeweave_rankprobe": "the rank hook's own modules",
}


def _imports():
    found = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(REPO)))
    return found


def _declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")
              for req in project["dependencies"]}
    modules = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            if dist.lower().replace("_", "-") in wanted:
                modules[module] = dist
    return wanted, modules


def test_every_third_party_import_is_a_declared_dependency():
    wanted, modules = _declared()
    stray = {name: sorted(where) for name, where in _imports().items()
             if name not in sys.stdlib_module_names and name != "nodeweave" and name not in modules
             and name not in BESIDE}
    assert not stray, f"imported but not declared in pyproject's dependencies ({sorted(wanted)}): {stray}"



def test_every_declared_dependency_is_imported():
    """The inverse: a runtime dependency nothing imports is a test tool in the wrong list (jsonschema was: it
    checks rendered compose files in the tests only), installed on every user's machine for nothing."""
    wanted, modules = _declared()
    imported = {modules[name].lower().replace("_", "-") for name in _imports() if name in modules}
    assert wanted <= imported, f"declared but never imported by nodeweave: {sorted(wanted - imported)}"
