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

from ..errors import EXIT_NOT_FOUND, UsageError
from .runstate import run_dir

NO_PYTHON = {"torchrun": "--no-python", "deepspeed": "--no_python", "accelerate": "--no_python"}


def profile_dir(settings):
    return os.path.join(run_dir(settings.env, settings.get("run_id") or "unnamed"), "profile")


# What each profiler traces unless the user says (NODEWEAVE_PROFILE_OPTIONS replaces it), and the
# options that would move its output away from the folder nodeweave collects.
DEFAULT_OPTIONS = {"nsys": [], "rocprofv3": ["--kernel-trace", "--stats"]}
OUTPUT_OPTIONS = {"nsys": ("-o", "--output", "-f", "--force-overwrite"),
                  "rocprofv3": ("-d", "--output-directory", "-o", "--output-file")}


def checked_options(tool, options, source):
    for option in options:
        name = option.split("=", 1)[0]
        if name in OUTPUT_OPTIONS[tool]:
            raise UsageError(f"profiler option {option!r} (from {source}) sets {tool}'s output, which nodeweave "
                             f"collects from the run's folder; accepted: any other {tool} option "
                             f"(e.g. {'--trace=cuda,nvtx --stats=true' if tool == 'nsys' else '-i input.yaml --stats'})")
    return list(options)


def profiler_argv(tool, directory, node_rank, options=None):
    """The profiler's command line, one output file per rank: ``node<N>-rank<RANK>``; ``options`` its own."""
    name = f"node{node_rank}-rank"
    own = DEFAULT_OPTIONS[tool] if options is None else list(options)
    if tool == "nsys":  # %q{VAR}: nsys expands an environment variable in the output name
        return ["nsys", "profile", *own, "--output", os.path.join(directory, name + "%q{RANK}"),
                "--force-overwrite", "true"]
    # rocprofv3: %env{VAR}% in the output file name; the application follows --
    return ["rocprofv3", *own, "--output-directory", directory, "--output-file", name + "%env{RANK}%", "--"]


def _on_path(tool, env):
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        if os.access(os.path.join(folder or ".", tool), os.X_OK):
            return True
    return False


def profiler_missing(settings, setup_too=False):
    """(why, exit code) when the profiler the ranks would run under is not on PATH here, else None. Judged as a
    missing launcher is (``programs.launcher_missing``): the start refuses it before any wait
    (``consistency.start_problem``), ``--explain`` warns (walk8 B35); with launcher.setup lines None unless
    ``setup_too``: they run first and may put it on PATH."""
    tool = settings.get("profile")
    if not tool or _on_path(tool, settings.env) or (settings.get("setup") and not setup_too):
        return None
    return (f"profiler {tool!r} (from {settings.source('profile')}) is not on PATH on this node; install it in "
            "the image (or on the host), or run without --profile", EXIT_NOT_FOUND)


def wrap_ranks(launch, command, settings, node_rank):
    """Rewrite ``launch.argv`` (launcher options + ``command``) so every rank runs under the profiler."""
    tool = settings.get("profile")
    directory = profile_dir(settings)
    options = settings.get("profile_options")
    if options is not None:
        options = checked_options(tool, options, settings.source("profile_options"))
    prefix = profiler_argv(tool, directory, node_rank, options)
    options = launch.argv[:len(launch.argv) - len(command)]
    if launch.launcher in NO_PYTHON:
        launch.argv = [*options, NO_PYTHON[launch.launcher], *prefix, sys.executable, "-u", *command]
    else:
        launch.argv = [*options, *prefix, *command]
    launch.files[os.path.join(directory, "README")] = (
        f"{tool} output of every rank on node {node_rank}, collected by nodeweave run into the run folder\n")
    launch.notes.append(f"every rank runs under {tool}; its output goes to {directory}")
