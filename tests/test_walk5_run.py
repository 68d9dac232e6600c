"""walk5's findings in run, logs, runs, dashboard, top, bench, validate and the spec's env (issue 43,
/work/wt/walk5-report.md), each fixed as a class and walked here over every member this file could find, from
the CLI's own registries where there is one. Each test fails on the code before these fixes. No container is
started, nothing is probed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import JOB_SPEC as SPEC, make_job_folder

SRC = Path(__file__).resolve().parents[1] / "src" / "nodeweave"
@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- W14: every NODEWEAVE_* variable the CLI reads, set but empty, is refused the same way ---------------------

# Named in the sources outside the entrypoint but never read by the `nodeweave` command on this machine.
NOT_READ_BY_THE_CLI = {
    "NODEWEAVE_JOB_TOKEN_HOST": "set in the compose file for the nodes",
    "NODEWEAVE_MODE": "set in the pods for the entrypoint",
    "NODEWEAVE_RUN_ANNOUNCE": "written by run --detach for its own child",
    "NODEWEAVE_SYNC_BIND": "read by the sync agent on a node",
}


def test_every_variable_the_cli_names_is_in_its_registry():
    """A new `X_ENV = "NODEWEAVE_..."` outside the entrypoint joins CLI_VARIABLES (or says why it is not read)."""
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    named = set()
    for path in SRC.rglob("*.py"):
        if "entrypoint" not in path.relative_to(SRC).parts:
            named.update(re.findall(r'^[A-Z_]+ = "(NODEWEAVE_[A-Z_]+)"', path.read_text(), re.M))
    assert named - set(CLI_VARIABLES) - set(NOT_READ_BY_THE_CLI) == set()
    assert {"NODEWEAVE_IMAGE", "NODEWEAVE_ENGINE", "NODEWEAVE_SPEC", "NODEWEAVE_CACHE_DIR"} <= set(CLI_VARIABLES)


@pytest.mark.parametrize("argv", [("up", "--dry-run"), ("run", "--dry-run"), ("validate",)])
def test_a_cli_variable_set_but_empty_is_refused_naming_it(capsys, job_folder, monkeypatch, argv):
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    for variable, accepted in CLI_VARIABLES.items():
        monkeypatch.setenv(variable, " ")
        code, out, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == EXIT_USAGE and f"{variable} is set but empty: {accepted}" in line and not out, line
        monkeypatch.delenv(variable)


# -- W37, W43: what nodeweave or the launcher sets on every node is refused wherever a user gives a variable ---

# Exported by the entrypoint only when the user has not set it: the user's value is kept, so it is theirs to give.
DEFERS_TO_THE_USER = {"ACCELERATE_USE_CPU", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"}


def _exported_names(tmp_path):
    """Every variable the entrypoint's plan exports from the topology, over each launcher, fixed and elastic."""
    import json

    from cli_run import entrypoint

    names = set()
    for launcher, nodes in (("torchrun", "2"), ("torchrun", "2:3"), ("deepspeed", "2"), ("accelerate", "2"),
                            ("command", "2")):
        env = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": nodes, "MASTER_ADDR": "10.0.0.1",
               "NODEWEAVE_LAUNCHER": launcher}
        out = entrypoint("--explain", "--json", "--", "train.py", env=env, cwd=tmp_path)
        plan = json.loads(out.stdout)
        names |= {var["name"] for var in plan["env"] if var["action"] == "export" and var["source"] == "topology"}
    return names


def test_every_variable_the_plan_sets_is_refused_in_run_e_sweep_and_the_spec_env(capsys, job_folder):
    from nodeweave.entrypoint.planning import consistency

    exported = _exported_names(job_folder)
    assert {"WORLD_SIZE", "NNODES", "MASTER_PORT", "PET_NODE_RANK"} <= exported, exported
    per_process = set(consistency._worker_values(0, 2, 2, 1)) - {"NPROC_PER_NODE"}  # the launcher's, per process
    owned = (exported - DEFERS_TO_THE_USER) | per_process | {"RANK"}
    for name in sorted(owned):
        for argv in (("run", "--dry-run", "-e", f"{name}=1"), ("run", "--dry-run", "--sweep", f"{name}=1,2")):
            code, out, err = run_cli(capsys, *argv)
            line = one_line(err)
            assert code == EXIT_USAGE and f"{name} is" in line and ("accepted: any other variable" in line
                                                                    or "this run's own flag sets it" in line), line
        (job_folder / "s.yaml").write_text(SPEC + f"env: {{{name}: '1'}}\n")
        code, out, err = run_cli(capsys, "validate", "--spec", "s.yaml")
        line = one_line(err)
        assert code == EXIT_USAGE and f"env.{name}: {name} is" in line, line


@pytest.mark.parametrize("path, refused", [("/opt/mytools", True), ("/opt/mytools:/opt/venv/bin", True),
                                           ("/opt/mytools:$PATH", True),
                                           ("/opt/mytools:/opt/venv/bin:/usr/local/bin:/usr/bin:/bin", False)])
def test_a_path_that_hides_the_entrypoint_is_refused_in_run_e_and_the_spec_env(capsys, job_folder, path, refused):
    code, out, err = run_cli(capsys, "run", "--dry-run", "-e", f"PATH={path}")
    if refused:
        line = one_line(err)
        assert code == EXIT_USAGE and "leaves out" in line and "launcher.setup: export PATH" in line, line
    else:
        assert f"env PATH={path} nodeweave-entrypoint" in out, out + err
    (job_folder / "s.yaml").write_text(SPEC + f"env: {{PATH: '{path}'}}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "s.yaml")
    assert code == (EXIT_USAGE if refused else 0), out + err


# -- W20: an item given twice (or empty) in any option's comma list is refused, never collapsed or dropped -------

# flag -> (two spellings of one item, a list with an empty item); a new option whose help names a list needs a row
LIST_SAMPLES = {"--ops": ("all_reduce,all-reduce", "all_reduce,,all_gather"), "--sizes": ("1K,1024", "1K,,2K"),
                "--node": ("0,0", "0,,1")}


def _list_options():
    from cli_run import leaves

    for words, command in leaves():
        for param in command.params:
            if re.search(r"comma list|or a list", getattr(param, "help", "") or "") and param.opts[0].startswith("-"):
                yield words, max(param.opts, key=len)


def test_every_comma_list_option_refuses_an_item_twice_and_an_empty_item(capsys, job_folder):
    found = list(_list_options())
    assert {("bench", "--ops"), ("bench", "--sizes"), ("status", "--node")} <= {(w[0], f) for w, f in found}, found
    for words, flag in found:
        twice, empty = LIST_SAMPLES[flag]
        tail = ["--dry-run"] if words == ["bench"] else (["--", "true"] if words == ["exec"] else [])
        code, out, err = run_cli(capsys, *words, flag, twice, *tail)
        line = one_line(err)
        assert code == EXIT_USAGE and f"{flag} " in line and "is given 2 times; give each" in line, (words, line)
        code, out, err = run_cli(capsys, *words, flag, empty, *tail)
        line = one_line(err)
        assert code == EXIT_USAGE and "holds an empty item; accepted:" in line, (words, line)


# -- W26, W31: a flag that does nothing with another on one verb (--run reads a folder; top --once reads once) ----

FLAG_VALUES = {"--host": "gpu01", "--hosts-file": "hosts.txt", "--remote-dir": "/srv/x", "--namespace": "ns",
               "--kube-cli": "oc", "--kube-context": "c", "--overlay": "base", "--ssh-option": "Port=22",
               "--engine": "podman", "--node": "0", "--url": "http://127.0.0.1:9", "--target": "local",
               "--run": "last", "--interval": "5", "--runs-dir": "runs", "--metric": "x ([0-9]+)"}


def _per_verb_cases():
    from cli_run import leaves
    from nodeweave.cli.habits.conflicts import EXCLUSIVE_ON, IDLE_WITH_ON, NEEDS_ON

    def given(flag):
        return [flag, FLAG_VALUES[flag]] if flag in FLAG_VALUES else [flag]

    cases = []
    for words, command in leaves():
        flags = {name for p in command.params for name in p.opts if name.startswith("--")}
        for (first, second) in [*EXCLUSIVE_ON.get(command.name, {}), *IDLE_WITH_ON.get(command.name, {})]:
            if {first, second} <= flags:
                cases.append((words, [*given(first), *given(second)], f"{first} ", (first, second)))
        for flag, (needed, _) in NEEDS_ON.get(command.name, {}).items():
            cases.append((words, given(flag), f"{flag} does nothing without {needed}", (flag, needed)))
    return cases


def test_every_per_verb_flag_that_does_nothing_is_refused_before_anything_is_read(capsys, job_folder):
    cases = _per_verb_cases()
    said = {(words[0], *pair) for words, _, _, pair in cases}
    assert {("dashboard", "--interval", "--run"), ("logs", "--container", "--run"), ("top", "--interval", "--once"),
            ("logs", "--target", "--run"), ("dashboard", "--url", "--run")} <= said, said
    (job_folder / "runs").mkdir()
    (job_folder / "hosts.txt").write_text("gpu01\ngpu02\n")
    for words, argv, words_said, _ in cases:
        tail = ["--", "train.py"] if words[0] in ("run", "exec") else ["a", "b"] if words[-1] == "compare" else []
        code, out, err = run_cli(capsys, *words, *argv, *tail)
        line = one_line(err)
        assert code == EXIT_USAGE and words_said in line and ("give one of them" in line or "leave" in line), line


# -- W27: --rank that no line is marked with is said (exit 2, naming the ranks there), never an empty answer -------


def _run_folder(root: Path, name: str, lines: str, ended: bool = True) -> Path:
    import json

    folder = root / "runs" / name
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T12:00:00Z" if ended else None}))
    (folder / "node-0.log").write_text(lines)
    return folder


@pytest.mark.parametrize("follow", [(), ("-f",)])  # following a run that has ended reads every line too
def test_logs_rank_that_no_line_is_marked_with_is_refused_naming_the_ranks(capsys, job_folder, follow):
    _run_folder(job_folder, "20261129T120000Z-proj", "[rank0]: loss 1\n[rank1]: loss 1\nplain line\n")
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", "5", *follow)
    line = one_line(err)
    assert code == EXIT_USAGE and "no line of these logs is marked with rank 5" in line and "0-1" in line, line
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", "1", *follow)
    assert code == 0 and "r1] loss 1" in out and "r0]" not in out, out + err


def test_logs_rank_on_lines_no_launcher_marked_says_so(capsys, job_folder):
    _run_folder(job_folder, "20261129T120000Z-proj", "epoch 0 samples/s 12.5\n")
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", "0")
    line = one_line(err)
    assert code == EXIT_USAGE and "no line of these logs is marked with a rank" in line, line


# -- W25: logs -f on a run that never recorded its end says what it waits for --------------------------------------


def test_logs_follow_on_a_run_without_an_end_says_what_it_waits_for(job_folder):
    import subprocess

    from cli_run import NODEWEAVE, popen

    _run_folder(job_folder, "20261129T120000Z-proj", "epoch 0\n", ended=False)
    proc = popen([*NODEWEAVE, "logs", "--run", "last", "-f"], cwd=job_folder, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE)
    try:
        said = proc.stderr.readline()
    finally:
        proc.kill()
        proc.communicate()
    assert "following 20261129T120000Z-proj until its run.json records the end" in said, said
    assert "a run cut off" in said and "Ctrl-C" in said, said


# -- W15: a note a verb says about the spec is in its -o json document too (an empty notes list: nothing to know) --


@pytest.mark.parametrize("argv", [("validate",), ("up", "--dry-run"), ("run", "--dry-run")])
def test_the_missing_script_note_is_in_every_verbs_json_document(capsys, job_folder, argv):
    import json

    (job_folder / "nodeweave.yaml").write_text(SPEC.replace("train.py", "trian.py"))
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    notes = json.loads(out)["notes"]
    # up reads nothing on nodes: its certain refusal ends its dry run with the real exit 2 (walk17a A8-A10)
    assert code == (2 if argv[0] == "up" else 0), (notes, err)
    assert any("trian.py is not in the workspace" in note for note in notes), (notes, err)
    (job_folder / "nodeweave.yaml").write_text(SPEC)
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    assert not any("not in the workspace" in note for note in json.loads(out)["notes"]), out


# -- W29: a dry run never changes the command silently: `python train.py` is said to run as `train.py` -------------


def test_an_interpreter_left_out_of_the_command_is_said_on_every_launcher(capsys, job_folder):
    from nodeweave.spec.model import LAUNCHERS

    for launcher in LAUNCHERS:
        for python in ("python", "python3", "/usr/bin/python3.11"):
            code, out, err = run_cli(capsys, "run", "--dry-run", "--launcher", launcher, "--", python, "train.py")
            assert code == 0, err
            if launcher == "command":  # runs what it is given, unchanged: nothing to say
                assert f"-- {python} train.py" in out and "left out" not in out + err, out
                continue
            assert f"# note: `{python} train.py` runs as `train.py`: {launcher} starts" in out, out
            assert f"{python} train.py" not in out.replace(f"`{python} train.py`", ""), out
        code, out, err = run_cli(capsys, "run", "--dry-run", "--launcher", launcher, "--", "train.py")
        assert "left out" not in out + err, out


# -- W21: a tie names no single best, and a run that did not end ok is never ranked -------------------------------


def _ranked_run(root: Path, name: str, rate: float, ended: bool, code: int = 0) -> None:
    import json

    folder = root / "runs" / name
    folder.mkdir(parents=True)
    record = {"job": "proj", "run_id": name, "nodes": [{"node": "node-0"}]}
    if ended:
        record.update(ended="2026-11-29T12:00:00Z", exit_code=code, seconds=1.0)
    (folder / "run.json").write_text(json.dumps(record))
    (folder / "node-0.log").write_text(f"samples/s {rate}\n")


@pytest.mark.parametrize("lower", [(), ("--lower-is-better",)])
def test_runs_compare_ranks_only_runs_that_ended_ok_and_names_no_single_best_in_a_tie(capsys, job_folder, lower):
    import json

    runs = {"20261129T100000Z-proj": (12.5, True, 0), "20261129T110000Z-proj": (12.5, True, 0),
            "20261129T120000Z-proj": (99.0 if not lower else 1.0, False, 0),  # best by number, but never ended
            "20261129T130000Z-proj": (98.0 if not lower else 2.0, True, 1)}  # failed
    for name, (rate, ended, code) in runs.items():
        _ranked_run(job_folder, name, rate, ended, code)
    argv = ("runs", "compare", *runs, "--metric", "samples/s ([0-9.]+)", *lower)
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["best"] is None and data["leaders"] == list(runs)[:2], data
    assert "2 runs tie for the best mean" in err and "not ranked" in err and "20261129T120000Z-proj" in err, err
    code, out, err = run_cli(capsys, *argv)
    assert out.count("12.5 (tied best)") == 2 and "(best)" not in out and out.count("(not ranked)") == 2, out
    (job_folder / "runs" / "20261129T110000Z-proj" / "node-0.log").write_text("samples/s 12\n")
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    assert json.loads(out)["best"] == ("20261129T100000Z-proj" if not lower else "20261129T110000Z-proj"), out


def test_a_sweep_table_marks_every_tied_point_and_no_failed_one():
    import io

    from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

    from nodeweave.cluster.sweep import sweep_table

    rows = [{"point": {"N": n}, "exit_code": code, "seconds": 1.0, "metric": m, "per_node": [m], "folder": n}
            for n, code, m in (("8", 0, 90.0), ("16", 0, 90.0), ("32", 1, 99.0))]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(sweep_table(rows, "x ([0-9]+)"))
    text = console.file.getvalue()
    assert text.count("90 (tied best)") == 2 and "99 (" not in text, text


# -- W1: `$VAR` of the run's own variables in the command is said to reach the script as typed -------------------


@pytest.mark.parametrize("given, word", [(("--sweep", "LR=1e-3,3e-4"), "$LR"), (("-e", "LR=1e-3"), "${LR}"),
                                         (("--sweep", "LR=1,2"), "--lr=$LR")])
def test_a_run_variable_written_in_the_command_is_noted_as_passed_literally(capsys, job_folder, given, word):
    import json

    code, out, err = run_cli(capsys, "run", "--dry-run", *given, "--", "train.py", "--lr", word)
    assert code == 0 and "in the command reaches the script as typed: no shell or template reads the command" in out, out + err
    assert "os.environ['LR']" in out, out
    code, out, err = run_cli(capsys, "run", "--dry-run", *given, "-o", "json", "--", "train.py", "--lr", word)
    assert any("reaches the script as typed" in note for note in json.loads(out)["notes"]), out
    code, out, err = run_cli(capsys, "run", "--dry-run", *given, "--", "train.py", "--home", "$HOME")
    assert "reaches the script as typed" not in out + err, out  # not a variable of this run: nothing said


# -- W74: runs compare/show judge their options as run does, before anything is printed ---------------------------


def test_runs_compare_and_show_judge_their_metric_options_before_any_output(capsys, job_folder):
    _ranked_run(job_folder, "20261129T100000Z-proj", 1.0, True)
    _ranked_run(job_folder, "20261129T110000Z-proj", 2.0, True)
    code, out, err = run_cli(capsys, "runs", "compare", "20261129T10", "20261129T11", "--lower-is-better")
    line = one_line(err)
    assert code == EXIT_USAGE and "--lower-is-better does nothing without --metric" in line and not out, line
    code, out, err = run_cli(capsys, "runs", "show", "last", "--metric", "x")
    line = one_line(err)
    assert code == EXIT_USAGE and "--metric 'x' has no group" in line and not out, out + err


# -- W56: a dry run says what --detach makes the real run do ------------------------------------------------------


@pytest.mark.parametrize("sweep, prints", [((), "prints the run's id"), (("--sweep", "A=1,2"), "prints the sweep's id")])
def test_a_detached_dry_run_says_what_the_real_run_prints_and_how_to_follow_it(capsys, job_folder, sweep, prints):
    code, out, err = run_cli(capsys, "run", "--dry-run", "--detach", *sweep)
    assert code == 0 and f"# note: --detach: the real run goes to the background and {prints}" in out, out + err
    assert "`nodeweave logs -f --run ID`" in out and "`nodeweave stop`" in out, out
    code, out, err = run_cli(capsys, "run", "--dry-run", *sweep)
    assert "--detach" not in out, out


# -- W69: a --runs-dir a run writes into is never a system folder, a kernel file system or nodeweave's own tree ---


def test_every_runs_dir_a_verb_writes_refuses_system_kernel_and_nodeweave_folders(capsys, job_folder):
    from cli_run import leaves

    writers = [words for words, command in leaves()  # the verbs whose --runs-dir takes the run folders they make
               for p in command.params if "--runs-dir" in p.opts and p.callback.__name__ == "runs_folder_written"]
    assert ["run"] in writers and ["check"] in writers, writers
    (job_folder / "images").mkdir()
    (job_folder / ".nodeweave").mkdir()
    for words in writers:
        for folder, why in (("/", "a system folder"), ("/etc", "a system folder"), ("/usr/lib", "a system folder"),
                            ("/proc", "kernel file system"), ("/sys/x", "kernel file system"),
                            (".nodeweave", "nodeweave's own state"), ("images/x", "a tree `nodeweave render` writes")):
            code, out, err = run_cli(capsys, *words, "--dry-run", "--runs-dir", folder)
            line = one_line(err)
            assert code == EXIT_USAGE and f"--runs-dir {folder}:" in line and why in line, (words, line)
        code, out, err = run_cli(capsys, *words, "--dry-run", "--runs-dir", str(job_folder / "mine"))
        assert "--runs-dir" not in err, err


# -- W50: run --profile: the dry run refuses what every node refuses, and says a profiler the variant cannot hold ---


def test_every_profiler_output_option_is_refused_by_the_dry_run_as_the_node_refuses_it(capsys, job_folder):
    from nodeweave.entrypoint.running.profile import OUTPUT_OPTIONS

    for tool, options in OUTPUT_OPTIONS.items():
        for option in options:
            code, out, err = run_cli(capsys, "run", "--dry-run", "--profile", tool, "--profile-options",
                                     f"--stats=true {option}=x")
            line = one_line(err)
            assert code == EXIT_USAGE and f"sets {tool}'s output" in line and not out, line


def test_a_profiler_for_another_vendor_than_the_variant_is_noted(capsys, job_folder):
    from nodeweave.catalogue import VARIANTS
    from nodeweave.cli.run import PROFILER_VENDOR

    for variant, row in VARIANTS.items():
        (job_folder / "nodeweave.yaml").write_text(SPEC.replace("variant: cpu", f"variant: {variant}"))
        for tool, vendor in PROFILER_VENDOR.items():
            # a target whose nodes run the spec's variant (the local one runs cpu: tests/test_walk6_profile.py)
            code, out, err = run_cli(capsys, "run", "-t", "kubernetes", "--dry-run", "--profile", tool)
            said = (f"--profile {tool} traces {vendor} GPUs, and the kubernetes target's nodes run image variant "
                    f"{variant}, built for")
            assert code == 0 and (said in out) == (row.vendor != vendor), (variant, tool, out)


# -- W75, W82: what this machine or the variant cannot run: bench --backend nccl without a GPU, NCCL_* over gloo ---


@pytest.fixture
def no_gpu(monkeypatch):
    import nodeweave.entrypoint as entrypoint_package

    real = entrypoint_package.detect

    def without_gpus(*args, **kwargs):
        node = real(*args, **kwargs)
        node.gpus.count = 0
        return node

    monkeypatch.setattr(entrypoint_package, "detect", without_gpus)


@pytest.mark.parametrize("argv, says", [
    (("--backend", "nccl"), "--backend nccl: no GPU here"),
    (("--sweep", "NCCL_ALGO=Ring,Tree"), "--sweep NCCL_ALGO: no GPU here, so the launches run gloo"),
    (("--sweep", "RCCL_THREADS_PER_BLOCK=256,512"), "--sweep RCCL_THREADS_PER_BLOCK: no GPU here"),
    (("--backend", "gloo", "--sweep", "NCCL_ALGO=Ring,Tree"), "--backend gloo reads no NCCL_*/RCCL_* variable"),
])
def test_bench_refuses_what_this_machine_cannot_run_before_any_launch(capsys, job_folder, no_gpu, argv, says):
    code, out, err = run_cli(capsys, "bench", "--dry-run", *argv)
    lines = [line for line in err.splitlines() if "error" in line]
    assert code == EXIT_USAGE and len(lines) == 1 and says in lines[0] and not out, out + err


def test_bench_on_gloo_still_sweeps_what_gloo_reads(capsys, job_folder, no_gpu):
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--sweep", "GLOO_SOCKET_IFNAME=lo,eth0")
    assert code == 0 and "GLOO_SOCKET_IFNAME=lo" in out, out + err


def test_a_run_sweep_of_variables_the_variants_library_never_reads_is_noted(capsys, job_folder):
    from nodeweave.catalogue import VARIANTS

    for variant, row in VARIANTS.items():
        (job_folder / "nodeweave.yaml").write_text(SPEC.replace("variant: cpu", f"variant: {variant}"))
        for name in ("NCCL_MAX_NCHANNELS", "RCCL_THREADS_PER_BLOCK"):
            # on bare hosts, whose nodes run the spec's variant (the local target's run cpu whatever it builds:
            # every such sweep is inert there, walk9 A19)
            code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", f"{name}=8,16", "-t", "hosts", "--host",
                                     "a", "--host", "b", "--remote-dir", "/srv/x")
            inert = row.vendor == "cpu" or (row.vendor == "nvidia" and name.startswith("RCCL_"))
            assert code == 0 and ("no point of this sweep" in out) == inert, (variant, name, out, err)
            code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", f"{name}=8,16")
            assert code == 0 and "no point of this sweep" in out, (variant, name, out, err)
