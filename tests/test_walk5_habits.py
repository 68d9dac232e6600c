"""walk5's findings on CLI habits across verbs (issue 43, /work/wt/walk5-report.md rows W18, W32, W54, W63, W64,
W80, W81), each fixed as a class and walked here over the CLI's own registries, so a new verb or flag is covered
too. Each test fails on the main before these fixes. No container is started, nothing is probed.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def verb_options(verb: str) -> "set[str]":
    """Every option spelling ``verb`` takes, read from the command line's own registry."""
    import typer.main

    from nodeweave.cli import app

    command = typer.main.get_command(app).get_command(None, verb)
    return {name for param in getattr(command, "params", []) for name in getattr(param, "opts", [])}


def reach_verbs() -> "list[str]":
    """The verbs that take the cluster's reach flags (clusteropts.REACH_FLAGS), from the verb registry."""
    from nodeweave.cli import VERBS
    from nodeweave.cli.habits.clusteropts import REACH_FLAGS

    flags = {option.param_decls[0] for _, _, option in REACH_FLAGS}
    return [verb for verb in VERBS if flags <= verb_options(verb)]


# A value each reach flag's own check refuses (or, for --hosts-file, a file that cannot be read): before the fix
# these were the refusal, though the flag did nothing for the target given.
BAD_VALUE = {"--engine": "bogus", "--host": "bad_host!", "--hosts-file": "/nonexistent/hosts",
             "--remote-dir": "/srv", "--namespace": "BAD_NS", "--kube-cli": "bogus", "--kube-context": "a b",
             "--overlay": "/abs", "--ssh-option": "bad"}


TAIL = {"exec": ("--", "true"), "doctor": ("--cluster",)}  # what a verb needs besides its flags (doctor reaches
# the nodes only with --cluster: walk13 A8)


def idle_cases():
    from nodeweave.cluster.options import FLAG_TARGETS, TARGETS

    for flag, targets in FLAG_TARGETS.values():
        for target in TARGETS:
            if target not in targets:
                yield flag, target


# -- W18: a flag that does nothing for the target is refused for that reason first ------------------------------


def test_reach_verbs_are_found():
    assert {"up", "down", "status", "logs", "run", "exec", "check", "stop", "shell", "top",
            "dashboard"} <= set(reach_verbs())


@pytest.mark.parametrize("verb", reach_verbs())
def test_an_idle_reach_flag_is_refused_before_its_value_is_judged(capsys, team, verb):
    """`up -t kubernetes --remote-dir /srv` said /srv is a system folder, and `--hosts-file nodeweave.yaml` read the
    spec as a hosts file: every reach flag of every verb, for every target it does nothing for, with a value its
    own check would refuse, is refused as idle (exit 2), naming the flag and the target."""
    from nodeweave.cluster.options import FLAG_TARGETS, FLAG_VERBS

    assert {flag for flag, _ in FLAG_TARGETS.values()} == set(BAD_VALUE)
    idle_here = {flag for flag, verbs, _ in FLAG_VERBS.values() if verb not in verbs}  # walk10 A10: whatever target
    for flag, target in idle_cases():
        code, out, err = run_cli(capsys, verb, "--target", target, flag, BAD_VALUE[flag], *TAIL.get(verb, ()))
        line = one_line(err)
        said = f"{flag} does nothing for {verb} (" if flag in idle_here else f"{flag} does nothing for target {target}"
        assert code == EXIT_USAGE and line.startswith(f"nodeweave: error: {said}"), (verb, flag, target, line)
        assert not (team / ".nodeweave").exists()


def test_up_image_for_a_target_that_picks_no_image_is_idle_before_it_is_judged(capsys, team):
    code, _, err = run_cli(capsys, "up", "--target", "slurm", "--image", "BAD IMG", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "--image does nothing for target slurm" in line, line
    code, _, err = run_cli(capsys, "up", "--target", "local", "--image", "BAD IMG", "--dry-run")
    assert code == EXIT_USAGE and "--image 'BAD IMG' is not accepted" in one_line(err)


@pytest.mark.parametrize("verb, what", [(("hosts", "probe"), "hosts"), (("sync",), "targets")])
@pytest.mark.parametrize("argv, says", [
    (("--node", "ssh:gpu01", "--namespace", "BAD_NS"), "--namespace BAD_NS does nothing for ssh"),
    (("--node", "ssh:gpu01", "--container", "a b"), "--container a b does nothing for ssh"),
    (("--hosts-file", "/nonexistent/hosts", "--namespace", "n"), "--namespace n does nothing for ssh"),
    (("--node", "pod:x", "--ssh-option", "bad"), "--ssh-option bad does nothing for kubectl"),
])
def test_nodes_named_directly_refuse_an_idle_transport_flag_before_reading_or_judging(capsys, team, verb, what,
                                                                                      argv, says):
    """hosts probe and sync's direct targets (one rule, habits.reachkinds): a pod flag for no pod, --ssh-option for
    no ssh host, refused by the nodes' kinds before a value is judged or the hosts file read (sync dropped them
    without a word)."""
    code, _, err = run_cli(capsys, *verb, *argv, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"{says} {what}" in line, line


def test_sync_direct_targets_still_take_their_own_flags(capsys, team):
    code, out, err = run_cli(capsys, "sync", "--node", "pod:x", "--namespace", "n", "--dry-run")
    assert code == 0 and "pod:n/x" in out, err
    code, out, err = run_cli(capsys, "sync", "--node", "ssh:gpu01", "--ssh-option", "Port=22", ".", "/data/x",
                             "--dry-run")
    assert code == 0 and "ssh:gpu01" in out, err


def test_the_flags_still_work_for_their_own_target(capsys, team):
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, "up", "--hosts-file", "hosts.txt", "--remote-dir", "/data/team", "--dry-run")
    assert code == 0 and "gpu01" in out and "gpu02" in out, err
    code, _, err = run_cli(capsys, "up", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/srv",
                           "--dry-run")
    assert code == EXIT_USAGE and "--remote-dir '/srv' is not accepted" in one_line(err)
    code, _, err = run_cli(capsys, "up", "--hosts-file", "/nonexistent/hosts", "--dry-run")
    assert code == EXIT_USAGE and "hosts file /nonexistent/hosts: cannot read it" in one_line(err)


# -- W54: the options a verb takes before it (`nodeweave -o json status`) complete their values there too ---------


def complete(cwd, line: str) -> "list[str]":
    """What bash is offered for the last word of ``line`` (click's completion, the real program)."""
    import cli_run

    env = {"PATH": "/usr/bin:/bin", "_NODEWEAVE_COMPLETE": "complete_bash", "COMP_WORDS": line,
           "COMP_CWORD": str(len(line.split(" ")) - 1)}
    return cli_run.run(cli_run.PROGRAM, env=env, cwd=cwd, timeout=60).stdout.split()


def test_every_option_typed_before_the_verb_completes_as_after_it(team):
    """`nodeweave -o <TAB>` offered the verbs: each option the root moves after the verb (VERB_OPTIONS_WITH_VALUE,
    VERB_FLAGS) is offered what `status OPTION <TAB>` is, and after its value (or a flag) the verbs come."""
    from nodeweave.cli import VERB_FLAGS, VERB_OPTIONS_WITH_VALUE, VERBS

    verbs = [name for name, verb in VERBS.items() if not verb.hidden]
    for option in VERB_OPTIONS_WITH_VALUE:
        after = complete(team, f"nodeweave status {option} ")
        assert complete(team, f"nodeweave {option} ") == after, option  # name too: `nodeweave -o name status`
        assert complete(team, f"nodeweave {option} x ") == verbs, option
    assert complete(team, "nodeweave -o j") == ["json"]
    for flag in VERB_FLAGS:
        assert complete(team, f"nodeweave {flag} st") == ["status", "stop"], flag
    assert complete(team, "nodeweave -o json status --tar") == ["--target"]
    assert "-o" in complete(team, "nodeweave -") and "--json" in complete(team, "nodeweave --")  # walk12a A2


def test_the_root_help_does_not_list_the_verbs_options(capsys):
    """Now: they are listed, each marked as the verb's own option the root takes before it (walk12a A2: the root
    took them and its help did not say so)."""
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and all(option in out for option in ("--output", "--spec", "--json")), out
    assert "the verb's option" in out, out


# -- W63, W64: a doctor flag that does nothing in --cluster's or --capture's mode is refused -----------------------


def doctor_value(flag: str, tmp_path) -> "list[str]":
    """A value each of doctor's own flags takes (a flag takes none)."""
    values = {"--sysroot": [str(tmp_path)], "--spec": ["nodeweave.yaml"], "--node": ["0"], "--on": ["podman:x"],
              "--capture": [str(tmp_path / "capture-here")], "--output": ["json"], "-o": ["json"],
              # the reach flags --cluster takes (walk13 A8), each with a value its own check accepts
              "--target": ["local"], "-t": ["local"], "--engine": ["podman"], "--host": ["gpu01"],
              "--hosts-file": [str(tmp_path / "nodeweave.yaml")], "--remote-dir": ["/srv/x"],
              "--namespace": ["ml"], "-n": ["ml"], "--kube-cli": ["kubectl"], "--kube-context": ["ctx"],
              "--ssh-option": ["BatchMode=yes"], "--overlay": ["gpu"]}
    return [flag, *values.get(flag, [])]


def test_every_doctor_flag_is_read_by_the_mode_or_refused_there(capsys, team):
    """`doctor --cluster --sysroot DIR` and `--capture DIR --bench` were dropped without a word: every option of
    doctor (from its own registry) given with --cluster or --capture is either one that mode reads or refused,
    exit 2, naming the flag and the mode; nothing is captured or asked."""
    from nodeweave.cli.doctor import MODES

    every_mode = {"--output", "-o", "--json", "--dry-run", "--help", "-h"}
    flags = {flag for flag in verb_options("doctor") if flag.startswith("--") or flag == "-o"} - every_mode
    for mode, (_, reads) in MODES.items():
        for flag in sorted(flags - {mode} - set(reads)):
            code, out, err = run_cli(capsys, "doctor", *doctor_value(mode, team), *doctor_value(flag, team),
                                     "--dry-run")
            line = one_line(err)
            pairs = {(flag, mode), (mode, flag)} if flag in MODES else {(flag, mode)}  # two modes: either way
            idle = line.startswith(f"nodeweave: error: {flag} does nothing for doctor (")  # in no mode (--overlay)
            assert code == EXIT_USAGE and (idle or any(line.startswith(f"nodeweave: error: {a} does nothing with "
                                                                       f"{b}: ") for a, b in pairs)), (mode, flag, line)
            assert not out and not (team / "capture-here").exists()


def test_doctor_capture_prints_its_summary_as_data_and_says_the_gpus_in_words(capsys, team):
    import json

    code, out, err = run_cli(capsys, "doctor", "--capture", str(team / "cap"), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "nodeweave.doctor.capture/1" and data["folder"] == str(team / "cap")
    assert data["paths_read"] > 0 and "x none)" not in err and "0 x" not in err
    assert "(no GPU found)" in err or "GPU" in err, err
    code, out, err = run_cli(capsys, "doctor", "--capture", str(team / "cap2"))
    assert code == 0 and "Read it back with nodeweave doctor --sysroot" in out and not err, err


def test_doctor_capture_dry_run_refuses_what_the_real_one_refuses(capsys, team):
    (team / "full").mkdir()
    (team / "full" / "x").write_text("x")
    code, _, err = run_cli(capsys, "doctor", "--capture", str(team / "full"), "--dry-run")
    assert code == EXIT_USAGE and "is not empty" in one_line(err)
    code, out, _ = run_cli(capsys, "doctor", "--capture", str(team / "new"), "--dry-run")
    assert code == 0 and "would copy the files detection reads" in out and not (team / "new").exists()


@pytest.mark.parametrize("text, words", [("0 x none", "no GPU found"), ("1 x NVIDIA H200", "1 GPU (NVIDIA H200)"),
                                         ("8 x AMD Instinct MI300X", "8 GPUs (AMD Instinct MI300X)")])
def test_the_capture_counts_gpus_in_words(text, words):
    from nodeweave.cli.doctor import gpus_in_words

    assert gpus_in_words(text) == words


# -- W80, W81: one rule for a dry run of a write that needs --force, on every verb that has both ------------------


def force_cases(team):
    """verb words -> (arguments naming the existing file, what the forced dry run says), each with the file made."""
    (team / "hostfile").write_text("gpu01 slots=8\n")
    (team / "requirements.txt").write_text("numpy==1.26.4\n")
    (team / "base.json").write_text('{"schema": "nodeweave.bench/1", "sweep": [], "ranking": [], "runs": []}\n')
    return {"init": ((), "the real init replaces nodeweave.yaml (--force)"),
            # bench's earlier result (replay11 A27); the real one is refused before anything runs
            "bench": (("--sizes", "1K", "--iters", "1", "--json-out", "base.json"),
                      "replaces the existing file (--force)"),
            "hosts probe": (("--node", "gpu01", "--write-hostfile", "hostfile"),
                            "replaces the existing file (--force)"),
            "render": (("compose",), "changed")}


def test_every_dry_run_of_a_forced_write_refuses_as_the_real_run_and_shows_the_forced_plan(capsys, team):
    """`init --dry-run` over an existing spec printed a spec and exited 0 while `init` refused it; `init --dry-run
    --force` was refused while `hosts probe --dry-run --force` planned the write. Every verb with --force and
    --dry-run (from the command registry): without --force its dry run is refused with the real run's line, exit 2;
    with --force it shows the plan that replaces the file, exit 0, writing nothing."""
    from cli_run import leaves

    cases = force_cases(team)
    both = {" ".join(words) for words, command in leaves()
            if {"--force", "--dry-run"} <= {o for p in command.params for o in getattr(p, "opts", [])}}
    # image build's --force replaces an engine's image another folder built: its refusal needs a real engine's
    # image, and tests/test_walk16_fix18b.py drives it (and its dry run) on podman
    assert both - {"image build"} == set(cases)
    assert run_cli(capsys, "render", "compose")[0] == 0
    mine = next(p for p in (team / "compose").rglob("*") if p.is_file())
    mine.write_text("my own edit\n")
    for verb, (argv, forced) in cases.items():
        before = {p: p.read_bytes() for p in team.rglob("*") if p.is_file()}
        real = run_cli(capsys, *verb.split(), *argv)
        dry = run_cli(capsys, *verb.split(), *argv, "--dry-run")
        assert real[0] == dry[0] == EXIT_USAGE, (verb, real, dry)
        errors = [[line for line in said[2].splitlines() if line.startswith("nodeweave: error: ")]
                  for said in (real, dry)]
        assert len(errors[1]) == 1 and errors[0] == errors[1], (verb, real[2], dry[2])
        code, out, err = run_cli(capsys, *verb.split(), *argv, "--dry-run", "--force")
        assert code == 0 and forced in out + err, (verb, out, err)
        assert before == {p: p.read_bytes() for p in team.rglob("*") if p.is_file()}, verb


# -- W32: up's refusals of --check name only what is wrong on the line typed ---------------------------------------


@pytest.mark.parametrize("mode", [(), ("--hold",), ("--run",)])
@pytest.mark.parametrize("wait", [(), ("--no-wait",), ("--wait",)])
def test_up_check_refusals_add_only_what_is_missing_and_drop_only_what_was_typed(capsys, team, mode, wait):
    """`up --hold --no-wait --check` said "add --hold" with --hold on the line; `up --run --check` said "add --hold"
    beside the --run it must replace. Every combination: a flag the refusal says to add is not on the line, one it
    says to leave out or replace is."""
    import re

    argv = ["up", *mode, *wait, "--check", "--dry-run"]
    code, _, err = run_cli(capsys, *argv)
    if code == 0:
        assert mode == ("--hold",) and wait != ("--no-wait",)
        return
    line = one_line(err)
    assert code == EXIT_USAGE, line
    opposite = {"--hold": "--run", "--run": "--hold", "--wait": "--no-wait", "--no-wait": "--wait"}
    for added in re.findall(r"add (--[\w-]+)", line):  # nor its other side: that one is to be replaced
        assert added not in argv and opposite.get(added) not in argv, (argv, line)
    for dropped in re.findall(r"(?:leave out|in place of) (--[\w-]+)", line):
        assert dropped in argv, (argv, line)
    assert re.search(r"add --|leave out --|in place of --", line), line
