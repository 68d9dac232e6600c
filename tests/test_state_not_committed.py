"""What nodeweave keeps beside a spec (``.nodeweave/``: a job's check-in token, what `up` was told, the render
record) is never committed with a team's folder: the first write makes ``.nodeweave/.gitignore`` ignoring it all
(the fresh walk: `git add -A` in a team folder committed the job's token). A ``.gitignore`` the user put there
is theirs and kept."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodeweave.cluster.token import write_token
from nodeweave.jobstate import GITIGNORE

SRC = Path(__file__).resolve().parents[1] / "src"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _untracked(folder: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=folder,
                          capture_output=True, text=True, check=True).stdout


@needs_git
def test_a_token_written_in_a_git_folder_is_ignored_by_git(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    write_token(tmp_path / ".nodeweave" / "team" / "job-token", "secret")
    assert (tmp_path / ".nodeweave" / ".gitignore").read_text() == GITIGNORE
    assert ".nodeweave" not in _untracked(tmp_path)


@needs_git
def test_render_in_a_git_folder_leaves_its_record_out_of_git_and_check_stays_clean(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    cli = [sys.executable, "-m", "nodeweave.cli"]
    assert subprocess.run([*cli, "init"], cwd=tmp_path, env=env, capture_output=True).returncode == 0
    render = subprocess.run([*cli, "render", "all"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert render.returncode == 0, render.stderr
    assert ".nodeweave" not in _untracked(tmp_path) and "compose/" in _untracked(tmp_path)
    check = subprocess.run([*cli, "render", "all", "--check"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_gitignore_the_user_put_there_is_kept(tmp_path):
    (tmp_path / ".nodeweave").mkdir()
    (tmp_path / ".nodeweave" / ".gitignore").write_text("job-token\n")
    write_token(tmp_path / ".nodeweave" / "team" / "job-token", "secret")
    assert (tmp_path / ".nodeweave" / ".gitignore").read_text() == "job-token\n"
