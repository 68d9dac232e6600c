"""Issue 43, walk5 W76: a spec read from a pipe has no folder of its own; every verb takes the current folder for it.

``nodeweave validate --spec <(cat nodeweave.yaml)`` read relative paths from the current folder, but other sites
computed "the spec's folder" on their own (``spec_path.resolve().parent``), so ``--spec /tmp/pipe`` said "train.py
is not in the workspace /tmp" and ``render`` wrote under /dev/fd. One function (``nodeweave.specpath.spec_folder``) says
it now, and the scan below keeps every other site from computing it by hand. The pipes are real: a named pipe
(``mkfifo``) fed by a writer thread, and an anonymous pipe handed to the verb as /dev/fd/N (``pass_fds``).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

import cli_run
from team_folder import SPEC  # the walks' two-node cpu spec

REPO = Path(__file__).resolve().parents[1]

# verb -> (its words, what names the folder it took as the spec's, given that folder)
VERBS = {
    "validate": (["validate"], lambda here: f"train.py is not in the workspace {here} "),
    "render --dry-run": (["render", "--dry-run", "-o", "json"], lambda here: f'"where": "{here}"'),
    "up --dry-run": (["up", "-t", "local", "--dry-run"], lambda here: f"-f {here}/.nodeweave/team/compose.yaml"),
    "run --dry-run": (["run", "-t", "local", "--dry-run"], lambda here: f"the run folder would be {here}/runs/"),
    "sync --dry-run": (["sync", "-t", "local", "--dry-run"], lambda here: f"the nodes mount {here} at /workspace"),
}


# the script is not in the folder: up reads nothing on nodes, so its dry run ends with the real exit (walk17a A8-A10)
ENDS = {"up --dry-run": 2}


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The folder the verbs run in, holding neither the spec nor its script: a spec elsewhere (a pipe's folder,
    /tmp, /dev/fd) would name that folder instead. No variable of the shell's changes what is planned."""
    folder = tmp_path / "job"
    folder.mkdir()
    for name in list(os.environ):
        if name.startswith("NODEWEAVE_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    return folder


def said(done) -> str:
    return done.stdout + done.stderr


def from_named_pipe(words, folder: Path, pipes: Path):
    """``nodeweave WORDS --spec PIPE`` in ``folder``, with a thread writing the spec into a named pipe elsewhere;
    (the verb's result, whether it read the pipe, the pipe)."""
    pipes.mkdir(exist_ok=True)
    fifo = pipes / f"spec-{len(list(pipes.iterdir()))}"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w") as out:
            out.write(SPEC)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done = cli_run.nodeweave(*words, "--spec", str(fifo), cwd=folder, timeout=120)
    read = not writer.is_alive()
    if not read:  # the verb never opened it: let the writer go
        unblock = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(10)
        os.close(unblock)
    return done, read, fifo


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_spec_from_a_named_pipe_has_the_current_folder(here, tmp_path, verb):
    words, names = VERBS[verb]
    done, read, fifo = from_named_pipe(words, here, tmp_path / "pipes")
    assert done.returncode == ENDS.get(verb, 0), said(done)
    assert read, "the verb never read the spec from the pipe"
    assert names(here) in said(done), said(done)
    assert str(fifo.parent) not in said(done).replace(str(fifo), "SPEC")  # named as the spec, never its folder
    assert list(here.iterdir()) == []  # a dry run writes nothing, here or beside the pipe


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_spec_from_dev_fd_has_the_current_folder(here, verb):
    words, names = VERBS[verb]
    read_end, write_end = os.pipe()
    os.write(write_end, SPEC.encode())  # a page: the pipe holds it all
    os.close(write_end)
    try:
        done = cli_run.nodeweave(*words, "--spec", f"/dev/fd/{read_end}", cwd=here, pass_fds=(read_end,),
                                 timeout=120)
    finally:
        os.close(read_end)
    assert done.returncode == ENDS.get(verb, 0), said(done)
    assert names(here) in said(done), said(done)
    assert "/dev/fd" not in said(done).replace(f"/dev/fd/{read_end}:", "")  # named as the spec, never its folder
    assert list(here.iterdir()) == []


def test_the_spec_folder_of_each_kind_of_path(tmp_path, monkeypatch):
    from nodeweave.specpath import spec_folder

    monkeypatch.chdir(tmp_path)
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "link.yaml").symlink_to(tmp_path / "team" / "nodeweave.yaml")
    os.mkfifo(tmp_path / "team" / "pipe")
    assert spec_folder(tmp_path / "team" / "nodeweave.yaml") == tmp_path / "team"
    assert spec_folder(Path("team/nodeweave.yaml")) == tmp_path / "team"
    assert spec_folder(tmp_path / "link.yaml") == tmp_path  # a link: where it is named (a shared spec linked into a project, W58)
    assert spec_folder(tmp_path / "new" / "nodeweave.yaml") == tmp_path / "new"  # init's file to be
    for stream in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", str(tmp_path / "team" / "pipe")):
        assert spec_folder(stream) == tmp_path, stream


# `.parent` (or dirname) of anything named for the spec: the spec's folder computed by hand.
BY_HAND = re.compile(r"\w*spec\w*(\([^()]*\))?(\.resolve\(\)|\.absolute\(\))?\.parent\b|"
                     r"dirname\([^)]*spec", re.I)
ITS_HOME = REPO / "src" / "nodeweave" / "specpath.py"  # where spec_folder says it, once


def test_no_site_computes_the_spec_folder_by_hand():
    found = []
    for path in sorted((REPO / "src" / "nodeweave").rglob("*.py")):
        if path == ITS_HOME or "entrypoint" in path.relative_to(REPO / "src" / "nodeweave").parts[:1]:
            continue  # the entrypoint reads no spec file: the nodes get the plan, not nodeweave.yaml
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if BY_HAND.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "use nodeweave.specpath.spec_folder(path):\n" + "\n".join(found)
    assert BY_HAND.search("folder = spec_path.resolve().parent")  # the scan sees what it is for
    assert BY_HAND.search("parent = find_spec(None).resolve().parent / RUNS")


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_spec_linked_from_a_teams_shared_folder_belongs_to_the_project_it_is_linked_into(here, tmp_path, verb):
    """proj/nodeweave.yaml -> ../shared/team-spec.yaml (walk6 W58): the project's folder is the workspace, its
    state and runs, as for a compose file or a git path; the shared folder is never named nor written."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "team-spec.yaml").write_text(SPEC)
    (here / "nodeweave.yaml").symlink_to(shared / "team-spec.yaml")
    words, names = VERBS[verb]
    done = cli_run.nodeweave(*words, "--spec", str(here / "nodeweave.yaml"), cwd=str(tmp_path))
    assert done.returncode == ENDS.get(verb, 0), said(done)
    assert names(here) in said(done), said(done)
    assert str(shared) not in said(done)
    assert sorted(p.name for p in shared.iterdir()) == ["team-spec.yaml"]
