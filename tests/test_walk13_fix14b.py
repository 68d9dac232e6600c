"""fix14b (issue 43; walk13a rows A24, A25): how many processes a flag may plan on a node, and on this machine.

A25 (and A24's half): ``run --nproc-per-node`` and ``bench --nproc`` took any count Python's ``isdigit`` takes:
100000 went into every node's plan and ``٢`` to nodes that refuse it, while the spec's ``gpus_per_node`` and the
entrypoint take 1 to 1024 in plain digits. One reader, ``cluster.overrides.process_count``, judges both flags by
that rule. A24 (and A25's half): on CPU the processes are this machine's own (bench's gloo ranks, the local
target's containers), judged by the local target's rule of what one machine holds (``machine_too_small``).
"""

from __future__ import annotations

import pytest

import cli_run
from test_cluster_cli import nodeweave, spec  # noqa: F401  (the fixture)

# The flags that say how many processes a node runs: (verb, flag).
PROCESS_FLAGS = [("run", "--nproc-per-node"), ("bench", "--nproc")]
BAD_COUNTS = ["100000", "1025", "\u0662", "08", "0", "+2", " 2"]


def _judge(verb, flag, text):
    if verb == "run":
        from nodeweave.cluster.overrides import run_overrides

        return run_overrides([object(), object()], nproc=text)[1]["NODEWEAVE_NPROC_PER_NODE"]
    from nodeweave.bench.runner import BenchConfig

    return BenchConfig(("all_reduce",), "1K", nproc=text).nproc


@pytest.mark.parametrize("verb, flag", PROCESS_FLAGS)
@pytest.mark.parametrize("text", BAD_COUNTS)
def test_a_process_count_flag_takes_the_specs_range_in_plain_digits(verb, flag, text):
    """A25, A24: past 1024 or not plain ASCII digits is refused, naming the flag, the value and the range."""
    from nodeweave.errors import UsageError

    with pytest.raises(UsageError) as refused:
        _judge(verb, flag, text)
    message = str(refused.value)
    assert message.startswith(f"{flag} {text!r}") and "1 to 1024 in plain decimal digits" in message, message


@pytest.mark.parametrize("verb, flag", PROCESS_FLAGS)
@pytest.mark.parametrize("text", ["1", "8", "1024", "auto"])
def test_a_process_count_in_the_range_is_taken(verb, flag, text):
    """A25, A24: what the spec takes is taken."""
    assert _judge(verb, flag, text) == text


@pytest.mark.parametrize("verb, flag", PROCESS_FLAGS)
def test_the_dry_run_refuses_what_every_node_would(spec, verb, flag):  # noqa: F811
    """A25, A24: the dry run refuses 100000 and ``٢`` in one line, exit 2, instead of planning them."""
    for text in ("100000", "\u0662"):
        if verb == "run":
            out = nodeweave(spec, "run", flag, text, "--dry-run", "--", "train.py")
        else:
            out = cli_run.nodeweave("bench", "--dry-run", "--sizes", "1K", flag, text, cwd=spec.parent,
                                    env=cli_run.CLEAN)
        assert out.returncode == 2 and "NPROC_PER_NODE" not in out.stdout, out.stdout + out.stderr
        assert "or auto (one per usable GPU)" in out.stderr and "Traceback" not in out.stderr
        assert text.isascii() or "type 2 for \u0662" in out.stderr  # walk13 A22: the number to type (fix15c)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


# --- this machine: bench's gloo ranks and the local target's nodes are processes of the machine itself -----------

def test_what_this_machine_holds_counts_every_process_of_every_node():
    """A25, A24: the local target's rule (walk7 B29) counts processes, not containers alone."""
    from nodeweave.cluster.backends.local import machine_too_small, torch_processes_fit

    assert torch_processes_fit(cpus=2, memory=24 << 30)[0] == 8
    assert machine_too_small(2, cpus=2, memory=24 << 30, processes=4) == []
    [line] = machine_too_small(2, cpus=2, memory=24 << 30, processes=5)
    assert line.startswith("2 node container(s) x 5 processes (10) on this machine (2 CPU(s), 24 GiB)"), line
    assert "about 8 fit here" in line


LOCAL_SPEC = "name: fit\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: GPUS\nlauncher: {script: train.py}\n"


def _members(tmp_path):
    """(what the user typed, its command line, the flag or field the refusal names): every way of asking for more
    processes than this machine holds."""
    (tmp_path / "train.py").write_text("print(1)\n")
    return {
        "bench --nproc": (["bench", "--dry-run", "--sizes", "1K", "--backend", "gloo", "--nproc", "1024"],
                          "1", "--nproc 1024 is not accepted on CPU", 1024),
        "run --nproc-per-node": (["run", "--dry-run", "--target", "local", "--nproc-per-node", "1024", "--",
                                  "train.py"], "1", "--nproc-per-node 1024: 2 node container(s) x 1024", 2048),
        "the spec's gpus_per_node": (["run", "--dry-run", "--target", "local", "--", "train.py"], "1024",
                                     "nodeweave.yaml: gpus_per_node: 1024: 2 node container(s) x 1024", 2048),
        "up --run": (["up", "--run", "--dry-run", "--target", "local"], "1024",
                     "nodeweave.yaml: gpus_per_node: 1024: 2 node container(s) x 1024", 2048),
    }


@pytest.mark.parametrize("member", ["bench --nproc", "run --nproc-per-node", "the spec's gpus_per_node", "up --run"])
def test_more_processes_than_this_machine_holds_are_refused_before_any_start(tmp_path, member):
    """A24, A25: 1024 gloo ranks (or 2 local nodes of 1024 processes: the flag's, the spec's for `run` and `up
    --run`) on this machine are refused, exit 2, in one line naming what fits; a flag's value in the dry run too,
    the spec's count there said as what the real run or up would end with; the count that fits is taken."""
    from nodeweave.cluster.backends.local import torch_processes_fit

    argv, gpus, refusal, processes = _members(tmp_path)[member]
    fits = torch_processes_fit()[0]
    if processes <= fits:
        pytest.skip(f"this machine holds {fits} torch processes")
    (tmp_path / "nodeweave.yaml").write_text(LOCAL_SPEC.replace("GPUS", gpus))
    most = fits if member == "bench --nproc" else fits // 2
    out = cli_run.nodeweave(*argv, cwd=tmp_path, env=cli_run.CLEAN)
    if member in ("the spec's gpus_per_node", "up --run"):  # the spec's count: the dry run says the real exit
        verb = argv[0]
        # up reads nothing on nodes: certain, its dry run ends with the real exit; run's, with nothing up, notes it
        assert out.returncode == (2 if verb == "up" else 0), out.stdout + out.stderr  # (walk17a A8-A10)
        assert f"the real {verb} would end with exit 2: {refusal}" in out.stdout, out.stdout
        assert f"accepted: gpus_per_node: 1 to {most} " in out.stdout, out.stdout
        if verb == "run":  # the real run refuses before asking for any node (no engine needed)
            real = cli_run.nodeweave(*[w for w in argv if w != "--dry-run"], cwd=tmp_path, env=cli_run.CLEAN)
            assert real.returncode == 2 and refusal in real.stderr and "Traceback" not in real.stderr, real.stderr
        return
    assert out.returncode == 2 and refusal in out.stderr and f"about {fits}" in out.stderr, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "NPROC_PER_NODE" not in out.stdout, out.stderr
    assert f" 1 to {most} " in out.stderr, out.stderr
    taken = [str(most) if word == "1024" else word for word in argv]
    out = cli_run.nodeweave(*taken, cwd=tmp_path, env=cli_run.CLEAN)
    assert out.returncode == 0 and f"NPROC_PER_NODE={most}" in out.stdout, out.stdout + out.stderr
