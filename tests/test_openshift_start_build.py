"""``image build --target openshift``: apply the BuildConfig and ImageStream, start the build, follow its log.

No OpenShift runs here: ``oc`` is a stand-in script that records its argv and,
for ``start-build``, lists the folder it was given to upload and prints a build
log the way ``--follow`` streams it, or fails; ``get build/NAME`` answers the
build's phase. What is checked is nodeweave's part: the two commands, what the
upload holds, the namespace, the stream of the log, and a failed build named
with exit 1, whether oc's own exit says so or only the build's phase does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

SPEC = """name: osb
image: {variant: cuda12}
nodes: 2
gpus_per_node: 4
launcher: {type: deepspeed, script: train.py}
kubernetes: {namespace: nccl-test, openshift: true, build: {source: binary}}
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    for target in ("images", "entrypoint"):  # what the BuildConfig's Dockerfile reads
        rendered = cli_run.run([*cli_run.NODEWEAVE, "render", target, "--spec", str(tmp_path / "nodeweave.yaml")],
                                  env=_env(os.environ["PATH"]))
        assert rendered.returncode == 0, rendered.stderr
    log = tmp_path / "oc.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "oc").write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  *start-build*) for word in "$@"; do case "$word" in --from-dir=*) dir="${{word#--from-dir=}}"
                   (cd "$dir" && find . -type f | sort) > {tmp_path}/uploaded;; esac; done
                 echo "build.build.openshift.io/osb-1 started"
                 echo "Uploading directory \\".\\" as binary input for the build ..."; echo "STEP 1/9: FROM base"
                 echo "Push successful"; [ -f {tmp_path}/fail ] && exit 1; exit 0;;
  *"get build/osb-1"*) if [ -f {tmp_path}/phase ]; then cat {tmp_path}/phase; else echo Complete; fi; exit 0;;
esac
exit 0
""")
    (bin_dir / "oc").chmod(0o755)
    return tmp_path, log, f"{bin_dir}:/usr/bin:/bin"


def _env(path: str) -> dict:
    """Only PATH (the stand-in first), and the sources under test when PYTHONPATH names them."""
    return {"PATH": path, "COLUMNS": "200", **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}


def run(project, *args):
    folder, _, path = project
    return cli_run.run([*cli_run.NODEWEAVE, "image", "build", "cuda12", "--target", "openshift", "--spec", str(folder / "nodeweave.yaml"),
                           *args], cwd=folder, env=_env(path))


def test_a_context_lacking_what_the_dockerfile_copies_is_refused_before_oc_runs(project, tmp_path):
    folder, log, _ = project
    out = run(project, "--context", str(tmp_path / "bin"), "--dry-run")
    assert out.returncode == 2, out.stderr
    assert "the Dockerfile rendered for cuda12 copies what the build context lacks: entrypoint/nodeweave-entrypoint.pyz" in out.stderr
    (folder / "entrypoint" / "nodeweave-entrypoint.pyz").unlink()
    out = run(project)
    assert out.returncode == 2 and "entrypoint/nodeweave-entrypoint.pyz is not in" in out.stderr, out.stderr
    assert not log.exists(), "nothing is applied or uploaded before the context is complete"


def test_the_upload_is_what_the_dockerfile_reads_not_the_whole_folder(project):
    folder, _, _ = project
    (folder / "data").mkdir()
    (folder / "data" / "shard-0.bin").write_bytes(b"\0" * 4096)
    (folder / "train.py").write_text("print('train')\n")
    (folder / "wheelhouse").mkdir()
    (folder / "wheelhouse" / "einops-0.8.2-py3-none-any.whl").write_bytes(b"wheel")
    out = run(project)
    assert out.returncode == 0, out.stderr
    assert (folder / "uploaded").read_text().split() == [
        "./.dockerignore", "./entrypoint/nodeweave-entrypoint.pyz", "./images/cuda12/Dockerfile",
        "./wheelhouse/einops-0.8.2-py3-none-any.whl"]


def test_another_context_uploads_the_dockerfile_rendered_for_this_spec(project, tmp_path):
    """A nodeweave checkout as --context: its own images/cuda12/Dockerfile is not what the team's build runs."""
    folder, _, _ = project
    checkout = tmp_path / "checkout"
    (checkout / "images" / "cuda12").mkdir(parents=True)
    (checkout / "images" / "cuda12" / "Dockerfile").write_text("FROM someone-elses\n")
    (checkout / "entrypoint").mkdir()
    (checkout / "entrypoint" / "nodeweave-entrypoint.pyz").write_bytes(
        (folder / "entrypoint" / "nodeweave-entrypoint.pyz").read_bytes())
    out = run(project, "--context", str(checkout))
    assert out.returncode == 0, out.stderr
    uploaded = folder / ".nodeweave" / "osb" / "openshift-upload" / "images" / "cuda12" / "Dockerfile"
    assert uploaded.read_text() == (folder / "images" / "cuda12" / "Dockerfile").read_text()


def test_a_build_that_fails_on_the_cluster_is_failed_even_when_oc_exits_0(project):
    folder, log, _ = project
    (folder / "phase").write_text("Failed\n")
    out = run(project)
    assert out.returncode == 1, out.stderr
    assert "the build osb-1 ended Failed on the cluster" in out.stderr and "oc logs build/osb-1 -n nccl-test" in out.stderr
    assert "get build/osb-1 -n nccl-test -o jsonpath={.status.phase}" in log.read_text()
    assert "Traceback" not in out.stderr


def test_the_buildconfig_builds_the_specs_variant_only(project):
    folder, _, path = project
    out = cli_run.run([*cli_run.NODEWEAVE, "image", "build", "rocm", "--target", "openshift", "--spec",
                          str(folder / "nodeweave.yaml"), "--dry-run"], cwd=folder,
                         env=_env(path))
    assert out.returncode == 2 and "builds variant cuda12" in out.stderr, out.stderr


def test_the_dry_run_prints_both_commands_and_runs_neither(project):
    folder, log, _ = project
    out = run(project, "--dry-run")
    assert out.returncode == 0, out.stderr
    tree = folder / ".nodeweave" / "osb" / "openshift-build"
    assert f"oc apply -n nccl-test -k {tree}" in out.stdout
    upload = folder / ".nodeweave" / "osb" / "openshift-upload"
    assert f"oc start-build osb -n nccl-test --from-dir={upload} --follow --wait" in out.stdout
    assert "would write .nodeweave/osb/openshift-build/buildconfig.yaml" in out.stdout
    assert not tree.exists() and not upload.exists()  # planned, not written
    asked = log.read_text().splitlines() if log.exists() else []  # a read (whether oc reaches the cluster) only
    assert all(line.startswith("get -n nccl-test imagestream osb ") for line in asked), asked


def test_the_real_build_runs_the_plan_its_dry_run_prints(project):
    """`--dry-run -o json` is the plan NODEWEAVE_PLAN_RECORD records of the real build: the kept tree (sizes,
    digests), the upload's file list, the two oc steps; the real build wrote and uploaded what it listed."""
    import json

    folder, log, path = project
    record = folder / "plan.json"
    dry = run(project, "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    env = {**_env(path), "NODEWEAVE_PLAN_RECORD": str(record)}
    real = cli_run.run([*cli_run.NODEWEAVE, "image", "build", "cuda12", "--target", "openshift", "--spec",
                           str(folder / "nodeweave.yaml")], cwd=folder, env=env)
    assert real.returncode == 0, real.stderr
    planned = json.loads(dry.stdout)
    assert planned == json.loads(record.read_text())
    assert [p["kind"] for p in planned["phases"]] == ["files", "stage", "build"]
    for entry in planned["phases"][0]["files"]:
        assert (folder / entry["path"]).stat().st_size == entry["size"]
    stage = planned["phases"][1]["request"]
    uploaded = (folder / "uploaded").read_text().split()
    assert sorted(uploaded) == sorted(f"./{p}" for p in [*stage["files"], stage["dockerfile"]])


def test_the_build_starts_on_the_cluster_and_its_log_is_followed(project):
    folder, log, _ = project
    out = run(project)
    assert out.returncode == 0, out.stderr
    calls = log.read_text().splitlines()
    assert calls[0].startswith("get -n nccl-test imagestream osb ")  # first, whether oc reaches the cluster
    assert calls[1].startswith("apply -n nccl-test -k ") and calls[2].startswith("start-build osb -n nccl-test")
    assert "STEP 1/9: FROM base" in out.stdout + out.stderr and "Push successful" in out.stdout + out.stderr
    (folder / "fail").write_text("")
    failed = run(project)
    assert failed.returncode == 1 and "oc start-build osb" in failed.stderr
    assert len(failed.stderr.strip().splitlines()[-1:]) == 1 and "Traceback" not in failed.stderr
