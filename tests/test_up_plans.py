"""``up`` says "plans agree" only over plans that exist: a node whose plan fails makes ``up`` fail, named.

Bare hosts (``--engine none``) over the ssh stand-in (tests/ssh_standin.py: each host is a folder here,
commands run by bash as sshd would), so every node's real ``nodeweave-entrypoint --node status`` plans
on this machine. With ``network.interfaces: [ib9]``, which no host has, every plan fails; a failed plan
has no hash, and before the fix one ``None`` read as agreement ("3 node(s) up ...; plans agree", exit 0).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
STANDIN = Path(__file__).parent / "ssh_standin.py"
SPEC = """name: lan
image: {variant: cpu}
nodes: 3
gpus_per_node: 1
launcher: {script: train.py}
"""


@pytest.fixture
def lan(tmp_path):
    """A spec folder, the env whose ssh is the stand-in (hosts desk1..3 under tmp/hosts), the host flags."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('train')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin", "STANDIN_SSH_ROOT": str(tmp_path / "hosts"),
           "COLUMNS": "200", "HOME": home_beside(tmp_path), **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    flags = ["--target", "hosts", "--engine", "none", "--remote-dir", str(tmp_path / "job"),
             "--host", "desk1", "--host", "desk2", "--host", "desk3"]
    return tmp_path, env, flags


def nodeweave(folder: Path, env: dict, *args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([*NODEWEAVE, *args], capture_output=True, text=True, cwd=folder, env=env, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_up_on_bare_hosts_whose_plans_all_fail_fails_naming_each_node(lan):
    folder, env, flags = lan
    spec = folder / "nodeweave.yaml"
    spec.write_text(SPEC + "network: {interfaces: [ib9]}\n")
    out = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert out.returncode == 1, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "plans agree" not in out.stdout + out.stderr
    assert "3 plan(s) FAIL" in out.stdout + out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("nodeweave: error: 3 of 3 node(s) cannot start: node-0 (ssh:desk1): its plan fails: ")
    assert "ib9" in last and "node-2 (ssh:desk3)" in last and "Traceback" not in out.stderr


def test_up_on_bare_hosts_with_good_plans_agrees(lan):
    folder, env, flags = lan
    out = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "3 node(s) up and answer (bare hosts: nothing held)" in out.stdout and "plans agree" in out.stdout


def test_up_after_down_needs_no_flags_again(tmp_path):
    """down keeps what up was told (.nodeweave/cluster.json): the next `up` alone goes to the same cluster.

    Kubernetes through the kubectl stand-in (tests/e2e/kubectl_standin.py; its `delete -k` builds the tree
    with the real kubectl's kustomize): up's record is written as `up -t kubernetes -n night` writes it.
    """
    from nodeweave.cluster.options import ClusterOptions, load_state, save_state

    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC + "kubernetes: {namespace: ml}\n")
    state, bin_dir = tmp_path / "standin", tmp_path / "bin"
    state.mkdir()
    bin_dir.mkdir()
    standin = Path(__file__).parent / "e2e" / "kubectl_standin.py"
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} {standin} \"$@\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    real = shutil.which("kubectl")
    if real is None:
        pytest.skip("kubectl is not installed (.ci/setup-tools.sh installs it)")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "COLUMNS": "200", "HOME": home_beside(tmp_path), "STANDIN_STATE": str(state),
           "STANDIN_REAL_KUBECTL": real, **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    remembered = ClusterOptions(target="kubernetes", namespace="night").checked()
    save_state(spec, "lan", remembered)
    down = nodeweave(tmp_path, env, "down")
    assert down.returncode == 0 and "lan is down (kubectl namespace night" in down.stdout, down.stdout + down.stderr
    assert load_state(spec, "lan") == remembered
    again = nodeweave(tmp_path, env, "up", "--dry-run")
    assert again.returncode == 0 and "kubectl apply -n night -k" in again.stdout, again.stdout + again.stderr


def test_an_openshift_spec_makes_kubernetes_the_first_ups_target(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC + "kubernetes: {namespace: ml, openshift: true}\n")
    (tmp_path / "train.py").write_text("print(1)\n")  # a dry run ends with a missing script's exit 2 (walk17a A8)
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": home_beside(tmp_path),
           **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    out = nodeweave(tmp_path, env, "up", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "oc apply -n ml -k" in out.stdout and "compose" not in out.stdout
    local = nodeweave(tmp_path, env, "up", "--dry-run", "-t", "local")
    assert local.returncode == 0 and "compose" in local.stdout, local.stdout + local.stderr


def test_the_lan_seeds_uneven_gpu_counts_through_up_status_and_run(lan):
    """Seed 004's LAN: desktops with 1, 1 and 2 GPUs (synthetic sysroots, one per stand-in host), torchrun,
    gpus_per_node auto and no `nodes:` (the hosts given set the count): every node plans its own count; `up`
    and `status` call that one plan, not a disagreement (status shows each node's processes); `run` trains
    examples/train.py on all three (gloo on this machine's CPU: the sysroots only say what GPUs there are),
    world size 4 = 1 + 1 + 2.

    The hosts are 127.0.0.1-3 (loopback addresses all reach this machine, so node 0's master port does). torchrun,
    not the seed's DeepSpeed: a node planning from a captured tree has its check-in off, and DeepSpeed's hostfile
    needs the check-in for uneven counts (a plan that says so fails `up`, as the tests above show)."""
    import json
    import shutil

    from test_slurm import _port

    folder, env, _ = lan
    synthetic = Path(__file__).parent / "fixtures" / "synthetic"
    hosts = {"127.0.0.1": "desktop-rtx4090", "127.0.0.2": "desktop-rtx3090", "127.0.0.3": "desktop-2x3090"}
    root = Path(env["STANDIN_SSH_ROOT"])
    root.mkdir()
    (root / "hosts.json").write_text(json.dumps({h: {"NODEWEAVE_SYSROOT": str(synthetic / t)} for h, t in hosts.items()}))
    shutil.copy(Path(__file__).parent.parent / "examples" / "train.py", folder / "train.py")
    (folder / "nodeweave.yaml").write_text(f"name: lan\nimage: {{variant: cuda12}}\nlauncher: {{script: train.py, "
                                           f"args: [--steps, '3'], master_port: {_port()}}}\n")
    flags = ["--target", "hosts", "--engine", "none", "--remote-dir", str(folder), *(f"--host={h}" for h in hosts)]
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "3 node(s) up and answer (bare hosts: nothing held)" in up.stdout and "; plans agree" in up.stdout
    status = nodeweave(folder, env, "status", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["plans_agree"] is True
    assert [(r["node"], r["reached_as"], r["rank"], r["procs"]) for r in data["nodes"]] == [
        ("node-0", "ssh:127.0.0.1", 0, 1), ("node-1", "ssh:127.0.0.2", 1, 1), ("node-2", "ssh:127.0.0.3", 2, 2)]
    run = nodeweave(folder, env, "run")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    done = re.findall(r"\[rank (\d)/4 node (\d)\] done: world_size=4 backend=gloo final_loss=[0-9.]+ ok", run.stdout)
    assert sorted(done) == [("0", "0"), ("1", "1"), ("2", "2"), ("3", "2")], run.stdout  # two ranks on the 2-GPU desk
    assert "node 2 of 3, 2 process(es) each" in run.stdout and "node 1 of 3, 1 process(es) each" in run.stdout


def test_init_over_uneven_hosts_writes_auto_where_the_launcher_takes_uneven_counts(lan):
    """`init --host` probes each stand-in host (its own sysroot: 1, 1 and 2 GPUs): torchrun and DeepSpeed get
    `gpus_per_node: auto`, accelerate (one total before the check-in) the smallest count, with the reason."""
    import json

    folder, env, _ = lan
    synthetic = Path(__file__).parent / "fixtures" / "synthetic"
    hosts = {"ws-02": "desktop-rtx4090", "ws-03": "desktop-rtx3090", "ws-01": "desktop-2x3090"}
    root = Path(env["STANDIN_SSH_ROOT"])
    root.mkdir()
    (root / "hosts.json").write_text(json.dumps({h: {"NODEWEAVE_SYSROOT": str(synthetic / t)} for h, t in hosts.items()}))
    host_flags = [f"--host={h}" for h in hosts]
    for launcher, line in (("deepspeed", "gpus_per_node: auto  # processes per node: one per GPU each node has "
                            "(1, 1, 2; uneven counts: deepspeed takes them)"),
                           ("accelerate", "gpus_per_node: 1  # processes per node: the smallest of 1, 1, 2 "
                            "(accelerate needs one count on every node)")):
        out = nodeweave(folder, env, "init", "--force", "--launcher", launcher, *host_flags)
        assert out.returncode == 0, out.stderr
        text = (folder / "nodeweave.yaml").read_text()
        assert line in text.splitlines(), text
        assert "variant: cuda12" in text and "  - ws-02\n  - ws-03\n  - ws-01\n" in text


def test_a_home_relative_remote_dir_is_each_hosts_own_home(lan):
    """--remote-dir ~/aorta: every ssh command names "$HOME"/'aorta', expanded by each host's shell; the token,
    the node's folder and its variables land under that host's home (the stand-in's hosts have their own)."""
    folder, env, flags = lan
    at = flags.index("--remote-dir")
    flags = [*flags[:at], "--remote-dir", "~/aorta", *flags[at + 2:]]
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60", "--json")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "3 hosts over ssh (bare hosts, ~/aorta)" in up.stderr
    homes = Path(env["STANDIN_SSH_ROOT"])
    for host in ("desk1", "desk2", "desk3"):
        token = homes / host / "aorta" / ".nodeweave" / "lan" / "job-token"
        assert token.is_file() and token.stat().st_mode & 0o777 == 0o600, host
    assert not list(homes.rglob("~")), "no folder named '~' anywhere: the shell expanded it"
    where = nodeweave(folder, env, "exec", "--", "sh", "-c", 'echo "$PWD $NODEWEAVE_JOB_TOKEN_FILE"')
    assert where.returncode == 0, where.stderr
    for host in ("desk1", "desk2", "desk3"):
        home = homes / host
        assert f"{home}/aorta {home}/aorta/.nodeweave/lan/job-token" in where.stdout, where.stdout


@pytest.mark.parametrize("value", ["~", "~/../etc", "~/a b", "~user/x", "relative/x"])
def test_a_remote_dir_that_is_no_folder_under_home_or_absolute_is_refused(lan, value):
    folder, env, flags = lan
    at = flags.index("--remote-dir")
    out = nodeweave(folder, env, "up", *flags[:at], "--remote-dir", value, *flags[at + 2:], "--dry-run")
    assert out.returncode == 2 and "--remote-dir" in out.stderr and "Traceback" not in out.stderr, out.stderr
