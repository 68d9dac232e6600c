"""Walk 6, W72: a team's private index the way pip documents it (``${PIP_TOKEN}`` in requirements.txt).

The build gives pip no credential (no ``--secret``, secret-looking build args never declared), so every hint that
sent the user to a way in that does not exist is the one class fixed here: ``validate`` notes a ``${VAR}`` URL with
the way that works (a wheelhouse filled here, ``--offline``), and no hint names a BuildKit secret or offers
``${VARIABLE}`` as a remedy the build could use. Fails before the fix (no note; both hints pointed at nothing).
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli
from nodeweave.spec.sections import image

SPEC = ("name: tv\nimage: {variant: cpu, requirements: requirements.txt}\nnodes: 2\n"
        "launcher: {script: train.py}\n")


@pytest.fixture
def tv(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "requirements.txt").write_text(
        "--extra-index-url https://${PIP_TOKEN}@pypi.internal.example.com/simple\nnumpy==1.26.4\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_validate_notes_a_variable_the_build_cannot_fill(tv, capsys):
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err
    note = [line for line in err.splitlines() if "${PIP_TOKEN}" in line]
    assert len(note) == 1 and "requirements.txt:1" in note[0] and "--wheelhouse" in note[0] \
        and "--offline" in note[0], err


def test_a_plain_index_gets_no_note(tv, capsys):
    (tv / "requirements.txt").write_text("--extra-index-url https://pypi.internal.example.com/simple\nnumpy==1.26.4\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and "cannot fill" not in err, err


def test_no_hint_offers_a_way_in_the_build_does_not_have():
    for hint in (image.SECRET_HINT, image.CREDENTIAL_ACCEPTED, image.PRIVATE_INDEX_HINT):
        assert "BuildKit secret" not in hint and "--secret" not in hint, hint
    assert "cannot fill" in image.CREDENTIAL_ACCEPTED
