"""walk15a rows fixed by fix17a: a spec's every independent mistake in one run, and what a field accepts said
plainly. Each test fails on the code before its fix."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cli_run import in_process as run_cli

from nodeweave.errors import UsageError
from nodeweave.spec import load_spec, parse_spec
from nodeweave.spec.nodes import SpecErrors

ROOT = Path(__file__).resolve().parents[1]


def refused(text: str, base_dir=None) -> "list":
    """The FieldErrors of a spec's refusal, in the file's order."""
    with pytest.raises(SpecErrors) as caught:
        parse_spec(text, "s.yaml", base_dir=base_dir)
    return caught.value.fields


# -- A1, A23, A25: one refusal in a part (a list item, a requirements line) hid the others ----------------------

EVERY_SECTION = """\
name: job
image: {variant: cuda11, tag: [a], build_args: "x"}
launcher: {type: torchrunn, script: t.py, args: "--lr 3", master_port: "29500", mode: holdd}
network: {interfaces: eth0, rdma: maybe}
env: {B: null, "1X": y}
resources: {hugepages: 5, requests: {cpu: lots}}
hosts: gpu01
volumes:
  - {name: Data, path: data, host_path: /data}
  - {name: data, kind: bogus}
kubernetes: {tolerations: [{operator: Exist}, {key: a, operator: Equal, effect: Sometimes}]}
"""
EVERY_MISTAKE = {"image.variant", "image.tag", "image.build_args", "launcher.type", "launcher.args",
                 "launcher.master_port", "launcher.mode", "network.interfaces", "network.rdma", "env.B", "env.1X",
                 "resources.hugepages", "resources.requests.cpu", "hosts", "volumes[0].name", "volumes[0].path",
                 "volumes[1].kind", "volumes[1].path", "kubernetes.tolerations[0].operator",
                 "kubernetes.tolerations[1].effect"}


def test_every_independent_mistake_of_a_spec_is_named_in_one_run(tmp_path, capsys, monkeypatch):
    """A1, A23, A25: a part stopped at its first refusal (launcher.args hid launcher.type and four more), a refused
    part hid every check of another (resources hid volumes), a list item its other fields, and a requirements file
    its other lines: four rounds of validate for one file. Each field, item, entry and line is read on its own."""
    fields = {error.field for error in refused(EVERY_SECTION)}
    assert EVERY_MISTAKE <= fields, sorted(EVERY_MISTAKE - fields)

    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "r2.txt").write_text("numpy==1.26.4\nrequests\ntorch==2.0.0\n")
    errors = refused("name: job\nimage: {variant: cpu, requirements: r2.txt}\nlauncher: {script: t.py}\n", tmp_path)
    said = " | ".join(error.problem for error in errors)
    assert "r2.txt:2:" in said and "r2.txt:3:" in said, said

    (tmp_path / "t.py").rename(tmp_path / "train.py")  # init: its note names every line it left out for
    (tmp_path / "requirements.txt").write_text("numpy\ntorch==2.0.0\nrequests==2.31.0\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "init", "--dry-run", "--script", "train.py")
    note = next(line for line in err.splitlines() if "requirements.txt left out" in line)
    assert "requirements.txt:1:" in note and "requirements.txt:2:" in note, err


# -- A2: a number where a name or a path goes was taken as text -------------------------------------------------

@pytest.mark.parametrize("extra, field", [
    ("image: {variant: cpu, registry: 5}\nlauncher: {script: t.py}\n", "image.registry"),
    ("image: {variant: cpu}\nlauncher: {script: 3}\n", "launcher.script"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\nworkspace: {host_path: 7}\n", "workspace.host_path"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\nworkspace: {path: 7}\n", "workspace.path"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\nslurm: {partition: 5}\n", "slurm.partition"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\nvolumes: [{name: 5, path: /d, host_path: /d}]\n",
     "volumes[0].name"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\nrecovery: {checkpoint_dir: 1.5}\n",
     "recovery.checkpoint_dir"),
])
def test_a_number_where_a_name_or_a_path_goes_is_refused_as_a_quoted_number_is(extra, field, tmp_path, capsys,
                                                                              monkeypatch):
    """A2: `registry: 5` and `host_path: 7` passed, `script: 3` was later called a program: the mirror of the
    quoted-number rule (`nodes: "2"`), one rule for every field of a name or a path, with the quotes to write."""
    (error,) = refused("name: job\n" + extra)
    assert error.field == field and error.problem.startswith("got the number "), error
    # the rule is the field's: a tag, a quantity, a Slurm time, a label value and an env value take numbers
    spec = parse_spec("name: job\nimage: {variant: cpu, tag: 2024}\nlauncher: {script: t.py}\nenv: {A: 1}\n"
                      "resources: {requests: {cpu: 8}}\nslurm: {time: 60}\n"
                      "kubernetes: {node_selector: {gpus: 8}}\n", "s.yaml")
    assert spec.image.tag == "2024" and spec.env["A"] == "1" and spec.slurm.time == "60"
    if field == "launcher.script":  # init writes a script named 3 as the string it is
        (tmp_path / "3").write_text("print(1)\n")
        monkeypatch.chdir(tmp_path)
        code, out, err = run_cli(capsys, "init", "--dry-run", "--script", "3")
        assert code == 0 and "script: '3'" in out, err


# -- A33: a free-form mapping's refusal glued its key's rule to "mapped to strings" -----------------------------

@pytest.mark.parametrize("extra, field", [
    ("env: [A]\n", "env"), ("image: {variant: cpu, build_args: x}\n", "image.build_args"),
    ("kubernetes: {labels: 5}\n", "kubernetes.labels"), ("kubernetes: {node_selector: [a]}\n",
                                                         "kubernetes.node_selector"),
    ("resources: {devices: x}\n", "resources.devices"), ("network: {rdma_resources: [a]}\n",
                                                         "network.rdma_resources"),
    ("resources: {hugepages: 5}\n", "resources.hugepages"), ("resources: {requests: [8]}\n",
                                                             "resources.requests"),
])
def test_a_mapping_given_another_shape_is_told_it_is_a_mapping_with_one_written_out(extra, field):
    """A33: `env: [A]` was told "an environment variable name: ... not starting with a digit mapped to strings":
    no mapping named, none shown. Every free-form mapping says it is one and writes one entry out."""
    base = "name: job\nimage: {variant: cpu}\nlauncher: {script: t.py}\n"
    if extra.startswith("image"):
        base = base.replace("image: {variant: cpu}\n", "")
    (error,) = refused(base + extra)
    key = field.rpartition(".")[2]
    assert error.field == field and error.accepted.startswith("a mapping of "), error
    assert re.search(rf"e\.g\. {re.escape(key)}: \{{\S", error.accepted), error


# -- A3: the shipped spec's comment named another rule than the name's ------------------------------------------

def test_what_the_shipped_specs_say_name_accepts_is_the_rule():
    """A3: nodeweave.yaml said `name: ... # DNS-1123 label`, and validate refused `7b-llm`, a DNS-1123 label; the
    comment of `name:` in the shipped spec and in the spec init writes names the rule's kind and length."""
    from nodeweave.cli.init import TEMPLATE as SPEC_TEMPLATE
    from nodeweave.spec import rules

    kind = re.search(r"DNS-\d+ label", rules.JOB_NAME.accepted).group(0)
    most = re.search(r"at most (\d+)", rules.JOB_NAME.accepted).group(1)
    for where, text in (("nodeweave.yaml", (ROOT / "nodeweave.yaml").read_text()), ("init", SPEC_TEMPLATE)):
        comment = re.search(r"^name:[^#\n]*#(.*)$", text, re.M).group(1)
        assert kind in comment and most in comment and "letter" in comment, (where, comment)


# -- A6: a script named -x.py passed validate, up and init; run's hint repeated it ------------------------------

def test_a_script_whose_name_starts_with_a_dash_is_refused_by_the_spec_and_offered_as_its_path():
    """A6: every node's launcher reads `-x.py` as its own option; the spec's one script rule refuses it (validate,
    up and init read the spec through it) naming ./-x.py, and run's refusal offers `run -- ./-x.py`."""
    from nodeweave.entrypoint.planning.consistency import no_script

    (error,) = refused("name: job\nimage: {variant: cpu}\nlauncher: {script: -x.py}\n")
    assert error.field == "launcher.script" and "./-x.py" in error.accepted, error
    said = no_script("torchrun", ["-x.py", "--lr", "1"], "train.py")
    assert "nodeweave run -- ./-x.py --lr 1" in said and "-x.py -x.py" not in said, said


# -- A24: --spec train.py was answered by the YAML reader's token names -----------------------------------------

@pytest.mark.parametrize("name, text, what", [
    ("train.py", "import torch\nprint(1)\n", "a Python script"),
    ("demo.sh", "set -e\necho hi\n", "a shell script"),
    ("README.md", "# nodeweave\n\nMulti-node: training\n", "a Markdown document"),
    ("train", "#!/usr/bin/env python3\nprint(1)\n", "a script"),
])
def test_a_script_or_a_document_given_as_the_spec_is_named_as_what_it_is(tmp_path, name, text, what):
    """A24: `--spec train.py` read "train.py:1:3: not valid YAML: expected '<document start>'": a script (by its
    ending or its #! line) or a document is named as one, with what --spec and launcher.script each name."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert f"is {what}" in message and "not a spec" in message and "YAML" not in message, message


# -- A10: a hint named image.name, which no spec has ------------------------------------------------------------

MODULES = {str(p.relative_to(ROOT / "src" / "nodeweave").with_suffix("")).replace("/", ".")
           for p in (ROOT / "src" / "nodeweave").rglob("*.py")}
NOT_FIELDS = ("network.subdomain", "kubernetes.io")  # JobSet's own field; the project's site


def _field_names(text: str):
    from nodeweave.spec.loader import SECTION_KEYS

    sections = "|".join(SECTION_KEYS)
    for match in re.finditer(rf"(?<![\w./-])({sections})\.([A-Za-z_]+)\b(?![/(-]|\.io\b|: unknown key)", text):
        yield match.group(0), match.group(2) in SECTION_KEYS[match.group(1)]


def _is_module(name: str) -> bool:
    return any(module == name or module.endswith("." + name) or module.startswith(name + ".")
               or f".{name}." in module for module in MODULES)


def test_every_spec_field_a_hint_or_a_doc_names_is_one_of_the_spec():
    """A10: image build's note and docs/cluster.md offered `image.name`, which validate refused as an unknown key:
    every `section.field` named in nodeweave's words (its strings, README, docs/) is a key of that section."""
    unknown = []
    for path in (ROOT / "src" / "nodeweave").rglob("*.py"):
        tree = ast.parse(path.read_text())
        docstrings = {id(body[0].value) for body in (getattr(n, "body", None) for n in ast.walk(tree))
                      if isinstance(body, list) and body and isinstance(body[0], ast.Expr)}  # the code's own words
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                unknown += [(str(path.relative_to(ROOT)), node.lineno, name) for name, known in
                            _field_names(node.value) if not known]
    for path in (ROOT / "README.md", *(ROOT / "docs").rglob("*.md")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            unknown += [(str(path.relative_to(ROOT)), number, name) for name, known in _field_names(line)
                        if not known]
    unknown = [row for row in unknown if row[2] not in NOT_FIELDS and not _is_module(row[2])
               and not row[2].endswith((".md", ".py", ".json", ".yaml"))]
    assert not unknown, unknown
