"""fix15b (issue 43): rows A2, A3, A10, A18, A19, A21 of the thirteenth walk, each fixed as a class; each test's
docstring starts with the rows it covers."""

from __future__ import annotations

import json
from pathlib import Path

import cli_run
import pytest

REPO = Path(__file__).resolve().parents[1]
CPU_ONLY = REPO / "tests" / "fixtures" / "synthetic" / "cpu-only"
SPEC = "name: s1\nnodes: 2\nlauncher: {script: train.py}\nimage: {variant: cpu}\n"


# --- A2: doctor, the one verb that reads no spec unless --spec is given, names the spec it passed over --------------


@pytest.mark.parametrize("where", ["here", "above", "NODEWEAVE_SPEC"])
def test_a2_doctor_names_the_spec_it_does_not_read(tmp_path, monkeypatch, capsys, where):
    """A2: `nodeweave doctor` beside a nodeweave.yaml, below one, or with $NODEWEAVE_SPEC set judged this machine
    alone without a word, while docs said every verb finds the spec; now one note names the spec and the --spec."""
    if not CPU_ONLY.is_dir():
        pytest.skip("fixture sysroot cpu-only is absent")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "proj" / "sub").mkdir()
    folder = {"here": tmp_path / "proj", "above": tmp_path / "proj" / "sub", "NODEWEAVE_SPEC": tmp_path}[where]
    monkeypatch.chdir(folder)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    if where == "NODEWEAVE_SPEC":
        monkeypatch.setenv("NODEWEAVE_SPEC", str(tmp_path / "proj" / "nodeweave.yaml"))
    code, out, err = cli_run.in_process(capsys, "doctor", "--json", "--sysroot", str(CPU_ONLY))
    assert json.loads(out)["schema"] == "nodeweave.doctor/1"
    notes = [line for line in err.splitlines() if "read only with --spec" in line]
    assert len(notes) == 1 and "nodeweave.yaml" in notes[0] and "nodeweave doctor --spec " in notes[0], err


def test_a2_doctor_cluster_outside_a_node_finds_the_spec_as_every_verb(tmp_path, monkeypatch):
    """A2: `doctor --cluster` outside a node took the folder's nodeweave.yaml over $NODEWEAVE_SPEC, unlike every
    cluster verb."""
    from nodeweave.cli.doctor import cluster_spec

    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    other = tmp_path / "other.yaml"
    other.write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEWEAVE_SPEC", str(other))
    assert cluster_spec() == other
    monkeypatch.delenv("NODEWEAVE_SPEC")
    assert cluster_spec() == Path("nodeweave.yaml")


# --- A21: every character the YAML reader refuses is placed and named in one line, as any other YAML error ---------


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\ufffe", "\x9f"],
                         ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("at_line", [1, 3])
def test_a21_a_character_yaml_refuses_is_one_line_with_its_place(char, at_line):
    """A21: a NUL (or any character YAML refuses) gave PyYAML's two lines, the second `in "<unicode string>",
    position 8`, with no line or column; now one line `file:line:column:` naming the code point and what to do."""
    from nodeweave.errors import UsageError
    from nodeweave.spec.loader import parse_spec

    lines = ["name: s1", "nodes: 2", "launcher: {script: train.py}"]
    lines[at_line - 1] += char
    with pytest.raises(UsageError) as caught:
        parse_spec("\n".join(lines) + "\n", "nul.yaml")
    text = str(caught.value)
    assert "\n" not in text and "<unicode string>" not in text, text
    column = len(lines[at_line - 1])
    assert text.startswith(f"nul.yaml:{at_line}:{column}: not valid YAML: the character U+{ord(char):04X} "), text
    assert ("UTF-8" in text) if char == "\x00" else ("escape" in text), text


# --- A10: an unknown key holds back only the required field it is taken for, never another missing one --------------

# Each required field the spec reads (Fields.require's callers), the mapping it sits in, and a sibling key to misspell.
REQUIRED = {
    "name": ({"name": "s1", "nodes": 2, "launcher": {"script": "train.py"}, "image": {"variant": "cpu"}},
             "name", "nodes"),
    "image": ({"name": "s1", "nodes": 2, "launcher": {"script": "train.py"}, "image": {"variant": "cpu"}},
              "image", "nodes"),
    "launcher": ({"name": "s1", "nodes": 2, "launcher": {"script": "train.py"}, "image": {"variant": "cpu"}},
                 "launcher", "nodes"),
    "launcher.script": ({"name": "s1", "launcher": {"script": "train.py", "args": []}, "image": {"variant": "cpu"}},
                        "launcher.script", "launcher.args"),
    "image.variant": ({"name": "s1", "launcher": {"script": "train.py"}, "image": {"variant": "cpu", "tag": "x"}},
                      "image.variant", "image.tag"),
}


def _drop_and_misspell(spec: dict, drop: str, misspell: str) -> dict:
    import copy

    spec = copy.deepcopy(spec)
    *parent, key = drop.split(".")
    holder = spec
    for part in parent:
        holder = holder[part]
    del holder[key]
    *parent, key = misspell.split(".")
    holder = spec
    for part in parent:
        holder = holder[part]
    holder[key[:-1] + "z"] = holder.pop(key)  # nodes -> nodez, args -> argz, tag -> taz
    return spec


@pytest.mark.parametrize("field", sorted(REQUIRED))
def test_a10_a_typo_of_another_key_does_not_hide_a_missing_required_field(field):
    """A10: `nodez: 3` (did you mean 'nodes'?) hid the missing `image:` until the typo was fixed; now both lines
    come in one run, and only a required field an unknown key is taken for is held back."""
    import yaml

    from nodeweave.spec.loader import parse_spec
    from nodeweave.spec.nodes import SpecErrors

    spec, drop, misspell = REQUIRED[field]
    with pytest.raises(SpecErrors) as caught:
        parse_spec(yaml.safe_dump(_drop_and_misspell(spec, drop, misspell)), "nodeweave.yaml")
    problems = caught.value.problems
    assert any(f" {drop}: required field is missing" in line for line in problems), problems
    assert any("unknown key" in line for line in problems), problems


@pytest.mark.parametrize("field", sorted(REQUIRED))
def test_a10_the_typo_of_a_required_field_is_its_one_line(field):
    """A10: a misspelt required field (`imag:`) is one mistake: the unknown key's line, not also `required field
    is missing`."""
    import yaml

    from nodeweave.spec.loader import parse_spec
    from nodeweave.spec.nodes import SpecErrors

    spec, drop, _ = REQUIRED[field]
    *parent, key = drop.split(".")
    with pytest.raises(SpecErrors) as caught:
        parse_spec(yaml.safe_dump(_misspell(spec, drop)), "nodeweave.yaml")
    problems = caught.value.problems
    assert not any("required field is missing" in line for line in problems), problems
    assert any(f"did you mean '{key}'" in line for line in problems), problems


def _misspell(spec: dict, field: str) -> dict:
    import copy

    spec = copy.deepcopy(spec)
    *parent, key = field.split(".")
    holder = spec
    for part in parent:
        holder = holder[part]
    holder[key[:-1]] = holder.pop(key)  # name -> nam, image -> imag, script -> scrip
    return spec


# --- A18: each build-context path field says what it takes, and why the value given is refused ----------------------


WHAT = {"image.requirements": "requirements file", "image.project.source": "spec's folder itself"}


def _with(field: str, value: str) -> str:
    image = {"variant": "cpu"}
    if field == "image.requirements":
        image["requirements"] = value
    else:
        image["project"] = {"source": value, "run": ["pip install ."]}
    import yaml

    return yaml.safe_dump({"name": "s1", "launcher": {"script": "train.py"}, "image": image})


@pytest.mark.parametrize("value", [".", "./src", "/etc/passwd", ".hidden"])
@pytest.mark.parametrize("field", sorted(__import__("nodeweave.spec.rules", fromlist=["x"]).CONTEXT_RULES))
def test_a18_a_context_path_field_refusal_names_its_own_accepted_text(field, value):
    """A18: `image.project.source: .` and `image.requirements: /etc/passwd` got one generic text ("a file or
    directory ... relative, letters, digits, '.'") that described '.' itself and offered a folder as a requirements
    file; each field now says what it names, the first character's rule, and for a source why '.' is refused."""
    from nodeweave.errors import UsageError
    from nodeweave.spec.loader import parse_spec

    with pytest.raises(UsageError) as caught:
        parse_spec(_with(field, value), "nodeweave.yaml")
    line = next(line for line in str(caught.value).splitlines() if f" {field}: got " in line)
    assert WHAT[field] in line and "starting with a letter, digit or '_'" in line, line


# --- A3: init leaves out a requirements.txt the image build would refuse, as it leaves out one it cannot read -------


@pytest.mark.parametrize("kind", ["link out of the folder", "folder", "unpinned line"])
def test_a3_init_writes_no_requirements_field_the_build_would_refuse(tmp_path, monkeypatch, capsys, kind):
    """A3: a requirements.txt linked out of the folder was written as `requirements: requirements.txt` with a note
    that the build would refuse it (and `image build` then did, exit 2); now it is left out with its note, as a folder
    or an unpinned line is."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "main.py").write_text("print(1)\n")
    if kind == "link out of the folder":
        (tmp_path / "common.txt").write_text("numpy==1.26.4\n")
        (folder / "requirements.txt").symlink_to(tmp_path / "common.txt")
    elif kind == "folder":
        (folder / "requirements.txt").mkdir()
    else:
        (folder / "requirements.txt").write_text("numpy>=1\n")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", cli_run.home_beside(folder))
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    code, _, err = cli_run.in_process(capsys, "init", "--script", "main.py")
    assert code == 0, err
    assert "requirements" not in (folder / "nodeweave.yaml").read_text(), err
    assert "left out of image.requirements" in err, err


def test_a3_a_link_inside_the_folder_is_still_written(tmp_path, monkeypatch, capsys):
    """A3: a requirements.txt linked to a file inside the folder is the build's to send: still written."""
    folder = tmp_path / "proj"
    (folder / "deps").mkdir(parents=True)
    (folder / "main.py").write_text("print(1)\n")
    (folder / "deps" / "req.txt").write_text("numpy==1.26.4\n")
    (folder / "requirements.txt").symlink_to("deps/req.txt")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", cli_run.home_beside(folder))
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    code, _, err = cli_run.in_process(capsys, "init", "--script", "main.py")
    assert code == 0 and "requirements: requirements.txt" in (folder / "nodeweave.yaml").read_text(), err


# --- A19: a second spec under another spelling of the name: refused both ways, and named by the verbs ---------------


def _spellings():
    from nodeweave.cli.habits.spec_path import SPELLINGS

    return [*SPELLINGS, "NODEWEAVE.YAML", "Nodeweave.yml"]


@pytest.mark.parametrize("second", [name for name in _spellings() if name != "nodeweave.yaml"])
@pytest.mark.parametrize("first", ["nodeweave.yaml", "nodeweave.yml"])
def test_a19_init_refuses_a_second_spelling_beside_a_spec_either_way(tmp_path, monkeypatch, capsys, first, second):
    """A19: `init --out nodeweave.yml` (or NODEWEAVE.YAML) beside the folder's nodeweave.yaml was written, exit 0,
    while the opposite order was refused; now one rule refuses both without --force (exit 2, one line naming both)."""
    if first == second:
        pytest.skip("the same name: init's replacing rule")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", cli_run.home_beside(tmp_path))
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    (tmp_path / "train.py").write_text("print(1)\n")
    code, _, err = cli_run.in_process(capsys, "init", "--out", first)
    assert code == 0, err
    if (tmp_path / second).exists():
        pytest.skip("a case-insensitive disk: the same file")
    code, _, err = cli_run.in_process(capsys, "init", "--out", second, "--dry-run")
    assert code == 2 and first in cli_run.one_line(err) and second in err and "--force" in err, err
    code, _, err = cli_run.in_process(capsys, "init", "--out", second, "--force")
    assert code == 0 and (tmp_path / second).is_file(), err


@pytest.mark.parametrize("second", [name for name in _spellings() if name != "nodeweave.yaml"])
def test_a19_a_verb_reading_nodeweave_yaml_names_a_second_spelling_beside_it(tmp_path, monkeypatch, capsys, second):
    """A19: `validate` (every verb) read nodeweave.yaml without a word of the nodeweave.yml beside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / second).write_text(SPEC)
    if (tmp_path / "nodeweave.yaml").read_text() and len(list(tmp_path.iterdir())) < 3:
        pytest.skip("a case-insensitive disk: the same file")
    code, _, err = cli_run.in_process(capsys, "validate")
    assert code == 0, err
    assert f"./{second} beside nodeweave.yaml is not read" in err, err
