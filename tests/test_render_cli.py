"""``nodeweave render``: dry run, JSON, byte-identical reruns, --check, and never clobbering a user's file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.rendering import render_targets
from nodeweave.errors import EXIT_OK, EXIT_STALE, EXIT_USAGE, UsageError
from nodeweave.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
COMPOSE = ["compose/.env.example", "compose/local.yaml", "compose/node.yaml"]


@pytest.fixture
def project(tmp_path) -> Path:
    """A directory holding a copy of the example spec, as a user's project would."""
    shutil.copy(REPO / "nodeweave.yaml", tmp_path / "nodeweave.yaml")
    return tmp_path


def run(capsys, *argv) -> "tuple[int, str, str]":
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_dry_run_lists_every_file_and_writes_nothing(project, capsys):
    code, out, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--dry-run")
    assert code == EXIT_OK, err
    lines = out.splitlines()
    assert [line.split()[-1] for line in lines] == COMPOSE
    assert all(line.split()[0] == "new" for line in lines)
    assert all(line.split()[2] in ("B", "KiB", "MiB") and float(line.split()[1]) > 0 for line in lines)
    assert any(line.split()[2] == "KiB" for line in lines)  # sizes as people read them; --json keeps bytes
    assert "3 new in " in err
    assert snapshot(project).keys() == {"nodeweave.yaml"}


def test_json_plan_has_path_bytes_status_and_hash(project, capsys):
    code, out, _ = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--dry-run", "--json")
    assert code == EXIT_OK
    document = json.loads(out)  # render's nodeweave.plan.Plan, as every verb's dry run prints it
    assert (document["verb"], document["where"], document["notes"]) == ("render", str(project.resolve()), [])
    (plan,) = document["phases"]
    assert plan["kind"] == "render" and plan["targets"] == ["compose"] and plan["prune"] is False
    assert plan["out"] == str(project.resolve())
    assert [f["path"] for f in plan["files"]] == COMPOSE
    assert {f["status"] for f in plan["files"]} == {"new"}
    rendered = render_targets(load_spec(project / "nodeweave.yaml"), ["compose"])
    for entry in plan["files"]:
        assert entry["bytes"] == len(rendered[entry["path"]].encode())
        assert len(entry["sha256"]) == 64


def test_writes_then_reruns_byte_identical(project, capsys):
    spec = str(project / "nodeweave.yaml")
    assert run(capsys, "render", "compose", "--spec", spec)[0] == EXIT_OK
    first = snapshot(project)
    assert set(first) == {"nodeweave.yaml", ".nodeweave/rendered.json", ".nodeweave/.gitignore", *COMPOSE}
    code, out, _ = run(capsys, "render", "compose", "--spec", spec, "--json")
    assert code == EXIT_OK
    assert {f["status"] for f in json.loads(out)["phases"][0]["files"]} == {"unchanged"}
    assert snapshot(project) == first


def test_default_out_is_the_spec_directory(project, capsys, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)
    assert run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"))[0] == EXIT_OK
    assert (project / "compose" / "node.yaml").is_file()
    assert not any(elsewhere.iterdir())


def test_refuses_to_overwrite_a_users_file_and_writes_nothing(project, capsys):
    (project / "compose").mkdir()
    mine = project / "compose" / "node.yaml"
    mine.write_text("services:\n  my-own: {image: busybox}\n")
    code, out, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"))
    assert code == EXIT_USAGE
    assert "refusing to overwrite 1 file(s)" in err and "compose/node.yaml" in err and "--force" in err
    assert out == ""  # issue 43 (row 35): no list of files as `new` before an error that writes none of them
    assert mine.read_text() == "services:\n  my-own: {image: busybox}\n"
    assert not (project / "compose" / "local.yaml").exists()  # all or nothing


@pytest.mark.parametrize("head", ["# my compose, adapted from the one made by nodeweave\n",
                                  "# TODO: check what rendered by nodeweave would say\n",
                                  "services: {}  # by nodeweave's example\n"])
def test_a_users_file_that_only_mentions_nodeweave_is_the_users(project, capsys, head):
    """The first-day walk: a user's compose file whose first line said it was "adapted from the one made by
    nodeweave" carried the old mark (the words anywhere in the first five lines) and was replaced, no backup."""
    (project / "compose").mkdir()
    mine = project / "compose" / "node.yaml"
    mine.write_text(head + "services:\n  mine: {image: my/own}\n")
    code, _, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"))
    assert code == EXIT_USAGE and "refusing to overwrite 1 file(s)" in err, err
    assert mine.read_text().startswith(head)


def test_every_renderers_files_carry_the_header_that_marks_them_nodeweaves(project, capsys):
    """Each target's every file is recognised as nodeweave's by the rule the overwrite check uses."""
    from nodeweave.rendering.plan import is_marked

    out = project / "out"
    for target in ("all", "slurm", "jobset", "trainjob", "openshift-build"):
        code, _, err = run(capsys, "render", target, "--spec", str(project / "nodeweave.yaml"), "--out", str(out))
        assert code == EXIT_OK, err
    files = [p for p in out.rglob("*") if p.is_file() and ".nodeweave" not in p.parts]
    assert len(files) > 30
    unmarked = [str(p.relative_to(out)) for p in files if not is_marked(p.read_bytes())]
    assert unmarked == [], unmarked


def test_force_overwrites_a_users_file(project, capsys):
    (project / "compose").mkdir()
    (project / "compose" / "node.yaml").write_text("mine\n")
    code, _, _ = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--force")
    assert code == EXIT_OK
    assert (project / "compose" / "node.yaml").read_text().startswith("# Generated by nodeweave")


def test_a_changed_spec_overwrites_rendered_files(project, capsys):
    spec = project / "nodeweave.yaml"
    run(capsys, "render", "compose", "--spec", str(spec))
    spec.write_text(spec.read_text().replace("nodes: 2 ", "nodes: 3 "))
    code, out, _ = run(capsys, "render", "compose", "--spec", str(spec))
    assert code == EXIT_OK
    statuses = {line.split()[-1]: line.split()[0] for line in out.splitlines()}
    assert statuses == {"compose/.env.example": "changed", "compose/local.yaml": "changed", "compose/node.yaml": "changed"}
    assert "llama-pretrain-2:" in (project / "compose" / "local.yaml").read_text()


def test_check_exits_4_when_stale_and_0_when_fresh(project, capsys):
    spec = str(project / "nodeweave.yaml")
    code, _, err = run(capsys, "render", "compose", "--spec", spec, "--check")
    assert code == EXIT_STALE and "3 rendered file(s)" in err and f"`nodeweave render all --prune --spec {spec}`" in err
    assert "make render" not in err  # no Makefile beside this spec (issue 43, s10)
    assert snapshot(project).keys() == {"nodeweave.yaml"}  # --check writes nothing
    run(capsys, "render", "compose", "--spec", spec)
    assert run(capsys, "render", "compose", "--spec", spec, "--check")[0] == EXIT_OK
    node = project / "compose" / "node.yaml"
    node.write_text(node.read_text() + "# a hand edit\n")
    code, _, err = run(capsys, "render", "compose", "--spec", spec, "--check")
    assert code == EXIT_STALE and "compose/node.yaml" in err


def _with_hosts(project: Path, hosts: bool) -> str:
    """The project's spec with a hosts list (compose/hosts is rendered) or without one (it is not)."""
    spec = project / "nodeweave.yaml"
    text = "\n".join(line for line in spec.read_text().splitlines() if not line.startswith("hosts:"))
    spec.write_text(text.replace("nodes: 2", "nodes: 2\nhosts: [gpu01, gpu02]") if hosts else text + "\n")
    return str(spec)


def test_obsolete_rendered_files_are_stale_and_pruned_only_on_request(project, capsys):
    spec = _with_hosts(project, True)
    run(capsys, "render", "compose", "--spec", spec)
    obsolete = project / "compose" / "hosts"
    assert obsolete.is_file()
    _with_hosts(project, False)
    code, out, _ = run(capsys, "render", "compose", "--spec", spec, "--check")
    assert code == EXIT_STALE and "obsolete" in out and "compose/hosts" in out
    assert run(capsys, "render", "compose", "--spec", spec)[0] == EXIT_OK and obsolete.exists()
    assert run(capsys, "render", "compose", "--spec", spec, "--prune")[0] == EXIT_OK
    assert not obsolete.exists()
    assert run(capsys, "render", "compose", "--spec", spec, "--check")[0] == EXIT_OK


def test_prune_removes_only_what_a_render_recorded_never_by_the_mark(project, capsys):
    """Issue 34: a hand-made copy of a rendered file, or a note quoting the mark, carries 'by nodeweave' too."""
    spec = str(project / "nodeweave.yaml")
    assert run(capsys, "render", "all", "--spec", spec)[0] == EXIT_OK
    copy = project / "compose" / "node-gpu02.yaml"
    shutil.copy(project / "compose" / "node.yaml", copy)
    notes = project / "manifests" / "NOTES.md"
    notes.write_text("These files are generated by nodeweave; see the spec.\n")
    before = snapshot(project)
    code, out, err = run(capsys, "render", "all", "--spec", spec, "--prune")
    assert code == EXIT_OK, err
    assert copy.exists() and notes.exists() and "obsolete" not in out
    assert snapshot(project) == before


def test_prune_keeps_and_names_a_recorded_file_the_user_changed_since(project, capsys):
    spec = _with_hosts(project, True)
    run(capsys, "render", "compose", "--spec", spec)
    hosts = project / "compose" / "hosts"
    hosts.write_text(hosts.read_text() + "# my own line\n")
    _with_hosts(project, False)
    code, out, err = run(capsys, "render", "compose", "--spec", spec, "--prune")
    assert code == EXIT_OK, err
    assert hosts.read_text().endswith("# my own line\n")
    assert "kept" in out and "kept compose/hosts" in err and "changed since nodeweave wrote them" in err
    recorded = json.loads((project / ".nodeweave" / "rendered.json").read_text())["files"]
    assert "compose/hosts" not in recorded  # the user's now: a later prune does not name it again


def test_prune_never_touches_another_specs_files_in_the_same_folder(project, capsys):
    spec = _with_hosts(project, True)
    run(capsys, "render", "compose", "--spec", spec)
    other = project / "other.yaml"
    lines = (project / "nodeweave.yaml").read_text().replace("name: llama-pretrain", "name: other-job").splitlines()
    other.write_text("\n".join(line for line in lines if not line.startswith("hosts:")) + "\n")
    code, _, err = run(capsys, "render", "compose", "--spec", str(other), "--prune", "--force")
    assert code == EXIT_OK, err
    assert (project / "compose" / "hosts").is_file()


@pytest.mark.parametrize("damage", ["{", "[]", '{"version": 1, "files": {"../x": {"sha256": "a", "target": "compose", '
                                                '"job": "j"}}}', '{"version": 1, "files": {"a": {"sha256": 3}}}'])
def test_a_damaged_record_is_named_with_its_remedy(project, capsys, damage):
    spec = str(project / "nodeweave.yaml")
    (project / ".nodeweave").mkdir()
    (project / ".nodeweave" / "rendered.json").write_text(damage)
    code, _, err = run(capsys, "render", "compose", "--spec", spec, "--prune")
    assert code == EXIT_USAGE and "rendered.json" in err and "remove the file" in err, err
    assert "Traceback" not in err


def test_rendering_elsewhere_warns_about_relative_host_paths(project, capsys, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("out")
    code, _, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--out", str(out_dir))
    assert code == EXIT_OK
    assert "warning" in err and "workspace.host_path '.'" in err
    assert (out_dir / "compose" / "node.yaml").is_file()


def test_out_that_is_a_file_is_refused(project, capsys):
    code, _, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--out", str(project / "nodeweave.yaml"))
    assert code == EXIT_USAGE and "is not a directory" in err


def test_unknown_target_is_a_usage_error(project, capsys):
    code, _, err = run(capsys, "render", "helm", "--spec", str(project / "nodeweave.yaml"))
    assert code == EXIT_USAGE and "helm" in err and "compose" in err


def test_missing_spec_is_a_usage_error(tmp_path, capsys):
    code, _, err = run(capsys, "render", "--spec", str(tmp_path / "nope.yaml"))
    assert code == EXIT_USAGE and "nope.yaml: spec file not found" in err


def test_a_renderer_that_is_not_there_is_named():
    with pytest.raises(UsageError, match=r"unknown render target 'helm'; accepted: images, compose, manifests") as caught:
        render_targets(load_spec(REPO / "nodeweave.yaml"), ["helm"])
    assert caught.value.exit_code == EXIT_USAGE


def test_render_all_writes_every_renderers_files_once(project, capsys):
    spec = str(project / "nodeweave.yaml")
    code, out, err = run(capsys, "render", "all", "--spec", spec, "--json")
    assert code == EXIT_OK, err
    paths = [f["path"] for f in json.loads(out)["phases"][0]["files"]]
    assert len(paths) == len(set(paths))
    assert set(COMPOSE) <= set(paths)
    assert any(p.startswith("images/") for p in paths) and any(p.startswith("manifests/") for p in paths)
    first = snapshot(project)
    assert run(capsys, "render", "all", "--spec", spec, "--check")[0] == EXIT_OK
    assert snapshot(project) == first


def test_check_reports_a_users_file_as_stale_not_refused(project, capsys):
    (project / "compose").mkdir()
    (project / "compose" / "node.yaml").write_text("mine\n")
    code, out, err = run(capsys, "render", "compose", "--spec", str(project / "nodeweave.yaml"), "--check")
    assert code == EXIT_STALE and "compose/node.yaml" in err and "refusing" not in err
    assert (project / "compose" / "node.yaml").read_text() == "mine\n"


def test_all_renders_the_targets_the_spec_asks_for(project, capsys):
    """images, compose, manifests, entrypoint always; slurm with a slurm section, openshift-build with kubernetes.build."""
    spec = project / "nodeweave.yaml"
    code, out, _ = run(capsys, "render", "all", "--spec", str(spec), "--dry-run", "--json")
    assert code == EXIT_OK
    assert json.loads(out)["phases"][0]["targets"] == ["images", "compose", "manifests", "entrypoint"]
    spec.write_text(spec.read_text().replace("  openshift: false", "  openshift: false\n  build: {source: binary}")
                    + "slurm: {partition: gpu}\n")
    code, out, err = run(capsys, "render", "all", "--spec", str(spec), "--dry-run", "--json")
    (plan,) = json.loads(out)["phases"]
    assert code == EXIT_OK, err
    assert plan["targets"] == ["images", "compose", "manifests", "entrypoint", "slurm", "openshift-build"]
    paths = {f["path"] for f in plan["files"]}
    assert "slurm/job.sbatch" in paths and "openshift/build/buildconfig.yaml" in paths
    assert not any(p.startswith(("kubeflow/", "jobset/")) for p in paths), "TrainJob and JobSet only when named"
    code, out, _ = run(capsys, "render", "jobset", "--spec", str(spec), "--dry-run")
    assert code == EXIT_OK and "jobset/jobset.yaml" in out
