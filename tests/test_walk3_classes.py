"""walk3: the eight findings walk2 left open (issue 43, /work/wt/walk2-report.md U5 U7 M4 M5 M6 M8 M9 W3), each
fixed as a class and walked here over every member this file could find. Each test fails on the main before
these fixes. No container is started, nothing is probed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeweave.cli.habits.variables import CLI_VARIABLES

from nodeweave.cli import main
from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import JOB_SPEC as SPEC, make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- U5: one damaged run record is one row (or one warning), never a block on the other runs -----------------

GOOD = "20260101T000000Z-proj"
DAMAGED = "20260102T000000Z-proj"
GOOD_RECORD = {"job": "proj", "run_id": GOOD, "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:01:00Z",
               "seconds": 60.0, "exit_code": 0, "command": ["python", "train.py"], "env": {},
               "nodes": [{"node": "node-0", "exit_code": 0, "log": "node-0.log"}]}
DAMAGES = {"a field of the wrong type": ('{"command": 5}', "field command is 5"),
           "not JSON": ("{not json", "not JSON"),
           "a list": ("[1, 2]", "not a mapping"),
           "a folder named run.json": (None, "run.json")}


def runs_with_one_damaged(root: Path, damage: str, sweep: bool = False) -> Path:
    runs = root / "runs"
    good = runs / GOOD
    good.mkdir(parents=True)
    (good / "run.json").write_text(json.dumps(GOOD_RECORD))
    (good / "node-0.log").write_text("step 1\nsamples/s 10.5\n")
    damaged = runs / ("20260102T000000Z-proj-sweep" if sweep else DAMAGED)
    if sweep:
        (damaged / DAMAGED).mkdir(parents=True)
        (damaged / "sweep.json").write_text(json.dumps({"metric": "samples/s ([0-9.]+)"}))
        damaged = damaged / DAMAGED
    else:
        damaged.mkdir()
    text = DAMAGES[damage][0]
    if text is None:
        (damaged / "run.json").mkdir()
    else:
        (damaged / "run.json").write_text(text)
    return damaged


@pytest.mark.parametrize("damage", DAMAGES)
def test_runs_ls_lists_a_damaged_record_as_one_row_and_the_others_as_ever(capsys, job_folder, damage):
    runs_with_one_damaged(job_folder, damage)
    code, out, err = run_cli(capsys, "runs", "ls", "-o", "json")
    rows = {row["run"]: row for row in json.loads(out)}
    assert code == 0 and rows[GOOD]["state"] == "ok", out + err
    assert rows[DAMAGED]["state"].startswith("unreadable: ") and DAMAGES[damage][1] in rows[DAMAGED]["state"]


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("argv", [["runs", "show", GOOD], ["runs", "show", "last"], ["logs", "--run", "last"],
                                  ["logs", "--run", GOOD], ["runs", "compare", GOOD, GOOD[:-1]]])
def test_a_damaged_record_does_not_block_reading_another_run(capsys, job_folder, damage, argv):
    runs_with_one_damaged(job_folder, damage)
    if argv[1] == "compare":  # a second good run to compare with
        other = job_folder / "runs" / "20251231T000000Z-proj"
        other.mkdir()
        (other / "run.json").write_text(json.dumps(GOOD_RECORD))
        argv = ["runs", "compare", other.name, GOOD]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "Traceback" not in err, out + err
    if "last" in argv:  # the newest run is the damaged one: `last` passes over it, with one warning naming it
        assert one_line(err).startswith("nodeweave: warning: last passes over") and DAMAGED in err, err


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("argv", [["runs", "show", DAMAGED], ["logs", "--run", DAMAGED],
                                  ["dashboard", "--run", DAMAGED]])
def test_asked_for_by_name_a_damaged_record_is_refused_naming_the_file(capsys, job_folder, damage, argv):
    damaged = runs_with_one_damaged(job_folder, damage)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and str(damaged / "run.json") in line and DAMAGES[damage][1] in line, line


def test_a_damaged_sweep_point_is_one_row_of_its_sweep(capsys, job_folder):
    runs_with_one_damaged(job_folder, "a field of the wrong type", sweep=True)
    code, out, err = run_cli(capsys, "runs", "ls", "-o", "json")
    assert code == 0 and {r["run"] for r in json.loads(out)} == {GOOD, "20260102T000000Z-proj-sweep"}, out + err
    code, out, err = run_cli(capsys, "runs", "show", "20260102T000000Z-proj-sweep")
    assert code == 0 and "unreadable" in out, out + err


def test_the_dashboards_finished_run_skips_a_damaged_newer_record(capsys, job_folder):
    from nodeweave.cli.dashboard import _finished_run

    runs_with_one_damaged(job_folder, "a list")
    folder, record, *_ = _finished_run("last", None, None)
    assert folder.name == GOOD and record["exit_code"] == 0
    assert DAMAGED in one_line(capsys.readouterr().err)


# -- U7: every verb that needs the job up says "<job> is not up ... `nodeweave up`", exit 3 -------------------


def engine_with_nothing_up(folder: Path, monkeypatch) -> None:
    """A podman on PATH that answers every inspect as the real one does with no container: exit 125."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "podman"
    tool.write_text('#!/bin/sh\nshift\necho "Error: no container with name or ID \\"$3\\" found: no such container" >&2\n'
                    "exit 125\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")


@pytest.mark.parametrize("argv", [["doctor", "--cluster"], ["doctor", "--cluster", "-o", "json"],
                                  ["doctor", "--cluster", "--node", "1"], ["top"], ["dashboard"], ["logs"],
                                  ["exec", "--", "ls"], ["shell"], ["stop"], ["sync"], ["check"]])
def test_every_verb_that_needs_the_job_up_says_it_is_not_up_exit_3(capsys, job_folder, monkeypatch, argv):
    engine_with_nothing_up(job_folder, monkeypatch)
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 3 and "proj is not up on podman" in line and "`nodeweave up" in line, out + err
    assert "single node" not in out + err and not out.strip(), out


def test_doctor_cluster_outside_a_node_and_any_job_folder_says_where_to_ask(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("NODE_RANK", "RANK", "NNODES", "WORLD_SIZE", "MASTER_ADDR", "NODEWEAVE_SPEC"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = run_cli(capsys, "doctor", "--cluster")
    line = one_line(err)
    assert code == 3 and "not a node of a job" in line and "--node KIND:NAME" in line and not out, out + err


# -- M4: an unknown NODEWEAVE_* variable is warned by both programs, from the one list both read --------------

import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402

import cli_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CPU_ONLY = Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only"
NAMED = re.compile(r"(?<![A-Za-z0-9_])NODEWEAVE_[A-Z0-9_]*[A-Z0-9]")


def entrypoint(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    (cwd / "train.py").write_text("")
    full = {"PATH": os.environ["PATH"], **env}
    return cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(CPU_ONLY), *args], env=full, cwd=cwd, timeout=60)


@pytest.mark.parametrize("name, meant", [("NODEWEAVE_SEPC", "NODEWEAVE_SPEC"), ("NODEWEAVE_IFNAME", "NODEWEAVE_INTERFACES"),
                                         ("NODEWEAVE_NNODE", "NODEWEAVE_NNODES"), ("NODEWEAVE_EXCLUDE_HCA",
                                                                                    "NODEWEAVE_EXCLUDE_HCAS")])
def test_both_programs_warn_once_of_an_unknown_variable_with_the_name_meant(capsys, job_folder, monkeypatch, name,
                                                                            meant):
    monkeypatch.setenv(name, "eth9")
    code, out, err = run_cli(capsys, "validate")
    where = "" if meant in CLI_VARIABLES else ", which nodeweave-entrypoint reads in the nodes, not this command"
    assert code == 0 and one_line(err) == (f"nodeweave: warning: {name} is not a variable nodeweave reads, so it is "
                                           f"ignored (did you mean {meant}{where}?)"), err
    env = {name: "eth9", "NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "10.0.0.1"}
    explained = entrypoint(job_folder, env, "--explain", "--no-wait", "--json", "--", "train.py")
    said = [w for w in json.loads(explained.stdout)["warnings"] if name in w]
    assert len(said) == 1 and f"did you mean {meant}?" in said[0], explained.stdout[-1500:]
    started = entrypoint(job_folder, {name: "x"}, "--launcher", "command", "--", "true")  # the start-up lines
    assert started.returncode == 0 and started.stderr.count(f"{name} is not a variable") == 1, started.stderr


def test_a_variable_nodeweave_sets_or_reads_is_never_warned(capsys, job_folder, monkeypatch):
    from nodeweave.entrypoint.planning.variables import KNOWN, unknown_variables

    monkeypatch.setenv("NODEWEAVE_SPEC", "nodeweave.yaml")
    monkeypatch.setenv("NODEWEAVE_TEST_KEEP_ENGINE", "1")  # the project's own test knobs are not a user's typo
    assert run_cli(capsys, "validate")[2] == ""
    assert unknown_variables({name: "1" for name in KNOWN}) == []


def test_the_one_list_holds_every_nodeweave_variable_the_sources_and_renderings_name(tmp_path, job_folder):
    """The list is complete: every NODEWEAVE_* name in the sources, and in what render writes for every target
    (the variables nodeweave sets in containers), is in it; a new variable added without it fails here."""
    from nodeweave.entrypoint.planning.variables import DEVELOPMENT, KNOWN

    named = set()
    for path in (ROOT / "src" / "nodeweave").rglob("*.py"):
        if path.name == "variables.py":  # the list itself, whose docstring names the typos it catches
            continue
        named.update(NAMED.findall(path.read_text(encoding="utf-8")))
    assert run_cli_quiet(["render", "all", "--out", str(tmp_path / "out")]) == 0
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.suffix != ".pyz":
            named.update(NAMED.findall(path.read_text(encoding="utf-8", errors="replace")))
    assert sorted(named - KNOWN - DEVELOPMENT) == []


def run_cli_quiet(argv) -> int:
    return main(list(argv))


# -- M5: a kept interface or HCA variable naming nothing on this node is warned: --explain, doctor, start-up ---

SYNTHETIC = Path(__file__).parent / "fixtures" / "synthetic"
RANKED = {"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "10.0.0.1"}


@pytest.mark.parametrize("tree, env, says", [
    ("cpu-only", {"NCCL_SOCKET_IFNAME": "eth9"}, "NCCL_SOCKET_IFNAME=eth9 matches no interface here (eth0, lo)"),
    ("cpu-only", {"NCCL_SOCKET_IFNAME": "eth9", "NNODES": "1"}, "NCCL_SOCKET_IFNAME=eth9 matches no interface here"),
    ("cpu-only", {"NCCL_SOCKET_IFNAME": "^eth,lo"}, "NCCL_SOCKET_IFNAME=^eth,lo matches no interface here"),
    ("cpu-only", {"NCCL_SOCKET_IFNAME": "=eth"}, "NCCL_SOCKET_IFNAME==eth matches no interface here"),
    ("cpu-only", {"NCCL_SOCKET_IFNAME": "eth9,ib9"}, "NCCL_SOCKET_IFNAME=eth9,ib9 matches no interface here"),
    ("cpu-only", {"GLOO_SOCKET_IFNAME": "eth9"}, "GLOO_SOCKET_IFNAME=eth9 matches no interface here"),
    ("cpu-only", {"GLOO_SOCKET_IFNAME": "eth"}, "GLOO_SOCKET_IFNAME=eth matches no interface here (Gloo takes exact"),
    ("cpu-only", {"NCCL_IB_HCA": "mlx5_0"}, "NCCL_IB_HCA=mlx5_0 names RDMA devices, and this node has none"),
    ("hgx-h100", {"NCCL_IB_HCA": "=mlx5_0,mlx5_10"}, "mlx5_10 is not an RDMA device here (mlx5_0, "),
    ("hgx-h100", {"NCCL_IB_HCA": "=mlx5_0:2"}, "mlx5_0:2 is not a port here (mlx5_0:1, "),
    ("hgx-h100", {"NCCL_IB_HCA": "^mlx5"}, "NCCL_IB_HCA=^mlx5 excludes every RDMA device here"),
])
def test_a_kept_interface_or_hca_variable_naming_nothing_here_is_warned(tmp_path, tree, env, says):
    (tmp_path / "train.py").write_text("")
    full = {"PATH": os.environ["PATH"], **RANKED, **env}
    explained = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(SYNTHETIC / tree), "--explain", "--no-wait", "--json",
                             "--", "train.py"], env=full, cwd=tmp_path, timeout=60)
    assert any(says in w for w in json.loads(explained.stdout)["warnings"]), explained.stdout[-2000:]
    doctor = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--sysroot", str(SYNTHETIC / tree), "-o", "json"],
                         env=full, cwd=tmp_path, timeout=60)
    assert any(says in f["message"] for f in json.loads(doctor.stdout)["findings"]), doctor.stdout[-2000:]


def test_the_start_up_line_warns_of_an_interface_variable_naming_nothing(tmp_path):
    (tmp_path / "train.py").write_text("")
    started = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(SYNTHETIC / "cpu-only"), "--launcher", "command", "--",
                           "true"], env={"PATH": os.environ["PATH"], "GLOO_SOCKET_IFNAME": "eth9"}, cwd=tmp_path,
                          timeout=60)
    assert started.returncode == 0 and "warning: GLOO_SOCKET_IFNAME=eth9 matches no interface here" in \
        started.stderr, started.stderr


def test_a_kept_variable_naming_an_interface_here_is_not_warned(tmp_path):
    (tmp_path / "train.py").write_text("")
    full = {"PATH": os.environ["PATH"], **RANKED, "NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    explained = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(SYNTHETIC / "cpu-only"), "--explain", "--no-wait",
                             "--json", "--", "train.py"], env=full, cwd=tmp_path, timeout=60)
    assert not [w for w in json.loads(explained.stdout)["warnings"] if "matches no" in w], explained.stdout[-2000:]


# -- M6: every torchrun-style variable the plan will replace is weighed against it, as WORLD_SIZE is -----------


@pytest.mark.parametrize("name, wrong, right", [("LOCAL_WORLD_SIZE", "4", "1"), ("NPROC_PER_NODE", "8", "1"),
                                                ("LOCAL_RANK", "3", "0"), ("GROUP_RANK", "1", "0"),
                                                ("GROUP_WORLD_SIZE", "4", "2"), ("ROLE_RANK", "5", "0"),
                                                ("ROLE_WORLD_SIZE", "5", "2")])
def test_a_per_process_variable_the_plan_contradicts_is_refused_and_one_that_fits_noted(tmp_path, name, wrong, right):
    (tmp_path / "train.py").write_text("")
    env = {"PATH": os.environ["PATH"], **RANKED}
    argv = [*cli_run.ENTRYPOINT, "--sysroot", str(SYNTHETIC / "cpu-only"), "--explain", "--no-wait", "--", "train.py"]
    refused = cli_run.run(argv, env={**env, name: wrong}, cwd=tmp_path, timeout=60)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 3 and f"{name}={wrong} contradicts 2 node(s) x 1 process(es) per node" in said, said
    assert f"accepted (" in said and f"): {right}, or unset it" in said, said
    fits = cli_run.run(argv, env={**env, name: right}, cwd=tmp_path, timeout=60)
    assert fits.returncode == 0 and f"{name}={right} fits the plan" in fits.stdout, fits.stdout[-2000:] + fits.stderr


def test_a_per_process_variable_that_is_no_number_is_bad_input(tmp_path):
    (tmp_path / "train.py").write_text("")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(SYNTHETIC / "cpu-only"), "--explain", "--no-wait", "--",
                       "train.py"], env={"PATH": os.environ["PATH"], **RANKED, "LOCAL_WORLD_SIZE": "four"},
                      cwd=tmp_path, timeout=60)
    assert out.returncode == 2 and "LOCAL_WORLD_SIZE=four" in out.stdout + out.stderr, out.stdout + out.stderr


# -- M8: an option naming something that must exist on this machine is checked at dry run too ---------------

import shutil  # noqa: E402

from nodeweave.errors import UsageError  # noqa: E402


def stand_in_engine(folder: Path, monkeypatch, networks=("podman",), containers=()) -> None:
    """A podman on PATH answering `network inspect`, `network ls` and `container inspect` as the real one does."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "podman"
    tool.write_text("#!/bin/sh\n"
                    f'NETWORKS="{" ".join(networks)}"\nCONTAINERS="{" ".join(containers)}"\n'
                    'case "$1 $2" in\n'
                    '  "network ls") for n in $NETWORKS; do echo "$n"; done; exit 0;;\n'
                    '  "network inspect") for n in $NETWORKS; do [ "$n" = "$3" ] && echo "[{}]" && exit 0; done\n'
                    '    echo "Error: network $3: unable to find network with name or ID $3: network not found" >&2; '
                    'exit 125;;\n'
                    '  "container inspect") for n in $CONTAINERS; do [ "$n" = "$3" ] && echo "[{}]" && exit 0; done\n'
                    '    echo "Error: no such container $3" >&2; exit 125;;\n'
                    "esac\necho \"Error: unexpected $*\" >&2\nexit 125\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


@pytest.mark.parametrize("network, kind, says", [
    ("moon", "podman", "--network moon is not a network of podman here (podman, lab); accepted: host, none"),
    ("container:trainer-0", "podman", "--network container:trainer-0: podman has no container trainer-0"),
    ("ns:/run/netns/nope", "podman", "--network ns:/run/netns/nope: /run/netns/nope does not exist on this machine"),
    ("lab", "docker", "docker builds through BuildKit, which takes default, host, none"),
    ("private", "docker", "private is podman's"),
])
def test_a_build_network_that_does_not_exist_here_is_refused(tmp_path, monkeypatch, network, kind, says):
    from nodeweave.build import check_network_exists

    stand_in_engine(tmp_path, monkeypatch, networks=("podman", "lab"))
    with pytest.raises(UsageError) as refused:
        check_network_exists(network, kind, answered=True)
    assert says in str(refused.value), refused.value


@pytest.mark.parametrize("network", ["lab", "host", "none", "container:trainer-0", "ns:/proc/self/ns/net"])
def test_a_build_network_that_exists_here_is_accepted(tmp_path, monkeypatch, network):
    from nodeweave.build import check_network_exists

    stand_in_engine(tmp_path, monkeypatch, networks=("podman", "lab"), containers=("trainer-0",))
    assert check_network_exists(network, "podman", answered=True) is None


def test_a_dry_run_whose_engine_does_not_answer_notes_the_network_it_could_not_ask(capsys, job_folder, monkeypatch):
    assert run_cli(capsys, "render", "entrypoint", "--out", str(job_folder))[0] == 0
    bin_dir = job_folder / "bin"
    bin_dir.mkdir()
    for tool in ("podman", "docker"):
        (bin_dir / tool).write_text("#!/bin/sh\necho 'Error: cannot connect' >&2\nexit 125\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--network", "moon", "--dry-run")
    assert code == 0 and "--network moon: whether podman has this network could not be asked" in out, out + err


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed "
                    "(.ci/setup-engine.sh installs it): the real one answers whether the network exists")
def test_image_build_dry_run_refuses_a_network_the_real_engine_lacks(capsys, job_folder, monkeypatch):
    assert run_cli(capsys, "render", "entrypoint", "--out", str(job_folder))[0] == 0
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--network", "nodeweave-no-such-network", "--dry-run")
    if code == 0 and "could not be asked" in out:
        pytest.skip("podman does not answer on this machine")
    assert code == EXIT_USAGE and "is not a network of podman here" in one_line(err) and not out, out + err


# -- M9: every verb that starts work or reaches hosts has --dry-run, printing what it would do -----------------


def test_every_verb_that_starts_work_or_reaches_hosts_takes_dry_run(capsys):
    """The verbs that start processes or reach other machines (``nodeweave --help``'s list, read here)."""
    acting = ["init", "render", "up", "down", "run", "exec", "shell", "stop", "sync", "check", "bench", "doctor",
              "hosts probe", "image build"]
    for verb in acting:
        code, out, _ = run_cli(capsys, *verb.split(), "--help")
        assert code == 0 and "--dry-run" in out, verb


def test_hosts_probe_dry_run_prints_each_probe_and_reaches_no_host(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ssh, no podman: nothing could be reached
    code, out, err = run_cli(capsys, "hosts", "probe", "--node", "gpu01", "--node", "podman:trainer-0",
                             "--write-hostfile", "hostfile", "--dry-run")
    assert code == 0, err
    # the real probe script, inline (a dry run's lines can be pasted: left43b), not a PROBE stand-in
    assert "# probe ssh:gpu01" in out and "gpu01 -- 'python3 -c " in out and "PROBE" not in out, out
    assert "podman exec -i trainer-0 python3 -c " in out and "# would write hostfile" in out, out
    # the first host's tool is the first the real probe misses (ssh for gpu01; podman for trainer-0 after it)
    assert "the real probe would end with exit 3: ssh is not on PATH" in out, out
    assert not (tmp_path / "hostfile").exists()
    code, out, _ = run_cli(capsys, "hosts", "probe", "--node", "gpu01", "--dry-run", "-o", "json")
    assert code == 0 and json.loads(out)["verb"] == "hosts probe"


def test_bench_dry_run_prints_every_launch_and_starts_none(capsys, job_folder):
    # a GLOO_ variable: an NCCL_* sweep is refused on a machine without GPU (gloo reads none, walk5 W82)
    code, out, err = run_cli(capsys, "bench", "--nproc", "2", "--sweep", "GLOO_SOCKET_IFNAME=lo,eth0", "--dry-run")
    assert code == 0, err
    assert "# 3 launch(es) on this node" in out and out.count("-m nodeweave.entrypoint --") == 3, out
    assert "GLOO_SOCKET_IFNAME=eth0" in out and re.search(r"/runs/\d{8}T\d{6}Z-bench\.json", out), out  # beside the spec, said whole (walk9 A11)
    assert not (job_folder / "runs").exists()
    code, out, _ = run_cli(capsys, "bench", "--nproc", "2", "--dry-run", "-o", "json")
    assert code == 0 and [p["kind"] for p in json.loads(out)["phases"]] == ["commands", "files"]


def test_doctor_dry_run_prints_the_bench_launch_and_the_nodes_cluster_would_ask(capsys, job_folder, monkeypatch):
    code, out, err = run_cli(capsys, "doctor", "--bench", "--sysroot", str(CPU_ONLY), "--dry-run")
    assert code == 0 and "--ops all_reduce" in out and "nodeweave.entrypoint" in out, out + err
    code, out, err = run_cli(capsys, "doctor", "--cluster", "--node", "podman:trainer-1", "--dry-run")
    assert code in (0, 1) and "podman exec trainer-1 nodeweave-entrypoint --status --all" in out, out + err
    engine_with_nothing_up(job_folder, monkeypatch)
    code, out, err = run_cli(capsys, "doctor", "--cluster", "--dry-run")
    assert code == 0 and "the real doctor --cluster would end with exit 3: proj is not up" in out, out + err
    assert "podman exec proj-1 nodeweave-entrypoint --status --all" in out, out


# -- W3: a remote target's up notes an image its nodes cannot pull (localhost/...), naming --push -------------


@pytest.mark.parametrize("argv, who", [
    (["-t", "kubernetes"], "the cluster's nodes pull it"),
    (["-t", "slurm"], "pyxis/enroot on the compute nodes pull it"),
    (["-t", "hosts", "--host", "gpu01", "--host", "gpu02", "--remote-dir", "/srv/job"], "each host's engine"),
])
def test_up_on_a_remote_target_notes_an_image_only_this_machine_holds(capsys, job_folder, argv, who):
    code, out, err = run_cli(capsys, "up", *argv, "--dry-run")
    assert code == 0, err
    said = [line for line in out.splitlines() if "localhost/nodeweave/proj:cpu names localhost/" in line]
    assert len(said) == 1 and who in said[0] and "`nodeweave image build --push`" in said[0], out
    code, out, _ = run_cli(capsys, "up", *argv, "--dry-run", "-o", "json")
    assert any("names localhost/" in note for note in json.loads(out)["notes"])


def test_up_notes_no_pull_problem_for_a_registry_image_or_the_local_target(capsys, job_folder):
    assert "names localhost/" not in run_cli(capsys, "up", "--dry-run")[1]
    (job_folder / "nodeweave.yaml").write_text(SPEC.replace("image: {variant: cpu}",
                                                            "image: {variant: cpu, registry: registry.lab:5000/team}"))
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--dry-run")
    assert code == 0 and "names localhost" not in out + err, out + err


@pytest.mark.parametrize("ref, local", [("localhost/nodeweave/x:cpu", True), ("localhost:5000/x:1", True),
                                        ("127.0.0.1:5000/team/x", True), ("registry.lab:5000/x", False),
                                        ("nvcr.io/nvidia/pytorch:24.05-py3", False), ("ubuntu:22.04", False)])
def test_a_machine_local_image_name_is_told_from_a_registrys(ref, local):
    from nodeweave.cluster.pullable import machine_local

    assert machine_local(ref) is local


@pytest.mark.parametrize("text", ["[1, 2]", "5", "{not json"])
def test_a_nodes_damaged_run_record_does_not_crash_its_status_or_report(tmp_path, text):
    """The entrypoint's own readers of the node's runs folder (``--node status``, ``--node report``): a record
    that is not a mapping is no record, not a traceback."""
    folder = tmp_path / "nodeweave" / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(text)
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)}
    for args in (["--node", "status"], ["--node", "report", "r1"]):
        out = cli_run.run([*cli_run.ENTRYPOINT, *args], env=env, cwd=tmp_path, timeout=60)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stdout, out.stderr)
        json.loads(out.stdout)
