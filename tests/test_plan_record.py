"""What a verb's ``--dry-run -o json`` prints is the plan its real run executes (issue 34, item 1).

Each case runs the same command twice: once with ``--dry-run -o json``, once for real with
``NODEWEAVE_PLAN_RECORD=<file>``, which makes the one executor (``nodeweave.cluster.execute``) write
the plan it walks; the two documents must be equal (steps, argv, env, waits, files with digests,
run folders, check phases). The real runs are real: bare hosts through the ssh stand-in
(tests/ssh_standin.py; each host runs its real entrypoint on this machine, 127.0.0.1-3 so node 0's
master port is reached), Kubernetes through the kubectl stand-in, and the local target on podman.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

import slurm_cluster
from one_machine import one_machine_env
from test_slurm import _port
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

HERE = Path(__file__).parent
SSH_STANDIN = HERE / "ssh_standin.py"
KUBECTL_STANDIN = HERE / "e2e" / "kubectl_standin.py"
HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")


def nodeweave(folder: Path, env: dict, *args: str, timeout: float = 300) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def with_flags(args, *flags):
    """``args`` with ``flags`` before a ``--`` (after it they would be the command's)."""
    cut = args.index("--") if "--" in args else len(args)
    return [*args[:cut], *flags, *args[cut:]]


def dry_and_real(folder: Path, env: dict, *args: str, ok=(0,)) -> "tuple[dict, dict]":
    """(the dry run's JSON, the plan the real run recorded) of the same command line."""
    dry = nodeweave(folder, env, *with_flags(args, "--dry-run", "-o", "json"))
    # a refusal certain from what the dry run read ends it with the real exit, after its plan (walk17a A8-A10)
    assert dry.returncode in ok, f"{args} --dry-run: exit {dry.returncode}\n{dry.stdout}\n{dry.stderr}"
    record = folder / f"plan-{args[0]}.json"
    record.unlink(missing_ok=True)
    real = nodeweave(folder, {**env, "NODEWEAVE_PLAN_RECORD": str(record)}, *args)
    assert real.returncode in ok, f"{args}: exit {real.returncode}\n{real.stdout[-3000:]}\n{real.stderr[-3000:]}"
    assert record.is_file(), f"{args}: the real run recorded no plan\n{real.stderr[-2000:]}"
    planned = json.loads(dry.stdout)
    planned.pop("would_move", None)  # sync's dry run: what each target answered it would be sent, beside the plan
    return planned, json.loads(record.read_text())


def assert_same(folder: Path, env: dict, *args: str, ok=(0,)) -> dict:
    dry, executed = dry_and_real(folder, env, *args, ok=ok)
    assert dry == executed, f"{args}: the dry run's plan differs from the executed one"
    return executed


SPEC = """name: planrec
image: {{variant: cpu}}
nodes: 3
gpus_per_node: 1
launcher: {{script: train.py, args: [--steps, '2', --log-every, '1'], master_port: {port}}}
"""


@pytest.fixture
def bare_hosts(tmp_path):
    """A spec folder with examples/train.py, ssh as the stand-in (hosts 127.0.0.1-3 under tmp/hosts, each with a
    TMPDIR of its own, so tests beside each other never see each other's runs, and what every node on this one
    machine needs: ``one_machine_env``), host flags."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC.format(port=_port()))
    shutil.copy(HERE.parent / "examples" / "train.py", tmp_path / "train.py")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {SSH_STANDIN} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin", "STANDIN_SSH_ROOT": str(tmp_path / "hosts"),
           "COLUMNS": "200", "HOME": home_beside(tmp_path), **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    root = tmp_path / "hosts"  # each host its own TMPDIR (its run records), as separate machines have
    root.mkdir()
    (root / "hosts.json").write_text(json.dumps({h: one_machine_env({"TMPDIR": str(root / f"tmp-{h}")})
                                                 for h in HOSTS}))
    for host in HOSTS:
        (root / f"tmp-{host}").mkdir()
    flags = ["--target", "hosts", "--engine", "none", "--remote-dir", str(tmp_path), *(f"--host={h}" for h in HOSTS)]
    return tmp_path, env, flags


def test_up_exec_run_stop_shell_down_on_bare_hosts_run_their_dry_runs_plan(bare_hosts):
    folder, env, flags = bare_hosts
    up = assert_same(folder, env, "up", *flags, "--timeout", "60")
    assert [p["kind"] for p in up["phases"]] == ["commands", "wait"]  # the tokens sent, then the wait
    assert up["phases"][1]["timeout"] == 60 and up["phases"][1]["request"] == "run"
    exec_ = assert_same(folder, env, "exec", "-e", "GREETING=hi", "--", "sh", "-c", "echo $GREETING")
    assert [n["node"] for n in exec_["phases"][0]["nodes"]] == ["node-0", "node-1", "node-2"]
    run = assert_same(folder, env, "run", "-e", "NCCL_DEBUG=WARN")
    (phase,) = run["phases"]
    assert phase["kind"] == "run" and phase["folder"].endswith("<UTC time>-planrec/")
    assert phase["request"]["env"] == {"NCCL_DEBUG": "WARN"} and phase["request"]["command"][0] == "train.py"
    assert all("<run-id>" in " ".join(n["argv"]) for n in phase["nodes"])
    assert len(list((folder / "runs").glob("*-planrec/run.json"))) == 1  # the dry run made no folder
    stop = assert_same(folder, env, "stop", "--grace", "3")
    assert stop["phases"][0]["kind"] == "stop" and stop["phases"][0]["timeout"] == 3
    # No terminal on the test's stdin: the shell is refused (exit 2, walk10 C6) after its plan was recorded.
    shell = assert_same(folder, env, "shell", "--node", "1", ok=(2,))
    assert shell["phases"][0]["nodes"][0]["reached_as"] == "ssh:127.0.0.2"
    down = assert_same(folder, env, "down")
    assert down["verb"] == "down" and down["phases"][0]["kind"] == "stop"  # bare hosts: down stops the runs


def test_a_sweep_runs_each_point_its_dry_run_prints(bare_hosts):
    folder, env, flags = bare_hosts
    assert nodeweave(folder, env, "up", *flags, "--timeout", "60").returncode == 0
    sweep = assert_same(folder, env, "run", "--sweep", "NCCL_DEBUG=WARN,INFO", "--metric", r"loss ([0-9.]+)")
    kinds = [p["kind"] for p in sweep["phases"]]
    assert kinds == ["sweep", "run", "run"]
    assert [p["point"] for p in sweep["phases"][1:]] == [{"NCCL_DEBUG": "WARN"}, {"NCCL_DEBUG": "INFO"}]
    (made,) = list((folder / "runs").glob("*-planrec-sweep"))
    assert len(json.loads((made / "sweep.json").read_text())["points"]) == 2


def test_check_and_run_check_run_the_check_their_dry_runs_print(bare_hosts):
    """The check's phase is in the plan: `run --check --dry-run` shows it, and the real run checks first."""
    pytest.importorskip("torch")
    folder, env, flags = bare_hosts
    assert nodeweave(folder, env, "up", *flags, "--timeout", "60").returncode == 0
    check = assert_same(folder, env, "check", "--seconds", "0.05", "--timeout", "120", ok=(0, 5))
    assert check["phases"][0]["kind"] == "check" and check["phases"][0]["request"]["seconds"] == 0.05
    both = assert_same(folder, env, "run", "--check", ok=(0, 5))
    assert [p["kind"] for p in both["phases"]] == ["check", "run"]
    assert len(list((folder / "runs").glob("*-planrec-check"))) == 2


def test_down_on_kubernetes_runs_its_dry_runs_plan(tmp_path):
    """The kubectl stand-in (tests/e2e/kubectl_standin.py; its delete -k builds the tree with the real kubectl's
    kustomize): the deletes are the dry run's, argv for argv, claims kept or deleted as planned. (Its apply plays
    pods on podman: `up` on Kubernetes is compared in tests/e2e, where the engine runs.)"""
    real = shutil.which("kubectl")
    if real is None:
        pytest.skip("kubectl is not installed (.ci/setup-tools.sh installs it)")
    (tmp_path / "nodeweave.yaml").write_text(SPEC.format(port=_port()) + "kubernetes: {namespace: ml}\n")
    state, bin_dir = tmp_path / "standin", tmp_path / "bin"
    state.mkdir()
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} {KUBECTL_STANDIN} \"$@\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "COLUMNS": "200", "HOME": home_beside(tmp_path), "STANDIN_STATE": str(state),
           "STANDIN_REAL_KUBECTL": real, **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    down = assert_same(tmp_path, env, "down", "-t", "kubernetes")
    written = [f["path"] for p in down["phases"] for f in p.get("files", [])]  # the tree delete -k reads
    assert ".nodeweave/planrec/kube/manifests/nodeweave-up/kustomization.yaml" in written, written
    deletes = [s["argv"] for p in down["phases"] for s in p.get("steps", [])]
    assert deletes[0][:5] == ["kubectl", "delete", "-n", "ml", "-k"] and len(deletes) == 2  # the tree, the tokens
    claims = assert_same(tmp_path, env, "down", "-t", "kubernetes", "--delete-claims")
    assert any("pvc" in s["argv"] for p in claims["phases"] for s in p.get("steps", []))


SLEEPER = "localhost/nwplanrec:sleeper"
# train.py is the containers' first process: it ends on SIGTERM (a first process without a handler ignores it,
# and `down` then waited out the whole grace period, 120 s, before its SIGKILL)
SLEEPER_FILE = ("FROM localhost/nodeweave-base:bookworm\n"
                "RUN printf '#!/bin/sh\\ntrap \"exit 0\" TERM\\nsleep 600 & wait\\n' > /usr/local/bin/train.py"
                " && chmod 755 /usr/local/bin/train.py\n")


@pytest.mark.engine
def test_up_and_down_on_this_machine_write_the_files_their_dry_runs_plan(tmp_path):
    """podman compose: the job's compose file (its size and digest) and token are the dry run's; the dry run
    wrote neither (else the real plan would not list the compose file as new). The nodes are the local base
    image whose `train.py` sleeps (no entrypoint in it, so no wait: the containers run, as the plan says)."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (.ci/setup-engine.sh installs it)")
    built = subprocess.run(["podman", "build", "-q", "-t", SLEEPER, "-f", "-", str(tmp_path)], input=SLEEPER_FILE,
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (tmp_path / "nodeweave.yaml").write_text(SPEC.format(port=_port()).replace("nodes: 3", "nodes: 2")
                                             .replace("planrec", "nwplanrec"))
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("NODEWEAVE_PLAN_RECORD", None)
    try:
        up = assert_same(tmp_path, env, "up", "--engine", "podman", "--hold", "--no-wait",
                         "--image", SLEEPER)
        (files,) = [p for p in up["phases"] if p["kind"] == "files"]
        compose, token = files["files"]
        written = (tmp_path / compose["path"]).read_bytes()
        assert compose["size"] == len(written) and compose["what"].startswith("new")
        assert compose["digest"] == "sha256:" + __import__("hashlib").sha256(written).hexdigest()
        assert token["path"] == ".nodeweave/nwplanrec/job-token" and token["digest"] is None
        # as root: root's and group 0's, for the images' user's group 0, never UID 1000's (walk15a A15)
        mode = 0o440 if os.geteuid() == 0 else 0o600
        assert (tmp_path / token["path"]).stat().st_mode & 0o777 == int(token["mode"], 8) == mode
        down = assert_same(tmp_path, env, "down", "--engine", "podman")
        # the compose file is there: nothing to write; the token up wrote is taken back once the nodes are gone
        assert [p["kind"] for p in down["phases"]] == ["commands", "remove"]
        assert not (tmp_path / token["path"]).exists()
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", "nwplanrec-0", "nwplanrec-1"], capture_output=True)
        subprocess.run(["podman", "network", "rm", "-f", "nwplanrec-local_nodeweave"], capture_output=True)


@pytest.mark.skipif(slurm_cluster.problem() is not None, reason=str(slurm_cluster.problem()))
@pytest.mark.slow
def test_up_run_stop_and_down_on_slurm_run_their_dry_runs_plan(slurm, tmp_path):
    """The local Slurm (tests/slurm_cluster.py): `up`'s plan takes nothing while it is made; the allocation is its
    `allocate` step (salloc), the later steps name the job and nodes <job-id>, <node0>, <node1> (the executor fills
    them in); a run is one srun step, and the step's argv is the dry run's (``<run-id>`` where the id goes);
    stop and scancel as planned."""
    from test_slurm_target import _per_node_tmpdir

    (tmp_path / "nodeweave.yaml").write_text(SPEC.format(port=_port()).replace("nodes: 3", "nodes: 2")
                                             .replace("planrec", "planrecslurm")
                                             + 'slurm: {runtime: host, partition: debug, time: "10:00", '
                                               'exclusive: false}\n')
    shutil.copy(HERE.parent / "examples" / "train.py", tmp_path / "train.py")
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}
    jobs = ["squeue", "-h", "-n", "planrecslurm", "-o", "%i"]
    dry = nodeweave(tmp_path, env, "up", "--target", "slurm", "--timeout", "120", "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert subprocess.run(jobs, capture_output=True, text=True, env=env).stdout.strip() == ""  # took nothing
    try:
        up = assert_same(tmp_path, env, "up", "--target", "slurm", "--timeout", "120")
        assert [p["kind"] for p in up["phases"]] == ["allocate", "commands", "wait"]
        assert up["phases"][0]["steps"][0]["argv"][:2] == ["salloc", "--no-shell"]
        tokens = [s["argv"] for s in up["phases"][1]["steps"]]
        assert "--jobid=<job-id>" in tokens[0] and "--nodelist=<node1>" in tokens[1]
        (job,) = subprocess.run(jobs, capture_output=True, text=True, env=env).stdout.split()  # the step took it
        assert json.loads((tmp_path / ".nodeweave" / "planrecslurm" / "cluster.json").read_text())["slurm_job"] == job
        run = assert_same(tmp_path, env, "run", "--", "train.py", "--steps", "2", "--expect-world", "2")
        (launch,) = run["phases"][0]["nodes"]
        assert launch["node"] == "every node at once" and launch["argv"][0] == "srun"
        stop = assert_same(tmp_path, env, "stop", "--grace", "3")
        assert [n["node"] for n in stop["phases"][0]["nodes"]] == ["node-0", "node-1"]
    finally:
        down = assert_same(tmp_path, env, "down")
    assert [s["argv"][0] for p in down["phases"] for s in p["steps"]][-1] == "scancel"


def test_sync_to_bare_hosts_runs_its_dry_runs_plan(bare_hosts):
    """sync's plan is one agent exec per target (``SYNC_AGENT`` where the agent's program goes), SRC, DEST and the
    options as its request: the real sync records the very plan its dry run prints, and moves the files; --check
    plans execs that write nothing (``dry``)."""
    folder, env, _ = bare_hosts
    src = folder / "ws"
    src.mkdir()
    (src / "train.py").write_text("print('hi')\n")
    targets = [f"--node=ssh:{h}" for h in HOSTS[:2]]
    sync = assert_same(folder, env, "sync", str(src), "~/ws", *targets)
    (phase,) = sync["phases"]
    assert phase["kind"] == "sync" and [n["node"] for n in phase["nodes"]] == ["ssh:127.0.0.1", "ssh:127.0.0.2"]
    assert all("SYNC_AGENT" in " ".join(n["argv"]) and n["argv"][-1].endswith(" make") for n in phase["nodes"])
    assert phase["request"]["files"] == 1 and phase["request"]["options"]["dry_run"] is False
    for host in HOSTS[:2]:
        assert (folder / "hosts" / host / "ws" / "train.py").read_text() == "print('hi')\n"
    check = assert_same(folder, env, "sync", str(src), "~/ws", *targets, "--check")
    assert all(n["argv"][-1].endswith(" dry") for n in check["phases"][0]["nodes"])


IMAGE_SPEC = """name: nwplanrec-image
image: {variant: cpu, registry: localhost/nwplanrec}
nodes: 2
gpus_per_node: 2
launcher: {script: allreduce.py}
"""


@pytest.mark.engine
@pytest.mark.slow
def test_image_build_runs_the_steps_its_dry_run_prints(tmp_path):
    """podman: the dry run's build argv is the one the real build runs (before, the real build went through
    python-on-whales with its own arguments), after the Dockerfile rendered for the spec, written by the plan."""
    base = subprocess.run(["podman", "image", "exists", "localhost/nodeweave-base:bookworm"]) if shutil.which(
        "podman") else None
    if base is None or base.returncode != 0:
        pytest.skip("podman and localhost/nodeweave-base:bookworm are needed (.ci/make-base-image.sh)")
    if not any((HERE.parent / "wheelhouse").glob("torch-*.whl")):  # an --offline build installs torch from it
        pytest.skip("the checkout's wheelhouse/ holds no torch wheel for the offline build "
                    "(bash .ci/wheelhouse.sh cpu fills it, as make demo and CI do)")
    (tmp_path / "nodeweave.yaml").write_text(IMAGE_SPEC)
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("NODEWEAVE_PLAN_RECORD", None)
    args = ("image", "build", "cpu", "--context", str(HERE.parent), "--base", "localhost/nodeweave-base:bookworm",
            "--offline", "--network", "host", "--quiet", "--engine", "podman", "--tag", "planrec")
    try:
        built = assert_same(tmp_path, env, *args)
        (build,) = [p for p in built["phases"] if p["kind"] == "build"]
        (step,) = build["steps"]
        assert step["argv"][:3] == ["podman", "buildx", "build"] and step["argv"][-1] == str(HERE.parent)
        file_at = step["argv"][step["argv"].index("--file") + 1]
        planned = [f for p in built["phases"] for f in p.get("files", [])]
        if planned:  # the context's Dockerfile is not this spec's rendering: the plan wrote it, as it says
            assert file_at == str(tmp_path / planned[0]["path"]) and Path(file_at).stat().st_size == planned[0]["size"]
        labels = subprocess.run(["podman", "image", "inspect", "--format", "{{json .Labels}}",
                                 "localhost/nwplanrec/nwplanrec-image:planrec"], capture_output=True, text=True)
        assert json.loads(labels.stdout)["io.nodeweave.job"] == "nwplanrec-image"
    finally:
        subprocess.run(["podman", "rmi", "-f", "localhost/nwplanrec/nwplanrec-image:planrec",
                        "localhost/nwplanrec/nwplanrec-image:cpu"], capture_output=True)


def test_render_prune_records_the_file_plan_its_dry_run_prints(tmp_path):
    """render's plan is a nodeweave.plan.Plan of one ``render`` phase (each file's path, bytes, status, sha256;
    ``prune`` in it): the real `render --prune` goes through the one executor, which records the plan its
    `--dry-run -o json` prints, and removes what it says."""
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("NODEWEAVE_PLAN_RECORD", None)
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC.format(port=_port()).replace("nodes: 3", "nodes: 2\nhosts: [gpu01, gpu02]"))
    assert nodeweave(tmp_path, env, "render", "compose").returncode == 0
    spec.write_text(SPEC.format(port=_port()).replace("nodes: 3", "nodes: 2"))  # compose/hosts: no longer made
    kept = nodeweave(tmp_path, env, "render", "compose", "--dry-run").stdout.splitlines()
    gone = nodeweave(tmp_path, env, "render", "compose", "--dry-run", "--prune").stdout.splitlines()
    assert [line.split()[0] for line in kept if line.endswith(" compose/hosts")] == ["obsolete"]  # left as it is
    assert [line.split()[0] for line in gone if line.endswith(" compose/hosts")] == ["remove"]
    done = assert_same(tmp_path, env, "render", "compose", "--prune")
    (phase,) = done["phases"]
    assert done["verb"] == "render" and phase["kind"] == "render" and phase["prune"] is True
    assert {f["path"]: f["status"] for f in phase["files"]}["compose/hosts"] == "obsolete"
    assert not (tmp_path / "compose" / "hosts").exists()


def test_run_spawns_exactly_the_argv_its_dry_run_printed(bare_hosts):
    """`run --dry-run -o json` prints each node's argv with <run-id> for the run's id; the real run's exec clients are
    those argv, word for word, with the id filled in. The witness is outside nodeweave: ssh on PATH is a wrapper
    that appends the argv it was started with to a file, then runs the stand-in (a real subprocess each)."""
    folder, env, flags = bare_hosts
    seen = folder / "ssh-argv.jsonl"
    wrapper = folder / "bin" / "ssh"
    wrapper.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                       f"open({str(seen)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
                       f"os.execv({sys.executable!r}, [{sys.executable!r}, {str(SSH_STANDIN)!r}, *sys.argv[1:]])\n")
    assert nodeweave(folder, env, "up", *flags, "--timeout", "60").returncode == 0
    dry = nodeweave(folder, env, "run", "-e", "GREETING=hi", "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    (phase,) = json.loads(dry.stdout)["phases"]
    planned = [n["argv"] for n in phase["nodes"]]
    seen.unlink()
    real = nodeweave(folder, env, "run", "-e", "GREETING=hi")
    assert real.returncode == 0, real.stderr[-3000:]
    (made,) = list((folder / "runs").glob("*-planrec"))
    run_id = json.loads((made / "run.json").read_text())["run_id"]
    started = [json.loads(line) for line in seen.read_text().splitlines()]
    launches = [["ssh", *argv[1:]] for argv in started if "--mode run" in " ".join(argv)]
    expected = [[word.replace("<run-id>", run_id) for word in argv] for argv in planned]
    assert sorted(launches) == sorted(expected) and len(launches) == 3, (launches, expected)
