"""One parser per kind of value (issue 43's leftovers): every verb that takes a kind of value reads it one way.

The tables are built from the CLI's own registry of commands (``cli_run.leaves``), so an option added tomorrow
is covered without being listed here.
"""

from __future__ import annotations

import json
import re
import typing

import pytest

from cli_run import entrypoint, in_process as run_cli, leaves, one_line
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = """name: nwvalues
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home_beside(tmp_path))
    return tmp_path


def _dry(command) -> "list[str]":
    return ["--dry-run"] if any("--dry-run" in getattr(p, "opts", ()) for p in command.params) else []


def _number_kind(param):
    """int or float for a numeric option (``Optional[...]`` and ``List[...]`` unwrapped), else None."""
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    for _ in range(2):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if args:
            annotation = args[0]
    return annotation if annotation in (int, float) else None


def numeric_options():
    for words, command in leaves():
        for param in command.params:
            kind = _number_kind(param)
            if param.param_type_name == "option" and kind is not None:
                flag = next(o for o in param.opts if o.startswith("--"))
                yield words, command, flag, kind


NOT_FINITE = ("nan", "NaN", "inf", "-inf", "1e999", "-1e999")


def non_finite_cases():
    for words, command, flag, kind in numeric_options():
        for value in NOT_FINITE if kind is float else ("nan", "1e999"):
            yield pytest.param([*words, *_dry(command), flag, value], flag, value, kind,
                               id=f"{' '.join(words)} {flag} {value}")


def test_the_walk_finds_the_numeric_options_a_user_types():
    found = {(" ".join(words), flag) for words, _, flag, _ in numeric_options()}
    assert {("top", "--interval"), ("stop", "--grace"), ("exec", "--timeout"), ("check", "--timeout"),
            ("bench", "--timeout"), ("up", "--timeout"), ("sync", "--jobs")} <= found, found


def too_large_cases():
    for words, command, flag, kind in numeric_options():
        if kind is float:
            yield pytest.param([*words, *_dry(command), flag, "1e300"], flag, id=f"{' '.join(words)} {flag}")


@pytest.mark.parametrize("argv,flag", list(too_large_cases()))
def test_a_float_beyond_any_meaning_is_refused_with_the_ceiling(project, capsys, argv, flag):
    """walk5 W57: `--timeout 1e300` was taken and printed as a 301-digit number; a float option without a ceiling
    of its own stops at 1e9 (about 31 years in seconds)."""
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and f"{flag} 1e+300 is not accepted" in line and "1000000000" in line, (code, out, err)


@pytest.mark.parametrize("argv,flag,value,kind", list(non_finite_cases()))
def test_a_number_that_is_not_finite_is_refused_naming_option_value_and_range(project, capsys, argv, flag, value,
                                                                               kind):
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and out == "", (code, out, err)
    said = value if kind is float else repr(value)
    assert f"{flag} {said} is not accepted: a " in line, line  # "a finite number[, RANGE]" / "a whole number"


@pytest.mark.parametrize("argv,shown", [(["stop", "--dry-run", "--grace", "-0"], "--grace 0"),
                                        (["exec", "--dry-run", "--timeout", "-0", "--", "true"], None)])
def test_minus_zero_is_zero(project, capsys, argv, shown):
    code, out, err = run_cli(capsys, *argv)
    if shown is None:  # exec's range starts at 0.1: -0 is refused as 0, never as "-0"
        assert code == 2 and "--timeout 0 is not accepted: 0.1 to 1000000000" in one_line(err), err
    else:
        assert code == 0 and shown in out and "--grace -0" not in out, (code, out, err)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "x"])
def test_the_entrypoints_stop_grace_refuses_what_is_not_seconds(value):
    done = entrypoint("--node", "stop", "--grace", value)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    line = one_line(done.stderr)
    assert f"--grace {value!r}" in line and "is not accepted: a finite number of seconds, 0 or more" in line, line


# --- --sweep: one reading for every verb that takes one ------------------------------------------------------

def sweep_verbs():
    """Every verb with a --sweep option, and what must follow it on a dry run."""
    for words, command in leaves():
        if any("--sweep" in getattr(p, "opts", ()) for p in command.params):
            takes_command = any(p.name == "command" for p in command.params)
            yield words, [*_dry(command)], ["--", "train.py"] if takes_command else []


SWEEPS = [
    ("X= a,b", "write X=a,b"),
    ("X=a ,b", "write X=a,b"),
    ("X=a,,b", "no empty value"),
    ("X=", "no empty value"),
    ("X=a,a", "gives X=a twice"),
    ("1X=a", "VAR=VALUE"),
    ("NCCL_ALGO", "VAR=VALUE"),
]


def test_every_verb_with_a_sweep_is_found():
    assert {" ".join(words) for words, _, _ in sweep_verbs()} >= {"run", "bench"}


@pytest.mark.parametrize("text,says", SWEEPS, ids=[t for t, _ in SWEEPS])
def test_a_sweep_value_is_read_one_way_by_every_verb(project, capsys, text, says):
    refusals = {}
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", text, *tail)
        assert code == 2, (words, code, out, err)
        refusals[" ".join(words)] = one_line(err)
    assert len(set(refusals.values())) == 1, refusals  # one wording
    assert says in next(iter(refusals.values())), refusals


def test_a_sweep_variable_given_twice_is_refused_alike(project, capsys):
    refusals = set()
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", "X=1", "--sweep", "X=2", *tail)
        assert code == 2, (words, out, err)
        refusals.add(one_line(err))
    assert len(refusals) == 1 and "X twice" in refusals.pop()


def test_a_good_sweep_reaches_every_point_as_written(project, capsys):
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", "GLOO_ALGO=Ring,Tree", *tail)
        assert code == 0, (words, err)
        assert "GLOO_ALGO=Ring" in out and "GLOO_ALGO=Tree" in out, (words, out)


# --- a spec field and its entrypoint twin take the same values ---------------------------------------------

def _contract_twins():
    """(row, context) for every contract row with a spec field that holds a whole number (or a node count)."""
    import yaml

    from nodeweave.entrypoint.planning.contract import SETTINGS
    from nodeweave.resolve import spec_value
    from nodeweave.spec import parse_spec
    from test_contract_rows import SPEC as EVERY_FIELD

    full = parse_spec(EVERY_FIELD)
    assert yaml  # the cases below build specs with it
    for row in SETTINGS:
        if not row.spec:
            continue
        sample = spec_value(full, row.spec)
        if row.spec in ("nodes", *TEXT_TWINS) or (isinstance(sample, int) and not isinstance(sample, bool)):
            for context in TWIN_CONTEXTS:
                yield pytest.param(row, context, id=f"{row.spec}-{context}")


# Text fields written the same way in both (a list field is a YAML list in the spec and a comma list on the node,
# the hosts a list there and a file here: not compared value for value).
TEXT_TWINS = ("kubernetes.service", "kubernetes.cluster_domain", "launcher.type", "launcher.mode")
TWIN_CONTEXTS = {
    "plain": {"name": "tw", "image": {"variant": "cpu"}, "nodes": 2, "gpus_per_node": 1,
              "launcher": {"script": "t.py"}},
    "recovery": {"name": "tw", "image": {"variant": "cpu"}, "nodes": 2, "gpus_per_node": 1,
                 "launcher": {"script": "t.py"}, "recovery": {"enabled": True, "checkpoint_dir": "ckpts"}},
}
# Written as YAML in the spec and as the variable's text on the node: the ranges' edges, and the spellings
# Python's int() reads but the spec refuses (a leading zero, a sign, '_', another script's digits).
TWIN_VALUES = ["-1", "0", "-0", "1", "2", "8", "1000", "1001", "1024", "1025", "2048", "2049", "65535", "65536",
               "86400", "86401", "100000", "100001", "604800", "604801", "05", "+5", "1_000", "\u0663", "1e3",
               "5.0", "0x10", "nan", '"2:4"', '"0:2"', '"3:2"', '"1:2049"', "rdzv", "Rdzv", "cluster.local",
               "Cluster.Local", "-a", "a-", "a_b", "a" * 64, ".".join(["a" * 63] * 4), "torchrun", "TorchRun",
               "command", "hold", "run", "on", "true"]


def _spec_takes(context: dict, dotted: str, written: str) -> "tuple[bool, str]":
    import copy

    import yaml

    from nodeweave.errors import UsageError
    from nodeweave.spec import parse_spec

    data, cursor = copy.deepcopy(context), None
    cursor = data
    *parents, field = dotted.split(".")
    for part in parents:
        cursor = cursor.setdefault(part, {})
    cursor[field] = "@@VALUE@@"
    try:
        parse_spec(yaml.safe_dump(data, allow_unicode=True).replace("'@@VALUE@@'", written))
        return True, ""
    except UsageError as err:
        return False, str(err)


def _rendered_env(context: dict) -> "dict[str, str]":
    import yaml

    from nodeweave.spec import parse_spec
    from nodeweave.targets.compose import render_files
    from test_entrypoint_contract import compose_env

    for path, text in sorted(render_files(parse_spec(yaml.safe_dump(context))).items()):
        if path.endswith(".yaml"):
            service = next(iter(yaml.safe_load(text)["services"].values()))
            return compose_env(service, {"NODE_RANK": "0", "MASTER_ADDR": "tw-0"})
    raise AssertionError("no compose file rendered")


def _entrypoint_takes(row, env: "dict[str, str]") -> "tuple[bool, str]":
    from nodeweave.entrypoint import make_plan, parse
    from nodeweave.entrypoint.errors import TopologyError, UsageError
    from test_entrypoint_contract import FIX

    try:
        if row.topology:
            make_plan(["--no-wait", "--", "t.py"], {**env, "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"},
                      sysroot=str(FIX / "hgx-h100"))
        else:
            parse(["--", "t.py"], env)
        return True, ""
    except TopologyError as err:
        if "usable GPU" in str(err):  # the value was read; this captured node has 8 GPUs, a fact of the node
            return True, str(err)
        return False, str(err)
    except UsageError as err:
        return False, str(err)


@pytest.mark.parametrize("row,context", list(_contract_twins()))
def test_a_spec_field_and_its_entrypoint_variable_take_the_same_values(row, context):
    """Every contract row with a spec field (contract.py ``Setting(..., spec=...)``): each value is accepted by
    both or refused by both (``launcher.wait_timeout: 0`` was refused by the spec while the entrypoint documents
    0 as "do not wait"; ``05``, ``+5``, ``1_000`` and ``٣`` were read by the entrypoint's int())."""
    base = TWIN_CONTEXTS[context]
    env = _rendered_env(base)
    parted = []
    for written in TWIN_VALUES:
        if row.spec == "nodes" and context == "recovery" and ":" in written:
            continue  # documented apart (docs/entrypoint.md): MIN:MAX there is nodes: MAX with recovery.min_nodes
        # a text field's value is written as text: a bare number there is refused as one (walk15 A2), as a quoted
        # number is in a number's field
        spelled = json.dumps(written.strip('"')) if row.spec in TEXT_TWINS else written
        spec_ok, spec_says = _spec_takes(base, row.spec, spelled)
        node_ok, node_says = _entrypoint_takes(row, {**env, row.variable: written.strip('"')})
        if spec_ok != node_ok:
            parted.append(f"{row.spec}: {written} (spec {'takes' if spec_ok else 'refuses'}: {spec_says[:90]}) / "
                          f"{row.variable}={written.strip(chr(34))} (entrypoint {'takes' if node_ok else 'refuses'}:"
                          f" {node_says[:90]})")
    assert not parted, "\n".join(parted)


def test_the_twin_table_covers_the_contracts_number_fields():
    covered = {param.values[0].spec for param in _contract_twins()}
    assert {"nodes", "gpus_per_node", "launcher.wait_timeout", "launcher.master_port", "launcher.exchange_port",
            "metrics.port", "recovery.spares", "launcher.stall_timeout"} <= covered, covered


@pytest.mark.parametrize("argv", [["--wait-timeout", "0"], []])
def test_wait_timeout_zero_means_no_wait_in_the_spec_as_on_the_node(project, argv):
    """The spec's ``launcher.wait_timeout: 0`` renders NODEWEAVE_WAIT_TIMEOUT=0, which the entrypoint plans as no
    check-in (its --help: "0 = do not wait")."""
    from nodeweave.spec import load_spec

    (project / "nodeweave.yaml").write_text(SPEC.replace("{script: train.py}", "{script: train.py, wait_timeout: 0}"))
    assert load_spec(project / "nodeweave.yaml").launcher.wait_timeout == 0
    env = _rendered_env({"name": "tw", "image": {"variant": "cpu"}, "nodes": 2, "gpus_per_node": 1,
                         "launcher": {"script": "t.py", "wait_timeout": 0}})
    assert env["NODEWEAVE_WAIT_TIMEOUT"] == "0"
    from nodeweave.entrypoint import parse

    assert parse([*argv, "--", "t.py"], env).get("wait_timeout") == 0


# --- one report per problem per command ---------------------------------------------------------------------

def _every_verb_once():
    for words, command in leaves():
        dry = _dry(command)
        tail = ["--", "true"] if any(p.name == "command" for p in command.params) else []
        needed = [p for p in command.params if p.param_type_name == "argument" and p.required and p.name != "command"]
        yield pytest.param([*words, *dry, *["x"] * len(needed), *tail], id=" ".join([*words, *dry]))
        if dry:  # the verb's real run too (doctor grades the variable as a finding of its own there)
            yield pytest.param([*words, *["x"] * len(needed), *tail], id=" ".join(words))


@pytest.mark.parametrize("argv", [p for p in _every_verb_once()
                                  if p.values[0][0] in ("doctor", "validate", "status", "render", "image", "runs",
                                                        "hosts") or "--dry-run" in p.values[0]])
def test_an_unknown_nodeweave_variable_is_said_once_by_every_verb(project, capsys, monkeypatch, argv):
    """``doctor`` said NODEWEAVE_FOO twice: a warning line on stderr and a finding in its table. Every verb (dry
    runs, and the real runs that start nothing) says it once."""
    monkeypatch.setenv("NODEWEAVE_STAL_WARN", "5")
    monkeypatch.setenv("PATH", str(project / "no-tools"))  # nothing a real run could start
    code, out, err = run_cli(capsys, *argv)
    said = (out + err).count("NODEWEAVE_STAL_WARN")
    assert said == 1, (code, out, err)


def test_doctor_grades_the_unknown_variable_as_its_one_finding(project, capsys, monkeypatch):
    monkeypatch.setenv("NODEWEAVE_STAL_WARN", "5")
    code, out, err = run_cli(capsys, "doctor")
    assert "NODEWEAVE_STAL_WARN" not in err and (out + err).count("NODEWEAVE_STAL_WARN") == 1, (out, err)
    assert "unknown-variable" in out and "did you mean NODEWEAVE_STALL_WARN?" in out


# --- a dry run prints commands a user can paste ------------------------------------------------------------

def test_hosts_probe_dry_run_is_the_real_probe_and_runs_when_pasted(tmp_path):
    """``hosts probe --dry-run`` printed ``python3 -c PROBE '' < the entrypoint's detection, zipped``: neither the
    script nor the stdin could be pasted. Now its line is the real command (the bootstrap inline, the zip piped in
    from the command that makes it): pasted into bash, through ssh (the stand-in), it reports the host's node."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import cli_run

    here = Path(__file__).parent
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {here / 'ssh_standin.py'} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "hosts.json").write_text(json.dumps(
        {"desk1": {"NODEWEAVE_SYSROOT": str(here / "fixtures" / "synthetic" / "hgx-h100")}}))
    env = cli_run.checkout_env({**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                                "STANDIN_SSH_ROOT": str(tmp_path / "hosts")})
    done = cli_run.run([*cli_run.NODEWEAVE, "hosts", "probe", "--dry-run", "--node", "ssh:desk1"], env=env,
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "PROBE" not in done.stdout and "< the entrypoint" not in done.stdout, done.stdout
    commands = [line for line in done.stdout.split("\n# ") if line.startswith("probe ssh:desk1\n")]
    assert len(commands) == 1, done.stdout
    pasted = commands[0].split("\n", 1)[1]
    ran = subprocess.run(["bash", "-c", pasted], env=env, capture_output=True, timeout=120, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr.decode()
    answer = json.loads(ran.stdout)
    assert answer["node"]["gpus"]["count"] == 8, answer["node"]["gpus"]


# Values a dry run cannot know (made when the run starts: a run's id, a Slurm allocation's job and nodes) read as
# <name> (nodeweave.plan.placeholders); sync's agent program (50 KB, a protocol spoken over its stdin) stands as
# SYNC_AGENT. Anything else in a command line must be the real word.
RUNTIME_ONLY = re.compile(r"^<(run-id|job-id|exec-id|node\d+)>$")  # exec-id: exec's per-call pid-file token (walk10 C4)
KNOWN_STAND_INS = {"SYNC_AGENT"}


def _dry_run_cases():
    for words, command in leaves():
        if "--dry-run" not in {o for p in command.params for o in getattr(p, "opts", ())}:
            continue
        tail = ["--", "true"] if any(p.name == "command" and not p.hidden for p in command.params) else []
        tail = ["--", "train.py"] if tail and words == ["run"] else tail  # run refuses a program (walk7 A30)
        needed = [p for p in command.params if p.param_type_name == "argument" and p.required and p.name != "command"]
        flags = {o for p in command.params for o in getattr(p, "opts", ())}
        where = []
        if words == ["sync"]:  # before the hosts flags sync takes too (walk7 A12): its own targets
            where = ["--node", "ssh:desk1", "--node", "ssh:desk2", "src", "{remote}/synced"]
        elif {"--target", "--host", "--engine", "--remote-dir"} <= flags:  # bare hosts: every phase, nothing up
            where = ["--target", "hosts", "--engine", "none", "--host", "desk1", "--host", "desk2",
                     "--remote-dir", "{remote}"]
            where = ["--cluster", *where] if words == ["doctor"] else where  # its reach flags: --cluster (walk13 A8)
        elif words == ["hosts", "probe"]:
            where = ["--node", "ssh:desk1"]
        elif words == ["init"]:  # beside the project's spec, which a dry run refuses as the real run (walk5 W81)
            where = ["--out", "new.yaml"]
        yield pytest.param([*words, "--dry-run", *where, *["x"] * len(needed), *tail], id=" ".join(words))


SECRET_STDIN = (" < a new random job token",)  # a secret is named, never printed


def _stand_ins(line: str) -> "list[str]":
    words = []
    described = re.search(r" < ([^'\"]* [^'\"]*)$", line)  # a stdin given as words about it, not a file
    if described and not line.endswith(SECRET_STDIN):
        words.append(f"< {described.group(1)}")
    for word in re.findall(r"<[^<>\s]+>|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b(?!=)|\.\.\.", line):
        if RUNTIME_ONLY.match(word) or word in KNOWN_STAND_INS:
            continue
        if word.startswith("<") or word == "..." or (len(word) >= 4 and f" {word} " in f" {line} "):
            words.append(word)
    return words


@pytest.mark.parametrize("argv", list(_dry_run_cases()))
def test_every_dry_run_line_is_a_command_that_can_be_pasted(project, capsys, monkeypatch, argv):
    """``hosts probe`` showed its script as PROBE and ``bench`` its report path as ``<scratch>/rank0.json``:
    every --dry-run's command lines (the lines that are not ``#`` notes) hold no stand-in for what is known."""
    (project / "train.py").write_text("print('train')\n")
    (project / "src").mkdir()
    (project / "src" / "data.txt").write_text("data\n")
    if argv[:2] == ["image", "build"]:
        assert run_cli(capsys, "render", "all")[0] == 0  # the build context holds the rendered entrypoint
    monkeypatch.setenv("PATH", str(project / "no-tools") + ":/usr/bin:/bin")
    argv = [word.format(remote=project / "job") for word in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 or "real" in err + out, (code, out, err)
    lines = [line.split("  # ")[0] for line in out.splitlines() if line.strip() and not line.startswith("#")]
    found = {line: _stand_ins(line) for line in lines}
    assert not any(found.values()), {line[:200]: words for line, words in found.items() if words}


def below_range_cases():
    for words, command, flag, kind in numeric_options():
        yield pytest.param([*words, *_dry(command), flag, "-1000000"], flag, id=f"{' '.join(words)} {flag}")


@pytest.mark.parametrize("argv,flag", list(below_range_cases()))
def test_a_number_out_of_range_is_refused_in_one_wording(project, capsys, argv, flag):
    """``bench --iters -1`` said ``--iters: -1 must be >= 1`` where every other option says ``--OPTION VALUE is not
    accepted: RANGE``: each numeric option's refusal takes the one form."""
    code, out, err = run_cli(capsys, *argv)
    if code == 2:
        line = one_line(err)
        assert re.match(rf"nodeweave: error: {flag} (-1000000|-1e\+06) is not accepted: ", line), line


def test_no_entrypoint_setting_reads_a_number_that_is_not_finite():
    """Every NODEWEAVE_* setting the entrypoint reads (the contract's rows): ``nan``/``inf``/``1e999`` are refused,
    or read as the words they are, never as a float (the entrypoint reads whole numbers only; its one float
    option, ``--node stop --grace``, is tested above)."""
    from nodeweave.entrypoint import parse
    from nodeweave.entrypoint.errors import UsageError
    from nodeweave.entrypoint.planning.contract import SETTINGS

    for row in SETTINGS:
        if row.topology:
            continue
        for text in ("nan", "inf", "1e999", "-0.0"):
            try:
                value = parse(["--", "t.py"], {row.variable: text}).get(row.key)
            except UsageError:
                continue
            assert not isinstance(value, float), (row.variable, text, value)
