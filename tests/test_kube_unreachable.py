"""Issue 43, replay N1: with no Kubernetes cluster to reach, every kubernetes and openshift verb's real run ends as
its dry run foretold: exit 3 and the same line naming the context to check, before it writes or starts anything.

Before the fix the dry run of ``down`` (and ``up``) said "the real down would end with exit 3: kubectl cannot reach
a Kubernetes cluster ...; check kubectl config current-context, or pass --kube-context", while the real one wrote
the tree, ran ``kubectl delete -k`` and ended with exit 1 and kubectl's own words, no hint. The cluster here is
real kubectl (oc: the same program under OpenShift's name) with a kubeconfig whose server nothing listens on.
"""

from __future__ import annotations

import os
import shutil

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import make_team

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: nowhere
  context:
    cluster: nowhere
    user: nobody
current-context: nowhere
users:
- name: nobody
  user:
    token: not-a-token
"""

# verb -> (the words before the reach flags, the words after them); the dry run adds --dry-run before "--".
DRY_AND_REAL = {
    "up": (["up"], []),
    "down": (["down"], []),
    "stop": (["stop"], []),
    "run": (["run"], []),
    "check": (["check"], []),
    "exec": (["exec"], ["--", "true"]),
    "shell": (["shell"], []),
    "sync": (["sync"], []),
}
REAL_ONLY = {"status": ["status"], "logs": ["logs"], "top": ["top", "--once"]}
HINT = "check `{cli} config current-context`, or pass --kube-context"


@pytest.fixture(params=["kubernetes", "openshift"])
def nowhere(request, tmp_path, monkeypatch):
    """A team folder, and a kubeconfig pointing at a port nothing listens on; for openshift, the spec says so and
    ``oc`` is kubectl under that name (what the verbs run is the same program, named as OpenShift's)."""
    (tmp_path / "team").mkdir()
    team = make_team(tmp_path / "team", monkeypatch)
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    cli = "kubectl"
    if request.param == "openshift":
        cli = "oc"
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "oc").symlink_to(shutil.which("kubectl"))
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
        spec = team / "nodeweave.yaml"
        spec.write_text(spec.read_text() + "kubernetes:\n  openshift: true\n")
    return team, cli


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("verb", list(DRY_AND_REAL))
def test_the_real_verb_refuses_an_unreachable_cluster_as_its_dry_run_said(nowhere, verb, capsys):
    team, cli = nowhere
    before, after = DRY_AND_REAL[verb]
    code, out, err = run_cli(capsys, *before, "-t", "kubernetes", "--dry-run", *after)
    assert code == 0, err
    notes = [line for line in (out + err).splitlines() if f"the real {verb} would end with exit 3: " in line]
    assert len(notes) == 1, out + err
    foretold = notes[0].split("would end with exit 3: ", 1)[1]
    assert "cannot reach a Kubernetes cluster" in foretold and HINT.format(cli=cli) in foretold
    files = listing(team)

    code, out, err = run_cli(capsys, *before, "-t", "kubernetes", *after)
    assert code == 3, out + err
    assert one_line(err) == f"nodeweave: error: {foretold}"
    assert listing(team) == files  # nothing written: not the tree, not the record of what up made


@pytest.mark.parametrize("verb", list(REAL_ONLY))
def test_a_verb_without_a_dry_run_refuses_it_the_same_way(nowhere, verb, capsys):
    _, cli = nowhere
    code, out, err = run_cli(capsys, *REAL_ONLY[verb], "-t", "kubernetes")
    assert code == 3, out + err
    line = one_line(err)
    assert "cannot reach a Kubernetes cluster" in line and HINT.format(cli=cli) in line


def test_a_step_that_meets_an_unreachable_cluster_says_so_with_the_hint(tmp_path, monkeypatch):
    """The cluster going away between the reach check and a step (``apply -k``, ``delete -k``): the step's failure
    is the same exit 3 and hint, not kubectl's words alone with exit 1."""
    from nodeweave.errors import EnvironmentProblem
    from nodeweave.steps import Step, execute

    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    step = Step("delete the job's token Secrets", ("kubectl", "delete", "secret", "-l", "a=b", "--ignore-not-found"))
    with pytest.raises(EnvironmentProblem) as raised:
        execute(step)
    assert raised.value.exit_code == 3
    assert "kubectl cannot reach a Kubernetes cluster (delete the job's token Secrets)" in str(raised.value)
    assert HINT.format(cli="kubectl") in str(raised.value)


@pytest.mark.parametrize("flags", [["--image", "reg.example/x:1"], ["--check", "--no-wait"]])
def test_ups_own_mistake_is_exit_2_before_the_cluster_is_asked(nowhere, flags, capsys):
    """A flag up refuses is the one thing wrong with the command, unreachable cluster or not: exit 2, dry or real."""
    for dry in (["--dry-run"], []):
        code, out, err = run_cli(capsys, "up", "-t", "kubernetes", *flags, *dry)
        assert code == 2, out + err
        assert "cannot reach" not in err and flags[0] in one_line(err)


@pytest.mark.parametrize("nowhere", ["openshift"], indirect=True)
def test_an_openshift_image_build_refuses_an_unreachable_cluster_as_its_dry_run_said(nowhere, capsys):
    """The same class on `image build -t openshift`: its dry run said nothing, the real one wrote the BuildConfig
    tree, staged the upload and ended with exit 1 on the apply. It takes no --kube-context: the hint says so."""
    team, cli = nowhere
    code, _, err = run_cli(capsys, "render", "entrypoint")  # the pyz the image copies
    assert code == 0, err
    code, out, err = run_cli(capsys, "image", "build", "-t", "openshift", "--dry-run")
    assert code == 0, err
    notes = [line for line in out.splitlines() if "the real build would end with exit 3: " in line]
    assert len(notes) == 1, out
    foretold = notes[0].split("would end with exit 3: ", 1)[1]
    assert "oc cannot reach a Kubernetes cluster" in foretold and "--kube-context" not in foretold
    assert "`oc config use-context NAME`" in foretold
    files = listing(team)
    code, out, err = run_cli(capsys, "image", "build", "-t", "openshift")
    assert code == 3, out + err
    assert one_line(err) == f"nodeweave: error: {foretold}"
    assert listing(team) == files
