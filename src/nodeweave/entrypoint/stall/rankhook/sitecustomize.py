"""Run by every Python process the launcher starts (it is first on their PYTHONPATH): start the stall probe
in a training rank, then run the ``sitecustomize`` this file hides, if there is one, so nothing of the
image's own start-up is lost. Stdlib only; it never raises into the user's program."""

import os
import sys


def _start_probe():
    if not os.environ.get("NODEWEAVE_RANKWATCH_DIR"):
        return
    try:
        import nodeweave_rankprobe

        nodeweave_rankprobe.install(os.environ)
    except Exception as err:  # noqa: BLE001 - a probe that cannot start must not stop training
        sys.stderr.write(f"nodeweave: stall probe not started in pid {os.getpid()}: {err}\n")


def _chain():
    """Execute the next ``sitecustomize.py`` on sys.path (the one a plain interpreter would have run)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        path = os.path.join(folder, "sitecustomize.py")
        if folder == here or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
        except Exception as err:  # noqa: BLE001 - as a failing sitecustomize would: a warning, then go on
            sys.stderr.write(f"Error in sitecustomize ({path}); set PYTHONVERBOSE for traceback: {err}\n")
        return


_start_probe()
_chain()
