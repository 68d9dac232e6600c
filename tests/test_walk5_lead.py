"""The fifth walk's rows fixed by the lead, one test per class (issue 43)."""

from __future__ import annotations

import pytest

from nodeweave.build import prepare_build
from nodeweave.spec import load_spec

TEAM_SPEC = """name: team
image: {variant: cpu, requirements: requirements.txt}
launcher: {script: train.py}
"""


def _team(tmp_path, dockerignore=None):
    from nodeweave.targets import zipapp

    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "requirements.txt").write_text("einops==0.8.2\n")
    (tmp_path / "nodeweave.yaml").write_text(TEAM_SPEC)
    pyz = tmp_path / zipapp.PATH
    pyz.parent.mkdir(parents=True, exist_ok=True)
    pyz.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    if dockerignore is not None:
        (tmp_path / ".dockerignore").write_text(dockerignore)
    return load_spec(tmp_path / "nodeweave.yaml")


@pytest.mark.parametrize("lines", [
    "node_modules/\n",                       # a team's own file that names nothing the image reads (W65)
    "# my own\n*.ckpt\ndata/\n",
    "*\n!requirements.txt\n!entrypoint/\n!wheelhouse/\n",  # an allow-list of one's own, in Docker's words
    "*.txt\n!requirements.txt\n",            # out, then back in: the last matching line decides
])
def test_a_dockerignore_that_lets_the_requirements_in_is_not_said_to_keep_them_out(tmp_path, lines):
    spec = _team(tmp_path, lines)
    assert prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True).plan.variant == "cpu"


@pytest.mark.parametrize("lines", ["*.txt\n", "requirements*\n", "**/requirements.txt\n", "!requirements.txt\n*\n"])
def test_a_dockerignore_of_ones_own_that_keeps_them_out_is_named_with_the_line_that_mends_it(tmp_path, lines):
    from nodeweave.errors import UsageError

    spec = _team(tmp_path, lines)
    with pytest.raises(UsageError, match=r"keeps 'requirements.txt' out of the build; add the line "
                                         r"'!requirements.txt' at its end"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)
