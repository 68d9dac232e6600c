"""replay11's rows A3, A16, A20, A21, A22, A25, A27, A30 (issue 43, /work/wt/replay11-report.md), each fixed as a
class and walked here over the product's own table where one exists. Each test fails on the code before its fix. No
container is started.
"""

from __future__ import annotations

import json
import os

import pytest

from cli_run import entrypoint_in_process
from cli_run import in_process as run_cli
from cli_run import one_line
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A30: the current folder removed under the entrypoint -----------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--nnodes", "1", "--explain", "--", "train.py"],
    ["--nnodes", "1", "--explain", "--json", "--", "train.py"],
    ["--nnodes", "1", "--launcher", "command", "--", "true"],
    ["--nnodes", "1", "--", "train.py"],
    ["--nnodes", "1", "--status"],
])
def test_the_entrypoint_in_a_removed_folder_says_so_in_nodeweaves_words(tmp_path, monkeypatch, capsys, argv):
    """A30: nodeweave said `the current folder no longer exists ...` (2) for every verb, while the entrypoint in the
    same folder (--explain, a real start) printed a traceback ending in `os.getcwd()` / FileNotFoundError (1)."""
    from nodeweave.entrypoint.errors import CWD_GONE

    gone = tmp_path / "gone"
    gone.mkdir()
    run = entrypoint_in_process(gone, monkeypatch, capsys)
    gone.rmdir()
    code, out, err = run(argv, {"NODEWEAVE_METRICS": "off"})
    assert code == 2, (out, err)
    assert one_line(err) == f"nodeweave-entrypoint: error: {CWD_GONE}"
    if "--json" in argv:
        assert json.loads(out)["errors"] == [{"message": CWD_GONE, "exit_code": 2}]


def test_nodeweave_and_the_entrypoint_share_the_removed_folders_line(tmp_path, monkeypatch, capsys):
    """A30: one rule, one line, for both programs."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    from nodeweave.entrypoint.errors import CWD_GONE

    code, _, err = run_cli(capsys, "validate")
    assert code == 2 and one_line(err).endswith(CWD_GONE)


# -- A3: a folder option naming a home itself -----------------------------------------------------------------------

# Every option and variable naming a folder nodeweave writes its files into (``failures.writable_dir``'s callers).
FOLDER_OPTIONS = [
    (["render", "all", "--out", "{home}", "--dry-run"], "--out"),
    (["render", "entrypoint", "--out", "{home}"], "--out"),
    (["run", "--runs-dir", "{home}", "--dry-run"], "--runs-dir"),
    (["check", "--runs-dir", "{home}", "--dry-run"], "--runs-dir"),
    (["image", "build", "cpu", "--context", "{home}", "--dry-run"], "--context"),
    (["image", "build", "cpu", "--wheelhouse", "{home}", "--dry-run"], "--wheelhouse"),
    (["doctor", "--capture", "{home}"], "--capture"),
    (["image", "build", "cpu", "--dry-run", "NODEWEAVE_CACHE_DIR={home}"], "NODEWEAVE_CACHE_DIR"),
]


@pytest.fixture
def home(job_folder, monkeypatch):
    """This user's home: a folder of its own beside the project (the project is not in it, as a walk's was)."""
    own = job_folder.parent / f"{job_folder.name}.home"
    own.mkdir()
    monkeypatch.setenv("HOME", str(own))
    return own


@pytest.mark.parametrize("words, flag", FOLDER_OPTIONS, ids=[" ".join(w[:2]) + " " + f for w, f in FOLDER_OPTIONS])
@pytest.mark.parametrize("spelling", ["home", "link"])
def test_a_folder_option_naming_a_home_itself_is_refused(capsys, monkeypatch, job_folder, home, words, flag, spelling):
    """A3: `init`, `validate` and `up` in the home were refused, but `render all --out ~` wrote compose/, images/,
    manifests/, entrypoint/ and .nodeweave/ among the home's own (0), and `run --runs-dir ~` planned run folders
    directly in it (0); the same for a link to the home."""
    given = home
    if spelling == "link":
        given = job_folder.parent / f"{job_folder.name}.homelink"
        given.symlink_to(home)
    argv = []
    for word in words:
        if word.startswith("NODEWEAVE_CACHE_DIR="):
            monkeypatch.setenv("NODEWEAVE_CACHE_DIR", word.split("=", 1)[1].format(home=given))
        else:
            argv.append(word.format(home=given))
    if flag == "--wheelhouse":  # the build's context then holds what the Dockerfile copies
        assert run_cli(capsys, "render", "entrypoint")[0] == 0
    before = sorted(p.name for p in home.iterdir())
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2, (out, err)
    assert flag in line and f"{home} is a home itself, your home folder ($HOME)" in line, line
    assert sorted(p.name for p in home.iterdir()) == before


@pytest.mark.parametrize("path, home", [("/home/lab", "a home itself"), ("/Users/ana/", "a home itself"),
                                        ("/home/lab/proj", ""), ("/srv/me", "a home itself, your home folder ($HOME)"),
                                        ("/srv/me/proj", ""), ("/srv", "")])
def test_the_one_judge_of_a_home(monkeypatch, path, home):
    """A3, A22: one judge of a home for every path nodeweave writes into, mounts or sends."""
    from nodeweave.systemdirs import a_home

    monkeypatch.setenv("HOME", "/srv/me")
    assert a_home(path) == home


def test_a_folder_in_the_home_is_one_of_your_own(capsys, job_folder, home):
    """A3: the refusal names the home itself only: a folder in it is taken."""
    code, out, err = run_cli(capsys, "render", "all", "--out", str(home / "proj"), "--dry-run")
    assert code == 0, err


# -- A22: a host folder in the spec naming a home by its path -------------------------------------------------------

VOLUME = "volumes: [{{name: h, host_path: '{path}', path: /data}}]\n"
CACHE = "cache: {{host_path: '{path}'}}\n"


@pytest.mark.parametrize("field, text", [("volumes[0].host_path", VOLUME), ("cache.host_path", CACHE)])
@pytest.mark.parametrize("path, said", [
    ("{home}", "{home}, a home itself, your home folder ($HOME)"),
    ("{link}", "{home}, a home itself, your home folder ($HOME)"),
    ("../{name}.home", "{home}, a home itself, your home folder ($HOME)"),
    ("/home/lab", "/home/lab, a home itself"),
    ("/home", "/home, the folder homes are in"),
])
def test_a_host_folder_naming_a_home_is_refused(capsys, job_folder, home, field, text, path, said):
    """A22: `host_path: "~"` was refused (`would hand every node the user's whole home`), but the same home by its
    path (`/tmp/me` = $HOME, `/home/lab`, a link to it, `..` from the project) was a valid volume (0)."""
    link = job_folder.parent / f"{job_folder.name}.homelink"
    link.symlink_to(home)
    values = {"home": home, "link": link, "name": job_folder.name}
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text() + text.format(path=path.format(**values)))
    code, out, err = run_cli(capsys, "validate")
    line = one_line(err)
    assert code == 2, (out, err)
    assert f"{field}: " in line and f"would hand every node {said.format(**values)}" in line, line


@pytest.mark.parametrize("text, path", [(VOLUME, "data"), (CACHE, ".cache/x")])
def test_a_host_folder_in_a_home_is_taken(capsys, job_folder, home, text, path):
    """A22: a folder in a home is the job's own."""
    (home / path).mkdir(parents=True)
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text() + text.format(path=home / path))
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err


# -- A27: an earlier output of the option's own kind is replaced only with --force ----------------------------------

BENCH_RESULT = '{"schema": "nodeweave.bench/1", "sweep": [], "ranking": [], "runs": []}\n'
CHART = b"\x89PNG\r\n\x1a\n" + bytes(16) + b"tEXtSoftware\x00Matplotlib version3.9"
# Every option naming a file nodeweave writes that the user gives again (habits.replace.KINDS, but the plan record,
# a variable with no --force): (argv, the file, what it holds).
EARLIER_OUTPUTS = [
    (["bench", "--dry-run", "--json-out", "base.json"], "base.json", BENCH_RESULT.encode()),
    (["bench", "--dry-run", "--json-out", "b.json", "--plot", "base.png"], "base.png", CHART),
    (["runs", "compare", "a", "b", "--metric", "x", "--chart", "base.png"], "base.png", CHART),
    (["hosts", "probe", "--node", "gpu01", "--write-hostfile", "hostfile", "--dry-run"], "hostfile",
     b"gpu01 slots=8\n"),
    (["init", "--dry-run"], "nodeweave.yaml", None),
]


@pytest.mark.parametrize("argv, name, content", EARLIER_OUTPUTS, ids=[a[0] + " " + n for a, n, _ in EARLIER_OUTPUTS])
def test_an_earlier_output_is_replaced_only_with_force(capsys, job_folder, argv, name, content):
    """A27: `bench --json-out base.json` over an earlier bench result said only `# would write base.json` and
    `wrote base.json` (0): the baseline replaced with no word and no --force (bench had none), while `init` and
    `hosts probe --write-hostfile` asked --force to replace their earlier output."""
    if content is not None:
        (job_folder / name).write_bytes(content)
    before = (job_folder / name).read_bytes()
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and name in line and " exists and is " in line and "pass --force to replace it" in line, line
    assert (job_folder / name).read_bytes() == before


@pytest.mark.parametrize("argv", [["bench", "--dry-run", "--force"],
                                  ["runs", "compare", "a", "b", "--metric", "x", "--force"]])
def test_force_with_nothing_to_replace_is_refused(capsys, job_folder, argv):
    """A27: --force does nothing without the option whose file it replaces."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and "--force does nothing without" in one_line(err), err


def test_a_forced_bench_says_it_replaces_the_earlier_result(capsys, job_folder):
    """A27: the dry run with --force names the replacement, as hosts probe's does."""
    (job_folder / "base.json").write_text(BENCH_RESULT)
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--sizes", "1K", "--iters", "1", "--json-out", "base.json",
                             "--force")
    assert code == 0, err
    assert "replaces the existing file (--force)" in out, out


# -- A20: a bare ~ in a required field offers no default ------------------------------------------------------------

JOB = {"name": "m", "image": "{variant: cpu}", "launcher": "{script: train.py}"}
REQUIRED_TILDES = [
    ("name", {"name": "~"}),
    ("image", {"image": "~"}),
    ("image.variant", {"image": "{variant: ~}"}),
    ("launcher", {"launcher": "~"}),
    ("launcher.script", {"launcher": "{script: ~}"}),
    ("volumes[0].name", {"volumes": "[{name: ~, path: /d, host_path: /data}]"}),
    ("volumes[0].path", {"volumes": "[{name: d, path: ~, host_path: /data}]"}),
]


@pytest.mark.parametrize("field, changed", REQUIRED_TILDES, ids=[f for f, _ in REQUIRED_TILDES])
def test_a_bare_tilde_in_a_required_field_offers_no_default(capsys, job_folder, field, changed):
    """A20: `name: ~` said `read as not given (the default); accepted: ..., or the key left out (or null written
    out) for the default`, while the key left out or null was refused as `required field is missing/null`."""
    (job_folder / "m.yaml").write_text("".join(f"{key}: {value}\n" for key, value in {**JOB, **changed}.items()))
    code, out, err = run_cli(capsys, "validate", "--spec", "m.yaml")
    line = one_line(err)
    assert code == 2 and f": {field}: ~ is YAML's null" in line and "required (it has no default)" in line, line
    assert "for the default" not in line and "home" not in line, line


def test_a_bare_tilde_in_a_field_with_a_default_still_offers_it(capsys, job_folder):
    """A20: a field with a default keeps its line."""
    (job_folder / "m.yaml").write_text("".join(f"{key}: {value}\n" for key, value in {**JOB, "nodes": "~"}.items()))
    code, out, err = run_cli(capsys, "validate", "--spec", "m.yaml")
    assert code == 2 and "or the key left out (or null written out) for the default" in one_line(err)


# -- A16: only the run folder's spec is offered as a spec to copy out -----------------------------------------------

def run_folder_files():
    from nodeweave.spec.loader import RUN_FILES

    names = {r"spec\.yaml": "spec.yaml", r"node-(\d+)\.plan\.json": "node-0.plan.json", r"node-(\d+)\.log": "node-1.log"}
    return [names.get(pattern, pattern.replace("\\", "")) for pattern, _ in RUN_FILES] + ["notes.txt"]


@pytest.mark.parametrize("name", run_folder_files())
def test_only_the_run_folders_spec_is_offered_to_copy_out(capsys, job_folder, name):
    """A16: every run-folder file's refusal ended `or copy this file out of the run folder to start from it`, also
    node-0.plan.json, run.json, goodput.json, heat.json and node-0.log, none a spec to start from (copied out, the
    plan was then refused as a node's plan)."""
    run = job_folder / "runs" / "20261130T140001Z-proj"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"job": "proj"}\n')
    (run / "spec.yaml").write_text((job_folder / "nodeweave.yaml").read_text())
    if not (run / name).exists():
        (run / name).write_text('{"x": 1}\n')
    code, out, err = run_cli(capsys, "validate", "--spec", f"runs/20261130T140001Z-proj/{name}")
    line = one_line(err)
    assert code == 2 and "is a run's record (" in line, line
    assert ("copy this file out of the run folder" in line) == (name == "spec.yaml"), line


# -- A21: a build arg an option sets, given beside that option, is refused whatever the values ----------------------

def option_build_args():
    from nodeweave.cli.image import OPTION_BUILD_ARGS

    values = {"BASE_IMAGE": ("localhost/nodeweave-base:bookworm", ["--base", "localhost/nodeweave-base:bookworm"]),
              "PIP_NO_INDEX": ("1", ["--offline"])}
    return [(arg, *values[arg]) for arg in OPTION_BUILD_ARGS]


@pytest.mark.parametrize("arg, value, option", option_build_args())
def test_a_build_arg_beside_its_option_is_refused_even_when_they_agree(capsys, job_folder, arg, value, option):
    """A21: `--build-arg BASE_IMAGE=X --base X` printed the plan (0) and `--build-arg PIP_NO_INDEX=1 --offline` went
    on, while `--build-arg FOO=1 --build-arg FOO=1` and `-e A=1 -e A=1` are refused even when equal."""
    assert run_cli(capsys, "render", "all")[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--build-arg", f"{arg}={value}", *option, "--dry-run")
    line = one_line(err)
    assert code == 2 and f"--build-arg {arg}={value} and {' '.join(option)} both set" in line, line
    assert f"{option[0]} is nodeweave's spelling" in line, line


# -- A25: a sub-verb's option typed between its group and it --------------------------------------------------------

def options_between_group_and_sub_verb():
    """(group, sub-verb, an option of the sub-verb as typed) for every sub-verb of every group (cli.GROUPS) that has
    an option beyond the ones every verb reads (-o/--output, --spec, --json, --help)."""
    from cli_run import leaves
    from nodeweave.cli import GROUPS, VERB_FLAGS, VERB_OPTIONS_WITH_VALUE

    commands = {tuple(words): command for words, command in leaves()}
    cases = []
    for group, subs in GROUPS.items():
        for sub in subs:
            for param in commands[(group, sub)].params:
                names = [n for n in getattr(param, "opts", ()) if n.startswith("--")]
                if getattr(param, "param_type_name", "") != "option" or not names or set(param.opts) & {
                        *VERB_OPTIONS_WITH_VALUE, *VERB_FLAGS, "--help"}:
                    continue
                typed = [names[0]] if param.is_flag else [names[0], "x"]
                cases.append((group, sub, typed))
                break
    return cases


@pytest.mark.parametrize("group, sub, typed", options_between_group_and_sub_verb(),
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_sub_verbs_option_before_it_is_refused_with_where_it_goes(capsys, job_folder, group, sub, typed):
    """A25: `nodeweave image --dry-run build` was `no such option: --dry-run; nodeweave image --help lists what is
    accepted`, and so were `hosts --node ... probe` and `runs --metric x compare`: no word that it is the
    sub-verb's option and goes after it, as `nodeweave -n ml run` is now told."""
    code, out, err = run_cli(capsys, group, *typed, sub)
    line = one_line(err)
    assert code == 2 and f"{typed[0]} is not an option of nodeweave {group}:" in line, line
    assert f"`nodeweave {group} {sub} {' '.join(typed)}`" in line, line


def test_the_common_options_between_group_and_sub_verb_are_still_moved(capsys, job_folder):
    """A25: -o between a group and its sub-verb is taken, as before."""
    code, out, err = run_cli(capsys, "image", "-o", "json", "variants")
    assert code == 0 and json.loads(out), err


# -- R3: validate refuses the setup line every node refuses ---------------------------------------------------------

def words_alone():
    from nodeweave.entrypoint.planning.contract import _NOT_ALONE

    return sorted(_NOT_ALONE)


@pytest.mark.parametrize("word", words_alone())
def test_a_setup_line_every_node_refuses_is_refused_by_validate(capsys, job_folder, word):
    """R3: `launcher: {setup: ["source"]}` was valid (0), rendered and planned by `up --dry-run`, while every node's
    entrypoint refused that very value (`'source' alone does nothing`, 2)."""
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.planning.contract import read_setup_lines, setup_text

    with pytest.raises(EntrypointError):  # the node's own reader of what the spec renders
        read_setup_lines(setup_text([word]), "setup", "NODEWEAVE_SETUP")
    (job_folder / "m.yaml").write_text(f"name: m\nimage: {{variant: cpu}}\nlauncher: {{script: train.py, setup: "
                                       f"['{word}']}}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "m.yaml")
    line = one_line(err)
    assert code == 2 and f"launcher.setup[0]: {word!r} alone does nothing" in line, line


# -- R4: a leading // is / in the CLI's folder and file judges too --------------------------------------------------

@pytest.mark.parametrize("scratch", ["/tmp", "/var/tmp"])
@pytest.mark.parametrize("argv", [["run", "--runs-dir", "/{scratch}/f11r-new-{n}", "--dry-run"],
                                  ["bench", "--dry-run", "--sizes", "1K", "--json-out", "/{scratch}/f11r-{n}.json"]])
def test_a_doubled_leading_slash_is_one_in_the_folder_judges(capsys, job_folder, scratch, argv):
    """R4: `run --runs-dir //var/tmp/ck --dry-run` was `//var/tmp/ck would be made directly in //var/tmp, which is /
    or a system folder ... (of those, only /tmp and /var/tmp take one)`: it contradicted itself, //var/tmp being
    /var/tmp (the entrypoint and the spec normalise it already)."""
    words = [w.format(scratch=scratch, n=job_folder.name) for w in argv]
    code, out, err = run_cli(capsys, *words)
    assert code == 0, err


@pytest.mark.parametrize("argv, said", [
    (["run", "--runs-dir", "//usr/local/f11r-new", "--dry-run"], "/usr/local/f11r-new would be made directly in "
                                                                 "/usr/local,"),
    (["bench", "--dry-run", "--json-out", "//usr/local/x.json"], "its folder /usr/local is / or a system folder"),
])
def test_a_doubled_leading_slash_is_said_as_the_folder_it_is(capsys, job_folder, argv, said):
    """R4: the refusal names the folder as the kernel reads it."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and said in one_line(err), err


# -- C7: runs/ refused for bench names bench's own option -----------------------------------------------------------

@pytest.mark.parametrize("there", ["file", "dangling link"])
@pytest.mark.parametrize("argv, option", [(["bench", "--dry-run", "--sizes", "1K"], "--json-out FILE"),
                                          (["run", "--dry-run"], "--runs-dir DIR"),
                                          (["check", "--dry-run"], "--runs-dir DIR")])
def test_runs_beside_the_spec_refused_names_the_verbs_own_option(capsys, job_folder, there, argv, option):
    """C7: a full runs/ refused bench with `a run's folder goes there; accepted: ..., or --runs-dir DIR`, an option
    bench has not (its file goes where --json-out says)."""
    runs = job_folder / "runs"
    if there == "file":
        runs.write_text("x\n")
    else:
        runs.symlink_to(job_folder / "nowhere")
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and "runs/ beside the spec" in line and line.endswith(f"or {option}"), line


# -- R1: kubectl's -o=json spelling of a short option ---------------------------------------------------------------

@pytest.mark.parametrize("argv", [["-o=json", "validate"], ["validate", "-o=json"], ["runs", "-o=json", "ls"],
                                  ["image", "variants", "-o=json"]])
def test_a_short_option_with_equals_is_read_as_kubectl_reads_it(capsys, job_folder, argv):
    """R1: `nodeweave -o=json validate` (and after the verb, and between group and sub-verb) was `--output '=json'
    is not accepted: table, wide, json, yaml`, while -o json, -ojson and --output=json worked."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    json.loads(out)


def short_options():
    from cli_run import leaves

    cases = set()
    for words, command in leaves():
        for param in command.params:
            for name in getattr(param, "opts", ()):
                if len(name) == 2 and getattr(param, "param_type_name", "") == "option":
                    cases.add((" ".join(words), name, bool(param.is_flag or getattr(param, "count", False))))
    return sorted(cases)


@pytest.mark.parametrize("verb, name, flag", short_options())
def test_every_short_option_with_equals_is_split_only_where_it_takes_a_value(verb, name, flag):
    """R1: the class, every verb's short options: one taking a value reads `-X=v` as `-X v`; a flag is left to
    click (whose refusal names it)."""
    from cli_run import leaves
    from nodeweave.cli.habits.base import short_options_with_equals

    command = dict((" ".join(words), c) for words, c in leaves())[verb]
    got = short_options_with_equals(command, [f"{name}=v", "--", f"{name}=w"])
    assert got == ([f"{name}=v"] if flag else [name, "v"]) + ["--", f"{name}=w"]


# -- R2: a missing tool for an address names the address as typed and a spelling the verb takes ---------------------

@pytest.mark.parametrize("argv", [["init", "--host", "{kind}:x"],  # its dry run reaches no host (walk16a A21)
                                  ["hosts", "probe", "--node", "{kind}:x"]])
@pytest.mark.parametrize("kind, tool, other", [("oc", "oc", "pod:NAME"), ("pod", "kubectl", "oc:NAME"),
                                               ("podman", "podman", "docker:NAME"),
                                               ("docker", "docker", "podman:NAME")])
def test_a_missing_tool_for_an_address_offers_a_spelling_the_verb_takes(capsys, tmp_path, monkeypatch, argv, kind,
                                                                        tool, other):
    """R2: `init --host oc:x` without oc said `init --host pod:x reaches the hosts with it (install the OpenShift
    client, or pass --kube-cli kubectl)`: pod:x for the oc:x typed, and init has no --kube-cli."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    code, out, err = run_cli(capsys, *[w.format(kind=kind) for w in argv])
    line = one_line(err)
    assert code == 3 and f"{tool} is not on PATH" in line and f"{kind}:NAME addresses" in line, line
    assert f"write the address {other}" in line and "--kube-cli" not in line and "--engine" not in line, line


# -- R5: a note the executed plan says is said once -----------------------------------------------------------------

def test_runs_notes_are_said_once_by_the_plan_it_executes(capsys, job_folder, monkeypatch, engine_answers):
    """R5: `run -- nosuch.py` said `nodeweave: note: nosuch.py is not in the workspace ...` and then the executed
    plan said it again (`note: nosuch.py ...`; a missing or shell script is refused now, a file of this machine outside the workspace is such a note); `up`'s notes and image build's wheelhouse line came twice the same
    way. The executed plan says its notes (cluster.execute), so the verb says none of them itself."""
    import nodeweave.cli.run as run_module
    import nodeweave.cluster.onbackend as onbackend

    monkeypatch.setattr(onbackend, "require_up", lambda *a, **k: None)
    monkeypatch.setattr(onbackend, "refuse_busy", lambda *a, **k: None)
    executed = []
    monkeypatch.setattr(run_module, "_execute", lambda plan, *a, **k: executed.append(plan))
    # a file of this machine outside the workspace is a note (the image may hold it); a missing script (replay11
    # C10) and a shell script (issue 43 A8: every node refuses it) are refused now
    outside = job_folder.parent / f"{job_folder.name}-prep.py"
    outside.write_text("print(1)\n")
    code, out, err = run_cli(capsys, "run", "--", str(outside))
    assert code == 0, err
    said = f"{outside} is a path of this machine outside the workspace"
    assert said not in err, err
    [plan] = executed
    assert sum(said in note for note in plan.notes) == 1, plan.notes


@pytest.mark.parametrize("path, said", [("src/nodeweave/cli/run.py", "for line in said:"),
                                        ("src/nodeweave/cli/cluster.py", "for line in said:"),
                                        ("src/nodeweave/cli/image.py", "for note in prepared.notes:")])
def test_no_verb_says_the_notes_of_the_plan_it_executes_itself(path, said):
    """R5: the members: run (but --detach, whose plan runs in the background), up, image build."""
    from cli_run import REPO

    text = (REPO / path).read_text()
    lines = [i for i, line in enumerate(text.splitlines()) if line.strip() == said]
    if path.endswith("run.py"):  # the background run's: said before it detaches
        assert len(lines) == 1 and "if detach:" in text.splitlines()[lines[0] - 1], lines
    else:
        assert not lines, lines


# -- C14: docker's exec -it named as nodeweave shell ----------------------------------------------------------------

def exec_habits():
    from nodeweave.cli.habits.othertools import ELSEWHERE

    return sorted({"-i", "-it", "--interactive", "--tty"} | {typed for verb, typed in ELSEWHERE if verb == "exec"})


@pytest.mark.parametrize("typed", exec_habits())
def test_exec_it_is_answered_with_nodeweave_shell(capsys, job_folder, typed):
    """C14: `exec -it -- bash` got `'-i' is not an option of nodeweave exec; the command and its own options go after
    --: ...`, though the command was after --; -it is docker's interactive habit, whose word is `nodeweave shell`."""
    code, out, err = run_cli(capsys, "exec", typed, "--", "bash")
    line = one_line(err)
    assert code == 2 and "`nodeweave shell` opens an interactive shell" in line, line
    assert "go after `--`" not in line, line


# -- B7: a run named by a path that is no folder is answered about that path ----------------------------------------

@pytest.mark.parametrize("words", [["runs", "show"], ["logs", "--run"], ["dashboard", "--run"],
                                   ["runs", "compare", "last"]])
@pytest.mark.parametrize("what", ["file", "file of a run", "nothing"])
def test_a_run_named_by_a_path_that_is_no_folder_is_answered_about_it(capsys, job_folder, words, what):
    """B7: `runs show /tmp/replay11-b/n0.log` (an existing file) was answered about runs/: `no runs under ... yet
    (nodeweave run makes them), so there is no run '/tmp/replay11-b/n0.log'`."""
    run = job_folder / "runs" / "20261130T140001Z-proj"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"job": "proj", "run_id": "20261130T140001Z-proj", "nodes": []}\n')
    path = {"file": job_folder / "n0.log", "file of a run": run / "node-0.log", "nothing": job_folder / "no" / "x"}[what]
    if what != "nothing":
        path.write_text("x\n")
    code, out, err = run_cli(capsys, *words, str(path))
    line = one_line(err)
    assert code == 2 and line.startswith(f"nodeweave: error: {path} "), line
    assert "no runs under" not in line and "no run '" not in line, line
    if what == "file of a run":
        assert f"of run 20261130T140001Z-proj, not a run folder; give the run's folder, {run}" in line, line


# -- B20: validate says what each node's --explain says of an elastic range without restarts ------------------------

@pytest.mark.parametrize("launcher, restarts, said", [("torchrun", "", True), ("torchrun", "  max_restarts: 2\n", False),
                                                      ("command", "", False)])
def test_validate_says_an_elastic_job_ends_at_the_first_lost_node(capsys, job_folder, launcher, restarts, said):
    """B20: `nodes: "1:2"` without launcher.max_restarts: each node's --explain said `a lost node ends the job`,
    while validate said only `torchrun admits more up to 2 as they join`."""
    (job_folder / "e.yaml").write_text(f'name: m\nimage: {{variant: cpu}}\nnodes: "1:2"\nlauncher:\n  type: {launcher}\n'
                                       f"  script: train.py\n{restarts}")
    code, out, err = run_cli(capsys, "validate", "--spec", "e.yaml")
    if launcher == "command":  # an elastic range needs torchrun: refused, no note
        assert code == 2, err
        return
    assert code == 0, err
    assert ("nodes: nnodes 1:2 without a restart count" in err and "a lost node ends the job" in err) == said, err


# -- B23: runs show -o wide shows every column ----------------------------------------------------------------------

def test_runs_show_wide_shows_what_the_table_leaves_out(capsys, job_folder):
    """B23: `runs show last -o wide` printed the table byte for byte, though --help says `wide (every column)` and
    the JSON held each node's cause and the run's env, which the table lacks."""
    run = job_folder / "runs" / "20261130T140001Z-proj"
    run.mkdir(parents=True)
    (run / "node-0.log").write_text("step 1\nTraceback (most recent call last):\nValueError: bad lr\nlast words\n")
    (run / "run.json").write_text(json.dumps({
        "job": "proj", "run_id": "20261130T140001Z-proj", "command": ["train.py"], "env": {"LR": "3e-4"},
        "summary": "1 of 1 node(s) failed", "nodes": [{"node": 0, "exit_code": 1, "log": "node-0.log",
                                                        "started": 1.0, "ended": 2.0}]}))
    code, table, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0, err
    code, wide, err = run_cli(capsys, "runs", "show", "last", "-o", "wide")
    assert code == 0, err
    assert wide != table and "LR=3e-4" in wide and "LR=3e-4" not in table, wide


# -- C1: a dry run says the real run would meet a run in progress ---------------------------------------------------

@pytest.mark.parametrize("argv", [["run", "--dry-run", "--", "train.py"], ["check", "--dry-run"],
                                  ["run", "--sweep", "X=1,2", "--dry-run", "--", "train.py"]])
def test_a_dry_run_says_the_run_in_progress_the_real_one_refuses(capsys, job_folder, monkeypatch, argv):
    """C1: with a run in progress, `run` and `check` end with exit 3 (`run ... is in progress on node-0, node-1`),
    but `run --dry-run`, `check --dry-run` and `run --sweep X=1,2 --dry-run` printed a clean plan with no word of
    it, as they say `the real run would end with exit 3: ... is not up` when the nodes are down."""
    import nodeweave.cli.habits.clusteropts as clusteropts
    import nodeweave.cluster.onbackend as onbackend

    monkeypatch.setattr(clusteropts, "first_refusal", lambda backend: None)
    monkeypatch.setattr(onbackend, "down_line", lambda *a, **k: None)
    monkeypatch.setattr(onbackend, "runs_in_progress", lambda backend, nodes: [
        (node, {"run_id": "20261130T174353Z-proj", "started": 0}) for node in nodes])
    code, out, err = run_cli(capsys, *argv)
    assert code == 3, err  # the nodes answered: certain, the real exit after the plan (walk17a A8-A10)
    verb = argv[0]
    assert f"the real {verb} would end with exit 3: run 20261130T174353Z-proj is in progress on" in out, out
