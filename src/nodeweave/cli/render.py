"""``nodeweave render``: the command line over ``nodeweave.rendering``.

Plans every file first (``nodeweave.rendering.plan_render``: a :class:`~nodeweave.plan.Plan` of one ``render``
phase, like every verb that acts) and hands it to the one executor (``nodeweave.cluster.execute``) only when
nothing is refused; ``--dry-run`` prints that plan, ``--check`` compares without writing and exits 4 when the files
on disk are stale (what CI and tests/test_rendered_up_to_date.py use).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from nodeweave.cli.habits.invocation import as_program
from nodeweave.cli.habits.base import find_spec, spec_option
from nodeweave.cli.habits.output import complete_from, data_format, is_data, output_option, tell
from nodeweave.errors import EXIT_STALE, NodeweaveError, UsageError
from nodeweave.failures import path_problem, writable_dir
# nodeweave.rendering.RENDERERS' names, spelled here so `--help` and `status` need not import every
# renderer (tests/test_cli_startup.py holds the two equal).
TARGET_NAMES = ("images", "compose", "manifests", "entrypoint", "slurm", "openshift-build", "trainjob", "jobset")
NODE_TARGETS = {"compose", "manifests", "slurm", "trainjob", "jobset"}  # what starts the job's nodes


# A team's folder often has its own .dockerignore: render never takes it over (issue 43, row 48). Docker reads
# only the context's .dockerignore, so nodeweave's rules are written where a person merges them from.
DOCKERIGNORE = ".dockerignore"
KEPT_DOCKERIGNORE = "images/nodeweave.dockerignore"


def _relative_host_paths(spec) -> "list[str]":
    return [
        f"{field}.host_path {value!r}"
        for field, value in (("workspace", spec.workspace.host_path), ("cache", spec.cache.host_path))
        if not value.startswith(("/", "~"))
    ]


def _report(plan, fmt: str) -> None:
    """The plan as every verb's dry run prints it (``show_plan``: a line per file; ``-o json|yaml``: its
    ``to_dict()``), and, after a real render, what it did; in text, the counts follow on stderr."""
    from nodeweave.cli.habits.clusteropts import show_plan

    show_plan(plan, fmt)
    if is_data(fmt):
        return
    (phase,) = plan.phases
    where = os.path.relpath(phase.out)
    where = phase.out if where.startswith("..") else where
    tell((", ".join(f"{n} {s}" for s, n in phase.counts().items() if n) or "nothing to render") + f" in {where}")


def _stale_hint(files_phase, out_dir: Path, job: str, spec_path: Path, out: "Path | None") -> str:
    """What a check that found stale files tells to do: the render command that will work, judged by the very rules
    the render itself applies (walk9 A22: the hint pasted as it was answered "refusing to overwrite")."""
    from nodeweave.rendering import MARK
    from nodeweave.specpath import spec_folder

    if files_phase.refused:
        return (f"{_shown(files_phase.refused)} lack(s) the '{MARK}' mark, so the render takes them for yours and "
                f"refuses them: move them away, or run {_rerender(spec_path, out, force=True)} and commit the result")
    try:
        refuse_another_jobs_render(out_dir, files_phase, job, spec_path if out_dir == spec_folder(spec_path) else None)
    except UsageError as refused:
        return f"the render would be refused as it stands: {refused}"
    return f"run {_rerender(spec_path, out)} and commit the result"


def _rerender(spec_path: Path, out: "Path | None", force: bool = False) -> str:
    """The exact command that brings the files up to date, with the --spec and --out this check was given (and
    --force where the render would refuse without it); `make render` only where a Makefile beside the spec has that
    target (a team's folder has none)."""
    import shlex

    from nodeweave.cli.habits.base import SPEC_NAME
    from nodeweave.entrypoint import bounded

    words = ["nodeweave", "render", "all", "--prune"] + (["--force"] if force else [])
    if spec_path != Path(SPEC_NAME):
        words += ["--spec", str(spec_path)]
    if out is not None:
        words += ["--out", str(out)]
    command = f"`{' '.join(shlex.quote(w) for w in words)}`"
    from nodeweave.specpath import spec_folder

    makefile = spec_folder(spec_path) / "Makefile"
    try:
        text = bounded.read_text(makefile, bounded.TEXT_CAP, "a Makefile", errors="replace") \
            if makefile.is_file() else ""
        has_target = "\nrender:" in "\n" + text
    except OSError:
        has_target = False
    return f"`make render` (or {command})" if has_target and words[4:] == [] else command


def refuse_pruning_users_files(spec, spec_path: Path, out_dir: Path, phase) -> None:
    """The spec, its ``image.requirements`` and its ``launcher.script`` are the user's wherever they sit (even under a
    rendered tree): a record that would have ``--prune`` remove one is refused, whatever its digest says (W33)."""
    from nodeweave.specpath import spec_folder

    folder = spec_folder(spec_path)
    own = {spec_path.resolve(): "the spec"}
    if spec.image.requirements:
        own[(folder / spec.image.requirements).resolve()] = "image.requirements"
    own[(folder / spec.launcher.script).resolve()] = "launcher.script"
    for item in phase.files:
        if item.status in ("obsolete", "kept") and (out_dir / item.path).resolve() in own:
            raise UsageError(f"{out_dir / '.nodeweave/rendered.json'}: entry {item.path!r} is "
                             f"{own[(out_dir / item.path).resolve()]} of {spec_path}, a file of yours that nodeweave "
                             "never renders; remove the record (the next render records afresh)")


def _shown(paths: "list[str]") -> str:
    return ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")


def _render(spec, spec_path: Path, out: "Path | None", targets: "list[str]",
            everything: bool) -> "tuple[dict, dict, list[str]]":
    """The files of ``targets``; with ``all``, a target the spec cannot feed is left out with a note, not fatal.

    Why: the minimal spec (name, image.variant, launcher.script) of a GPU variant has
    ``gpus_per_node: auto``, which compose takes and Kubernetes cannot (it schedules a count).
    """
    from nodeweave.rendering import render_targets

    files, owners, kept = {}, {}, []
    for name in targets:
        try:
            part = render_targets(spec, [name])
        except UsageError as err:
            if not everything:
                raise UsageError(f"{spec_path}: {err}") from None
            typer.echo(f"nodeweave: note: {name} left out of `render all`: {spec_path}: {err}", err=True)
            continue
        twice = sorted(set(part) & set(files))
        if twice:
            raise NodeweaveError(f"renderers disagree: {twice[0]} is rendered twice (second time by {name})")
        files.update(part)
        owners.update(dict.fromkeys(part, name))
        kept.append(name)
    from nodeweave.rendering.provenance import named_for

    from nodeweave.specpath import spec_folder

    out_from_spec = "." if out is None else os.path.relpath(out.resolve(), spec_folder(spec_path))
    _refuse_quoted_names_not_text(spec_path, out, out_from_spec)
    return (named_for(dict(sorted(files.items())), spec_path.name, None if out_from_spec == "." else out_from_spec),
            owners, kept)


def refuse_nested_out(out: Path, out_dir: Path, files) -> None:
    """``render images --out images``: --out is the root the tree goes under, and the tree starts with images/, so
    it would land in images/images/; refused (exit 2) before anything is written."""
    tops = sorted({Path(name).parts[0] for name in files if len(Path(name).parts) > 1})
    if out_dir.name in tops and not (out_dir / out_dir.name).is_dir():
        example = next(name for name in sorted(files) if Path(name).parts[0] == out_dir.name)
        raise UsageError(f"--out {out}: the rendered tree already starts with {out_dir.name}/ ({example}), so it would "
                         f"go to {out_dir.name}/{out_dir.name}/; --out is the folder that holds {out_dir.name}/: give "
                         f"--out {out_dir.parent if out.is_absolute() else (out.parent if str(out.parent) else '.')}")


def render(
    target: str = typer.Argument("all", metavar="[TARGET]", autocompletion=complete_from(*TARGET_NAMES, "all"), help="what to render: " + ", ".join(TARGET_NAMES) + " or all (images, "
                                    "compose, manifests, entrypoint, plus slurm and openshift-build when the spec has their section)"),
    spec_path: Optional[Path] = spec_option("The cluster spec"),
    out: Optional[Path] = typer.Option(None, "--out", help="output root (default: the spec's directory)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would be written (path, bytes, status); write nothing"),
    diff: bool = typer.Option(False, "--diff", help="print the unified diff of each file the render would write or "
                              "change, as kubectl diff and git diff do; write nothing"),
    as_json: bool = typer.Option(False, "--json", help="print the plan as JSON on stdout (as -o json)"),
    output: str = output_option(),
    check: bool = typer.Option(False, "--check", help="write nothing; exit 4 when the files on disk differ from the spec"),
    force: bool = typer.Option(False, "--force", help="overwrite differing files even without the 'by nodeweave' mark"),
    prune: bool = typer.Option(False, "--prune", help="remove files an earlier render of this spec wrote (recorded in "
                               "<out>/.nodeweave/rendered.json) that no renderer makes any more; one changed since is "
                               "kept and named"),
) -> None:
    """Render images, compose files, manifests, the entrypoint zipapp (and Slurm, OpenShift build, TrainJob, JobSet) into --out, byte-stable."""
    idle = [flag for flag, given in (("--force", force), ("--prune", prune), ("--dry-run", dry_run),
                                     ("--diff", diff)) if given]
    if check and idle:  # each flag here is about writing, which --check never does (walk6 W71: --dry-run too)
        raise UsageError(f"--check writes nothing, so {idle[0]} would do nothing; give --check alone to compare, or "
                         "leave it off to write")
    if target not in (*TARGET_NAMES, "all"):
        raise UsageError(f"render target {target!r} is not accepted: {', '.join(TARGET_NAMES)} or all "
                         "(`nodeweave render --help` says what each renders)")
    if diff and is_data(data_format(as_json, output)):
        raise UsageError("--diff prints the changes as text (a unified diff); -o json or yaml prints the plan: give "
                         "one of them")
    spec_path = find_spec(spec_path)
    seen = None
    if check and as_program():  # the last identical check's answer, when all it rested on is unchanged
        from nodeweave.cli.habits.invocation import invoked_argv
        from nodeweave.rendering import memo

        from nodeweave.specpath import spec_folder

        out_dir = (out if out is not None else spec_folder(spec_path)).resolve()
        call = memo.this_call(invoked_argv(), spec_path, out_dir)
        kept = memo.answer(call) if call else None
        if kept is not None:
            _refuse_out(out, out_dir, writes=False)
            _report(kept, data_format(as_json, output))
            return
        seen = memo.watch(call) if call else None
    try:
        _render_and_check(spec_path, target, out, (as_json, output), dry_run or diff, check, force, prune, seen,
                          diff=diff)
    finally:
        if seen is not None:
            from nodeweave.rendering import memo

            memo.stop(seen)


def spec_name_problem(spec_path: Path) -> str:
    """Why no spec may have ``spec_path``'s name, or "": a byte that is not UTF-8, which every rendered file's header
    would quote. The one rule for render's --spec and for init --out, which writes no spec render would refuse
    (walk14a A17: init wrote one and named `render all --spec` as its next step)."""
    from nodeweave.usertext import is_utf8

    if is_utf8(spec_path.name):
        return ""
    return ("the file's name is not UTF-8 text, and every rendered file's header quotes it (rendered from that "
            "spec) in text that holds only UTF-8")


def _refuse_quoted_names_not_text(spec_path: Path, out: "Path | None", out_from_spec: str) -> None:
    """Every rendered file's header quotes the spec's file name and the --out folder (how to render it again), and
    the files are UTF-8 text: a name holding a byte that is not UTF-8 (a Latin-1 share's) is refused in one line
    naming the option and the name as the shell writes it, before anything is planned (issue 43 N2; it was
    Python's codec text naming neither)."""
    from nodeweave.usertext import is_utf8

    problem = spec_name_problem(spec_path)
    if problem:
        raise UsageError(f"--spec {spec_path}: {problem}; rename the spec (nodeweave.yaml is the default) or copy it "
                         "to a UTF-8 name and give that")
    if out is not None and not is_utf8(out_from_spec):
        raise UsageError(f"--out {out}: the folder's name is not UTF-8 text, and every rendered file's header "
                         "quotes it (how to render it again) in text that holds only UTF-8; give another --out "
                         "whose name is UTF-8 (or rename the folder)")


def _refuse_out(out: "Path | None", out_dir: Path, writes: bool = True) -> None:
    """--out (or the spec's folder) as every render, and a check answered from its memo, first refuse it; a check
    (``writes`` False) writes nothing there, so a read-only tree is no reason to refuse it (walk10 A11: CI's
    read-only checkout)."""
    writable_dir(out_dir, "--out", system_ok=out is None, judge_access=writes)
    from nodeweave.jobstate import refuse_in_the_way
    from nodeweave.rendering.record import RECORD

    refuse_in_the_way(out_dir, out_dir / RECORD)  # the record of what was rendered: never through a link


def refuse_another_jobs_render(out_dir: Path, files_phase, job: str, spec_path: "Path | None" = None) -> None:
    """One line (exit 2) when this render would change files that ``out_dir``'s record says another job's render
    wrote (a mistyped ``--out`` naming a sibling project): they carry the header, so the mark alone let them be
    replaced, and that project's ``up`` would then start this job (walk7 A14). ``--force`` replaces them. In another
    folder than the spec's that holds a spec of its own, every file is that project's, whatever job it names, and
    no file is written there, whether that project has rendered yet or not (walk17 A12).

    ``spec_path`` (given when ``out_dir`` is the spec's own folder): there another job's render is refused only while
    another spec in that folder still names that job (``render all --spec b.yaml`` beside a.yaml's render, issue 43
    A14); a job no spec there names any more is this spec's own, renamed, and re-renders."""
    from nodeweave.rendering.record import RECORD

    recorded = {path: entry_job for path, _, _, entry_job in files_phase.recorded}
    by = f"its {RECORD}"
    if spec_path is None and folder_spec(out_dir) is not None:  # another project: its files are its spec's,
        # whatever the record says and whatever its name (walk11 A13: a fresh clone of a sibling project has no
        # .nodeweave/; walk15 A7: two teammates' copies of one spec share the job name, and bob's render replaced
        # alice's files, where a spec named otherwise was refused; walk17 A12: judged by its spec, not by a render
        # of its own: a sibling that never rendered got this job's files, and its own render was then refused)
        changed = [f for f in files_phase.files if f.status in ("new", "changed")]
        if changed:
            spec_there = folder_spec(out_dir)
            there = folder_spec_job(out_dir)
            named = f"{spec_there.name}, name: {there}" if there else spec_there.name
            raise UsageError(f"{out_dir} is another project's folder (it holds its own spec, {named}): "
                             f"{len(changed)} file(s) this render would write or change there; rendering this spec (job "
                             f"{job}) there would make them this spec's, and that folder's `up` would start this "
                             "spec's job; give another --out, or --force to put this spec's render there")
    theirs = sorted({recorded[f.path] for f in files_phase.files
                     if f.status == "changed" and recorded.get(f.path) not in (None, "", job)})
    owners = {}
    if spec_path is not None:
        owners = specs_naming(out_dir, theirs, spec_path)
        theirs = [name for name in theirs if name in owners]
    if theirs:
        count = sum(1 for f in files_phase.files if f.status == "changed" and recorded.get(f.path) in theirs)
        if owners:
            named = ", ".join(f"{name} ({owners[name].name} names it)" for name in theirs)
            raise UsageError(f"{out_dir} holds the render of job {named}: {count} file(s) this render would change, "
                             f"by its {RECORD}; the rendered files are one set per folder, so rendering {job} "
                             f"there would replace it; give another --out (--out build/{job}), or --force to take "
                             f"the folder over for {job}")
        raise UsageError(f"{out_dir} holds job {', '.join(theirs)}'s render ({count} file(s) this render would "
                         f"change, by {by}): rendering {job} there would replace it, and that folder's `up` "
                         f"would start {job}; give another --out, or --force to replace it with {job}'s")


def folder_spec(folder: Path) -> "Path | None":
    """The spec that folder's verbs read (its nodeweave.yaml, or a nodeweave.yml no verb reads but a person meant),
    or None: a folder holding one is a project of its own."""
    return next((folder / name for name in ("nodeweave.yaml", "nodeweave.yml") if (folder / name).is_file()), None)


def folder_spec_job(folder: Path) -> "str | None":
    """The job (``name``) of the spec that folder's verbs read (its nodeweave.yaml), or None where it has none or
    it names none (a file that cannot be read names no job)."""
    import yaml

    from nodeweave.entrypoint import bounded

    for name in ("nodeweave.yaml", "nodeweave.yml"):
        path = folder / name
        try:
            if not path.is_file():
                continue
            data = yaml.safe_load(bounded.read_text(path, bounded.TEXT_CAP, "a spec"))
        except Exception:  # noqa: BLE001 - a file that is not a readable spec names no job
            return None
        job = data.get("name") if isinstance(data, dict) else None
        return job if isinstance(job, str) and job else None
    return None


def specs_naming(folder: Path, jobs: "list[str]", spec_path: Path) -> "dict[str, Path]":
    """Each of ``jobs`` that a spec in ``folder`` other than ``spec_path`` names (``name: <job>``), with that spec's
    path. A YAML file there that is not a spec, or cannot be read, names no job."""
    import yaml

    from nodeweave.entrypoint import bounded

    found: "dict[str, Path]" = {}
    if not jobs:
        return found
    this = spec_path.resolve() if spec_path.is_file() else None  # a stream (--spec -): every spec there is another
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            if this is not None and path.resolve() == this or not path.is_file():
                continue
            data = yaml.safe_load(bounded.read_text(path, bounded.TEXT_CAP, "a spec"))
        except Exception:  # noqa: BLE001 - any file there that is not a readable spec names no job
            continue
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(name, str) and name in jobs and name not in found:
            found[name] = path
    return found


def _refuse_checkpoint_out(spec, spec_path: Path, out_dir: Path) -> None:
    """--out inside the spec's ``recovery.checkpoint_dir`` (as this machine's folder): node 0 reads every folder
    there as a save of the script's at each restart, as ``runs ls`` reads every folder under runs/ (walk7 A36;
    ``own_folder_problem`` judges the runs store for every folder option)."""
    from nodeweave.cluster.writable import checkpoint_on_host, workspace_on_host
    from nodeweave.specpath import spec_folder

    saves = checkpoint_on_host(spec, workspace_on_host(spec, spec_folder(spec_path)))
    if saves is None:
        return
    saves = saves.resolve()
    if out_dir == saves or saves in out_dir.parents:
        raise UsageError(f"--out {out_dir}: it is inside {saves}, the spec's recovery.checkpoint_dir "
                         f"({spec.recovery.checkpoint_dir}), where node 0 reads every folder as a save at each "
                         "restart; accepted: a folder of your own outside it (created if missing)")


def _render_and_check(spec_path: Path, target: str, out: "Path | None", output: "tuple[bool, str]", dry_run: bool,
                      check: bool, force: bool, prune: bool, seen, diff: bool = False) -> None:
    """Everything ``render`` does after the arguments are read; ``seen`` (a check watched for the memo): what
    the check read, kept with its answer when it finds nothing stale and says nothing else."""
    from nodeweave.rendering import MARK, plan_render, wanted_targets
    from nodeweave.spec import load_spec
    from nodeweave.specpath import spec_folder

    spec = load_spec(spec_path)
    out_dir = (out if out is not None else spec_folder(spec_path)).resolve()
    _refuse_out(out, out_dir, writes=not check)
    _refuse_checkpoint_out(spec, spec_path, out_dir)
    targets = wanted_targets(spec) if target == "all" else [target]
    wanted = list(targets)
    files, owners, targets = _render(spec, spec_path, out, targets, everything=target == "all")
    noted = targets != wanted  # a target left out, with a note
    if out is not None:
        refuse_nested_out(out, out_dir, files)
    plan = plan_render(files, out_dir, force, owners=owners, job=spec.name, prune=prune, targets=targets)
    if DOCKERIGNORE in plan.phases[0].refused:  # the user's own: kept, and nodeweave's rules beside the Dockerfiles
        files[KEPT_DOCKERIGNORE] = files.pop(DOCKERIGNORE)
        owners[KEPT_DOCKERIGNORE] = owners.pop(DOCKERIGNORE)
        plan = plan_render(dict(sorted(files.items())), out_dir, force, owners=owners, job=spec.name, prune=prune,
                           targets=targets)
        noted = True
    (files_phase,) = plan.phases
    if not check:  # --check only reads (bounded): a link there is compared as what it leads to
        from nodeweave.jobstate import refuse_links

        # a link at a rendered path, or on its way (a linked folder): never written, unlinked or pruned through; the
        # rule nodeweave's own files follow (jobstate.in_the_way), in one line, exit 2, the dry run too (walk13a A5)
        refuse_links(out_dir, [out_dir / item.path for item in files_phase.files
                               if item.status in ("new", "changed") or prune and item.status == "obsolete"])
    refuse_pruning_users_files(spec, spec_path, out_dir, files_phase)
    if not (check or force):  # in its own folder, only another spec's job is refused: a renamed job re-renders
        own_folder = out_dir == spec_folder(spec_path)
        refuse_another_jobs_render(out_dir, files_phase, spec.name, spec_path if own_folder else None)
    if dry_run or check:
        _note_new_dockerignore(files_phase, out_dir, planned=True)
        _note_kept_dockerignore(files_phase, out_dir, planned=True)
        _note_edited(files_phase, out_dir, planned=True)
    fmt = data_format(*output)
    if diff:
        _print_diff(files_phase, out_dir, prune)
    elif dry_run or check:
        _report(plan, fmt)
        if dry_run and not is_data(fmt) and any(item.status == "changed" for item in files_phase.files):
            tell("`nodeweave render --diff` shows what changes in each changed file")  # walk16a A25
    if check:
        if files_phase.stale:
            raise NodeweaveError(
                f"{len(files_phase.stale)} rendered file(s) under {out_dir} are stale for {spec_path}: "
                f"{_shown(files_phase.stale)}; {_stale_hint(files_phase, out_dir, spec.name, spec_path, out)}",
                exit_code=EXIT_STALE,
            )
        if seen is not None and not noted:
            from nodeweave.rendering import memo

            memo.keep(seen, plan)
        return
    if files_phase.refused:
        raise UsageError(
            f"refusing to overwrite {len(files_phase.refused)} file(s) under {out_dir} that differ and lack the "
            f"'{MARK}' mark, so they look like yours: {', '.join(files_phase.refused)}; move them away, "
            "render into another --out, or pass --force to overwrite them"
        )
    if spec.start_differs and set(targets) & NODE_TARGETS:
        typer.echo(f"nodeweave: note: {spec.name} {spec.starts}", err=True)
    _note_missing_needs(targets, files, out_dir, out)
    if "compose" in targets and out_dir != spec_folder(spec_path) and _relative_host_paths(spec):
        typer.echo(
            f"nodeweave: warning: compose files under {out_dir} resolve {', '.join(_relative_host_paths(spec))} "
            "as if the spec sat in that directory; use absolute host paths to render elsewhere",
            err=True,
        )
    if not dry_run:
        from nodeweave.cluster.execute import Execution, execute

        try:
            execute(plan, Execution(out_dir, say=lambda line: typer.echo(line, err=True)))
        except OSError as err:
            problem = path_problem(err, f"render into --out {out_dir}")
            raise type(problem)(f"{problem}; nothing was written (a render writes every file or none)",
                                problem.exit_code) from None
        _report(plan, fmt)  # after the write: what it did, never a list of files it did not write
        _note_new_dockerignore(files_phase, out_dir, planned=False)
        _note_kept_dockerignore(files_phase, out_dir, planned=False)
        _note_edited(files_phase, out_dir, planned=False)
    if prune and files_phase.kept:
        typer.echo(f"nodeweave: note: kept {_shown(files_phase.kept)}: no renderer makes them any more, but they "
                   "changed since nodeweave wrote them, so they are yours now (remove them yourself if unwanted)",
                   err=True)


def _print_diff(files_phase, out_dir: Path, prune: bool) -> None:
    """Each file the render would write as a unified diff against what is on disk (``--dry-run`` says "changed",
    not what changed: walk16a A25); a new file against /dev/null, a pruned one to it, bytes that are no text in
    one line, as git diff says them. The counts follow on stderr, as a dry run's do."""
    import difflib

    from nodeweave.entrypoint import bounded

    for item in files_phase.files:
        if item.status not in ("new", "changed") and not (prune and item.status == "obsolete"):
            continue
        path = out_dir / item.path
        old = b"" if item.status == "new" else bounded.read_bytes(path, bounded.RENDERED_CAP, "a rendered file")
        new = b"" if item.status == "obsolete" else item.content or b""
        before = "/dev/null" if item.status == "new" else f"a/{item.path}"
        after = "/dev/null" if item.status == "obsolete" else f"b/{item.path}"
        try:
            old_text, new_text = old.decode("utf-8"), new.decode("utf-8")
        except UnicodeDecodeError:
            typer.echo(f"Binary files {before} and {after} differ")
            continue
        typer.echo("".join(difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), before, after))
                   .rstrip("\n"))
    counts = files_phase.counts()
    where = os.path.relpath(files_phase.out)
    tell((", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing to render") +
         f" in {files_phase.out if where.startswith('..') else where}; nothing written (--diff)")


def _note_kept_dockerignore(files_phase, out_dir: Path, planned: bool) -> None:
    """The user's own ``.dockerignore`` kept, nodeweave's rules put at ``KEPT_DOCKERIGNORE`` instead: said where the
    plan is shown (``planned``: "would go to") or once it is written ("went to"), never before a refusal that writes
    nothing (walk14a A13: a render refused for another file said the rules "went to" a file that was never made)."""
    from nodeweave.rendering import MARK

    if not any(f.path == KEPT_DOCKERIGNORE for f in files_phase.files):
        return
    went = "would go to" if planned else "went to"
    typer.echo(f"nodeweave: note: {out_dir / DOCKERIGNORE} is yours (no '{MARK}' mark), so it is left as it "
               f"is; nodeweave's rules {went} {KEPT_DOCKERIGNORE}: merge what you need of them into yours (the "
               "build reads entrypoint/nodeweave-entrypoint.pyz, wheelhouse/ and what image.requirements and "
               "image.project.source name), or --force to replace yours with them", err=True)


def _note_edited(files_phase, out_dir: Path, planned: bool) -> None:
    """A rendered file edited since the last render wrote it (its bytes are not the ones the record keeps): replaced
    as the header warns, never without a word, the edit kept under .nodeweave/_edited/ (walk18a A27: it was lost)."""
    from nodeweave.rendering.plan import EDITED
    from nodeweave.rendering.record import RECORD

    for path in files_phase.edited:
        verb = "would be replaced" if planned else "replaced"
        kept = f"{'would be' if planned else 'is'} kept as {out_dir / EDITED / path}"
        if str(path).endswith(".pyz"):  # built from nodeweave's own source, never typed: another build of it
            typer.echo(f"nodeweave: warning: {path} is not the build the last render wrote (another nodeweave's, "
                       f"from a merge or a pull): {verb} by this nodeweave's build; the other {kept}", err=True)
            continue
        typer.echo(f"nodeweave: warning: {path} was edited since the last render wrote it (its bytes are not the "
                   f"ones {RECORD} records): {verb} by the spec's rendering; your version {kept} (a change belongs "
                   "in the spec)", err=True)


def _note_new_dockerignore(files_phase, out_dir: Path, planned: bool) -> None:
    """A new root ``.dockerignore`` rules every ``docker build`` of the folder, a team's own Dockerfile's too: it
    leaves everything but nodeweave's build inputs out, so that Dockerfile's ``COPY . /app`` would copy almost
    nothing (walk7 A46). Said once, when the folder holds a Dockerfile or Containerfile of its own."""
    if not any(f.path == DOCKERIGNORE and f.status == "new" for f in files_phase.files):
        return
    own = sorted(p.name for p in out_dir.glob("*") if p.name.startswith(("Dockerfile", "Containerfile"))
                 and p.is_file())
    if not own:
        return
    verb = "would write" if planned else "wrote"
    typer.echo(f"nodeweave: note: {verb} {out_dir / DOCKERIGNORE}, which leaves everything but nodeweave's build "
               f"inputs out of every docker/podman build in this folder, your {', '.join(own)} too (its COPY would "
               f"find almost nothing): render into another --out, or keep a .dockerignore of your own there (render "
               f"then writes its rules to {KEPT_DOCKERIGNORE} and leaves yours)", err=True)


def _note_missing_needs(targets, files, out_dir: Path, out: "Path | None") -> None:
    """One line per target whose files name another target's files that neither this render nor --out holds
    (``openshift/deploy`` builds on ``manifests/overlays/openshift``): the tree would not build as written."""
    from nodeweave.targets.registry import missing_needs

    missing = missing_needs(targets, lambda path: path in files or (out_dir / path).is_file())
    for owner in dict.fromkeys(need for _, _, need in missing):
        users = sorted({name for name, _, need in missing if need == owner})
        paths = [path for _, path, need in missing if need == owner]
        where = f" --out {out}" if out is not None else ""
        typer.echo(f"nodeweave: note: {', '.join(users)} builds on {', '.join(paths)}, which {out_dir} lacks and "
                   f"this render does not write: `nodeweave render {owner}{where}` too, or `nodeweave render "
                   f"all{where}`", err=True)


def register(app: typer.Typer) -> None:
    app.command("render")(render)
