"""walk10 (issue 43), rows C1 to C10 of a first-day user operating a real local cluster: one test per class."""

from __future__ import annotations

import json
import os
import sys

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import make_job_folder

# A podman whose containers run and whose every node answers `--node status` with the run RUNS says is in progress
# (none: idle); each call's argv is logged.
FAKE_PODMAN = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[:1] == ["inspect"]:
    fmt = args[args.index("--format") + 1]
    for name in (a for a in args[1:] if not a.startswith("-") and a != fmt):
        print(json.dumps(name), json.dumps("running"), 0 if "Status" in fmt else "{{}}")
elif args[:1] == ["exec"] and "status" in args and "--node" in args:
    run = os.environ.get("FAKE_RUN")
    print(json.dumps({{"hold": True, "mode": "hold", "plan": {{"hash": "abc", "node_rank": 0}},
                      "runs": [{{"run_id": run, "started": 1e9}}] if run else [], "now": 1e9 + 5}}))
elif args[:1] == ["exec"] and "sleep" in args:
    import time
    time.sleep(float(args[-1]))
elif args[:1] == ["exec"]:
    print("ran")
"""


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A job folder whose two nodes are up (a fake podman), holding; returns the log of podman's calls."""
    make_job_folder(tmp_path, monkeypatch)
    folder = tmp_path / "bin"
    folder.mkdir()
    log = folder / "calls.jsonl"
    (folder / "podman").write_text(FAKE_PODMAN.format(python=sys.executable, log=str(log)))
    (folder / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")

    def never(*argv):  # a shell that went on would replace the test's own process
        raise AssertionError(f"this process would have become {argv}")

    monkeypatch.setattr(os, "execvp", never)
    return log


def _calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --- C1, C8: a verb that starts a run, or recreates the nodes, while a run is in progress -------------------------


@pytest.mark.parametrize("verb", ["check", "run", "up"])  # onbackend.BUSY_CONSEQUENCE's verbs, as checked
def test_a_verb_that_would_start_a_run_or_recreate_the_nodes_is_refused_while_a_run_is_in_progress(
        capsys, cluster, monkeypatch, tmp_path, verb):
    """C1 C8: `run` and `check` (every node would refuse them, after a failed run folder was made) and `up` (it recreates the
    nodes, killing the run) are refused up front, exit 3, naming the run and `nodeweave stop`; nothing is started,
    no run folder is made, nothing recorded."""
    from nodeweave.cluster import onbackend

    assert sorted(getattr(onbackend, "BUSY_CONSEQUENCE", {})) == ["check", "down", "run", "up"]  # down: walk14a A18
    monkeypatch.setenv("FAKE_RUN", "20261130T000000Z-proj")
    argv = {"run": ["run"], "up": ["up", "--hold"], "check": ["check"]}[verb]
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 3, out + err
    assert "run 20261130T000000Z-proj is in progress on node-0, node-1" in line and "`nodeweave stop`" in line, line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert not (tmp_path / ".nodeweave" / "proj" / "cluster.json").exists()
    launched = [c for c in _calls(cluster) if c[:1] == ["exec"] and "status" not in c]
    assert not launched and not any("compose" in " ".join(c) for c in _calls(cluster)), launched


def test_up_dry_run_says_the_real_up_would_be_refused_while_a_run_is_in_progress(capsys, cluster, monkeypatch):
    """C8: the dry run of `up` says what the real one would do."""
    monkeypatch.setenv("FAKE_RUN", "20261130T000000Z-proj")
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    assert code == 3, out + err  # certain from what the dry run read: the real exit (walk17a A8-A10)
    assert "the real up would end with exit 3: run 20261130T000000Z-proj is in progress" in out, out


def _run_folder(tmp_path, run_id, line):
    folder = tmp_path / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run_id": run_id, "job": "proj"}))
    (folder / "node-0.log").write_text(line + "\n")
    return folder


def test_logs_reads_the_run_in_progress_not_a_newer_folder(capsys, cluster, monkeypatch, tmp_path):
    """C2: while the nodes hold and a run is in progress, plain `logs` (and -f) reads that run (the one `status`
    shows), not the newest folder (a failed or refused run started later)."""
    going = _run_folder(tmp_path, "20261130T000000Z-proj", "the run in progress")
    newer = _run_folder(tmp_path, "20261130T000100Z-proj", "a newer failed run")
    os.utime(going, (1e9, 1e9))
    monkeypatch.setenv("FAKE_RUN", going.name)
    code, out, err = run_cli(capsys, "logs")
    assert code == 0, out + err
    assert f"# {going}" in out and "the run in progress" in out and str(newer) not in out, out
    monkeypatch.delenv("FAKE_RUN")  # none in progress: the newest, as before
    code, out, err = run_cli(capsys, "logs")
    assert code == 0 and f"# {newer}" in out, out + err


@pytest.mark.parametrize("where", [[], ["--run", "last"]])
def test_logs_refusing_an_option_prints_no_header(capsys, cluster, tmp_path, where):
    """C3: `logs --node 2` on a two-node job is refused (exit 2) before the run's `# folder` header reaches stdout,
    read through the cluster or with --run."""
    _run_folder(tmp_path, "20261130T000000Z-proj", "a line")
    code, out, err = run_cli(capsys, "logs", *where, "--node", "2")
    assert code == 2 and out == "", (out, err)
    assert "--node 2" in one_line(err), err


def test_exec_past_its_timeout_names_every_node_alike_and_what_may_still_run(capsys, cluster):
    """C4: every node whose exec client the timeout ended is "timed out" (exit_code null), never one "exit -9"; where
    the command could not be ended there (this fake podman answers no stop: left11b ends it on nodes that do), the
    line says it may go on there, naming the nodes and the pkill that ends it (exit 124 since left11b)."""
    code, out, err = run_cli(capsys, "exec", "--timeout", "1", "-o", "json", "--", "sleep", "30")
    line = one_line(err)
    assert code == 124, out + err
    assert [n["exit_code"] for n in json.loads(out)["nodes"]] == [None, None], out
    assert "2 of 2 node(s) timed out: could not end it on node-0" in line, line
    assert "may still be running on node-0, node-1" in line and "pkill -f 'sleep 30'" in line, line


def test_exec_interrupted_names_the_nodes_it_may_have_left_running(cluster):
    """C5: Ctrl-C (SIGINT) ends exec with 130 and one line naming the nodes the command may still run on, and the
    command that ends it (it printed nothing before)."""
    import signal
    import subprocess
    import time

    from cli_run import NODEWEAVE, popen

    proc = popen([*NODEWEAVE, "exec", "--", "sleep", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True, start_new_session=True)
    deadline = time.monotonic() + 120  # both nodes' `podman exec ... sleep 30` started
    while sum(call[:1] == ["exec"] and "sleep" in call for call in _calls(cluster)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, (_calls(cluster), proc.poll())
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted: could not end it on node-0" in err, err  # this fake podman answers no stop (left11b)
    assert "the command may still be running on node-0, node-1" in err, err
    assert "`nodeweave exec --node 0,1 -- pkill -f 'sleep 30'`" in err, err


@pytest.mark.parametrize("argv", [["shell"], ["shell", "--node", "1"]])
def test_shell_without_a_terminal_is_refused_naming_exec(capsys, cluster, argv):
    """C6: a shell whose input is not a terminal (a script, CI, </dev/null) would wait forever; refused, exit 2,
    naming `nodeweave exec --node N -- CMD`, and no interactive exec started."""
    code, out, err = run_cli(capsys, *argv)  # pytest's stdin is no terminal
    line = one_line(err)
    assert code == 2 and "not a terminal" in line and "nodeweave exec --node N -- CMD" in line, out + err
    assert not [c for c in _calls(cluster) if c[:1] == ["exec"] and "-t" in c], _calls(cluster)


@pytest.mark.parametrize("given", [["-o", "json"], ["--json"], ["-o", "yaml"]])
def test_shell_refuses_a_format_as_every_verb_without_rows(capsys, cluster, given):
    """C6: `shell -o json` is refused by the rule of the verbs that print no rows (NO_FORMAT: `logs -o json`), naming
    where the data is; its dry run keeps -o for the plan."""
    from nodeweave.cli import NO_FORMAT

    code, out, err = run_cli(capsys, "shell", *given)
    assert code == 2 and f"shell takes no {given[0]}: {NO_FORMAT.get('shell', '?')}" in one_line(err), err
    code, out, err = run_cli(capsys, "shell", "--dry-run", *given)  # input no terminal here: the real exit 2, after
    assert code == 2 and out.lstrip()[:1] in "{v", out  # the plan in the format asked (walk17a A9)


@pytest.mark.parametrize("case", ["moved-here", "gone", "there"])
def test_another_folders_containers_name_a_remedy_that_works(tmp_path, case):
    """C9: containers an `up` in a folder that no longer exists started (this very folder, moved; or one removed):
    never "give this job another name" (it would start a second cluster beside them, unseen), but `mv` back or
    the removal by hand; a folder that is there keeps "run the verb there"."""
    from nodeweave.cluster.identity import FoundMark, JobMark, foreign_owner
    from nodeweave.errors import EnvironmentProblem

    old = tmp_path / "old"
    here = tmp_path / "here"
    here.mkdir()
    if case == "there":
        old.mkdir()
    theirs = JobMark.of(old, "team")
    mine = JobMark.of(here, "team")
    if case == "moved-here":
        record = here / ".nodeweave" / "team" / "cluster.json"
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"made": {"owner": theirs.owner, "folder": str(old)}}))
    found = {f"team-{i}": FoundMark(theirs.owner, str(old), "team") for i in range(2)}
    with pytest.raises(EnvironmentProblem) as caught:
        foreign_owner(mine, found, "container", "`podman-compose -f compose/local.yaml down` in the folder that "
                                                "started it, or `podman rm -f {names}`")
    line = str(caught.value)
    if case == "there":
        assert f"run the verb in {old}" in line and "another `name:`" in line, line
        return
    assert "another `name:`" not in line and "`podman rm -f team-0 team-1`" in line and "`mv`" in line, line
    assert ("this folder is that one, moved or renamed" in line) == (case == "moved-here"), line


@pytest.mark.parametrize("typed,where,given", [("hi.py", "sub/a", "sub/a/hi.py"), ("../../train.py", "sub/a", "train.py"),
                                               ("./hi.py", "sub/a", "sub/a/hi.py"), ("a/hi.py", "sub", "sub/a/hi.py"),
                                               ("ABS", "sub/a", "train.py")])
def test_a_script_path_typed_in_a_subfolder_is_read_from_there(capsys, tmp_path, monkeypatch, typed, where, given):
    """C10: a script path typed after `--` is read as the shell reads it, from the current folder (a subfolder of
    the workspace, `..` in it, an absolute path of this machine), and given to the nodes from the workspace's root,
    said in a note; it was read from the root (the nodes failed on a file that is here) or refused as leaving the
    workspace."""
    make_job_folder(tmp_path, monkeypatch)
    (tmp_path / "sub" / "a").mkdir(parents=True)
    (tmp_path / "sub" / "a" / "hi.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path / where)
    typed = str(tmp_path / "train.py") if typed == "ABS" else typed
    code, out, err = run_cli(capsys, "run", "--dry-run", "-o", "json", "--", typed)
    assert code == 0, out + err
    plan = json.loads(out)
    assert any(f"{typed} runs as {given}: read from where you typed it" in n for n in plan["notes"]), plan["notes"]
    phases = json.dumps(plan["phases"])
    assert f'"{given}"' in phases and f'"{typed}"' not in phases, phases


@pytest.mark.parametrize("argv", [["run", "--dry-run"], ["run"], ["check", "--dry-run"], ["up", "--dry-run"]])
def test_a_full_folder_nodeweave_writes_is_refused_up_front_naming_it(capsys, cluster, monkeypatch, tmp_path, argv):
    """C7: a full file system under the folder a verb writes (runs/ for run and check, .nodeweave/<job>/ for up) is
    refused before anything starts, exit 2, naming the folder and "no space left on device" (failures.unwritable,
    the one test of every write, as a read-only one was), with no run folder left behind."""
    import collections

    from nodeweave import failures

    (tmp_path / "runs").mkdir()
    real = os.statvfs
    Seen = collections.namedtuple("Seen", "f_bavail f_frsize f_blocks f_flag")

    def full(path):
        seen = real(path)
        return Seen(4, 1024, 16, seen.f_flag) if str(path).startswith(str(tmp_path)) else seen

    monkeypatch.setattr(failures.os, "statvfs", full)
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and "is on a full file system (no space left on device: 4 KiB free)" in line, out + err
    assert str(tmp_path) in line and "stdout" not in line, line
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_run_folder_write_that_fails_names_the_file_and_leaves_no_half_record(tmp_path, monkeypatch):
    """C7: a write into a run folder that fails part-way (the disk filled during the run) names the file, exit 3,
    never "stdout"; an earlier record stays whole, and a folder that failed at its making is removed."""
    import errno
    from pathlib import Path

    from nodeweave.cluster.runfolder import RunFolder
    from nodeweave.errors import EnvironmentProblem

    folder = RunFolder.create(tmp_path, "proj", "name: proj\n")
    folder.write_json("run.json", {"state": "started"})
    real = Path.write_text

    def fails(self, text, *a, **k):
        real(self, text[:3], *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", fails)
    with pytest.raises(EnvironmentProblem) as caught:
        folder.write_json("run.json", {"state": "ended"})
    assert caught.value.exit_code == 3 and str(folder.path / "run.json") in str(caught.value)
    assert json.loads((folder.path / "run.json").read_text(encoding="utf-8")) == {"state": "started"}
    assert sorted(p.name for p in folder.path.iterdir()) == ["run.json", "spec.yaml"]
    with pytest.raises(EnvironmentProblem):
        RunFolder.create(tmp_path, "proj", "name: proj\n", suffix="-b")
    assert [p.name for p in tmp_path.iterdir()] == [folder.path.name]


def test_a_full_disk_met_while_stdout_is_a_pipe_is_not_said_as_stdout(capsys, monkeypatch):
    """C7: an ENOSPC with no file named that reached main while stdout is a pipe or a terminal (which fill no disk)
    says a file could not be written, not "cannot write the output to stdout"."""
    import errno

    from nodeweave.entrypoint.errors import ended_by

    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        code = ended_by(OSError(errno.ENOSPC, "No space left on device"), "nodeweave", 1)
        monkeypatch.undo()
    os.close(read)
    err = capsys.readouterr().err
    assert code == 1 and "cannot write a file: No space left on device" in err and "stdout" not in err, err
