"""walk6's findings on the targets' plans and their docs (issue 43, /work/wt/walk6-report.md rows W2, W9, W10,
W20, W21, W25, W27, W28, W33, W37), each fixed as a class. Each test fails on the code before these fixes. No
container, pod or allocation is started.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from cli_run import in_process as run_cli
from team_folder import SPEC, make_team

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


@pytest.fixture
def examples(tmp_path, monkeypatch):
    """A copy of examples/ (a dry run writes nothing, but a real one would write beside the spec)."""
    copy = tmp_path / "ex"
    shutil.copytree(EXAMPLES, copy)
    monkeypatch.chdir(copy)
    for name in ("NODEWEAVE_SPEC", "NODEWEAVE_TARGET", "KUBECONFIG", "NODEWEAVE_IMAGE"):
        monkeypatch.delenv(name, raising=False)
    return copy


def comments(out: str) -> "list[str]":
    return [line[2:] for line in out.splitlines() if line.startswith("# ")]


# --- W10, W33, W37: a Kubernetes/OpenShift plan names every object its pods need that up does not apply ---------
@pytest.mark.parametrize("spec", ["openshift-deepspeed-roce.yaml", "openshift-elastic.yaml"])
def test_openshift_plan_names_what_the_pods_need_and_where_the_scc_file_is(examples, capsys, spec):
    """Every object a volume or an SR-IOV attachment names is listed before the apply and checked by a step of the
    real up (the pods otherwise wait out the timeout); the SCC note names a file the plan writes (W37: it named
    manifests/overlays/... that nothing wrote); the PodMonitor note names the file written and ingress_from."""
    from nodeweave.spec import load_spec

    loaded = load_spec(examples / spec)
    code, out, err = run_cli(capsys, "up", "-t", "openshift", "--spec", spec, "--dry-run")
    assert code == 0, err
    notes = comments(out)
    written = {m.group(1) for m in re.finditer(r"^# would write (\S+) ", out, re.M)}
    needed = [v.config_map for v in loaded.volumes if v.config_map] + \
        [a.rpartition("/")[2].partition("@")[0] for a in loaded.network.attachments]
    assert needed, "the example names no prerequisite: the test would prove nothing"
    needs = [n for n in notes if n.startswith("needs first")]
    assert len(needs) == 1 and all(name in needs[0] for name in needed), notes
    check = [line for line in out.splitlines() if line.startswith("oc get ") and " -o name" in line]
    assert len(check) == 1 and all(f"/{name}" in check[0] for name in needed), out
    assert out.index(check[0]) < out.index("\noc apply "), "the check runs before anything is applied"

    scc = [n for n in notes if n.startswith("needs an admin first")]
    assert len(scc) == 1, notes
    named = re.search(r"applies (\S+\.yaml) once", scc[0]).group(1)
    assert named in written, (named, sorted(written))

    image = [n for n in notes if "`nodeweave image build" in n]
    assert len(image) == 1 and f"--spec {spec}`" in image[0], image  # W9's class: a pasted hint builds this spec
    monitor = [n for n in notes if "PodMonitor" in n]
    assert len(monitor) == 1 and "ingress_from" in monitor[0], notes
    named = re.search(r"-f (\S+podmonitor\.yaml)`", monitor[0]).group(1)
    assert named in written, (named, sorted(written))


def test_kubernetes_plan_checks_a_secret_and_a_claim_a_volume_names(team, capsys):
    """The same rule on plain Kubernetes, for every volume kind that names an object up does not make."""
    (team / "nodeweave.yaml").write_text(SPEC + "volumes:\n  - {name: creds, path: /creds, secret: hf-token}\n"
                                         "  - {name: data, path: /data, claim: datasets}\n"
                                         "kubernetes: {namespace: ml, ingress_from: [{namespace_labels: "
                                         "{team: obs}}]}\n")
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--dry-run")
    assert code == 0, err
    needs = [n for n in comments(out) if n.startswith("needs first")]
    assert len(needs) == 1 and "Secret hf-token" in needs[0] and "PersistentVolumeClaim datasets" in needs[0], out
    assert "kubectl get -n ml secret/hf-token pvc/datasets -o name" in out, out
    monitor = [n for n in comments(out) if "PodMonitor" in n]
    assert len(monitor) == 1 and "ingress_from" not in monitor[0], monitor  # the spec names its Prometheus already


# --- W20, W21: the Slurm verbs with no allocation recorded say "not up" (exit 3) and how to see an sbatch job ------
SLURM = SPEC + "slurm: {partition: gpu}\n"


@pytest.mark.parametrize("verb", [["logs"], ["logs", "-f"], ["status"], ["top", "--once"], ["logs", "--container"]])
def test_slurm_verbs_with_no_allocation_say_not_up_and_name_the_sbatch_way(team, capsys, verb):
    """logs said "the nodes hold and no run ..." with exit 2 where nothing was allocated (W20); every verb's
    not-up line names how a job submitted with the documented sbatch is seen (W21), not only `up`."""
    (team / "nodeweave.yaml").write_text(SLURM)
    code, out, err = run_cli(capsys, *verb, "-t", "slurm")
    line = [x for x in err.splitlines() if x.strip()]
    assert code == 3 and len(line) == 1 and "is not up" in line[0] and "hold" not in line[0], (code, err)
    assert "squeue --me --name team" in line[0] and "nodeweave top --url http://" in line[0], line


def test_slurm_down_with_no_allocation_names_the_sbatch_way(team, capsys):
    (team / "nodeweave.yaml").write_text(SLURM)
    code, out, err = run_cli(capsys, "down", "-t", "slurm")
    assert code == 0 and "squeue --me --name team" in out + err, (code, out, err)


# --- W2: every plan that lists nodes names the spare's role the same way ------------------------------------------
RECOVERY = SPEC + "recovery: {enabled: true, spares: 1, checkpoint_dir: checkpoints}\n"


@pytest.mark.parametrize("argv", [["run", "--dry-run"], ["exec", "--dry-run", "--", "hostname"], ["check", "--dry-run"],
                                  ["stop", "--dry-run"], ["up", "--dry-run"], ["up", "-t", "kubernetes", "--dry-run"],
                                  ["up", "-t", "hosts", "--host", "a", "--host", "b", "--host", "c",
                                   "--remote-dir", "/srv/team", "--dry-run"]])
def test_every_plan_listing_nodes_names_the_spare(team, capsys, argv):
    """With recovery and one spare, node 2 is the spare: each plan's line for it says so, in the one wording
    (``SPARE_ROLE``), and no training node's line does; ``-o json`` carries it as the node's role."""
    from nodeweave.cluster.phases import SPARE_ROLE

    (team / "nodeweave.yaml").write_text(RECOVERY)
    (team / "checkpoints").mkdir(mode=0o777)
    (team / "checkpoints").chmod(0o777)
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 or "is not built here" in out, err  # up's exit 3 where the image is not built (walk18a A5)
    naming = [line for line in out.splitlines() if line.startswith(("# node-2 (", "# start node 2", "# then wait"))]
    assert naming and all(SPARE_ROLE in line for line in naming), out
    training = [line for line in out.splitlines() if line.startswith("# node-0") or line.startswith("# node-1")]
    assert all(SPARE_ROLE not in line for line in training), training
    if argv[0] in ("run", "exec", "check", "stop"):
        code, out, err = run_cli(capsys, *argv[:1], "-o", "json", *argv[1:])
        assert code == 0 and f'"role": "{SPARE_ROLE}"' in out, (err, out[:2000])


# --- W25: a file rendered into a team's folder names only a command that works there -------------------------------
def test_no_rendered_file_names_make_render(team, capsys):
    """`make render` is nodeweave's own checkout's target: a team's folder (pip install, no Makefile) got it in
    both compose headers and in the zipapp's mark line; every file `render all` writes is read, bytes too."""
    (team / "nodeweave.yaml").write_text(SPEC + "slurm: {partition: gpu}\n")
    code, out, err = run_cli(capsys, "render", "all")
    assert code == 0, err
    written = [p for p in team.rglob("*") if p.is_file() and ".nodeweave" not in p.parts
               and p.name not in ("nodeweave.yaml", "train.py")]
    assert any(p.suffix == ".pyz" for p in written) and any(p.parent.name == "compose" for p in written), written
    naming = [str(p.relative_to(team)) for p in written if b"make render" in p.read_bytes()]
    assert not naming, naming
    header = (team / "compose" / "local.yaml").read_text().splitlines()[1]
    assert "`nodeweave render compose`" in header, header


# --- W27: sync on the local target (the nodes mount the folder) with nothing up: one story, the picked nodes only ---
@pytest.mark.skipif(shutil.which("podman") is None,
                    reason="podman is not installed (.ci/setup-engine.sh installs it): it answers that the nodes are "
                           "not up; without it the sync ends on the missing engine (tests/test_notools_order.py)")
@pytest.mark.parametrize("picked", [[], ["--node", "1"]])
def test_local_sync_not_up_hint_leaves_sync_out_and_names_only_the_picked_nodes(team, capsys, picked):
    code, out, err = run_cli(capsys, "sync", "--dry-run", *picked)
    assert code == 0, err
    not_up = [n for n in comments(out) if "would end with exit 3" in n]
    assert len(not_up) == 1 and "nothing to send" in out, out
    hint = not_up[0]
    assert "`nodeweave sync`" not in hint and "then `nodeweave run`" in hint, hint
    if picked:
        assert "node-1 (" in hint and "node-0" not in hint, hint
    code, out, err = run_cli(capsys, "sync", *picked)
    assert code == 3 and "`nodeweave sync`" not in err, err


# --- W28: up --engine none says what it waits for, and the hosts list it sends says who reads it -------------------
def test_bare_hosts_up_plan_says_what_it_waits_for(examples, capsys):
    code, out, err = run_cli(capsys, "up", "--spec", "lan-desktops.yaml", "--engine", "none", "--dry-run")
    assert code == 0, err
    wait = [line for line in out.splitlines() if line.startswith("# then wait")]
    assert len(wait) == 1 and "node(s) run" not in wait[0] and "answers over ssh" in wait[0], wait
    assert "nothing starts until `nodeweave run`" in wait[0], wait
    assert "NODEWEAVE_HOSTFILE" in out, "the hosts list's header names who reads it on bare hosts"
    code, out, err = run_cli(capsys, "up", "--spec", "lan-desktops.yaml", "--dry-run")
    assert code == 0 and re.search(r"^# then wait .* until 3 node\(s\) run: ", out, re.M), out[-600:]


# --- W9: a hint names the --spec its command was given, so pasting it works -------------------------------------
def test_image_build_hint_carries_the_spec_and_pasting_it_fixes_the_build(tmp_path, monkeypatch, capsys):
    """`image build --spec examples/x.yaml` in a folder with no nodeweave.yaml: the refusal's `render entrypoint`
    hint, pasted, rendered nothing (no spec found); and it named images/<variant>/Dockerfile, which did not exist."""
    (tmp_path / "examples").mkdir()
    shutil.copy(EXAMPLES / "rocm-bare-hosts.yaml", tmp_path / "examples")
    shutil.copy(EXAMPLES / "train.py", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    build = ("image", "build", "rocm70", "--spec", "examples/rocm-bare-hosts.yaml", "--dry-run")
    code, out, err = run_cli(capsys, *build)
    assert code == 2 and "images/rocm70/Dockerfile" not in err, err
    hint = re.search(r"`(nodeweave render entrypoint[^`]*)`", err).group(1)
    assert "--spec examples/rocm-bare-hosts.yaml" in hint, hint
    code, out, err = run_cli(capsys, *shlex.split(hint)[1:])
    assert code == 0, err
    code, out, err = run_cli(capsys, *build)
    assert code == 0, err
