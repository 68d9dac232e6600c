"""walk18a A4, A13, A6, A15, A10, A11, A8, A9: one answer for one mistake, whichever verb or option meets it."""

import cli_run
from cli_run import one_line


def nodeweave(folder, *args, **kwargs):
    return cli_run.nodeweave(*args, cwd=folder, **kwargs)


def test_a_node_count_typed_on_a_verb_without_one_is_answered_as_a_count(tmp_path):
    """walk18a A6: ``up --nodes 3`` was offered ``--host`` (--nodes a near typo of --node): a count is no host, and
    the answer says how the verb's node count is set."""
    for argv, said in ((["up", "--nodes", "3", "--dry-run"], "the spec's nodes says how many nodes up starts"),
                       (["down", "--nodes", "2"], "down takes down every node `up` made"),
                       (["bench", "--nodes", "2"], "bench measures the processes of this machine")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and f"{argv[1]} {argv[2]} is a node count, not a host: {said}" in line, line
        assert "did you mean --host" not in line, line
    line = one_line(nodeweave(tmp_path, "up", "--nodes", "gpu01").stderr)
    assert "did you mean --host?" in line, line  # a host's name is still answered with the verb's spelling
