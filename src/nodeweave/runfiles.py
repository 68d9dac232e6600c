"""A run folder's files, named when one is given as the spec (walk9 A9, walk10 A16, replay11 A16).

Why a module of its own, light (the standard library, ``errors``, ``failures``' runs store, ``specpath``): every
verb's command line asks it as ``--spec`` is read (``habits.base.refuse_run_record_spec``), before anything loads
the spec; in ``spec.loader`` it cost every verb the spec's import (~100 ms of `render all --check`'s answer from
its memo, and of `status`).
"""

from __future__ import annotations

import os
from pathlib import Path

from nodeweave.errors import UsageError
from nodeweave.specpath import is_stdin, is_stream


def refuse_run_record(path: Path) -> None:
    """A file inside a run folder (its ``spec.yaml``, "the spec the run started from") given as the spec: one line
    naming it as the run's record and the spec to give (walk9 A9: ``validate`` said valid, ``up`` and ``run`` wrote
    inside the run folder, the ``runs`` verbs looked for runs inside it). Every verb's --spec meets it
    (``habits.spec_path.find_spec``), and so does every load."""
    if is_stream(path) or is_stdin(path):
        return
    run = run_folder_of(path)
    if run is not None:
        found = spec_above(run.parent)
        shown = found and os.path.relpath(found)
        copy = (", or copy this file out of the run folder to start from it" if run_file_is_spec(path.name)
                else "")  # only the spec it started from is one (replay11 A16: a plan, a log, run.json were told so)
        raise UsageError(f"{path} is a run's record ({run_file_words(path.name, run.name)}), not a "
                         "spec: its folder is no workspace, and nothing of nodeweave's is written inside a run "
                         f"folder; give the spec itself{f' (--spec {shown})' if shown else ''}{copy}")


# What each file of a run folder holds (cluster.runfolder's list), as a refusal names it (walk10 A16: a node's plan
# was called "the spec the run started from"): (file name pattern, words; {run}: the run's id, {0}: the node). The
# first, the spec, is the only one that is a spec copied out (``run_file_is_spec``).
RUN_FILES = ((r"spec\.yaml", "the spec run {run} started from, as it was"),
             (r"node-(\d+)\.plan\.json", "node {0}'s plan in run {run}"),
             (r"node-(\d+)\.log", "node {0}'s output in run {run}"),
             (r"run\.json", "run {run}'s own record: its command, nodes and exit codes"),
             (r"goodput\.json", "run {run}'s goodput"), (r"heat\.json", "run {run}'s step-time heat map"),
             (r"recovery\.json", "run {run}'s recovery record"), (r"stalls\.txt", "run {run}'s stall reports"))


def run_file_is_spec(name: str) -> bool:
    """Whether the run folder's file ``name`` is a spec one may start from, copied out (``RUN_FILES``' first row,
    spec.yaml); every other file there (a node's plan, a log, the run's own records) is no spec anywhere."""
    import re

    return re.fullmatch(RUN_FILES[0][0], name) is not None


def run_file_words(name: str, run: str) -> str:
    """What the file ``name`` of run ``run`` holds, in a refusal's words (``RUN_FILES``); another file: one of it."""
    import re

    for pattern, words in RUN_FILES:
        found = re.fullmatch(pattern, name)
        if found:
            return words.format(*found.groups(), run=run)
    return f"a file of run {run}"


def run_folder_of(path: Path) -> "Path | None":
    """The run folder ``path`` lies in (its ``spec.yaml``, any file of it), or None: a folder inside the run
    folders' store beside a spec (the rule ``failures.own_file_problem`` writes by), or one holding a run's
    ``run.json`` (a run folder copied elsewhere). As written: a spec that is a link to one has its own folder
    (``specpath.spec_folder``)."""
    from nodeweave.failures import runs_store

    folder = Path(os.path.abspath(path)).parent
    store = runs_store(folder)
    if store is not None and folder != store:
        return store / folder.relative_to(store).parts[0]
    if (folder / "run.json").is_file() and (folder / "spec.yaml").is_file():
        return folder
    return None


def spec_above(path: Path) -> "Path | None":
    """The nearest ``nodeweave.yaml`` in a folder above ``path``, or None."""
    here = Path(os.path.abspath(path)).parent
    return next((folder / "nodeweave.yaml" for folder in (here, *here.parents)
                 if (folder / "nodeweave.yaml").is_file()), None)
