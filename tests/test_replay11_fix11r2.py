"""The eleventh walk's replay, rows R5-R1, C14, C11, C10, C7, C1 (fix11r2), fixed as classes.

Each test fails on the code before its fix. No container is started: the engines are stood in for.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cli_run import in_process as run_cli
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def _no_phases(monkeypatch):
    """The one executor, run with the plan's phases left out: what it says before the first phase is all."""
    import nodeweave.cluster.execute as executor

    real = executor.execute
    monkeypatch.setattr(executor, "execute", lambda plan, job: real(replace(plan, phases=()), job))
    return real


def _run_verb(capsys, team, monkeypatch):
    import nodeweave.cli.run as run
    import nodeweave.cluster.onbackend as onbackend
    from nodeweave.cluster.execute import Execution

    monkeypatch.setattr(onbackend, "require_up", lambda *a, **k: None)
    monkeypatch.setattr(onbackend, "refuse_busy", lambda *a, **k: None)
    real = _no_phases(monkeypatch)
    monkeypatch.setattr(run, "_execute", lambda plan, *a, **k: real(replace(plan, phases=()), Execution(team, print)))
    (team / "prep.sh").write_text("echo hi\n")  # not Python: noted (C10 refuses a missing script here)
    code, out, err = run_cli(capsys, "run", "--", "prep.sh")
    return code, out + err, "prep.sh is "


def _build_verb(capsys, team, monkeypatch):
    import nodeweave.build as build
    import nodeweave.cli.image as image

    class Engine:
        kind, builder = "podman", "buildx"

    house = team / "house"
    house.mkdir()
    (house / "tqdm-4.66.1-py3-none-any.whl").write_bytes(b"wheel")
    assert run_cli(capsys, "render", "all")[0] == 0
    _no_phases(monkeypatch)
    monkeypatch.setattr(build, "detect_engine", lambda name=None: Engine())
    monkeypatch.setattr(build, "check_network_exists", lambda *a: None)
    monkeypatch.setattr(image, "_report", lambda *a: None)
    monkeypatch.setattr(image, "_mark_build", lambda *a: [])

    class Session:
        def __init__(self, *a):
            self.results = [None]

    import nodeweave.build.sessions as sessions

    monkeypatch.setattr(sessions, "LocalBuild", Session)
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--wheelhouse", str(house))
    return code, out + err, "wheelhouse: "


@pytest.mark.parametrize("verb", [_run_verb, _build_verb], ids=["run", "image build"])
def test_r5_a_plans_notes_are_said_once_in_a_real_run(capsys, team, monkeypatch, verb):
    """R5: a real `run` printed its note on the missing script twice (`nodeweave: note: ...`, then again from the
    plan), and `image build` its wheelhouse line twice: the verb printed the plan's notes and the executor again.
    The executor alone says them, once, on stderr as nodeweave's notes."""
    code, said, note = verb(capsys, team, monkeypatch)
    assert code == 0, said
    assert said.count(note) == 1, said
    assert f"nodeweave: note: {note}" in said or f"nodeweave: {note}" in said, said


def _scratch_cases():
    from nodeweave.systemdirs import SCRATCH

    for scratch in SCRATCH:
        yield ("run", "--dry-run", "--runs-dir", f"/{scratch}/nw-r4-runs")
        yield ("bench", "--dry-run", "--json-out", f"/{scratch}/nw-r4.json")
        yield ("bench", "--dry-run", "--json-out", f"/{scratch}/nw-r4-new/b.json")


@pytest.mark.parametrize("argv", list(_scratch_cases()), ids=" ".join)
def test_r4_a_scratch_folder_written_with_a_leading_double_slash_is_the_scratch_folder(capsys, team, argv):
    """R4: `run --runs-dir //var/tmp/ck` was refused as made "directly in //var/tmp, which is / or a system folder
    ... (only /tmp and /var/tmp take one)": the scratch folders were compared as written, `//` kept (as
    os.path.abspath keeps it), while Linux reads `//var/tmp` as /var/tmp. Every folder and file option's judge
    normalises through the entrypoint's normal_path, as NODEWEAVE_CHECKPOINT_DIR's does."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err


@pytest.mark.parametrize("argv, seen", [(("run", "--dry-run", "--runs-dir", "//var/lib/nw-r4"), "/var/lib"),
                                        (("bench", "--dry-run", "--json-out", "//usr/local/nw-r4.json"), "/usr/local")])
def test_r4_a_system_folder_written_with_a_double_slash_is_named_as_the_kernel_reads_it(capsys, team, argv, seen):
    """R4: the refusal of a system folder names it once normalised (/var/lib, not //var/lib)."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and (f" {seen}, which is / or a system folder" in err or f"its folder {seen} is / or a system "
                          "folder" in err), err


@pytest.mark.parametrize("setup", [["source"], ["module"], ["conda"], ["export"], ["eval"]])
@pytest.mark.parametrize("verb", [("validate",), ("render", "compose", "--dry-run"), ("up", "--dry-run")])
def test_r3_a_spec_value_every_node_would_refuse_is_refused_by_validate(capsys, team, setup, verb):
    """R3: `launcher.setup: ["source"]` was valid, rendered as NODEWEAVE_SETUP='source' and planned by `up --dry-run`,
    and every node's entrypoint refused that very value ("'source' alone does nothing"). Each field that becomes a
    node's variable is read back by the node's own reader (the contract's table), so the spec refuses it first."""
    import json

    (team / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text().replace(
        "  script: train.py\n", f"  script: train.py\n  setup: {json.dumps(setup)}\n"))
    code, out, err = run_cli(capsys, *verb)
    assert code == 2 and "launcher.setup:" in err and f"{setup[0]!r} alone does nothing" in err, (out, err)




@pytest.mark.parametrize("argv", [("init", "--dry-run", "--out", "i.yaml", "--host", host) for host in
                                  ("oc:x", "pod:x", "podman:x", "docker:x")]
                         + [("status", "-t", "openshift"), ("status", "-t", "kubernetes")])
def test_r2_a_missing_tools_hint_names_a_flag_only_where_the_verb_takes_it(capsys, team, monkeypatch, argv):
    """R2: `init --host oc:x` without oc was told "or pass --kube-cli kubectl", and init has no --kube-cli (exit 2
    on it). The install hints' flags (the table INSTALL_HINTS) are offered only by a verb that has the flag; a verb
    that has it (status) still offers it."""
    import re

    from nodeweave.failures import INSTALL_HINTS

    monkeypatch.setenv("PATH", "/nonexistent")
    code, out, err = run_cli(capsys, *argv)
    assert code == 3 and "is not on PATH" in err, err
    offered = re.findall(r"or pass (--[a-z-]+)", err)
    verb = [a for a in argv if not a.startswith("-")][:1]
    _, helped, _ = run_cli(capsys, *verb, "--help")
    assert all(flag in helped for flag in offered), (err, offered)
    if argv[0] == "status":
        program = "oc" if "openshift" in argv else "kubectl"
        assert f"or pass {INSTALL_HINTS[program][1]}" in err, err

def test_r2_init_names_the_oc_address_typed_not_kubectls(capsys, team, monkeypatch):
    """R2: `init --host oc:x` (oc not installed) said "init --host pod:x reaches the hosts with it": an oc pod's
    label was pod:..., which is the kubectl address."""
    monkeypatch.setenv("PATH", "/nonexistent")
    code, out, err = run_cli(capsys, "init", "--host", "oc:x", "--dry-run", "--out", "i.yaml")
    assert code == 3 and "init --host oc:x reaches" in err and "--kube-cli" not in err, err


@pytest.mark.parametrize("kind, label", [("oc", "oc:ml/x"), ("pod", "pod:ml/x"), ("kubectl", "pod:ml/x")])
def test_r2_a_pods_label_is_the_address_of_its_own_cli(kind, label):
    """R2: the label of an oc pod is oc:..., a kubectl pod's pod:..., each the address that reaches it."""
    from nodeweave import remote

    assert remote.parse_target(f"{kind}:ml/x").label == label


@pytest.mark.parametrize("argv", [("-o=json", "validate"), ("validate", "-o=json"), ("runs", "-o=json", "ls"),
                                  ("run", "--dry-run", "-o=json", "-t=local", "-e=A=1"),
                                  ("exec", "--dry-run", "-o=json", "-t=local", "-e=B=2", "--", "hostname")])
def test_r1_kubectls_short_option_with_equals_is_read_as_kubectl_reads_it(capsys, team, argv):
    """R1: `nodeweave -o=json validate` (kubectl's spelling) was refused as --output '=json' in every position, and
    `-t=local`, `-e=A=1` as '=local', '=A=1'. A short option of a value written with = is read as kubectl reads it;
    a value that is itself -X=... (--profile-options -i=x) and the words after -- are left as typed."""
    import json

    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "'=" not in err, err
    json.loads(out)


def test_r1_an_options_value_and_a_command_after_dashes_are_left_as_typed():
    """R1: only a short option's own -X=VALUE is split: not another option's value, not the command after --."""
    from nodeweave.cli import short_equals_split

    assert short_equals_split(["run", "--profile-options", "-i=x", "-o=json"]) == \
        ["run", "--profile-options", "-i=x", "-o", "json"]
    assert short_equals_split(["exec", "-o=yaml", "--", "ls", "-o=x"]) == ["exec", "-o", "yaml", "--", "ls", "-o=x"]
    assert short_equals_split(["run", "--dry-run", "-q=1"]) == ["run", "--dry-run", "-q=1"]  # a flag: as typed



# docker's interactive-terminal spellings (docker exec -it, docker run -it), typed to the verbs that take a command
INTERACTIVE = [(verb, typed) for verb in ("exec", "run") for typed in ("-i", "-it", "--interactive", "--tty")]


@pytest.mark.parametrize("verb, typed", INTERACTIVE)
def test_c14_dockers_interactive_terminal_flags_name_nodeweave_shell(capsys, team, verb, typed):
    """C14: `exec -it -- bash` (docker's interactive terminal) was told the command goes after `--`, which it did;
    nodeweave's word for it, `nodeweave shell`, was not named. exec and run name it for -i, --interactive, --tty
    (othertools.ELSEWHERE)."""
    from nodeweave.errors import EXIT_USAGE

    code, _, err = run_cli(capsys, verb, typed, "--dry-run", "--", "bash")
    assert code == EXIT_USAGE and "`nodeweave shell --node N`" in err and "go after `--`" not in err, err


@pytest.mark.parametrize("argv", [("run", "--dry-run"), ("check", "--dry-run"),
                                  ("run", "--dry-run", "--sweep", "X=1,2"), ("run", "--dry-run", "-o", "json")])
def test_c1_a_dry_run_beside_a_run_in_progress_says_the_real_one_would_end_with_exit_3(capsys, team, monkeypatch,
                                                                                        argv):
    """C1: the real `run` and `check` are refused (exit 3) while a run is in progress on the nodes; their dry runs
    (a sweep's too) printed a clean plan with no word of it, as they do say the nodes not up. One rule, busy_line,
    said by the dry run's would-fail notes for every verb it refuses (BUSY_CONSEQUENCE)."""
    import nodeweave.cli.habits.clusteropts as clusteropts
    import nodeweave.cluster.onbackend as onbackend

    monkeypatch.setattr(clusteropts, "first_refusal", lambda backend: None)
    monkeypatch.setattr(onbackend, "down_line", lambda *a: "")
    monkeypatch.setattr(onbackend, "runs_in_progress",
                        lambda backend, nodes: [(node, {"run_id": "20261130T174353Z-team", "started": 0})
                                                for node in nodes])
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert f"the real {argv[0]} would end with exit 3: run 20261130T174353Z-team is in progress on" in out, out


@pytest.mark.parametrize("argv, verb", [(("run", "--", "nosuch.py"), "run"), (("run", "--", "sub/nosuch.py"), "run"),
                                        (("up", "--run"), "up")])
def test_c10_a_script_missing_from_the_mounted_workspace_is_refused_before_any_node_starts(capsys, team,
                                                                                            monkeypatch, argv, verb):
    """C10: on the local target the workspace folder is mounted at workspace.path, over whatever the image holds,
    so a script missing there fails on every node: `run -- nosuch.py` noted it ("unless the image holds it"),
    started both nodes and left a failed run folder. The real verb refuses it (exit 2, nothing started); its dry
    run says the real one would end with exit 2. up --run (the spec's script) alike."""
    import nodeweave.cluster.onbackend as onbackend

    if verb == "up":
        (team / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text().replace("train.py", "nosuch.py"))
    monkeypatch.setattr(onbackend, "require_up", lambda *a, **k: None)
    monkeypatch.setattr(onbackend, "refuse_busy", lambda *a, **k: None)
    code, out, err = run_cli(capsys, *argv[:1], "--dry-run", *argv[1:])
    assert code == 0 and f"the real {verb} would end with exit 2: " in out and "unless the image" not in out, out
    if verb == "run":
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and "every node would fail with 'No such file'; nothing was started" in err, err
        assert not (team / "runs").exists() or not any((team / "runs").iterdir())


def test_c11_a_node_0_killed_before_its_end_leaves_a_goodput_record_runs_show_accounts(tmp_path, monkeypatch):
    """C11: a run ended by `nodeweave stop --grace 0` (node 0's entrypoint SIGKILLed, no close) read "goodput: - of
    0 s productive; training 0 s" after 30 s of training: the periodic copy of node 0's timeline carried no time of
    its own ("saved", which runs show accounts to for a record never ended), so the account ended at the launch."""
    import json

    from nodeweave.entrypoint.metrics.live import RECORD, Live
    from nodeweave.runs.goodput import lines, run_goodput

    class Settings(dict):
        env = {"TMPDIR": str(tmp_path)}

    live = Live(Settings(), print, launched=1000.0)
    live.folders = [str(tmp_path)]
    live.timeline["generations"].append({"generation": 0, "first": 1002.0, "last": 1030.0, "ended": None,
                                         "fault": None, "stalls": [], "steps": []})
    live.save(now=1031.0)  # the 5-s save; the process is then killed: no close()
    kept = json.loads((tmp_path / RECORD).read_text())
    assert kept["ended"] is None and kept["saved"] == 1031.0

    class Entry:
        path = tmp_path

    said = lines(run_goodput(Entry()))
    assert said and "of 31 s productive" in said[0] and "training 0 s" not in said[0], said
