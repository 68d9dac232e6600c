"""Walk 6, W60/W61/W62: the commands a hint hands the user to paste.

W62: every path inside a pasted command is shell-quoted, so a folder whose name has a space is one word (the
folders' fixes of cluster/writable.py, the build context's render hint). W61: the workspace's fix hands the image's
user the folder the script saves to, not the whole project (``chown -R`` of it is named only as what not to do).
W60: a missing --wheelhouse is answered with the whole pip line that fills it, never a literal ``...``.
Each fails before the fix.
"""

from __future__ import annotations

import re
import shlex

import pytest

from nodeweave.build.context import check_copied_sources, link_wheelhouse
from nodeweave.cluster.writable import HostUser
from nodeweave.errors import UsageError

ROOTFUL = HostUser(1000, 0, rootless=False)


def commands(text: str):
    """The backticked commands of a hint, each split as a shell would."""
    return [shlex.split(command) for command in re.findall(r"`([^`]+)`", text)]


@pytest.fixture
def spaced(tmp_path):
    folder = tmp_path / "my proj"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    return folder


def test_every_folder_fix_keeps_a_spaced_path_one_word(spaced):
    for hint in (ROOTFUL.fix(spaced), ROOTFUL.make(spaced / "checkpoints"), ROOTFUL.workspace_fix(spaced)):
        words = [word for command in commands(hint) for word in command]
        assert words and not any(word.endswith("/my") or word.startswith("proj") for word in words), hint
        assert any(word.startswith(str(spaced)) for word in words), hint


def test_the_build_contexts_render_hint_keeps_a_spaced_path_one_word(spaced):
    with pytest.raises(UsageError) as caught:
        check_copied_sources(spaced, "COPY entrypoint/nodeweave-entrypoint.pyz /usr/local/bin/\n", "Dockerfile")
    render = [c for c in commands(str(caught.value)) if c[:3] == ["nodeweave", "render", "entrypoint"]]
    assert render and render[0][-1] == str(spaced), caught.value


def test_the_workspace_fix_hands_over_only_the_folder_the_script_saves_to(spaced):
    hint = ROOTFUL.workspace_fix(spaced)
    first = commands(hint)[0]
    assert first[:2] == ["mkdir", "-p"] and first[2] == str(spaced / "outputs"), hint
    assert "would take your own files" in hint, hint


def test_a_missing_wheelhouse_gets_the_whole_pip_line(tmp_path):
    line = "`python -m pip download -d /x torch==2.13.0 -r requirements.txt`"
    with pytest.raises(UsageError) as caught:
        link_wheelhouse(tmp_path, tmp_path / "absent", write=False, fill=lambda folder: line)
    assert line in str(caught.value) and "..." not in str(caught.value)
    with pytest.raises(UsageError) as caught:  # no fill given: still no literal ...
        link_wheelhouse(tmp_path, tmp_path / "absent", write=False)
    assert "..." not in str(caught.value)


def test_image_build_names_the_variants_pins_for_a_missing_wheelhouse(tmp_path, monkeypatch, capsys):
    from cli_run import in_process as run_cli

    (tmp_path / "nodeweave.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\n"
                                             "launcher: {script: train.py}\n")
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "entrypoint").mkdir()  # what the Dockerfile copies (render writes it); the plan checks it is there
    (tmp_path / "entrypoint" / "nodeweave-entrypoint.pyz").write_bytes(b"PK")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--wheelhouse", str(tmp_path / "wh"), "--dry-run")
    assert code == 2 and "torch==" in err and "--extra-index-url" in err and "..." not in err, err
