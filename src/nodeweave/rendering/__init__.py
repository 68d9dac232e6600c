"""Writing what the renderers make: plan every file first, then write all of it or nothing.

The renderers are pure (``render_files(spec) -> {path: text or bytes}``), listed once in
:data:`RENDERERS` (adding a target is one row). :func:`plan_render` compares
their output with what is on disk and returns ``render``'s :class:`~nodeweave.plan.Plan`: one
:class:`~nodeweave.plan.RenderFilesPhase` (new, changed, unchanged, refused, obsolete, kept per
file), which ``nodeweave render`` prints, checks (``--check``: stale files) or hands the one
executor (``nodeweave.cluster.execute``), like every verb that acts. A differing file is
overwritten only when it carries the "by nodeweave" mark every rendered file
starts with (or with ``force``), so a user's own file is never clobbered; a
binary (the entrypoint zipapp) carries the mark in its text head, before its
first NUL byte (``plan.py``).
"""

from nodeweave.rendering.plan import MARK, is_marked, plan_render, render_phase, write_rendered
from nodeweave.targets.registry import RENDERERS, Target, render_targets, wanted_targets

__all__ = ["MARK", "RENDERERS", "Target", "is_marked", "plan_render", "render_phase", "render_targets",
           "wanted_targets", "write_rendered"]
