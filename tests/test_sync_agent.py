"""The payload and the receiving agent, run for real on this machine (no container needed).

The tar stream is read back by GNU tar and by Python's tarfile; the fan-out
writes one stream to several pipes; the agent runs as the target would run
it (``python3 -I -S -c PROGRAM DEST``, so it cannot import nodeweave) and is
driven through its whole protocol: request, manifest, plan, payload, result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from nodeweave.sync.node.digest import digest_files, quick_files, tree_digest
from nodeweave.sync.transport.payload import Fanout, Sink, tar_stream
from nodeweave.sync.transport.session import AGENT_PROGRAM

LONG = "deep/" + "d" * 120 + "/name.py"
FILES = {"train.py": b"print('hi')\n", "pkg/model.py": b"x = 1\n" * 1000, "data/blob.bin": os.urandom(3 << 20),
         "ünïcode.py": b"u\n", LONG: b"long\n", "run.sh": b"#!/bin/sh\n"}


@pytest.fixture()
def src(tmp_path):
    root = tmp_path / "src"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "run.sh").chmod(0o755)
    (root / "link.py").symlink_to("train.py")
    (root / "empty").mkdir()
    return root


KINDS = {**{rel: "f" for rel in FILES}, "link.py": "l"}
DIRS = ("data", "deep", "deep/" + "d" * 120, "empty", "pkg")


def payload(root: Path) -> bytes:
    return b"".join(tar_stream(root, DIRS, tuple(sorted(KINDS)), KINDS))


def test_gnu_tar_and_tarfile_read_the_stream(src, tmp_path):
    data = payload(src)
    assert len(data) % tarfile.RECORDSIZE == 0
    out = tmp_path / "gnu"
    out.mkdir()
    subprocess.run(["tar", "-x", "-o", "-f", "-", "-C", str(out)], input=data, check=True)
    for rel, content in FILES.items():
        assert (out / rel).read_bytes() == content, rel
    assert os.readlink(out / "link.py") == "train.py" and (out / "empty").is_dir()
    assert os.stat(out / "run.sh").st_mode & 0o100
    assert int(os.stat(out / "train.py").st_mtime) == int(os.stat(src / "train.py").st_mtime)


def test_one_stream_reaches_every_sink_and_a_dead_reader_stops_no_one(src):
    pipes = [os.pipe() for _ in range(3)]
    got = [bytearray() for _ in pipes]

    def drain(i, fd):
        while chunk := os.read(fd, 1 << 16):
            got[i] += chunk
            if i == 2:  # this reader gives up at once
                break
        os.close(fd)

    readers = [threading.Thread(target=drain, args=(i, r)) for i, (r, _) in enumerate(pipes)]
    for t in readers:
        t.start()
    sinks = [Sink(w, prefix=f"plan {i}\n".encode()) for i, (_, w) in enumerate(pipes)]
    produced = Fanout(sinks).run(tar_stream(src, DIRS, tuple(sorted(KINDS)), KINDS))
    for t in readers:
        t.join()
    data = payload(src)
    assert produced == len(data)
    assert bytes(got[0]) == b"plan 0\n" + data and bytes(got[1]) == b"plan 1\n" + data
    assert sinks[2].error and not sinks[0].error and not sinks[1].error


class Agent:
    """The agent as a target runs it: an isolated python3 that cannot import nodeweave."""

    def __init__(self, dest: Path, python: str = sys.executable):
        self.proc = subprocess.Popen([python, "-I", "-S", "-c", AGENT_PROGRAM, str(dest)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def ask(self, sigs: "dict[str, str]", then="plan", **extra) -> dict:
        request = {"sigs": sigs, "dirs": list(DIRS), "then": then, **extra}
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def send(self, plan: dict, data: bytes = b"") -> dict:
        out, err = self.proc.communicate((json.dumps(plan) + "\n").encode() + data, timeout=60)
        assert self.proc.returncode == 0, err.decode()
        return json.loads(out)


def local_digests(root: Path) -> "dict[str, str]":
    return digest_files(str(root), sorted(KINDS))


def python36() -> "str | None":
    """A real Python 3.6 (pyenv's or on PATH), for the oldest python3 an image may bring."""
    import glob
    import os

    for candidate in [*sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6*/bin/python3.6"))),
                      shutil.which("python3.6")]:
        if candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 6)"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


PYTHONS = sorted({sys.executable, shutil.which("python3") or sys.executable} | ({python36()} - {None}))


@pytest.mark.parametrize("python", PYTHONS)
def test_the_agent_receives_checks_and_stamps(src, tmp_path, python):
    dest, local = tmp_path / "dest", local_digests(src)
    agent = Agent(dest, python)
    answer = agent.ask(local, stamp='{"digest": "d"}\n')
    assert answer["differ"] == dict.fromkeys(local) and set(answer["missing_dirs"]) == set(DIRS)
    assert answer["dest_ok"] and not answer.get("done")
    result = agent.send({"receive": True}, payload(src))
    assert result["files"] == len(FILES) and result["bytes"] == sum(map(len, FILES.values()))
    assert result["mismatched"] == {} and result["errors"] == [] and result["stamp"] == {"digest": "d"}
    assert (dest / "data/blob.bin").read_bytes() == FILES["data/blob.bin"] and os.access(dest / "run.sh", os.X_OK)
    assert not [p for p in dest.rglob("*.tmp")]  # every file was renamed into place

    agent = Agent(dest, python)
    again = agent.ask(local, then="exit")  # a check: all there, by content, from the cache
    agent.proc.communicate(timeout=60)
    assert again["differ"] == {} and again["missing_dirs"] == [] and again["stamp"] == {"digest": "d"}
    cache = json.loads((dest / ".nodeweave-sync.cache").read_text())
    assert {rel: entry[4] for rel, entry in cache.items()} == local  # hashed while written, cached at once

    agent = Agent(dest, python)  # the next sync: nothing differs, so the agent stamps in its first answer
    done = agent.ask(local, stamp='{"digest": "e"}\n', relay=True)
    agent.proc.communicate(timeout=60)
    assert done["done"] and done["stamp"] == {"digest": "e"} and done["mismatched"] == {} and "listen" not in done

    (dest / "train.py").write_text("changed\n")
    agent = Agent(dest, python)
    answer = agent.ask(local, stamp='{"digest": "f"}\n')
    assert answer["differ"] == {"train.py": hashlib.sha256(b"changed\n").hexdigest()} and not answer.get("done")
    agent.proc.communicate(timeout=60)  # the source went away before its plan: no stamp written
    assert json.loads((dest / ".nodeweave-sync.json").read_text()) == {"digest": "e"}


def test_a_payload_that_is_not_what_was_expected_is_named_and_not_stamped(src, tmp_path):
    dest, local = tmp_path / "dest", local_digests(src)
    agent = Agent(dest)
    wrong = {**local, "train.py": hashlib.sha256(b"something else").hexdigest()}
    agent.ask(wrong, stamp="{}\n")
    result = agent.send({"receive": True}, payload(src))
    assert result["mismatched"] == {"train.py": local["train.py"]} and result["stamp"] is None
    assert tree_digest(local) != tree_digest(wrong)


def test_delete_and_quick_mode(src, tmp_path):
    dest = tmp_path / "dest"
    agent = Agent(dest)
    agent.ask(local_digests(src))
    agent.send({"receive": True}, payload(src))
    (dest / "old").mkdir()
    (dest / "old" / "stale.py").write_text("stale\n")
    (dest / "extra.txt").write_text("x\n")
    agent = Agent(dest)
    quick = quick_files(str(src), sorted(KINDS))
    answer = agent.ask(quick, extras=True, quick=True)
    assert sorted(map(tuple, answer["extras"])) == [("extra.txt", False), ("old", True), ("old/stale.py", False)]
    assert answer["differ"] == {}  # size, mtime and x bit agree: quick signatures match
    result = agent.send({"receive": False, "delete": ["extra.txt", "old/stale.py"], "rmdirs": ["old"]})
    assert result["mismatched"] == {} and not (dest / "old").exists() and not (dest / "extra.txt").exists()


def test_paths_that_would_leave_dest_are_refused(tmp_path):
    import io

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("../escape.py", "/abs.py", "ok.py"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x\n\n"))
    dest = tmp_path / "dest"
    agent = Agent(dest)
    ok = hashlib.sha256(b"x\n\n").hexdigest()
    agent.proc.stdin.write(b'{"sigs": {"ok.py": "%s"}, "dirs": [], "then": "plan"}\n' % ok.encode())
    agent.proc.stdin.flush()
    agent.proc.stdout.readline()
    result = agent.send({"receive": True}, buf.getvalue())
    assert sorted(result["errors"]) == ["../escape.py: refused (absolute or '..' path)",
                                        "/abs.py: refused (absolute or '..' path)"]
    assert not (tmp_path / "escape.py").exists() and (dest / "ok.py").read_bytes() == b"x\n\n"


def test_the_fast_ustar_header_is_the_one_tarfile_writes(src):
    """Headers are built directly for speed; they must be byte for byte what tarfile's ustar gives."""
    from nodeweave.sync.transport.payload import _header

    for rel, link in (("run.sh", None), ("link.py", "train.py"), ("pkg", None)):
        st = os.lstat(src / rel)
        info = tarfile.TarInfo(rel)
        info.mode, info.mtime = st.st_mode & 0o7777, int(st.st_mtime)
        if link:
            info.type, info.linkname = tarfile.SYMTYPE, link
        elif (src / rel).is_dir():
            info.type = tarfile.DIRTYPE
        else:
            info.size = st.st_size
        assert _header(rel, st, link) == info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape"), rel
    assert b"path=" in _header(LONG, os.lstat(src / LONG), None)  # too long for ustar: PAX
    assert b"path=" in _header("ünïcode.py", os.lstat(src / "ünïcode.py"), None)
