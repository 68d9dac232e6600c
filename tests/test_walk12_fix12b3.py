"""walk12b rows B8, B10, B14 (and B9's cost) of issue 43, the twelfth walk: fixed by fix12b3.

Each test's docstring starts with the row ids it covers.
"""

from __future__ import annotations

import re

import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

RECOVERY = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_EXCHANGE_ALLOW": "address"}


def _hostfile(lines, slots=(8,)):
    return "".join(f"gpu{i:05d} slots={slots[i % len(slots)]}\n" for i in range(lines))


@pytest.mark.parametrize("given", ["--hostfile", "NODEWEAVE_HOSTFILE"])
def test_b8_a_hostfiles_lines_are_an_allocation_whose_training_count_the_hint_gives(entrypoint, tmp_path, given):
    """B8: an 8192-line hostfile under recovery with 1 spare was told `accepted: NODEWEAVE_NNODES=8191`, and the
    value it offered was then refused as over the typed bound of 2,048, while SLURM_NNODES=4097 let 4096 through.
    A hostfile's lines are the scheduler's count as SLURM_NNODES is (the one rule, ``training_most_of``): the
    training count may go up to the lines less the spares, not past them."""
    (tmp_path / "hosts").write_text(_hostfile(4097))
    argv = ["--explain", "--node-rank", "0"] + (["--hostfile", "hosts"] if given == "--hostfile" else [])
    env = dict(RECOVERY, **({"NODEWEAVE_HOSTFILE": "hosts"} if given != "--hostfile" else {}))
    code, out, err = entrypoint(argv + ["--", "train.py"], env)
    assert code == 3, err
    hint = re.search(r"accepted: (NODEWEAVE_NNODES=(\d+))", err)
    assert hint and hint.group(2) == "4096", err
    code, out, err = entrypoint(argv + ["--", "train.py"], dict(env, NODEWEAVE_NNODES=hint.group(2)))
    assert code == 0, err
    code, out, err = entrypoint(argv + ["--", "train.py"], dict(env, NODEWEAVE_NNODES="4097"))
    assert code == 2 and "at most 4096" in err, err
