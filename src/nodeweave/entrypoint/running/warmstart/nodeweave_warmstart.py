"""The held launcher's own side (``running/warm.py`` starts it): import the launcher's modules, wait, then run it.

Started as ``python -c <bootstrap> FD SCRIPT AFTER_S`` with this folder first on ``sys.path`` (a folder of its
own, as the ranks' hook has: it runs before the launcher, under whatever Python the launcher's shebang names).
FD is a socket to the entrypoint. After ``AFTER_S`` seconds, unless the entrypoint already wrote, it runs the
launcher's file under a name that is not ``__main__``: a console script (torchrun, deepspeed, accelerate) then
imports its modules and stops at its ``if __name__ == "__main__"`` guard. It says ``ready`` and waits. The
entrypoint's request is one JSON object, ended by the entrypoint closing its side: ``argv``, ``env`` and ``cwd``
of the launch. It takes them on and runs the file as ``__main__``, as the kernel's exec of the script would
have: ``sys.argv`` from the request, ``sys.path[0]`` the script's folder, the launcher's exit status its own.
Nothing written (the entrypoint closed the socket): exit 0 at once. Stdlib only.
"""

import os
import sys

READY = b"ready\n"


def main():
    sys.path.pop(0)  # this folder, put first by the bootstrap: not the launcher's to see
    fd, script, after_s = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    if sys.path and sys.path[0] == "":  # -c's working folder; an exec of the script puts the script's folder
        sys.path[0] = os.path.dirname(os.path.abspath(script))
    import json
    import runpy
    import select
    import socket

    link = socket.socket(fileno=fd)
    if not select.select([link], [], [], after_s)[0]:  # a request before the delay: run it, nothing to preload
        _preload(runpy, script)
        try:
            link.sendall(READY)
        except OSError:
            pass
    request = _read_all(link)
    link.close()
    if not request:
        os._exit(0)  # the entrypoint let this launcher go unused
    request = json.loads(request)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [script] + list(request["argv"][1:])
    runpy.run_path(script, run_name="__main__")


def _preload(runpy, script):
    """The launcher's file run as a module: its imports, up to its ``__main__`` guard. A failure is the launch's to
    report: it runs again as ``__main__`` when asked, and fails there as a cold start would."""
    try:
        runpy.run_path(script, run_name="__nodeweave_warmstart__")
    except BaseException:  # noqa: BLE001 - SystemExit and import errors alike: the real run says what went wrong
        pass


def _read_all(link):
    chunks = []
    while True:
        try:
            chunk = link.recv(65536)
        except InterruptedError:
            continue
        except OSError:
            return b""
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
