"""walk5's findings on the targets' dry runs, the examples and the hints in rendered files (issue 43,
/work/wt/walk5-report.md rows W2, W13, W28, W59, W71, ...), each fixed as a class. Each test fails on the code
before these fixes. No container, pod or allocation is started: kustomize is the real one inside ``kubectl``.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import cli_run
from cli_run import in_process as run_cli, one_line
from team_folder import SPEC, make_team

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"



@pytest.fixture
def team(tmp_path, monkeypatch):
    team_dir = make_team(tmp_path, monkeypatch)
    return team_dir


# --- W71: down deletes only what it says: the job's objects, never a Namespace or cluster-scoped object --------
def kustomize(folder: Path) -> list:
    out = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


OWN_OVERLAY_EXTRA = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: team-reader
rules: []
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not "
                    "installed (.ci/setup-tools.sh installs it)")
@pytest.mark.parametrize("folder", ["base", "openshift", "rocm", "myov"])
def test_down_deletes_only_the_jobs_objects_of_every_folder(team, folder):
    """Every folder ``--overlay`` takes (the rendered ones and a team's own that holds the Namespace and a
    ClusterRole, as cluster.md invites): what ``down``'s ``delete -k`` reads is exactly the job's objects up
    applied, less the kept claim, and never a Namespace or a cluster-scoped object (walk5, W71)."""
    from nodeweave import overlay
    from nodeweave.cluster.backends.kube import FOLDERS
    from nodeweave.spec import load_spec
    from nodeweave.targets.kubernetes.common import workspace_claim
    from nodeweave.resolve import resolve

    spec = load_spec(team / "nodeweave.yaml")
    tree = team / "kept"
    resource = FOLDERS.get(folder, "../../" + folder)
    if folder == "myov":  # the walk's overlay: the base plus the base's namespace.yaml and a ClusterRole of its own
        own = tree / folder
        own.mkdir(parents=True)
        rendered = overlay.kube_tree(spec, "ml-training", "../base", {}, keep_claims=True)
        (own / "namespace.yaml").write_text(rendered["manifests/base/namespace.yaml"])
        (own / "clusterrole.yaml").write_text(OWN_OVERLAY_EXTRA)
        (own / "kustomization.yaml").write_text("resources:\n- ../manifests/base\n- namespace.yaml\n"
                                                "- clusterrole.yaml\n")
    for name, keep_claims in (("up", False), ("down", True)):
        files = overlay.kube_tree(spec, "ml-training", resource, {"io.nodeweave.job": "team"},
                                  mode="hold" if name == "up" else None, keep_claims=keep_claims)
        root = tree if name == "down" else team / "kept-up"
        if name == "up" and folder == "myov":
            shutil.copytree(tree / folder, root / folder)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        if name == "up":
            (root / overlay.kube_token_file()).write_text("secret\n")
            applied = kustomize(root / overlay.KUBE_OVERLAY)
    deleted = kustomize(tree / overlay.KUBE_OVERLAY)
    label = overlay.JOB_LABEL
    assert deleted and all((d["metadata"].get("labels") or {}).get(label) == "team" for d in deleted), \
        [(d["kind"], d["metadata"]["name"]) for d in deleted]
    assert not any(d["kind"] in ("Namespace", "ClusterRole") for d in deleted)
    claim = workspace_claim(resolve(spec))
    theirs = {(d["kind"], d["metadata"]["name"]) for d in applied
              if (d["metadata"].get("labels") or {}).get(label) == "team" and d["kind"] != "Secret"}
    assert {(d["kind"], d["metadata"]["name"]) for d in deleted} == theirs - {("PersistentVolumeClaim", claim)}
    if folder == "myov":
        assert {"Namespace", "ClusterRole"} <= {d["kind"] for d in applied}  # up did apply them: down keeps them


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl is not installed (.ci/setup-tools.sh installs it): what down keeps is named from "
                           "the tree its kustomize builds")
def test_down_plan_says_what_it_keeps(team, capsys):
    (team / "myov").mkdir()
    (team / "myov" / "kustomization.yaml").write_text("resources:\n- ../manifests/base\n")
    assert run_cli(capsys, "render", "manifests")[0] == 0  # the base the overlay names (else kustomize refuses it)
    code, out, err = run_cli(capsys, "down", "-t", "kubernetes", "--overlay", "myov", "--dry-run")
    assert code == 0, err
    assert "keeping the workspace claim" not in out
    # what it keeps is named from the tree kustomize builds (test_kube_applied): here, nothing but the claim
    assert "labelled app.kubernetes.io/instance=team); kept: the workspace claim" in out


# --- W13: every example header's commands, and every doc command on an example, work as written ---------------
def header_commands(example: Path) -> "list[str]":
    """The shell commands an example's opening comment names (``# nodeweave ...``, ``# oc apply -k ...``, the
    command after ``then on every host ...:``), split at ``&&``."""
    commands = []
    for line in example.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("# ").split("   (")[0]
        if ": " in text and text.startswith("then "):
            text = text.rsplit(": ", 1)[1]
        if text.startswith(("nodeweave ", "oc apply", "kubectl apply", "sbatch ", "docker compose")):
            commands += [part.strip() for part in text.split("&&")]
    return commands


def doc_commands() -> "list[tuple[str, list[str]]]":
    """Each docs/*.md and README code block that runs nodeweave on a file of examples/: its command lines."""
    blocks = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", page.read_text(), re.S):
            lines = [line.split("  #")[0].strip() for line in block.splitlines()]
            lines = [line for line in lines if line and not line.startswith("#")]
            if any(line.startswith("nodeweave ") and "examples/" in line for line in lines):
                blocks.append((page.name, lines))
    return blocks


def walk_commands(capsys, folder: Path, monkeypatch, commands: "list[str]") -> None:
    """Run each ``nodeweave`` command as written (in this process) from ``folder``; check that each path a
    following ``sbatch``/``apply -k``/``compose -f`` names is there, from where the command says to run it."""
    cwd, out = folder, folder
    for command in commands:
        words = shlex.split(command)
        monkeypatch.chdir(cwd)
        if words[0] == "nodeweave":
            code, _, err = run_cli(capsys, *words[1:])
            assert code == 0, f"{command!r} exits {code}: {err}"
            if "--out" in words:
                out = cwd / words[words.index("--out") + 1]
        elif words[0] == "cd":
            cwd = cwd / words[1]
        elif words[0] == "sbatch" or words[:2] == ["NODEWEAVE_RUNTIME=apptainer", "sbatch"]:
            assert (cwd / words[-1]).is_file(), f"{command!r}: no {cwd / words[-1]}"
        elif words[1:3] == ["apply", "-k"]:
            assert (cwd / words[3] / "kustomization.yaml").is_file(), f"{command!r}: no kustomization there"
        elif words[:2] == ["docker", "compose"]:
            assert (out / words[words.index("-f") + 1]).is_file(), f"{command!r}: not in {out}"
        else:
            raise AssertionError(f"the test does not know how to check {command!r}: teach it")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_header_command_works_as_written(team, capsys, monkeypatch, example):
    shutil.copytree(EXAMPLES, team / "examples")
    walk_commands(capsys, team, monkeypatch, header_commands(EXAMPLES / example))


@pytest.mark.parametrize("page, commands", doc_commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_doc_command_on_an_example_works_as_written(team, capsys, monkeypatch, page, commands):
    shutil.copytree(EXAMPLES, team / "examples")
    walk_commands(capsys, team, monkeypatch, commands)


# --- W28: the regenerate hint in every rendered file, run in the spec's folder, refreshes that very file -------
@pytest.mark.parametrize("spec, out", [("examples/slurm-accelerate.yaml", "build/sft"),
                                       ("sub/nodeweave.yaml", None), ("nodeweave.yaml", "elsewhere")])
def test_every_rendered_hint_refreshes_the_files_it_sits_in(team, capsys, monkeypatch, spec, out):
    shutil.copytree(EXAMPLES, team / "examples")
    (team / "sub").mkdir()
    shutil.copy(team / "nodeweave.yaml", team / "sub" / "nodeweave.yaml")
    code, _, err = run_cli(capsys, "render", "all", "--spec", spec, *(["--out", out] if out else []))
    assert code == 0, err
    root = team / (out or Path(spec).parent)
    hints = {}
    for path in root.rglob("*"):
        if path.is_file() and path.suffix != ".pyz":
            for command in re.findall(r"`(nodeweave render [^`]*)`", path.read_text(errors="replace")):
                hints.setdefault(command, path)
    assert hints, f"no regenerate hint under {root}"
    monkeypatch.chdir((team / spec).parent)  # where the hint says to run it: the same bytes wherever render ran
    for command, path in hints.items():
        code, _, err = run_cli(capsys, *shlex.split(command)[1:], "--check")
        assert code == 0, f"{path.relative_to(team)} says {command!r}, which does not find its files: {err}"
    sbatch = root / "slurm" / "job.sbatch"
    if sbatch.is_file():  # "Submit from the spec's directory: sbatch PATH"
        submit = re.search(r"#   sbatch (\S+)", sbatch.read_text()).group(1)
        assert ((team / spec).parent / submit).resolve() == sbatch.resolve()


# --- W62: $NODEWEAVE_SPEC naming another folder's spec than the one here is said by every verb ---------------
@pytest.mark.parametrize("verb", [["status"], ["down", "--dry-run"], ["sync", "--dry-run"], ["validate"],
                                  ["render", "all", "--dry-run"], ["run", "--dry-run"], ["up", "--dry-run"],
                                  ["exec", "--dry-run", "--", "true"]])
def test_a_spec_from_the_variable_that_is_not_the_one_here_is_said(team, capsys, monkeypatch, verb):
    other = team / "other"
    other.mkdir()
    (other / "nodeweave.yaml").write_text(SPEC)
    (other / "train.py").write_text("print(1)\n")
    monkeypatch.setenv("NODEWEAVE_SPEC", str(other / "nodeweave.yaml"))
    _, _, err = run_cli(capsys, *verb)
    if verb[0] not in ("status", "validate"):  # a verb that acts on that job refuses it (walk15 A22, walk16 A5)
        assert f"$NODEWEAVE_SPEC names {other / 'nodeweave.yaml'}, another folder's spec" in err.replace("\n", " ")
    else:
        assert f"the spec is {other / 'nodeweave.yaml'} (from $NODEWEAVE_SPEC), not nodeweave.yaml found here" in err
    _, _, err = run_cli(capsys, *verb, "--spec", str(other / "nodeweave.yaml"))  # typed: the user chose it
    assert "from $NODEWEAVE_SPEC" not in err
    monkeypatch.setenv("NODEWEAVE_SPEC", "nodeweave.yaml")  # the same file: nothing to say
    _, _, err = run_cli(capsys, *verb)
    assert "from $NODEWEAVE_SPEC" not in err


# --- W59/W60: the shipped LAN example comes up as written; bare hosts get notes about what they use -------------
def test_the_lan_example_comes_up_with_no_engine_and_its_notes_are_the_bare_hosts(team, capsys):
    shutil.copy(EXAMPLES / "lan-desktops.yaml", team / "lan.yaml")
    (team / "train.py").unlink()
    code, out, err = run_cli(capsys, "up", "--spec", "lan.yaml", "--engine", "none", "--dry-run")
    assert code == 0, err
    assert '"$HOME"/lan-llm/.nodeweave hosts' in out  # each desktop's own ~/lan-llm
    assert "localhost/" not in out + err  # no image runs on a bare host: no note about pulling one
    # each desktop's own ~/lan-llm is not judged by this machine's home (walk8 A20: the note said a script missing
    # that this machine cannot see), and nothing speaks of a container's /workspace
    assert "is not in the workspace" not in out + err and "/workspace" not in err
    code, out, err = run_cli(capsys, "up", "--spec", "lan.yaml", "--dry-run")  # in containers: the image matters
    assert code == 0 and "names localhost/" in out and "is not in the workspace" not in out  # walk8 A20 alike


def test_a_relative_workspace_on_hosts_names_both_accepted_forms(team, capsys):
    code, _, err = run_cli(capsys, "up", "-t", "hosts", "--host", "a", "--host", "b", "--dry-run")
    assert code == 2 and "--remote-dir '~/DIR'" in one_line(err) and "/ABSOLUTE/PATH" in err


# --- W42: which node is the spare, in every target's up plan ------------------------------------------------
RECOVERY = SPEC + "recovery: {enabled: true, spares: 1, checkpoint_dir: checkpoints}\n"


@pytest.mark.parametrize("target", [[], ["-t", "hosts", "--host", "a", "--host", "b", "--host", "c",
                                          "--remote-dir", "/srv/j"],
                                    ["-t", "hosts", "--engine", "none", "--host", "a", "--host", "b", "--host", "c",
                                     "--remote-dir", "/srv/j"],
                                    ["-t", "kubernetes"], ["-t", "slurm", "--remote-dir", "/srv/j"]],
                         ids=["local", "hosts", "bare", "kubernetes", "slurm"])
def test_every_up_plan_names_the_spare(team, capsys, target):
    (team / "nodeweave.yaml").write_text(RECOVERY)
    (team / "checkpoints").mkdir(mode=0o777)
    (team / "checkpoints").chmod(0o777)
    code, out, err = run_cli(capsys, "up", *target, "--dry-run")
    assert "node 2 is the spare" in out + err, out + err
    if "hosts" in target and "none" not in target:
        assert "start node 2 (a spare: waits for a left-out node's place) on c" in out and "start node 1 on b" in out


# --- W2: a checkpoint folder no mount of the spec holds is said by validate and by every up plan --------------
@pytest.mark.parametrize("folder, volumes, said", [
    ("/shared/ckpt", "", True), ("/workspace/checkpoints", "", False), ("checkpoints", "", False),
    ("/shared/ckpt", "volumes:\n- {name: shared, host_path: TEAM/shared, path: /shared}\n", False),
    ("/data/run1/ckpt", "volumes:\n- {name: shared, host_path: TEAM/shared, path: /shared}\n", True)])
def test_a_checkpoint_folder_on_no_mount_is_said(team, capsys, folder, volumes, said):
    (team / "nodeweave.yaml").write_text(SPEC + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n"
                                         + volumes.replace("TEAM", str(team)))
    (team / "shared" / "ckpt").mkdir(parents=True)
    for made in (team / "shared", team / "shared" / "ckpt"):
        made.chmod(0o777)
    (team / "checkpoints").mkdir(mode=0o777)
    (team / "checkpoints").chmod(0o777)
    for verb in (["validate", "-o", "json"], ["up", "--dry-run"], ["up", "-t", "kubernetes", "--dry-run"]):
        code, out, err = run_cli(capsys, *verb)
        assert code == 0, err
        assert (f"{folder} is on no mount of the spec" in out + err) is said, (verb, out + err)


# --- W16: host:port, wherever a host is named, says where the port goes -----------------------------------------
@pytest.mark.parametrize("where", ["--host", "--hosts-file", "spec"])
def test_a_host_with_a_port_says_where_the_port_goes(team, capsys, where):
    if where == "spec":
        (team / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2\n", "hosts: ['me@gpu01:2222', gpu02]\n"))
        argv = ["up", "--engine", "none", "--remote-dir", "/srv/j", "--dry-run"]
    elif where == "--hosts-file":
        (team / "hosts.txt").write_text("me@gpu01:2222\ngpu02\n")
        argv = ["up", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/srv/j", "--dry-run"]
    else:
        argv = ["up", "-t", "hosts", "--host", "me@gpu01:2222", "--host", "gpu02", "--remote-dir", "/srv/j",
                "--dry-run"]
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and "me@gpu01:2222" in line and "Port=" in line and "~/.ssh/config" in line, line


# --- W55: a Slurm job with no allocation recorded is "not up" on every verb, before the runtime is judged --------
@pytest.mark.skipif(shutil.which("srun") is None,
                    reason="srun is not installed (Slurm: .ci/setup-tools.sh installs it)")
@pytest.mark.parametrize("verb", [["status"], ["stop"], ["exec", "--", "true"], ["down"]])
def test_a_slurm_job_with_nothing_allocated_is_not_up_before_its_runtime_is_judged(team, capsys, verb):
    shutil.copy(EXAMPLES / "slurm-accelerate.yaml", team / "nodeweave.yaml")  # slurm.runtime pyxis
    code, out, err = run_cli(capsys, verb[0], "-t", "slurm", *verb[1:])
    assert "pyxis" not in out + err and "no allocation is recorded" in (out + err).replace("Slurm allocation", "allocation")
    assert code == (0 if verb == ["down"] else 3), (code, err)  # not up: README's exit 3 (down: nothing to take down)


# --- W41: a Slurm plan says where the steps run when it is this machine's folder; /tmp is a warning ------------
def test_a_slurm_plan_says_the_workspace_must_be_shared(team, capsys, tmp_path):
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--dry-run")
    assert f"the steps run in {team} on every node" in out + err
    assert ("warning: the steps run in" in out) is str(team).startswith("/tmp/")
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--remote-dir", "/shared/team", "--dry-run")
    assert "the steps run in" not in out + err


# --- W17: --overlay rocm on a spec of another variant names the image it runs and the build that makes it ------
def test_the_rocm_overlay_on_a_cuda_spec_names_its_image_and_build(team, capsys):
    (team / "nodeweave.yaml").write_text(SPEC.replace("variant: cpu", "variant: cuda12"))
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--overlay", "rocm", "--dry-run")
    assert code == 0, err
    assert ":rocm70: the rocm overlay's own" in out and "`nodeweave image build rocm70 --push`" in out
    (team / "nodeweave.yaml").write_text(SPEC.replace("variant: cpu", "variant: rocm70"))
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--overlay", "rocm", "--dry-run")
    assert code == 0 and ":rocm70: the rocm overlay's own" in out and "image build rocm70" not in out


# --- W19: an OpenShift dry run names what the real up depends on and cannot do, and why it applies base ---------
def test_an_openshift_dry_run_names_the_scc_the_build_and_its_folder(team, capsys):
    shutil.copy(EXAMPLES / "openshift-elastic.yaml", team / "nodeweave.yaml")
    code, out, err = run_cli(capsys, "up", "-t", "openshift", "--dry-run")
    assert "scc-ipc-lock.yaml" in out and "restricted-v2" in out
    assert "`nodeweave image build cuda12 -t openshift`" in out
    assert "applies base: the spec says openshift: true" in out
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--dry-run", "--spec", str(REPO / "nodeweave.yaml"))
    assert "restricted-v2" not in out and "applies base" not in out  # plain Kubernetes: none of it


# --- W44: more nodes than the cluster has: the hint is the command of the cluster's own target ------------------
@pytest.mark.parametrize("target, said", [([], "raise nodes in the spec to 3"),
                                          (["-t", "kubernetes"], "scale statefulset/team -n default --replicas 3"),
                                          (["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/j"],
                                           "list 3 hosts"),
                                          (["-t", "slurm", "--remote-dir", "/srv/j"], "an allocation never grows")])
def test_more_nodes_than_the_cluster_has_names_the_targets_way_to_grow(team, capsys, target, said):
    code, _, err = run_cli(capsys, "run", *target, "--dry-run", "--nodes", "3")
    assert code == 2 and said in one_line(err), err


# --- W53: a damaged record of the folder's other (old-named) job is named by every verb, not skipped -----------
@pytest.mark.parametrize("verb", [["status"], ["down", "--dry-run"], ["up", "--dry-run"], ["run", "--dry-run"]])
def test_a_damaged_record_of_another_job_here_is_named(team, capsys, verb):
    (team / ".nodeweave" / "old").mkdir(parents=True)
    (team / ".nodeweave" / "old" / "cluster.json").write_text('{"target": "local", "made": "x"}')
    _, _, err = run_cli(capsys, *verb)
    assert "another job's record, unread: " in err and ".nodeweave/old/cluster.json: field made" in err, err
