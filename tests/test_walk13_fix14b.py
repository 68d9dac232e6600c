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
        assert out.stderr.strip().endswith("or auto (one per usable GPU)") and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
