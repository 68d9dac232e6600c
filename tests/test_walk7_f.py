"""The seventh walk, part A (issue 43, /work/wt/walk7a-report.md), rows A52, A51, A34, A38..A44: each fixed as a
class and walked here. No container is started."""

from __future__ import annotations

import re

import pytest
from cli_run import in_process as run_cli, leaves, one_line

from nodeweave.cli.habits.swallowed import VALUES_ARE_OPTIONS, takes_value
from nodeweave.errors import EXIT_USAGE

BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    return tmp_path


# -- A52: an option that takes a value never swallows the verb's next flag ---------------------------------------


def swallow_cases():
    """Every value-taking option of every verb, followed by one of that verb's own flags and by a --word."""
    cases = []
    for words, command in leaves():
        flags = [p.opts[0] for p in command.params if p.param_type_name == "option" and not takes_value(p)]
        own = "--dry-run" if "--dry-run" in flags else (flags[0] if flags else "--help")
        for param in command.params:
            if takes_value(param):
                for option in param.opts:
                    for value in (own, "--no-such-flag")[:1 if option in VALUES_ARE_OPTIONS else 2]:
                        cases.append((words, option, value))
    return cases


SWALLOW = swallow_cases()


def test_the_walk_finds_every_verb_and_its_value_options():
    verbs = {" ".join(words) for words, _, _ in SWALLOW}
    assert {"render", "bench", "run", "check", "sync", "up", "down", "init", "runs ls", "image build",
            "hosts probe", "exec", "logs", "doctor"} <= verbs
    assert ("render", "--out", "--dry-run") in {(" ".join(w), o, v) for w, o, v in SWALLOW}
    assert len(SWALLOW) > 250


@pytest.mark.parametrize("words, option, value", SWALLOW, ids=[f"{' '.join(w)} {o} {v}" for w, o, v in SWALLOW])
def test_a_flag_after_an_option_that_takes_a_value_is_refused_before_anything_runs(capsys, team, words, option,
                                                                                 value):
    tail = ["--", "t.py"] if words[0] in ("run", "exec") else []
    code, out, err = run_cli(capsys, *words, option, value, *tail)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert f"{option} {value!r}" in line and f"not a value for {option}" in line and "nothing was run" in line, line
    assert sorted(p.name for p in team.iterdir()) == ["nodeweave.yaml", "t.py"]  # nothing written


def test_the_walks_render_out_unset_before_dry_run_writes_nothing(capsys, team):
    code, _, err = run_cli(capsys, "render", "all", "--out", "--dry-run")
    assert code == EXIT_USAGE
    assert "--out=--dry-run" in one_line(err)
    assert not (team / "--dry-run").exists()


def test_a_value_that_starts_with_dashes_is_taken_when_joined_with_equals(capsys, team):
    code, out, err = run_cli(capsys, "render", "--out=--odd", "--dry-run")
    assert code == 0, err
    assert "not a value for" not in err
    code, _, err = run_cli(capsys, "render", "--spec", "-", "--dry-run")  # `-` (standard input) is a value
    assert "not a value for" not in err


@pytest.mark.parametrize("value", ["--trace=cuda,nvtx", "--trace=cuda,nvtx --stats=true"])
def test_an_option_whose_values_are_another_programs_options_takes_them(capsys, team, value):
    code, out, err = run_cli(capsys, "run", "--dry-run", "--profile", "nsys", "--profile-options", value, "--",
                             "t.py")
    assert "not a value for" not in err, err
    code, _, err = run_cli(capsys, "run", "--profile", "nsys", "--profile-options", "--dry-run", "--", "t.py")
    assert code == EXIT_USAGE and "'--dry-run' is an option of `nodeweave run`" in one_line(err)


def test_a_value_spelt_as_an_arguments_name_is_a_value(capsys, team):
    """run's argument is called `command`, and so is a launcher: `--launcher command` is a value."""
    code, out, err = run_cli(capsys, "run", "--dry-run", "--launcher", "command", "--", "./t.py")
    assert code == 0 and "not a value for" not in err, (out, err)


def test_a_short_flag_with_its_value_joined_is_a_flag_too(capsys, team):
    code, _, err = run_cli(capsys, "render", "--out", "-ojson")
    assert code == EXIT_USAGE and "'-ojson' reads as `nodeweave render`'s option -o with its value joined" in one_line(err)


def test_a_verb_option_typed_before_the_verb_is_judged_too(capsys, team):
    code, _, err = run_cli(capsys, "--spec", "--dry-run", "render")
    assert code == EXIT_USAGE and "--spec '--dry-run'" in one_line(err)


# -- A51: a destructive flag never acts on a default the user did not type -----------------------------------------


def test_sync_delete_with_src_typed_and_dest_defaulted_is_refused_before_any_target_is_asked(capsys, team, tmp_path):
    other = tmp_path / "bigdisk"
    other.mkdir()
    (other / "a").write_text("a\n")
    for reach in (["--node", "podman:x"], []):  # named targets, and the cluster's (not up here: still exit 2 first)
        code, out, err = run_cli(capsys, "sync", str(other), "--delete", "--dry-run", *reach)
        assert code == EXIT_USAGE, (out, err)
        line = one_line(err)
        assert f"SRC '{other}' and no DEST" in line and "/workspace" in line and "unset variable" in line, line


def test_sync_delete_with_both_typed_or_neither_is_planned(capsys, team, tmp_path):
    other = tmp_path / "bigdisk"
    other.mkdir()
    (other / "a").write_text("a\n")
    code, out, err = run_cli(capsys, "sync", str(other), "/workspace", "--node", "podman:x", "--delete", "--dry-run")
    assert code in (0, 1) and f"from {other} to /workspace" in out + err and "delete on each target" in out + err
    code, out, err = run_cli(capsys, "sync", "--node", "podman:x", "--delete", "--dry-run")  # the spec's own pair
    assert code in (0, 1) and f"from {team} to /workspace" in out + err


def test_sync_without_delete_still_takes_the_default_dest(capsys, team, tmp_path):
    other = tmp_path / "bigdisk"
    other.mkdir()
    (other / "a").write_text("a\n")
    code, out, err = run_cli(capsys, "sync", str(other), "--node", "podman:x", "--dry-run")
    assert code in (0, 1) and f"from {other} to /workspace" in out + err


# -- A34: a container of this job's names that no `up` marked is not this folder's ---------------------------------

from test_cluster_identity import VERBS, cli, twins  # noqa: E402,F401 (the podman stand-in and the two folders)


@pytest.fixture
def plain_compose(twins, tmp_path):
    """Folder a ran the README's plain `podman-compose -f compose/local.yaml up`: containers twin-0, twin-1, no
    labels (the committed compose files carry none)."""
    import json

    (tmp_path / "containers.json").write_text(json.dumps({"twin-0": {}, "twin-1": {}}))
    return twins


@pytest.mark.parametrize("verb", VERBS, ids=[v[0] for v in VERBS])
def test_every_verb_refuses_containers_no_up_marked_naming_how_to_remove_them(plain_compose, verb):
    _, b, env = plain_compose
    for folder in (b.parent,):
        out = cli(folder, env, *verb)
        assert out.returncode == 3, (verb, out.stdout, out.stderr)
        line = one_line(out.stderr)
        assert "container twin-0 (and 1 more) carries no nodeweave mark" in line, line
        assert "`podman rm -f twin-0 twin-1`" in line and "podman-compose -f compose/local.yaml down" in line, line
        assert "podman exec" not in out.stdout and "-f compose" not in out.stdout, out.stdout


# -- A38: a kube context that does not exist, or a kubeconfig that does not parse, is "cannot reach" too -----------

KUBECTL_CONFIG_ERRORS = (
    'error: context "nope" does not exist',
    "Error in configuration: context was not found for specified context: nope",
    'error: error loading config file "/p/train.py": couldn\'t get version/kind; json parse error: json: cannot '
    "unmarshal string into Go value",
    "error: invalid configuration: no configuration has been provided",
)


@pytest.mark.parametrize("said", KUBECTL_CONFIG_ERRORS)
def test_kubectls_configuration_errors_are_cannot_reach_exit_3_with_the_contexts_hint(said):
    from nodeweave.errors import EnvironmentProblem
    from nodeweave.failures import tool_failure

    err = tool_failure("kubectl", "get statefulset j", 1, said)
    assert isinstance(err, EnvironmentProblem) and err.exit_code == 3
    assert "cannot reach a Kubernetes cluster" in str(err) and "kubectl config get-contexts" in str(err)


kubectl = pytest.mark.skipif(not __import__("shutil").which("kubectl"),
                             reason="kubectl is not installed (.ci/setup-tools.sh installs it): it says the context "
                                    "does not exist (no cluster needed)")


@kubectl
@pytest.mark.parametrize("verb", [("status",), ("down",), ("stop",)])
def test_a_mistyped_kube_context_is_exit_3_on_every_verb(capsys, team, verb):
    code, out, err = run_cli(capsys, *verb, "-t", "kubernetes", "--kube-context", "nope-no-such-context")
    assert code == 3, (out, err)
    assert 'context "nope-no-such-context" does not exist' in one_line(err) and "get-contexts" in err


@kubectl
@pytest.mark.parametrize("verb", [("up",), ("down",), ("sync",)])
def test_a_dry_run_foretells_the_mistyped_context(capsys, team, verb):
    code, out, err = run_cli(capsys, *verb, "-t", "kubernetes", "--kube-context", "nope-no-such-context",
                             "--dry-run")
    assert code == 0, (out, err)
    assert "would end with exit 3: kubectl cannot reach a Kubernetes cluster" in out + err


# -- A39: hosts ssh never reached are said as such, not as "not up: `up --hold` starts it" --------------------------


@pytest.mark.parametrize("said, why", [
    ("ssh: Could not resolve hostname gpu1: Name or service not known", "name not resolved"),
    ("ssh: connect to host 10.0.0.9 port 22: Connection refused", "connection refused"),
    ("me@gpu1: Permission denied (publickey).", "permission denied"),
    ("ssh: connect to host gpu1 port 22: No route to host", "no route to host"),
    ("ssh: connect to host gpu1 port 22: Connection timed out", "timed out"),
    ("Error: no such container team-node", None),
])
def test_ssh_words_that_mean_the_host_was_never_reached(said, why):
    from nodeweave.failures import ssh_unreached

    assert ssh_unreached(said) == why


@pytest.mark.skipif(not __import__("shutil").which("ssh"), reason="needs the OpenSSH client")
def test_status_on_hosts_whose_names_do_not_resolve_names_them_and_offers_no_up(capsys, team):
    code, out, err = run_cli(capsys, "status", "-t", "hosts", "--host", "nosuchhost1.invalid", "--host",
                             "nosuchhost2.invalid", "--remote-dir", "/srv/j")
    assert code == 3, (out, err)
    line = one_line(err)
    assert "ssh cannot reach nosuchhost1.invalid, nosuchhost2.invalid (name not resolved)" in line, line
    assert "up --hold" not in line and "`ssh nosuchhost1.invalid true`" in line, line


# -- A40: -t openshift applies the openshift overlay on a plain spec (base pins a UID restricted-v2 refuses) --------


APPLY_LINE = re.compile(r"# apply (?:the [^(]*)?\((?P<folder>[^)]+)\) to (?P<namespace>[^\s:]+)")


def _applied(out: str) -> str:
    """The plan's apply line as "# apply (FOLDER) to NAMESPACE": the folder is what these tests read. With kubectl
    the line names the objects its kustomize builds ("# apply (base) to default: ..."); without it, the rendered
    folders' kinds in words ("# apply the StatefulSet, ... (base) to default")."""
    found = next((APPLY_LINE.match(line) for line in out.splitlines() if APPLY_LINE.match(line)), None)
    assert found is not None, f"no apply line in the plan:\n{out}"
    return f"# apply ({found['folder']}) to {found['namespace']}"


@pytest.mark.parametrize("cli", ["kubectl"] + (["oc"] if __import__("shutil").which("oc") else []))
def test_target_openshift_on_a_plain_spec_applies_the_openshift_overlay_and_says_why(capsys, team, cli):
    code, out, err = run_cli(capsys, "up", "-t", "openshift", "--kube-cli", cli, "--dry-run")
    assert code == 0, err
    assert _applied(out).startswith("# apply (openshift) to default"), out
    assert "base pins runAsUser 1000, which OpenShift's restricted-v2 SCC refuses" in out


def test_a_spec_rendered_for_openshift_applies_base_under_target_openshift(capsys, team):
    """kubernetes.openshift: true renders base with the overlay's security context already: base is applied, and
    the plan says why (walk5 W19's line)."""
    spec = (team / "nodeweave.yaml").read_text()
    (team / "nodeweave.yaml").write_text(spec + "kubernetes: {openshift: true}\n" if "kubernetes:" not in spec
                                         else spec.replace("kubernetes:", "kubernetes:\n  openshift: true\n", 1))
    for extra in ([], ["--overlay", "openshift"]):
        code, out, err = run_cli(capsys, "up", "-t", "openshift", "--kube-cli", "kubectl", *extra, "--dry-run")
        assert code == 0 and _applied(out).startswith("# apply (base)"), (out, err)
        assert "applies base: the spec says openshift: true" in out


def test_overlay_given_with_target_openshift_wins_and_kubernetes_keeps_base(capsys, team):
    code, out, err = run_cli(capsys, "up", "-t", "openshift", "--kube-cli", "kubectl", "--overlay", "base",
                             "--dry-run")
    assert code == 0 and _applied(out).startswith("# apply (base)"), (out, err)
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--dry-run")
    assert code == 0 and _applied(out).startswith("# apply (base)"), (out, err)


# -- A41: a pod's address as the help shows it (pod:NAME), with or without namespace and container, any pod kind -----

POD_SPELLINGS = ["pod:j-1", "pod:default/j-1", "oc:j-1", "k8s:j-1", "kubectl:default/j-1", "pod:j-1[trainer]",
                 "pod:default/j-1[trainer]", "j-1", "1", "node-1"]


@pytest.mark.parametrize("node", POD_SPELLINGS)
def test_every_spelling_of_a_pods_address_picks_it(capsys, team, node):
    code, out, err = run_cli(capsys, "exec", "-t", "kubernetes", "--node", node, "--dry-run", "--", "ls")
    assert code == 0, (out, err)
    # the command runs through exec's pid-recording wrapper (walk10 C4): `-- sh -c '...' sh <pid file> ls`
    assert "exec -n default -c trainer j-1 -- sh -c " in out and "-node-1.pid ls\n" in out and " j-0 " not in out, out


@pytest.mark.parametrize("node", ["pod:j-9", "pod:other/j-1", "podman:j-1", "pod:j-1[other]"])
def test_an_address_of_no_pod_of_this_cluster_is_still_refused(capsys, team, node):
    code, out, err = run_cli(capsys, "exec", "-t", "kubernetes", "--node", node, "--dry-run", "--", "ls")
    assert code == EXIT_USAGE and "names no node of this cluster" in one_line(err), (out, err)


# -- A42: init writes a command that runs; validate says what run says of a bare program name ----------------------


def test_init_launcher_command_writes_python_and_the_script_as_its_argument(capsys, tmp_path, monkeypatch):
    import yaml

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    code, out, err = run_cli(capsys, "init", "--launcher", "command", "--out", "cmd.yaml")
    assert code == 0, err
    launcher = yaml.safe_load((tmp_path / "cmd.yaml").read_text())["launcher"]
    assert launcher == {"type": "command", "script": "python", "args": ["train.py"]}
    for argv in (["validate", "--spec", "cmd.yaml"], ["run", "--dry-run", "--spec", "cmd.yaml", "-t", "local"]):
        code, out, err = run_cli(capsys, *argv)
        assert "through PATH" not in out + err, (argv, out, err)
    assert "through PATH" not in capsys.readouterr().err


def test_init_launcher_command_with_another_program_writes_it_as_a_workspace_path(capsys, tmp_path, monkeypatch):
    import yaml

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.sh").write_text("#!/bin/sh\necho 1\n")
    code, _, err = run_cli(capsys, "init", "--launcher", "command", "--script", "train.sh", "--out", "cmd.yaml")
    assert code == 0, err
    assert yaml.safe_load((tmp_path / "cmd.yaml").read_text())["launcher"]["script"] == "./train.sh"


def test_validate_says_what_run_says_of_a_bare_program_in_the_workspace(capsys, team):
    (team / "cmd.yaml").write_text("name: j\nimage: {variant: cpu}\nnodes: 2\n"
                                   "launcher: {type: command, script: t.py}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "cmd.yaml")
    assert code == 2  # every node would exit 127: refused (issue 43 A16)
    assert "launcher command execs 't.py' through PATH" in err and "python t.py" in err, err
    code, out, err = run_cli(capsys, "run", "--dry-run", "--spec", "cmd.yaml", "-t", "local")
    assert (out + err).count("through PATH") == 1, (out, err)  # said once, as before


# -- A43: a loopback name as a host of a job of several hosts ------------------------------------------------------

LOOPBACKS = ["localhost", "LOCALHOST.", "127.0.0.1", "127.1.2.3", "me@localhost", "localhost.localdomain"]


@pytest.mark.parametrize("host", LOOPBACKS)
@pytest.mark.parametrize("place", [0, 1])
def test_a_loopback_host_of_a_multi_host_job_is_refused_on_the_command_line(capsys, team, host, place):
    hosts = ["gpu01", "gpu02"]
    hosts[place] = host
    code, out, err = run_cli(capsys, "up", "-t", "hosts", "--host", hosts[0], "--host", hosts[1], "--remote-dir",
                             "/srv/job", "--dry-run")
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert f"--host {host}: " in line and "loopback" in line and f"node {place}" in line, line
    assert ("MASTER_ADDR" in line) == (place == 0), line


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_loopback_host_in_the_specs_hosts_is_refused_by_validate(capsys, team, host):
    (team / "h.yaml").write_text(f"name: j\nimage: {{variant: cpu}}\nhosts: [{host}, gpu02]\n"
                                 "launcher: {script: t.py}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "h.yaml")
    assert code == EXIT_USAGE
    assert f"hosts[0]: '{host}' is a loopback name or address" in one_line(err)


def test_one_host_alone_may_be_this_machine_and_gpu_names_are_not_loopback(capsys, team):
    from nodeweave.spec.rules import is_loopback_host, loopback_problem

    assert loopback_problem(["localhost"]) is None
    # every host this machine (nodes as processes on one box): node 0's loopback is every node's
    assert loopback_problem(["127.0.0.1", "127.0.0.2", "localhost"]) is None
    assert loopback_problem(["127.0.0.1", "gpu02"])[0] == 0 and loopback_problem(["gpu01", "127.0.0.2"])[0] == 1
    assert is_loopback_host("::1") and is_loopback_host("0.0.0.0")  # ::1 never passes --host's own form check
    assert not any(is_loopback_host(h) for h in ("gpu01", "localhost-gpu", "10.0.0.1", "mylocalhost"))


# -- A44: sweep values written as other tools take lists -----------------------------------------------------------


@pytest.mark.parametrize("typed, fix", [("LR=[1e-3,3e-4]", "LR=1e-3,3e-4"), ("LR=(1,2)", "LR=1,2"),
                                        ('LR="1e-3",3e-4', "LR=1e-3,3e-4"), ("LR='a','b'", "LR=a,b"),
                                        ("LR=1e-3 3e-4", "LR=1e-3,3e-4")])
@pytest.mark.parametrize("verb", ["run", "bench"])
def test_brackets_quotes_and_spaces_in_a_sweep_are_refused_with_the_spelling_to_write(capsys, team, typed, fix, verb):
    tail = ["-t", "local"] if verb == "run" else []
    code, out, err = run_cli(capsys, verb, "--dry-run", "--sweep", typed, *tail)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert f"--sweep {typed!r} is not accepted" in line and line.endswith(f"write {fix}"), line


def test_a_sweeps_points_are_shown_as_assignments(capsys, team):
    code, out, err = run_cli(capsys, "run", "--dry-run", "-t", "local", "--sweep", "LR=1e-3,3e-4")
    assert code == 0, err
    assert "# point 1 of 2: LR=1e-3;" in out and "{'LR'" not in out, out
