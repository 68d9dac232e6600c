"""Prepare what a build reads: the rendered Dockerfile and the wheelhouse.

The Dockerfile is rendered from the spec seen through the requested variant
(``nodeweave.resolve``: ``make image VARIANT=rocm70`` works with a spec
written for cuda12, and that spec's tag and base stay with cuda12); when the
context already holds an identical ``images/<variant>/Dockerfile`` that file is
used, so the command line is the plain one a user could type. The image build
contract (docs/design.md) needs ``wheelhouse/`` in the context; a wheelhouse
elsewhere is linked in wheel by wheel, never replacing a file already there.
An offline docker build leaves out the ``# syntax=`` line: BuildKit would
fetch the frontend it names from a registry, and its built-in frontend
(docker 20.10's included) reads every instruction the renderer writes.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Callable, Optional, Tuple

from nodeweave.entrypoint import bounded
from nodeweave.errors import UsageError
from nodeweave.targets.images.dockerfile import render_dockerfile
from nodeweave.resolve import Resolved

WHEELHOUSE = "wheelhouse"
# A BuildKit parser directive: only in the comment lines at the very top of a Dockerfile.
_DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")


def rendered_dockerfile(r: Resolved) -> str:
    """The text of ``images/<variant>/Dockerfile`` exactly as ``nodeweave render`` makes it for the spec."""
    return render_dockerfile(r)


def without_frontend_pin(text: str) -> Tuple[str, Optional[str]]:
    """The Dockerfile without its ``# syntax=`` directive, and the frontend image that line named."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        match = _DIRECTIVE.match(line.strip())
        if not match:
            break
        if match.group(1).lower() == "syntax":
            return "".join(lines[:index] + lines[index + 1:]), match.group(2)
    return text, None


def choose_dockerfile(context: Path, text: str, variant: str, scratch: Path,
                      write: bool = True, build_text: Optional[str] = None) -> Tuple[Path, bool]:
    """The committed Dockerfile when it matches the rendering, else the rendering in ``scratch``.

    ``build_text``, when it differs from ``text``, is what the build reads
    (always from ``scratch``). Returns the path and whether the committed file
    matches the rendering; ``write=False`` (dry runs) only names the scratch path.
    """
    committed = context / "images" / variant / "Dockerfile"
    matches = committed.is_file() and \
        bounded.read_bytes(committed, bounded.TEXT_CAP, "a Dockerfile") == text.encode("utf-8")  # as the engine reads it
    build_text = text if build_text is None else build_text
    if matches and build_text == text:
        return committed, True
    target = scratch / "Dockerfile"
    if write:
        scratch.mkdir(parents=True, exist_ok=True)
        target.write_text(build_text)
    return target, matches


def check_context_paths(context: Path, spec, spec_path: Optional[Path] = None) -> None:
    """What ``image.requirements``/``image.project.source`` name is in the context, and its .dockerignore admits it.

    The context's ``.dockerignore`` is judged by Docker's own rules (the one
    matcher that judges the Dockerfile's COPY sources), whoever wrote it: a
    team's own file that never names the requirements file lets it in.
    """
    from nodeweave.build.sources import DockerIgnore
    from nodeweave.renderedmark import is_marked
    from nodeweave.targets.images import context_paths

    ignore = DockerIgnore.of(context)
    for field, path in context_paths(spec).items():
        from nodeweave.failures import leads_out_of

        if not (context / path.rstrip("/")).exists() and leads_out_of(context, path.rstrip("/")) is None:
            raise UsageError(f"{field}: {path.rstrip('/')!r} is not in the build context {context}; accepted: a path "
                             "inside the context (the spec's directory, or --context)")
    linked = linked_out(context, spec)
    if linked:  # the engine sends the context as it is: the link, not the file (walk9 A7, replay10 A7)
        raise UsageError(linked[0])
    for field, path in context_paths(spec).items():
        if ignore.excludes(path.rstrip("/")):
            ours = is_marked(bounded.read_bytes(context / ".dockerignore", bounded.TEXT_CAP, "a .dockerignore"))
            from nodeweave.rendering.provenance import render_command

            fix = (f"run {render_command('images', spec_path, context)} (its .dockerignore admits what the spec's "
                   "image reads)" if ours else
                   f"add the line '!{path.rstrip('/')}' at its end (the last matching line decides; "
                   "images/nodeweave.dockerignore holds nodeweave's own rules to merge)")
            raise UsageError(f"{field}: {context / '.dockerignore'} keeps {path.rstrip('/')!r} out of the build; {fix}")


def build_reads(context: Path, spec) -> "list[tuple[str, str]]":
    """(what, path inside ``context``) of every file or folder an image build of ``spec`` reads from the context:
    ``image.requirements``, ``image.project.source``, ``wheelhouse/`` (bind-mounted by the Dockerfile) and each
    distribution in it, and the entrypoint zipapp the Dockerfile copies."""
    from nodeweave.targets import zipapp
    from nodeweave.targets.images import context_paths

    reads = [(field, path.rstrip("/")) for field, path in context_paths(spec).items()]
    reads.append((f"{WHEELHOUSE}/ (the Dockerfile bind-mounts it)", WHEELHOUSE))
    house = context / WHEELHOUSE
    if house.is_dir() and not house.is_symlink():
        reads += [(f"a wheel of {WHEELHOUSE}/", f"{WHEELHOUSE}/{item.name}") for item in sorted(house.iterdir())
                  if item.name.endswith((".whl", ".tar.gz", ".zip"))]
    reads.append(("the entrypoint the Dockerfile copies", zipapp.PATH))
    return reads


def linked_out(context: Path, spec) -> "list[str]":
    """The one rule for "a file the build context must hold, linked out of it" (replay10 A7, as walk9 A7 made it for
    the script the nodes run): a line for each of :func:`build_reads` that is a symbolic link leading out of the
    context, which the engine sends as the link, not the file: ``image build`` refuses the first, ``init`` and
    ``validate`` note each."""
    return list(linked_out_by_what(context, spec).values())


def linked_out_by_what(context: Path, spec) -> "dict[str, str]":
    """:func:`linked_out`'s lines by what each is (``image.requirements``, ...): ``init`` leaves out a spec field
    it would write whose file the build would refuse (walk13 A3), as it leaves out a requirements.txt that is a
    folder or has an unpinned line."""
    from nodeweave.failures import leads_out_of

    found = {}
    for what, path in build_reads(context, spec):
        out = leads_out_of(context, path)
        if out is not None:
            found[what] = (f"{what}: {path!r} in the build context {context} is a symbolic link out of it (to {out}), "
                           f"which the build cannot follow; accepted: the {'folder' if out.is_dir() else 'file'} "
                           "itself inside the context (copy it in instead of linking it)")
    return found


def is_distribution(path: Path) -> bool:
    return path.is_file() and path.name.endswith((".whl", ".tar.gz", ".zip"))


def wheels_in(folder: Path) -> int:
    """How many distributions (wheels, sdists) ``folder`` holds: what ``link_wheelhouse`` would offer from it."""
    return sum(1 for item in folder.iterdir() if is_distribution(item)) if folder.is_dir() else 0


WHEELHOUSE_ACCEPTED = "holding the wheels already: --wheelhouse makes no folder, the pip line it offers makes and fills one"


def judge_wheelhouse(source: Path) -> None:
    """``--wheelhouse`` by the one rule of every folder option (``failures.own_folder_problem``), whether it exists,
    holds wheels, or the build is offline or not: never ``/``, a system folder, inside a system tree, on ``/proc``
    or inside ``.nodeweave/`` (walk9 A31: only an offline build's fill hint judged it; README lists it). It is
    read, not written: a read-only wheelhouse is fine."""
    from nodeweave.failures import own_folder_problem

    given = Path(os.path.abspath(source.expanduser()))
    if not os.path.lexists(given) or (given.exists() and not given.is_dir()):
        return  # missing, or a file: link_wheelhouse says so first, in its own words (walk15 A4: /nonexist was
        # refused as a folder "made directly in /", by an option that makes none)
    problem = own_folder_problem(given)
    if problem is not None:
        raise UsageError(f"--wheelhouse {source}: {problem}; accepted: a folder of your own ({WHEELHOUSE_ACCEPTED})")


def _fill_line(fill: Optional[Callable[[Path], str]], source: Path) -> str:
    """The pip line that makes and fills the wheelhouse ``source``."""
    if fill is None:
        return f"`python -m pip download -d {shlex.quote(str(source))} -r requirements.txt`"
    try:
        return fill(source)
    except UsageError:  # the home's wheels/ refused too (a $HOME of /): the line without a folder to fill
        return "`python -m pip download -d DIR ...` for a folder of your own"


def link_wheelhouse(context: Path, source: Optional[Path], write: bool = True,
                    fill: Optional[Callable[[Path], str]] = None,
                    written: Optional[list] = None) -> Tuple[Path, int]:
    """Make ``<context>/wheelhouse`` exist; offer the wheels of ``source`` in it. ``fill``: the whole pip line
    that makes and fills a folder, for the refusal of a missing one (never a literal ``...`` to guess at).

    Wheels are hard-linked (copied across filesystems); a file of the same name
    already there is kept. Returns the wheelhouse and how many distributions
    it holds (or would hold, with ``write=False``). ``written``: gets each wheel linked in, and the folder itself
    first when this call made it, for :func:`unlink_written` once the build is done.
    """
    target = context / WHEELHOUSE
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a directory; the image build contract needs a wheelhouse directory there")
    present = {item.name for item in target.iterdir() if is_distribution(item)} if target.is_dir() else set()
    offered = []
    if source is not None:
        judge_wheelhouse(source)
        source = source.expanduser().resolve()
        if not source.is_dir():
            from nodeweave.entrypoint.bounded import not_a_folder
            from nodeweave.failures import own_folder_problem  # where pip would make it: its folder rule (walk15 A4)

            if source.exists() or source.is_symlink():
                raise UsageError(f"--wheelhouse {source} {not_a_folder(source)}; accepted: a directory of wheels")
            refused = own_folder_problem(source)  # pip is never offered a folder nodeweave's rule refuses
            folder = Path.home() / "wheels" if refused is not None else source
            how = _fill_line(fill, folder)
            made = "it" if folder == source else f"one of your own, then --wheelhouse {folder}; not {source}: {refused}"
            raise UsageError(f"--wheelhouse {source} does not exist; accepted: a directory of wheels ({how} makes "
                             f"and fills {made})")
        if source != target.resolve():
            offered = [wheel for wheel in sorted(source.iterdir()) if is_distribution(wheel) and wheel.name not in present]
    if write:
        if written is not None and not target.is_dir():
            written.append(target)
        target.mkdir(exist_ok=True)
        for wheel in offered:
            try:
                os.link(wheel, target / wheel.name)
            except OSError:
                shutil.copy2(wheel, target / wheel.name)
            if written is not None:
                written.append(target / wheel.name)
    return target, len(present) + len(offered)


def unlink_written(written: "list[Path]") -> None:
    """Remove what :func:`link_wheelhouse` put in the context for one build: the wheels it linked in, then the
    folder if it made it and nothing else is there. The context is the user's project: hundreds of MiB of wheels
    left in it showed in ``git status`` and went to every node with ``sync`` (walk10 C12)."""
    folders = [path for path in written if path.name == WHEELHOUSE]
    for path in written:
        if path not in folders:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # something of the user's was put there meanwhile: kept
            pass



def refresh_entrypoint(context: Path, write: bool = True) -> Optional[str]:
    """Bring a stale ``entrypoint/nodeweave-entrypoint.pyz`` that nodeweave rendered up to this nodeweave's.

    The image's entrypoint is the file in the context; after an upgrade of
    nodeweave (or an edit of its sources in a checkout) the rendered copy lags,
    and the CLI would drive nodes running another entrypoint. A file without
    the "by nodeweave" mark is the user's own zipapp and is built as it is.
    Returns a note when the file was (``write=False``: would be) refreshed.
    """
    from nodeweave.renderedmark import is_marked
    from nodeweave.rendering.plan import write_atomically
    from nodeweave.targets import zipapp

    target = context / zipapp.PATH
    if not target.is_file():
        return None
    current = bounded.read_bytes(target, bounded.RENDERED_CAP, "a rendered file")
    if not is_marked(current):
        return None
    fresh = zipapp.build(zipapp.package_root())
    if fresh == current:
        return None
    from nodeweave.jobstate import refuse_links

    refuse_links(context, [target])  # a link (or a linked folder) is never replaced or written through (walk13a A5)
    if write:
        write_atomically(target, fresh)
    verb = "refreshed" if write else "would be refreshed"
    return f"{zipapp.PATH}: {verb} from this nodeweave's entrypoint (the copy in the context was stale)"


def check_copied_sources(context: Path, dockerfile_text: str, dockerfile_name: str,
                         spec_path: Optional[Path] = None) -> None:
    """Refuse, before any layer, a context that lacks (or whose .dockerignore keeps out) what the Dockerfile copies;
    the commands the refusal names carry the ``--spec`` this build was given, so pasting them works."""
    from nodeweave.spec.loader import spec_flag

    from nodeweave.build.sources import missing_sources
    from nodeweave.targets import zipapp

    problems = missing_sources(context, dockerfile_text)
    if not problems:
        return
    flag = spec_flag(spec_path) if spec_path is not None else ""  # None: a caller that has no spec file
    hint = f"; give --context the folder holding them, or run `nodeweave render all{flag}`"
    if any(problem.startswith(zipapp.PATH) for problem in problems) and not _refused_output(context):
        hint = (f"; `nodeweave render entrypoint{flag} --out {shlex.quote(str(context))}` writes {zipapp.PATH}, "
                "or give --context the folder holding it")
    raise UsageError(f"{dockerfile_name} copies what the build context lacks: {'; '.join(problems)}{hint}")


def _refused_output(folder: Path) -> bool:
    """Whether `nodeweave render --out folder` would be refused (a system folder, nodeweave's state): a hint never
    names a path its own rule refuses (replay6 N4), so the render half of the remedy is left out there."""
    from nodeweave.failures import writable_dir

    try:
        writable_dir(folder, "--out")
    except UsageError:
        return True
    return False
