"""Walk 9, part A, rows A26..A33 (issue 43), each fixed as a class:

- a spec whose own folder would be the workspace (workspace.host_path unset) is judged by the rule a given
  host_path and sync's SRC already meet: never ``/``, a system folder (/tmp, /usr/local, /var, ...), a folder in a
  system tree, or a home itself (/home/me); ``init`` writes no such spec, its dry run included (A26, A27);
- ``image build --wheelhouse`` is judged by the one folder rule (``failures.own_folder_problem``) whether or not
  the build is offline, as README says and ``--context`` is (A31);
- a file an option names is refused directly in ``/`` or a system folder (/var, /var/lib, /usr/local, ...) but
  the scratch ones (/tmp, /var/tmp), not only inside the system's trees (A32);
- a ``--build-arg`` no build step would see (no ARG declares it) or whose value holds a URL's password is refused,
  as a secret-looking name already was (A29);
- ``init`` writes no nodeweave.yaml beside the spec's name spelt otherwise (nodeweave.yml, Nodeweave.yaml), which no
  verb reads, without --force (A30);
- ``logs`` collapses the same text from several ranks whatever line (another node's, an unmarked one) comes
  between the copies (A28);
- a verb of docker's, podman's or kubectl's gets nodeweave's word for it, from one table (``HABITS``) (A33);

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.systemdirs import ROOTISH
from cli_run import in_process as run_cli, one_line

SPEC = "name: sp\nimage:\n  variant: cpu\nnodes: 2\nlauncher:\n  script: train.py\n"


@pytest.mark.parametrize("folder", sorted(ROOTISH))
def test_a_spec_in_a_system_folder_is_refused(folder):
    """A26: a spec saved in /tmp (or /, /usr/local, /var) made the whole folder the workspace every node mounts and
    sync sends, while `sync /tmp` and a `host_path: /tmp` were refused as a system folder."""
    from nodeweave.spec import parse_spec

    with pytest.raises(UsageError) as refused:
        parse_spec(SPEC, f"{folder.rstrip('/')}/nodeweave.yaml", base_dir=Path(folder))
    assert "workspace.host_path: unset, so the workspace is the spec's folder" in str(refused.value)
    assert "every node" in str(refused.value) and "mkdir ~/proj" in str(refused.value)


@pytest.mark.parametrize("home", ["/home/walk9a3-me", "/Users/walk9a3-me", "/var/home/walk9a3-me"])
def test_a_spec_in_a_home_itself_is_refused(home):
    """A27: `cd ~ && nodeweave init` wrote ~/nodeweave.yaml, and validate, up and sync took the whole home as the
    workspace, while `host_path: ~` and `sync ~` were refused; a project folder inside the home is fine."""
    from nodeweave.spec import parse_spec

    with pytest.raises(UsageError, match="is a home itself"):
        parse_spec(SPEC, f"{home}/nodeweave.yaml", base_dir=Path(home))
    parse_spec(SPEC, f"{home}/proj/nodeweave.yaml", base_dir=Path(home) / "proj")


@pytest.mark.parametrize("out", ["/tmp/nodeweave.yaml", "/nodeweave.yaml", "/usr/local/nodeweave.yaml",
                                 "/var/nodeweave.yaml", "/home/walk9a3-me/nodeweave.yaml"])
def test_init_writes_no_spec_whose_folder_is_refused(capsys, tmp_path, monkeypatch, out):
    """A26, A27: `cd /tmp && nodeweave init --dry-run` printed the spec, rc=0; the real one wrote /tmp/nodeweave.yaml."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    if out.startswith("/home/") and not os.access("/home", os.W_OK):
        pytest.skip("makes a folder in /home: root only")
    if out.startswith("/home/"):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    try:
        code, out_text, err = run_cli(capsys, "init", "--dry-run", "--out", out)
    finally:
        if out.startswith("/home/"):
            os.rmdir(os.path.dirname(out))
    assert code == EXIT_USAGE, err
    assert "name:" not in out_text
    line = one_line(err)
    assert "system folder" in line or "home itself" in line, line


@pytest.fixture
def team(tmp_path, monkeypatch):
    from team_folder import make_team

    return make_team(tmp_path, monkeypatch)


@pytest.mark.parametrize("offline", [False, True], ids=["online", "offline"])
@pytest.mark.parametrize("house", ["/", "/etc", "/usr/lib", "/tmp", "/proc", ".nodeweave"])
def test_a_wheelhouse_is_judged_by_the_folder_rule(capsys, team, house, offline):
    """A31: `--wheelhouse /proc` (and /, /etc, /usr/lib, /tmp, .nodeweave) was taken, rc=0, unless --offline needed
    a fill hint; README lists --wheelhouse under the one folder rule, with --context."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    (team / ".nodeweave").mkdir(exist_ok=True)
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--wheelhouse", house,
                             *(["--offline"] if offline else []))
    line = one_line(err)
    assert code == EXIT_USAGE and line.startswith(f"nodeweave: error: --wheelhouse {house}: "), line
    assert "makes no folder" in line and "pip download" not in line, line


def test_a_wheelhouse_of_the_users_own_is_still_taken(capsys, team):
    """A31: the rule refuses the system's folders only: a wheelhouse of wheels in the user's folder is offered."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    (team / "wheels").mkdir()
    (team / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"")
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--wheelhouse", "wheels")
    assert code == 0, err


FILE_OPTIONS = [("bench", "--dry-run", "--json-out"), ("hosts", "probe", "--node", "a", "--dry-run",
                                                       "--write-hostfile"),
                ("init", "--dry-run", "--force", "--out")]


@pytest.mark.parametrize("folder", ["/var/lib", "/var", "/usr/local", "/opt", "/home", "/"])
@pytest.mark.parametrize("argv", FILE_OPTIONS, ids=lambda argv: argv[-1])
def test_a_file_directly_in_a_system_folder_is_refused(capsys, team, argv, folder):
    """A32: `--json-out /var/lib/x.json`, `--write-hostfile /usr/local/hostfile`, `init --out /var/x.yaml` were
    taken while `/usr/lib/x.json` was refused: every system folder, not the trees alone, keeps its files."""
    from nodeweave.cli.habits.output import in_system_tree

    target = f"{folder.rstrip('/')}/walk9a3-x"
    assert in_system_tree(Path(target)), target
    code, _, err = run_cli(capsys, *argv, target)
    line = one_line(err)
    assert code == EXIT_USAGE and "system folder" in line and argv[-1] in line, line


@pytest.mark.parametrize("folder", ["/tmp", "/var/tmp"])
def test_a_file_in_a_scratch_folder_is_still_taken(folder):
    """A32: /tmp and /var/tmp are everyone's: `--json-out /tmp/x.json` stays fine."""
    from nodeweave.cli.habits.output import in_system_tree

    assert in_system_tree(Path(f"{folder}/x.json")) == ""


@pytest.mark.parametrize("arg, said", [
    ("PIP_INDEX_URL=https://pypi.corp.example/simple", "declares no `ARG PIP_INDEX_URL`"),
    ("NOT_DECLARED=1", "declares no `ARG NOT_DECLARED`"),
    ("PIP_FIND_LINKS=https://user:pw@pypi.corp.example/simple", "holds a URL's password"),
    ("HF_TOKEN=x", "looks like a secret"),
])
def test_a_build_arg_that_reaches_no_step_is_refused(capsys, team, arg, said):
    """A29: `--build-arg PIP_INDEX_URL=...` (no ARG declares it) was put on the engine's line, rc=0, and pip went to
    PyPI; a `user:pw@` URL was printed in the plan, though `HF_TOKEN=x` was refused as a secret."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--build-arg", arg)
    line = one_line(err)
    assert code == EXIT_USAGE and said in line and "pw@" not in line + out, line


@pytest.mark.parametrize("arg", ["PIP_FIND_LINKS=/wheels", "BASE_IMAGE=ubuntu:24.04", "HTTPS_PROXY=http://proxy:3128",
                                 "no_proxy=localhost", "BUILDKIT_INLINE_CACHE=1"])
def test_a_build_arg_a_step_sees_is_taken(capsys, team, arg):
    """A29: a declared ARG, a proxy variable and BuildKit's own args reach the build as before."""
    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--build-arg", arg)
    assert code == 0 and f"--build-arg {arg}" in out, err


def _habits():
    try:
        from nodeweave.cli.habits.othertools import HABITS
    except ImportError:  # the code before the fix: the table's members as the walker typed them
        return [("nodeweave", "start", ""), ("nodeweave", "ls", ""), ("nodeweave", "ps", ""), ("image", "ls", ""),
                ("runs", "rm", "")]
    return [(group, verb, said) for group, verbs in HABITS.items() for verb, said in verbs.items()]


@pytest.mark.parametrize("group, verb, said", _habits())
def test_another_tools_verb_is_pointed_to_nodeweaves(capsys, team, group, verb, said):
    """A33: `start` and `restart` were told 'status', `ls` 'logs'; `ps`, `version`, `image ls`, `runs rm` nothing."""
    argv = ([] if group == "nodeweave" else [group]) + [verb]
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "nodeweave's word for it: " in line and said in line, line
    assert "did you mean" not in line.lower(), line


@pytest.mark.parametrize("name", ["nodeweave.yml", "Nodeweave.yaml", "NODEWEAVE.YML"])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_init_writes_no_spec_beside_another_spelling_of_it(capsys, tmp_path, monkeypatch, name, dry_run):
    """A30: beside the user's nodeweave.yml (job ymljob), `nodeweave init` wrote a fresh nodeweave.yaml without a word,
    and every verb ran the new job."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / name).write_text(SPEC.replace("name: sp", "name: ymljob"))
    if (tmp_path / "nodeweave.yaml").exists():
        pytest.skip("a case-blind file system: the spelling is the spec itself")
    code, out, err = run_cli(capsys, "init", *(["--dry-run"] if dry_run else []))
    line = one_line(err)
    assert code == EXIT_USAGE and f"{name} (job ymljob) is a spec under a name no verb reads" in line, line
    assert f"mv {name} nodeweave.yaml" in line and not (tmp_path / "nodeweave.yaml").exists()
    code, _, err = run_cli(capsys, "init", "--force", *(["--dry-run"] if dry_run else []))
    assert code == 0, err


@pytest.mark.parametrize("between", [("node-1", "samples/s 90"), ("node-0", "nodeweave-entrypoint: note: x"),
                                     ("node-1", "[rank2]: another text")], ids=["other-node", "same-node", "marked"])
def test_a_line_between_two_ranks_copies_does_not_split_them(between):
    """A28: `[rank0]: hello` and `[rank1]: hello` with node-1's unmarked `samples/s 90` between them printed hello
    twice; the same text from several ranks is printed once whatever is printed between (docs/observability.md)."""
    from nodeweave.cluster.logview import LogView

    view = LogView()
    shown = []
    for node, line in [("node-0", "[rank0]: hello world"), between, ("node-0", "[rank1]: hello world")]:
        shown += view.feed(node, line)
    shown += view.flush()
    assert shown[0] == ("node-0", "x2 node-0 r0-1", "hello world"), shown
    assert len(shown) == 2 and shown[1][2] == between[1].split(": ", 1)[-1] if between[1].startswith("[rank") \
        else shown[1] == (between[0], between[0], between[1]), shown
