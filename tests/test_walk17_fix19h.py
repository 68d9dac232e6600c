"""fix19h (walk17a rows 2, 6, 11, 20, 24, 26, 28, 30): one rule for each kind of value on every option and spec
field, and the output habits of the tools users know; one test per class."""

from __future__ import annotations

import subprocess

import cli_run


def nodeweave(folder, *args: str, env=None) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=120, stdin=subprocess.DEVNULL)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_number_ranges_are_said_in_numbers_a_user_types(tmp_path):
    """walk17a A6: a float option's range ended in ``1e+09``, Python's repr of its ceiling, and a refused
    ``2000000000`` was said as ``2e+09``: no one typed either."""
    for argv, said in ((["top", "--interval", "0.1"], "--interval 0.1 is not accepted: 0.2 to 1000000000"),
                       (["exec", "--timeout", "0", "--", "hostname"], "--timeout 0 is not accepted: 0.1 to 1000000000"),
                       (["dashboard", "--interval", "2000000000"],
                        "--interval 2000000000 is not accepted: 0.2 to 1000000000"),
                       (["run", "--grace", "-1", "--dry-run"], "--grace -1 is not accepted: 0 to 1000000000")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and said in line and "e+09" not in line, (argv, done.stderr)


def test_every_whole_number_option_takes_plain_decimal_digits(tmp_path):
    """walk17a A20: ``--nodes 0_1`` and ``--tail 0_1`` were read by int() as 1 (and ``--nodes 2_0`` said as 20),
    ``+2`` and ``' 2'`` as 2, where --nproc-per-node and the spec refuse them: one rule for every count."""
    (tmp_path / "nodeweave.yaml").write_text("name: digits\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\n"
                                             "launcher: {script: train.py}\n")
    for argv in (["run", "--nodes", "2_0", "--dry-run"], ["run", "--nodes", "0_1", "--dry-run"],
                 ["run", "--nodes", "+2", "--dry-run"], ["run", "--nodes", " 2", "--dry-run"],
                 ["logs", "--run", "last", "--tail", "0_1"], ["logs", "--run", "last", "--rank", "01"],
                 ["bench", "--max-points", "+3", "--dry-run"], ["dashboard", "--port", "8_080"],
                 ["top", "--interval", "1_0"], ["init", "--nodes", "02", "--dry-run"]):
        done = nodeweave(tmp_path, *argv)
        value = [word for word in argv if word != "--dry-run"][-1]
        line = one_line(done.stderr)
        assert done.returncode == 2 and f"{value!r} is not accepted" in done.stderr, (argv, done.stderr)
        assert "plain decimal digits" in line or "a number of seconds" in line, (argv, line)


def test_size_units_are_read_one_way(tmp_path):
    """walk17a A11: ``--sizes 1MB,1MiB`` was refused as one size given twice: ``MB`` (and ``m``) was read as MiB,
    while the spec's ``500G`` is 10^9 bytes and --help said only "units K/M/G"; MB/GB and lower-case units are now
    refused naming what is accepted, and --help says the units are powers of 1024."""
    for typed, accepted in (("1MB", "1M or 1MiB (1048576 bytes"), ("1m", "1M or 1MiB"), ("2gb", "2G or 2GiB")):
        done = nodeweave(tmp_path, "bench", "--ops", "all_reduce", "--sizes", f"{typed},4096", "--dry-run")
        line = one_line(done.stderr)
        assert done.returncode == 2 and f"--sizes: '{typed}' is not a size" in line and accepted in line, line
    assert "powers of 1024" in one_line(nodeweave(tmp_path, "bench", "--help").stdout)


def test_tables_in_a_pipe_end_their_lines_where_their_text_does(tmp_path):
    """walk17a A2: ``status | head -1`` ended the title with 32 spaces, its padding to the table's width (every
    verb's table is a ``tables.Table``; kubectl get prints none in a pipe)."""
    done = nodeweave(tmp_path, "image", "variants")
    assert done.returncode == 0 and "image variants" in done.stdout.splitlines()[0], done.stdout
    assert [line for line in done.stdout.splitlines() if line != line.rstrip()] == [], done.stdout


def test_an_empty_env_value_is_refused_as_an_empty_named_one(tmp_path):
    """walk17a A30: ``FOO= run -e FOO`` was refused (an empty value never means anything) while ``-e "FOO=$UNSET"``,
    the same empty value, was planned as ``env FOO=`` on every node: one answer, on every verb that takes -e."""
    (tmp_path / "nodeweave.yaml").write_text("name: emptyenv\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\n"
                                             "launcher: {script: train.py}\n")
    for argv in (["run", "-e", "FOO=", "--dry-run"], ["exec", "-e", "FOO=", "--dry-run", "--", "true"]):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and "--env FOO=: the value is empty" in line and "env FOO=" not in done.stdout, \
            (argv, line)


def test_the_specs_seconds_fields_take_the_command_lines_durations(tmp_path):
    """walk17a A26: ``launcher.stall_warn: 10m`` was refused ("e.g. 600 for 10m"), where ``--grace 5m`` and
    ``--interval 30s`` are taken: every seconds field of the spec (each declared ``unit="seconds"``) takes them."""
    from nodeweave.spec.loader import load_spec

    spec = tmp_path / "nodeweave.yaml"
    spec.write_text("name: durations\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: t.py, "
                    "stall_warn: 10m, stall_timeout: 1h30m, wait_timeout: 90s}\nkubernetes: {grace_period: 2m}\n")
    loaded = load_spec(spec)
    assert (loaded.launcher.stall_warn, loaded.launcher.stall_timeout, loaded.launcher.wait_timeout,
            loaded.kubernetes.grace_period) == (600, 5400, 90, 120)
    spec.write_text("name: durations\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: t.py, "
                    "stall_warn: 25h}\n")
    done = nodeweave(tmp_path, "validate")
    assert done.returncode == 2 and "launcher.stall_warn: got '25h'" in done.stderr and "25h is 90000 seconds" in \
        done.stderr, done.stderr


def test_the_plural_hosts_is_answered_with_each_verbs_spelling_by_its_value(tmp_path):
    """walk17a A28: ``hosts probe --hosts gpu01`` was offered --hosts-file (by spelling), which then could not read
    a file gpu01: --hosts is answered with the verb's way to name a host, a comma list as repeated options, and
    --hosts-file only where the value is a file."""
    (tmp_path / "hostlist").write_text("gpu01\n")
    for argv, meant in ((["hosts", "probe", "--hosts", "gpu01"], "did you mean --node gpu01?"),
                        (["init", "--hosts", "gpu01,gpu02"], "did you mean --host gpu01 --host gpu02?"),
                        (["check", "--hosts", "gpu01"], "did you mean --host gpu01?"),
                        (["check", "--hosts", "hostlist"], "did you mean --hosts-file hostlist?")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and meant in line and "another tool's spelling" in line, (argv, line)


def test_a_host_ssh_cannot_reach_is_one_exit_and_one_line_on_every_prober(tmp_path):
    """walk17a A24: ``init --host nohost.invalid`` exited 1 quoting ssh's raw text and ``hosts probe`` 1 with a table
    row, where sync (and status, run, up, check) say "ssh cannot reach HOST (name not resolved)" and exit 3."""
    for argv in (["init", "--host", "nohost.invalid", "--out", "h.yaml"], ["hosts", "probe", "--node", "nohost.invalid"]):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 3 and "ssh cannot reach nohost.invalid (name not resolved)" in line, (argv, line)
        assert "Could not resolve hostname" not in line, (argv, line)
