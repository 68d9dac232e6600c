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

from nodeweave.entrypoint.systemfolders import FILLED, SYSTEM, normal_path, path_problem  # one rule with the entrypoint

ACCEPTED = ("a container path no other volume, workspace.path or cache.path uses, not / nor a system folder or one "
            "above it (/etc, /usr, /usr/local/bin, /tmp, ...) nor inside /proc, /sys or /dev or /run/nodeweave")
# Examples for the hint, offered only while free: a hint never suggests the path it refuses (a volume at
# /workspace was told "such as /workspace").
EXAMPLES = ("/workspace", "/data", "/datasets", "/etc/deepspeed")


class MountPoints:
    """The container paths taken so far, each with the field that took it; :meth:`claim` refuses a clash."""

    def __init__(self, reader: Reader, own: Dict[str, str]):
        self.reader, self.own = reader, dict(own)  # nodeweave's own mounts: /dev/shm, hugepages, ...
        self.taken = dict(own)

    def claim(self, node: Optional[Node], field: str, path: str) -> None:
        path = normal_path(path)  # //etc is /etc, /data/ is /data (walk10 B6): one name per folder
        problem = self.problem(path)
        if problem is not None:
            raise self.reader.fail(node, field, problem, self.accepted())
        self.taken[path] = field

    def accepted(self) -> str:
        free = [example for example in EXAMPLES if self.problem(example) is None][:3]
        return ACCEPTED + (f"; such as {', '.join(free)}" if free else "")

    def problem(self, path: str) -> Optional[str]:
        path = normal_path(path)
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


def check_inside_workspace(reader: Reader, node: Optional[Node], field: str, text: str, accepted: str,
                           absolute_too: bool = True) -> None:
    """A path the spec reads as relative to ``workspace.path`` stays inside it (``../../etc`` is refused); with
    ``absolute_too``, an absolute one is a folder of the job's own, never a system folder (the entrypoint's rule,
    ``systemfolders.path_problem``). ``accepted`` is the field's own words, with examples of its kind."""
    problem = path_problem(text, absolute_too)
    if problem is not None:
        raise reader.fail(node, field, problem, accepted)
