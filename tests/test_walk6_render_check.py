"""Walk 6, W71: ``render --check`` with a flag about writing, which --check never does.

``--force`` and ``--prune`` were refused with it; ``--dry-run`` (a third flag about writing) was taken and did
nothing. One list of the flags --check makes idle refuses each in one line, exit 2. Fails before the fix for
--dry-run.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.mark.parametrize("flag", ["--dry-run", "--force", "--prune"])
def test_check_refuses_every_flag_about_writing(tmp_path, monkeypatch, capsys, flag):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "render", "all", "--check", flag)
    line = one_line(err)
    assert code == EXIT_USAGE and f"--check writes nothing, so {flag} would do nothing" in line, line
