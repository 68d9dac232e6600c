"""The ninth walk, part A, rows A13..A25 (issue 43; A14 fixed on main): each row's class, one test per class, each
failing on the code before it."""

from __future__ import annotations

import json

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A18: a table cell for a value not known yet is "-", never Python's None ---------------------------------------

def _running_run(folder):
    run = folder / "runs" / "20261130T100400Z-team"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "run_id": run.name, "job": "team", "started": "2026-11-30T10:04:00Z", "ended": None, "exit_code": None,
        "summary": None, "command": ["train.py"], "nodes": [{"node": None, "exit_code": None,
                                                               "reached_as": "podman:team-0"}]}))


def test_runs_show_prints_a_dash_for_what_a_running_run_lacks(capsys, team):
    """A18: `runs show` of a run still going (run.json's ended/exit_code null) printed None in its node table."""
    _running_run(team)
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0, err
    assert "None" not in out and "│ -" in out


@pytest.mark.parametrize("live", [
    {"nodes": [{"node": None, "host": None, "state": "running"}]},
    {"ranks": [{"node": None, "rank": None, "state": None}]},
    {"node_gpus": [{"node": None, "gpus": [{"index": None, "util_ratio": 0.5}]}]},
])
def test_top_prints_a_dash_for_a_field_a_node_left_out(live):
    """A18: top's node, rank and GPU tables printed str(None) for a field /status.json left out, as runs show did."""
    from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

    from nodeweave.cluster.top import picture

    console = Console(width=200, record=True)
    console.print(picture({"job": "team", **live}, everything=True))
    assert "None" not in console.export_text()


# -- A13, A22: a hint that names a render names the one that works: its --spec, --out and --force -----------------

SPEC_B = "name: job-b\nimage:\n  variant: cpu\nnodes: 3\nlauncher:\n  script: train.py\n"


def test_image_build_compares_a_render_with_its_out_and_names_that_render(capsys, team):
    """A13: a Dockerfile rendered with --spec b.yaml --out build/job-b counted as differing by its header line, and
    the hint, `nodeweave render`, rendered the other spec into the other folder."""
    (team / "b.yaml").write_text(SPEC_B)
    assert run_cli(capsys, "render", "all", "--spec", "b.yaml", "--out", "build/job-b")[0] == 0
    build = ("image", "build", "cpu", "--spec", "b.yaml", "--context", "build/job-b", "--dry-run")
    code, out, err = run_cli(capsys, *build)
    assert code == 0, err
    assert "images/cpu/Dockerfile (matches the rendering)" in out
    with open(team / "build/job-b/images/cpu/Dockerfile", "a") as dockerfile:
        dockerfile.write("# changed\n")
    code, out, err = run_cli(capsys, *build)
    assert "`nodeweave render images --spec b.yaml --out build/job-b` refreshes it" in out, out


@pytest.mark.parametrize("case", ["unmarked", "another job"])
def test_render_check_hint_is_a_command_the_render_takes(capsys, team, case):
    """A22: `render all --check` found a stale file and told to run `render all --prune`, which then refused it
    (a file that lost its mark; a folder holding another job's render): the hint names what works."""
    if case == "unmarked":
        assert run_cli(capsys, "render", "all")[0] == 0
        (team / "images/docker-bake.json").write_text("x")
        argv = ("render", "all")
    else:
        (team / "b.yaml").write_text(SPEC_B)
        assert run_cli(capsys, "render", "all")[0] == 0
        argv = ("render", "all", "--spec", "b.yaml")
    code, _, err = run_cli(capsys, *argv, "--check")
    assert code == 4
    line = err.strip().splitlines()[-1]
    assert "stale for" in line and "--force" in line, line
    if case == "unmarked":
        assert run_cli(capsys, "render", "all", "--prune", "--force")[0] == 0
        assert run_cli(capsys, "render", "all", "--check")[0] == 0


# -- A17: Ctrl-C ends a verb that runs until stopped with 130, as it ends every other verb --------------------------

@pytest.mark.parametrize("argv", [("logs", "-f", "--run", "last"), ("dashboard", "--run", "last", "--port", "0"),
                                  ("top", "--url", "http://127.0.0.1:9")])
def test_ctrl_c_ends_a_watch_with_130(capsys, team, monkeypatch, argv):
    """A17: `logs -f`, `dashboard` and `top` stopped by Ctrl-C exited 0, which a script reads as "followed to the
    end"; the README's table says 130 for any verb interrupted by Ctrl-C."""
    import time

    import nodeweave.cluster.top as top

    _running_run(team)
    monkeypatch.setattr(top, "ask_live", lambda *a, **k: ({"job": "team", "nodes": []}, "a stand-in"))

    def ctrl_c(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", ctrl_c)
    code, _, err = run_cli(capsys, *argv)
    assert code == 130, err


# -- A15: a command of yours given to a verb that runs none is pointed to the verbs that do ----------------------

def _verbs_without_arguments():
    from cli_run import leaves

    return [" ".join(words) for words, command in leaves()
            if not any(param.param_type_name == "argument" for param in command.params)]


@pytest.mark.parametrize("verb", _verbs_without_arguments())
def test_a_command_given_to_a_verb_that_runs_none_names_run(capsys, team, verb):
    """A15: `up --run -- train.py` (and every verb taking no argument) answered only "unexpected extra argument":
    the refusal names `nodeweave run -- train.py`, as `validate nodeweave.yaml` is answered "did you mean --spec"."""
    code, _, err = run_cli(capsys, *verb.split(), "--", "train.py")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "unexpected extra argument" in line and "`nodeweave run -- train.py` starts it on the nodes" in line, line


# -- A24: --runs-dir one level too high (a project's folder) names its runs/, as one level too deep names the parent --

@pytest.mark.parametrize("argv", [("runs", "ls"), ("runs", "show", "last"), ("runs", "compare", "last"),
                                  ("logs", "--run", "last"), ("dashboard", "--run", "last", "--port", "0"),
                                  ("run", "--dry-run"), ("check", "--dry-run")])
def test_runs_dir_naming_a_project_names_its_runs(capsys, team, tmp_path_factory, argv):
    """A24: `runs show last --runs-dir OTHER` (OTHER a project, its runs in OTHER/runs) said "no runs under OTHER
    yet"; every --runs-dir, read or written, names OTHER/runs."""
    other = tmp_path_factory.mktemp("other")
    _running_run(other)
    code, _, err = run_cli(capsys, *argv, "--runs-dir", str(other))
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert f"accepted: --runs-dir {other / 'runs'}" in line, line


# -- A16: a `!` pattern asking for a credential does nothing: refused (--exclude) or said (.nodeweaveignore) ------

@pytest.mark.parametrize("pattern, credential", [("!.env", ".env"), ("!*.pem", "key.pem"), ("!.ssh/", ".ssh/"),
                                                 ("!.envrc", ".envrc")])
def test_an_exclude_reincluding_only_credentials_is_refused(capsys, team, pattern, credential):
    """A16: `sync -x '!.env'` planned as if the pattern did something; credentials go only with --include-secrets."""
    (team / ".env").write_text("TOKEN=1\n")
    (team / ".envrc").write_text("export X=1\n")
    (team / "key.pem").write_text("k\n")
    (team / ".ssh").mkdir()
    (team / ".ssh" / "id").write_text("k\n")
    code, _, err = run_cli(capsys, "sync", "--dry-run", ".", "/workspace", "--node", "podman:a", "-x", pattern)
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert "would do nothing" in line and credential in line and "--include-secrets" in line, line


def test_an_ignore_line_naming_a_credential_is_said(capsys, team):
    """A16: a `!.env` line of .nodeweaveignore (kept for every sync) is said in the plan, not refused."""
    (team / ".env").write_text("TOKEN=1\n")
    (team / ".nodeweaveignore").write_text("!.env\n")
    code, out, err = run_cli(capsys, "sync", "--dry-run", ".", "/workspace", "--node", "podman:a")
    assert "'!.env' does not send .env: credential-like, sent only with --include-secrets" in out + err, out + err


# -- A23: a file an option writes into runs/ beside the spec is never written through runs/ as a link ------------

@pytest.mark.parametrize("argv", [("bench", "--sizes", "1K", "--ops", "all_reduce", "--dry-run"),
                                  ("bench", "--sizes", "1K", "--ops", "all_reduce", "--dry-run", "--json-out",
                                   "runs/mine.json"),
                                  ("runs", "compare", "last", "--chart", "runs/chart.svg"),
                                  ("hosts", "probe", "h1", "--dry-run", "--write-hostfile", "runs/hostfile")])
def test_a_file_in_a_linked_runs_is_refused_naming_where_it_leads(capsys, team, tmp_path_factory, argv):
    """A23: bench's default --json-out (runs/nodeweave-bench.json) was written through runs/ -> a bigger disk, which
    `run` refuses (never written through a link); every file option there is refused naming the real path."""
    real = tmp_path_factory.mktemp("disk")
    (team / "runs").symlink_to(real)
    code, _, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert "symbolic link" in line and f"write it as {real}/" in line, line
    assert not list(real.iterdir())


# -- A19, A20: what reads the image's collective stack is judged on the variant the target's nodes run -------------

GPU_SPEC = "name: gpu\nimage:\n  variant: cuda12\nnodes: 2\nlauncher:\n  script: train.py\n"


def test_check_nccl_on_the_local_target_is_refused(capsys, team):
    """A20: `check --backend nccl` on a cuda12 spec planned on the local target, whose nodes run the cpu image
    (gloo only); a cpu spec got the refusal. Judged on Backend.image_variant, as run's --profile note is."""
    (team / "nodeweave.yaml").write_text(GPU_SPEC)
    code, _, err = run_cli(capsys, "check", "--dry-run", "--backend", "nccl")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "the local target's nodes run image variant cpu" in line and "NCCL runs only on GPUs" in line, line
    code, _, err = run_cli(capsys, "check", "--dry-run", "--backend", "nccl", "-t", "hosts", "--host", "a", "--host",
                           "b", "--remote-dir", "/srv/x")
    assert code == 0, err


def test_an_nccl_sweep_on_the_local_target_is_noted(capsys, team):
    """A19: `run --sweep NCCL_MAX_NCHANNELS=8,16` (make help's example) on a cuda12 spec's local target got no note,
    though its nodes run gloo."""
    (team / "nodeweave.yaml").write_text(GPU_SPEC)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", "NCCL_MAX_NCHANNELS=8,16", "--metric",
                             "samples/s ([0-9.]+)")
    assert code == 0, err
    assert "the local target's nodes run image variant cpu, which runs gloo" in out + err, out + err


# -- A21: one rule for a value that starts with - and a letter, said as what it looks like, on every option -------

def _value_options():
    from cli_run import leaves
    from nodeweave.cli.habits.swallowed import VALUES_ARE_OPTIONS, can_start_with_a_dash, takes_value

    return [(" ".join(words), max(param.opts, key=len), can_start_with_a_dash(param)) for words, command in leaves()
            for param in command.params if takes_value(param) and not set(param.opts) & set(VALUES_ARE_OPTIONS)]


@pytest.mark.parametrize("verb, option, joined", _value_options(), ids=[f"{v}-{o}" for v, o, _ in _value_options()])
def test_a_value_starting_with_a_dash_and_a_letter_is_refused_truthfully(capsys, team, verb, option, joined):
    """A21: `render compose --out -x` planned a folder named -x while `--host -oProxyCommand=x` was refused as "an
    option of `nodeweave up`" (it is none); every option that takes a value refuses a -LETTER word, saying what it
    looks like."""
    code, _, err = run_cli(capsys, *verb.split(), option, "-Zq")
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert f"{option} '-Zq': '-Zq' looks like an option (it starts with -)" in line, line
    # the joined form only where such a value can be meant, a file or folder (replay10 A21: test_replay10_mine)
    assert (f"{option}=-Zq where the value itself starts with -" in line) == joined, line


# -- A25: a spec that fills slurm: defaults to -t slurm, as a hosts or OpenShift spec defaults to its target --------

def test_a_slurm_spec_defaults_to_the_slurm_target(capsys, team):
    """A25: `up --spec examples/slurm-accelerate.yaml --dry-run` planned the local target (podman-compose on the
    login node); spec_default now gives slurm, and -t local still runs it here."""
    from nodeweave.cluster.options import ClusterOptions, spec_default
    from nodeweave.spec import load_spec

    with open(team / "nodeweave.yaml", "a") as spec:
        spec.write("slurm: {partition: gpu, account: ml}\n")
    assert spec_default(ClusterOptions(), load_spec(team / "nodeweave.yaml")).target == "slurm"
    code, out, err = run_cli(capsys, "up", "--dry-run")
    assert "take an allocation" in out and "compose" not in out, out + err
    code, out, err = run_cli(capsys, "up", "--dry-run", "-t", "local")
    assert code == 0 and "compose" in out, out + err
