"""``nodeweave sync`` against real podman containers and the real rsync.

Targets are containers from the offline base image (``.ci/make-base-image.sh``)
and one built from it without rsync (the tar fallback). Each test checks the
targets' files with its own commands, not with the tool's digest alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("own_digest_cache")]

BASE_IMAGE = "localhost/nodeweave-base:bookworm"
NO_RSYNC_IMAGE = "localhost/nodeweave-base:bookworm-norsync"
REPO = Path(__file__).resolve().parents[1]
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]


def podman(*args: str, check: bool = True, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check,
                          timeout=300, **kw)


def image_problem() -> "str | None":
    """Make the base image (and the no-rsync one) if missing; why not, or None."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        made = subprocess.run(["bash", str(REPO / ".ci" / "make-base-image.sh"), BASE_IMAGE],
                              capture_output=True, text=True, timeout=900)
        if made.returncode != 0:
            return f"cannot make {BASE_IMAGE}: {made.stderr.strip()[-300:]}"
    if podman("image", "exists", NO_RSYNC_IMAGE, check=False).returncode != 0:
        built = podman("build", "-q", "-t", NO_RSYNC_IMAGE, "-f", "-", str(REPO / "tests"),
                       input=f"FROM {BASE_IMAGE}\nRUN dpkg --purge rsync\n", check=False)
        if built.returncode != 0:
            return f"cannot build {NO_RSYNC_IMAGE}: {built.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def fleet():
    """Four rsync containers, one without rsync, one stopped; all removed afterwards."""
    problem = image_problem()
    if problem:
        pytest.skip(problem)
    prefix = f"nwsync-{uuid.uuid4().hex[:6]}"
    names = {"rsync": [f"{prefix}-{i}" for i in range(4)], "norsync": f"{prefix}-tar",
             "stopped": f"{prefix}-stopped"}
    started = []
    try:
        for name in names["rsync"] + [names["stopped"]]:
            podman("run", "-d", "--name", name, BASE_IMAGE, "sleep", "infinity")
            started.append(name)
        podman("run", "-d", "--name", names["norsync"], NO_RSYNC_IMAGE, "sleep", "infinity")
        started.append(names["norsync"])
        podman("stop", "-t", "0", names["stopped"])
        yield names
    finally:
        if started:
            podman("rm", "-f", "-t", "0", *started, check=False)


def nodeweave(*args: str) -> "tuple[int, dict | None, str]":
    out = subprocess.run([*NODEWEAVE, "sync", "--json", *args],
                         capture_output=True, text=True, timeout=600, cwd=REPO / "tests")
    try:
        data = json.loads(out.stdout)
    except ValueError:
        data = None
    return out.returncode, data, out.stderr


SENT = {"train.py": "print('hi')\n", "pkg/__init__.py": "", "pkg/model.py": "x = 1\n" * 500,
        "configs/llama.yaml": "lr: 3e-4\n", "data/tokens.bin": None, "deep/a/b/c/d.txt": "deep\n",
        "name with space.txt": "sp\n", ".env.example": "TOKEN=\n"}
HELD = {".env": "TOKEN=secret\n", "keys/id_rsa": "KEY\n", "deploy/tls.pem": "PEM\n",
        "pkg/__pycache__/model.cpython-311.pyc": "pyc", "ckpt/step100.pt": "weights",
        ".venv/bin/python": "venv", "wandb/run.json": "{}"}


@pytest.fixture()
def workspace(tmp_path):
    src = tmp_path / "proj"
    for rel, text in {**SENT, **HELD}.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.write_bytes(os.urandom(300_000))
        else:
            path.write_text(text)
    os.symlink("train.py", src / "main.py")
    return src


def expected_sums(src: Path) -> "dict[str, str]":
    rels = list(SENT)
    return {rel: hashlib.sha256((src / rel).read_bytes()).hexdigest() for rel in rels}


def target_sums(container: str, dest: str) -> "dict[str, str]":
    """sha256 of every regular file under dest on the target, stamp aside, by the target's own tools."""
    out = podman("exec", container, "find", dest, "-type", "f", "!", "-name", ".nodeweave-sync.json",
                 "-exec", "sha256sum", "{}", "+")
    sums = {}
    for line in out.stdout.splitlines():
        digest, _, path = line.partition("  ")
        sums[path[len(dest) + 1:]] = digest
    return sums


def dest_dir() -> str:
    return f"/workspace/t-{uuid.uuid4().hex[:8]}"


def test_four_containers_get_the_same_tree_and_a_resync_moves_nothing(fleet, workspace):
    dest = dest_dir()
    targets = [f"--to=podman:{c}" for c in fleet["rsync"]]
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert set(data["source"]["held_back_secrets"]) == {".env", "deploy/tls.pem", "keys/id_rsa"}
    want = expected_sums(workspace)
    for result, container in zip(data["targets"], fleet["rsync"]):
        assert result["status"] == "ok" and result["method"] == "rsync", result
        assert result["digest"] == data["source"]["digest"]
        assert result["files"] == len(SENT)  # regular files; the symlink is not file data
        assert target_sums(container, dest) == want  # secrets, caches, venv, checkpoints absent
        link = podman("exec", container, "readlink", f"{dest}/main.py").stdout.strip()
        assert link == "train.py"
        stamp = json.loads(podman("exec", container, "cat", f"{dest}/.nodeweave-sync.json").stdout)
        assert stamp["digest"] == data["source"]["digest"] and stamp["files"] == len(SENT) + 1

    rc, again, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    for result in again["targets"]:  # every file's content already there: one exec, nothing sent
        assert result["status"] == "ok" and result["method"] == "up-to-date", result
        assert result["files"] == 0 and result["bytes"] == 0 and result["digest"] == data["source"]["digest"]

    rc, again, err = nodeweave(str(workspace), dest, *targets, "--no-verify")
    assert rc == 0, err
    for result in again["targets"]:  # rsync's own --stats: no file transferred, no literal data
        assert result["method"] == "rsync" and result["files"] == 0 and result["bytes"] == 0, result

    (workspace / "train.py").chmod(0o755)  # same content, now executable: not "already there"
    rc, again, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert {r["method"] for r in again["targets"]} == {"rsync"}
    for container in fleet["rsync"]:
        assert podman("exec", container, "test", "-x", f"{dest}/train.py", check=False).returncode == 0

    (workspace / "pkg" / "model.py").write_text("x = 2\n")
    rc, third, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert [r["files"] for r in third["targets"]] == [1, 1, 1, 1]
    assert {r["digest"] for r in third["targets"]} == {third["source"]["digest"]} != {data["source"]["digest"]}


def test_a_stopped_container_fails_by_name_while_the_others_succeed(fleet, workspace):
    dest = dest_dir()
    good = fleet["rsync"][:3]
    rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in good],
                              f"--to=podman:{fleet['stopped']}", "--retries=1")
    assert rc == 1
    status = {r["target"]: r["status"] for r in data["targets"]}
    assert status == {**{f"podman:{c}": "ok" for c in good}, f"podman:{fleet['stopped']}": "failed"}
    assert f"failed: podman:{fleet['stopped']}:" in err and "running" in err
    for container in good:
        assert target_sums(container, dest) == expected_sums(workspace)


def test_tar_fallback_where_the_target_has_no_rsync(fleet, workspace):
    dest = dest_dir()
    target = f"--to=podman:{fleet['norsync']}"
    assert podman("exec", fleet["norsync"], "sh", "-c", "command -v rsync", check=False).returncode != 0
    rc, data, err = nodeweave(str(workspace), dest, target)
    assert rc == 0, err
    (result,) = data["targets"]
    assert result["method"] == "tar" and result["digest"] == data["source"]["digest"]
    assert target_sums(fleet["norsync"], dest) == expected_sums(workspace)

    rc, again, err = nodeweave(str(workspace), dest, target, "--no-verify")
    assert rc == 0, err
    assert again["targets"][0]["method"] == "tar" and again["targets"][0]["files"] == 0, again
    (workspace / "configs" / "llama.yaml").write_text("lr: 1e-4\n")
    (workspace / "train.py").chmod(0o755)
    rc, again, err = nodeweave(str(workspace), dest, target)
    assert rc == 0, err
    assert again["targets"][0]["method"] == "tar" and again["targets"][0]["files"] == 2, again
    assert podman("exec", fleet["norsync"], "test", "-x", f"{dest}/train.py", check=False).returncode == 0
    assert again["targets"][0]["digest"] == again["source"]["digest"]

    podman("exec", fleet["norsync"], "sh", "-c", f"mkdir -p {dest}/.venv {dest}/old && "
           f"echo x > {dest}/.venv/keep && echo y > {dest}/old/stale.py && echo z > {dest}/extra.txt")
    rc, data, err = nodeweave(str(workspace), dest, target, "--delete")
    assert rc == 0, err
    ls = podman("exec", fleet["norsync"], "find", dest).stdout
    assert f"{dest}/extra.txt" not in ls and f"{dest}/old" not in ls
    assert f"{dest}/.venv/keep" in ls  # excluded on the source side: protected, as rsync does


def test_delete_is_opt_in_and_spares_excluded_files(fleet, workspace):
    dest = dest_dir()
    container = fleet["rsync"][0]
    target = f"--to=podman:{container}"
    assert nodeweave(str(workspace), dest, target)[0] == 0
    podman("exec", container, "sh", "-c", f"echo x > {dest}/extra.txt && mkdir -p {dest}/.venv && "
           f"echo v > {dest}/.venv/keep")
    assert nodeweave(str(workspace), dest, target)[0] == 0
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode == 0

    rc, data, err = nodeweave(str(workspace), dest, target, "--delete", "--dry-run")
    assert rc == 0, err
    assert any("deleting" in c and "extra.txt" in c for c in data["targets"][0]["changes"])
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode == 0

    rc, data, err = nodeweave(str(workspace), dest, target, "--delete")
    assert rc == 0, err
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode != 0
    assert podman("exec", container, "test", "-f", f"{dest}/.venv/keep", check=False).returncode == 0
    assert podman("exec", container, "test", "-f", f"{dest}/.nodeweave-sync.json", check=False).returncode == 0


def test_include_secrets_sends_them(fleet, workspace):
    dest = dest_dir()
    container = fleet["rsync"][1]
    rc, data, err = nodeweave(str(workspace), dest, f"--to=podman:{container}", "--include-secrets")
    assert rc == 0, err
    assert data["source"]["held_back_secrets"] == []
    assert podman("exec", container, "cat", f"{dest}/.env").stdout == "TOKEN=secret\n"


def test_dry_run_changes_nothing_and_says_what_would_move(fleet, workspace):
    dest = dest_dir()
    container = fleet["rsync"][2]
    rc, data, err = nodeweave(str(workspace), dest, f"--to=podman:{container}", "--dry-run")
    assert rc == 0, err
    changes = data["targets"][0]["changes"]
    assert data["targets"][0]["status"] == "dry-run"
    assert any(c.startswith("<f+++") and c.endswith(" train.py") for c in changes)
    assert podman("exec", container, "test", "-e", dest, check=False).returncode != 0  # not even DEST


def test_git_commit_is_stamped_and_check_catches_a_changed_target(fleet, workspace):
    git = ["git", "-C", str(workspace), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "exp/lr-sweep"], check=True)
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dest = dest_dir()
    targets = [f"--to=podman:{c}" for c in fleet["rsync"][:2]]
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert data["source"]["commit"] == commit
    for result in data["targets"]:
        assert result["stamp"]["commit"] == commit and result["stamp"]["branch"] == "exp/lr-sweep"

    rc, data, err = nodeweave(str(workspace), dest, *targets, "--check")
    assert rc == 0, err
    podman("exec", fleet["rsync"][1], "sh", "-c", f"echo changed >> {dest}/configs/llama.yaml")
    rc, data, err = nodeweave(str(workspace), dest, *targets, "--check")
    assert rc == 1
    bad = f"podman:{fleet['rsync'][1]}"
    assert {r["target"]: r["status"] for r in data["targets"]} == {
        f"podman:{fleet['rsync'][0]}": "ok", bad: "mismatch"}
    assert f"mismatch: {bad}: 1 file(s) differ from the source, e.g. configs/llama.yaml" in err


def test_the_check_without_python3_uses_sha256sum_and_still_stamps(fleet, workspace):
    """The fallback path for images without python3, run for real through podman exec."""
    from nodeweave.sync.digest import tree_digest
    from nodeweave.sync.filters import build_filter
    from nodeweave.remote import make_target
    from nodeweave.sync.verify import check_on_target, local_digests

    dest = dest_dir()
    container = fleet["rsync"][3]
    assert nodeweave(str(workspace), dest, f"--to=podman:{container}", "--no-verify")[0] == 0
    fileset = build_filter(workspace).walk(workspace)
    local = {rel: d for rel, d in local_digests(fileset).items() if fileset.files[rel] == "f"}
    target = make_target("podman", container)
    stamp = {"digest": tree_digest(local), "commit": None}
    check = check_on_target(target, dest, local, stamp, has_python=False)
    assert check.mismatched == [] and check.digest == tree_digest(local)
    assert check.stamp == stamp  # written by sh, read back from the target's disk

    podman("exec", container, "sh", "-c", f"echo changed > '{dest}/name with space.txt'")
    check = check_on_target(target, dest, local, None, has_python=False)
    assert check.mismatched == ["name with space.txt"]


def test_shared_storage_is_written_once_and_checked_everywhere(fleet, workspace):
    """Pods of a claim: shared StatefulSet mount one volume: write through the first, check all."""
    tag = uuid.uuid4().hex[:6]
    volume, names = f"nwsync-vol-{tag}", [f"nwsync-{tag}-shared-{i}" for i in range(3)]
    podman("volume", "create", volume)
    try:
        for name in names:
            podman("run", "-d", "--name", name, "-v", f"{volume}:/shared", BASE_IMAGE, "sleep", "infinity")
        rc, data, err = nodeweave(str(workspace), "/shared/proj", *[f"--to=podman:{n}" for n in names],
                                  "--shared")
        assert rc == 0, err
        first, *rest = data["targets"]
        assert first["method"] == "rsync" and first["files"] == len(SENT)
        for result in rest:
            assert result["method"] == f"shared via podman:{names[0]}" and result["files"] == 0
            assert result["status"] == "ok" and result["digest"] == data["source"]["digest"]
            assert result["stamp"]["digest"] == data["source"]["digest"]  # the one stamp, read back

        # Claimed shared but not: the check catches it, target by target.
        dest = dest_dir()
        rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in fleet["rsync"][:2]],
                                  "--shared")
        assert rc == 1
        assert [r["status"] for r in data["targets"]] == ["ok", "mismatch"]
        assert f"mismatch: podman:{fleet['rsync'][1]}: {len(SENT) + 1} file(s) differ" in err  # + the symlink
    finally:
        podman("rm", "-f", "-t", "0", *names, check=False)
        podman("volume", "rm", "-f", volume, check=False)


def test_compose_project_services_are_found_by_label_in_node_order(workspace):
    """The label podman-compose and docker compose put on every service container."""
    problem = image_problem()
    if problem:
        pytest.skip(problem)
    project = f"nwsync{uuid.uuid4().hex[:6]}"
    names = [f"{project}_node-{i}_1" for i in (1, 0)]  # started out of order
    try:
        for name in names:
            podman("run", "-d", "--name", name, "--label", f"com.docker.compose.project={project}",
                   BASE_IMAGE, "sleep", "infinity")
        rc, data, err = nodeweave(str(workspace), "/workspace/compose", f"--compose-project={project}")
        assert rc == 0, err
        assert [r["target"] for r in data["targets"]] == [f"podman:{project}_node-0_1", f"podman:{project}_node-1_1"]
        assert {r["digest"] for r in data["targets"]} == {data["source"]["digest"]}
        rc, data, err = nodeweave(str(workspace), "/workspace/compose", "--compose-project=nwsync-none")
        assert rc == 1 and "compose project 'nwsync-none' has no running container" in err
    finally:
        podman("rm", "-f", "-t", "0", *names, check=False)


def test_the_kubectl_rsh_wrapper_under_real_rsync(fleet, tmp_path):
    """rsync -> nodeweave.remote.rsh -> a command shaped like kubectl's ``POD -- CMD...``.

    No cluster here, so the last hop is a strict shim: it refuses a call
    without ``--`` after the pod (as kubectl would misparse one) and execs
    ``podman exec -i POD CMD...``; rsync's own appended arguments (``-l USER``,
    the host, ``rsync --server ...``) go through the real wrapper.
    """
    from nodeweave.remote.base import rsync_quote
    from nodeweave.remote.kube import RSH_MARK

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f.txt").write_text("through the wrapper\n")
    container = fleet["rsync"][0]
    dest = dest_dir()
    podman("exec", container, "mkdir", "-p", dest)
    shim = ["sh", "-c", 'pod=$1; [ "$2" = -- ] || exit 99; shift 2; exec podman exec -i "$pod" "$@"', "shim"]
    rsh = " ".join(rsync_quote(t) for t in [sys.executable, "-m", "nodeweave.remote.rsh", *shim, RSH_MARK])
    out = subprocess.run(["rsync", "-rt", "--blocking-io", "--rsh", rsh, f"{tmp_path / 'src'}/",
                          f"someone@{container}:{dest}/"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert podman("exec", container, "cat", f"{dest}/f.txt").stdout == "through the wrapper\n"
