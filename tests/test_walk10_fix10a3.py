"""walk10's rows A15, A24, A25, A27, A28, A29 (issue 43, /work/wt/walk10a-report.md), each fixed as a class and
walked here over the product's own table where one exists. Each test fails on the code before its fix. No container
is started.
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli
from cli_run import one_line
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A24, A25: options typed before the verb ------------------------------------------------------------------------

def attached_short_options():
    from nodeweave.cli import VERB_OPTIONS_WITH_VALUE

    return [name for name in VERB_OPTIONS_WITH_VALUE if not name.startswith("--")]


@pytest.mark.parametrize("option", attached_short_options())
@pytest.mark.parametrize("words", [["validate"], ["runs", "ls"], ["image", "variants"]])
def test_an_attached_short_option_before_the_verb_is_the_verbs(option, words):
    """A24: `nodeweave -ojson validate` was read as the root's own hidden -o and dropped (a table, exit 0); between
    a group and its sub-verb it was "no such option: -o"."""
    from nodeweave.cli import verb_options_first

    assert verb_options_first([f"{option}json", *words, "x"]) == [*words, f"{option}json", "x"]
    if len(words) == 2:
        assert verb_options_first([words[0], f"{option}json", words[1]]) == [*words, f"{option}json"]


def test_an_attached_format_before_the_verb_is_read_and_judged(capsys, job_folder):
    """A24: `-ojson validate` prints JSON; `-oxml validate` is refused as `validate -oxml` is; `-ojson` alone says
    no verb follows."""
    code, out, _ = run_cli(capsys, "-ojson", "validate")
    assert code == 0 and json.loads(out)["name"]
    code, out, err = run_cli(capsys, "-oxml", "validate")
    assert code == 2 and "'xml' is not accepted" in one_line(err)
    code, _, err = run_cli(capsys, "-ojson")
    assert code == 2 and "no verb follows" in one_line(err)


@pytest.mark.parametrize("argv, fixed", [
    (["-n", "ml", "run", "--dry-run"], "nodeweave run -n ml --dry-run"),
    (["--dry-run", "run"], "nodeweave run --dry-run"),
    (["-t", "kubernetes", "status"], "nodeweave status -t kubernetes"),
    (["--node", "0", "-o", "json", "hosts", "probe"], "nodeweave hosts probe --node 0 -o json"),
])
def test_a_verbs_option_before_the_verb_is_refused_with_where_it_goes(capsys, job_folder, argv, fixed):
    """A25: `nodeweave -n ml run --dry-run` was "no such option: -n; nodeweave --help lists what is accepted":
    nothing said it is the verb's option; now the refusal gives the command with it after the verb."""
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and f"`{fixed}`" in line and "not an option of nodeweave itself" in line, line


# -- A27: a second bench never replaces the first's result (its default file is one per bench, as run's folders) ---

@pytest.mark.parametrize("there", ["bench.json", "bench.png", "link"])
def test_a_second_bench_keeps_the_first_result(capsys, job_folder, monkeypatch, there):
    """A27: the second `bench` replaced runs/nodeweave-bench.json (a baseline lost) and said only "wrote ..."; the
    default is runs/<UTC time>-bench.json, and a result (or its plot, or a link) of that very second is kept."""
    import nodeweave.cluster.runfolder as runfolder

    monkeypatch.setattr(runfolder, "utc_stamp", lambda epoch=None: "20261130T120000Z")
    runs = job_folder / "runs"
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--sizes", "1K", "--ops", "all_reduce")
    assert code == 0, err
    assert f"{runs}/20261130T120000Z-bench.json" in out, out
    runs.mkdir()
    if there == "link":
        (runs / "20261130T120000Z-bench.json").symlink_to(job_folder / "train.py")
    else:
        (runs / f"20261130T120000Z-{there}").write_text("{}\n")
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--sizes", "1K", "--ops", "all_reduce")
    assert code == 0, err
    assert f"{runs}/20261130T120000Z-bench-2.json" in out, out


# -- A28: every verb that probes hosts says a Kubernetes API it cannot reach as such, exit 3 -------------------------

API_DOWN = ('exit 1: couldn\'t get current server API group list: Get "http://localhost:8080/api?timeout=32s": dial '
            'tcp 127.0.0.1:8080: connect: connection refused')


def _project_without_a_kubernetes_api(tmp_path, monkeypatch):
    """A folder with train.py, made the working folder, and a kubectl on PATH that answers nothing (exit 1)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "kubectl").write_text("#!/bin/sh\nexit 1\n")
    (tools / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("argv", [("init", "--host", "pod:x"), ("hosts", "probe", "--node", "pod:x")])
def test_a_kubernetes_api_out_of_reach_is_said_alike_by_every_prober(capsys, tmp_path, monkeypatch, argv):
    """A28: `init --host pod:x` said "1 of 1 host(s) did not answer: pod:x: exit 1: couldn't get current server API
    group list", exit 1, as if the pod were down, where `hosts probe --node pod:x` says the API cannot be reached,
    exit 3, with the kubeconfig hint."""
    import nodeweave.hosts as hosts
    from nodeweave.errors import EXIT_ENVIRONMENT

    _project_without_a_kubernetes_api(tmp_path, monkeypatch)
    monkeypatch.setattr(hosts, "probe_hosts", lambda targets, **_: [
        hosts.HostReport(target, "unreachable", error=API_DOWN) for target in targets])
    code, _, err = run_cli(capsys, *argv)
    last = err.strip().splitlines()[-1]
    assert code == EXIT_ENVIRONMENT, err
    assert "the Kubernetes API cannot be reached" in last and "kubectl config current-context" in last, last


# -- A29: a pod's address as nodeweave prints it is read back wherever an address is read ---------------------------

def namespaced_kinds():
    from nodeweave.remote import TRANSPORTS

    return [cls for cls in TRANSPORTS if cls.namespaced]


@pytest.mark.parametrize("cls", namespaced_kinds(), ids=lambda cls: cls.kind)
@pytest.mark.parametrize("namespace, container", [("ml", None), (None, "trainer"), ("ml", "trainer")])
def test_every_printed_pod_address_is_read_back(cls, namespace, container):
    """A29: `pod:default/yjob-1[trainer]`, the label every plan prints, was "pod name 'default/yjob-1[trainer]' is
    not accepted" where an address is read; it is the pod, its namespace and container."""
    from nodeweave.remote import parse_target

    printed = cls.make("llama-0", namespace=namespace, container=container)
    read = parse_target(f"{cls.kind}:{printed.label.partition(':')[2]}")
    assert (read.name, read.namespace, read.container) == ("llama-0", namespace, container)
    assert read.label == printed.label


def test_a_pod_address_disagreeing_with_n_is_refused(capsys, job_folder):
    """A29: the namespace in the address and -n must agree: one line naming both."""
    code, _, err = run_cli(capsys, "hosts", "probe", "--node", "pod:default/yjob-1", "-n", "ml", "--dry-run")
    line = one_line(err)
    assert code == 2 and "'default'" in line and "'ml'" in line, line


@pytest.mark.parametrize("argv", [("hosts", "probe", "--node"), ("init", "--host")])
@pytest.mark.parametrize("address, extra", [("pod:ml/llama-0[trainer]", ()),
                                            ("pod:llama-0", ("-n", "ml", "-c", "trainer", "--kube-context", "prod"))])
def test_every_prober_reads_a_pods_namespace_container_and_context(capsys, tmp_path, monkeypatch, argv, address, extra):
    """A29: `init --host pod:llama-0 -n ml` was "no such option: -n" (init probed the current context's namespace
    only) and `init --host pod:ml/llama-0` a refused pod name; init and hosts probe read both, and --kube-context."""
    import nodeweave.hosts as hosts

    _project_without_a_kubernetes_api(tmp_path, monkeypatch)
    seen = []

    def probe(targets, **_):
        seen.extend(targets)
        return [hosts.HostReport(target, "unreachable", error="exit 1: pods \"llama-0\" not found") for target in targets]

    monkeypatch.setattr(hosts, "probe_hosts", probe)
    code, _, err = run_cli(capsys, *argv, address, *extra)
    assert code == 1 and "did not answer" in err, err
    (target,) = seen
    assert (target.name, target.namespace, target.container) == ("llama-0", "ml", "trainer")
    if extra:
        assert target.options.kube_context == "prod"


# -- A15: every fixed choice completes: a comma list's next item, and every target the verbs take -------------------

def completed(cwd, line: str) -> "list[str]":
    import cli_run

    env = {"PATH": "/usr/bin:/bin", "_NODEWEAVE_COMPLETE": "complete_bash", "COMP_WORDS": line,
           "COMP_CWORD": str(len(line.split(" ")) - 1)}
    return cli_run.run(cli_run.PROGRAM, env=env, cwd=cwd, timeout=60).stdout.split()


def ops_lines():
    from nodeweave.bench.options import OPS

    return [("nodeweave bench --ops ", [*OPS, "all"]), (f"nodeweave bench --ops {OPS[0]},",
                                                        [f"{OPS[0]},{op}" for op in OPS[1:]])]


def target_lines():
    from nodeweave.cluster.options import TARGETS

    return [(f"nodeweave {verb} --target ", [*TARGETS[:3], "openshift", *TARGETS[3:]]) for verb in ("up", "run")] + [
        ("nodeweave image build --target ", ["local", "openshift"])]


@pytest.mark.parametrize("line, offered", ops_lines() + target_lines())
def test_every_fixed_choice_completes(tmp_path, line, offered):
    """A15: `bench --ops <TAB>` completed nothing (nor the comma list's next item), `--target <TAB>` left out
    openshift, which the verbs take and README uses, and `image build --target <TAB>` completed nothing."""
    assert completed(tmp_path, line) == offered


def test_the_targets_help_names_every_target_it_completes():
    """A15: `run --help`'s --target text named four targets while `-t openshift` is taken."""
    from nodeweave.cli.habits.clusteropts import TARGET

    choices = TARGET.autocompletion.choices
    assert "openshift" in choices
    for name in choices:
        assert f"{name} (" in TARGET.help, name
