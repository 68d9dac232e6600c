"""walk16a rows fixed by fix18b: another folder's job is never reached from this one (a leftover $NODEWEAVE_SPEC,
the upward spec search, the image tag), and nodeweave's own files on the nodes are never written through a user
path. Each test fails on the code before its fix."""

from __future__ import annotations

import json
import shutil

import pytest

from cli_run import in_process as run_cli
from team_folder import JOB_SPEC, flat, proj_folder

FAKE_PODMAN_STORE = """#!/bin/sh
# podman, as `podman image inspect --format F REF` answers for an image another folder's build left at every tag
if [ "$1 $2" = "image inspect" ]; then
  echo '{"io.nodeweave.image.job": "proj", "io.nodeweave.image.folder": "'"$BUILT_FROM"'", \
"io.nodeweave.image.owner": "0123456789ab"}'; exit 0
fi
exec %s "$@"
"""

ACTING = (["run", "--dry-run"], ["exec", "--dry-run", "--", "true"], ["shell", "--dry-run"], ["sync", "--dry-run"],
          ["check", "--dry-run"], ["render", "all"], ["image", "build", "--dry-run"])


@pytest.fixture
def proj(tmp_path, monkeypatch):
    return proj_folder(tmp_path, monkeypatch)


one_line = flat


# -- class 1: another folder's job reached from this one ---------------------------------------------------------
def test_another_folders_job_is_not_reached_from_here(proj, capsys, monkeypatch):
    # A5: a leftover $NODEWEAVE_SPEC naming proj's spec, typed in bob/: every verb that acts or writes refuses
    bob = proj.parent / "bob"
    bob.mkdir()
    (bob / "nodeweave.yaml").write_text(JOB_SPEC.replace("name: proj", "name: bob"))
    (bob / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(bob)
    monkeypatch.setenv("NODEWEAVE_SPEC", str(proj / "nodeweave.yaml"))
    before = sorted(p.name for p in proj.iterdir())
    for verb in ACTING:
        code, _, err = run_cli(capsys, *verb)
        assert code == 2 and "another folder's spec than nodeweave.yaml found here" in one_line(err), (verb, err)
        assert "--spec nodeweave.yaml for this folder's job" in one_line(err)
    assert sorted(p.name for p in proj.iterdir()) == before  # nothing written into proj/
    code, _, err = run_cli(capsys, "validate")  # a verb that only reads: a note
    assert code == 0 and "(from $NODEWEAVE_SPEC)" in err, err
    monkeypatch.delenv("NODEWEAVE_SPEC")

    # A4: the image tag localhost/nodeweave/proj:cpu holds bob's build: proj's build and proj's up refuse it
    monkeypatch.chdir(proj)
    real = shutil.which("podman")
    if real is not None:
        assert run_cli(capsys, "render", "all")[0] == 0
        (proj / "fakebin").mkdir()
        (proj / "fakebin" / "podman").write_text(FAKE_PODMAN_STORE % real)
        (proj / "fakebin" / "podman").chmod(0o755)
        (proj / "fakebin" / "podman-compose").write_text("#!/bin/sh\nexit 0\n")
        (proj / "fakebin" / "podman-compose").chmod(0o755)
        with monkeypatch.context() as patched:
            patched.setenv("PATH", f"{proj / 'fakebin'}:/usr/bin:/bin")
            patched.setenv("NODEWEAVE_ENGINE", "podman")
            patched.setenv("BUILT_FROM", str(proj.parent / "gone"))  # a folder no longer here: no next up there
            code, out, err = run_cli(capsys, "image", "build", "--dry-run")
            assert code == 0 and f"held the image built from {proj.parent / 'gone'}, a folder no longer here" in \
                one_line(out + err), out + err
            patched.setenv("BUILT_FROM", str(bob))
            code, _, err = run_cli(capsys, "image", "build", "--dry-run")
            assert code == 2 and f"holds the image built from {bob}" in one_line(err), err
            assert "--force to replace it" in one_line(err)
            code, _, err = run_cli(capsys, "image", "build", "--dry-run", "--force")
            assert code == 0, err
            code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
            assert code == 3 and f"was built from {bob}, not this folder" in one_line(err), out + err

    # A18: the upward search never passes a folder whose .nodeweave/<job>/cluster.json records a cluster up made
    (proj / "nodeweave.yaml").rename(proj / "cluster.yaml")
    (proj.parent / "nodeweave.yaml").write_text(JOB_SPEC.replace("name: proj", "name: llama"))
    (proj / ".nodeweave" / "proj").mkdir(parents=True, exist_ok=True)
    (proj / ".nodeweave" / "proj" / "cluster.json").write_text(json.dumps(
        {"made": {"job": "proj", "spec": "nodeweave.yaml", "target": "local", "engine": "podman"}}))
    for verb in (["down", "--dry-run"], ["status"], *ACTING):
        code, out, err = run_cli(capsys, *verb)
        assert code == 2 and "no nodeweave.yaml here, yet .nodeweave/proj/cluster.json records job proj up" in \
            one_line(err), (verb, out, err)
        assert "llama" not in out + err
    (proj / "sub").mkdir()
    monkeypatch.chdir(proj / "sub")
    code, _, err = run_cli(capsys, "down", "--dry-run")
    assert code == 2 and "no nodeweave.yaml in .., yet ../.nodeweave/proj/cluster.json" in one_line(err), err
    code, _, err = run_cli(capsys, "validate", "--spec", "../cluster.yaml")  # named: read
    assert code == 0, err


# -- class 2: nodeweave's own files on the nodes ($TMPDIR/nodeweave) written or deleted through a user path -------
def test_nodeweaves_own_folder_on_the_nodes_is_no_destination(proj, capsys):
    """A11: `sync --delete . /tmp/nodeweave` (the folder sync's own refusal of /opt advised) deleted the hold's and
    every run's records on each node; without --delete it wrote over them. Refused as .nodeweave/ is here."""
    for delete in ([], ["--delete"]):
        for dest in ("/tmp/nodeweave", "/tmp/nodeweave/jobs", "/var/tmp/nodeweave", "/tmp/nodeweave-sync-1000"):
            code, _, err = run_cli(capsys, "sync", "--dry-run", *delete, ".", dest)
            assert code == 2 and f"DEST {dest!r} is not accepted" in one_line(err), (dest, err)
            assert "nodeweave's own folder on the nodes" in one_line(err)
    (proj / "nodeweave.yaml").write_text(JOB_SPEC + "env: {TMPDIR: /scratch/t}\n")  # the nodes' own $TMPDIR
    code, _, err = run_cli(capsys, "sync", "--dry-run", ".", "/scratch/t/nodeweave/x")
    assert code == 2 and "nodeweave's own folder on the nodes" in one_line(err), err
    code, _, err = run_cli(capsys, "up", "-t", "hosts", "--host", "a", "--host", "b", "--remote-dir",
                           "/tmp/nodeweave/job", "--dry-run")  # the same rule for every folder on the nodes
    assert code == 2 and "nodeweave's own folder on the nodes" in one_line(err), err
