"""Rendered files name the spec they came from and the exact command that renders them again.

Why: the renderers write "from the cluster spec (nodeweave.yaml)" and "run `nodeweave render
images`" into every file's head, which was wrong for ``--spec b.yaml`` (issue 43, s9): the hint
rendered the other spec, or none. The renderers stay pure functions of the spec (goldens and
byte-stability hold for the default file); here, at one place, a render from another file or into
another folder gets ``--spec FILE`` and ``--out DIR`` (seen from the spec's folder, where the command
is to be run: it refreshes the very files, walk5 W28) in its comment lines. No renderer names `make render`
(walk6, W25): that target is nodeweave's own checkout's, and a team's folder has no Makefile.
"""

from __future__ import annotations

import re
import shlex
from typing import Dict, Optional

from nodeweave.targets.registry import Rendered

DEFAULT = "nodeweave.yaml"
_COMMAND = re.compile(r"`nodeweave render ([a-z][a-z-]*)`")
_SUBMIT = re.compile(r"(#   sbatch )(slurm/job\.sbatch)( *)")  # the sbatch line, from the spec's directory


def named_for(files: Dict[str, Rendered], spec_file: str, out: Optional[str] = None) -> Dict[str, Rendered]:
    """``files`` whose comment lines (and the bake file's mark) name ``spec_file`` (its name) and ``out`` (the
    output folder seen from the spec's, None when the same), so the command they print, run in the spec's
    folder, refreshes these very files (walk5, W28: without ``--out`` it rendered a second copy beside the
    spec). Both are the spec folder's, never the shell's: the bytes do not depend on where render ran."""
    if spec_file == "-" or (spec_file == DEFAULT and out is None) or any(
            c in spec_file + (out or "") for c in '"\\\n'):
        return files  # the default render stays byte-stable; JSON and comments stay whole
    return {path: _named(content, spec_file, out) if isinstance(content, str) else content
            for path, content in files.items()}


def _named(text: str, spec_file: str, out: Optional[str]) -> str:
    words = [] if spec_file == DEFAULT else ["--spec", spec_file]
    words += [] if out is None else ["--out", out]
    flags = " ".join(shlex.quote(word) for word in words)

    def rewrite(line: str) -> str:
        line = line.replace(DEFAULT, spec_file)
        if out is not None:
            line = _SUBMIT.sub(lambda m: m.group(1) + shlex.quote(f"{out}/{m.group(2)}")
                               + " " * max(1, len(m.group(3)) - len(out) - 1), line)
        return _COMMAND.sub(lambda m: f"`nodeweave render {m.group(1)} {flags}` in the spec's folder", line)

    lines = text.split("\n")
    return "\n".join(rewrite(line) if line.lstrip().startswith("#") or "Rendered by nodeweave" in line else line
                     for line in lines)


def render_command(target: str, spec_path, out_dir, force: bool = False) -> str:
    """```nodeweave render TARGET``` as a hint typed in the shell's folder: with ``--spec`` as the command was given it
    (unless the default) and ``--out`` where ``out_dir`` (resolved) is not the spec's folder, so pasting it refreshes
    the very files the hint is about (walk9 A13: a build's "`nodeweave render` refreshes it" rendered the other spec,
    or into another folder); ``force`` where the render would refuse without it."""
    import os
    from pathlib import Path

    from nodeweave.specpath import spec_folder

    words = ["nodeweave", "render", target] + (["--force"] if force else [])
    if spec_path is None:  # a caller that knows no spec file (a library call): the render in the spec's folder
        return "`" + " ".join(shlex.quote(w) for w in words) + "`"
    spec_path = Path(spec_path)
    if spec_path != Path(DEFAULT):
        words += ["--spec", str(spec_path)]
    if out_dir is not None and Path(out_dir).resolve() != spec_folder(spec_path).resolve():
        words += ["--out", os.path.relpath(Path(out_dir).resolve())]
    return "`" + " ".join(shlex.quote(w) for w in words) + "`"


def named_in(text: str, path: str, spec_path, out_dir) -> str:
    """``text`` (the rendered file ``path``) as ``render --spec spec_path --out out_dir`` writes it: what a file
    rendered into ``out_dir`` from ``spec_path`` is compared with (walk9 A13: a Dockerfile rendered with --out
    counted as differing by its header line alone)."""
    import os
    from pathlib import Path

    from nodeweave.specpath import spec_folder

    if spec_path is None or str(spec_path) == "-":
        return text
    folder = spec_folder(Path(spec_path)).resolve()
    out = os.path.relpath(Path(out_dir).resolve(), folder)
    return named_for({path: text}, Path(spec_path).name, None if out == "." else out)[path]
