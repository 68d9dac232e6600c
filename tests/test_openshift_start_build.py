"""``image build --target openshift``: apply the BuildConfig and ImageStream, start the build, follow its log.

No OpenShift runs here: ``oc`` is a stand-in script that records its argv and,
for ``start-build``, prints a build log the way ``--follow`` streams it, or
fails. What is checked is nodeweave's part: the two commands, the upload
folder, the namespace, the stream of the log, and a failed build named with
exit 1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
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
    rendered = subprocess.run([*NODEWEAVE, "render", "images", "--spec", str(tmp_path / "nodeweave.yaml")],
                              capture_output=True, text=True)
    assert rendered.returncode == 0, rendered.stderr  # the BuildConfig builds images/<variant>/Dockerfile
    log = tmp_path / "oc.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "oc").write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  *start-build*) echo "Uploading directory \\".\\" as binary input for the build ..."; echo "STEP 1/9: FROM base"
                 echo "Push successful"; [ -f {tmp_path}/fail ] && exit 1; exit 0;;
esac
exit 0
""")
    (bin_dir / "oc").chmod(0o755)
    return tmp_path, log, f"{bin_dir}:/usr/bin:/bin"


def run(project, *args):
    folder, _, path = project
    return subprocess.run([*NODEWEAVE, "image", "build", "cuda12", "--target", "openshift", "--spec", str(folder / "nodeweave.yaml"),
                           *args], capture_output=True, text=True, cwd=folder, env={"PATH": path, "COLUMNS": "200"})


def test_the_rendered_dockerfile_must_be_in_the_upload(project, tmp_path):
    out = run(project, "--context", str(tmp_path / "bin"), "--dry-run")
    assert out.returncode == 2 and "images/cuda12/Dockerfile is missing" in out.stderr


def test_the_buildconfig_builds_the_specs_variant_only(project):
    folder, _, path = project
    out = subprocess.run([*NODEWEAVE, "image", "build", "rocm", "--target", "openshift", "--spec",
                          str(folder / "nodeweave.yaml"), "--dry-run"], capture_output=True, text=True, cwd=folder,
                         env={"PATH": path})
    assert out.returncode == 2 and "builds variant cuda12" in out.stderr, out.stderr


def test_the_dry_run_prints_both_commands_and_runs_neither(project):
    folder, log, _ = project
    out = run(project, "--dry-run")
    assert out.returncode == 0, out.stderr
    tree = folder / ".nodeweave" / "openshift-build" / "osb"
    assert f"oc apply -n nccl-test -k {tree}" in out.stdout
    assert f"oc start-build osb -n nccl-test --from-dir={folder} --follow" in out.stdout
    assert not log.exists() and (tree / "buildconfig.yaml").is_file()


def test_the_build_starts_on_the_cluster_and_its_log_is_followed(project):
    folder, log, _ = project
    out = run(project)
    assert out.returncode == 0, out.stderr
    calls = log.read_text().splitlines()
    assert calls[0].startswith("apply -n nccl-test -k ") and calls[1].startswith("start-build osb -n nccl-test")
    assert "STEP 1/9: FROM base" in out.stdout + out.stderr and "Push successful" in out.stdout + out.stderr
    (folder / "fail").write_text("")
    failed = run(project)
    assert failed.returncode == 1 and "oc start-build osb" in failed.stderr
    assert len(failed.stderr.strip().splitlines()[-1:]) == 1 and "Traceback" not in failed.stderr
