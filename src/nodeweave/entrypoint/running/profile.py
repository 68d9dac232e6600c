"""Every rank under a profiler: ``--profile nsys|rocprofv3`` (``NODEWEAVE_PROFILE``, ``nodeweave run --profile``).

The launchers start ``python SCRIPT`` per rank; with their own no-python
switch (torchrun ``--no-python``, deepspeed and accelerate ``--no_python``)
they start ``PROFILER ... python -u SCRIPT`` instead, so each rank, and only
the ranks, runs under the profiler, with ``RANK`` set by the launcher naming
its file. A plain command is prefixed. Output goes to
``$TMPDIR/nodeweave/runs/<run id>/profile`` on the node, where ``nodeweave
run`` collects it into the run folder.
"""

import os
import sys

from ..errors import EXIT_NOT_FOUND, EntrypointError
from .runstate import run_dir

NO_PYTHON = {"torchrun": "--no-python", "deepspeed": "--no_python", "accelerate": "--no_python"}


def profile_dir(settings):
    return os.path.join(run_dir(settings.env, settings.get("run_id") or "unnamed"), "profile")


def profiler_argv(tool, directory, node_rank):
    """The profiler's command line, one output file per rank: ``node<N>-rank<RANK>``."""
    name = f"node{node_rank}-rank"
    if tool == "nsys":  # %q{VAR}: nsys expands an environment variable in the output name
        return ["nsys", "profile", "--output", os.path.join(directory, name + "%q{RANK}"), "--force-overwrite", "true"]
    # rocprofv3: %env{VAR}% in the output file name; the application follows --
    return ["rocprofv3", "--kernel-trace", "--stats", "--output-directory", directory,
            "--output-file", name + "%env{RANK}%", "--"]


def _on_path(tool, env):
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        if os.access(os.path.join(folder or ".", tool), os.X_OK):
            return True
    return False


def wrap_ranks(launch, command, settings, node_rank):
    """Rewrite ``launch.argv`` (launcher options + ``command``) so every rank runs under the profiler."""
    tool = settings.get("profile")
    if not _on_path(tool, settings.env):
        raise EntrypointError(f"profiler {tool!r} (from {settings.source('profile')}) is not on PATH in this "
                              f"container; install it in the image, or run without --profile", EXIT_NOT_FOUND)
    directory = profile_dir(settings)
    prefix = profiler_argv(tool, directory, node_rank)
    options = launch.argv[:len(launch.argv) - len(command)]
    if launch.launcher in NO_PYTHON:
        launch.argv = [*options, NO_PYTHON[launch.launcher], *prefix, sys.executable, "-u", *command]
    else:
        launch.argv = [*options, *prefix, *command]
    launch.files[os.path.join(directory, "README")] = (
        f"{tool} output of every rank on node {node_rank}, collected by nodeweave run into the run folder\n")
    launch.notes.append(f"every rank runs under {tool}; its output goes to {directory}")
