"""Rendered files name the spec they came from and the exact command that renders them again.

Why: the renderers write "from the cluster spec (nodeweave.yaml)" and "run `nodeweave render
images`" into every file's head, which was wrong for ``--spec b.yaml`` (issue 43, s9): the hint
rendered the other spec, or none. The renderers stay pure functions of the spec (goldens and
byte-stability hold for the default file); here, at one place, a render from another file gets
that file's name and ``--spec FILE`` in its comment lines, and loses `make render`, which renders
the repository's nodeweave.yaml only.
"""

from __future__ import annotations

import re
import shlex
from typing import Dict

from nodeweave.targets.registry import Rendered

DEFAULT = "nodeweave.yaml"
_COMMAND = re.compile(r"`nodeweave render ([a-z][a-z-]*)`")
_MAKE = re.compile(r" \(or `make render`\)")


def named_for(files: Dict[str, Rendered], spec_file: str) -> Dict[str, Rendered]:
    """``files`` whose comment lines (and the bake file's mark) name ``spec_file`` (a name beside the output)."""
    if spec_file in (DEFAULT, "-") or any(c in spec_file for c in '"\\\n'):  # JSON and comments stay whole
        return files
    return {path: _named(content, spec_file) if isinstance(content, str) else content
            for path, content in files.items()}


def _named(text: str, spec_file: str) -> str:
    flag = f"--spec {shlex.quote(spec_file)}"

    def rewrite(line: str) -> str:
        line = _MAKE.sub("", line)
        line = _COMMAND.sub(lambda m: f"`nodeweave render {m.group(1)} {flag}`", line)
        return line.replace(DEFAULT, spec_file)

    lines = text.split("\n")
    return "\n".join(rewrite(line) if line.lstrip().startswith("#") or "Rendered by nodeweave" in line else line
                     for line in lines)
