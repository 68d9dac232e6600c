"""docs/design.md's map is the import graph: no circle, every room on a floor, no forbidden import.

The map is derived by tests/house_map.py (``.venv/bin/python tests/house_map.py --write`` after
moving code); an import inside a function counts like one at the top, so a circle cannot hide
behind a lazy import.
"""

from __future__ import annotations

import house_map
import pytest

GRAPH = house_map.module_graph()


def test_the_design_docs_map_is_generated_from_the_imports():
    text = house_map.DESIGN.read_text(encoding="utf-8")
    expected = house_map.with_section(text, house_map.section(GRAPH))
    assert text == expected, ("docs/design.md's house map differs from the imports: run "
                              "`.venv/bin/python tests/house_map.py --write` and read the diff")


def test_no_modules_import_each_other_in_a_circle():
    found = house_map.circles(GRAPH)
    assert found == [], f"modules that import each other (lazy imports counted): {found}"


@pytest.mark.parametrize("inside", [False, True], ids=["package", "entrypoint"])
def test_every_room_stands_on_a_floor(inside):
    rooms = house_map.room_graph(GRAPH, inside=inside)
    assert house_map.circles(rooms) == [], "rooms that import each other have no floor"
    assert min(house_map.floors(rooms).values()) == 1


def test_no_import_breaks_a_rule_of_the_house():
    assert house_map.broken_rules(GRAPH) == []


def _package(tmp_path, files):
    """A throwaway ``nodeweave`` tree: {relative path: source} -> {module name: path}."""
    found = {}
    for rel, source in files.items():
        path = tmp_path / "nodeweave" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        parts = ["nodeweave", *rel[:-3].split("/")]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_a_circle_behind_a_function_level_import_is_found(tmp_path):
    found = _package(tmp_path, {
        "__init__.py": "",
        "check/__init__.py": "",
        "check/links.py": "from nodeweave.check.verdict import best\n",
        "check/verdict.py": "def findings():\n    from .links import link_findings\n",
        "check/peers.py": "from . import links\n",
    })
    graph = house_map.module_graph(found)
    assert graph["nodeweave.check.peers"] == {"nodeweave.check.links"}
    assert house_map.circles(graph) == [["nodeweave.check.links", "nodeweave.check.verdict"]]


def test_a_forbidden_import_is_named_with_its_reason():
    graph = {"nodeweave.entrypoint.detection.kube": {"nodeweave.entrypoint.planning.topology"},
             "nodeweave.entrypoint.core": {"nodeweave.errors", "nodeweave"},
             "nodeweave.targets.compose.node": {"nodeweave.targets.kubernetes.pod"},
             "nodeweave.targets.trainjob": {"nodeweave.targets.kubernetes.pod"}}
    broken = house_map.broken_rules(graph)
    assert broken == [
        "nodeweave.entrypoint.core -> nodeweave.errors: the entrypoint ships alone (the zipapp, stdlib only): "
        "it imports nothing of nodeweave outside itself",
        "nodeweave.entrypoint.detection.kube -> nodeweave.entrypoint.planning.topology: detection reads the "
        "machine; planning decides from what it read",
        "nodeweave.targets.compose.node -> nodeweave.targets.kubernetes.pod: a target never imports another "
        "(only the Kubernetes family reuses kubernetes/)",
    ]


def test_a_section_without_markers_is_refused():
    with pytest.raises(ValueError, match="markers"):
        house_map.with_section("# design\n", "body")
