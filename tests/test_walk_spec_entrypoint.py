"""Issue 43's fresh walk, the spec and entrypoint side: each finding fixed as a class and walked here.

- validate reports every independent mistake, not the first (one line each, exit 2, -o json a list);
- one set of rules for the spec and the entrypoint (``shared_rules``): every rule's bad values are refused by
  both, naming the spec field on one side and the variable or flag on the other;
- a refusal's accepted text is the field's own and never suggests the refused value;
- booleans: one word list for spec fields and switch variables;
- values that matched a shape but meant nothing (slurm.time 25:99:00), a render-time refusal validate passed
  (slurm.exclusive false with gpus_per_node auto), a checkpoint folder each container keeps to itself;
- the entrypoint names what set a topology flag (no ``flag --nnodes`` the user never gave).

Each test fails on the main before these fixes. No container is started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cli_run
import pytest

from nodeweave.cli import main
from nodeweave.entrypoint.planning import shared_rules
from nodeweave.entrypoint.planning.contract import BY_KEY
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.spec import parse_spec

REPO = Path(__file__).resolve().parents[1]
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


def spec_refusal(text: str) -> "list[str]":
    with pytest.raises(UsageError) as caught:
        parse_spec(text, "s.yaml")
    lines = str(caught.value).splitlines()
    assert all(line.startswith("s.yaml") for line in lines), lines
    return lines


def entrypoint_refusal(env: dict, argv=()) -> str:
    from nodeweave.entrypoint.errors import UsageError as EntrypointUsage
    from nodeweave.entrypoint.planning.settings import parse

    with pytest.raises(EntrypointUsage) as caught:
        parse([*argv, "--", "t.py"], env)
    return str(caught.value)


# -- validate: every independent mistake, one line each --------------------------------------------------

# One mistake in each part of the file, none depending on another: each must be named in one run.
INDEPENDENT = {
    "name": ("name: Bad_Name\n", "name: got 'Bad_Name'"),
    "image": ("image: {variant: cuda99}\n", "image.variant"),
    "nodes": ("nodes: 0\n", "nodes: got 0"),
    "gpus_per_node": ("gpus_per_node: many\n", "gpus_per_node: got 'many'"),
    "launcher": ("launcher: {script: t.py, master_port: 99999}\n", "launcher.master_port"),
    "workspace": ("workspace: {path: relative}\n", "workspace.path"),
    "network": ("network: {interfaces: ['a/b']}\n", "network.interfaces[0]"),
    "env": ("env: {1BAD: x}\n", "env.1BAD"),
    "kubernetes": ("kubernetes: {namespace: Bad_NS}\n", "kubernetes.namespace"),
    "security": ("security: {seccomp: sometimes}\n", "security.seccomp"),
    "slurm": ("slurm: {partition: 'a b'}\n", "slurm.partition"),
    "metrics": ("metrics: {port: 0}\n", "metrics.port"),
    "unknown": ("recovry: {}\n", "recovry: unknown key (did you mean 'recovery'?)"),
}


def _with_all_mistakes() -> str:
    lines = dict(line.split(":", 1) for line in BASE.splitlines())
    extra = []
    for snippet, _ in INDEPENDENT.values():
        key, value = snippet.rstrip("\n").split(":", 1)
        if key in lines:
            lines[key] = value
        else:
            extra.append(snippet)
    return "".join(f"{k}:{v}\n" for k, v in lines.items()) + "".join(extra)


def test_validate_names_every_independent_mistake_one_line_each_in_the_files_order():
    lines = spec_refusal(_with_all_mistakes())
    for part, (_, expected) in INDEPENDENT.items():
        assert sum(expected in line for line in lines) == 1, (part, lines)
    assert len(lines) == len(INDEPENDENT), lines
    numbers = [int(line.split(":")[1]) for line in lines]
    assert numbers == sorted(numbers), lines


def test_a_misspelt_required_key_is_one_mistake_not_two():
    lines = spec_refusal(BASE.replace("launcher: {script: t.py}", "launcher: {scirpt: t.py}"))
    assert len(lines) == 1 and "launcher.scirpt: unknown key (did you mean 'script'?)" in lines[0], lines


def test_a_check_across_parts_is_skipped_when_a_part_it_weighs_was_refused():
    # the metrics port against the launcher's: the launcher is refused, so only its own mistake is said
    lines = spec_refusal(BASE.replace("{script: t.py}", "{script: t.py, master_port: 0}") + "metrics: {port: 29501}\n")
    assert len(lines) == 1 and "launcher.master_port" in lines[0], lines


def test_validate_prints_every_mistake_on_stderr_and_a_list_with_o_json(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(_with_all_mistakes())
    code = main(["validate", "--spec", str(path), "-o", "json"])
    out = capsys.readouterr()
    assert code == EXIT_USAGE
    data = json.loads(out.out)
    assert data["valid"] is False and len(data["errors"]) == len(INDEPENDENT) and data["error"] == data["errors"][0]
    assert out.err.splitlines() == [f"nodeweave: error: {line}" for line in data["errors"]]


def test_validate_help_says_every_mistake(capsys):
    assert main(["validate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "every independent mistake" in text and "first mistake" not in text


# -- one set of rules for the spec and the entrypoint ------------------------------------------------------


def _spec_text(bad: dict) -> str:
    """The spec that sets ``bad`` (contract key -> spec value) through each key's spec field."""
    sections: "dict[str, dict]" = {"launcher": {"script": "t.py"}}
    base = BASE.replace("launcher: {script: t.py}\n", "")
    for key, value in bad.items():
        section, _, field = BY_KEY[key].spec.partition(".")
        if not field:  # a top-level field: nodes
            base = base.replace(f"{section}: 2", f"{section}: {json.dumps(value)}")
            continue
        sections.setdefault(section, {})[field] = value
    return base + "".join(f"{section}: {json.dumps(fields)}\n" for section, fields in sections.items())


def _env(bad: dict) -> dict:
    """The variables a renderer writes for ``bad`` (each row's own ``text``), as a user would set them by hand."""
    env = {"MASTER_ADDR": "10.0.0.1", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2"}
    for key, value in bad.items():
        row = BY_KEY[key]
        text = row.text(value)
        env[row.variable] = text if text is not None else str(value).lower()
    return env


BAD = [(rule.check.__name__, bad) for rule in shared_rules.RULES for bad in rule.bad]


def test_the_walk_covers_every_shared_rule_and_every_switched_setting():
    assert {name for name, _ in BAD} == {rule.check.__name__ for rule in shared_rules.RULES}
    # (a switched setting with no spec field, exchange_bind or straggler_fault, the spec cannot give: its refusal
    # by the entrypoint is walked in tests/test_walk9_fix9b2.py)
    switched = {key for keys in shared_rules.SWITCHED.values() for key in keys if BY_KEY[key].spec}
    assert switched <= {key for name, bad in BAD if name == "switched_off" for key in bad}


@pytest.mark.parametrize("name, bad", BAD, ids=[f"{n}-{'-'.join(map(str, b.values()))}" for n, b in BAD])
def test_every_shared_rule_is_refused_by_the_spec_and_by_the_entrypoint_alike(name, bad):
    offender = next(p.key for p in shared_rules.problems(bad, set(bad), shared_rules.Naming(str)))
    lines = spec_refusal(_spec_text(bad))
    assert any(f": {BY_KEY[offender].spec}: " in line for line in lines), lines
    message = entrypoint_refusal(_env(bad))
    assert message.startswith(f"{BY_KEY[offender].variable}: ") and "; accepted: " in message, message


def test_the_entrypoints_flags_are_refused_naming_the_flag():
    message = entrypoint_refusal({"MASTER_ADDR": "10.0.0.1"}, ["--spares", "1"])
    assert message.startswith("--spares: 1 does nothing with NODEWEAVE_RECOVERY off"), message
    assert "--recovery=on" not in message and "NODEWEAVE_RECOVERY=on" in message


@pytest.mark.parametrize("argv", [["--recovery", "on", "--exchange", "off"]])
def test_explain_with_recovery_and_the_exchange_off_exits_2_as_recovery_md_says(tmp_path, argv):
    env = {"PATH": os.environ["PATH"], "MASTER_ADDR": "10.0.0.1", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2"}
    done = cli_run.entrypoint("--explain", *argv, "--", "t.py", env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == EXIT_USAGE, done.stdout[-2000:] + done.stderr
    assert "--recovery: on with --exchange off" in done.stderr


def test_settings_a_rendered_spec_gives_pass_the_entrypoints_rules():
    """The other direction: what a valid spec renders is never refused by the entrypoint."""
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.resolve import resolve

    text = BASE + ("recovery: {enabled: true, spares: 1, checkpoint_dir: ck, warm_start: false}\n"
                   "metrics: {port: 9000, step_pattern: 'step=(\\d+)'}\n")
    for where in ("compose", "kubernetes"):
        env = dict(resolve(parse_spec(text, "s.yaml")).contract_env(where))
        assert env["NODEWEAVE_SPARES"] == "1" and env["NODEWEAVE_METRICS_PORT"] == "9000"
        parse(["--", "t.py"], {**env, "MASTER_ADDR": "10.0.0.1", "NODE_RANK": "0"})


# -- a refusal's accepted text is the field's own and never suggests the refused value ---------------------

PATH_FIELDS = {
    "launcher.script": ("launcher: {script: ../x.py}\n", "train.py", ("checkpoints", "/data/checkpoints")),
    "recovery.checkpoint_dir": ("recovery: {enabled: true, checkpoint_dir: ../../etc}\n", "checkpoints", ("train.py",)),
}


@pytest.mark.parametrize("field", sorted(PATH_FIELDS))
def test_a_path_refusal_gives_examples_of_its_own_field(field):
    snippet, own, others = PATH_FIELDS[field]
    base = BASE if not snippet.startswith("launcher") else BASE.replace("launcher: {script: t.py}\n", "")
    (line,) = spec_refusal(base + snippet)
    accepted = line.partition("; accepted: ")[2]
    assert f": {field}: " in line and own in accepted and not any(o in accepted for o in others), line


@pytest.mark.parametrize("taken", ["/workspace", "/data", "/datasets", "/etc/deepspeed"])
def test_a_mount_refusal_never_suggests_the_path_it_refuses(taken):
    volumes = "volumes: [{name: a, path: %s, host_path: /x}, {name: b, path: %s, host_path: /y}]\n" % (taken, taken)
    extra = "" if taken == "/workspace" else volumes
    text = BASE + (volumes.replace(", {name: b, path: /workspace, host_path: /y}", "") if taken == "/workspace"
                   else extra)
    (line,) = spec_refusal(text)
    assert "is already mounted by" in line, line
    examples = line.partition("; accepted: ")[2].partition("; such as ")[2].split(", ")
    assert examples[0] and taken not in examples, line


# -- booleans: one word list for spec fields and switch variables -----------------------------------------

SPEC_BOOLEANS = ["launcher.exchange", "kubernetes.openshift", "kubernetes.network_policy", "metrics.enabled",
                 "network.rdma", "recovery.enabled", "security.read_only_root", "security.ipc_lock",
                 "slurm.exclusive"]


def _boolean_spec(field: str, word: str) -> str:
    section, _, key = field.partition(".")
    if section == "launcher":
        return BASE.replace("{script: t.py}", "{script: t.py, %s: %s}" % (key, word))
    return BASE + f"{section}: {{{key}: {word}}}\n"


@pytest.mark.parametrize("field", SPEC_BOOLEANS)
@pytest.mark.parametrize("word", ["yes", "No", "y"])
def test_every_boolean_field_refuses_the_words_its_variable_refuses(field, word):
    (line,) = spec_refusal(_boolean_spec(field, word))
    assert f": {field}: got '{word}'" in line and "true or false (also on, off, 1, 0)" in line, line


@pytest.mark.parametrize("field", SPEC_BOOLEANS)
@pytest.mark.parametrize("word", ["on", "OFF", "True", "false", "1", "0"])
def test_every_boolean_field_takes_the_words_its_variable_takes(field, word):
    parse_spec(_boolean_spec(field, word), "s.yaml")


def test_the_spec_and_the_entrypoint_share_the_word_list():
    from nodeweave.entrypoint.switch import SWITCH_WORDS
    from nodeweave.entrypoint.planning.contract import read_switch

    for word, value in SWITCH_WORDS.items():
        assert parse_spec(BASE + f"metrics: {{enabled: {word}}}\n", "s.yaml").metrics.enabled is value
        assert read_switch(word, "metrics", "NODEWEAVE_METRICS") is value


# -- values that matched a shape but meant nothing; a refusal render made after validate passed ------------


@pytest.mark.parametrize("time", ["25:99:00", "1:60", "2-24", "2-10:60", "1-00:00:61", "-5", "2-"])
def test_slurm_time_parts_out_of_range_are_refused(time):
    (line,) = spec_refusal(BASE + f"slurm: {{time: '{time}'}}\n")
    assert ": slurm.time: " in line


@pytest.mark.parametrize("time", ["60", "30:00", "24:00:00", "100:00:00", "2-00:00:00", "1-23:59:59", "UNLIMITED"])
def test_slurm_time_in_range_is_valid(time):
    assert parse_spec(BASE + f"slurm: {{time: '{time}'}}\n", "s.yaml").slurm.time == time


def test_slurm_exclusive_false_with_auto_gpus_on_a_gpu_variant_is_refused_at_validate():
    text = BASE.replace("variant: cpu", "variant: cuda12") + "slurm: {exclusive: false}\n"
    (line,) = spec_refusal(text)
    assert ": slurm.exclusive: false with gpus_per_node auto" in line
    parse_spec(text.replace("nodes: 2", "nodes: 2\ngpus_per_node: 8"), "s.yaml")
    parse_spec(BASE + "slurm: {exclusive: false}\n", "s.yaml")  # cpu: no GPU to count


# -- a checkpoint folder each container keeps to itself: noted by validate, warned by the entrypoint -------


@pytest.mark.parametrize("folder", ["/tmp/ckpt", "/var/tmp/c", "/run/ck"])
def test_a_per_container_checkpoint_folder_is_noted_by_validate_and_warned_by_the_entrypoint(folder):
    # a spare: without one, recovery on 2 nodes is noted too (walk8 B33); this test is about the folder
    text = BASE + f"recovery: {{enabled: true, spares: 1, checkpoint_dir: {folder}}}\n"
    (note,) = parse_spec(text, "s.yaml").notes
    assert note.startswith(f"recovery.checkpoint_dir: {folder} is in ") and "each container has to itself" in note
    found = shared_rules.notes({"recovery": True, "checkpoint_dir": folder})
    assert [line for _, line in found] == [note.partition(": ")[2]]
    from nodeweave.entrypoint.planning.rules import BY_CODE

    assert "checkpoint-dir-per-container" in BY_CODE


def test_a_volume_over_the_per_container_folder_answers_the_note():
    text = BASE + ("recovery: {enabled: true, spares: 1, checkpoint_dir: /tmp/shared/ck}\n"
                   "volumes: [{name: s, path: /tmp/shared, claim: shared-ckpt}]\n")
    assert parse_spec(text, "s.yaml").notes == ()
    assert parse_spec(BASE + "recovery: {enabled: true, spares: 1, checkpoint_dir: ck}\n", "s.yaml").notes == ()


def test_validate_prints_the_note_and_stays_valid(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "recovery: {enabled: true, checkpoint_dir: /tmp/ckpt}\n")
    assert main(["validate", "--spec", str(path)]) == 0
    assert "nodeweave: note: recovery.checkpoint_dir: /tmp/ckpt is in /tmp" in capsys.readouterr().err


# -- the start line of a cpu spec counts processes ---------------------------------------------------------


def test_a_cpu_spec_starts_processes_and_a_gpu_spec_gpus():
    cpu = parse_spec(BASE + "gpus_per_node: 2\n", "s.yaml")
    assert "(4 processes)" in cpu.starts and "GPU" not in cpu.starts
    gpu = parse_spec(BASE.replace("variant: cpu", "variant: cuda12") + "gpus_per_node: 2\n", "s.yaml")
    assert "(4 GPUs)" in gpu.starts


# -- the entrypoint names what set a topology flag --------------------------------------------------------


def test_a_count_recovery_sets_is_not_called_a_flag_the_user_gave(tmp_path):
    env = {"PATH": os.environ["PATH"], "MASTER_ADDR": "10.0.0.1", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2",
           "NODEWEAVE_SPARES": "1", "NODEWEAVE_RECOVERY": "on", "NNODES": "1"}
    done = cli_run.entrypoint("--explain", "--json", "--", "t.py", env=env, cwd=tmp_path, timeout=120)
    plan = json.loads(done.stdout)
    said = [w if isinstance(w, str) else w["message"] for w in plan["warnings"] + plan["errors"]]
    nnodes = [w for w in said if "NNODES" in w]  # a warning before, a refusal since NNODES=1 contradicts 2 + 1 spare
    assert nnodes and not any("flag --nnodes" in w for w in nnodes), said
    assert any("generation 0's training nodes" in w or "recovery's containers" in w for w in nnodes), said


# -- the last walk's own findings (spec side) ----------------------------------------------------------------


@pytest.mark.parametrize("snippet, path", [("volumes: [null]\n", "volumes[0]"),
                                           ("kubernetes: {tolerations: [null]}\n", "kubernetes.tolerations[0]"),
                                           ("kubernetes: {node_affinity: [null]}\n", "kubernetes.node_affinity[0]")])
def test_an_empty_list_item_is_named_as_such_not_as_a_missing_field(snippet, path):
    (line,) = spec_refusal(BASE + snippet)
    assert f": {path}: got null; accepted: a mapping with keys " in line, line


@pytest.mark.parametrize("section", ["recovery", "metrics"])
@pytest.mark.parametrize("word", ["true", "false", "on"])
def test_a_switch_written_where_its_section_goes_says_the_mapping_to_write(section, word):
    (line,) = spec_refusal(BASE + f"{section}: {word}\n")
    assert line.endswith(f"write {section}: {{enabled: {word}}}"), line


@pytest.mark.parametrize("folder", ["~/ckpt", "$HOME/ckpt", "${RUN}/ck"])
def test_a_path_nothing_expands_is_refused_by_both_sides(folder):
    (line,) = spec_refusal(BASE + f"recovery: {{enabled: true, checkpoint_dir: '{folder}'}}\n")
    assert "which nothing expands here" in line
    message = entrypoint_refusal(_env({"recovery": True, "checkpoint_dir": folder}))
    assert message.startswith("NODEWEAVE_CHECKPOINT_DIR: ") and "which nothing expands here" in message


@pytest.mark.parametrize("nnodes", ["2:1", "x", "0:"])
def test_a_malformed_node_count_is_left_to_the_topologys_own_refusal_not_called_one_node(nnodes):
    from nodeweave.entrypoint.planning.settings import parse

    from nodeweave.entrypoint.errors import UsageError

    # the count's own parser refuses it, naming the count, before recovery's one-node rule reads it (walk7 B10)
    with pytest.raises(UsageError, match=f"{nnodes!r} \\(from --nnodes\\)") as refused:
        parse(["--recovery", "on", "--nnodes", nnodes, "--", "t.py"], {})
    assert "one node" not in str(refused.value)
    with pytest.raises(Exception, match="one node"):
        parse(["--recovery", "on", "--nnodes", "1", "--", "t.py"], {})


def test_every_bad_field_of_one_section_is_named():
    text = BASE.replace("{script: t.py}", "{script: t.py, type: x, master_port: 0, wait_timeout: -1, mode: holdd}")
    lines = spec_refusal(text)
    assert [line.split(": ")[1] for line in lines] == ["launcher.type", "launcher.master_port", "launcher.wait_timeout",
                                                       "launcher.mode"], lines


@pytest.mark.parametrize("extra, field", [
    # a refused field is read as its default; a check weighing it with another is dropped, not said of the default
    ("launcher: {script: t.py, master_port: 0, exchange_port: 29500}\n", "launcher.master_port"),
    ("slurm: {runtime: apptainr, sif: /shared/t.sif}\n", "slurm.runtime"),
    ("recovery: {enabled: maybe, min_nodes: 1}\n", "recovery.enabled"),
    ("kubernetes: {tolerations: [{operator: Exist}]}\n", "kubernetes.tolerations[0].operator"),
])
def test_a_check_weighing_a_refused_field_says_nothing_of_its_default(extra, field):
    base = BASE.replace("launcher: {script: t.py}\n", "") if extra.startswith("launcher") else BASE
    (line,) = spec_refusal(base + extra)
    assert f": {field}: got " in line, line


def test_every_volumes_mistake_is_named():
    text = BASE + ("volumes:\n  - {name: Bad, path: /a, host_path: /a}\n  - {name: b, path: data, host_path: /b}\n"
                   "  - {name: c, path: /workspace, host_path: /c}\n  - {name: c, path: /d, host_path: /d}\n")
    fields = [line.split(": ")[1] for line in spec_refusal(text)]
    assert fields == ["volumes[0].name", "volumes[1].path", "volumes[2].path", "volumes[3].name"], fields


def test_a_quoted_yes_is_told_the_word_to_write_not_to_drop_its_quotes():
    (line,) = spec_refusal(BASE + "metrics: {enabled: \"yes\"}\n")
    assert line.endswith("write true") and "without quotes" not in line, line


def test_init_names_every_flag_the_written_spec_would_refuse(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["init", "--name", "Bad_Name", "--script", "../x.py", "--dry-run"])
    err = capsys.readouterr().err.splitlines()
    assert code == EXIT_USAGE
    assert [line.split(": ")[2].split(" ")[0] for line in err] == ["--name", "--script"], err


def test_a_flag_turning_a_switch_off_over_the_environment_leaves_its_variables_be():
    """`nodeweave check` runs a recovery job's nodes with --recovery off: the container's NODEWEAVE_SPARES is the
    environment's, not a mistake; a dependent given as a flag still is."""
    from nodeweave.entrypoint.planning.settings import parse

    env = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_CHECKPOINT_DIR": "ck"}
    assert parse(["--recovery", "off", "--", "t.py"], env).get("recovery") is False
    message = entrypoint_refusal(env, ["--recovery", "off", "--spares", "2"])
    assert message.startswith("--spares: 2 does nothing with --recovery off"), message


def test_a_snapshot_of_a_recovery_jobs_node_is_not_refused_as_one_node():
    """The snapshot plans one node of its own (--nnodes 1) in whatever environment the node has."""
    from nodeweave.entrypoint.snapshot import detect_node

    node = detect_node({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_NNODES": "2", "PATH": os.environ["PATH"]})
    assert "gpus" in node
