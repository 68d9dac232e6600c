"""``nodeweave bench``: formulas, input checks, the worker's correctness check, real gloo runs.

The end-to-end tests launch two real processes through the entrypoint and
torchrun on CPU (gloo), as training would be launched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import cli_run
import pytest

from nodeweave.bench import options
from nodeweave.bench.runner import BASELINE_LABEL, RunResult, rank_runs
from nodeweave.errors import UsageError

torch = pytest.importorskip("torch")


# ---- formulas and inputs -------------------------------------------------

@pytest.mark.parametrize("op,n,factor", [
    ("all_reduce", 1, 0.0), ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75),
    ("all_gather", 2, 0.5), ("all_gather", 8, 0.875), ("reduce_scatter", 4, 0.75),
])
def test_busbw_factor_matches_nccl_tests(op, n, factor):
    assert options.busbw_factor(op, n) == pytest.approx(factor)


def test_bandwidths_are_bytes_over_time_times_factor():
    algbw, busbw = options.bandwidths("all_reduce", 1 << 30, 0.01, 4)
    assert algbw == pytest.approx((1 << 30) / 0.01 / 1e9)
    assert busbw == pytest.approx(algbw * 1.5)


def test_sizes_range_list_and_factor():
    assert options.parse_sizes("1K:8K") == [1024, 2048, 4096, 8192]
    assert options.parse_sizes("1M:256M:4") == [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
    assert options.parse_sizes("1G, 256MiB,4096") == [4096, 256 << 20, 1 << 30]
    assert options.format_bytes(256 << 20) == "256M" and options.format_bytes(1000) == "1000B"


@pytest.mark.parametrize("text,needle", [
    ("1X:1G", "'1X' is not a size"), ("1G:1K", "larger than maximum"), ("1K:1M:1", "factor '1'"),
    ("", "empty value"), ("1K:2K:3:4", "4 ':'-parts"), ("0", "must be positive"),
])
def test_bad_sizes_name_the_flag_and_the_value(text, needle):
    with pytest.raises(UsageError) as err:
        options.parse_sizes(text)
    assert "--sizes" in str(err.value) and needle in str(err.value)
    assert err.value.exit_code == 2


def test_ranking_orders_by_busbw_and_puts_failures_last():
    def run(label, busbw, code=0, correct=True):
        report = {"correct": correct, "results": [
            {"op": "all_reduce", "bytes": 1024, "busbw_gbps": 999.0},
            {"op": "all_reduce", "bytes": 1 << 20, "busbw_gbps": busbw}]}
        return RunResult(label, {}, code, report)
    ranking = rank_runs([run(BASELINE_LABEL, 10.0), run("A=1", 12.0), run("A=2", 99.0, code=1),
                         run("A=3", 5.0, correct=False), run("A=4", 8.0)], "all_reduce")
    assert [row["label"] for row in ranking][:3] == ["A=1", BASELINE_LABEL, "A=4"]
    assert {row["label"] for row in ranking[3:]} == {"A=2", "A=3"}
    assert ranking[0]["ratio_vs_baseline"] == pytest.approx(1.2)
    assert [row["rank"] for row in ranking] == [1, 2, 3, 4, 5]


# ---- the worker's check really detects wrong results ----------------------

@pytest.fixture(scope="module")
def single_rank_group():
    import torch.distributed as dist

    from free_ports import free_port

    port = free_port()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("op", options.OPS)
def test_check_passes_a_real_collective_and_catches_a_broken_one(single_rank_group, op):
    from nodeweave.bench.worker import Collective

    coll = Collective(op, 4096, torch.float32, torch.device("cpu"), 0, 1)
    assert coll.check() == (0, 0.0)
    coll.run = lambda: coll.output.zero_()  # a transport that "finishes" but delivers nothing
    wrong, error = coll.check()
    assert wrong > 0 and error > 0


# ---- end to end: two gloo processes through entrypoint -> torchrun --------

def _bench(tmp_path, *args, timeout=900, nproc="2"):
    defaults = {"--backend": "gloo", "--nproc": nproc, "--iters": "2", "--warmup": "1"}
    chosen = [word for flag, value in defaults.items() if flag not in args for word in (flag, value)]  # args win:
    return cli_run.run([*cli_run.NODEWEAVE, "bench", *chosen, *args],  # an option given twice is refused, not the last one taken
                          timeout=timeout, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow
def test_two_process_gloo_run_is_correct_and_uses_nccl_tests_math(tmp_path):
    out = _bench(tmp_path, "--sizes", "4K,64K", "--json-out", "b.json", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert json.loads(out.stdout) == doc, "--json prints the same document on stdout, and only it"
    (run,) = doc["runs"]
    report = run["report"]
    assert run["correct"] and report["backend"] == "gloo" and report["world_size"] == 2
    threads = report["threads"]
    assert threads["torch"] >= 1
    assert threads["OMP_NUM_THREADS"] is None or int(threads["OMP_NUM_THREADS"]) == threads["torch"], threads
    assert {(row["op"], row["bytes"]) for row in report["results"]} == {
        (op, size) for op in options.OPS for size in (4096, 65536)}
    for row in report["results"]:
        assert row["wrong"] == 0
        assert row["algbw_gbps"] == pytest.approx(row["bytes"] / (row["time_us"] * 1e-6) / 1e9)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * options.busbw_factor(row["op"], 2))
    assert "busbw (GB/s)" in out.stderr, "with --json the table goes to stderr"


@pytest.mark.slow
def test_sweep_over_a_harmless_variable_ranks_every_launch(tmp_path):
    # --nproc auto on this GPU-less machine: two gloo processes, said on stderr (a variable gloo launches carry;
    # an NCCL_* one is refused here: gloo reads none, walk5 W82)
    out = _bench(tmp_path, "--ops", "all_reduce", "--sizes", "16K", "--sweep", "GLOO_NWTEST_PROBE=a,b",
                 "--json-out", "s.json", nproc="auto")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no GPU here, so 2 gloo processes" in out.stderr
    doc = json.loads((tmp_path / "s.json").read_text())
    assert [run["label"] for run in doc["runs"]] == [BASELINE_LABEL, "GLOO_NWTEST_PROBE=a",
                                                      "GLOO_NWTEST_PROBE=b"]
    assert [run["report"]["env"].get("GLOO_NWTEST_PROBE") for run in doc["runs"]] == [None, "a", "b"]
    assert {run["report"]["world_size"] for run in doc["runs"]} == {2}
    busbw = [row["busbw_gbps"] for row in doc["ranking"]]
    assert busbw == sorted(busbw, reverse=True) and len(busbw) == 3
    baseline = next(row for row in doc["ranking"] if row["label"] == BASELINE_LABEL)
    assert baseline["ratio_vs_baseline"] == pytest.approx(1.0)
    assert "Sweep ranked by all_reduce busbw at 16K" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (["--sizes", "12Q"], "--sizes: '12Q' is not a size"),
    (["--sweep", "NCCL_ALGO"], "--sweep 'NCCL_ALGO' is not accepted: VAR=VALUE"),
    (["--ops", "all_to_all"], "--ops: unknown operation 'all_to_all'"),
    (["--nproc", "zero"], "--nproc 'zero' is not accepted: processes per node"),
    (["--backend", "mpi"], "--backend: 'mpi' is not a backend"),
])
def test_bad_flags_exit_2_with_a_clear_message(tmp_path, args, needle):
    out = _bench(tmp_path, *args, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert needle in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "nodeweave-bench.json").exists()


def _has_matplotlib():
    from nodeweave.bench.report import matplotlib_available

    return matplotlib_available()


@pytest.mark.skipif(_has_matplotlib(), reason="matplotlib is installed here: the missing-plotter path cannot run")
def test_plot_without_matplotlib_is_an_environment_error(tmp_path):
    out = _bench(tmp_path, "--plot", "p.png", timeout=120)
    assert out.returncode == 3 and "--plot p.png: matplotlib is not installed" in out.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "nodeweave-bench.json").exists()


@pytest.mark.skipif(not _has_matplotlib(), reason="matplotlib is not installed (it is optional)")
def test_plot_is_a_png(tmp_path):
    from nodeweave.bench.report import write_plot

    rows = [{"op": "all_reduce", "bytes": 1 << k, "busbw_gbps": float(k)} for k in (20, 22, 24)]
    write_plot(tmp_path / "p.png", [RunResult("baseline", {}, 0, {"correct": True, "results": rows})], ["all_reduce"])
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_a_run_past_its_timeout_is_stopped_and_reported(tmp_path):
    out = _bench(tmp_path, "--ops", "all_reduce", "--sizes", "16M", "--iters", "100000", "--timeout", "15",
                 "--json", "t.json")
    assert out.returncode == 1
    (run,) = json.loads((tmp_path / "t.json").read_text())["runs"]
    assert run["exit_code"] == 124 and not run["correct"]
    assert "passed --timeout 15s and was stopped" in run["log_tail"]
    assert "`bench --json PATH` is now `bench --json-out PATH`" in out.stderr, "the old spelling still works, noted"


@pytest.mark.slow
def test_a_sweep_point_that_breaks_the_launch_is_ranked_last(tmp_path):
    # torch refuses TORCH_DISTRIBUTED_DEBUG=many as torch.distributed is imported, so that launch fails
    # (a variable nodeweave sets, such as NODEWEAVE_NPROC_PER_NODE, is refused as --sweep is read)
    out = _bench(tmp_path, "--ops", "all_reduce", "--sizes", "16K", "--sweep", "TORCH_DISTRIBUTED_DEBUG=OFF,many",
                 "--json-out", "f.json")
    assert out.returncode == 1
    ranking = json.loads((tmp_path / "f.json").read_text())["ranking"]
    assert [row["label"] for row in ranking][-1] == "TORCH_DISTRIBUTED_DEBUG=many"
    assert ranking[-1]["exit_code"] not in (0, None) and ranking[-1]["busbw_gbps"] is None
    assert all(row["correct"] for row in ranking[:-1])
    assert "run 'TORCH_DISTRIBUTED_DEBUG=many' failed (exit" in out.stderr
