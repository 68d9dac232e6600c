"""walk16a rows fixed by fix18b: another folder's job is never reached from this one (a leftover $NODEWEAVE_SPEC,
the upward spec search, the image tag), and nodeweave's own files on the nodes are never written through a user
path. Each test fails on the code before its fix."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli
from team_folder import JOB_SPEC, make_job_folder


@pytest.fixture
def proj(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    return make_job_folder(tmp_path / "proj", monkeypatch)


def one_line(text: str) -> str:
    return " ".join(text.split())


# -- class 1: another folder's job reached from this one ---------------------------------------------------------
# A5: a leftover $NODEWEAVE_SPEC; A18: the upward search; A4: the image tag another folder's build holds
@pytest.mark.parametrize("verb", [["run", "--dry-run"], ["exec", "--dry-run", "--", "true"], ["shell", "--dry-run"],
                                  ["sync", "--dry-run"], ["check", "--dry-run"], ["render", "all"],
                                  ["image", "build", "--dry-run"]])
def test_another_folders_job_is_not_reached_from_here(proj, capsys, monkeypatch, verb):
    bob = proj.parent / "bob"
    bob.mkdir()
    (bob / "nodeweave.yaml").write_text(JOB_SPEC.replace("name: proj", "name: bob"))
    (bob / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(bob)
    monkeypatch.setenv("NODEWEAVE_SPEC", str(proj / "nodeweave.yaml"))
    before = sorted(p.name for p in proj.iterdir())
    code, _, err = run_cli(capsys, *verb)
    assert code == 2 and "another folder's spec than nodeweave.yaml found here" in one_line(err), err
    assert "--spec nodeweave.yaml for this folder's job" in one_line(err)
    assert sorted(p.name for p in proj.iterdir()) == before  # nothing written into proj/
    monkeypatch.delenv("NODEWEAVE_SPEC")
    # the upward search: a folder whose .nodeweave/<job>/cluster.json records a cluster up made is a project
    monkeypatch.chdir(proj)
    (proj / "nodeweave.yaml").rename(proj / "cluster.yaml")
    (proj.parent / "nodeweave.yaml").write_text(JOB_SPEC.replace("name: proj", "name: llama"))
    (proj / ".nodeweave" / "proj").mkdir(parents=True)
    (proj / ".nodeweave" / "proj" / "cluster.json").write_text(json.dumps(
        {"made": {"job": "proj", "spec": "nodeweave.yaml", "target": "local", "engine": "podman"}}))
    for typed in (["down", "--dry-run"], ["status"], verb):
        code, out, err = run_cli(capsys, *typed)
        assert code == 2 and "no nodeweave.yaml here, yet .nodeweave/proj/cluster.json records job proj up" in \
            one_line(err), (typed, out, err)
        assert "llama" not in out + err
    (proj / "sub").mkdir()
    monkeypatch.chdir(proj / "sub")
    code, _, err = run_cli(capsys, "down", "--dry-run")
    assert code == 2 and "no nodeweave.yaml in .., yet ../.nodeweave/proj/cluster.json" in one_line(err), err
    code, _, err = run_cli(capsys, "validate", "--spec", "../cluster.yaml")  # named: read
    assert code == 0, err
