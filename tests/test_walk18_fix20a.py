"""fix20a (rows left by note17/note18 on the cluster command line): one test per class."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import cli_run

SRC = Path(__file__).resolve().parent.parent / "src" / "nodeweave"


def nodeweave(folder, *args: str, env=None) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=120, stdin=subprocess.DEVNULL)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_every_refused_number_is_said_as_typed(tmp_path):
    """note18 (fix19h): ``check --seconds 1500000 --timeout 1000000`` was refused as ``--seconds 1.5e+06 ... less
    than --timeout 1e+06`` (``:g``), where every click range says plain numbers: every refusal goes through
    ``quantities.plain_number``, and no refusal in src formats its number with ``:g``."""
    for argv, said in ((["check", "--seconds", "1500000", "--timeout", "1000000"],
                        "--seconds 1500000 is not accepted: less than --timeout 1000000"),
                       (["bench", "--timeout", "-2000000", "--dry-run"], "--timeout -2000000 is not accepted")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and said in line and "e+0" not in line, (argv, done.stderr)
    refusals = [f"{path.relative_to(SRC)}: {text.strip()}" for path in SRC.rglob("*.py")
                for text in path.read_text().splitlines() if "not accepted" in text and re.search(r":g\}", text)]
    assert not refusals, refusals


def test_a_title_in_a_pipe_starts_at_column_0(tmp_path):
    """note18 (fix19h): in a pipe a table's rows end where their text does, but a centred title (``image
    variants``, ``doctor``'s, ``bench``'s) kept the spaces that centre it; every Table's title and caption start at
    column 0 off a terminal, and stay centred in one."""
    import io

    from rich.console import Console

    from nodeweave.tables import Table

    table = Table(title="a centred title", caption="a centred caption")
    table.add_column("a column that is wider than its title")
    table.add_row("x")
    for terminal in (False, True):
        out = io.StringIO()
        Console(file=out, force_terminal=terminal, width=100, color_system=None).print(table)
        lines = out.getvalue().splitlines()
        assert (lines[0].startswith("a centred title") and lines[-1].startswith("a centred caption")) is not terminal, \
            lines
    done = nodeweave(tmp_path, "image", "variants")
    assert done.returncode == 0 and done.stdout.startswith("nodeweave image variants"), done.stdout[:200]


def test_down_takes_back_the_token_up_wrote_and_nothing_else(tmp_path):
    """note17/note18: the local target's ``.nodeweave/<job>/job-token`` stayed after ``down``, a secret no node
    reads once they are gone. ``down``'s plan ends with a ``remove`` phase naming it (the dry run says it would),
    after the step that takes the nodes down; with nothing up it is taken back still. What ``up`` remembers
    (``cluster.json``), the compose file ``down`` reads, the run folders and a token file the spec's env names (the
    user's) stay."""
    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.cluster.options import save_state
    from nodeweave.spec import parse_spec

    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text("name: tok\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: train.py}\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    state = tmp_path / ".nodeweave" / "tok"
    state.mkdir(parents=True)
    (state / "job-token").write_text("x\n")
    (state / "compose.yaml").write_text("services: {}\n")
    save_state(spec_path, "tok", ClusterOptions(engine="podman"))
    (tmp_path / "runs").mkdir()
    backend = open_backend(parse_spec(spec_path.read_text(), str(spec_path)), spec_path,
                           ClusterOptions(engine="podman").checked())
    phases = backend.plan_down(False).phases
    assert phases[-1].kind == "remove" and [f.path for f in phases[-1].files] == [".nodeweave/tok/job-token"], phases
    assert phases[-2].kind == "commands", phases  # after the nodes are down, never before
    planned = nodeweave(tmp_path, "down", "--engine", "podman", "--dry-run")
    assert planned.returncode == 0 and "would remove .nodeweave/tok/job-token" in planned.stdout, planned.stdout
    assert (state / "job-token").exists()
    done = nodeweave(tmp_path, "down", "--engine", "podman")  # nothing of job tok is up: only the token goes
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in state.iterdir()) == ["cluster.json", "compose.yaml"] and (tmp_path / "runs").is_dir()
    own = tmp_path / "mine" / "token"
    own.parent.mkdir()
    own.write_text("x\n")
    spec_path.write_text(spec_path.read_text() + "env: {NODEWEAVE_JOB_TOKEN_FILE: /secrets/token}\n"
                         f"volumes: [{{name: secrets, host_path: {own.parent}, path: /secrets, read_only: true}}]\n")
    (state / "job-token").write_text("x\n")
    backend = open_backend(parse_spec(spec_path.read_text(), str(spec_path)), spec_path,
                           ClusterOptions(engine="podman").checked())
    assert all(p.kind != "remove" for p in backend.plan_down(False).phases)  # the spec names its own token file
    hosts = open_backend(parse_spec(spec_path.read_text(), str(spec_path)), spec_path,
                         ClusterOptions(target="hosts", hosts=("h1", "h2"), engine="docker", remote_dir="/srv/j").checked())
    last = [step.argv[-1] for step in hosts.plan_down(False).phases[-1].steps]
    assert all(text.endswith("rm -f /srv/j/.nodeweave/tok/job-token") for text in last) and len(last) == 2, last


COMPOSE_FAILS = """#!/bin/sh
echo "podman-compose version: 1.0.6" >&2
echo "['podman', '--version', '']" >&2
echo "podman run --name=eng-1 -d --label io.podman.compose.project=eng localhost/eng:cpu" >&2
echo "Error: statfs /nope/data: no such file or directory" >&2
echo "exit code: 125" >&2
echo "podman start eng-1" >&2
echo 'Error: no container with name or ID "eng-1" found: no such container' >&2
echo "exit code: 125" >&2
exit 1
"""


def test_an_engine_steps_failure_is_nodeweaves_one_line(tmp_path):
    """note18 (fix19f): a start that failed after the pull quoted podman-compose's last lines (``podman start eng-1 |
    Error: no container ...``, a consequence: the cause was an earlier line) with exit 1. Every compose step of
    ``up`` and ``down`` (local, and each host's) says the node, what failed, the engine's own reason and what to
    do, exit 3."""
    from dataclasses import replace

    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.errors import NodeweaveError
    from nodeweave.spec import parse_spec
    from nodeweave.steps import execute_all

    fails = tmp_path / "compose-fails"
    fails.write_text(COMPOSE_FAILS)
    fails.chmod(0o755)
    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text("name: eng\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: train.py}\n")
    spec = parse_spec(spec_path.read_text(), str(spec_path))
    local = open_backend(spec, spec_path, ClusterOptions(engine="podman").checked())
    hosts = open_backend(spec, spec_path, ClusterOptions(target="hosts", hosts=("h1", "h2"), engine="podman",
                                                         remote_dir="/srv/e").checked())
    engine_steps = [s for b in (local, hosts) for plan in (b.plan_up("hold", "localhost/eng:cpu", 0, wait=False),
                                                           b.plan_down(False))
                    for phase in plan.phases for s in getattr(phase, "steps", ())
                    if "start" in s.what or "stop and remove" in s.what]
    assert len(engine_steps) == 6, [s.what for s in engine_steps]
    for step in engine_steps:
        try:
            execute_all([replace(step, argv=(str(fails),), env=(), stdin=None)])
        except NodeweaveError as err:
            said, code = str(err), err.exit_code
        else:
            raise AssertionError(f"{step.what}: no failure")
        assert code == 3 and "statfs /nope/data: no such file or directory" in said and "podman start" not in said, said
        # the node: each host's own, or the one the local engine's lines name (eng-1)
        assert re.match(r"node-[01]: ", said) and ("node-1" in said or " on h" in said), said
        assert "run `nodeweave " in said and "\n" not in said, said


def test_a_cut_tar_stream_leaves_no_part_on_the_target(tmp_path):
    """note18 (fix19g): without python3 on a target, ``tar -x`` wrote each file at its own name, so a stream cut
    mid-file (Ctrl-C, SIGTERM, a lost channel) left it truncated there, the old one gone. The stream goes into a
    stage of nodeweave's own inside DEST and only a whole stream's files are moved into place; the stage goes on
    every exit. (rsync's receiver removes its own temp file when its channel ends: nothing left there.)"""
    import io
    import tarfile

    from nodeweave.remote import make_target
    from nodeweave.sync.transport.plain import tar_extract_argv

    dest = tmp_path / "dest"
    (dest / "sub").mkdir(parents=True)
    (dest / "big").write_bytes(b"old" * 1000)
    argv = tar_extract_argv(make_target("docker", "c1"), str(dest))[4:]  # what runs on the target, run here
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w") as tar:
        for name, data in (("big", b"new" * 400_000), ("sub/x", b"x\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    whole = stream.getvalue()
    cut = subprocess.run(argv, input=whole[:600_000], capture_output=True)
    assert cut.returncode != 0 and (dest / "big").read_bytes() == b"old" * 1000, cut.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["big", "sub"], list(dest.iterdir())  # no stage left
    done = subprocess.run(argv, input=whole, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert (dest / "big").read_bytes() == b"new" * 400_000 and (dest / "sub" / "x").read_text() == "x\n"
    assert (dest / "big").stat().st_mtime == 1_700_000_000 and sorted(p.name for p in dest.iterdir()) == ["big", "sub"]
