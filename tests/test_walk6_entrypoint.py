"""Walk 6 (issue 43), the entrypoint's plan: each finding fixed as a class and walked here.

- W44/W45: the plan never promises /metrics the node cannot serve: the endpoint rides on node 0's heartbeat,
  which a single node, the exchange switched off (any way) and a plain command lack; the spec and the
  entrypoint refuse a metrics setting given with the exchange off (``shared_rules.SWITCHED``).
- W12: a command that starts with an option the launcher does not take (a script's flags without the script)
  is refused, exit 2, by one rule (``consistency.no_script``) at the node's start, in its plan and in
  ``nodeweave run`` (a dry run too), naming the command to type; the launcher's own ``-m`` still passes.
- W7/W39: a node's sockets never sit on loopback while a peer is on another machine
  (``consistency.check_reachable_sockets``): a loopback interface chosen by hand (flag, variable, Gloo's or
  NCCL's own variable) is refused where the master is another machine; a master name /etc/hosts maps to
  loopback while the hostfile names a host that resolves to another machine moves the sockets to the default
  route's interface, warned (a name that resolves nowhere proves nothing: one-machine tests).
- W19: the plan's checkpoint line names what the finder passed over and why (a newer save cut short, a folder
  named like a save without its last file, a plain file whose name gives no step), found with the same scan
  node 0 runs (``recovery.setup.newest_checkpoint``), on saves torch itself writes.
- W3: the derived-token warning says who knows the job id where the node is (squeue on Slurm, everyone for the
  default 'nodeweave'), and a rendered job.sbatch says how a plain sbatch gets a real token.
- W8: the compose files carry the spec's name as NODEWEAVE_JOB_ID (a contract row: one mechanism), so a
  bare-hosts job is not known as 'nodeweave' to its token, rendezvous and metrics.
- W43: validate's summary offers "to start fewer" only where fewer is possible, and says when no /metrics will
  be served (one node, the exchange off, a plain command), in the entrypoint's words (``shared_rules``).
- W18: hold mode is said by the plan (``--explain``, the plan a holding node prints): ``now nothing``, ``then``
  each run's launch, and ``mode`` in the JSON, whichever way hold is asked for.

Each test fails on the code before these fixes. No container is started.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_run import in_a_folder_with_train_py
from nodeweave.cli import main

REPO = Path(__file__).resolve().parents[1]
TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}


entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


def _plan(entrypoint, env, argv=("--", "train.py")):
    code, out, err = entrypoint(["--explain", "--json", *argv], env)
    assert code == 0, err
    return json.loads(out)


UNSERVED = [  # (env, argv, the words of the reason)
    ({"NODEWEAVE_NNODES": "1", "NODE_RANK": "0"}, ("--", "train.py"), "single node"),
    (dict(TWO_NODES, NODEWEAVE_EXCHANGE="off"), ("--", "train.py"), "switched off by NODEWEAVE_EXCHANGE"),
    (dict(TWO_NODES, NODEWEAVE_WAIT_TIMEOUT="0"), ("--", "train.py"), "wait timeout 0"),
    (TWO_NODES, ("--launcher", "command", "--", "python3", "train.py"), "plain command"),
]


@pytest.mark.parametrize("env,argv,why", UNSERVED)
def test_the_plan_says_metrics_off_where_nothing_serves_them(entrypoint, env, argv, why):
    faults = _plan(entrypoint, env, argv)["faults"]
    assert faults["metrics"]["value"] == "off", faults["metrics"]
    assert why in faults["metrics"]["meaning"] and "heartbeat" in faults["metrics"]["meaning"]
    assert "metrics_port" not in faults  # no port promised to top and Prometheus


def test_the_plan_still_says_metrics_on_where_node_0_serves_them(entrypoint):
    faults = _plan(entrypoint, TWO_NODES)["faults"]
    assert faults["metrics"]["value"] == "on" and faults["metrics_port"]["value"] == 9464


def test_the_text_plan_says_why_metrics_are_off(entrypoint):
    code, out, _ = entrypoint(["--explain", "--", "train.py"], {"NODEWEAVE_NNODES": "1", "NODE_RANK": "0"})
    line = next(line for line in out.splitlines() if line.strip().startswith("metrics "))
    assert code == 0 and " off " in line and "single node" in line and "9464" not in out


SCRIPT_FLAGS = [("torchrun", ["--lr", "1e-3"]), ("deepspeed", ["--epochs=3"]), ("accelerate", ["-x", "1"])]


@pytest.mark.parametrize("launcher,command", SCRIPT_FLAGS)
def test_a_command_of_script_flags_alone_is_refused_in_the_plan_and_at_the_start(entrypoint, launcher, command):
    env = dict(TWO_NODES, NODEWEAVE_EXCHANGE="off")
    code, out, err = entrypoint(["--launcher", launcher, "--explain", "--", *command], env)
    assert code == 2 and "names no script" in out and f"-- SCRIPT {' '.join(command)}" in out, out
    code, out, err = entrypoint(["--launcher", launcher, "--", *command], env)  # the real start: refused first
    assert code == 2 and "names no script" in err and len(err.strip().splitlines()) == 1, err


def test_the_launchers_own_module_option_still_starts(entrypoint):
    plan = _plan(entrypoint, TWO_NODES, ("--", "-m", "pkg.train", "--lr", "1"))
    assert plan["launch"]["argv"][-4:] == ["-m", "pkg.train", "--lr", "1"]


SPEC = "name: w12\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: train.py}\n"


def test_nodeweave_run_and_its_dry_run_refuse_script_flags_naming_the_specs_script(tmp_path, monkeypatch, capsys):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    for argv in (["run", "--dry-run", "--", "--lr", "1e-3"], ["run", "--", "--lr", "1e-3"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and "nodeweave run -- train.py --lr 1e-3" in err and len(err.strip().splitlines()) == 1, err
    assert main(["run", "--dry-run", "--", "train.py", "--lr", "1e-3"]) == 0


HGX = REPO / "tests" / "fixtures" / "synthetic" / "hgx-h100"  # hgx-a01: eno1 10.10.0.11, hgx-a00 is 10.10.0.10


@pytest.mark.parametrize("argv,env", [(["--interfaces", "lo"], {}), ([], {"NODEWEAVE_INTERFACES": "lo"})])
def test_a_loopback_socket_interface_with_the_master_on_another_machine_is_refused(entrypoint, argv, env):
    env = dict(env, NODEWEAVE_NNODES="2", NODE_RANK="1", MASTER_ADDR="10.10.0.10")
    code, out, err = entrypoint(["--sysroot", str(HGX), *argv, "--explain", "--", "train.py"], env)
    assert code == 3, out + err
    assert "lo is loopback, but the master 10.10.0.10" in out and "eno1 (10.10.0.11)" in out, out


@pytest.mark.parametrize("variable,value,words", [("GLOO_SOCKET_IFNAME", "lo", "lo is loopback, but the master"),
                                                  ("NCCL_SOCKET_IFNAME", "=lo", "loopback cannot reach other nodes")])
def test_the_users_own_loopback_socket_variables_are_warned(entrypoint, variable, value, words):
    """The user's own NCCL/Gloo variables are judged (warned; doctor lists them), not refused."""
    env = {variable: value, "NODEWEAVE_NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.10.0.10"}
    plan = _plan(entrypoint, env, ("--sysroot", str(HGX), "--", "train.py"))
    assert any(words in str(w) for w in plan["warnings"]), plan["warnings"]


def test_loopback_sockets_stay_accepted_where_every_node_runs_on_this_machine(entrypoint):
    env = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "127.0.0.1"}
    code, out, err = entrypoint(["--sysroot", str(HGX), "--interfaces", "lo", "--explain", "--", "train.py"], env)
    assert code == 0 and "is loopback, but" not in out, out + err


def test_a_master_name_mapped_to_loopback_with_another_host_in_the_hostfile_uses_the_default_route(
        entrypoint, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(HGX, root, symlinks=True)
    (root / "etc" / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 hgx-a01\n10.10.0.12 hgx-a02\n")  # Debian's
    (tmp_path / "hosts").write_text("hgx-a01\nhgx-a02\n")
    code, out, err = entrypoint(["--sysroot", str(root), "--explain", "--json", "--", "train.py"],
                                {"NODEWEAVE_HOSTFILE": str(tmp_path / "hosts")})
    plan = json.loads(out)
    env = {row["name"]: row["value"] for row in plan["env"]}
    assert code == 0 and plan["node"]["interface"] == "eno1" and plan["node"]["local_ipv4"] == "10.10.0.11"
    assert env["GLOO_SOCKET_IFNAME"] == "eno1" and env["NCCL_SOCKET_IFNAME"] == "=eno1"
    assert any("resolves to loopback here" in str(w) and "hgx-a02" in str(w) for w in plan["warnings"])
    assert not any("every node runs here" in note for note in plan["topology"]["notes"])


@pytest.mark.parametrize("argv,env", [(["--mode", "hold"], {}), ([], {"NODEWEAVE_MODE": "hold"})])
def test_the_plan_says_hold_mode(entrypoint, argv, env):
    env = dict(env, NODEWEAVE_NNODES="2", NODE_RANK="1", MASTER_ADDR="127.0.0.1")
    code, out, err = entrypoint([*argv, "--explain", "--", "train.py"], env)
    launch = out.split("\nLaunch\n")[1].split("\n\n")[0]
    assert code == 0 and "now    nothing: hold mode" in launch and "then   each run: torchrun" in launch, launch
    assert _plan(entrypoint, env, [*argv, "--", "train.py"])["mode"] == "hold"
    assert _plan(entrypoint, dict(TWO_NODES))["mode"] == "run"


def _checkpoint_line(entrypoint, tmp_path):
    env = {"NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1", "NODEWEAVE_RECOVERY": "on",
           "NODEWEAVE_CHECKPOINT_DIR": "checkpoints"}
    return _plan(entrypoint, env)["faults"]["checkpoint_dir"]["meaning"]


def test_the_plan_names_what_the_checkpoint_finder_passed_over(entrypoint, tmp_path):
    torch = pytest.importorskip("torch")
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    torch.save({"w": torch.zeros(100)}, folder / "model.pt")  # saved over in place: whole, but no step
    (folder / "step-5").mkdir()
    (folder / "step-5" / "weights.pt").write_text("hi")
    line = _checkpoint_line(entrypoint, tmp_path)
    assert "none complete" in line and "passed over" in line, line
    assert "model.pt: a plain file whose name gives no step" in line and "ckpt_<step>.pt" in line, line
    assert "step-5: dcp: no .metadata" in line, line
    torch.save({"w": torch.zeros(100)}, folder / "ckpt_200.pt")
    torch.save({"w": torch.zeros(100)}, folder / "ckpt_300.pt")
    with open(folder / "ckpt_300.pt", "r+b") as cut:
        cut.truncate(300)
    line = _checkpoint_line(entrypoint, tmp_path)
    # the newest complete save, named as one from before this job (walk8 B9: "now: X" read as handed out)
    assert line.split("now: ")[1].startswith(f"nothing this job saved yet ({folder}/ckpt_200.pt (step 200)"), line
    assert "ckpt_300.pt: file: a zip (torch.save) without its end record: cut off mid-write" in line, line


def test_node_names_that_do_not_resolve_prove_no_peer_elsewhere(entrypoint, tmp_path):
    """A one-machine test's extra node names (a Slurm simulation's vm-nw2) resolve nowhere: loopback stays,
    warned, and the plan no longer says every node runs here."""
    root = tmp_path / "root"
    shutil.copytree(HGX, root, symlinks=True)
    (root / "etc" / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 hgx-a01\n")
    (tmp_path / "hosts").write_text("hgx-a01\nhgx-a01-nw2\n")
    code, out, err = entrypoint(["--sysroot", str(root), "--explain", "--json", "--", "train.py"],
                                {"NODEWEAVE_HOSTFILE": str(tmp_path / "hosts")})
    plan = json.loads(out)
    assert code == 0 and plan["node"]["interface"] == "lo", plan["node"]
    assert any("hgx-a01-nw2, which does not resolve here: if it is another machine" in str(w)
               for w in plan["warnings"]), plan["warnings"]
    assert not any("every node runs here" in note for note in plan["topology"]["notes"])


def _token_warning(entrypoint, env):
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    assert code == 0, out + err
    return next(str(w) for w in json.loads(out)["warnings"] if "check-in token is derived" in str(w))


def test_the_derived_token_warning_speaks_of_the_platform_the_node_is_on(entrypoint):
    slurm = {"SLURM_JOB_ID": "4242", "SLURM_NODEID": "1", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu[01-02]",
             "SLURMD_NODENAME": "gpu02"}
    line = _token_warning(entrypoint, slurm)
    assert "'4242'" in line and "squeue" in line and "pods" not in line and "compose" not in line, line
    line = _token_warning(entrypoint, TWO_NODES)
    assert "'nodeweave'" in line and "same for every job" in line, line


def test_the_compose_files_and_the_sbatch_script_carry_the_job(tmp_path, capsys):
    out = tmp_path / "out"
    for target in ("compose", "slurm"):
        assert main(["render", target, "--spec", str(REPO / "examples" / "rocm-bare-hosts.yaml"), "--out",
                     str(out)]) == 0
    capsys.readouterr()
    for name in ("node.yaml", "local.yaml"):
        text = (out / "compose" / name).read_text()
        assert "NODEWEAVE_JOB_ID: mi300-gemm" in text, name
    sbatch = (out / "slurm" / "job.sbatch").read_text()
    assert "A plain `sbatch` of" in sbatch and "NODEWEAVE_JOB_TOKEN_FILE" in sbatch


@pytest.mark.parametrize("text,fewer,why", [
    ("name: m\nimage: {variant: cpu}\nlauncher: {script: train.py}\n", False, "the check-in exchange is off (one node)"),
    ("name: m\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py, exchange: false}\n", True,
     "the check-in exchange is off (launcher.exchange: false)"),
    ("name: m\nimage: {variant: cpu}\nnodes: 2\nlauncher: {type: command, script: train.py}\n", True,
     "a plain command is exec'd with no heartbeat"),
    ("name: m\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n", True, None),
    ("name: m\nimage: {variant: cpu}\nlauncher: {script: train.py}\nmetrics: {enabled: false}\n", False, None),
])
def test_the_specs_summary_says_what_a_job_lacks_and_offers_fewer_only_where_possible(text, fewer, why):
    from nodeweave.spec import parse_spec

    starts = parse_spec(text).starts
    assert ("to start fewer" in starts) == fewer, starts
    assert (why in starts and "no /metrics for top, dashboard and Prometheus" in starts) if why else \
        "no /metrics" not in starts, starts
