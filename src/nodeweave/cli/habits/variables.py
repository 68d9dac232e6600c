"""The NODEWEAVE_* variables the ``nodeweave`` command itself reads, and the one rule for an empty one.

Why one list: each reader once judged an empty value its own way. ``NODEWEAVE_ENGINE=`` and
``NODEWEAVE_SPEC=`` were refused, while ``NODEWEAVE_IMAGE=`` quietly meant the spec's image (walk5, W14)
and ``NODEWEAVE_CACHE_DIR=`` the default folder. A variable set but empty is most often ``-e X=$Y`` with
``Y`` unset: the CLI refuses it at start-up, before any verb runs, naming the variable and what it
accepts (an empty value is never read as "not said"). A new variable the CLI reads goes here, and
tests/test_walk5_run.py walks every row. (The entrypoint's own variables follow its contract:
docs/entrypoint.md, ``empty-variable``.)
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

# name -> what it accepts, as "<what>, or unset it for <the default>"
CLI_VARIABLES = {
    "NODEWEAVE_ENGINE": "podman or docker, or unset it for the default",
    "NODEWEAVE_SPEC": "a spec file, or unset it to find nodeweave.yaml here or above",
    "NODEWEAVE_IMAGE": "an image reference, or unset it for the spec's image",
    "NODEWEAVE_CACHE_DIR": "an absolute folder, or unset it for $XDG_CACHE_HOME/nodeweave (~/.cache/nodeweave)",
    "NODEWEAVE_PLAN_RECORD": "a file to record the executed plan in, or unset it to record none",
    "NODEWEAVE_RICH_HELP": "on or off, or unset it for plain help in a pipe",
}


# The variables the nodes read that a user sets by hand, beyond the contract's rows (entrypoint/planning/contract.py,
# SETTINGS: each row's variable, its flag, its spec field): name -> what sets it when nodeweave starts the nodes.
BY_HAND = {
    "NODEWEAVE_RUNTIME": ("the rendered slurm/job.sbatch", "the spec's slurm.runtime"),
}
# A contract row whose value a verb's flag gives (not, or not only, the spec): the flag to name.
VERB_FLAG = {
    "NODEWEAVE_MODE": "`nodeweave up --hold` (else the spec's launcher.mode)",
    "NODEWEAVE_NNODES": "the spec's nodes (or `nodeweave run --nodes` for fewer of them)",
    "NODEWEAVE_PROFILE": "`nodeweave run --profile`",
    "NODEWEAVE_PROFILE_OPTIONS": "`nodeweave run --profile-options`",
    "NODEWEAVE_RUN_ID": "`nodeweave run` (each run its own)",
    "NODEWEAVE_JOB_ID": "the spec's name",
    "NODEWEAVE_IMAGE_REF": "the image `nodeweave up` starts",
}


# Variables the rendered files set in each container, beside the contract's (which the spec's fields give).
SET_IN_CONTAINERS = {
    "NODEWEAVE_POD_INDEX": "the rendered Kubernetes manifests, for each pod (its index), never taken from a shell",
}


def node_variables() -> "dict[str, str]":
    """{NODEWEAVE_* variable only the nodes read: what sets it when nodeweave starts them}: one table, from the
    entrypoint's contract (each row's spec field or flag) plus ``BY_HAND``, less what this command reads itself."""
    from nodeweave.entrypoint.planning.contract import SETTINGS

    table = {}
    for row in SETTINGS:
        if not row.variable or row.variable in CLI_VARIABLES:
            continue
        if row.variable in VERB_FLAG:
            table[row.variable] = VERB_FLAG[row.variable]
        elif row.spec:
            table[row.variable] = f"the spec's {row.spec}"
        elif row.topology:
            table[row.variable] = "nodeweave, for each node (its rank and node 0's address)"
        else:
            table[row.variable] = f"nodeweave-entrypoint's {row.flag} on the node (no spec field sets it)"
    for name, (reader, instead) in BY_HAND.items():
        table[name] = instead
    # walk8 A24: what nodeweave itself sets inside the containers, in no contract row, was never named when left
    # exported from trying examples/resilient_train.py by hand or from a pod's shell
    from nodeweave.entrypoint.model import SET_FOR_RANKS

    for name in SET_FOR_RANKS:
        table[name] = "nodeweave-entrypoint, for its ranks (each generation's), never taken from a shell"
    table.update(SET_IN_CONTAINERS)
    return table


def node_variable_lines(environ: Optional[Mapping[str, str]] = None) -> "list[str]":
    """One line per reader (the nodes, a rendered file) of the variables of ``environ`` (this process's) that only
    it reads: that this command neither reads them nor passes them on, and what does set each. A correctly spelt ``NODEWEAVE_NNODES=4`` left in the shell
    from trying the entrypoint was ignored without a word, while its typo was named (walk6 W13, W42)."""
    environ = os.environ if environ is None else environ
    by_reader = {}
    for name, instead in node_variables().items():
        if name in environ:
            reader = BY_HAND[name][0] if name in BY_HAND else "nodeweave-entrypoint in the nodes"
            by_reader.setdefault(reader, []).append((name, instead))
    lines = []
    for reader, found in by_reader.items():
        if len(found) == 1:
            name, instead = found[0]
            lines.append(f"{name}={environ[name]} in this environment is read by {reader}, not by this command, "
                         f"which neither reads it nor passes it on; what sets it: {instead}")
            continue
        # a local job's ten variables left exported were ten lines (walk16b B1): one line names them all
        lines.append(f"{len(found)} variables in this environment are read by {reader}, not by this command, which "
                     "neither reads them nor passes them on: " + "; ".join(
                         f"{name}={environ[name]} (what sets it: {instead})" for name, instead in found))
    return lines


def empty_variable_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The line refusing the first CLI variable of ``environ`` (this process's) that is set but empty (or only
    blanks); None: none is."""
    environ = os.environ if environ is None else environ
    for name, accepted in CLI_VARIABLES.items():
        if name in environ and not environ[name].strip():
            return f"{name} is set but empty: {accepted} (an empty value is never read as 'not said')"
    return None


def variable_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The start-up refusal of the CLI's variables: an empty one, or a value of the wrong shape where the variable
    names a folder (``NODEWEAVE_CACHE_DIR`` relative or a file: ``nodeweave.cachedir``) or a file nodeweave writes
    (``NODEWEAVE_PLAN_RECORD``: ``plan_record_problem``)."""
    from nodeweave.cachedir import cache_dir_problem

    return (empty_variable_problem(environ) or cache_dir_problem(environ) or plan_record_problem(environ)
            or announce_problem(environ))


def announce_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """``NODEWEAVE_RUN_ANNOUNCE``, the file a detached run names its folder in: ``run --detach`` sets it to a new
    path in a folder of its own, so anything already there (a file of the user's, a link) is never written over,
    as no file nodeweave writes where a variable names it is (walk7 A5's class)."""
    from nodeweave.cli.habits.detach import ANNOUNCE_ENV

    environ = os.environ if environ is None else environ
    given = environ.get(ANNOUNCE_ENV, "")
    if given.strip() and os.path.lexists(given):
        return (f"{ANNOUNCE_ENV}={given} names something that exists: that variable is set by `nodeweave run "
                "--detach` for its own background run, to a new file, and nodeweave never writes over one there; "
                "unset it")
    return None


def plan_record_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The line refusing ``NODEWEAVE_PLAN_RECORD`` by the rule of every option naming a file nodeweave writes
    (``output_file``, ``refuse_foreign_file``): a regular file that is an earlier plan record, or a new path in a
    folder that exists; never a link, a device, a pipe, a folder, nor a file of the user's (walk7 A5: a
    tab-completed ``NODEWEAVE_PLAN_RECORD=$PWD/train.py`` replaced the training script with the plan). Judged
    before any verb runs; None: unset, empty (the empty rule's) or fine."""
    from pathlib import Path

    from nodeweave.cli.habits.output import in_system_tree, not_a_file_to_write
    from nodeweave.failures import own_file_problem
    from nodeweave.jobstate import STATE_DIR
    from nodeweave.cli.habits.replace import refuse_foreign_file
    from nodeweave.errors import UsageError

    environ = os.environ if environ is None else environ
    name = "NODEWEAVE_PLAN_RECORD"
    given = environ.get(name, "")
    if not given.strip():
        return None
    problem = not_a_file_to_write(Path(given))
    if problem:
        return f"{name}={given} {problem}; accepted: {CLI_VARIABLES[name]}"
    own = in_system_tree(Path(given)) or own_file_problem(Path(given))  # the options' own-folder rule (walk17 A3)
    if own:
        return (f"{name}={given}: {own}; accepted: a file of your own to record the executed plan in (not inside "
                f"{STATE_DIR}/ or a run folder), or unset it to record none")
    try:
        refuse_foreign_file(Path(given), name, "plan", subject=f"{name}={given}")
    except UsageError as err:
        return str(err)
    return None
