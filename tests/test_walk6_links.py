"""Walk 6, links: W57 (an output file that is a symbolic link is never written through: ``init --force`` replaced a
team's shared spec behind ``nodeweave.yaml``), for every option naming a file nodeweave writes."""

from __future__ import annotations

import hashlib
import os

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.cli.habits.output import not_a_file_to_write
from nodeweave.errors import EXIT_USAGE

SHARED = "name: shared\nnodes: 2\nlauncher:\n  type: torchrun\n  script: train.py\n"


@pytest.fixture
def linked(tmp_path, monkeypatch):
    """``proj/nodeweave.yaml -> ../shared/team-spec.yaml``, a team's one spec linked into a project."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "shared" / "team-spec.yaml").write_text(SHARED)
    os.symlink("../shared/team-spec.yaml", tmp_path / "proj" / "nodeweave.yaml")
    (tmp_path / "proj" / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path / "proj")
    return tmp_path


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("extra", [["--force"], ["--force", "--dry-run"], []])
def test_init_never_writes_through_a_linked_spec(capsys, linked, extra):
    before = _digest(linked / "shared" / "team-spec.yaml")
    code, _, err = run_cli(capsys, "init", *extra)
    line = one_line(err)
    assert code == EXIT_USAGE, err
    assert "nodeweave.yaml (where init writes without --out): is a symbolic link to ../shared/team-spec.yaml" in line and "remove the link" in line
    assert _digest(linked / "shared" / "team-spec.yaml") == before
    assert os.path.islink(linked / "proj" / "nodeweave.yaml")


def test_a_dangling_link_is_not_followed_to_make_a_file_elsewhere(capsys, linked):
    os.symlink("../elsewhere/new.yaml", linked / "proj" / "other.yaml")
    (linked / "elsewhere").mkdir()
    code, _, err = run_cli(capsys, "init", "--out", "other.yaml")
    assert code == EXIT_USAGE and "is a symbolic link to ../elsewhere/new.yaml" in one_line(err)
    assert not (linked / "elsewhere" / "new.yaml").exists()


@pytest.mark.parametrize("argv", [["init", "--out", "link.json"], ["bench", "--json-out", "link.json", "--dry-run"],
                                  ["bench", "--plot", "link.json", "--dry-run"],
                                  ["runs", "compare", "last", "--chart", "link.json"],
                                  ["hosts", "probe", "localhost", "--write-hostfile", "link.json"]])
def test_every_output_option_refuses_a_link(capsys, linked, argv):
    """The one check every output option's callback runs (habits/output.py: output_file), before anything runs."""
    os.symlink("train.py", linked / "proj" / "link.json")
    before = _digest(linked / "proj" / "train.py")
    code, _, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE and "link.json: is a symbolic link to train.py" in one_line(err)
    assert _digest(linked / "proj" / "train.py") == before
    assert not_a_file_to_write(linked / "proj" / "train.py") == ""
