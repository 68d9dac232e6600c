"""Mistakes issue 20 saw accepted and failing later are refused where they are typed: one line, exit 2.

Also the habits around the spec: found from a subfolder or through $NODEWEAVE_SPEC, ``validate``,
``doctor --spec``; all through the real command line (``main``), no engine needed.
"""

from __future__ import annotations

import json

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_OK, EXIT_USAGE

SPEC = """name: nwb
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
kubernetes: {namespace: nwb}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    return tmp_path


def nodeweave(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def refused(capsys, *argv) -> str:
    code, out, err = nodeweave(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("line, words", [
    ('launcher: {script: "train.py --lr 1e-3"}', ["launcher.script", "args: ['--lr', '1e-3']"]),
    ("nodes: 100000", ["nodes", "1 to 2048"]),
    ('nodes: "2:100000"', ["nodes", "100000 nodes is more than", "2048"]),
])
def test_spec_mistakes_are_refused_at_the_line(project, capsys, line, words):
    key = line.split(":")[0]
    text = "\n".join(line if row.startswith(key + ":") else row for row in SPEC.splitlines())
    (project / "nodeweave.yaml").write_text(text + "\n")
    err = refused(capsys, "render", "all", "--dry-run")
    assert "nodeweave.yaml:" in err and all(w in err for w in words), err


@pytest.mark.parametrize("args, words", [
    (["up", "--dry-run", "--host", "a", "--host", "b", "--host", "c"], ["3 host(s)", "nodes: 2", "give 2"]),
    (["up", "--dry-run", "--host", "a", "--host", "me@a"], ["--host a is given 2 times"]),
    (["run", "--dry-run", "-e", "NODE_RANK=1"], ["NODE_RANK is set on every node by nodeweave"]),
    (["run", "--dry-run", "--sweep", "MASTER_PORT=1,2"], ["MASTER_PORT is set"]),
    (["image", "build", "--dry-run", "--tag", "bad tag"], ["--tag 'bad tag' is not accepted"]),
])
def test_flag_mistakes_are_refused_before_anything_runs(project, capsys, args, words):
    err = refused(capsys, *args)
    assert all(w in err for w in words), err


def test_one_host_per_node_is_accepted(project, capsys):
    code, out, err = nodeweave(capsys, "up", "--dry-run", "--host", "a", "--host", "b", "--remote-dir", "/srv/j")
    assert code == EXIT_OK, err


def test_the_spec_is_found_from_a_subfolder(project, capsys):
    deeper = project / "src" / "pkg"
    deeper.mkdir(parents=True)
    import os

    os.chdir(deeper)
    code, out, err = nodeweave(capsys, "validate", "--json")
    assert code == EXIT_OK, err
    assert json.loads(out)["name"] == "nwb" and json.loads(out)["spec"] == "../../nodeweave.yaml"
    code, out, err = nodeweave(capsys, "run", "--dry-run")
    assert code == EXIT_OK and f"{project}/runs/<UTC time>-nwb/" in out, err


def test_nodeweave_spec_names_another_file(project, capsys, monkeypatch):
    (project / "other.yaml").write_text(SPEC.replace("name: nwb", "name: other"))
    monkeypatch.setenv("NODEWEAVE_SPEC", str(project / "other.yaml"))
    code, out, err = nodeweave(capsys, "validate")
    assert code == EXIT_OK and "other" in out, err
    code, out, err = nodeweave(capsys, "validate", "--spec", "nodeweave.yaml")  # the flag wins
    assert code == EXIT_OK and ": valid: nwb," in out, err


def test_validate_says_what_the_spec_describes_and_a_typo_is_pointed_to_it(project, capsys):
    code, out, _ = nodeweave(capsys, "validate")
    assert code == EXIT_OK and out.startswith("nodeweave.yaml: valid: nwb, 2 node(s) x 1 process(es), torchrun")
    err = refused(capsys, "validat")
    assert "'validate'" in err and "'variants'" not in err
    err = refused(capsys, "variant")
    assert "'image variants'" in err and "'variants'" not in err


def test_doctor_judges_the_node_as_a_node_of_the_spec(project, capsys, monkeypatch):
    for name in ("NODEWEAVE_NNODES", "NODE_RANK", "MASTER_ADDR", "NNODES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "lo")
    code, out, _ = nodeweave(capsys, "doctor", "--json")
    alone = {f["code"] for f in json.loads(out)["findings"]}
    code, out, _ = nodeweave(capsys, "doctor", "--json", "--spec", "nodeweave.yaml")
    as_node = {f["code"] for f in json.loads(out)["findings"]}
    assert "socket-ifname-loopback" not in alone and "socket-ifname-loopback" in as_node
    assert "plan-error" not in as_node and code == 1
    assert "--node 5 is not a node" in refused(capsys, "doctor", "--spec", "nodeweave.yaml", "--node", "5")


def test_image_build_defaults_to_the_specs_variant(project, capsys):
    (project / "nodeweave.yaml").write_text(SPEC.replace("variant: cpu", "variant: cuda12"))
    assert nodeweave(capsys, "render", "entrypoint")[0] == EXIT_OK  # what the Dockerfile copies from the folder
    code, out, err = nodeweave(capsys, "image", "build", "--dry-run")
    assert code == EXIT_OK, err
    assert "cuda12" in out + err and ":cpu" not in out + err


def test_image_variants_keep_every_image_name_whole_at_120_columns(project, capsys, monkeypatch):
    from nodeweave.catalogue import VARIANTS

    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = nodeweave(capsys, "image", "variants")
    assert code == EXIT_OK
    for variant in VARIANTS.values():
        assert variant.base_image in out, variant.base_image


def test_human_sizes():
    from nodeweave.quantities import human_bytes

    assert [human_bytes(n) for n in (0, 1023, 1924 * 2, 85 * 2**20 + 2**19)] == ["0 B", "1023 B", "3.8 KiB",
                                                                              "85.5 MiB"]
