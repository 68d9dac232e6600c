"""Which spec a verb works on when none is named: its own room, so the shell completions in ``output`` and
the command classes in ``base`` both reach it without importing each other."""

from __future__ import annotations

import os
from pathlib import Path

SPEC_NAME = "nodeweave.yaml"
SPEC_ENV = "NODEWEAVE_SPEC"


def find_spec(given: "Path | None") -> Path:
    """The spec a verb works on: ``given`` as is, else the nearest ``nodeweave.yaml`` from here upwards (a file,
    or anything else of that name, which the loader then refuses naming what it is)."""
    if given is not None:
        if _from_variable(given):
            _note_another_spec_here(given)
        return given
    if SPEC_ENV in os.environ and not os.environ[SPEC_ENV].strip():  # click reads an empty variable as unset
        from nodeweave.errors import UsageError

        raise UsageError(f"{SPEC_ENV} is set but empty: a spec file, or unset it to find {SPEC_NAME} here or above "
                         "(an empty value is never read as 'here')")
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / SPEC_NAME
        # whatever is there is that folder's spec: a link to nothing or a folder is named by the loader, never
        # passed over for a spec further up, whose job down/stop would end (walk8 A27)
        if os.path.lexists(candidate):
            if folder == here:
                _note_near_name_beside()
                return Path(SPEC_NAME)
            found = Path(os.path.relpath(candidate, here))
            _note_near_name_here(here, found)
            return found
        _refuse_passing_a_project(here, folder)
    return Path(SPEC_NAME)  # absent: the loader names it and what to pass


def _refuse_passing_a_project(here: Path, folder: Path) -> None:
    """The search for a spec never passes a folder whose ``.nodeweave/<job>/cluster.json`` records a cluster that
    folder's ``up`` made and no ``down`` took down: that folder is a project whose spec was renamed or moved, and a
    spec further up is another folder's job (walk16 A18: after `mv nodeweave.yaml cluster.yaml`, `down` read the
    parent's spec and said "nothing to take down", exit 0, while this folder's nodes ran)."""
    import json

    state = folder / ".nodeweave"
    try:
        records = sorted(state.glob("*/cluster.json")) if state.is_dir() else []
    except OSError:
        return
    for record in records:
        try:
            with open(record, encoding="utf-8") as handle:
                made = json.loads(handle.read(1 << 20)).get("made")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(made, dict) or made.get("job") != record.parent.name:
            continue
        from nodeweave.errors import UsageError

        where = "here" if folder == here else f"in {os.path.relpath(folder, here)}"
        shown = os.path.relpath(record, here)
        spec = made.get("spec") or SPEC_NAME
        raise UsageError(f"no {SPEC_NAME} {where}, yet {shown} records job {record.parent.name} up from "
                         f"{spec} {where}: give --spec with that job's spec (renamed or moved?); a {SPEC_NAME} further "
                         "up is another folder's job and is not read")


def near_names(folder: Path) -> "list[str]":
    """Files in ``folder`` named as the spec is in other tools' habits (``nodeweave.yml``, ``Nodeweave.yaml``),
    which no verb reads: the one rule for the spec's other spellings (a spec under one found above, ``init`` writing
    one beside another, a verb reading nodeweave.yaml beside one). On a case-blind disk ``Nodeweave.yaml`` may be
    nodeweave.yaml itself: not a second file, not named."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())
    except OSError:
        return []
    spec = folder / SPEC_NAME
    near = []
    for name in names:
        if name == SPEC_NAME or name.lower() not in SPELLINGS:
            continue
        try:
            if spec.exists() and os.path.samefile(folder / name, spec):
                continue
        except OSError:
            continue
        near.append(name)
    return near


SPELLINGS = ("nodeweave.yaml", "nodeweave.yml")  # lower-cased: the spec's name and the spellings no verb reads


def _note_near_name_beside() -> None:
    """nodeweave.yaml read here while ``nodeweave.yml`` (another spelling) sits beside it: a second spec no verb
    reads, said on stderr (walk13 A19: `init --out nodeweave.yml` beside nodeweave.yaml passed, and every verb was
    silent about it)."""
    near = near_names(Path.cwd())
    if near:
        import sys

        print(f"nodeweave: note: ./{near[0]} beside {SPEC_NAME} is not read (the spec's name is {SPEC_NAME}): a "
              f"second spec no verb runs; remove or rename it, or give --spec {near[0]}", file=sys.stderr)


def _note_near_name_here(here: Path, found: Path) -> None:
    """The spec found above while a near name sits here (walk8 A28: ``nodeweave.yml`` beside you was passed over
    without a word, and ``down`` planned the parent's job): said on stderr before the verb acts."""
    near = near_names(here) or specs_by_content(here)
    if near:
        import sys

        print(f"nodeweave: note: ./{near[0]} is not read (the spec's name is {SPEC_NAME}); using {found}, the "
              f"parent folder's spec: rename it to {SPEC_NAME}, or give --spec {near[0]}", file=sys.stderr)


SPEC_KEYS = ("launcher", "image", "nodes")  # beside `name`, what makes a YAML file here a spec by its content
SPEC_LOOK_CAP = 64 * 1024  # a spec is small; a larger YAML file here is something else's and is not read


def specs_by_content(folder: Path) -> "list[str]":
    """YAML files in ``folder`` that are a spec by their content (a mapping with ``name`` and one of
    :data:`SPEC_KEYS`: ``cluster.yaml``, ``nodeweave.yaml.bak``), whatever their name (walk16a A29: a spec renamed
    here handed every verb to the parent folder's job without a word)."""
    import yaml

    found = []
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file() and
                       entry.name.lower().endswith((".yaml", ".yml", ".yaml.bak", ".yml.bak")))
    except OSError:
        return []
    for name in names[:20]:
        try:
            with open(folder / name, "rb") as f:
                data = yaml.safe_load(f.read(SPEC_LOOK_CAP + 1)[:SPEC_LOOK_CAP])
        except (OSError, yaml.YAMLError, ValueError):
            continue
        if isinstance(data, dict) and "name" in data and any(key in data for key in SPEC_KEYS):
            found.append(name)
    return found


def _from_variable(given: Path) -> bool:
    """Whether this command's ``--spec`` came from $NODEWEAVE_SPEC: the variable's value, and no --spec typed."""
    from nodeweave.cli.habits.invocation import invoked_argv

    typed = any(word == "--spec" or word.startswith("--spec=") for word in invoked_argv())
    return not typed and os.environ.get(SPEC_ENV) == str(given)


def _note_another_spec_here(given: Path) -> None:
    """$NODEWEAVE_SPEC left in a shell names another folder's spec than the one found here: every verb says so
    on stderr, absolute, before acting on that folder's job (walk5, W62: a `down` here took down that job)."""
    here = Path.cwd()
    found = next((folder / SPEC_NAME for folder in (here, *here.parents) if (folder / SPEC_NAME).is_file()), None)
    if found is None or str(given) == "-":
        return
    try:
        same = found.resolve() == given.resolve()
    except OSError:
        return
    if not same:
        import sys

        shown = os.path.relpath(found, here)
        verb = _destructive_verb()
        if verb:
            from nodeweave.errors import UsageError

            raise UsageError(f"${SPEC_ENV} names {given.resolve()}, another folder's spec than {shown} found here, and "
                             f"{verb} that folder's job from this one: give --spec (--spec "
                             f"{shown} for this folder's job), or unset {SPEC_ENV}")
        print(f"nodeweave: note: the spec is {given.resolve()} (from ${SPEC_ENV}), not {shown} found here: every "
              f"path and the job this command acts on are that spec's; unset {SPEC_ENV} or give --spec {shown}",
              file=sys.stderr)


# What a verb typed with a $NODEWEAVE_SPEC left in the shell that names another folder's spec than the one found here
# would do to that folder's job: every verb that acts on a cluster or writes into that folder is refused, not only
# noted (walk15 A22: `down` in bob's folder took alice's job down, under a note; walk16 A5: `run`, `exec`, `shell`,
# `sync`, `render` and `image build` still acted on it). One rule: a verb is refused unless it only reads (READS).
ACTS = {"down": "take down", "stop": "stop the run of", "up": "recreate the nodes of",
        "run": "start a run on the nodes of", "exec": "run a command on the nodes of", "shell": "open a shell in",
        "sync": "push files to the nodes of", "check": "run checks on the nodes of",
        "bench": "run a benchmark on the nodes of", "render": "write the rendered files of",
        "image": "build the image of"}
# Verbs (and `verb subverb`s, or `verb --flag`s) that only read the spec and what its job wrote: said in a note.
READS = {"validate", "status", "logs", "top", "dashboard", "doctor", "runs", "hosts", "init", "image variants",
         "render --check"}


def _destructive_verb() -> str:
    """The verb being run, as typed (``sync --delete``), and what it would do to the spec's job, unless it only
    reads (:data:`READS`); else "". Read from the call's arguments (the verb first: ``verb_options_first`` put it
    there), the one record of what was typed."""
    from nodeweave.cli.habits.invocation import invoked_argv

    argv = invoked_argv()
    if not argv:
        return ""
    typed = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    sub = typed[0] if typed and not typed[0].startswith("-") else ""
    if argv[0] in READS or f"{argv[0]} {sub}" in READS or any(f"{argv[0]} {word}" in READS for word in typed):
        return ""
    verb = f"{argv[0]} {sub}" if argv[0] == "image" and sub else argv[0]
    does = ACTS.get(argv[0], "act on")
    if argv[0] == "sync" and "--delete" in typed:
        verb, does = "sync --delete", "delete files on the nodes of"
    return f"`nodeweave {verb}` would {does}"


def spec_above(folder: Path) -> "Path | None":
    """The nearest ``nodeweave.yaml`` in a folder above ``folder`` (not in it): the spec every verb typed in
    ``folder`` reads today, which a spec written there would take the folder from."""
    folder = Path(os.path.abspath(folder))
    return next((above / SPEC_NAME for above in folder.parents if (above / SPEC_NAME).is_file()), None)


def variable_elsewhere(written: Path) -> "Path | None":
    """The spec $NODEWEAVE_SPEC names when it is not ``written``: the one the next verbs typed read instead."""
    named = os.environ.get(SPEC_ENV, "").strip()
    if not named or named == "-":
        return None
    try:
        return None if Path(named).resolve() == Path(written).resolve() else Path(named).resolve()
    except OSError:
        return None


def reader_spec(given: "Path | None") -> Path:
    """The spec a verb that only reads run folders (``runs ls|show|compare``, ``logs --run``, ``dashboard --run``)
    reads them beside, as :func:`find_spec` finds it. One the user named (--spec, NODEWEAVE_SPEC) must be a spec: a
    missing file, an empty one, a device or an invalid spec is refused with the line every verb gives it (exit 2),
    never read as runs/ beside it (walk11 A14: `runs ls --spec nodeweave.ymal` listed nothing, exit 0). None named:
    no spec here is taken (runs read on their own, ``--runs-dir``)."""
    found = find_spec(given)
    if given is not None and str(given) != "-":  # a stream is read by the verbs that take one, once
        from nodeweave.spec import load_spec

        load_spec(found)
    return found
