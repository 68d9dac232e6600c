"""Walk 6, W46: an IPv4 address with a leading-zero octet (``010.0.0.1``) as a host.

ssh, ping and glibc read ``010`` as octal 8, Python's ``ipaddress`` refuses it: one list of hosts names different
machines to different readers. One rule (``hostport.leading_zero_problem``) refuses it wherever a host is given:
the spec's ``hosts``, ``--host``, a hosts file, MASTER_ADDR and the entrypoint's hostfile, naming the form to write.
Fails before the fix (all accepted).
"""

from __future__ import annotations

import pytest

from cli_run import entrypoint, in_process as run_cli, one_line
from nodeweave.entrypoint.hostport import leading_zero_problem
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_rule_says_what_ssh_reads_and_what_to_write():
    assert "octal 8.0.0.1: write 10.0.0.1 or 8.0.0.1" in leading_zero_problem("010.0.0.1")
    assert "write 10.0.0.9" in leading_zero_problem("10.0.0.09")
    for fine in ("10.0.0.1", "0.0.0.0", "gpu010", "010", "fd00::1", "1.2.3.4.5"):
        assert leading_zero_problem(fine) is None, fine


def test_the_spec_refuses_it(team, capsys):
    (team / "nodeweave.yaml").write_text(SPEC + "hosts: [10.0.0.1, 010.0.0.1]\n")
    code, _, err = run_cli(capsys, "validate")
    line = one_line(err)
    assert code == EXIT_USAGE and "hosts[1]" in line and "leading zeros" in line, line


@pytest.mark.parametrize("how", ["--host", "--hosts-file"])
def test_the_cluster_verbs_refuse_it(team, capsys, how):
    (team / "h.txt").write_text("10.0.0.1\n010.0.0.1\n")
    argv = ["--host", "10.0.0.1", "--host", "010.0.0.1"] if how == "--host" else ["--hosts-file", "h.txt"]
    code, _, err = run_cli(capsys, "up", "-t", "hosts", *argv, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "010.0.0.1" in line and "write 10.0.0.1" in line, line


def test_the_entrypoint_refuses_it_as_master_and_in_a_hostfile(tmp_path):
    (tmp_path / "train.py").write_text("print('training')\n")
    env = {"PATH": "/usr/bin:/bin", "NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "010.0.0.1"}
    done = entrypoint("--explain", "--", "train.py", cwd=tmp_path, env=env)
    assert done.returncode == EXIT_USAGE and "write 10.0.0.1" in done.stdout + done.stderr, done.stderr
    (tmp_path / "hostfile").write_text("010.0.0.1 slots=1\n10.0.0.2 slots=1\n")
    done = entrypoint("--explain", "--hostfile", str(tmp_path / "hostfile"), "--", "train.py", cwd=tmp_path,
                      env={"PATH": "/usr/bin:/bin", "NODE_RANK": "0"})
    assert done.returncode == EXIT_USAGE and "line 1: 010.0.0.1 has a leading zero" in done.stdout + done.stderr, \
        done.stdout + done.stderr
