"""Rows the seventeenth session fixed itself (the walk's fixers have files of their own)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nodeweave.errors import NodeweaveError


def _stop_with(monkeypatch, tmp_path, reports):
    """``cli.cluster._stop`` on a plan whose execution answered ``reports`` (one per node), as the engine would."""
    import nodeweave.cluster.execute as execute
    from rich.console import Console

    from nodeweave.cli import cluster

    nodes = [SimpleNamespace(node=f"node-{i}", reached_as=f"pod:ml/job-{i}") for i in range(len(reports))]
    done = SimpleNamespace(outcomes={"stop": [list(zip(nodes, reports))]})
    monkeypatch.setattr(execute, "execute", lambda plan, how: done)
    out = Console(file=(tmp_path / "out.txt").open("w"), width=200)
    return cluster._stop(SimpleNamespace(phases=()), tmp_path, out, "table")


MAIN = {"stopped": [], "left": False, "main": [{"pid": 1, "main": True}],
        "error": "this node runs its job as its main command (run mode: ...)"}


def test_a_stop_that_stopped_nothing_on_a_node_is_no_success(monkeypatch, tmp_path):
    """`nodeweave stop` on nodes whose job runs as their main command named it on every node and exited 0, as a stop
    that worked; a node that answered an error likewise. Every line printed, then exit 3 (run mode: what the machine
    runs, as `refuse_run_mode` says it) or 1 (a node that failed to stop)."""
    with pytest.raises(NodeweaveError, match=r"stop did not stop what runs on 2 of 2 node\(s\) \(node-0, node-1;") as \
            said:
        _stop_with(monkeypatch, tmp_path, [MAIN, MAIN])
    assert said.value.exit_code == 3
    assert (tmp_path / "out.txt").read_text().count("runs its job as its main command") == 2
    with pytest.raises(NodeweaveError, match=r"on 1 of 2 node\(s\) \(node-1;") as said:
        _stop_with(monkeypatch, tmp_path, [{"stopped": [], "left": False}, {"error": "exit 255", "left": None}])
    assert said.value.exit_code == 1
    stopped = {"stopped": [{"run_id": "r1", "processes": 3, "killed": False}], "left": False}
    assert _stop_with(monkeypatch, tmp_path, [stopped, {"stopped": [], "left": False}]) is True  # "no run": fine


def test_the_first_words_of_one_option_are_offered_as_that_option(tmp_path):
    """`sync --include` / `run --dry` (argparse's habit of abbreviations, torchrun's `--nproc`) got no hint; the
    whole first words of exactly one option offer it, a word cut short does not (`--name` is no --namespace)."""
    import subprocess
    import sys

    from nodeweave.cli.habits.base import close_options

    assert close_options("--dry", ["--dry-run", "--spec"]) == ["--dry-run"]
    assert close_options("--kube", ["--kube-cli", "--kube-context"]) == []  # two: not one to offer
    assert close_options("--name", ["--namespace", "--node"]) == []
    from cli_run import nodeweave

    said = nodeweave("sync", "--include", cwd=tmp_path)
    assert said.returncode == 2 and "(did you mean --include-secrets?)" in said.stderr, said.stderr


def test_a_node_that_holds_is_no_job_run_as_its_main_command(tmp_path):
    """walk16a A3/A14: after `up --hold` (compose starts PID 1 with NODEWEAVE_MODE=hold, no flag), `stop` named the
    holding entrypoint "a job run as the node's main command" and told the user to `up --hold`; now only a run-mode
    entrypoint is named. Hold mode is read from the flag (`--mode hold`, `--mode=hold`) or the process's environment."""
    import os
    import subprocess
    import sys
    import time

    from nodeweave.entrypoint.running.runstate import main_runs

    fake = tmp_path / "bin" / "nodeweave-entrypoint"
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    ours = tmp_path / "node0"
    env = dict(os.environ, TMPDIR=str(ours))
    started = [subprocess.Popen([sys.executable, str(fake)], env=dict(env, NODEWEAVE_MODE="hold")),
               subprocess.Popen([sys.executable, str(fake), "--mode", "hold"], env=env),
               subprocess.Popen([sys.executable, str(fake), "--mode=hold"], env=env)]
    job = subprocess.Popen([sys.executable, str(fake), "--mode", "run", "--", "train.py"], env=env)
    try:
        time.sleep(0.5)
        assert [m["pid"] for m in main_runs({"TMPDIR": str(ours)})] == [job.pid]
    finally:
        for proc in [*started, job]:
            proc.kill()
            proc.wait()


def _explain(cwd, folder):
    import os
    import subprocess
    import sys

    env = {"PATH": os.environ["PATH"], "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1",
           "NODEWEAVE_CHECKPOINT_DIR": folder, "NODEWEAVE_MASTER_ADDR": "127.0.0.1", "NODEWEAVE_NODE_RANK": "1",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    from cli_run import entrypoint

    return entrypoint("--explain", "--", "train.py", cwd=cwd, env=env)


def test_a_checkpoint_folder_is_judged_where_it_is_not_by_its_spelling(tmp_path):
    """walk16b B5/B6: `/tmp/ws/ck` was warned as each container's own /tmp; `ck` in the workspace /tmp/ws (the same
    folder) and a link leading into /tmp were not. The folder is judged where it is on the node."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "elsewhere")
    for spelt in ("ck", str(tmp_path / "ws" / "ck"), "link"):
        said = _explain(tmp_path / "ws", spelt).stdout
        assert "is in /tmp, which each container has to itself" in said, (spelt, said)
    assert f"link (on this node {tmp_path / 'elsewhere'}) is in /tmp" in said


def test_a_checkpoint_folder_no_save_can_be_made_in_is_refused(tmp_path):
    """walk16b B23/B24: a 5000-character value, a name over 255 bytes and a newline inside were accepted (rc 0, the
    Faults table broken over two lines) though every save there fails; each is one line, exit 2."""
    for value, why in (("a" * 5000, "is 5000 bytes long"), ("b" * 300, "holds a name of 300 bytes"),
                       ("ck\nx", "holds a control character ('\\n')")):
        said = _explain(tmp_path, value)
        assert said.returncode == 2 and why in said.stderr and "Traceback" not in said.stderr, said.stderr


def test_one_list_items_and_one_sections_every_mistake_in_one_round(tmp_path):
    """walk16a A31-A33: a second volume named `a` was told only once its host_path passed, a toleration's `effect`
    once its key and operator passed, and metrics.port clashing with the master port once step_pattern passed. Each
    is independent of the others: one validate names all."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "r.yaml").write_text(
        "name: q\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
        "volumes: [{name: a, host_path: /data/a, path: /a}, {name: a, host_path: /etc, path: /b}]\n"
        'kubernetes: {tolerations: [{key: "bad key", operator: Sometimes, effect: Never}], topology_spread: '
        "[{topology_key: 'bad key', max_skew: 0, when_unsatisfiable: Maybe}]}\n"
        'metrics: {port: 29500, step_pattern: "("}\n')
    from cli_run import nodeweave

    said = nodeweave("validate", "--spec", "r.yaml", cwd=tmp_path).stderr
    for field in ("volumes[1].host_path", "volumes[1].name: 'a' is already used by volumes[0]",
                  "tolerations[0].key", "tolerations[0].operator", "tolerations[0].effect: got 'Never'",
                  "metrics.step_pattern", "metrics.port: 29500 is launcher.master_port too",
                  "topology_spread[0].topology_key", "topology_spread[0].max_skew",
                  "topology_spread[0].when_unsatisfiable"):
        assert field in said, (field, said)


def test_a_spec_renamed_here_is_named_before_the_parents_is_used(tmp_path):
    """walk16a A29: p4/cluster.yaml (a spec by its content) below a folder with nodeweave.yaml: validate used the
    parent's spec without a word, as it did for `nodeweave.yml` before walk8's note."""
    import subprocess
    import sys

    spec = "name: {}\nimage: {{variant: cpu}}\nnodes: 2\nlauncher: {{script: train.py}}\n"
    (tmp_path / "nodeweave.yaml").write_text(spec.format("parent"))
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "p4").mkdir()
    (tmp_path / "p4" / "cluster.yaml").write_text(spec.format("child"))
    (tmp_path / "p4" / "values.yaml").write_text("name: x\nreplicas: 2\n")  # a YAML file that is no spec
    from cli_run import nodeweave

    said = nodeweave("validate", cwd=tmp_path / "p4")
    assert said.returncode == 0 and "note: ./cluster.yaml is not read" in said.stderr, said.stderr
    assert "values.yaml" not in said.stderr
