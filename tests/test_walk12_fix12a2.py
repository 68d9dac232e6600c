"""The twelfth walk, part A (issue 43, /work/wt/walk12a-report.md), rows fixed by fix12a2: each row's class, one test
per class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cli_run
from cli_run import in_process as run_cli
from team_folder import make_job_folder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A13: a docs recipe that turns recovery on and promises a resume names the checkpoint folder it resumes from ----

def _recovery_recipes():
    rows = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for paragraph in re.split(r"\n\s*\n", doc.read_text()):
            for recipe in re.findall(r"recovery: \{enabled: true[^}]*\}", paragraph):
                if "resum" in paragraph and "as written" not in paragraph and "stand-in" not in paragraph:
                    rows.append((doc.name, recipe))
    return rows


@pytest.mark.parametrize("doc, recipe", _recovery_recipes())
def test_a_recovery_recipe_that_promises_a_resume_names_its_checkpoint_folder(doc, recipe):
    """A13: README's quick-start line `recovery: {enabled: true, spares: 1}` promised "training resumes from the newest
    complete checkpoint", yet without recovery.checkpoint_dir nothing resumes (validate notes it)."""
    assert "checkpoint_dir" in recipe, (doc, recipe)


def test_the_readme_quick_start_recipe_validates_without_a_no_progress_note(capsys, job_folder):
    """A13: the recipe, pasted into a spec, draws no note that no checkpoint can count as progress."""
    recipe = next(r for d, r in _recovery_recipes() if d == "README.md")
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text() + f"{recipe}\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and "no_progress_restarts" not in err, out + err


# -- A17: a verb's --help lists only the reach flags it takes (FLAG_VERBS: --overlay for up and down) ----------------

def _reach_verbs():
    from nodeweave.cluster.options import FLAG_VERBS

    verbs = ["up", "down", "run", "status", "logs", "stop", "shell", "exec", "check", "top", "dashboard"]
    return [(verb, flag, verb in verbs_of) for verb in verbs for flag, verbs_of, _ in FLAG_VERBS.values()]


@pytest.mark.parametrize("verb, flag, takes", _reach_verbs())
def test_a_verbs_help_lists_a_reach_flag_only_where_the_verb_takes_it(capsys, verb, flag, takes):
    """A17: `status --help` (and check, stop, shell, logs, top, dashboard, run, exec) listed --overlay, which each of
    them refuses when typed; up and down list it."""
    code, out, err = run_cli(capsys, verb, "--help")
    assert code == 0
    assert (flag in out) == takes, out


# -- A18: an option of a percentage takes 25%, as the docs write it -------------------------------------------------

def _percent_options():
    from nodeweave.cli.habits.coercion import PERCENT_MARK

    rows = []
    for words, command in cli_run.leaves():
        for param in command.params:
            info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
            if info is not None and getattr(info, PERCENT_MARK, False):
                rows.append((" ".join(words), param.opts[0]))
    return rows


def test_the_percentage_options_are_marked():
    """A18: every option whose help calls it a percentage is read by the one percentage reader."""
    rows = []
    for words, command in cli_run.leaves():
        for param in command.params:
            if "percent" in (getattr(param, "help", "") or "").lower():
                rows.append((" ".join(words), param.opts[0]))
    assert rows and sorted(rows) == sorted(_percent_options())


@pytest.mark.parametrize("words, flag", _percent_options())
def test_a_percentage_option_takes_a_percent_sign(capsys, job_folder, words, flag):
    """A18: `check --threshold 25%` (README: "more than `--threshold` (25%) below the median") was refused as not a
    number; 25% is 25, and a malformed one is refused naming the percentage form."""
    code, out, err = run_cli(capsys, *words.split(), "--dry-run", flag, "25%")
    assert code == 0, out + err
    assert "threshold 25%" in out
    code, out, err = run_cli(capsys, *words.split(), "--dry-run", flag, "25%%")
    assert code == 2 and "25 or 25%" in err, out + err


# -- A2: the program's --help lists the options it takes before a verb ----------------------------------------------

def _before_the_verb():
    from nodeweave.cli import VERB_FLAGS, VERB_OPTIONS_WITH_VALUE

    return [*VERB_OPTIONS_WITH_VALUE, *VERB_FLAGS]


@pytest.mark.parametrize("flag", _before_the_verb())
def test_the_programs_help_lists_what_it_takes_before_a_verb(capsys, flag):
    """A2: `nodeweave --help` listed only --version and --help, yet -o/--output, --spec and --json are taken before
    the verb (and the refusal of another option there names them)."""
    code, out, err = run_cli(capsys, "--help")
    assert code == 0
    assert re.search(rf"(^|[ ,]){re.escape(flag)}\b", out.split("Commands:")[0], re.M), out


# -- A12: a --target value that looks like an image reference (docker build -t NAME:TAG) names what names an image --

@pytest.mark.parametrize("argv, hint", [
    (["image", "build", "cpu", "--dry-run"], "--tag v1"),
    (["up", "--dry-run"], "--image myimg:v1"),
    (["run", "--dry-run"], "image.registry"),
    (["status"], "image.registry"),
])
def test_a_target_that_looks_like_an_image_names_how_an_image_is_named(capsys, job_folder, argv, hint):
    """A12: `image build cpu -t myimg:v1` was told only "--target 'myimg:v1' is not accepted: local or openshift";
    every refusal of a --target value (image build's and the cluster verbs') says -t is --target and names the
    command's way to name an image, and a plain wrong target is told as before."""
    code, out, err = run_cli(capsys, *argv, "-t", "myimg:v1")
    line = cli_run.one_line(err)
    assert code == 2 and "-t is --target here" in line and hint in line, err
    code, out, err = run_cli(capsys, *argv, "-t", "nosuch")
    assert code == 2 and "-t is --target" not in err, err


# -- A7: -o name on every verb that lists things by name (output.NAME_LISTS); another verb's refusal names them -----

def test_every_verb_of_the_names_table_takes_o_name_and_says_so(capsys):
    """A7: the verbs of NAME_LISTS are found by their command's name, and each one's --help offers -o name."""
    from nodeweave.cli.habits.output import NAME_LISTS

    for command, (verb, _, _) in NAME_LISTS.items():
        assert verb.split()[-1] == command
        code, out, err = run_cli(capsys, *verb.split(), "--help")
        assert code == 0 and "or name:" in out, (verb, out)


def test_image_variants_o_name_prints_the_keys(capsys, job_folder):
    """A7: `image variants -o name` was refused; it prints the catalogue's keys, one a line."""
    from nodeweave.catalogue import VARIANTS

    code, out, err = run_cli(capsys, "image", "variants", "-o", "name")
    assert code == 0 and out.split() == list(VARIANTS), out + err


def test_status_o_name_prints_the_nodes_that_answer(capsys, job_folder, monkeypatch):
    """A7: `status -o name` was refused; it prints the nodes that answer, one a line, and nothing else on stdout."""
    from nodeweave.cluster import status

    def gather(backend, nodes, command, say=None):
        return [{"node": n.name, "up": n.index == 1, "asked": True, "plan_hash": None, "plan_errors": [],
                 "error": None, "run": None, "mode": "hold", "recovery": None} for n in nodes]

    monkeypatch.setattr(status, "gather", gather)
    monkeypatch.setattr(status, "problems", lambda rows, *rest: [])
    code, out, err = run_cli(capsys, "status", "-o", "name")
    assert code == 0 and out == "node-1\n", out + err


@pytest.mark.parametrize("argv", [["runs", "show"], ["validate"], ["bench", "--dry-run"]])
def test_o_name_elsewhere_names_the_verbs_that_take_it(capsys, job_folder, argv):
    """A7: another verb's refusal of -o name names the verbs that take it."""
    code, out, err = run_cli(capsys, *argv, "-o", "name")
    assert code == 2 and "is taken by runs ls, image variants, status" in cli_run.one_line(err), err


# -- A3: an option naming a file nodeweave writes, given a stream (/dev/stdout, /proc/self/fd/1, ...), says so and
# names the verb's way to its data on stdout; a link's hint names the file at its end, never another link --------

def _file_options():
    from nodeweave.cli.habits.output import output_file

    rows = []
    for words, command in cli_run.leaves():
        for param in command.params:
            if getattr(getattr(param, "callback", None), "__wrapped__", None) is output_file and not param.hidden:
                dry = [opt for p in command.params for opt in getattr(p, "opts", ()) if opt == "--dry-run"]
                rows.append((words + dry, max(param.opts, key=len)))
    return rows


@pytest.mark.parametrize("stream", ["/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/dev/fd/1"])
@pytest.mark.parametrize("words, flag", _file_options(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_file_option_given_a_stream_names_the_way_to_stdout(capsys, job_folder, words, flag, stream):
    """A3: `init --out /dev/stdout` (and bench --json-out) was told to name /proc/self/fd/1 "itself", another link,
    and then the terminal or the redirect's file; every option naming a file nodeweave writes says it is a stream
    and names the verb's own way to stdout (output.STDOUT_WAYS)."""
    from nodeweave.cli.habits.output import STDOUT_WAYS

    code, out, err = run_cli(capsys, *words, flag, stream)
    line = cli_run.one_line(err)
    assert code == 2 and "(a stream), not a file" in line and STDOUT_WAYS[flag] in line, line
    assert "/proc/self" not in line.split("not a file", 1)[1], line


def test_a_links_hint_names_the_file_at_its_end(capsys, job_folder):
    """A3: a link to a link was told to name the middle link, refused in turn."""
    (job_folder / "l2").symlink_to(job_folder / "real.yaml")
    (job_folder / "l1").symlink_to(job_folder / "l2")
    code, out, err = run_cli(capsys, "init", "--out", "l1")
    assert code == 2 and f"name that file itself ({job_folder.resolve() / 'real.yaml'})" in err, err


# -- A6: nodeweave's own workers are launched as modules, never judged as a user's script -------------------------

def _own_worker_commands():
    from nodeweave.bench.runner import BenchConfig, worker_command
    from nodeweave.check.driver import CheckOptions

    import dataclasses

    fields = {f.name: None for f in dataclasses.fields(BenchConfig) if f.default is dataclasses.MISSING
              and f.default_factory is dataclasses.MISSING}
    fields.update(ops=("all_reduce",), iters=1, warmup=0, nproc="1")
    bench = worker_command(BenchConfig(**{k: v for k, v in fields.items()}), "/tmp/out.json")
    return [("bench", bench[bench.index("--") + 1:]), ("check", list(CheckOptions().worker_command()))]


@pytest.mark.parametrize("verb, command", _own_worker_commands())
def test_nodeweaves_own_worker_draws_no_script_note(tmp_path, verb, command):
    """A6: a failed bench quoted the entrypoint's warning that nodeweave's own bench worker "is outside the working
    directory ...: copy it into the working directory"; every worker nodeweave launches is the launcher's module form
    (`-m nodeweave...`), which the script notes leave alone, from any working directory."""
    from nodeweave.entrypoint.planning.consistency import script_notes

    assert command[0] == "-m" and command[1].startswith("nodeweave."), command
    assert script_notes("torchrun", command, str(tmp_path)) == []


# -- A9, A10: every option of a requirements file is checked for the value pip needs (spec.sections.image's table) --

def _option_lines():
    from nodeweave.spec.sections.image import OPTION_VALUES, PER_REQUIREMENT, REQUIREMENT_OPTIONS

    rows = []
    for option in REQUIREMENT_OPTIONS:
        if OPTION_VALUES[option] is None:
            rows.append((f"{option}=1", "which it does not take"))
        else:
            rows.append((option, "without its value"))
    for option in PER_REQUIREMENT:
        rows.append((f"tqdm==4.66.1 {option}", "without its value"))
    rows += [("tqdm==4.66.1 --hsah=sha256:abc", "did you mean --hash?"),
             ("tqdm==4.66.1 --hash=sha256:abc", "--hash needs sha256:<64 hex digits>"),
             ("tqdm==4.66.1 --hash=md5:" + "a" * 32, "--hash needs sha256:<64 hex digits>"),
             (f"tqdm==4.66.1 --hash=sha256:{'a' * 64} --hash=sha512:x", "--hash needs sha256:<64 hex digits>")]
    return rows


@pytest.mark.parametrize("line, said", _option_lines())
def test_a_requirements_option_without_the_value_pip_needs_is_refused(capsys, job_folder, line, said):
    """A9, A10: `tqdm==4.66.1 --hsah=sha256:abc`, a --hash that is not 64 hex, a bare `--extra-index-url` (-i,
    --trusted-host, ...) passed validate and failed the image build in pip; each is refused naming file and line."""
    (job_folder / "requirements.txt").write_text(f"tqdm==4.66.1\n{line}\n")
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text().replace("image: {variant: cpu}", "image: {variant: cpu, requirements: "
                                                                      "requirements.txt}"))
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and "requirements.txt:2:" in err and said in err, out + err


@pytest.mark.parametrize("line", ["--extra-index-url https://example.org/simple", "-i https://example.org/simple",
                                  "--pre", "--only-binary=:all:", "--trusted-host example.org",
                                  f"tqdm==4.66.1 --hash=sha256:{'a' * 64} --hash sha512:{'b' * 128}",
                                  "tqdm==4.66.1 --config-settings key=value"])
def test_a_requirements_option_as_pip_takes_it_passes(capsys, job_folder, line):
    """A9, A10: the options in the form pip takes still pass."""
    (job_folder / "requirements.txt").write_text(f"{line}\n" if line.startswith("tqdm") else f"tqdm==4.66.1\n{line}\n")
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text().replace("image: {variant: cpu}", "image: {variant: cpu, requirements: "
                                                                      "requirements.txt}"))
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, out + err
