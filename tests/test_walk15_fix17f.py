"""The fifteenth walk, the command line's own parsing and hints (/work/wt/walk15a-report.md rows A4, A8, A9, A14,
A29, A30, A34, A35; /work/wt/walk15b-report.md row B14): one test per class, each failing on the code before its
fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import http.server
import os
import threading

import pytest

from cli_run import in_process as run_cli, leaves, nodeweave, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_job_folder

LEAVES = leaves()


@pytest.fixture
def job(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A8: an empty option's refusal offers "leave it off for its default" only where the option has one -------------

def _has_default(param) -> bool:
    """As the option's declaration and help say it (the product's own words, read independently here)."""
    return param.default not in (None, (), []) or "default" in (param.help or "").lower()


# Options read as whole numbers, whose own reader refuses '' ("not accepted: a whole number") before the empty rule.
NUMBERS = {"--rank", "--tail", "--nodes"}
NO_DEFAULT = [(words, param) for words, command in LEAVES for param in command.params
              if param.param_type_name == "option" and not param.is_flag and not param.hidden
              and not getattr(param, "count", False) and not _has_default(param) and not NUMBERS & set(param.opts)]


def test_the_walk_finds_options_without_a_default():
    named = {(" ".join(words), name) for words, param in NO_DEFAULT for name in param.opts}
    assert ("hosts probe", "--node") in named and ("run", "--metric") in named and ("run", "--env") in named


@pytest.mark.parametrize("words,param", NO_DEFAULT, ids=[f"{' '.join(w)}-{p.opts[0]}" for w, p in NO_DEFAULT])
def test_an_empty_option_without_a_default_says_what_it_takes(capsys, job, words, param):
    """A8: `hosts probe --node ""` said "give a value, or leave --node off for its default", and leaving --node off
    is "no hosts"; `run -e ""` and `--metric ""` have no default either: the line names what the option takes."""
    flag = next(o for o in param.opts if o.startswith("--"))
    needed = ["a", "b"] if words == ["runs", "compare"] else []
    code, out, err = run_cli(capsys, *words, flag, "", *needed)
    line = one_line(err)
    assert code == EXIT_USAGE and "for its default" not in line and f"give {flag} a value (" in line, line


# -- A30, A35: one near-name judgement for every parser path ---------------------------------------------------

@pytest.mark.parametrize("argv,meant,not_meant", [
    (["run", "--name", "x", "--dry-run"], None, "--namespace"),   # A30: docker's --name is no namespace
    (["exec", "--name", "x", "--", "ls"], None, "--namespace"),
    (["run", "--tag", "v1", "--dry-run"], None, "--target"),      # A30: an image tag is no target
    (["run", "--nmespace", "x", "--dry-run"], "--namespace", None),  # a typo is still named
    (["run", "--image", "x", "--dry-run"], "up --image", None),   # A30: where the image is chosen
    (["--spce", "x", "validate"], "--spec", None),               # A35: before the verb, as after it
    (["--jsn", "validate"], "--json", None),
    (["--outptu", "json", "validate"], "--output", None),
    (["--dryrn", "up"], "`nodeweave up --dry-run`", None),         # a verb's own option: named after the verb
    (["-V"], "--version", None),                                  # python's and pip's version flag
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_a_misspelt_option_is_told_its_near_name_by_meaning_on_every_path(capsys, job, argv, meant, not_meant):
    """A30, A35: run/exec suggested by edit distance with the dashes counted (--name: "did you mean --namespace?",
    --tag: --target); options misspelt before the verb got no "did you mean" at all, and -V no hint to --version."""
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE, line
    if meant:
        assert meant in line, line
    if not_meant:
        assert "did you mean" not in line and not_meant not in line, line


# -- A4, A9, A14: a missing folder an option does not make; the user's own home said as a home --------------------

HOME_IS_A_SYSTEM_FOLDER = "/root"  # root's home: a system folder for every other user, this one's own home here


@pytest.mark.skipif(not os.path.isdir(HOME_IS_A_SYSTEM_FOLDER), reason="no /root on this machine")
@pytest.mark.parametrize("argv", [
    ["render", "all", "--out", HOME_IS_A_SYSTEM_FOLDER, "--dry-run"],
    ["doctor", "--capture", HOME_IS_A_SYSTEM_FOLDER],
    ["run", "--runs-dir", HOME_IS_A_SYSTEM_FOLDER, "--dry-run"],
    ["image", "build", "cpu", "--context", HOME_IS_A_SYSTEM_FOLDER, "--dry-run"],
    ["sync", HOME_IS_A_SYSTEM_FOLDER, "/workspace", "--dry-run"],
    ["init", "--out", f"{HOME_IS_A_SYSTEM_FOLDER}/nodeweave.yaml", "--dry-run"],
], ids=lambda argv: " ".join(argv[:2]))
def test_the_users_own_home_is_said_as_a_home_never_a_system_folder(capsys, job, monkeypatch, argv):
    """A9, A14: as root (HOME=/root) `render all --out ~` and `cd ~ && init` were told "/root is / or a system
    folder": the user's own home is judged and said as a home, with the ~/proj remedy, on every option and verb
    that judges folders (they share systemdirs.system_folder)."""
    monkeypatch.setenv("HOME", HOME_IS_A_SYSTEM_FOLDER)
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "your home folder" in line and "system folder" not in line, line
    assert "~/proj" in line or "~/project" in line, line


def test_a_missing_wheelhouse_says_it_does_not_exist_first(capsys, job):
    """A4: `image build cpu --wheelhouse /nonexist` was told "/nonexist would be made directly in /" by an option
    that makes no folder; its pip line never names a folder the folder rule refuses."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(job))[0] == 0
    for missing in ("/nonexist-walk15", "/usr/nonexist-walk15"):
        code, out, err = run_cli(capsys, "image", "build", "cpu", "--wheelhouse", missing, "--dry-run")
        line = one_line(err)
        assert code == EXIT_USAGE and f"--wheelhouse {missing} does not exist" in line, line
        assert "would be made" in line.split("; not ")[-1] and f"-d {missing}" not in line, line


# -- A34: --profile on a variant whose image lacks the profiler ---------------------------------------------------

def test_a_profiler_the_nodes_image_lacks_is_refused_before_any_node_starts(capsys, job, monkeypatch):
    """A34: a cpu variant's nodes asked to run under nsys got a note ("unless the image holds nsys"), and the real
    run stopped every node after they started: node 0 is asked, and the dry run says the real run's exit 2."""
    fakebin = job / "fakebin"
    fakebin.mkdir()
    (fakebin / "kubectl").write_text('#!/bin/sh\ncase "$*" in *"command -v nsys"*) echo nodeweave-lacks ;; esac\n'
                                     "exit 0\n")
    (fakebin / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fakebin}:{os.environ['PATH']}")
    code, out, err = run_cli(capsys, "run", "-t", "kubernetes", "--profile", "nsys", "--dry-run")
    assert code == 0, err
    assert ("the real run would end with exit 2: --profile nsys: node-0's image holds no nsys (not on PATH "
            "there)") in out, out


# -- B14: https:// to node 0's plain-HTTP metrics port --------------------------------------------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test's stderr is the command's
        pass


@pytest.fixture
def plain_http():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("verb", [["top", "--once"], ["dashboard", "--port", "0"]], ids=lambda v: v[0])
def test_https_to_a_plain_http_port_says_so(capsys, job, plain_http, verb):
    """B14: `top --url https://127.0.0.1:9474` passed OpenSSL's "[SSL: WRONG_VERSION_NUMBER]" through: the port
    answers plain HTTP, and the line gives the http:// URL (top and the dashboard share ask_live)."""
    code, out, err = run_cli(capsys, verb[0], "--url", f"https://127.0.0.1:{plain_http}", *verb[1:])
    line = one_line(err)
    assert code == 1 and "SSL" not in line and f"give --url http://127.0.0.1:{plain_http}" in line, line


# -- A29: input a verb would drop without a word ------------------------------------------------------------------

def test_input_exec_would_drop_is_refused_and_shells_dry_run_says_so(job):
    """A29: `echo hi | nodeweave exec -- cat` printed nothing from the nodes and exit 0 (stdin dropped); shell's dry
    run planned `-i -t` for a pipe the real shell refuses."""
    done = nodeweave("exec", "--dry-run", "--", "cat", input="hi\n", cwd=job)
    assert done.returncode == EXIT_USAGE and "exec passes no standard input on, and a pipe" in one_line(done.stderr)
    assert nodeweave("exec", "--dry-run", "--", "ls", stdin=open(os.devnull), cwd=job).returncode == 0
    shell = nodeweave("shell", "--dry-run", input="ls\n", cwd=job)
    assert "the real shell would end with exit 2: shell's input is not a terminal" in shell.stderr, shell.stderr
