"""``nodeweave sync`` against real podman containers and the real rsync.

Targets are containers from the offline base image (``.ci/make-base-image.sh``)
and images built from it without python3 (so without the receiving agent:
``tar -x`` or rsync receive, ``sha256sum`` checks) and without rsync or
python3 (only tar). Each test checks the targets' files with its own
commands, not with the tool's digest alone.
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
NO_PYTHON_IMAGE = "localhost/nodeweave-base:bookworm-nopython"  # rsync, tar, find, sha256sum
BARE_IMAGE = "localhost/nodeweave-base:bookworm-bare"  # no python3, no rsync: tar only
DERIVED = {NO_PYTHON_IMAGE: "RUN rm -f /usr/bin/python3 /usr/bin/python3.*\n",
           BARE_IMAGE: "RUN dpkg --purge rsync && rm -f /usr/bin/python3 /usr/bin/python3.*\n"}
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
    for image, recipe in DERIVED.items():
        if podman("image", "exists", image, check=False).returncode != 0:
            built = podman("build", "-q", "-t", image, "-f", "-", str(REPO / "tests"),
                           input=f"FROM {BASE_IMAGE}\n{recipe}", check=False)
            if built.returncode != 0:
                return f"cannot build {image}: {built.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def fleet():
    """Four full containers, one without python3, one with only tar, one stopped; removed afterwards."""
    problem = image_problem()
    if problem:
        pytest.skip(problem)
    prefix = f"nwsync-{uuid.uuid4().hex[:6]}"
    names = {"full": [f"{prefix}-{i}" for i in range(4)], "nopython": f"{prefix}-nopython",
             "bare": f"{prefix}-bare", "stopped": f"{prefix}-stopped"}
    started = []
    try:
        for name, image in [*((n, BASE_IMAGE) for n in names["full"]), (names["stopped"], BASE_IMAGE),
                            (names["nopython"], NO_PYTHON_IMAGE), (names["bare"], BARE_IMAGE)]:
            podman("run", "-d", "--name", name, image, "sleep", "infinity")
            started.append(name)
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
    """sha256 of every regular file under dest on the target, stamp and cache aside, by the target's own tools."""
    out = podman("exec", container, "find", dest, "-type", "f", "!", "-name", ".nodeweave-sync.json",
                 "!", "-name", ".nodeweave-sync.cache", "-exec", "sha256sum", "{}", "+")
    sums = {}
    for line in out.stdout.splitlines():
        digest, _, path = line.partition("  ")
        sums[path[len(dest) + 1:]] = digest
    return sums


def dest_dir() -> str:
    return f"/workspace/t-{uuid.uuid4().hex[:8]}"


def test_four_containers_get_one_payload_and_a_resync_moves_nothing(fleet, workspace):
    dest = dest_dir()
    targets = [f"--to=podman:{c}" for c in fleet["full"]]
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert set(data["source"]["held_back_secrets"]) == {".env", "deploy/tls.pem", "keys/id_rsa"}
    want = expected_sums(workspace)
    for result, container in zip(data["targets"], fleet["full"]):
        assert result["status"] == "ok" and result["method"] == "stream", result
        assert result["group"] == 1  # all four took the one payload the source made
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
    for result in again["targets"]:  # rsync's quick check (size, mtime, x bit): nothing to send
        assert result["method"] == "up-to-date" and result["files"] == 0 and result["bytes"] == 0, result

    (workspace / "train.py").chmod(0o755)  # same content, now executable: not "already there"
    rc, again, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert {(r["method"], r["files"], r["group"]) for r in again["targets"]} == {("stream", 1, 1)}
    for container in fleet["full"]:
        assert podman("exec", container, "test", "-x", f"{dest}/train.py", check=False).returncode == 0

    (workspace / "pkg" / "model.py").write_text("x = 2\n")
    rc, third, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert [r["files"] for r in third["targets"]] == [1, 1, 1, 1]
    assert {r["digest"] for r in third["targets"]} == {third["source"]["digest"]} != {data["source"]["digest"]}


def test_targets_at_different_states_get_their_own_payloads(fleet, workspace):
    dest = dest_dir()
    old, fresh = fleet["full"][0], fleet["full"][1:3]
    assert nodeweave(str(workspace), dest, f"--to=podman:{old}")[0] == 0
    (workspace / "configs" / "llama.yaml").write_text("lr: 1e-5\n")
    podman("exec", old, "sh", "-c", f"echo stale > {dest}/stale.txt")
    rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in [old, *fresh]], "--delete")
    assert rc == 0, err
    first, *rest = data["targets"]
    assert first["files"] == 1  # only the changed file went to the old copy, in its own payload
    assert [r["files"] for r in rest] == [len(SENT), len(SENT)]
    assert rest[0]["group"] == rest[1]["group"] != first["group"]  # the two fresh ones shared one
    for container in (old, *fresh):
        assert target_sums(container, dest) == expected_sums(workspace)  # stale.txt deleted too


def test_a_stopped_container_fails_by_name_while_the_others_succeed(fleet, workspace):
    dest = dest_dir()
    good = fleet["full"][:3]
    rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in good],
                              f"--to=podman:{fleet['stopped']}", "--retries=1")
    assert rc == 1
    status = {r["target"]: r["status"] for r in data["targets"]}
    assert status == {**{f"podman:{c}": "ok" for c in good}, f"podman:{fleet['stopped']}": "failed"}
    assert f"failed: podman:{fleet['stopped']}:" in err and "running" in err
    for container in good:
        assert target_sums(container, dest) == expected_sums(workspace)


@pytest.mark.parametrize("kind,method,moved", [("bare", "tar", 2), ("nopython", "rsync", 1)])
def test_targets_without_python3_take_tar_or_rsync_and_sha256sum_checks(fleet, workspace, kind, method, moved):
    dest = dest_dir()
    container = fleet[kind]
    target = f"--to=podman:{container}"
    assert podman("exec", container, "sh", "-c", "command -v python3", check=False).returncode != 0
    rc, data, err = nodeweave(str(workspace), dest, target)
    assert rc == 0, err
    (result,) = data["targets"]
    assert result["method"] == method and result["digest"] == data["source"]["digest"], result
    assert result["files"] == len(SENT) and result["stamp"]["digest"] == data["source"]["digest"]
    assert target_sums(container, dest) == expected_sums(workspace)

    rc, again, err = nodeweave(str(workspace), dest, target, "--no-verify")
    assert rc == 0, err
    assert again["targets"][0]["method"] == "up-to-date" and again["targets"][0]["files"] == 0, again
    (workspace / "configs" / "llama.yaml").write_text("lr: 1e-4\n")
    (workspace / "train.py").chmod(0o755)
    rc, again, err = nodeweave(str(workspace), dest, target)
    assert rc == 0, err
    # tar sends both files; rsync sets the new execute bit without sending the file's data
    assert again["targets"][0]["method"] == method and again["targets"][0]["files"] == moved, again
    assert podman("exec", container, "test", "-x", f"{dest}/train.py", check=False).returncode == 0
    assert again["targets"][0]["digest"] == again["source"]["digest"]

    podman("exec", container, "sh", "-c", f"mkdir -p {dest}/.venv {dest}/old && "
           f"echo x > {dest}/.venv/keep && echo y > {dest}/old/stale.py && echo z > {dest}/extra.txt")
    rc, data, err = nodeweave(str(workspace), dest, target, "--delete")
    assert rc == 0, err
    ls = podman("exec", container, "find", dest).stdout
    assert f"{dest}/extra.txt" not in ls and f"{dest}/old" not in ls
    assert f"{dest}/.venv/keep" in ls  # excluded on the source side: protected, as rsync does


def test_forced_methods_on_a_target_with_python3(fleet, workspace):
    """--method rsync sends the difference with rsync's delta; --tar uses the target's tar: the agent checks both."""
    dest = dest_dir()
    target = f"--to=podman:{fleet['full'][3]}"
    rc, data, err = nodeweave(str(workspace), dest, target, "--tar")
    assert rc == 0, err
    assert data["targets"][0]["method"] == "tar" and data["targets"][0]["stamp"]["digest"] == data["source"]["digest"]
    (workspace / "data" / "tokens.bin").write_bytes(os.urandom(300_000))
    rc, data, err = nodeweave(str(workspace), dest, target, "--method", "rsync")
    assert rc == 0, err
    (result,) = data["targets"]
    assert result["method"] == "rsync" and result["files"] == 1 and result["digest"] == data["source"]["digest"]
    assert target_sums(fleet["full"][3], dest) == expected_sums(workspace)


def test_delete_is_opt_in_and_spares_excluded_files(fleet, workspace):
    dest = dest_dir()
    container = fleet["full"][0]
    target = f"--to=podman:{container}"
    assert nodeweave(str(workspace), dest, target)[0] == 0
    podman("exec", container, "sh", "-c", f"echo x > {dest}/extra.txt && mkdir -p {dest}/.venv && "
           f"echo v > {dest}/.venv/keep")
    assert nodeweave(str(workspace), dest, target)[0] == 0
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode == 0

    rc, data, err = nodeweave(str(workspace), dest, target, "--delete", "--dry-run")
    assert rc == 0, err
    assert data["phases"][0]["request"]["options"]["delete"] is True  # the plan on stdout, what would move on stderr
    assert "*deleting   extra.txt" in err
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode == 0

    rc, data, err = nodeweave(str(workspace), dest, target, "--delete")
    assert rc == 0, err
    assert podman("exec", container, "test", "-f", f"{dest}/extra.txt", check=False).returncode != 0
    assert podman("exec", container, "test", "-f", f"{dest}/.venv/keep", check=False).returncode == 0
    assert podman("exec", container, "test", "-f", f"{dest}/.nodeweave-sync.json", check=False).returncode == 0


def test_include_secrets_sends_them(fleet, workspace):
    dest = dest_dir()
    container = fleet["full"][1]
    rc, data, err = nodeweave(str(workspace), dest, f"--to=podman:{container}", "--include-secrets")
    assert rc == 0, err
    assert data["source"]["held_back_secrets"] == []
    assert podman("exec", container, "cat", f"{dest}/.env").stdout == "TOKEN=secret\n"


def test_dry_run_changes_nothing_and_says_what_would_move(fleet, workspace):
    dest = dest_dir()
    container = fleet["full"][2]
    rc, data, err = nodeweave(str(workspace), dest, f"--to=podman:{container}", f"--to=podman:{fleet['bare']}",
                              "--dry-run")
    assert rc == 0, err
    (phase,) = data["phases"]  # stdout: the plan the real sync would execute; stderr: what would move where
    assert [n["node"] for n in phase["nodes"]] == [f"podman:{container}", f"podman:{fleet['bare']}"]
    for where in (container, fleet["bare"]):
        assert f"podman:{where}: " in err and "<f+++++++++ train.py" in err
        assert podman("exec", where, "test", "-e", dest, check=False).returncode != 0  # not even DEST


def test_git_commit_is_stamped_and_check_catches_a_changed_target(fleet, workspace):
    git = ["git", "-C", str(workspace), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "exp/lr-sweep"], check=True)
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dest = dest_dir()
    targets = [f"--to=podman:{c}" for c in fleet["full"][:2]]
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert data["source"]["commit"] == commit
    for result in data["targets"]:
        assert result["stamp"]["commit"] == commit and result["stamp"]["branch"] == "exp/lr-sweep"

    rc, data, err = nodeweave(str(workspace), dest, *targets, "--check")
    assert rc == 0, err
    podman("exec", fleet["full"][1], "sh", "-c", f"echo changed >> {dest}/configs/llama.yaml")
    rc, data, err = nodeweave(str(workspace), dest, *targets, "--check")
    assert rc == 1
    bad = f"podman:{fleet['full'][1]}"
    assert {r["target"]: r["status"] for r in data["targets"]} == {
        f"podman:{fleet['full'][0]}": "ok", bad: "mismatch"}
    assert f"mismatch: {bad}: 1 file(s) differ from the source, e.g. configs/llama.yaml" in err


def test_the_check_without_python3_uses_sha256sum_and_still_stamps(fleet, workspace):
    """The fallback check for images without python3, run for real through podman exec."""
    from nodeweave.remote import make_target
    from nodeweave.sync.transport import plain
    from nodeweave.sync.filters import build_filter
    from nodeweave.sync.verify import local_digests

    dest = dest_dir()
    container = fleet["bare"]
    assert nodeweave(str(workspace), dest, f"--to=podman:{container}", "--no-verify")[0] == 0
    fileset = build_filter(workspace).walk(workspace)
    local = local_digests(fileset)
    target = make_target("podman", container)
    mismatched, stamp = plain.check(target, dest, local, '{"digest": "d", "commit": null}\n')
    assert mismatched == {} and stamp == {"digest": "d", "commit": None}  # written by sh, read back

    podman("exec", container, "sh", "-c", f"echo changed > '{dest}/name with space.txt'")
    mismatched, stamp = plain.check(target, dest, local, "")
    assert list(mismatched) == ["name with space.txt"] and stamp == {"digest": "d", "commit": None}


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
        assert first["method"] == "stream" and first["files"] == len(SENT)
        for result in rest:
            assert result["method"] == f"shared via podman:{names[0]}" and result["files"] == 0
            assert result["status"] == "ok" and result["digest"] == data["source"]["digest"]
            assert result["stamp"]["digest"] == data["source"]["digest"]  # the one stamp, read back

        # Claimed shared but not: the check catches it, target by target.
        dest = dest_dir()
        rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in fleet["full"][:2]],
                                  "--shared")
        assert rc == 1
        assert [r["status"] for r in data["targets"]] == ["ok", "mismatch"]
        assert f"mismatch: podman:{fleet['full'][1]}: {len(SENT) + 1} file(s) differ" in err  # + the symlink
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
        assert rc == 3 and "compose project 'nwsync-none' has no running container" in err
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
    container = fleet["full"][0]
    dest = dest_dir()
    podman("exec", container, "mkdir", "-p", dest)
    shim = ["sh", "-c", 'pod=$1; [ "$2" = -- ] || exit 99; shift 2; exec podman exec -i "$pod" "$@"', "shim"]
    rsh = " ".join(rsync_quote(t) for t in [sys.executable, "-m", "nodeweave.remote.rsh", *shim, RSH_MARK])
    out = subprocess.run(["rsync", "-rt", "--blocking-io", "--rsh", rsh, f"{tmp_path / 'src'}/",
                          f"someone@{container}:{dest}/"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert podman("exec", container, "cat", f"{dest}/f.txt").stdout == "through the wrapper\n"
