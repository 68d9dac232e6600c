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

# The names below, imported on first use (PEP 562): ``render --check`` answered from its memo
# (``memo.py``) loads neither the spec nor a renderer.
_HOMES = {
    "nodeweave.renderedmark": ("is_marked",),
    "nodeweave.rendering.plan": ("MARK", "plan_render", "render_phase", "write_rendered"),
    "nodeweave.targets.registry": ("RENDERERS", "Target", "render_targets", "wanted_targets"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__all__ = ["MARK", "RENDERERS", "Target", "is_marked", "plan_render", "render_phase", "render_targets",
           "wanted_targets", "write_rendered"]
