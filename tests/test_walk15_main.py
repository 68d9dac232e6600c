"""The fifteenth walk's rows fixed on main (issue 43): each test fails on the code before its fix."""

from __future__ import annotations

from nodeweave.entrypoint.stall import judge


def test_walk15b_a_stopped_rank_read_a_moment_before_its_last_move_is_still_the_stall():
    """walk15b 10: a DDP job on gloo, one rank SIGSTOPped: no STALL in 40 s with stall_timeout 25 s. The
    stopped rank had moved after its flight thread's last read (the thread reads each second), so its count was
    judged stale, as an exiting rank's is, and the stall was excused for as long as it lasted. A stopped rank
    cannot move nor read again: its count is where it stands, and it is the culprit."""
    def view(rank, seq, fr, state="S", since=12.0, polled=0.5):
        return {"rank": rank, "node": rank, "seq": seq, "since_s": since, "inside": rank == 0, "state": state,
                "name": "broadcast", "fr_enqueued": fr, "polled_s": polled}

    for state in ("T", "t"):  # /proc/PID/stat: stopped, tracing stop
        found = judge.find_stall([view(0, 93, 191), view(1, 93, 190, state=state, polled=12.4)])
        assert found is not None and [v["rank"] for v in found["culprits"]] == [1], state
    # an exiting rank (alive, its thread stopped reading) is still excused, as before
    assert judge.find_stall([view(0, 93, 191), view(1, 93, 190, polled=12.4)]) is None


def test_walk15a_a34_node_0_is_asked_for_the_profiler_with_the_path_the_run_gives(tmp_path):
    """A34's check (a profiler node 0 lacks refused before any node starts) asked node 0 with its image's own
    PATH, so a run that puts the profiler on PATH with `-e PATH=...` (the e2e profile test's stand-in nsys in
    /workspace/bin) was refused though every rank would find it."""
    from types import SimpleNamespace

    from nodeweave.cli.run import profiler_lacking

    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nsys").write_text("#!/bin/sh\nexit 0\n")
    (tools / "nsys").chmod(0o755)
    node = SimpleNamespace(name="node-0", exec_argv=lambda argv: ["env", "PATH=/usr/bin:/bin", *argv])
    spec = SimpleNamespace(launcher=SimpleNamespace(setup=()), env={})
    backend = SimpleNamespace(image_variant="cpu", target="local")
    assert "holds no nsys" in profiler_lacking("nsys", spec, backend, [node])
    assert profiler_lacking("nsys", spec, backend, [node], {"PATH": f"{tools}:/usr/bin:/bin"}) == ""
    spec.env = {"PATH": f"{tools}:/usr/bin:/bin"}
    assert profiler_lacking("nsys", spec, backend, [node]) == ""
