"""The seventeenth walk's rows fixed by fix19g, one test per class: every file and folder nodeweave writes,
reads or judges is judged by what it is, one rule each.

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def test_the_default_wheelhouse_missing_is_said_as_missing(capsys, team):
    """walk17 A1: with no wheelhouse/ in the project, `--offline` said "wheelhouse is empty" (the explicit
    --wheelhouse DIR said "does not exist"); an empty one is still said as empty."""
    assert run_cli(capsys, "render", "all")[0] == 0
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--offline", "--dry-run")
    said = one_line(err)
    assert code == EXIT_USAGE and f"{team / 'wheelhouse'} does not exist" in said and "is empty" not in said, err
    (team / "wheelhouse").mkdir()
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--offline", "--dry-run")
    assert code == EXIT_USAGE and f"{team / 'wheelhouse'} is empty" in one_line(err), err


def test_every_rendered_dockerfile_arg_has_a_default(capsys, team):
    """walk17 A19: `ARG PIP_NO_INDEX` had no default and only --offline passes it: podman warned on every online
    build to set it. Every ARG of every variant's Dockerfile has a default, or is the stage's re-declaration of
    one given a default before the first FROM."""
    import re

    assert run_cli(capsys, "render", "images")[0] == 0
    dockerfiles = sorted((team / "images").glob("*/Dockerfile"))
    assert len(dockerfiles) >= 5
    for dockerfile in dockerfiles:
        heading, bare = set(), []
        seen_from = False
        for line in dockerfile.read_text().splitlines():
            seen_from = seen_from or line.startswith("FROM ")
            match = re.match(r"ARG ([A-Za-z_0-9]+)(=.*)?$", line)
            if match and match.group(2) and not seen_from:
                heading.add(match.group(1))
            elif match and not match.group(2):
                bare.append(match.group(1))
        assert [name for name in bare if name not in heading] == [], dockerfile


@pytest.mark.parametrize("where", [".nodeweave/team/plan.json", "runs/20261201T154347Z-team/plan.json"],
                         ids=["state-folder", "run-folder"])
def test_the_plan_record_follows_the_own_folder_rule(capsys, team, monkeypatch, where):
    """walk17 A3: NODEWEAVE_PLAN_RECORD wrote plan.json into up's state folder and into a finished run folder,
    where `bench --json-out`, `init --out`, `hosts probe --write-hostfile` are refused (docs/cluster.md: the plan
    record "follows the rule of every file nodeweave writes where you name it")."""
    folder = (team / where).parent
    folder.mkdir(parents=True)
    if "runs/" in where:
        (folder / "run.json").write_text("{}\n")
    monkeypatch.setenv("NODEWEAVE_PLAN_RECORD", where)
    code, _, err = run_cli(capsys, "exec", "--dry-run", "--", "true")
    said = one_line(err)
    assert code == EXIT_USAGE and f"NODEWEAVE_PLAN_RECORD={where}" in said and "it is inside" in said, err
    assert not (team / where).exists()


def test_render_out_into_a_sibling_project_is_refused_by_its_spec(capsys, team):
    """walk17 A12: `render compose --out ../c`, c a project of its own that never rendered, wrote this job's
    compose files there and recorded this job, and c's own `render compose` was then refused. Judged by c's spec,
    as a sibling that had rendered is: nothing written there, and c renders its own."""
    from team_folder import SPEC

    sibling = team / "c"
    sibling.mkdir()
    (sibling / "nodeweave.yaml").write_text(SPEC.replace("name: team", "name: c"))
    (sibling / "train.py").write_text("print(1)\n")
    code, _, err = run_cli(capsys, "render", "compose", "--out", str(sibling))
    assert code == EXIT_USAGE and f"{sibling} is another project's folder" in err, err
    assert sorted(p.name for p in sibling.iterdir()) == ["nodeweave.yaml", "train.py"]
    code, _, err = run_cli(capsys, "--spec", str(sibling / "nodeweave.yaml"), "render", "compose")
    assert code == 0, err


def test_bench_without_matplotlib_says_it_drew_no_chart(capsys, team, monkeypatch):
    """walk17 A27: without matplotlib, bench printed the table and `wrote X.json`, no chart and no word about one,
    where README's dependency table said the charts are drawn in the terminal."""
    from nodeweave.bench import report, runner

    rows = [{"op": "all_reduce", "bytes": 1 << k, "busbw_gbps": float(k), "algbw_gbps": float(k), "time_us": 1.0,
             "count": 256, "wrong": 0} for k in (10, 11)]
    monkeypatch.setattr(report, "matplotlib_available", lambda: False)
    monkeypatch.setattr(runner, "run_matrix", lambda config, points, **kw: [
        runner.RunResult("baseline", {}, 0, {"correct": True, "results": rows}, "", ["true"])])
    out_file = team / "b.json"
    code, out, err = run_cli(capsys, "bench", "--sizes", "1K:2K", "--ops", "all_reduce", "--json-out", str(out_file))
    assert code == 0 and out_file.is_file(), out + err
    assert "no chart drawn: matplotlib is not installed" in " ".join(err.split()), err


def _fake_engine(folder, mounts: str):
    """A `podman` on PATH whose one container runs and bind-mounts ``mounts`` ("HOST\\tPATH" lines)."""
    bin_dir = folder / "fakebin"
    bin_dir.mkdir()
    tool = bin_dir / "podman"
    tool.write_text("#!/bin/sh\ncase \"$*\" in\n*State.Running*) echo true ;;\n"
                    f"*Mounts*) printf '{mounts}' ;;\n*) exit 1 ;;\nesac\n")
    tool.chmod(0o755)
    return bin_dir


def test_sync_into_a_named_containers_mount_of_src_is_nothing_to_send(capsys, team, monkeypatch):
    """walk17 A5: `sync . /workspace --node podman:NAME --dry-run`, NAME mounting this folder at /workspace, planned
    a push, then said the real sync would fail on /workspace, "give a DEST ... in the workspace"; plain sync says
    nothing to send. A container named directly is judged by its own mounts, as the cluster's nodes are."""
    import os

    bin_dir = _fake_engine(team, f"{team}\\t/workspace\\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:team-0", "--dry-run")
    assert code == 0 and "nothing to send" in out + err and "SRC itself" in " ".join((out + err).split()), out + err
    code, out, err = run_cli(capsys, "sync", ".", "/workspace/sub", "--node", "podman:team-0", "--dry-run")
    assert code == EXIT_USAGE and "over your files there" in " ".join(err.split()), out + err


def test_an_interrupted_sync_leaves_no_half_received_file(tmp_path):
    """walk17 A29: each Ctrl-C'd sync left its `.nwsync-PID-N.tmp` in DEST on the node (278 MiB after two), the
    completed sync and `sync --check` said ok, and only `sync --delete` listed them. The agent removes its own
    when the payload is cut; the next sync of DEST removes those of an agent killed outright; --check and a dry
    run, which write nothing, name them."""
    import io
    import subprocess
    import sys
    import tarfile

    from nodeweave.sync.node import agent, untar

    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("sub/big.bin")
        info.size = 3 << 20
        tar.addfile(info, io.BytesIO(b"x" * info.size))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(EOFError):
        untar.receive(str(dest), io.BytesIO(payload.getvalue()[: 2 << 20]), {})
    assert [p.name for p in dest.rglob("*") if p.is_file()] == []

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()  # a process that has ended: its agent was killed outright
    left = dest / "sub" / f".nwsync-{gone}-0.tmp"
    left.write_bytes(b"half")
    request = {"sigs": {"sub/big.bin": "0" * 64}, "dirs": ["sub"], "dry": True, "then": "exit"}
    answer = agent.manifest(str(dest), dict(request), {})
    assert answer.get("leftovers") == [f"sub/{left.name}"] and left.exists(), answer
    answer = agent.manifest(str(dest), dict(request, dry=False, then="plan"), {})
    assert not left.exists() and "leftovers" not in answer, answer


class _PodmanLog:
    """A backend whose node logs as podman 4.3 does: the whole log whole, and its own --tail N counting the partial
    entries of lines the node wrote in pieces (here: an empty line)."""

    def logs(self, node, follow, window):
        text = "\\n" if "--tail" in window else "one\\ntwo\\nthree\\n"
        return ["printf", text]


@pytest.mark.parametrize("follow", [False, True], ids=["plain", "-f"])
def test_logs_tail_prints_the_same_whole_lines_with_and_without_follow(follow):
    """walk17 A21: `logs --container -f --tail 1` printed `[node-0] ` (empty; podman's --tail counts partial
    entries), where without -f nodeweave applies --tail N to the whole log itself: -f does the same."""
    import io

    from rich.console import Console

    from nodeweave.cluster.base import Node
    from nodeweave.cluster.logs import container_logs, log_window
    from nodeweave.remote import parse_target

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False)
    node = Node(0, parse_target("podman:team-0"))
    assert container_logs(_PodmanLog(), [node], follow, console, window=log_window(2, None)) == 0
    assert buffer.getvalue().splitlines() == ["[node-0] two", "[node-0] three"], buffer.getvalue()
