"""Where a spec mounts things: one rule for ``workspace.path``, ``cache.path`` and every volume's ``path``.

A mount hides whatever the image holds at that path and below it. So no mount
point is used twice (two mounts on one path: the engine keeps one, silently),
none is ``/`` or a parent of a folder the container needs (``/etc``, ``/usr``,
``/usr/local/bin`` where ``nodeweave-entrypoint`` lives, ``/tmp``, ...), and
none lands inside a folder nodeweave or the kernel fills (``/run/nodeweave``,
``/proc``, ``/dev``). A folder inside a system one (``/etc/deepspeed``) is fine.
"""

from __future__ import annotations

from typing import Dict, Optional

from yaml.nodes import Node

from nodeweave.spec.nodes import Reader

# Folders of the image a mount at them, or above them, would hide: the system's, and those nodeweave puts there.
SYSTEM = {
    "/bin": "the system's programs", "/boot": "the boot files", "/dev": "the devices", "/etc": "the system's "
    "configuration", "/home": "the image user's home", "/lib": "the system's libraries", "/lib32": "the system's "
    "libraries", "/lib64": "the system's libraries", "/proc": "the kernel's process files", "/root": "root's home",
    "/run": "the runtime's files", "/sbin": "the system's programs", "/sys": "the kernel's files", "/tmp": "the "
    "temporary folder (pods mount their own there)", "/usr": "the installed software", "/usr/bin": "the "
    "installed programs", "/usr/lib": "the installed libraries", "/usr/local": "the image's own software",
    "/usr/local/bin": "nodeweave-entrypoint and the launchers", "/var": "the system's state",
    "/run/nodeweave": "the job token nodeweave mounts", "/etc/nodeweave": "the hosts file nodeweave mounts",
}  # fmt: skip
# Folders whose inside is the kernel's or nodeweave's own: nothing of the spec's is mounted in them.
FILLED = {"/proc": "the kernel fills", "/sys": "the kernel fills", "/dev": "the kernel and runtime fill",
          "/run/nodeweave": "nodeweave fills", "/etc/nodeweave": "nodeweave fills"}
ACCEPTED = ("a container path no other volume, workspace.path or cache.path uses, not / nor a system folder or one "
            "above it (/etc, /usr, /usr/local/bin, /tmp, ...) nor inside /proc, /sys, /dev or /run/nodeweave; "
            "such as /workspace, /data or /etc/deepspeed")


class MountPoints:
    """The container paths taken so far, each with the field that took it; :meth:`claim` refuses a clash."""

    def __init__(self, reader: Reader, own: Dict[str, str]):
        self.reader, self.own = reader, dict(own)  # nodeweave's own mounts: /dev/shm, hugepages, ...
        self.taken = dict(own)

    def claim(self, node: Optional[Node], field: str, path: str) -> None:
        problem = self.problem(path)
        if problem is not None:
            raise self.reader.fail(node, field, problem, ACCEPTED)
        self.taken[path] = field

    def problem(self, path: str) -> Optional[str]:
        if path in self.taken:
            return f"{path} is already mounted by {self.taken[path]}"
        if path == "/":
            return "/ would hide the whole image"
        for folder, what in FILLED.items():
            if path.startswith(folder + "/"):
                return f"{path} is inside {folder}, which {what}"
        for folder, what in {**SYSTEM, **self.own}.items():
            if folder == path or folder.startswith(path + "/"):
                if folder == path:
                    return f"a mount at {path} would hide {what}"
                return f"a mount at {path} would hide {folder} below it ({what})"
        return None


INSIDE_WORKSPACE = ("a path inside workspace.path (relative, without '..' leading out of it, e.g. checkpoints), or an "
                    "absolute folder that is not / nor a system folder (/etc, /usr, /tmp, ...) nor inside /proc, "
                    "/sys or /dev, e.g. /data/checkpoints")


def check_inside_workspace(reader: Reader, node: Optional[Node], field: str, text: str,
                           absolute_too: bool = True) -> None:
    """A path the spec reads as relative to ``workspace.path`` stays inside it (``../../etc`` is refused); with
    ``absolute_too``, an absolute one is a folder of the job's own, never a system folder."""
    import posixpath

    if not text.startswith("/"):
        normal = posixpath.normpath(text)
        if normal == ".." or normal.startswith("../"):
            raise reader.fail(node, field, f"{text!r} leaves workspace.path (it is read relative to it)",
                              INSIDE_WORKSPACE)
        return
    if not absolute_too:
        return
    normal = posixpath.normpath(text)
    problem = None
    if normal == "/":
        problem = "/ is the whole file system"
    for folder, what in FILLED.items():
        if normal.startswith(folder + "/"):
            problem = f"{normal} is inside {folder}, which {what}"
    for folder, what in SYSTEM.items():
        if folder == normal or folder.startswith(normal.rstrip("/") + "/"):
            problem = problem or (f"{normal} is a system folder ({what})" if folder == normal else
                                 f"{normal} holds the system folder {folder} ({what})")
    if problem is not None:
        raise reader.fail(node, field, problem, INSIDE_WORKSPACE)
