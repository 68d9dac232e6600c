"""Issue 43's named leftovers of the cluster verbs (brief left43a), each fixed as a class: one rule per refusal,
reading the target's own data. Each test fails on the code before these fixes. No container or node is started.
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import SPEC, make_team
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)



@pytest.fixture
def team(tmp_path, monkeypatch):
    team_dir = make_team(tmp_path, monkeypatch)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    return team_dir


# -- 1/2: up's --hold, --run, --check and --image: accepted where they do something, refused where not, one rule ---

TARGETS = {
    "local": ["-t", "local", "--engine", "podman"],
    "hosts": ["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/job"],
    "bare hosts": ["-t", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/job", "--engine", "none"],
    "kubernetes": ["-t", "kubernetes"],
    "slurm": ["-t", "slurm"],
}
FLAGS = {"--hold": ["--hold"], "--run": ["--run"], "--hold --check": ["--hold", "--check"], "--check": ["--check"],
         "--image": ["--image", "reg.example/x:1"]}
# (target, flags) -> accepted? A Slurm allocation and bare hosts start nothing in a mode (--hold/--run do nothing),
# their nodes are idle between runs (--check checks them); where nodes hold, --check needs them holding (the spec
# says mode run); --image picks the image only where compose starts the nodes.
ACCEPTED = {
    "local": {"--hold", "--run", "--hold --check", "--image"},
    "hosts": {"--hold", "--run", "--hold --check", "--image"},
    "bare hosts": {"--check"},
    "kubernetes": {"--hold", "--run", "--hold --check"},
    "slurm": {"--check"},
}
REFUSAL = {"--hold": "--hold does nothing for target", "--run": "--run does nothing for target",
           "--hold --check": "--hold does nothing for target", "--image": "--image does nothing for target",
           "--check": "--check needs nodes that hold"}


@pytest.mark.parametrize("flags", list(FLAGS))
@pytest.mark.parametrize("target", list(TARGETS))
def test_up_flags_are_taken_where_they_act_and_refused_where_not(team, capsys, target, flags):
    code, out, err = run_cli(capsys, "up", *TARGETS[target], *FLAGS[flags], "--dry-run")
    if flags in ACCEPTED[target]:
        assert code == 0, (target, flags, err)
        if "--check" in flags:
            assert "-m nodeweave.check.worker" in out, out
        return
    line = one_line(err)
    assert code == 2 and not out, (target, flags, out, err)
    assert line.startswith(f"nodeweave: error: {REFUSAL[flags]}"), line
    if "does nothing" in line:  # one wording: the flag, the target, the target's own reason, the remedy
        assert f"for target {TARGETS[target][1]}: " in line and line.endswith("; leave it out"), line


def test_a_refused_up_flag_records_nothing(team, capsys):
    """The refusal comes before `up` records what it was told (it was after, for the targets' own --image checks)."""
    code, _, err = run_cli(capsys, "up", *TARGETS["bare hosts"], "--image", "reg.example/x:1")
    assert code == 2 and "--image does nothing for target hosts" in one_line(err), err
    assert not (team / ".nodeweave").exists()


# -- 3: the image up runs is a datum of its plan, read as one (it was regexed out of the plan's first note) ---------

SLURM_HOST = SPEC + "slurm:\n  runtime: host\n"


@pytest.mark.parametrize("spec, target, image", [
    (SPEC, TARGETS["kubernetes"], "localhost/nodeweave/team:cpu"),
    (SPEC, TARGETS["hosts"], "localhost/nodeweave/team:cpu"),
    (SPEC, TARGETS["slurm"], "localhost/nodeweave/team:cpu"),
    (SPEC, TARGETS["bare hosts"], None),  # the hosts run the entrypoint installed there: no image to pull
    (SLURM_HOST, TARGETS["slurm"], None),  # the shared venv: no image either
])
def test_up_warns_of_an_unpullable_image_only_where_the_nodes_run_one(team, capsys, spec, target, image):
    (team / "nodeweave.yaml").write_text(spec)
    code, out, err = run_cli(capsys, "up", *target, "--dry-run", "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan.get("image") == image, plan
    warned = [note for note in plan["notes"] if note.startswith("warning: image ")]
    assert bool(warned) == (image is not None), plan["notes"]
    if image:
        assert warned[0].startswith(f"warning: image {image} names localhost/"), warned


def test_no_cli_or_cluster_module_reads_data_back_out_of_its_own_words():
    """The class: a regex over the notes a plan carries or over a refusal nodeweave itself worded (the code's own
    words for people) to recover a value: the image up runs, the field a spec refusal names (init)."""
    import pathlib
    import re

    import nodeweave

    root = pathlib.Path(nodeweave.__file__).parent
    found = [f"{path.relative_to(root)}:{number}" for folder in ("cli", "cluster")
             for path in (root / folder).rglob("*.py") for number, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bre\.\w+\(.*(\bnotes\b|str\(err\)|, message\b)", line)
             and path != root / "cli" / "__init__.py"]  # the root's rewording of click's own messages is click's text
    assert not found, found


# -- 6: the verbs that only read take no --dry-run, and say why in one wording (docs and --help say it too) ----------

READERS = ("status", "logs", "top", "dashboard")


@pytest.mark.parametrize("verb", READERS)
def test_a_reader_says_it_only_reads_when_given_dry_run(team, capsys, verb):
    code, out, err = run_cli(capsys, verb, "--dry-run")
    line = one_line(err)
    assert code == 2 and line == (f"nodeweave: error: {verb} takes no --dry-run: it only reads (it asks the nodes or "
                                  "a run folder and changes nothing), so there is nothing to rehearse; leave "
                                  "--dry-run out"), line
    code, out, _ = run_cli(capsys, verb, "--help")
    assert code == 0 and "takes no --dry-run" in " ".join(out.split()), out


def test_the_docs_name_every_reader_as_taking_no_dry_run():
    import pathlib

    from nodeweave.cli import READ_ONLY

    text = " ".join((pathlib.Path(__file__).parents[1] / "docs/cluster.md").read_text().split())
    assert set(READ_ONLY) == set(READERS)
    assert "`status`, `logs`, `top` and `dashboard` only read" in text and "so they have none" in text


# -- 7: the dashboard asks its source before it serves: nothing to show is one line, as top (it served an empty page) --

BARE = ["-t", "hosts", "--host", "nosuchhost0.invalid", "--host", "nosuchhost1.invalid", "--remote-dir", "/srv/job",
        "--engine", "none"]  # no platform to say they are down: only asking node 0 tells


@pytest.mark.parametrize("verb", [("dashboard", "--port", "0"), ("top", "--once")])
def test_the_dashboard_and_top_say_there_is_nothing_to_show_before_serving(team, verb):
    import subprocess

    import cli_run

    try:
        done = cli_run.run([*cli_run.NODEWEAVE, *verb, *BARE], cwd=team, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{verb[0]} served (or drew) nothing for 90 s instead of saying there is nothing to show")
    lines = done.stderr.strip().splitlines()
    # hosts ssh cannot reach are said first, as status says them (walk9 A35): one line, exit 3
    assert done.returncode == 3 and len(lines) == 1 and "ssh cannot reach nosuchhost0.invalid" in lines[0], done.stderr
    assert "dashboard at" not in done.stdout, done.stdout


# -- 4: slurm.nodelist is counted against nodes + spares (a Slurm job contains every --nodelist host) ---------------

@pytest.mark.parametrize("extra, nodelist, line", [
    ("", '["gpu[01-03]"]', "slurm.nodelist: names 3 nodes (gpu[01-03]) but the job is 2 (nodes: 2)"),
    ("", '["gpu[01-02]", "gpu07"]', "slurm.nodelist: names 3 nodes (gpu[01-02], gpu07) but the job is 2 (nodes: 2)"),
    ("recovery: {enabled: true, spares: 1}\n", '["gpu[01-04]"]',
     "names 4 nodes (gpu[01-04]) but the job is 3 (nodes: 2 + recovery.spares 1)"),
    ("", '["gpu[01-02]", "gpu02"]', "slurm.nodelist: names node gpu02 twice ('gpu[01-02]' and 'gpu02')"),
    ("", '["gpu[02-01]"]', "slurm.nodelist: descending range '02-01'"),
    ("", '["gpu[0-999999999]"]', "slurm.nodelist: names more than 65536 nodes"),
    ("", '["nodes/list.txt"]', "slurm.nodelist[0]: got 'nodes/list.txt'"),
])
def test_a_nodelist_that_is_not_the_jobs_size_is_refused_in_one_line(team, capsys, extra, nodelist, line):
    (team / "nodeweave.yaml").write_text(SPEC + extra + f"slurm:\n  nodelist: {nodelist}\n")
    code, out, err = run_cli(capsys, "validate")
    said = one_line(err)
    assert code == 2 and line in said, said


@pytest.mark.parametrize("extra, nodelist, words", [
    ("", '["gpu[01-02]"]', "--nodelist=gpu[01-02]"),  # as many as the job: Slurm reads the range itself
    ("", '["gpu01"]', "--nodelist=gpu01"),  # fewer: Slurm picks the rest
    ("recovery: {enabled: true, spares: 1}\n", '["gpu[01-02]", "gpu05"]', "--nodelist=gpu[01-02],gpu05"),
])
def test_a_nodelist_within_the_job_is_taken_and_rendered_as_written(team, capsys, extra, nodelist, words):
    (team / "nodeweave.yaml").write_text(SPEC + extra + f"slurm:\n  nodelist: {nodelist}\n")
    code, out, err = run_cli(capsys, "render", "slurm", "--dry-run")
    assert code == 0, err
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--dry-run")
    assert code == 0 and words in out, out + err


# -- 5: each target checks the folders it can reach, and the plan says what it does not check ---------------------

RECOVERING = SPEC + "recovery:\n  enabled: true\n  spares: 1\n  checkpoint_dir: checkpoints\n"


@pytest.mark.parametrize("target", ["hosts", "bare hosts", "kubernetes"])
def test_a_target_whose_folders_are_on_the_nodes_says_the_checkpoint_folder_is_not_checked(team, capsys, target):
    (team / "nodeweave.yaml").write_text(RECOVERING)
    argv = [a for a in TARGETS[target]]
    if target != "kubernetes":  # with recovery's spare: three hosts
        argv[argv.index("--remote-dir"):argv.index("--remote-dir")] = ["--host", "c"]
    for verb in (["up"], ["check"]):
        code, out, err = run_cli(capsys, *verb, *argv, "--dry-run")
        assert code == 0, err
        said = " ".join((out + err).split())
        assert ("not checked from here: whether the nodes can write recovery.checkpoint_dir checkpoints (target "
                f"{TARGETS[target][1]}: the folder is on the nodes, not on this machine)") in said, (verb, said)


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="needs root to run nodeweave as another user (setpriv)")
def test_slurm_checks_the_shared_checkpoint_folder_as_the_user_its_steps_run_as(tmp_path):
    """Slurm's steps (pyxis, Apptainer, host) run as you, in the workspace on storage this machine shares: a
    checkpoint folder you cannot write is refused, exit 3, before anything is taken; writable, the plan is made."""
    import os
    import shutil
    import tempfile

    import cli_run

    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv")
    folder = tempfile.mkdtemp(prefix="nw-slurm-folders-")
    try:
        team = os.path.join(folder, "team")
        os.mkdir(team)
        os.chmod(folder, 0o755)  # root's; the user below reads it, cannot write it
        os.chmod(team, 0o777)  # the spec's folder the user writes .nodeweave/ into (up refuses one it cannot, walk8 A10)
        with open(os.path.join(team, "nodeweave.yaml"), "w") as spec:
            spec.write(RECOVERING)
        with open(os.path.join(team, "train.py"), "w") as script:
            script.write("print(1)\n")
        os.mkdir(os.path.join(team, "checkpoints"), 0o755)
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        env = cli_run.checkout_env(HOME=home_beside(folder))

        def up():
            return cli_run.run([*nobody, *cli_run.NODEWEAVE, "up", "-t", "slurm", "--dry-run"], cwd=team, env=env)

        done = up()
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 3 and len(lines) == 1, done.stderr
        assert (f"recovery.checkpoint_dir checkpoints is {team}/checkpoints on the shared storage" in lines[0]
                and "which you (uid 65534) cannot write, and every Slurm step runs as you" in lines[0]), lines
        os.chmod(os.path.join(team, "checkpoints"), 0o777)
        done = up()
        assert done.returncode == 0 and "cannot write" not in done.stderr + done.stdout, done.stderr
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("image", ["image:\n  variant: cpu\n",
                                   "image:\n  variant: cuda12\n  registry: reg.example:5000/team\n  tag: v1\n"])
def test_the_compose_targets_image_is_the_datum_their_files_are_rendered_from(team, image):
    """up's image on local and hosts was regexed out of the rendered compose file's ${NODEWEAVE_IMAGE:-...}; it is
    the resolved image those files are rendered from, and compose reads the same default in them."""
    import yaml

    from nodeweave.cluster import open_backend
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.spec import load_spec
    from nodeweave.targets.compose import render_files

    (team / "nodeweave.yaml").write_text(SPEC.replace("image:\n  variant: cpu\n", image))
    spec = load_spec(team / "nodeweave.yaml")
    files = render_files(spec)
    hosts = ClusterOptions(target="hosts", hosts=("a", "b"), remote_dir="/srv/job")
    for options, name in ((ClusterOptions(target="local", engine="podman"), "compose/local.yaml"),
                          (hosts, "compose/node.yaml")):
        backend = open_backend(spec, team / "nodeweave.yaml", options)
        service = next(iter(yaml.safe_load(files[name])["services"].values()))
        assert service["image"] == "${NODEWEAVE_IMAGE:-" + backend._up_image(None) + "}", (name, service["image"])
