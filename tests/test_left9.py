"""left9 (issue 43): two rows the eighth walk's replay left open. Each test fails on the code before its fix.

- N3: a value with white space at an end, of any option or variable the entrypoint reads (its own tables:
  ``SETTINGS`` and ``READ_VARIABLES``), is refused in one line naming it, the value and the spelling to use, never
  trimmed by one reader and taken whole by another (``MASTER_ADDR=' 10.0.0.1'`` was taken as 10.0.0.1);
- A31: a secret given with ``-e`` (``-e NAME``, the value from this shell; ``-e SECRET=value``) is kept out of
  the printed plan, ``-o json`` and every record, and a local engine's exec gets it from its own environment.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from nodeweave.entrypoint.planning.contract import OTHER_VARIABLES, READ_VARIABLES, SECRET_VARIABLES, SETTINGS
from cli_run import entrypoint_in_process, in_process as run_cli, one_line
from team_folder import make_team

# A value each setting would take, so only the white space around it is at fault.
TAKEN = {"nnodes": "2", "node_rank": "0", "master_addr": "10.0.0.1", "service": "train", "cluster_domain":
         "cluster.local", "launcher": "torchrun", "launcher_options": "--max-restarts=0", "setup": "true",
         "nproc_per_node": "1", "master_port": "30001", "max_restarts": "0", "wait_timeout": "5", "exchange": "on",
         "exchange_port": "30002", "exchange_allow": "nccl", "exchange_bind": "any", "interfaces": "lo",
         "exclude_hcas": "mlx5_1", "hostfile": "/etc/nodeweave/hosts", "job_id": "team", "image_ref": "a/b:1",
         "sysroot": "/", "mode": "run", "run_id": "r1", "profile": "nsys", "profile_options": "--stats=true",
         "straggler_fault": "0", "stall_warn": "60", "stall_timeout": "600", "recovery": "off", "spares": "0",
         "recovery_max_restarts": "5", "no_progress_restarts": "3", "checkpoint_dir": "ckpt",
         "straggler_is_fault": "off", "warm_start": "on", "metrics": "on", "metrics_port": "9464",
         "step_pattern": "step=(\\d+)"}
BY_VARIABLE = {row.variable: row.key for row in SETTINGS}
OTHER = {"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "30001", "WORLD_SIZE": "2",
         "RANK": "0", "PET_NODE_RANK": "0", "PET_NNODES": "2", "PET_NPROC_PER_NODE": "1",
         "PET_MASTER_ADDR": "10.0.0.1", "PET_MASTER_PORT": "30001", "NODEWEAVE_JOB_TOKEN": "s3cret-token",
         "NODEWEAVE_JOB_TOKEN_FILE": "/run/token", "NODEWEAVE_KUBE_API": "http://127.0.0.1:8001",
         "NODEWEAVE_NCCL_VERSION": "2.21.5", "NODEWEAVE_RCCL_VERSION": "2.20.5"}
SHAPES = [" {}", "{}\t", "{}\n"]


@pytest.fixture
def entrypoint(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text("print('hi')\n")
    return entrypoint_in_process(tmp_path, monkeypatch, capsys)


def refusal(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and len(lines) == 1, (code, err)
    return lines[0]


def test_every_variable_the_entrypoint_reads_is_in_the_walk():
    assert set(READ_VARIABLES) == set(BY_VARIABLE) | set(OTHER) and set(OTHER_VARIABLES) <= set(OTHER)
    assert set(TAKEN) == {row.key for row in SETTINGS}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("variable", READ_VARIABLES)
def test_a_padded_variable_is_refused_naming_it_and_the_spelling(entrypoint, variable, shape):
    value = TAKEN[BY_VARIABLE[variable]] if variable in BY_VARIABLE else OTHER[variable]
    code, _, err = entrypoint(["--explain", "--", "train.py"], {variable: shape.format(value)})
    line = refusal(code, err)
    assert variable in line and "white space at an end" in line, line
    if variable in SECRET_VARIABLES:
        assert value not in line, line  # a secret's value is never printed, padded or not
    else:
        assert repr(shape.format(value)) in line or shape.format(value) in line, line
        assert f"write {variable}='{value}'" in line, line


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("row", SETTINGS, ids=lambda row: row.flag)
def test_a_padded_option_is_refused_naming_it_and_the_spelling(entrypoint, row, shape):
    value = TAKEN[row.key]
    code, _, err = entrypoint(["--explain", row.flag, shape.format(value), "--", "train.py"])
    line = refusal(code, err)
    assert f"{row.flag} " in line and "white space at an end" in line, line
    assert f"write {row.flag} '{value}'" in line, line


def test_the_replays_master_address_is_no_longer_trimmed(entrypoint):
    for env, argv in (({"MASTER_ADDR": " 10.0.0.1", "NNODES": "2", "NODE_RANK": "0"}, []),
                      ({"NNODES": "2", "NODE_RANK": "0"}, ["--master-addr", " 10.0.0.1"])):
        code, out, err = entrypoint(["--explain", *argv, "--", "train.py"], env)
        assert code == 2 and "10.0.0.1" not in out, out + err


def test_white_space_inside_a_value_is_still_taken(entrypoint):
    code, out, err = entrypoint(["--explain", "--", "train.py"], {"NODEWEAVE_LAUNCHER_OPTIONS": "--max-restarts 0"})
    assert code == 0, err


# -- A31: a secret given with -e is never written out; -e NAME takes this shell's value ------------------------------

GIVEN = "hf_abcdefghijklmnop0123"  # a secret-looking name's value, written out on the command line
SHELLS = "w4ndb-sh3ll-v4lue-0123"  # a value given by name (-e WANDB_API_KEY), from this shell


@pytest.fixture
def team(tmp_path, monkeypatch):
    folder = make_team(tmp_path, monkeypatch)
    monkeypatch.setenv("WANDB_API_KEY", SHELLS)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return folder


RUN = ("run", "-e", "WANDB_API_KEY", "-e", f"HF_TOKEN={GIVEN}", "-e", "NCCL_DEBUG=INFO", "--", "train.py")
EXEC = ("exec", "-e", "WANDB_API_KEY", "-e", f"HF_TOKEN={GIVEN}", "-e", "NCCL_DEBUG=INFO", "--", "ls")


def with_flags(argv, *flags):
    return (argv[0], *flags, *argv[1:])


@pytest.mark.parametrize("target", ["local", "kubernetes"])
@pytest.mark.parametrize("argv", [RUN, EXEC], ids=["run", "exec"])
@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_the_printed_plan_never_holds_a_hidden_value(capsys, team, argv, target, fmt):
    code, out, err = run_cli(capsys, *with_flags(argv, "--dry-run", "--target", target, "-o", fmt))
    assert code == 0, err
    assert GIVEN not in out + err and SHELLS not in out + err, out + err
    assert "***" in out and "NCCL_DEBUG=INFO" in out, out
    if target == "kubernetes":  # on the exec's command line, shown so (a local engine's: `-e NAME` alone)
        assert "$WANDB_API_KEY" in out, out


def test_the_json_plan_shows_a_value_given_by_name_as_its_name(capsys, team):
    code, out, err = run_cli(capsys, *with_flags(RUN, "--dry-run", "-o", "json"))
    (phase,) = [p for p in json.loads(out)["phases"] if p["kind"] == "run"]
    assert phase["request"]["env"] == {"WANDB_API_KEY": "$WANDB_API_KEY", "HF_TOKEN": "***", "NCCL_DEBUG": "INFO"}


@pytest.mark.parametrize("argv", [RUN, EXEC], ids=["run", "exec"])
def test_a_local_engines_exec_takes_a_hidden_value_from_its_own_environment(capsys, team, argv):
    code, out, err = run_cli(capsys, *with_flags(argv, "--dry-run", "-o", "json"))
    nodes = [node for p in json.loads(out)["phases"] for node in p.get("nodes", ())]
    assert nodes and code == 0
    for node in nodes:
        words = node["argv"]
        assert words[:2] == ["podman", "exec"] and "WANDB_API_KEY" in words and "HF_TOKEN" in words, words
        assert words[words.index("WANDB_API_KEY") - 1] == "-e" and words[words.index("HF_TOKEN") - 1] == "-e", words
        assert not any(w.startswith(("WANDB_API_KEY=", "HF_TOKEN=")) for w in words), words


@pytest.mark.parametrize("verb", ["run", "exec"])
@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_e_name_unset_or_empty_in_this_shell_is_refused(capsys, team, monkeypatch, verb, value):
    if value is None:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    else:
        monkeypatch.setenv("HF_TOKEN", value)
    code, out, err = run_cli(capsys, verb, "--dry-run", "-e", "HF_TOKEN", "--", "ls")
    line = one_line(err)
    assert code == 2 and "HF_TOKEN" in line and ("not set" if value is None else "empty") in line, line
    assert "HF_TOKEN=VALUE" in line, line


def test_e_name_takes_the_value_of_this_shell(capsys, team, tmp_path, monkeypatch):
    """The real exec and run, through a podman that records its argv and environment: the value reaches the exec
    client's environment, never its argv, and no record nodeweave writes holds it."""
    log = fake_podman(tmp_path, monkeypatch)
    for argv in (EXEC, RUN):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, out + err
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    launches = [c for c in calls if c["argv"][:1] == ["exec"] and ("ls" in c["argv"] or "--mode" in c["argv"])]
    assert len(launches) == 4, calls
    for call in launches:
        assert GIVEN not in " ".join(call["argv"]) and SHELLS not in " ".join(call["argv"]), call
        assert call["env"] == {"WANDB_API_KEY": SHELLS, "HF_TOKEN": GIVEN}, call
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != log and "bin" not in p.parts]
    assert any(p.name == "run.json" for p in written), written
    for path in written:
        text = path.read_text(errors="replace")
        assert GIVEN not in text and SHELLS not in text, path
    run_json = json.loads(next(p for p in written if p.name == "run.json").read_text())
    assert run_json["env"]["WANDB_API_KEY"] == "$WANDB_API_KEY" and run_json["env"]["HF_TOKEN"] == "***"


FAKE_PODMAN = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": args, "env": {{k: v for k, v in os.environ.items()
                                               if k in ("HF_TOKEN", "WANDB_API_KEY")}}}}) + "\\n")
if args[:1] == ["inspect"]:
    fmt = args[args.index("--format") + 1]
    for name in (a for a in args[1:] if not a.startswith("-") and a != fmt):
        print(json.dumps(name), json.dumps("running"), 0 if "Status" in fmt else "{{}}")
elif args[:1] == ["exec"]:
    print("ran")
"""


def fake_podman(tmp_path, monkeypatch):
    """A podman on PATH whose containers run, each call's argv and environment recorded in the log returned."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "bin" / "calls.jsonl"
    (folder / "podman").write_text(FAKE_PODMAN.format(python=sys.executable, log=str(log)))
    (folder / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    return log


def test_a_hidden_value_reaches_a_node_over_ssh_quoted_whole():
    """Where the value must travel on the command line (ssh: one string the host's shell splits), it is filled in
    at the spawn, quoted for that shell, whatever it holds."""
    import shlex

    from nodeweave.cluster.base import Node
    from nodeweave.hidden import Hidden, secret_placeholder
    from nodeweave.remote import make_target

    value = "a'b \"c$(id) ~/x"
    for kind, name in (("ssh", "gpu01"), ("ssh+docker", "gpu01/c")):
        node = Node(0, make_target(kind, name), workdir="/srv/w" if kind == "ssh" else None)
        planned = node.argv(["echo", "x"], {"TOK": secret_placeholder("TOK", by_name=False)})
        assert value not in " ".join(planned)
        assert f"TOK={value}" in shlex.split(Hidden({"TOK": value}).argv(planned)[-1])


def test_the_note_says_how_a_hidden_value_travels(capsys, team):
    code, out, err = run_cli(capsys, *with_flags(RUN, "--dry-run"))
    assert "through the exec client's own environment (`podman exec -e NAME`)" in out, out
    code, out, err = run_cli(capsys, *with_flags(RUN, "--dry-run", "--target", "kubernetes"))
    assert "travels on the command line of every node's exec" in out and "looks like a secret and holds" not in out


def test_a_hidden_value_reaches_bare_hosts_over_ssh_as_it_is(bare_hosts):
    """The real exec through the ssh stand-in (each host a shell on this machine): a value given by name, holding
    quotes, a space and a `$(...)`, reaches every host's command whole, and the printed plan holds none of it."""
    from test_plan_record import nodeweave

    folder, env, flags = bare_hosts
    value = "a'b \"c $(echo no) ~/x"
    env = {**env, "TOK": value}
    shown = nodeweave(folder, env, "exec", *flags, "-e", "TOK", "--dry-run", "--", "sh", "-c", 'printf "<%s>\\n" "$TOK"')
    assert shown.returncode == 0 and value not in shown.stdout + shown.stderr, shown.stdout + shown.stderr
    assert "$TOK" in shown.stdout and "travels on the command line" in shown.stdout, shown.stdout
    brought = nodeweave(folder, env, "up", *flags)  # exec acts on hosts `up` marked (walk11 A17)
    assert brought.returncode == 0, brought.stdout + brought.stderr
    done = nodeweave(folder, env, "exec", *flags, "-e", "TOK", "--", "sh", "-c", 'printf "<%s>\\n" "$TOK"')
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(f"<{value}>") == 3, done.stdout


from test_plan_record import bare_hosts  # noqa: E402,F401 (the fixture: three bare hosts through the ssh stand-in)


def test_a_spec_value_the_node_would_refuse_as_padded_is_refused_by_validate(capsys, tmp_path, monkeypatch):
    """N3's rule on the spec's side: the step pattern is rendered as written into NODEWEAVE_STEP_PATTERN, which node
    0 now refuses with white space at an end, so validate refuses it first (the other rows' spec values cannot be
    padded: names, numbers, choices, lists of words, shell-quoted words)."""
    make_team(tmp_path, monkeypatch)
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(spec.read_text() + "metrics:\n  step_pattern: ' step=(\\d+)'\n")
    code, out, err = run_cli(capsys, "validate")
    line = one_line(err)
    assert code == 2 and "metrics.step_pattern" in line and "white space at an end" in line, line
