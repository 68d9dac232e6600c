"""The ninth walk, part A, rows A1..A12 (issue 43, /work/wt/walk9a-report.md): each row's class, one test per class,
each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, leaves, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team

LEAVES = leaves()


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def long_flags(command) -> "set[str]":
    return {name for p in command.params if p.param_type_name == "option" for name in p.opts}


# -- A2: --json with another -o is refused on every verb that takes both, bench too --------------------------------

FORMAT_VERBS = [words for words, command in LEAVES if {"--json", "--output"} <= long_flags(command)]


def test_the_walk_finds_bench_among_the_verbs_with_json_and_output():
    assert ["bench"] in FORMAT_VERBS and len(FORMAT_VERBS) >= 15


@pytest.mark.parametrize("words", FORMAT_VERBS, ids=" ".join)
@pytest.mark.parametrize("other", ["yaml", "wide"])
def test_json_with_another_output_is_refused_on_every_verb(capsys, team, words, other):
    """A2: `--json -o yaml` said two things; bench took the JSON and dropped -o silently."""
    needed = {"runs compare": ["a", "b"]}.get(" ".join(words), [])  # its required arguments, never read
    dry = ["--dry-run"] if "--dry-run" in long_flags(dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]) else []
    code, out, err = run_cli(capsys, *words, "--json", "-o", other, *dry, *needed)
    assert code == EXIT_USAGE, (out, err)
    assert f"--json is -o json, and -o {other} asks for {other}: give one of them" in one_line(err)
