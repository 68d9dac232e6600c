"""The twelfth walk, part C (issue 43, /work/wt/walk12c-report.md), rows fixed by fix12c2: each row's class, one test
per class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- C6: every hint naming an exec line for words the user typed gives one that runs them: a command starting with an
# option is a shell's (`-c true`: `sh -c true`), each word quoted; exec itself refuses such a command, naming it -----

@pytest.mark.parametrize("argv, line", [
    (["shell", "--node", "1", "--", "-c", "true"], "`nodeweave exec --node 1 -- sh -c true`"),
    (["shell", "--", "-lc", "echo hi"], "`nodeweave exec --node 0 -- sh -lc 'echo hi'`"),
    (["shell", "--", "ls", "a b"], "`nodeweave exec --node 0 -- ls 'a b'`"),
    (["exec", "--dry-run", "--", "-c", "true"], "`nodeweave exec -- sh -c true`"),
    (["exec", "--node", "1", "--", "-c", "echo $X"], "`nodeweave exec --node 1 -- sh -c 'echo $X'`"),
    (["exec", "--", "--version"], "`nodeweave exec -- PROGRAM --version`"),
])
def test_exec_hints_run_what_was_typed(job_folder, capsys, argv, line):
    """C6: `shell -- -c true` was pointed to `nodeweave exec --node 1 -- -c true`, which fails `exec: -c: not found`
    on the node (exit 127); `exec -- -c true` itself ran to that failure. Both name the line that runs it, exit 2."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, err
    assert line in one_line(err), err


# -- C8, C17: every verb that takes no --node (NO_NODE: up, down, bench) says so given one, what it acts on and what
# does the thing for one node, never click's "no such option"; every other verb that reaches nodes has --node --------

@pytest.mark.parametrize("verb", ["up", "down", "bench"])
@pytest.mark.parametrize("form", [["--node", "1"], ["--node=1"]])
def test_verbs_without_node_say_why(job_folder, capsys, verb, form):
    """C8, C17: `down --node 1` and `up --hold --node 1` were "no such option: --node" beside README's "--node picks
    nodes on every verb"; each names what it acts on and what does it for one node, exit 2."""
    from nodeweave.cli import NO_NODE

    assert set(NO_NODE) == {"up", "down", "bench"}
    code, out, err = run_cli(capsys, verb, *form, "--dry-run")
    line = one_line(err)
    assert code == 2 and line == f"nodeweave: error: {verb} takes no --node: {NO_NODE[verb]}", err
    assert "no such option" not in line and "--node N" in line


def test_readme_names_the_verbs_without_node():
    """C8, C17: README's --node line names the verbs that take none."""
    from cli_run import REPO

    line = next(l for l in (REPO / "README.md").read_text().splitlines() if "nodeweave shell --node 1" in l)
    assert "but up, down and bench" in line, line


# -- C11: every line naming hosts ssh never reached offers the ssh command nodeweave itself ran, with the user's
# --ssh-option(s); the engine said is the one used, with how to pick the other --------------------------------------

@pytest.mark.skipif(not __import__("shutil").which("ssh"), reason="needs the OpenSSH client")
@pytest.mark.parametrize("argv", [
    ["up", "--hold"], ["status"], ["logs"], ["shell"], ["down", "--dry-run"],
    ["sync", ".", "/srv/x"],
], ids=lambda a: " ".join(a))
def test_unreached_hosts_hint_keeps_ssh_options(job_folder, capsys, argv):
    """C11: `up --target hosts ... --ssh-option Port=2` said "`ssh localhost true` shows ssh's own words", which asks
    port 22; every verb's line now offers `ssh -o Port=2 HOST true`."""
    code, out, err = run_cli(capsys, *argv, "-t", "hosts", "--host", "nosuchhost1.invalid", "--host",
                             "nosuchhost2.invalid", "--remote-dir", "/srv/x", "--ssh-option", "Port=2",
                             "--ssh-option", "User=me")
    assert "`ssh -o Port=2 -o User=me nosuchhost1.invalid true`" in out + err, (code, out, err)
    if argv[0] in ("up", "status", "logs"):
        assert "docker compose on each host unless --engine podman" in err, err


def test_unreached_hosts_line_quotes_options():
    """C11: the offered ssh line is pasteable: each option word quoted as the shell needs."""
    from nodeweave.failures import unreached_hosts_line

    line = unreached_hosts_line([("gpu01", "connection refused")], ("IdentityFile=~/.ssh/my key",))
    assert "`ssh -o 'IdentityFile=~/.ssh/my key' gpu01 true`" in line, line


# -- C9: a base in this machine's store (localhost/...) that the engine lacks is refused before the build, dry run
# too, whichever way it was given (--base, --build-arg BASE_IMAGE, the spec's image.base), as --network is -----------

def _stand_in_store(folder, monkeypatch, images):
    """A podman on PATH whose store holds ``images`` (`image inspect`, `images --format`), answering as detected."""
    from types import SimpleNamespace

    import nodeweave.build as build

    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "podman"
    tool.write_text("#!/bin/sh\n"
                    f'IMAGES="{" ".join(images)}"\n'
                    'case "$1 $2" in\n'
                    '  "image inspect") for n in $IMAGES; do [ "$n" = "$5" ] && echo "{}" && exit 0; done\n'
                    '    echo "Error: $5: image not known" >&2; exit 125;;\n'
                    '  "images --format") for n in $IMAGES; do echo "$n"; done; exit 0;;\n'
                    "esac\necho \"Error: unexpected $*\" >&2\nexit 125\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(build, "detect_engine", lambda name=None: SimpleNamespace(kind="podman", builder=build.BUILDX))


@pytest.mark.parametrize("given", [
    ["--base", "localhost/nodeweave-base:bookwrom"],
    ["--build-arg", "BASE_IMAGE=localhost/nodeweave-base:bookwrom"],
    ["--base", "localhost:5000/nodeweave-base:bookwrom"],
    "spec",
], ids=lambda g: g if isinstance(g, str) else g[0])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_local_base_the_store_lacks_is_refused_before_the_build(job_folder, capsys, monkeypatch, given, dry_run):
    """C9: `image build cpu --base localhost/nodeweave-base:bookwrom` (a typo) ended in three pull retries from
    https://localhost/ and exit 1, its dry run silent; it is refused (exit 3, the dry run noting it), naming the nearest local image."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(job_folder))[0] == 0
    _stand_in_store(job_folder, monkeypatch, ["localhost/nodeweave-base:bookworm", "docker.io/library/python:3.12"])
    if given == "spec":
        text = (job_folder / "nodeweave.yaml").read_text()
        assert "image: {variant: cpu}" in text, text
        (job_folder / "nodeweave.yaml").write_text(
            text.replace("image: {variant: cpu}", "image: {variant: cpu, base: localhost/nodeweave-base:bookwrom}"))
        given = []
    code, out, err = run_cli(capsys, "image", "build", "cpu", *given, *(["--dry-run"] if dry_run else []))
    line = out if dry_run else one_line(err)  # walk18a A10: up --image's rule, exit 3, its dry run notes it
    assert code == (0 if dry_run else 3) and "is not built here (podman's store lacks it" in line, (code, out, err)
    assert "would end with exit 3" in line if dry_run else True, line
    assert "localhost/nodeweave-base:bookworm," in line or "localhost/nodeweave-base:bookworm;" in line \
        or "5000" in line, line


def test_a_local_base_the_store_holds_is_built_on(job_folder, capsys, monkeypatch):
    """C9: the base that is there passes the check (the dry run prints its plan, exit 0)."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(job_folder))[0] == 0
    _stand_in_store(job_folder, monkeypatch, ["localhost/nodeweave-base:bookworm"])
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--base", "localhost/nodeweave-base:bookworm",
                             "--dry-run")
    assert code == 0 and "BASE_IMAGE=localhost/nodeweave-base:bookworm" in out, (out, err)


# -- C5: a DEST the target cannot make or write is said with why (the folder there, its owner and mode, the user the
# sync runs as) and what to give instead ----------------------------------------------------------------------------

def test_an_unwritable_dest_says_why_and_what_instead(tmp_path):
    """C5: `sync data /opt/data` said only "cannot create or write /opt/data there"; the agent now says /opt's owner
    and mode and the user it runs as, and the line names where that user may write."""
    import os

    from nodeweave.sync.node.agent import dest_why
    from nodeweave.sync.source.deliver import unwritable_dest

    why = dest_why(str(tmp_path / "missing" / "deeper"))
    assert why.startswith(f"{tmp_path} is a folder of ") and f"uid {os.stat(tmp_path).st_uid}" in why, why
    assert f"the sync runs as " in why and f"uid {os.getuid()}" in why, why
    line = unwritable_dest("/opt/data", "/opt is a folder of root (uid 0), mode 755, and the sync runs as uid 1000")
    assert line.startswith("cannot create or write /opt/data there: /opt is a folder of root (uid 0)"), line
    assert "under /tmp, in the workspace, or on a volume" in line, line
    assert "under /tmp" in unwritable_dest("/opt/data", None)  # a target without python3: no why, still the remedy


def test_the_agent_answer_carries_why(tmp_path):
    """C5: the manifest the agent answers holds dest_why where DEST cannot be made (a file stands in its way)."""
    from nodeweave.sync.node.agent import manifest

    (tmp_path / "file").write_text("x")
    answer = manifest(str(tmp_path / "file" / "dest"), {"sigs": {}, "dirs": []}, {})
    assert not answer["dest_ok"] and "file is a file, not a folder, of " in answer["dest_why"], answer


# -- C4: what a sync changed on a target is counted and named the same way by every method: a link is a change, what
# --delete removed is counted (a column) and named, and what SRC holds that no sync sends (a fifo) is said once ------

def test_specials_are_left_out_and_said(tmp_path):
    """C4: a fifo in SRC was left out without a word; the walk records it and the sync names it once."""
    import os

    from nodeweave.sync.display import as_document, specials_line
    from nodeweave.sync.filters import Filter

    (tmp_path / "a.txt").write_text("hi\n")
    os.symlink("/etc/passwd", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    fileset = Filter([]).walk(tmp_path)
    assert fileset.files == {"a.txt": "f", "link": "l"} and fileset.specials == [("fifo", "a fifo")]
    assert specials_line(fileset) == ("left out 1 file(s) that are not regular files: fifo (a fifo) (as rsync "
                                      "skips them)")


@pytest.mark.parametrize("method", ["stream", "tar", "rsync"])
def test_every_method_counts_links_and_deletions(method):
    """C4: a new link was "files 0", and a --delete that removed one was "0" with nothing named, whatever the
    method; the links and deletions come from the one difference every method works from, beside the method's
    own count of regular files sent."""
    from types import SimpleNamespace

    from nodeweave.sync.display import as_document, deleted_text, summary_table
    from nodeweave.sync.outcome import TargetResult
    from nodeweave.sync.source.deliver import counted
    from nodeweave.sync.transport.plan import Difference

    fileset = SimpleNamespace(files={"link": "l", "a.txt": "f"})
    results = []
    for i in range(2):
        result = TargetResult(SimpleNamespace(label=f"podman:n-{i}"), status="ok", method=method, files=1)
        counted(result, Difference(send=("a.txt", "link"), delete=("old.txt",), rmdirs=("gone",)), fileset)
        results.append(result)
    assert (results[0].files, results[0].links, results[0].deleted) == (1, 1, ["old.txt", "gone/"])
    assert deleted_text(results) == ["deleted on every target: old.txt, gone/"]
    table = summary_table(results, None, "t", delete=True)
    assert [c.header for c in table.columns][2:4] == ["files", "deleted"]
    assert list(table.columns[2].cells) == ["1 +1 link"] * 2 and list(table.columns[3].cells) == ["2"] * 2
    assert "deleted" not in [c.header for c in summary_table(results, None, "t").columns]
    shared = TargetResult(SimpleNamespace(label="podman:n-2"), status="ok", method="shared via podman:n-0")
    counted(shared, Difference(send=("link",), delete=("old.txt",)), fileset)
    assert (shared.links, shared.deleted) == (0, [])  # written through another target: it changed nothing itself


# -- C2: `logs --since` takes what docker and podman logs --since take, a duration or a time (RFC 3339), and kubectl's
# --since-time is pointed to it; a time becomes the span back to it, which every engine and kubectl read alike -----

@pytest.mark.parametrize("typed, back", [
    ("2026-11-30T21:00:00Z", 3600), ("2026-11-30T21:00:00+00:00", 3600), ("2026-11-30T22:00:00+01:00", 3600),
    ("2026-11-30T21:59:59.5Z", 0.5), ("5m", 300), ("300", 300),
])
def test_since_takes_a_time_as_the_engines_do(typed, back):
    """C2: `logs --container --since 2026-11-30T21:00:00Z` was refused "not accepted: a number of seconds ..."."""
    from datetime import datetime, timezone

    from nodeweave.quantities import since_seconds

    now = datetime(2026, 11, 30, 22, 0, 0, tzinfo=timezone.utc).timestamp()
    assert since_seconds(typed, now=now) == pytest.approx(back)


def test_since_time_reaches_the_engine_as_a_span_and_a_future_time_is_refused(job_folder, capsys):
    """C2: the window every engine and kubectl is given for a time is whole seconds back to it; a time still to
    come, or words, are refused naming both forms; kubectl's --since-time names --since."""
    from nodeweave.cluster.logs import log_window

    flag, span = log_window(None, "2000-01-01T00:00:00Z")
    assert flag == "--since" and span.endswith("s") and int(span[:-1]) > 26 * 365 * 86400
    for typed in ("2999-01-01T00:00:00Z", "yesterday"):
        code, out, err = run_cli(capsys, "logs", "--container", "--since", typed)
        assert code == 2 and "or a time, 2026-11-30T21:00:00Z (RFC 3339" in one_line(err), err
    code, out, err = run_cli(capsys, "logs", "--since-time", "2026-11-30T21:00:00Z")
    assert code == 2 and "--since 2026-11-30T21:00:00Z" in one_line(err), err


# -- C10: a sweep keeps what it was asked to rank by (--metric, --lower-is-better) from its start, and every reader
# of its folder (`runs show`, `runs compare`) ranks by them while it runs (detached) and after -----------------------

@pytest.mark.parametrize("reader", [["runs", "show"], ["runs", "compare"]])
def test_a_sweep_ranks_by_its_own_metric_from_its_start(tmp_path, monkeypatch, capsys, reader):
    """C10: `runs show` of a detached sweep started with --metric said "no --metric, so no mean to compare" while
    its first point ran (sweep.json was written only as a point ended), and --lower-is-better was never kept."""
    import json
    from types import SimpleNamespace

    from nodeweave.cluster.runfolder import RunFolder
    from nodeweave.cluster.runplan import RunSession, SweepRequest
    from test_cli_runs import SPEC, run_json

    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    session = RunSession([], tmp_path / "runs", SimpleNamespace(job="nwruns", spec_text=SPEC, made_from=None), out=None)
    session.open_sweep(SimpleNamespace(sweep=SweepRequest("step_ms ([0-9.]+)", lower_is_better=True)))
    sweep = session.sweep_folder
    kept = json.loads((sweep.path / "sweep.json").read_text())
    assert kept["metric"] == "step_ms ([0-9.]+)" and kept["lower_is_better"] is True, kept
    for number, value in enumerate(("30", "20"), start=1):  # two points ended, as a running sweep's may have
        point = RunFolder.create(sweep.path, "nwruns", SPEC, suffix=f"-{number:02d}-X={number}")
        run_json(point, {"X": str(number)}, 0, 10.0)
        for i in range(2):
            point.log_path(f"node-{i}").write_text(f"step_ms {value}\n")
    code, out, err = run_cli(capsys, *reader, sweep.run_id, "-o", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert "no --metric" not in err and shown["metric"] == "step_ms ([0-9.]+)", (out, err)
    assert shown["best"] and shown["best"].endswith("-02-X=2"), shown  # the lower step time wins
