"""Node 0 listens on three ports: the launcher's rendezvous (master port), the check-in exchange (master port + 1
unless set) and /metrics. The fresh walk found `metrics: {port: 29501}` and `master_port: 9464` valid, and the
entrypoint's `--metrics-port 29500` too: node 0's metrics server and the job would fight for the port. Refused
at validate and in the entrypoint's plan, naming both, as an exchange port equal to the master port is."""

import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest
from one_machine import one_machine_env

from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

SRC = Path(__file__).resolve().parents[1] / "src"
BASE = "name: a\nimage: {variant: cpu}\n"


@pytest.mark.parametrize("body, says", [
    ("launcher: {script: train.py}\nmetrics: {port: 29501}\n",
     "metrics.port: 29501 is the check-in exchange's port (launcher.master_port + 1) too"),
    ("launcher: {script: train.py}\nmetrics: {port: 29500}\n", "metrics.port: 29500 is launcher.master_port too"),
    ("launcher: {script: train.py, master_port: 9464}\n", "metrics.port: 9464 (the default) is launcher.master_port"),
    ("launcher: {script: train.py, exchange_port: 9464}\n", "9464 (the default) is launcher.exchange_port too"),
])
def test_validate_refuses_a_metrics_port_node_0_already_listens_on(body, says):
    with pytest.raises(UsageError, match=None) as caught:
        parse_spec(BASE + body, "s.yaml")
    assert says in str(caught.value), caught.value


@pytest.mark.parametrize("body", [
    "launcher: {script: train.py, master_port: 9464}\nmetrics: {enabled: false}\n",
    "launcher: {script: train.py, master_port: 9464}\nmetrics: {port: 9000}\n",
    "launcher: {script: train.py}\n",
])
def test_ports_apart_or_metrics_off_are_valid(body):
    parse_spec(BASE + body, "s.yaml")


@pytest.mark.parametrize("extra, code, says", [
    (["--metrics-port", "29500"], 2, "metrics port 29500 (from flag --metrics-port) is the master port"),
    # walk9 B28: the port typed is named, not the metrics default the user never set
    (["--master-port", "9463"], 2, "check-in exchange port 9464 (from master port 9463 + 1) is the metrics port's "
                                   "default (9464) too: node 0 listens on each; accepted: another master port"),
    (["--metrics-port", "29500", "--metrics", "off"], 2, "--metrics-port: 29500 does nothing with --metrics off"),
    ([], 0, None),
])
def test_the_entrypoints_plan_refuses_the_same(tmp_path, extra, code, says):
    (tmp_path / "train.py").write_text("")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--nnodes", "2", "--node-rank",
                          "0", "--master-addr", "127.0.0.1", *extra, "--", "train.py"], cwd=tmp_path,
                         env=one_machine_env({**os.environ, "PYTHONPATH": str(SRC)}), timeout=60)
    assert out.returncode == code, out.stdout + out.stderr
    if says:
        assert says in out.stdout + out.stderr, out.stdout + out.stderr


def test_recovery_min_nodes_with_another_launcher_names_the_field_the_user_wrote():
    with pytest.raises(UsageError) as caught:
        parse_spec(BASE + "nodes: 2\nlauncher: {script: train.py, type: deepspeed}\n"
                   "recovery: {enabled: true, min_nodes: 1}\n", "s.yaml")
    assert "recovery.min_nodes: makes the job elastic (1:2), which needs launcher.type torchrun" in str(caught.value)
