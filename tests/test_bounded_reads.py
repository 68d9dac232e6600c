"""Every file a user can name, or replace, is read at most cap + 1 bytes, whatever it is (issue 43, class 1).

A path can be a device or a pipe (``--spec /dev/zero``, ``--spec <(yes)``, a state file linked to
``/dev/urandom``): ``stat`` says 0 bytes and a plain read follows it until the kernel's OOM killer
ends the process (22.6 GB before). Each member below points one such file at an endless source and
runs the real program under a 1 GiB address-space limit: it must refuse in one line, exit 2, fast.
The last test walks the source, so a new unbounded read of a file is named where it is written.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SRC = Path(__file__).resolve().parents[1] / "src"
ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(SRC), "COLUMNS": "200",
       "PYTHONDONTWRITEBYTECODE": "1"}
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.start import main; sys.exit(main())"]
ENTRYPOINT = [sys.executable, "-c", "import sys; from nodeweave.entrypoint.__main__ import main; sys.exit(main())"]
SPEC = """name: nwbound
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""
ENDLESS = "/dev/zero"
MEMORY = 1 << 30  # an unbounded read hits this in a second (MemoryError), not the machine's OOM killer


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def endless(path: Path) -> Path:
    """``path`` made a link to an endless device (its folder made first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(ENDLESS)
    return path


def huge(path: Path) -> Path:
    """``path`` made a sparse regular file of 4 GiB (a reader that checks ``is_file()`` first still reads it)."""
    with open(path, "wb") as handle:
        handle.truncate(4 << 30)
    return path


def spec_at(project: Path) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    (project / "nodeweave.yaml").write_text(SPEC)
    return project


def requirements(project: Path):
    (project / "nodeweave.yaml").write_text(SPEC.replace("{variant: cpu}", "{variant: cpu, requirements: req.txt}"))
    endless(project / "req.txt")
    return ["validate"], {}


def state_file(project: Path):
    endless(project / ".nodeweave" / "nwbound" / "cluster.json")
    return ["stop", "--dry-run"], {"says": "is a symbolic link"}  # never read through a link (walk3 F28)


def run_record(project: Path):
    run = project / "runs" / "20260101T000000Z-nwbound"
    run.mkdir(parents=True)
    endless(run / "run.json")
    # asked for by name: refused; `runs ls` lists it as a row (walk2 U5); never read through a link (walk5 W9)
    return ["runs", "show", run.name], {"says": "is a symbolic link"}


def render_record(project: Path):
    endless(project / "out" / ".nodeweave" / "rendered.json")
    return ["render", "compose", "--out", "out", "--check"], {"says": "is a symbolic link"}  # walk5 W9


def hosts_file(project: Path):
    return ["hosts", "probe", "--hosts-file", ENDLESS], {}


def sync_ignore_file(project: Path):
    huge(project / ".nodeweaveignore")
    return ["sync", ".", "/workspace", "--node", "podman:nwbound-0", "--dry-run"], {}


def docker_ignore(project: Path):
    rendered = run([*NODEWEAVE, "render", "entrypoint"], project)
    assert rendered.returncode == 0, rendered.stderr
    huge(project / ".dockerignore")
    return ["image", "build", "cpu", "--dry-run"], {}


def rendered_file(project: Path):
    endless(project / "compose" / "local.yaml")
    return ["render", "compose", "--check"], {}


def spec_device(project: Path):
    return ["validate", "--spec", ENDLESS], {}


def spec_from_stdin(project: Path):
    return ["validate", "--spec", "-"], {"stdin": ENDLESS}


def spec_from_variable(project: Path):
    return ["validate"], {"env": {"NODEWEAVE_SPEC": "/dev/urandom"}}


CLI_MEMBERS = [spec_device, spec_from_stdin, spec_from_variable, requirements, state_file, run_record,
               render_record, hosts_file, sync_ignore_file, docker_ignore, rendered_file]


def run(argv, cwd: Path, stdin: str = "/dev/null", env=None) -> subprocess.CompletedProcess:
    with open(stdin, "rb") as given:
        return subprocess.run(argv, cwd=cwd, stdin=given, capture_output=True, text=True, timeout=120,
                              env={**ENV, "HOME": home_beside(cwd), **(env or {})}, preexec_fn=limited)


def refused_in_one_line(done: subprocess.CompletedProcess, named: str, says: str = "too large") -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert says in errors[0] and named in errors[0], errors[0]


@pytest.mark.parametrize("member", CLI_MEMBERS, ids=lambda m: m.__name__)
def test_a_file_the_cli_reads_is_refused_when_it_never_ends(tmp_path, member):
    project = spec_at(tmp_path)
    words, how = member(project)
    started = time.monotonic()
    done = run([*NODEWEAVE, *words], project, stdin=how.get("stdin", "/dev/null"), env=how.get("env"))
    named = "<stdin>" if how.get("stdin") else "/dev/urandom" if how.get("env") else ""
    assert time.monotonic() - started < 60, "refused, but only after a minute: the file was read far past its cap"
    refused_in_one_line(done, named, how.get("says", "too large"))


def test_a_spec_from_an_endless_pipe_is_refused(tmp_path):
    """``--spec <(yes)``: a pipe, not a device (a writer that never stops)."""
    project = spec_at(tmp_path)
    done = subprocess.run(["bash", "-c", 'exec "$@" validate --spec <(yes)', "bash", *NODEWEAVE], cwd=project,
                          capture_output=True, text=True, timeout=120, env={**ENV, "HOME": home_beside(project)},
                          preexec_fn=limited)
    refused_in_one_line(done, "/dev/fd/")


@pytest.mark.parametrize("words,env,named", [
    (["--hostfile", ENDLESS], {}, "hostfile"),
    (["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1"],
     {"NODEWEAVE_JOB_TOKEN_FILE": ENDLESS}, "NODEWEAVE_JOB_TOKEN_FILE"),
    ([], {"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "2", "BATCH_HOSTS_FILE": ENDLESS}, "BATCH_HOSTS_FILE"),
], ids=["hostfile", "token-file", "batch-hosts-file"])
def test_a_file_the_entrypoint_is_named_is_refused_when_it_never_ends(tmp_path, words, env, named):
    done = run([*ENTRYPOINT, *words, "--", "train.py"], tmp_path, env=env)
    refused_in_one_line(done, named)


def test_a_spec_read_from_stdin_is_a_spec(tmp_path):
    """``--spec -`` (the walk's row 51): the spec from standard input, named <stdin>."""
    spec = spec_at(tmp_path / "elsewhere") / "nodeweave.yaml"
    done = run([*NODEWEAVE, "validate", "--spec", "-", "-o", "json"], tmp_path, stdin=str(spec))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["spec"] == "<stdin>" and json.loads(done.stdout)["name"] == "nwbound"


# Reads left unbounded on purpose, each with why: files nodeweave itself writes and reads back in its
# own folders, package data, and the kernel's files the entrypoint reads by design. Anything else
# reads a file through nodeweave.entrypoint.bounded.
UNBOUNDED = {
    "bench/runner.py": "rank 0's report, written by the bench's own worker into a private temporary folder",
    "build/pushed.py": "the digest file the engine writes into a private temporary folder",
    "check/driver.py": "the check's own log under runs/",
    "cluster/dashboard.py": "package data: the page it serves",
    "cli/habits/detach.py": "the detached run's note and log under runs/, written by this program",
    "cluster/job.py": "members of an archive nodeweave packed",
    "cluster/logs.py": "followed logs under runs/, read as they grow",
    "sync/transport/session.py": "nodeweave's own agent module, shipped to the node",
    "targets/images/__init__.py": "package templates",
    "targets/zipapp/archive.py": "nodeweave's own modules, packed into the zipapp",
    "entrypoint/checkin/fingerprint.py": "the workspace's git metadata, each file a line",
    "entrypoint/checkin/session.py": "the node's own session record",
    "entrypoint/detection/kube.py": "the Kubernetes API's answer",
    "cluster/writable.py": "/etc/subuid, the machine's own user mapping (rootless podman)",
    "entrypoint/metrics/gpus.py": "self.read() is the sampler's reader (detection/gpu_use.py), not a file",
    "entrypoint/metrics/live.py": "node 0's own recovery record, written by its entrypoint",
    "entrypoint/detection/sysfs.py": "the live machine's sysfs and procfs (a --sysroot capture is read bounded)",
    "entrypoint/nodeinfo.py": "the node's own stall file",
    "entrypoint/recovery/setup.py": "the node's own recovery record",
    "entrypoint/running/runstate.py": "the node's run record and /proc",
    "entrypoint/stall/rankhook/sitecustomize.py": "the rank hook's own files",
    "entrypoint/stall/ranks.py": "/proc and the ranks' own dump files",
    "sync/node/agent.py": "the sync agent's stamp, on the node",
    "sync/node/digest.py": "the sync agent's cache, on the node",
    "sync/node/resident.py": "/proc and the resident's own state, on the node",
}


def unbounded_reads():
    """(module, line, call) of every whole-file read in src/nodeweave not made through the helper."""
    root = SRC / "nodeweave"
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            func, base = node.func, node.func.value
            helper = isinstance(base, ast.Name) and base.id == "bounded"
            whole = (func.attr in ("read_text", "read_bytes") and not helper) or \
                (func.attr == "load" and isinstance(base, ast.Name) and base.id == "json") or \
                (func.attr == "read" and not node.args and isinstance(base, ast.Name))
            if whole:
                yield path.relative_to(root).as_posix(), node.lineno, ast.unparse(node)[:80]


def test_every_other_read_of_a_file_goes_through_the_bounded_helper():
    found = [f"{module}:{line}: {call}" for module, line, call in unbounded_reads() if module not in UNBOUNDED]
    assert not found, ("read these through nodeweave.entrypoint.bounded (a path can be a device or a pipe), or "
                       "add the module to UNBOUNDED with why:\n" + "\n".join(found))


def test_the_exceptions_are_still_there():
    """An entry of UNBOUNDED whose module no longer reads whole files goes, so the list cannot only grow."""
    modules = {module for module, _, _ in unbounded_reads()}
    assert set(UNBOUNDED) <= modules, set(UNBOUNDED) - modules


def test_the_helper_stops_at_the_cap(tmp_path):
    from nodeweave.entrypoint import bounded

    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 10)
    assert bounded.read_bytes(exact, 10, "a test file") == b"x" * 10
    with pytest.raises(bounded.TooLarge) as err:
        bounded.read_bytes(exact, 9, "a test file")
    assert err.value.filename == str(exact) and "more than 9 bytes" in err.value.strerror
    assert bounded.read_tail(exact, 4) == "xxxx" and len(bounded.read_tail(ENDLESS, 4)) == 4


def test_a_captured_tree_with_an_endless_file_is_read_within_bounds(tmp_path):
    """``doctor --sysroot DIR`` (a tree a user names): an endless file there reads as unreadable, as any
    file the kernel refuses does, instead of growing until the OOM killer."""
    import shutil

    tree = tmp_path / "capture"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "synthetic" / "cloud-vm", tree, symlinks=True)
    (tree / "etc" / "hostname").unlink(missing_ok=True)
    endless(tree / "etc" / "hostname")
    done = run([*NODEWEAVE, "doctor", "--sysroot", str(tree)], tmp_path)
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 1), done.stderr[-2000:]  # graded findings, not a crash


def fifo_spec(project: Path):
    os.mkfifo(project / "pipe.yaml")
    return ["validate", "--spec", str(project / "pipe.yaml")], "pipe.yaml"


def fifo_state_file(project: Path):
    (project / ".nodeweave" / "nwbound").mkdir(parents=True)
    os.mkfifo(project / ".nodeweave" / "nwbound" / "cluster.json")
    return ["status"], "cluster.json"


def fifo_run_record(project: Path):
    run = project / "runs" / "20260101T000000Z-nwbound"
    run.mkdir(parents=True)
    os.mkfifo(run / "run.json")
    return ["runs", "ls"], None


@pytest.mark.parametrize("member", [fifo_spec, fifo_state_file, fifo_run_record], ids=lambda m: m.__name__)
def test_a_named_pipe_no_one_writes_is_answered_at_once_not_waited_on_forever(tmp_path, member):
    """The fresh-eyes walk: `validate --spec FIFO`, a FIFO as cluster.json or as a run's run.json hung until
    killed: open() of a FIFO waits for a writer. Read as the empty file it is, each is answered in one line."""
    project = spec_at(tmp_path)
    words, named = member(project)
    done = run([*NODEWEAVE, *words], project)  # run() times out at 120 s: a hang fails here
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    if named is None:  # runs ls lists what it can and names the unreadable run, never waits
        assert done.returncode in (0, 2), done.stderr
        return
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and named in errors[0], done.stderr
