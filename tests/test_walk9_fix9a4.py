"""The ninth walk, part A, rows A34..A40 (issue 43): each row's class, one test per class, each failing on the code
before it."""

from __future__ import annotations

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A38: a bind address the socket layer cannot even encode is an OSError of every listener, never a TypeError ----

UNENCODABLE = ["\u202e", "\udcff"]


def _listeners():
    from nodeweave.entrypoint.checkin.wire import listen
    from nodeweave.entrypoint.metrics.server import http_server
    from http.server import BaseHTTPRequestHandler

    return {"metrics/dashboard http_server": lambda bind: http_server(bind, 0, BaseHTTPRequestHandler),
            "check-in exchange listen": lambda bind: listen(bind, 0)}


@pytest.mark.parametrize("listener", sorted(_listeners()))
@pytest.mark.parametrize("bind", UNENCODABLE)
def test_every_listener_refuses_an_unencodable_bind_as_oserror(listener, bind):
    """A38: each listener's own `except OSError` is what turns a bad address into its one line."""
    with pytest.raises(OSError, match="not a host name or an address"):
        _listeners()[listener](bind)


@pytest.mark.parametrize("bind", UNENCODABLE)
def test_dashboard_bind_that_cannot_be_encoded_is_one_line(capsys, team, bind):
    """A38: `dashboard --bind $'\\u202e'` is the same one-line refusal as `--bind ñ.local`, exit 2."""
    code, _, err = run_cli(capsys, "dashboard", "--url", "http://127.0.0.1:9", "--bind", bind, "--port", "0")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "--bind" in line and "cannot listen there" in line and "Traceback" not in err


# -- A37: --node's refusals write the indices as --node takes them (0-1), and `all` hears that off means every ----

class _Node:
    def __init__(self, index):
        from types import SimpleNamespace

        self.index, self.name = index, f"node-{index}"
        self.remote = SimpleNamespace(label=f"podman:t-{index}", name=f"t-{index}", host=f"t-{index}",
                                      namespaced=False)


@pytest.mark.parametrize("word", ["0..1", "5", "all", "ALL", "*", "every"])
@pytest.mark.parametrize("where", ["cluster", "run folder"])
def test_node_refusals_spell_the_range_as_accepted(word, where):
    """A37: every --node refusal (a cluster's nodes, a run folder's logs) says 0-1, never the refused 0..1."""
    from nodeweave.cli.habits.nodes import EVERY_WORDS, pick_nodes, picked_indices

    from nodeweave.errors import UsageError

    with pytest.raises(UsageError) as caught:
        if where == "cluster":
            pick_nodes([_Node(0), _Node(1)], [word])
        else:
            picked_indices([word], 2, "the run folder r")
    message = str(caught.value)
    assert "0..1" not in message.replace(f"'{word}'", "").replace(f"--node {word} ", "")
    if where == "cluster" or not word.isdigit():
        assert "0-1" in message
    assert ("leave --node off for every node" in message) == (word.lower() in EVERY_WORDS)


def test_node_refusal_through_the_cli(capsys, team):
    """A37: `exec --dry-run --node all` names the way to every node."""
    code, _, err = run_cli(capsys, "exec", "--dry-run", "--node", "all", "--", "true")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "leave --node off for every node" in line and "0..1" not in line


# -- A39: the bare `--` (end of options) is never an option's value: refused as `--x` is, nothing made ------------

def bare_dash_cases():
    """Every value-taking option of every verb (the same table as walk7 A52's), followed by a bare --."""
    from cli_run import leaves
    from nodeweave.cli.habits.swallowed import takes_value

    return [(words, option) for words, command in leaves() for param in command.params if takes_value(param)
            for option in param.opts[:1]]


BARE = bare_dash_cases()


@pytest.mark.parametrize("words, option", BARE, ids=[f"{' '.join(w)} {o}" for w, o in BARE])
def test_a_bare_double_dash_is_never_an_options_value(capsys, team, words, option):
    """A39: `doctor --capture --` made a folder named `--`; every verb's value option refuses the bare -- instead."""
    before = sorted(p.name for p in team.iterdir())
    code, out, err = run_cli(capsys, *words, option, "--", "t.py")
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert option in line and ("not a value for" in line or "requires an argument" in line), line
    assert sorted(p.name for p in team.iterdir()) == before and not (team / "--").exists()


# -- A40: a fresh `git init` with no commit is said as such, never "not in a git checkout" --------------------------

@pytest.mark.parametrize("state, said", [("none", "is not in a git checkout"),
                                         ("init", "is in a git checkout with no commit yet")])
def test_a_push_without_a_sha_tag_says_why(capsys, tmp_path, monkeypatch, state, said):
    """A40: the push note names the checkout with no commit yet, so nobody runs `git init` again."""
    import subprocess

    make_team(tmp_path, monkeypatch)
    (tmp_path / "nodeweave.yaml").write_text("name: sp\nimage:\n  variant: cpu\n  registry: ghcr.io/acme\nnodes: 2\n"
                                             "launcher:\n  script: train.py\n")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    if state == "init":
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert run_cli(capsys, "render", "entrypoint")[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--push", "--dry-run")
    assert code == 0, err
    note = [line for line in (out + err).splitlines() if "<variant>-<git sha> tag" in line]
    assert len(note) == 1 and said in note[0], note


# -- A34: `-t openshift` refuses every flag of this machine's build (--push too), each naming where it is set --------

OPENSHIFT_FLAGS = {"--base": ["x:1"], "--tag": ["v1"], "--build-arg": ["A=1"], "--wheelhouse": ["."],
                   "--offline": [], "--network": ["host"], "--engine": ["podman"], "--no-cache": [], "--push": [],
                   "--force": []}
SPEC_FIELDS = {"--base": "image.base", "--tag": "image.tag", "--build-arg": "image.build_args"}


def test_the_openshift_table_covers_the_flags_tested():
    """A34: the members are the product's own table."""
    from nodeweave.cli.image import ON_THE_CLUSTER

    assert set(ON_THE_CLUSTER) == set(OPENSHIFT_FLAGS)


@pytest.mark.parametrize("flag", sorted(OPENSHIFT_FLAGS))
def test_a_local_build_flag_with_openshift_names_where_it_is_set(capsys, team, flag):
    """A34: "set it in the spec" only for a flag with a spec field; --push refused like its siblings."""
    code, _, err = run_cli(capsys, "image", "build", "cpu", "-t", "openshift", "--dry-run", flag,
                           *OPENSHIFT_FLAGS[flag])
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert f"{flag} does nothing for -t openshift" in line
    assert ("set it there" in line or "set them there" in line) == (flag in SPEC_FIELDS)
    if flag in SPEC_FIELDS:
        assert SPEC_FIELDS[flag] in line
    assert "set that in the spec" not in line


# -- A35: hosts ssh cannot reach get status's line and exit 3 from every verb that acts on them (no run folder) ------

HOSTS = ["-t", "hosts", "--host", "nosuchhost1.invalid", "--host", "nosuchhost2.invalid", "--remote-dir", "/srv/j"]
NEEDS_SSH = pytest.mark.skipif(not __import__("shutil").which("ssh"), reason="needs the OpenSSH client")
# every verb whose refusal is onbackend.require_up's (the one rule: tests/test_cli_conventions.py names them)
UNREACHED_VERBS = [("stop",), ("logs",), ("shell",), ("exec", "--", "hostname"), ("run", "--", "train.py"),
                   ("check",), ("top", "--once")]


@NEEDS_SSH
@pytest.mark.parametrize("verb", UNREACHED_VERBS, ids=[v[0] for v in UNREACHED_VERBS])
def test_every_verb_on_unreachable_hosts_says_so_exit_3(capsys, team, verb):
    """A35: stop exited 0, logs/shell 255, exec/top 1, run/check made a run folder: now status's line, exit 3."""
    code, out, err = run_cli(capsys, verb[0], *HOSTS, *verb[1:])
    assert code == 3, (out, err)
    line = one_line(err)
    assert "cannot be asked on" in line and "ssh cannot reach nosuchhost1.invalid" in line, line
    assert "(name not resolved)" in line and "up --hold" not in line
    assert not (team / "runs").exists() or not any((team / "runs").iterdir())


# -- A36: an up that reaches no host records nothing; down on such a record names the way out ----------------------

@NEEDS_SSH
def test_an_up_on_unreachable_hosts_records_nothing(capsys, team):
    """A36: the failed up wrote cluster.json, which then refused `up -t local` and which down could not clear."""
    code, out, err = run_cli(capsys, "up", *HOSTS, "--hold", "--timeout", "5")
    assert code == 3, (out, err)
    assert "nothing was started or recorded" in one_line(err)
    assert not list(team.glob(".nodeweave/*/cluster.json"))
    code, out, err = run_cli(capsys, "up", "-t", "local", "--dry-run")
    assert "records" not in err, err


@NEEDS_SSH
def test_down_of_a_record_on_unreachable_hosts_names_the_way_out(capsys, team):
    """A36: a record left by an older up (or hosts gone since) is kept, and down says which file to remove."""
    from nodeweave.cli.habits.clusteropts import remember_up
    spec_path = team / "nodeweave.yaml"
    spec, backend, checked = _open_hosts(spec_path)
    remember_up(spec_path, spec, checked, backend)  # what the up before this fix recorded, then failed
    code, out, err = run_cli(capsys, "down")
    assert code == 3, (out, err)
    line = one_line(err)
    assert "ssh cannot reach" in line and "cluster.json is kept" in line and "remove that file" in line, line
    assert list(team.glob(".nodeweave/*/cluster.json"))


def _open_hosts(spec_path):
    from nodeweave.cli.habits.clusteropts import open_cluster
    from nodeweave.cluster.options import ClusterOptions

    reach = ClusterOptions(target="hosts", hosts=("nosuchhost1.invalid", "nosuchhost2.invalid"),
                           remote_dir="/srv/j")
    return open_cluster(spec_path, reach, dry_run=False, for_up=True)
