"""Warm start: the next generation's launcher started ahead and held, its imports done (``recovery.warm_start``).

torchrun, deepspeed and accelerate are Python programs whose first seconds go to importing torch: about 1 s on
an idle machine, 3-9 s when every agent and rank of a machine imports at once. Under recovery every generation
pays it again, on the recovery's critical path (the relaunch, then the ranks' own import). So while a
generation trains, or a spare waits, each node keeps one launcher process held: forked as the launcher would
be (a process group of its own, the parent-death signal, output to the pipes the entrypoint reads), it runs the
launcher's console script under a name that is not ``__main__`` after :data:`WARM_AFTER_S` (its imports, up to
the script's ``if __name__ == "__main__"`` guard), then waits (``warmstart/nodeweave_warmstart.py``). At the
relaunch the entrypoint hands it the generation's argv, environment and folder, and it runs the script as
``__main__``: the same launcher, started seconds sooner.

Held only for the launchers that are such scripts (``WARMABLE``), and used only when the variables an
interpreter reads as it starts (``PYTHON*``, ``LD_*``, the locale) are the ones the launch asks for; anything
else (a binary, a shell wrapper, a shebang with options, other start-up variables) starts cold, as before.
What the held process costs: one interpreter with the launcher's imports (a few hundred MiB of memory with
torch), idle. Stdlib only.
"""

import json
import os
import time

WARMABLE = ("torchrun", "deepspeed", "accelerate")
WARM_AFTER_S = 10.0  # a held launcher imports this long after it is started, not while its generation's ranks do
STARTUP_PREFIXES = ("PYTHON", "LD_", "LC_")
STARTUP_NAMES = ("LANG", "LANGUAGE")
FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warmstart")
BOOTSTRAP = "import sys; sys.path.insert(0, {folder!r}); import nodeweave_warmstart; nodeweave_warmstart.main()"
GUARDS = (b"__name__ == '__main__'", b'__name__ == "__main__"')
HEAD_BYTES = 65536


def interpreter(path, search_path):
    """The Python that runs the launcher file ``path``, from its shebang (``#!/path/python3``,
    ``#!/usr/bin/env python3``, or pip's ``#!/bin/sh`` + ``'''exec' "/long/path/python"`` form for long paths),
    when the file is a Python script whose run sits under a ``__main__`` guard; else None (started cold)."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!") or not any(guard in head for guard in GUARDS):
        return None
    lines = head.split(b"\n", 2)
    words = lines[0][2:].decode("utf-8", "replace").split()
    if words == ["/bin/sh"] and len(lines) > 1 and lines[1].startswith(b"'''exec' "):
        quoted = lines[1][len(b"'''exec' "):].decode("utf-8", "replace").split('"')
        words = [quoted[1]] if len(quoted) > 2 else []
    if len(words) == 2 and os.path.basename(words[0]) == "env":
        words = _on_path(words[1], search_path)
    if len(words) != 1 or not _is_python(words[0]) or not os.access(words[0], os.X_OK):
        return None  # options on the shebang line, or not a Python: a cold start keeps them exactly
    return words[0]


def _is_python(path):
    name = os.path.basename(path)
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[len("python"):])


def _on_path(name, search_path):
    """[the file ``env name`` runs], or [] when there is none (the launch itself says so)."""
    from ..errors import EntrypointError
    from .supervise import resolve

    try:
        return [resolve(name, search_path)]
    except EntrypointError:
        return []


def startup(env, ignored_paths=()):
    """The variables an interpreter reads as it starts (a held one has already read them), PYTHONPATH without
    ``ignored_paths`` (the ranks' hook: it acts in ranks only, and a launcher is none)."""
    found = {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES}
    if "PYTHONPATH" in found:
        kept = [p for p in found["PYTHONPATH"].split(os.pathsep) if p not in ignored_paths]
        found["PYTHONPATH"] = os.pathsep.join(kept)
        if not kept:
            del found["PYTHONPATH"]
    return found


class Held:
    """One launcher process held ready: its pid, its output pipes, its link, and what it was started for."""

    def __init__(self, pid, tail, link, executable, startup_env):
        self.pid, self.tail, self.link = pid, tail, link
        self.executable, self.startup = executable, startup_env
        self.since = time.monotonic()
        self.imported = False

    def ended(self):
        """Whether the process is gone (reaped here when it is)."""
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        return pid == self.pid

    def poll_ready(self):
        """Whether it said its imports are done (read without waiting)."""
        if not self.imported:
            self.link.setblocking(False)
            try:
                self.imported = self.link.recv(64).startswith(b"ready")
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                return False
            finally:
                self.link.setblocking(True)
        return self.imported

    def go(self, argv, env, cwd):
        """Hand it the launch; from here on it is the launcher. False when the link broke (it ended meanwhile)."""
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": cwd}).encode()
        try:
            self.link.sendall(request)
            return True
        except OSError:
            return False
        finally:
            self.link.close()

    def end(self):
        """Kill and reap it, close its pipes: it was not needed."""
        import signal

        self.link.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.tail.abandon()


class WarmStart:
    """This node's held launcher, at most one: :meth:`hold` after a launch (or while a spare waits), :meth:`take`
    at the next (it hands the launch over), :meth:`discard` when the job ends."""

    def __init__(self, launcher, log, enabled=True, ignored_paths=(), after_s=None):
        self.launcher, self.log = launcher, log
        self.enabled = enabled and launcher in WARMABLE
        self.ignored_paths = tuple(ignored_paths)
        self.after_s = WARM_AFTER_S if after_s is None else after_s
        self.held = None

    def hold(self, executable, env):
        """Start a launcher process for ``executable`` under ``env``, held for the next launch (one at a time)."""
        if not self.enabled:
            return
        if self.held is not None and not self.held.ended() and self.held.executable == executable \
                and self.held.startup == startup(env, self.ignored_paths):
            return
        self.discard()
        python = interpreter(executable, env.get("PATH", os.defpath))
        if python is None:
            return
        from .capture import OutputTail
        from .supervise import spawn_held

        tail = OutputTail()
        try:
            pid, link = spawn_held(python, BOOTSTRAP.format(folder=FOLDER), executable, self.after_s, env, tail)
        except OSError as err:
            tail.abandon()
            self.log(f"warning: warm start off for this launch: cannot start a held {self.launcher}: {err}")
            return
        self.held = Held(pid, tail, link, executable, startup(env, self.ignored_paths))

    def take(self, executable, argv, env, cwd):
        """The held launcher, handed this launch (``argv``, ``env``, ``cwd``) and running it now; or None (none
        held, gone, or held for other start-up variables): the caller starts it cold."""
        held, self.held = self.held, None
        if held is None:
            return None
        wanted = startup(env, self.ignored_paths)
        if held.ended():
            why = "it had ended"
        elif held.executable != executable:
            why = f"it was held for {held.executable}"
        elif held.startup != wanted:
            names = sorted(k for k in set(held.startup) | set(wanted) if held.startup.get(k) != wanted.get(k))
            why = f"{', '.join(names)} changed since it started"
        else:
            done = "its imports done" if held.poll_ready() else "still importing"
            if held.go(argv, env, cwd):
                self.log(f"warm start: {self.launcher} held ready for {time.monotonic() - held.since:.0f}s "
                         f"({done}) takes this launch")
                return held
            why = "its link broke: it had ended"
        self.log(f"warm start: the held {self.launcher} is not used ({why}); starting it cold")
        held.end()
        return None

    def discard(self):
        held, self.held = self.held, None
        if held is not None:
            held.end()
