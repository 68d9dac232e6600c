"""Where a missing tool, an unreachable cluster or an unwritable path becomes a NodeweaveError.

Why one place: every verb runs tools (podman, docker, kubectl, ssh, rsync) and writes where the
user points it. When that fails the user should read one line that says what is missing and what
to do, with a documented exit code (3: the machine lacks something; 2: a path the user gave cannot
be written), never a traceback and never a tool's internal log line (kubectl's ``memcache.go``)
as the only message. The verbs check up front with ``need_tool``/``writable_dir``; ``from_os_error``
is the CLI's safety net for whatever slips past.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError

# klog's prefix (kubectl, oc): "E1126 17:39:33.784620   22043 memcache.go:265] ..."
KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\]\s*")
KLOG_ERR = re.compile(r'err="(.*?)"\s*$')
API_UNREACHABLE = re.compile(r"couldn't get current server API group list|connection to the server .* was refused|"
                             r"Unable to connect to the server|no configuration has been provided", re.I)
INSTALL_HINTS = {
    "podman": "install podman, or pass --engine docker",
    "docker": "install docker, or pass --engine podman",
    "podman-compose": "pip install 'nodeweave[local]' (or pip install podman-compose)",
    "kubectl": "install kubectl, or pass --kube-cli oc",
    "oc": "install the OpenShift client, or pass --kube-cli kubectl",
    "ssh": "install the OpenSSH client",
    "rsync": "install rsync, or pass --method tar",
}


def need_tool(program: str, why: str) -> str:
    """The path of ``program``, or exit 3 naming it, why it is needed and how to get it."""
    found = shutil.which(program)
    if found is None:
        hint = INSTALL_HINTS.get(os.path.basename(program))
        raise EnvironmentProblem(f"{program} is not on PATH; {why}" + (f" ({hint})" if hint else ""))
    return found


def no_engine() -> EnvironmentProblem:
    return EnvironmentProblem("no container engine: neither podman nor docker is on PATH; install one "
                              "(podman is this project's engine), or use --target hosts or kubernetes")


def tool_message(text: str, limit: int = 300) -> str:
    """The part of a tool's output a user can act on: klog lines reduced to their error, repeats dropped."""
    kept = []
    for line in text.strip().splitlines():
        line = line.strip()
        if KLOG_LINE.match(line):
            found = KLOG_ERR.search(line)
            line = found.group(1).replace('\\"', '"') if found else KLOG_LINE.sub("", line)
        if line and line not in kept:
            kept.append(line)
    plain = [line for line in kept if not KLOG_LINE.match(line)]
    message = " | ".join(plain[-2:]) if plain else ""
    return message if len(message) <= limit else message[:limit - 3] + "..."


def tool_failure(tool: str, what: str, code: int, text: str) -> NodeweaveError:
    """A tool's failure as one line; an unreachable Kubernetes API is an environment problem (exit 3)."""
    message = tool_message(text) or f"exit {code}, no output"
    if API_UNREACHABLE.search(text):
        return EnvironmentProblem(f"{tool} cannot reach a Kubernetes cluster ({what}): {message}; check "
                                  f"`{tool} config current-context`, or pass --kube-context")
    return NodeweaveError(f"{tool} {what} failed (exit {code}): {message}")


def writable_dir(path: Path, flag: str, system_ok: bool = False) -> Path:
    """``path`` if it is, or can be made, a directory this process may write nodeweave's files into; else exit 2
    naming why. Never ``/``, a system folder (``/etc``, ``/usr``, ...), a kernel file system (``/proc``) or
    nodeweave's own state folder (``.nodeweave``), whether it exists or not: the dry run refuses them as the
    real write would (or, as root, would not, and litter the system)."""
    from nodeweave.jobstate import STATE_DIR
    from nodeweave.systemdirs import SYSTEM_TREES, system_folder, system_tree

    here = Path(os.path.abspath(path))
    probe = here
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{flag} {path}: {probe} is not a directory; accepted: a directory (created if missing)")
    real = here.resolve()
    if _pseudo_fs(real):
        raise UsageError(f"{flag} {path}: {real} is a kernel file system; no file of nodeweave's can go there; "
                         "accepted: a folder of your own")
    if system_folder(str(real)) and not system_ok:
        raise UsageError(f"{flag} {path}: {real} is / or a system folder; accepted: a folder of your own "
                         "(created if missing)")
    for seen in (here, real):  # as written, and where links lead (/var/run is /run; /bin is /usr/bin)
        tree = system_tree(str(seen))
        if tree is not None and not system_ok:
            raise UsageError(f"{flag} {path}: {seen} is inside {tree} ({SYSTEM_TREES[tree]}); accepted: a folder "
                             "of your own (created if missing)")
    if STATE_DIR in real.parts or STATE_DIR in here.parts:
        raise UsageError(f"{flag} {path}: it is inside {STATE_DIR}/, nodeweave's own state folder; accepted: "
                         "a folder of your own (created if missing)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {probe} is not writable by this user; choose a directory you can write")
    return here


def _pseudo_fs(path: Path) -> bool:
    text = str(path.resolve())
    return any(text == root or text.startswith(root + "/") for root in ("/proc", "/sys", "/dev"))


def path_problem(err: OSError, what: str) -> UsageError:
    """An OSError met while writing what the user asked for, as one line (exit 2)."""
    where = err.filename or "?"
    return UsageError(f"{what}: cannot write {where}: {err.strerror or err}")


def from_os_error(err: OSError) -> NodeweaveError:
    """The CLI's last resort: a program that could not start is a missing tool (3), else a path problem (2)."""
    if _raised_by_exec(err):
        program = str(err.filename or "a program")
        if isinstance(err, FileNotFoundError):
            hint = INSTALL_HINTS.get(os.path.basename(program))
            return EnvironmentProblem(f"{program} is not on PATH" + (f"; {hint}" if hint else ""))
        return EnvironmentProblem(f"cannot run {program}: {err.strerror or err}")
    where = f" {err.filename}" if err.filename else ""
    return UsageError(f"cannot use{where}: {err.strerror or err}")


def _raised_by_exec(err: BaseException) -> bool:
    tb = err.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and last.tb_frame.f_code.co_name in ("_execute_child", "execvpe", "_fork_exec")
