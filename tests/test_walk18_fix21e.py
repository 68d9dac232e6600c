"""walk18a A4, A13, A6, A15, A10, A11, A8, A9: one answer for one mistake, whichever verb or option meets it."""

import cli_run
from cli_run import one_line


def nodeweave(folder, *args, **kwargs):
    return cli_run.nodeweave(*args, cwd=folder, **kwargs)


def test_a_node_count_typed_on_a_verb_without_one_is_answered_as_a_count(tmp_path):
    """walk18a A6: ``up --nodes 3`` was offered ``--host`` (--nodes a near typo of --node): a count is no host, and
    the answer says how the verb's node count is set."""
    for argv, said in ((["up", "--nodes", "3", "--dry-run"], "the spec's nodes says how many nodes up starts"),
                       (["down", "--nodes", "2"], "down takes down every node `up` made"),
                       (["bench", "--nodes", "2"], "bench measures the processes of this machine")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and f"{argv[1]} {argv[2]} is a node count, not a host: {said}" in line, line
        assert "did you mean --host" not in line, line
    line = one_line(nodeweave(tmp_path, "up", "--nodes", "gpu01").stderr)
    assert "did you mean --host?" in line, line  # a host's name is still answered with the verb's spelling


def test_every_host_check_takes_the_names_ssh_takes(tmp_path):
    """walk18a A15: ``--host gpu_01`` (a ~/.ssh/config alias ssh takes) was refused as no RFC 1123 name by up, hosts
    probe, hosts files and the spec's hosts: every host check takes '_', and still refuses what ssh does not."""
    (tmp_path / "nodeweave.yaml").write_text("name: w\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    (tmp_path / "t.py").write_text("")
    (tmp_path / "hf").write_text("gpu_01\ngpu_02\n")
    (tmp_path / "s2.yaml").write_text("name: w\nimage: {variant: cpu}\nnodes: 2\nhosts: [gpu_01, a100_box]\n"
                                      "launcher: {script: t.py}\n")
    for argv in (["up", "--target", "hosts", "--host", "gpu_01", "--host", "me@gpu_02", "--remote-dir", "/srv/job",
                  "--hold", "--dry-run"],
                 ["up", "--target", "hosts", "--hosts-file", "hf", "--remote-dir", "/srv/job", "--hold", "--dry-run"],
                 ["hosts", "probe", "--node", "gpu_01", "--dry-run"],
                 ["validate", "--spec", "s2.yaml"]):
        done = nodeweave(tmp_path, *argv)
        assert done.returncode == 0 and "not accepted" not in done.stderr, (argv, done.stderr)
    line = one_line(nodeweave(tmp_path, "up", "--target", "hosts", "--host", "gpu!1", "--dry-run").stderr)
    assert "--host 'gpu!1' is not accepted: [user@]host with a host name (letters, digits, '-', '_' and '.'" in line


def test_a_verbs_help_names_the_exit_code_it_gives(tmp_path):
    """walk18a A8: ``hosts probe --help`` said "exit 1 if any is unreachable"; a host ssh cannot reach ends exit 3
    (walk17a's rule), and the help says so, and what exit 1 is left for."""
    text = " ".join(nodeweave(tmp_path, "hosts", "probe", "--help").stdout.split())
    assert "exit 3 when ssh cannot reach a host" in text and "exit 1 if any is unreachable" not in text, text
    assert "--write-hostfile has no host with a GPU to write (nothing is written then)" in text, text
    done = nodeweave(tmp_path, "hosts", "probe", "--node", "nosuchhost.invalid")
    assert done.returncode == 3 and "ssh cannot reach nosuchhost.invalid" in done.stderr, done.stderr


STORE = ["localhost/nodeweave/team:cpu", "localhost/nodeweave-base:bookworm"]


def _store(folder, monkeypatch):
    """podman and podman-compose on PATH, the store holding :data:`STORE` (`image inspect`, `images --format`)."""
    from types import SimpleNamespace

    import nodeweave.build as build

    bin_dir = folder / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "podman").write_text(
        "#!/bin/sh\n" f'IMAGES="{" ".join(STORE)}"\n' 'case "$1 $2" in\n'
        '  "image inspect") for n in $IMAGES; do [ "$n" = "$5" ] && echo "{}" && exit 0; done\n'
        '    echo "Error: $5: image not known" >&2; exit 125;;\n'
        '  "images --format") for n in $IMAGES; do echo "$n"; done; exit 0;;\n'
        "esac\nexit 0\n")
    (bin_dir / "podman-compose").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    monkeypatch.setattr(build, "detect_engine", lambda name=None: SimpleNamespace(kind="podman", builder=build.BUILDX))


def test_a_local_image_the_store_lacks_is_one_refusal_and_an_unreached_registry_is_exit_3(tmp_path, monkeypatch,
                                                                                            capsys):
    """walk18a A10, A11: `image build --base localhost/...:bookwrom` was exit 2 naming the nearest images, `up --image
    localhost/...:cpx` exit 3 naming none: one rule now (exit 3, the nearest named); a build that cannot reach its
    registry was exit 1, where up's pull that cannot is 3."""
    from cli_run import in_process
    from team_folder import make_team

    team = make_team(tmp_path, monkeypatch)
    _store(team, monkeypatch)
    assert in_process(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    for argv, near in ((["up", "--hold", "--image", "localhost/nodeweave/team:cpx"], "localhost/nodeweave/team:cpu"),
                       (["image", "build", "cpu", "--base", "localhost/nodeweave-base:bookwrom"],
                        "localhost/nodeweave-base:bookworm")):
        code, out, err = in_process(capsys, *argv)
        line = one_line(err)
        assert code == 3 and "is not built here (podman's store lacks it" in line, (argv, code, out, err)
        assert f"with a tag this store holds (nearest: {near}" in line, line

    from python_on_whales.exceptions import DockerException

    import nodeweave.build.builder as builder
    from nodeweave.errors import EnvironmentProblem

    def offline(step):
        yield "STEP 1/9: FROM docker.io/library/python:3.12-slim\n"
        yield ("Error: creating build container: initializing source docker://python:3.12-slim: pinging container "
               "registry registry-1.docker.io: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup "
               "registry-1.docker.io: no such host\n")
        raise DockerException(["podman", "build"], 125)

    monkeypatch.setattr(builder, "_build_lines", offline)
    plan = type("P", (), {"dockerfile": "Dockerfile", "steps": lambda *a: [None]})()
    try:
        builder.run_build(type("E", (), {"kind": "podman"})(), plan, steps=[object()])
    except EnvironmentProblem as err:
        assert err.exit_code == 3 and "no such host" in str(err), err
    else:
        raise AssertionError("an unreached registry did not end the build")


def _marked_engine(team, monkeypatch, marks):
    """podman whose `inspect` answers each container of ``marks`` with those labels; no container of the job runs."""
    import json

    from team_folder import fake_engines

    fake_engines(team, monkeypatch, "podman")
    (team / "fakebin" / "marks.txt").write_text(
        "".join(f"{json.dumps(name)} {json.dumps(labels)}\n" for name, labels in marks.items()))
    (team / "fakebin" / "podman").write_text(f"""#!/bin/sh
case "$*" in
  "version --format {{{{.Server.Version}}}}") echo 4.3.1 ;;
  inspect*) cat {team / 'fakebin' / 'marks.txt'} ;;
  *) exit 0 ;;
esac
""")


def test_a_node_address_of_no_node_of_the_job_is_answered_alike_by_every_verb(tmp_path, monkeypatch, capsys):
    """walk18a A4: in a folder whose job is not up, `exec/stop/shell --node podman:w18a-0` (another folder's
    container) said exit 2 "names no node of this cluster; the nodes: ..." listing nodes that do not exist, where
    sync and doctor --cluster said exit 3 naming the folder that owns it: every verb answers as they do, and an
    address of nothing while the job is not up is "not up", exit 3."""
    from cli_run import in_process
    from nodeweave.cluster.identity import JobMark
    from team_folder import SPEC, make_team

    (tmp_path / "bob").mkdir()
    team = make_team(tmp_path / "bob", monkeypatch)
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / "nodeweave.yaml").write_text(SPEC.replace("name: team", "name: w18a"))
    _marked_engine(team, monkeypatch, {"w18a-0": JobMark.of(alice, "w18a").labels()})
    for argv in (["exec", "--node", "podman:w18a-0", "--", "hostname"], ["stop", "--node", "podman:w18a-0", "--dry-run"],
                 ["shell", "--node", "podman:w18a-0", "--dry-run"], ["logs", "--node", "podman:w18a-0"],
                 ["sync", "--node", "podman:w18a-0", "--dry-run"]):
        code, out, err = in_process(capsys, *argv)
        line = one_line(err)
        assert code == 3 and f"was started by `nodeweave up` in {alice} (job w18a)" in line, (argv, out, err)
        assert f"run the verb in {alice}" in line and "names no node" not in line, line
    code, out, err = in_process(capsys, "exec", "--node", "podman:nosuch-0", "--", "hostname")
    line = one_line(err)
    assert code == 3 and "team is not up on podman" in line and "names no node" not in line, (out, err)


def test_a_node_count_lowered_since_up_reaches_every_node_up_made(tmp_path, monkeypatch, capsys):
    """walk18a A13: `nodes: 2` -> `1` while two nodes held: exec said "1 node(s): all exit 0", stop stopped node-0
    alone and run planned node-0 alone, all silently, where a count raised is refused: every verb reaches the nodes
    up made, saying so (stop stops each), and a run, one launch the nodes were made for, is refused, exit 3."""
    from cli_run import in_process
    from team_folder import SPEC, fake_engines, made_by_up, make_team

    team = make_team(tmp_path, monkeypatch)
    fake_engines(team, monkeypatch, "podman")
    made_by_up(team, SPEC)
    (team / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", "nodes: 1"))
    said = "now asks for 1 node container(s) and team is up with 2"
    for argv in (["stop", "--dry-run"], ["exec", "--dry-run", "--", "true"]):
        code, out, err = in_process(capsys, *argv)
        assert code == 0 and "team-0" in out and "team-1" in out, (argv, out, err)
        assert said in err and "every node it made is reached, node-1 too" in err, (argv, err)
    code, out, err = in_process(capsys, "run", "--dry-run", "--", "train.py")
    assert code == 0 and f"the real run would end with exit 3: nodeweave.yaml {said}" in " ".join(err.split()), err
