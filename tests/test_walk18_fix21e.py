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


def test_every_host_check_takes_the_names_ssh_takes(tmp_path):
    """walk18a A15: ``--host gpu_01`` (a ~/.ssh/config alias ssh takes) was refused as no RFC 1123 name by up, hosts
    probe, hosts files and the spec's hosts: every host check takes '_', and still refuses what ssh does not."""
    (tmp_path / "nodeweave.yaml").write_text("name: w\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    (tmp_path / "t.py").write_text("")
    (tmp_path / "hf").write_text("gpu_01\ngpu_02\n")
    (tmp_path / "s2.yaml").write_text("name: w\nimage: {variant: cpu}\nnodes: 2\nhosts: [gpu_01, a100_box]\n"
                                      "launcher: {script: t.py}\n")
    for argv in (["up", "--target", "hosts", "--host", "gpu_01", "--host", "me@gpu_02", "--remote-dir", "/srv/job",
                  "--hold", "--dry-run"],
                 ["up", "--target", "hosts", "--hosts-file", "hf", "--remote-dir", "/srv/job", "--hold", "--dry-run"],
                 ["hosts", "probe", "--node", "gpu_01", "--dry-run"],
                 ["validate", "--spec", "s2.yaml"]):
        done = nodeweave(tmp_path, *argv)
        assert done.returncode == 0 and "not accepted" not in done.stderr, (argv, done.stderr)
    line = one_line(nodeweave(tmp_path, "up", "--target", "hosts", "--host", "gpu!1", "--dry-run").stderr)
    assert "--host 'gpu!1' is not accepted: [user@]host with a host name (letters, digits, '-', '_' and '.'" in line


def test_a_verbs_help_names_the_exit_code_it_gives(tmp_path):
    """walk18a A8: ``hosts probe --help`` said "exit 1 if any is unreachable"; a host ssh cannot reach ends exit 3
    (walk17a's rule), and the help says so, and what exit 1 is left for."""
    text = " ".join(nodeweave(tmp_path, "hosts", "probe", "--help").stdout.split())
    assert "exit 3 when ssh cannot reach a host" in text and "exit 1 if any is unreachable" not in text, text
    assert "--write-hostfile has no host with a GPU to write (nothing is written then)" in text, text
    done = nodeweave(tmp_path, "hosts", "probe", "--node", "nosuchhost.invalid")
    assert done.returncode == 3 and "ssh cannot reach nosuchhost.invalid" in done.stderr, done.stderr
