"""Run a module under cProfile in every thread, for the scale benchmarks' ``--profile``.

Python 3.11's cProfile sees only the thread that enabled it, and node 0's work after a fault is on two: the
heartbeat's (hearing every node out) and the main one (regather, judge, announce). Each thread gets its own
profiler; when ``OUT.now`` appears (the driver touches it once the measurement is over: node 0's own signal
handlers forward SIGUSR*), every profile is merged into ``OUT`` (pstats) and the top lines go to ``OUT.txt``.

    python benchmarks/profiled.py OUT -m nodeweave.entrypoint ARGS...
"""

import cProfile
import os
import pstats
import runpy
import sys
import threading
import time


def main():
    out, flag, module = sys.argv[1], sys.argv[2], sys.argv[3]
    assert flag == "-m", "usage: profiled.py OUT -m MODULE ARGS..."
    profiles = []
    plain_run = threading.Thread.run

    def dump_when_asked():
        while not os.path.exists(out + ".now"):
            time.sleep(0.2)
        stats = None
        for profile in list(profiles):
            try:
                profile.create_stats()
            except Exception:  # noqa: BLE001 - a thread's profiler mid-event: the others still count
                continue
            if profile.stats:
                stats = pstats.Stats(profile) if stats is None else stats.add(profile) or stats
        if stats is not None:
            stats.dump_stats(out)
            with open(out + ".txt", "w") as f:
                pstats.Stats(out, stream=f).sort_stats("tottime").print_stats(40)
                pstats.Stats(out, stream=f).sort_stats("cumulative").print_stats(40)
        open(out + ".done", "w").close()

    threading.Thread(target=dump_when_asked, daemon=True, name="profile-dump").start()

    def profiled_run(self):
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            plain_run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled_run
    sys.argv = [module] + sys.argv[4:]
    own = cProfile.Profile()
    profiles.append(own)
    own.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        own.disable()


if __name__ == "__main__":
    main()
