"""walk3's findings on the cluster verbs' flags and dry runs (issue 43, /work/wt/walk3-report.md rows F9 ...),
each fixed as a class. Each test fails on the main before these fixes. No container is started: what a node would
do is asked of the real entrypoint, on the argv the plan prints and the environment the rendered files give it.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

import cli_run
from cli_run import in_process as run_cli, one_line
from team_folder import SPEC, make_team
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)



@pytest.fixture
def team(tmp_path, monkeypatch):
    team_dir = make_team(tmp_path, monkeypatch)
    return team_dir


# -- F9: run --nodes N / check --node plan N nodes on the node itself, whatever the container's own count says --


def _entrypoint_call(argv):
    """(the variables in front, the entrypoint's arguments) of one node's planned argv: the exec client's words
    up to ``nodeweave-entrypoint`` (an ssh client's remote command is one shell string, read as the shell would)."""
    words = list(argv)
    if "nodeweave-entrypoint" not in words:
        words = shlex.split(next(w for w in words if "nodeweave-entrypoint" in w))
    at = words.index("nodeweave-entrypoint")
    env, i = {}, at - 1
    while i >= 0 and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[i], re.S):
        name, _, value = words[i].partition("=")
        env.setdefault(name, value)
        i -= 1
    return env, words[at + 1:]


def _substituted(value: str, shell: dict) -> str:
    """A compose value as compose reads it with ``shell`` (the host's .env): ${VAR:-default}, ${VAR:?message}."""
    def one(match):
        name, op, rest = match.group(1), match.group(2), match.group(3)
        if name in shell:
            return shell[name]
        assert op == ":-", f"{name} must be given for this compose file"
        return rest
    return re.sub(r"\$\{([A-Z_]+)(:[-?])?((?:[^{}]|'')*)\}", one, str(value))


def _compose_env(path: Path, index: int, shell: dict) -> dict:
    services = list(yaml.safe_load(path.read_text())["services"].values())
    chosen = services[index] if len(services) > index else services[0]
    return {k: _substituted(v, shell) for k, v in (chosen.get("environment") or {}).items()}


def _sbatch_exports(path: Path) -> dict:
    return dict(re.findall(r"^export ([A-Z_][A-Z0-9_]*)=(\S*)$", path.read_text(), re.M))


def _what_each_node_plans(team, capsys, target_args, container_env, extra=()):
    """Every planned node's real entrypoint, --explain added, on its planned argv and ``container_env(index,
    argv)``: [(exit code, output)]."""
    code, out, err = run_cli(capsys, "run", *target_args, *extra, "--dry-run", "-o", "json")
    assert code == 0, err
    phase = json.loads(out)["phases"][-1]
    results = []
    for index, node in enumerate(phase["nodes"]):
        front, args = _entrypoint_call(node["argv"])
        args = [a.replace("<run-id>", "x") for a in args]
        dashes = args.index("--")
        args = [*args[:dashes], "--explain", "--no-wait", *args[dashes:]]
        env = {**cli_run.CLEAN, **container_env(index, node["argv"]), **front}
        done = cli_run.entrypoint(*args, env=env, cwd=team, timeout=120)
        results.append((done.returncode, done.stdout + done.stderr))
    return results


def test_run_nodes_plans_that_many_nodes_on_the_local_targets_containers(team, capsys):
    """The lead's replay: the container has NODEWEAVE_NNODES=2 (compose/local.yaml); `env NNODES=1` in front made
    every node refuse 'nnodes sources disagree' (exit 3)."""
    assert run_cli(capsys, "render", "compose", "--out", str(team / "r"))[0] == 0
    compose = team / "r" / "compose" / "local.yaml"
    assert "NODEWEAVE_NNODES" in compose.read_text()
    results = _what_each_node_plans(team, capsys, [], lambda i, argv: _compose_env(compose, i, {}),
                                    ["--nodes", "1"])
    assert len(results) == 1
    code, text = results[0]
    assert code == 0, text
    assert re.search(r"nodes\s+1\s+<- flag --nnodes", text) and "world size   1" in text, text


def test_run_nodes_plans_that_many_nodes_on_bare_hosts(team, capsys):
    """compose/node.yaml sets NNODES and NODEWEAVE_NNODES from the host's .env (2)."""
    assert run_cli(capsys, "render", "compose", "--out", str(team / "r"))[0] == 0
    node_yaml = team / "r" / "compose" / "node.yaml"
    shell = {"NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}
    hosts = ["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/team"]
    results = _what_each_node_plans(team, capsys, hosts, lambda i, argv: _compose_env(node_yaml, 0, shell),
                                    ["--nodes", "1"])
    assert len(results) == 1 and results[0][0] == 0, results
    assert re.search(r"nodes\s+1\s+<- flag --nnodes", results[0][1]), results


def test_run_nodes_is_one_step_over_the_first_nodes_of_a_slurm_allocation(team, capsys):
    """One srun step: it must span the first N hosts only (a task on host 1 of a one-node run has no rank), and
    each task plans N nodes beside Slurm's own counts for the allocation."""
    assert run_cli(capsys, "render", "slurm", "--out", str(team / "r"))[0] == 0
    exports = _sbatch_exports(team / "r" / "slurm" / "job.sbatch")
    code, out, err = run_cli(capsys, "run", "-t", "slurm", "--nodes", "1", "--dry-run", "-o", "json")
    argv = json.loads(out)["phases"][-1]["nodes"][0]["argv"]
    assert "--nodes=1" in argv and "--ntasks=1" in argv, argv

    def slurm_task(index, argv):
        step = next(int(w.split("=")[1]) for w in argv if w.startswith("--nodes="))
        return {**exports, "SLURM_JOB_ID": "7", "SLURM_NODEID": str(index), "SLURM_PROCID": str(index),
                "SLURM_STEP_NUM_NODES": str(step), "SLURM_NNODES": str(step), "SLURM_JOB_NUM_NODES": "2",
                "SLURM_STEP_NODELIST": "n0", "SLURM_JOB_NODELIST": "n[0-1]", "SLURM_NTASKS": str(step)}
    results = _what_each_node_plans(team, capsys, ["-t", "slurm"], slurm_task, ["--nodes", "1"])
    assert [c for c, _ in results] == [0], results
    assert re.search(r"nodes\s+1\s+<- flag --nnodes", results[0][1]), results


def test_check_node_plans_the_chosen_nodes_on_the_container(team, capsys):
    """`check --node 0` takes the same path: the first node only, its count the entrypoint's flag."""
    code, out, err = run_cli(capsys, "check", "--node", "0", "--dry-run", "-o", "json")
    assert code == 0, err
    nodes = json.loads(out)["phases"][-1]["nodes"]
    assert len(nodes) == 1
    front, args = _entrypoint_call(nodes[0]["argv"])
    assert "NNODES" not in front and args[args.index("--nnodes") + 1] == "1", nodes


# -- F10: run --nodes/--node under recovery: refused with the reason, no hint toward a spare ----------------------


@pytest.fixture
def recovery_team(team):
    (team / "nodeweave.yaml").write_text(SPEC + "recovery:\n  enabled: true\n  spares: 1\n")
    return team


@pytest.mark.parametrize("args", [["--nodes", "1"], ["--node", "2"], ["--node", "0"]])  # every node: walk6 W29
def test_run_picking_nodes_under_recovery_is_refused_with_the_reason(recovery_team, capsys, args):
    code, out, err = run_cli(capsys, "run", *args, "--dry-run")
    line = one_line(err)
    assert code == 2 and "under recovery" in line and "1 spare(s)" in line, err
    assert "(or --nodes" not in line and "select --node" not in line, line  # no shape that makes a spare train


# -- F36: a reserved variable a run flag sets: the refusal names the flag -------------------------------------------


@pytest.mark.parametrize("args, flag", [
    (["-e", "NNODES=1"], "`nodeweave run --nodes 1`"),
    (["--sweep", "NNODES=1,2"], "`nodeweave run --nodes 1`"),
    (["-e", "PET_NPROC_PER_NODE=2"], "`nodeweave run --nproc-per-node 2`"),
    (["-e", "NODEWEAVE_LAUNCHER=deepspeed"], "`nodeweave run --launcher deepspeed`"),
    (["--sweep", "NODEWEAVE_PROFILE=nsys,rocprofv3"], "`nodeweave run --profile nsys`"),
])
def test_a_reserved_variable_a_run_flag_sets_names_the_flag(team, capsys, args, flag):
    code, out, err = run_cli(capsys, "run", *args, "--dry-run")
    assert code == 2 and flag in one_line(err), err


# -- F1: the hint for a folder the image's user cannot write works when followed, for every owner it can meet -------


def _follow(hint: str, user) -> None:
    """Run one hint's command as written (we are root here: `sudo` is dropped; `podman unshare chown U:G` is the
    chown it performs, onto the user's mapped ids)."""
    import subprocess

    command = hint.replace("sudo ", "")
    command = re.sub(r"podman unshare chown (-R )?1000:0", lambda m: f"chown {m.group(1) or ''}{user.uid}:{user.gid}",
                     command).replace("podman unshare ", "")
    subprocess.run(["sh", "-c", command], check=True)


def _hints(text: str) -> "list[str]":
    return re.findall(r"`((?:mkdir|sudo|podman|chmod)[^`]*)`", text)


needs_root = pytest.mark.skipif(__import__("os").geteuid() != 0, reason="makes folders of other owners (root only)")


@needs_root
@pytest.mark.parametrize("user_ids, rootless", [((1000, 0), False), ((101000, 1234), True), ((101000, 0), True)])
@pytest.mark.parametrize("owner, mode", [((0, 0), 0o755), ((0, 5), 0o755), ((1000, 0), 0o555), ((0, 1234), 0o750),
                                         ((101000, 7), 0o500)])
@pytest.mark.parametrize("which", [0, 1])
def test_every_permission_hint_works_when_followed(tmp_path, user_ids, rootless, owner, mode, which):
    import os

    from nodeweave.cluster.writable import HostUser, can_write

    user = HostUser(*user_ids, rootless=rootless)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    os.chown(folder, *owner)
    folder.chmod(mode)
    if can_write(folder, user):
        return  # nothing to fix: no hint is given
    hints = _hints(user.fix(folder))
    assert len(hints) == (1 if owner[0] == user.uid else 2), hints  # no chown to the owner it already has
    which = min(which, len(hints) - 1)
    _follow(hints[which], user)
    assert can_write(folder, user), (hints[which], oct(folder.stat().st_mode), folder.stat().st_gid)


@needs_root
@pytest.mark.parametrize("parent_group, setgid", [(0, False), (5, False), (5, True)])
@pytest.mark.parametrize("which", [0, 1])
def test_the_hint_for_a_folder_to_make_works_when_followed(tmp_path, parent_group, setgid, which):
    import os

    from nodeweave.cluster.writable import HostUser, can_write

    user = HostUser(1000, 0, rootless=False)
    os.chown(tmp_path, 0, parent_group)
    tmp_path.chmod(0o755 | (0o2000 if setgid else 0))
    folder = tmp_path / "run" / "checkpoints"
    hints = _hints(user.make(folder))
    assert len(hints) == 2, hints
    _follow(hints[which], user)
    assert can_write(folder, user), (hints[which], oct(folder.stat().st_mode), folder.stat().st_gid)


@needs_root
def test_up_refuses_until_its_hint_is_followed_then_plans(recovery_team, capsys):
    """The walk's replay: a root-owned 0755 team folder, recovery.checkpoint_dir in it; following the printed
    alternative (the chmod) makes the next `up --dry-run` pass."""
    (recovery_team / "nodeweave.yaml").write_text(SPEC + "recovery:\n  enabled: true\n  spares: 1\n"
                                                  "  checkpoint_dir: checkpoints\n")
    recovery_team.chmod(0o755)
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run", "--engine", "podman")
    assert code == 3 and "cannot write" in err, err
    _follow(_hints(err)[1], None)
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run", "--engine", "podman")
    assert "cannot write" not in err, err


# -- F8: a sweep's values with spaces around them ----------------------------------------------------------------


@pytest.mark.parametrize("sweep, fixed", [("A=1, 2", "A=1,2"), ("A=1 ,2", "A=1,2"), ("A= 1", "A=1"),
                                          ("A=1,2\t", "A=1,2")])
def test_a_sweep_value_with_a_space_around_it_is_refused_with_the_list_to_write(team, capsys, sweep, fixed):
    code, out, err = run_cli(capsys, "run", "--sweep", sweep, "--dry-run")
    assert code == 2 and f"write {fixed}" in one_line(err), err


def test_a_space_inside_a_sweep_value_is_kept(team, capsys):
    code, out, err = run_cli(capsys, "run", "--sweep", "NCCL_ALGO=Ring,Tree", "--sweep", "OPTS=a b,c", "--dry-run")
    assert code == 0, err


# -- F13: top and dashboard --url where nothing answers: one line in words, exit 1, nothing served ------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("verb", ["top", "dashboard"])
def test_a_url_nothing_answers_is_said_in_words_by_top_and_the_dashboard(tmp_path, verb):
    url = f"http://127.0.0.1:{_closed_port()}"
    done = cli_run.nodeweave(verb, "--url", url, cwd=tmp_path, env={**cli_run.CLEAN, "HOME": home_beside(tmp_path)},
                             timeout=60)
    line = one_line(done.stderr)
    assert done.returncode == 1 and f"no live picture from {url}: nothing listens there" in line, done.stderr
    assert "Errno" not in line and "NODEWEAVE_METRICS_PORT" in line and "dashboard at" not in done.stdout, line  # walk8 B41


# -- F17: a reach flag that does nothing for the target is judged on the resolved target, on every verb -------------


VERBS_WITH_REACH = [["sync", "--dry-run"], ["up", "--dry-run"], ["down", "--dry-run"], ["run", "--dry-run"],
                    ["check", "--dry-run"], ["status"], ["logs"], ["stop", "--dry-run"], ["exec", "--dry-run"],
                    ["top"], ["dashboard"]]


@pytest.mark.parametrize("verb", VERBS_WITH_REACH, ids=lambda v: v[0])
@pytest.mark.parametrize("flag", [["--namespace", "ml"], ["--kube-context", "prod"], ["--kube-cli", "oc"]])
def test_a_kubernetes_flag_on_the_default_local_target_is_refused_on_every_verb(team, capsys, verb, flag):
    argv = [*verb, *flag] + (["--", "true"] if verb[0] == "exec" else [])
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and f"{flag[0]} does nothing for target local" in one_line(err), (argv, err)


def test_the_default_target_of_sync_takes_the_flags_it_uses(team, capsys):
    code, out, err = run_cli(capsys, "sync", "--engine", "podman", "--dry-run")
    assert code == 0, err


# -- F22: every sync --dry-run form whose targets are not there: exit 0 and the exit the real sync would end with --


@pytest.mark.parametrize("args, code", [
    (["--compose-project", "llama", "--engine", "podman"], 3),  # nothing is up there: 3 (walk7 A21)
    (["--node", "podman:trainer-0", "--node", "podman:trainer-1"], 1),
    (["-l", "app=llama", "-n", "ml"], 3),
    (["--statefulset", "llama", "-n", "ml"], 3),
    ([], 3),  # the spec's own cluster, not up
])
def test_every_sync_dry_run_with_nothing_there_exits_0_and_says_the_real_exit(team, capsys, monkeypatch, args, code):
    import shutil

    monkeypatch.setenv("KUBECONFIG", str(team / "no-such-kubeconfig"))
    if not (shutil.which("podman") and shutil.which("kubectl")):
        pytest.skip("podman and kubectl are what the real sync would call, and one is not installed "
                    "(.ci/setup-engine.sh and .ci/setup-tools.sh install them)")
    exit_code, out, err = run_cli(capsys, "sync", ".", "/workspace", *args, "--dry-run")
    assert exit_code == (1 if code == 1 else 0), err  # a named container the engine has not: certain (walk18a A7)
    assert f"the real sync would end with exit {code}: " in out + err, out + err


# -- F25/F26: every numeric option's refusal: the option, the value, one accepted range --------------------------


@pytest.mark.parametrize("argv, line", [
    (["check", "--seconds", "-1", "--dry-run"], "--seconds -1 is not accepted: a finite number more than 0"),
    (["check", "--timeout", "0", "--dry-run"], "--timeout 0 is not accepted: a finite number more than 0"),
    (["check", "--timeout", "inf", "--dry-run"], "--timeout inf is not accepted"),
    (["check", "--seconds", "nan", "--dry-run"], "--seconds nan is not accepted"),
    (["check", "--repeats", "0", "--dry-run"], "--repeats 0 is not accepted: 1 to 10 (extra samples"),
    (["check", "--threshold", "200", "--dry-run"], "--threshold 200 is not accepted: more than 0 and less than 100"),
    (["check", "--seconds", "x", "--dry-run"], "--seconds 'x' is not accepted: a number"),
    (["run", "--grace", "-1", "--dry-run"], "--grace -1 is not accepted: 0 to 1000000000"),
    (["run", "--nodes", "two", "--dry-run"], "--nodes 'two' is not accepted: a whole number"),
    (["stop", "--grace", "-1", "--dry-run"], "--grace -1 is not accepted: 0 to 1000000000"),
    (["sync", "--jobs", "0", "--dry-run"], "--jobs 0 is not accepted: 1 to 256"),
    (["sync", "-j", "300", "--dry-run"], "--jobs 300 is not accepted: 1 to 256"),
    (["sync", "--retries", "-1", "--dry-run"], "--retries -1 is not accepted: 0 to 10"),
    (["up", "--timeout", "-1", "--dry-run"], "--timeout -1 is not accepted: 1 to 1000000000"),
    (["dashboard", "--interval", "0.1"], "--interval 0.1 is not accepted: 0.2 to 1000000000"),
    (["dashboard", "--port", "70000"], "--port 70000 is not accepted: 0 to 65535"),
    (["top", "--interval", "0"], "--interval 0 is not accepted: 0.2 to 1000000000"),
    (["bench", "--timeout", "0"], "--timeout 0 is not accepted: a finite number more than 0"),
])
def test_a_numeric_refusal_names_the_option_the_value_and_one_range(team, capsys, argv, line):
    code, out, err = run_cli(capsys, *argv)
    said = one_line(err)
    assert code == 2 and line in said and "not in the range" not in said and "x>=" not in said, said


# -- F19: check --threshold below 1 is almost always the worker's fraction copied: said in a note ------------------


def test_a_threshold_below_1_is_noted_as_a_percentage(team, capsys):
    code, out, err = run_cli(capsys, "check", "--threshold", "0.25", "--dry-run")
    assert code == 0, err
    assert "--threshold 0.25 is 0.25%, not 25%" in out + err and "did you mean --threshold 25?" in out + err
    code, out, err = run_cli(capsys, "check", "--threshold", "25", "--dry-run")
    assert "did you mean" not in out + err


# -- F31/F32/F37: a flag that does nothing with another flag or on the target is refused, by one table ------------


@pytest.mark.parametrize("argv, line", [
    (["up", "-t", "slurm", "--hold", "--dry-run"], "--hold does nothing for target slurm"),
    (["up", "-t", "slurm", "--run", "--dry-run"], "--run does nothing for target slurm"),
    (["up", "--no-wait", "--timeout", "10", "--dry-run"], "--timeout does nothing with --no-wait"),
    (["up", "--timeout=10", "--no-wait", "--dry-run"], "--timeout does nothing with --no-wait"),
    (["run", "--detach", "-q", "--dry-run"], "--quiet does nothing with --detach"),
    (["run", "-d", "--quiet", "--dry-run"], "--quiet does nothing with --detach"),
    (["run", "--sweep", "A=1,2", "--lower-is-better", "--dry-run"], "--lower-is-better does nothing without --metric"),
])
def test_a_flag_that_does_nothing_with_another_or_on_the_target_is_refused(team, capsys, argv, line):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and line in one_line(err), err


@pytest.mark.parametrize("argv", [["up", "--hold", "--dry-run"], ["up", "--wait", "--timeout", "10", "--dry-run"],
                                  ["up", "--no-wait", "--dry-run"], ["run", "-q", "--dry-run"],
                                  ["run", "--detach", "--dry-run"]])
def test_the_same_flags_where_they_act_are_taken(team, capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 or "is not built here" in out, err  # up's exit 3 where the image is not built (walk18a A5)


# -- F34: a variable a rendered file reads but `up` on that target does not is named in the plan -------------------


@pytest.mark.parametrize("target, variable, words", [
    (["-t", "slurm"], "NODEWEAVE_IMAGE=reg/x:1", "up runs the spec's image"),
    (["-t", "kubernetes"], "NODEWEAVE_IMAGE=reg/x:1", "the pods run the image their manifests name"),
    (["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/t"], "NODEWEAVE_IMAGE=reg/x:1",
     "every host runs the image above"),
])
def test_a_variable_up_does_not_read_on_the_target_is_named(team, capsys, monkeypatch, target, variable, words):
    name, _, value = variable.partition("=")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("KUBECONFIG", str(team / "no-such-kubeconfig"))
    code, out, err = run_cli(capsys, "up", *target, "--dry-run")
    assert code == 0, err
    assert f"{variable} from this environment is not read by `up --target {target[1]}`: " in out and words in out, out


@pytest.mark.parametrize("value", ["moon", "apptainer"])
def test_slurm_runtime_from_the_shell_is_named_once_at_start_up(team, capsys, monkeypatch, value):
    """walk6 W42: NODEWEAVE_RUNTIME, which only the rendered sbatch script reads, is one row of the CLI's table of
    variables only the nodes read (cli.habits.variables), named at start-up on every verb, so not in the plan too."""
    monkeypatch.setenv("NODEWEAVE_RUNTIME", value)
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--dry-run")
    assert code == 0, err
    assert err.count(f"NODEWEAVE_RUNTIME={value} in this environment") == 1 and "slurm.runtime" in err, err
    assert "NODEWEAVE_RUNTIME" not in out, out
