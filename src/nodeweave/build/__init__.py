"""Build the training images with a real engine (docker with BuildKit, or podman).

``prepare_build`` turns a spec and a variant into a :class:`BuildPlan` (and
readies the context: the rendered Dockerfile, the wheelhouse); ``run_build``
runs its steps (``BuildPlan.steps``), the ones ``--dry-run`` prints.
The image build contract this follows is in docs/design.md.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Mapping, Optional

from nodeweave.build.builder import BuildProgress, BuildResult, git_revision, no_revision_why, run_build
from nodeweave.build.context import (check_context_paths, check_copied_sources, choose_dockerfile, is_distribution,
                                     link_wheelhouse,
                                     refresh_entrypoint, rendered_dockerfile, wheels_in, without_frontend_pin)
from nodeweave.build.engine import BUILDX, CLASSIC_BUILDKIT, Engine, detect_engine
from nodeweave.build.plan import BuildPlan, Revision, plan_build
from nodeweave.build.pushed import push_tags
from nodeweave.rendering.provenance import named_in, render_command
from nodeweave.resolve import resolve
from nodeweave.spec.sections.image import notes as secret_build_args

__all__ = [
    "BUILDX", "CLASSIC_BUILDKIT", "BuildPlan", "BuildProgress", "BuildResult", "Engine", "PreparedBuild", "Revision",
    "detect_engine", "git_revision", "prepare_build", "push_tags", "run_build",
]


@dataclass(frozen=True)
class PreparedBuild:
    plan: BuildPlan
    notes: List[str]  # what the user should know: which Dockerfile, wheelhouse size
    dockerfile_text: Optional[str] = None  # what plan.dockerfile must hold when it is not the context's own
    written: List[Path] = field(default_factory=list)  # the wheels (and folder) linked into the context for it

    def clean_up(self) -> None:
        """Take out of the context what was linked in for this build only (``context.unlink_written``)."""
        from nodeweave.build.context import unlink_written

        unlink_written(self.written)
        self.written.clear()


def _git_remote(root: Path) -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _dockerfile_note(relative: str, committed: bool, in_context: bool, frontend: Optional[str],
                     yours: bool = False, refresh: str = "`nodeweave render images`") -> str:
    """The plan's line on which Dockerfile is built. ``yours``: the context's file carries no nodeweave header, so
    ``render`` refuses to overwrite it; the build leaves it alone and says so, never naming render as the remedy
    (replay7 N1: the hint looped between the two verbs)."""
    if frontend:
        source = relative if committed else "rendered for this spec"
        return (f"Dockerfile: {source}, without its `# syntax={frontend}` line (--offline: BuildKit would fetch "
                "that frontend from a registry; the engine's built-in Dockerfile frontend reads it)")
    if committed:
        return f"Dockerfile: {relative} (matches the rendering)"
    if in_context and yours:
        return (f"Dockerfile: rendered for this spec ({relative} in the context has no nodeweave header, so it is "
                f"yours and is not built: {refresh} replaces it with the rendering, or build yours "
                f"with `podman build -f {relative} .`)")
    if in_context:
        return f"Dockerfile: rendered for this spec ({relative} in the context differs: {refresh} refreshes it)"
    return "Dockerfile: rendered for this spec"


def _marked(path: Path) -> bool:
    """Whether the file carries nodeweave's header (an unreadable one counts as not: said as the user's)."""
    from nodeweave.entrypoint import bounded
    from nodeweave.renderedmark import is_marked

    try:
        return is_marked(bounded.read_bytes(path, bounded.RENDERED_CAP, "a Dockerfile"))
    except OSError:  # bounded.TooLarge too: a Dockerfile of 64 MiB is not one nodeweave rendered
        return False


# The build-time network modes podman and docker both name (besides container:ID, ns:PATH and a network's name).
NETWORK_MODES = ("host", "none", "bridge", "default", "private", "slirp4netns", "pasta")


def check_build_network(network: str) -> None:
    """``--network hots``: a word one letter from a mode is a typo, refused before the engine is asked (exit 2);
    any other word may be a network of the engine, so it goes through."""
    from difflib import get_close_matches

    from nodeweave.errors import UsageError

    if network in NETWORK_MODES or ":" in network:
        return
    close = get_close_matches(network.lower(), NETWORK_MODES, n=1, cutoff=0.7)
    if close or network.lower() in NETWORK_MODES:
        guess = close[0] if close else network.lower()
        raise UsageError(f"--network {network!r} is not accepted (did you mean {guess}?): {', '.join(NETWORK_MODES)}, "
                         "container:ID, ns:PATH, or the name of a network of the engine")


BUILDKIT_NETWORKS = ("default", "host", "none")  # what docker's BuildKit takes: no named network, no container:


def check_network_exists(network: Optional[str], kind: str, answered: bool) -> Optional[str]:
    """``--network moon`` (a named network, ``container:ID``, ``ns:PATH``) must exist on this machine's engine,
    checked at dry run too (walk2 M8): missing is exit 2 naming what exists; None when it does (or is a mode),
    else the note a dry run prints when the engine cannot be asked."""
    import subprocess

    from nodeweave.errors import UsageError

    if network is None or network in NETWORK_MODES:
        if kind == "docker" and network is not None and network not in BUILDKIT_NETWORKS:
            raise UsageError(f"--network {network}: docker builds through BuildKit, which takes "
                             f"{', '.join(BUILDKIT_NETWORKS)}; {network} is podman's")
        return None
    mode, _, name = network.partition(":")
    if mode == "ns" and name:
        if not Path(name).exists():
            raise UsageError(f"--network {network}: {name} does not exist on this machine; accepted: ns:PATH of a "
                             "network namespace (/proc/PID/ns/net, /run/netns/NAME)")
        return None
    if kind == "docker":
        raise UsageError(f"--network {network}: docker builds through BuildKit, which takes "
                         f"{', '.join(BUILDKIT_NETWORKS)} (no named network or container:ID)")
    what, argv = (("container", [kind, "container", "inspect", name]) if mode == "container" and name else
                  ("network", [kind, "network", "inspect", network]))
    if not answered:
        return f"--network {network}: whether {kind} has this {what} could not be asked (the engine does not answer)"
    try:
        found = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"--network {network}: whether {kind} has this {what} could not be asked ({err})"
    if found.returncode == 0:
        return None
    if what == "container":
        raise UsageError(f"--network {network}: {kind} has no container {name} (`{kind} ps -a` lists them); "
                         "accepted: container:ID of an existing container")
    names = subprocess.run([kind, "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True,
                           timeout=60).stdout.split()
    raise UsageError(f"--network {network} is not a network of {kind} here ({', '.join(names) or 'none'}); accepted: "
                     f"{', '.join(NETWORK_MODES)}, container:ID, ns:PATH, or an existing network "
                     f"(`{kind} network create {network}` makes one)")
def wheelhouse_command(view, house: Path, context: Path) -> str:
    """The pip line that fills ``house`` with what the image installs (the variant's pins, the spec's image.pip
    and image.requirements), run where the user is: a pip user has no nodeweave checkout, so a hint naming
    the repository's own scripts (.ci/wheelhouse.sh) does not work there. The variant's torch index is offered
    as the Dockerfile offers it: PyPI's torch of the same version is another build (CUDA's, gigabytes of nvidia-*
    wheels), and an offline build would install it from the wheelhouse into a cpu or ROCm image.

    The line tells pip to write into ``house``, so ``house`` is first judged as every folder nodeweave has written
    into is (``writable_dir``): a hint never names a folder its own rule refuses (replay6 N4: ``--wheelhouse /etc``
    was told to download torch into /etc)."""
    import shlex

    from nodeweave.build.context import WHEELHOUSE_ACCEPTED
    from nodeweave.failures import writable_dir

    writable_dir(house, "--wheelhouse", missing=WHEELHOUSE_ACCEPTED)

    here = Path.cwd().resolve()
    shown = house.relative_to(here).as_posix() if house.is_relative_to(here) else str(house)
    words = [shlex.quote(shown), "--extra-index-url", shlex.quote(view.variant.torch_index_url),
             *map(shlex.quote, [*view.variant.pip_requirements, *view.spec.image.pip])]
    if view.spec.image.requirements:
        words += ["-r", shlex.quote(str(context / view.spec.image.requirements) if context != here
                                    else view.spec.image.requirements)]
    return f"`python -m pip download -d {' '.join(words)}`"


def check_pins_of(variant: str, spec, context: Path) -> None:
    """image.pip and image.requirements against the variant being built (validate weighed them against the spec's
    own image.variant): ``image build rocm64`` of a spec pinning torch==2.13.0 could only end in pip's
    ResolutionImpossible, after the base image and apt layers."""
    from nodeweave.entrypoint import bounded
    from nodeweave.errors import UsageError
    from nodeweave.spec.sections.image import baked_problem, requirement_conflicts

    if variant == spec.image.variant:
        return
    problems = []  # every one, in one run
    for requirement in spec.image.pip:
        problem = baked_problem(requirement, variant, requirement=True)
        if problem:
            problems.append(f"image.pip: {requirement!r} {problem[0]}; accepted: {problem[1]}")
    file = context / spec.image.requirements if spec.image.requirements else None
    if file is not None and file.is_file():
        text = bounded.read_text(file, bounded.TEXT_CAP, "a requirements file")
        problems += [f"image.requirements: {spec.image.requirements}:{number}: {line}; accepted: {accepted}"
                     for number, line, accepted in requirement_conflicts(text, variant)]
    if problems:
        raise UsageError("\n".join(problems))


# Build args every engine takes without an ARG line: the proxies (RUN steps see them) and BuildKit's own.
PREDEFINED_BUILD_ARGS = tuple(name for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY")
                              for name in (proxy, proxy.lower()))
_ARG_LINE = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE | re.IGNORECASE)
_URL_PASSWORD = re.compile(r"://[^/@\s]*:[^/@\s]*@")  # scheme://user:password@host


def check_build_args(build_args: Mapping[str, str], dockerfile_text: Optional[str] = None) -> None:
    """Every ``--build-arg`` reaches a build step, or is refused (exit 2) rather than dropped without a word: a
    secret-looking name (``HF_TOKEN``) the Dockerfile never declares, a value holding a URL's password
    (``https://user:pw@host``: it would show on the command line and in the plan, as a secret name would), and a
    name the Dockerfile read (``dockerfile_text``) declares no ``ARG`` for (walk9 A29: ``PIP_INDEX_URL`` reached no
    pip step, and pip went to PyPI). The proxies and BuildKit's own args need no ARG line."""
    from nodeweave.errors import UsageError
    from nodeweave.spec.rules import looks_secret
    from nodeweave.spec.sections.image import SECRET_HINT

    for name in sorted(build_args):
        if looks_secret(name):
            raise UsageError(f"--build-arg {name} looks like a secret: the Dockerfile does not declare it, so it would "
                             f"show on the build's command line (ps, the printed plan) and reach no build step; "
                             f"accepted: a name that is not a secret's; {SECRET_HINT}")
        if _URL_PASSWORD.search(build_args[name]):
            raise UsageError(f"--build-arg {name}: its value holds a URL's password (user:password@), which would show "
                             f"on the build's command line (ps, the printed plan) and in the image's history; "
                             f"accepted: a URL without credentials; {SECRET_HINT}")
    if dockerfile_text is None:
        return
    declared = set(_ARG_LINE.findall(dockerfile_text))
    for name in sorted(build_args):
        if name not in declared and name not in PREDEFINED_BUILD_ARGS and not name.startswith("BUILDKIT_"):
            raise UsageError(f"--build-arg {name}: the Dockerfile declares no `ARG {name}`, so no build step would "
                             f"see it (the engine drops it with a warning); accepted: one of its ARGs "
                             f"({', '.join(sorted(declared))}) or a proxy variable; a build arg of your own goes in "
                             "the spec's image.build_args (declared as an ARG), and a private index in requirements.txt "
                             "as `--index-url URL` (image.requirements)")


def check_push_reaches_a_registry(tags, push: bool) -> None:
    """``--push`` of a ``localhost/`` tag (the default image.registry, podman's prefix for this machine's images)
    cannot succeed: no registry answers there and docker refuses the name. Refused before the build (exit 2), not
    after an hour of layers when ``podman push`` fails."""
    from nodeweave.errors import UsageError

    local = [tag for tag in tags if tag.split("/", 1)[0] == "localhost"] if push else []
    if local:
        raise UsageError(f"--push would send {local[0]} to localhost/, podman's prefix for images of this machine "
                         "only (no registry answers there; docker refuses it); accepted: image.registry set to a "
                         "registry the nodes pull from (e.g. ghcr.io/you, or localhost:5000 for a local one), or "
                         "build without --push")


def wheels_lacking(view, context: Path, folders: "List[Path]") -> "List[str]":
    """What the image installs by name (the variant's pins, image.pip, image.requirements' lines) that no
    distribution in ``folders`` provides, by pip's normalised name and, for a ``name==version`` pin, its version
    (a wheel's local label, ``+cpu``, aside, as pip compares them): an offline build would fail at its pip layer,
    after the apt layers (walk9 A5). Their own dependencies are pip's to find; a ``name @ URL`` line is not judged."""
    import re

    from nodeweave.entrypoint import bounded
    from nodeweave.spec.sections.image import requirement_lines

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    held: "dict[str, set[str]]" = {}
    for folder in folders:
        for item in (folder.iterdir() if folder.is_dir() else ()):
            if not is_distribution(item):
                continue
            stem = item.name[:-4] if item.name.endswith(".whl") else re.sub(r"\.(tar\.gz|zip)$", "", item.name)
            parts = stem.split("-") if item.name.endswith(".whl") else stem.rsplit("-", 1)
            if len(parts) >= 2:
                held.setdefault(norm(parts[0]), set()).add(parts[1].split("+", 1)[0])
    wanted = [*view.variant.pip_requirements, *view.spec.image.pip]
    file = context / view.spec.image.requirements if view.spec.image.requirements else None
    if file is not None and file.is_file():
        text = bounded.read_text(file, bounded.TEXT_CAP, "a requirements file")
        wanted += [line.split(" --", 1)[0] for _, line in requirement_lines(text) if not line.startswith("-")]
    lacking = []
    for requirement in wanted:
        found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(===?\s*([^\s;]+))?\s*(@|;|$)?", requirement)
        if not found or found.group(5) == "@":
            continue
        name, version = norm(found.group(1)), found.group(4)
        versions = held.get(name, set())
        if not versions or (version and version.split("+", 1)[0] not in versions):
            lacking.append(requirement.strip())
    return list(dict.fromkeys(lacking))


def wheelhouse_note(house: Path, count: int, given: Optional[Path], offline: bool, dry_run: bool) -> str:
    """What the build's pip is offered, as the real build does it: the ``--wheelhouse`` given, linked into the
    context's ``wheelhouse/``, and whether pip looks anywhere else (walk6, W34: the plan named only the context's
    folder, said "pip uses the index" under --offline, and took a --wheelhouse holding no wheel without a word)."""
    where = ("pip looks nowhere else (--offline)" if offline else "pip looks there first, then the index")
    if given is not None and given != house.resolve():
        offered = wheels_in(given)
        if offered == 0:
            return (f"wheelhouse: --wheelhouse {given} holds no wheel (*.whl, *.tar.gz): nothing from it is offered; "
                    f"{house} holds {count}")
        verb = "would be linked" if dry_run else "linked"
        return (f"wheelhouse: {given} ({offered} wheel(s)), {verb} into {house} for the build ({count} in all) and "
                f"taken out after it; {where}")
    if house.is_dir() or not dry_run:
        return f"wheelhouse: {house} ({count} packages); {where}"
    return f"wheelhouse: {house} (no such folder: the build makes it empty, and pip uses the index)"


# pip's and uv's own variables that point an install at an index or a folder of wheels (pip: `pip help install`'s
# options as PIP_<OPTION>; uv: its environment reference); none reaches a build step from this shell.
INDEX_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "PIP_NO_INDEX",
                   "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX")
# a pip or uv configuration file's keys that name an index (pip.conf's `index-url = ...`, uv.toml's `index-url`,
# `extra-index-url`, `[[index]]`)
_CONFIG_INDEX = re.compile(r"^\s*(?:index-url|extra-index-url|find-links|trusted-host|index_url|extra_index_url|"
                           r"\[\[index\]\])\s*(?:=|$)", re.MULTILINE)


def index_configuration(environ: Mapping[str, str], home: Optional[Path] = None) -> "List[str]":
    """Where this machine tells pip or uv of another index: the variables of :data:`INDEX_VARIABLES` set (and not
    empty) in ``environ``, then the pip/uv configuration files that name one (``PIP_CONFIG_FILE``, the user's and
    the site's pip.conf, uv.toml). Names and paths only, never a value (a URL may hold a token)."""
    from nodeweave.entrypoint import bounded

    found = [name for name in INDEX_VARIABLES if (environ.get(name) or "").strip()]
    home = home if home is not None else Path(environ.get("HOME") or Path.home())
    config = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    files = [Path(environ["PIP_CONFIG_FILE"])] if environ.get("PIP_CONFIG_FILE") else []
    files += [config / "pip" / "pip.conf", home / ".pip" / "pip.conf", Path("/etc/pip.conf"),
              Path("/etc/xdg/pip/pip.conf"), config / "uv" / "uv.toml", Path("/etc/uv/uv.toml")]
    for file in dict.fromkeys(files):
        try:
            text = bounded.read_text(file, bounded.TEXT_CAP, "a pip configuration file") if file.is_file() else ""
        except (OSError, ValueError):
            continue
        if _CONFIG_INDEX.search(text):
            found.append(str(file))
    return found


INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f")  # a requirements file's, as pip's


def spec_indexes(view, context: Path) -> "List[str]":
    """The indexes the spec itself gives the build's pip, each with where it is said: image.requirements' own index
    options (``--index-url URL (requirements.txt:1)``, a URL's password shown as ***) and the index variables
    image.build_args declares; [] when it names none (PyPI, the wheelhouse and the variant's torch index)."""
    from nodeweave.entrypoint import bounded
    from nodeweave.spec.sections.image import redacted, requirement_lines

    found = []
    written = view.spec.image.requirements
    if written:
        try:
            text = bounded.read_text(context / written, bounded.TEXT_CAP, "a requirements file")
        except (OSError, ValueError):
            text = ""
        for number, line in requirement_lines(text):
            words = line.replace("=", " ", 1).split() if line.startswith("--") else line.split()
            if words and words[0] in INDEX_OPTIONS and len(words) > 1:
                found.append(f"{words[0]} {redacted(words[1])} ({written}:{number})")
    found += [f"image.build_args {name}" for name in view.spec.image.build_args if name in INDEX_VARIABLES]
    return found


def shell_index_note(environ: Mapping[str, str], view, context: Path, offline: bool,
                     home: Optional[Path] = None) -> Optional[str]:
    """The one line for a private index set up on this machine that the build will not use (walk9 A29: an exported
    ``PIP_INDEX_URL`` was neither passed nor named, and pip in the build went to PyPI). Not passed on purpose: an
    image build takes nothing from the shell that starts it (the same plan builds the same image on CI), and such a
    URL often holds a token, which a build arg would put on the engine's command line (``ps``, the plan) and in the
    image's history. The note names the ways that work. None with ``--offline`` (pip asks no index then) or when
    nothing is set; a name the spec's image.build_args declares is the spec's, not this shell's."""
    if offline:
        return None
    declared = set(view.spec.image.build_args)
    found = [item for item in index_configuration(environ, home) if item not in declared]
    if not found:
        return None
    try:
        fill = wheelhouse_command(view, context / "wheelhouse", context)
    except Exception:  # noqa: BLE001 - a hint's folder refused by its own rule: the note goes without the line
        fill = "`python -m pip download -d wheelhouse -r requirements.txt`"
    variables = [item for item in found if "/" not in item]
    files = [item for item in found if "/" in item]
    what = ", ".join(variables + files)
    said = (f"index: this machine points pip/uv at another index ({what}), which no build step sees: a build takes "
            "nothing from this shell (so no URL or token reaches the plan, `ps` or the image's layers)")
    own = spec_indexes(view, context)
    if own:  # walk14a A15: the spec names its index already; the note said to add what was there
        return (f"{said}; its pip uses the index the spec names: {'; '.join(own)} (with the context's wheelhouse); "
                f"one that needs credentials: fill the wheelhouse here, where they work ({fill}), then build with "
                "--offline (docs/images.md, a private index)")
    return (f"{said}, and its pip "
            "uses the context's wheelhouse, PyPI and the variant's torch index only; an index that needs no credentials goes in "
            f"{view.spec.image.requirements or 'requirements.txt'} as `--index-url URL` (or `--extra-index-url URL`), "
            "or in the spec's image.build_args as PIP_INDEX_URL; one that needs them: fill the wheelhouse here, "
            f"where they work ({fill}), then build with --offline (docs/images.md, a private index)")


def prepare_build(spec, variant: str, context: Path, scratch: Path, base: Optional[str] = None,
                  push: bool = False, wheelhouse: Optional[Path] = None, offline: bool = False,
                  network: Optional[str] = None, tag: Optional[str] = None,
                  build_args: Optional[Mapping[str, str]] = None, dry_run: bool = False,
                  engine_kind: Optional[str] = None, write_dockerfile: bool = True,
                  spec_path: Optional[Path] = None) -> PreparedBuild:
    """Plan the build of ``variant`` for ``spec`` in ``context``; ``scratch`` holds a rendered Dockerfile.

    Unless ``dry_run``, the context is readied: the Dockerfile written (unless ``write_dockerfile`` is False:
    the CLI's plan writes it, ``dockerfile_text``), the wheelhouse linked.
    ``engine_kind`` "docker" with ``offline`` drops the Dockerfile's frontend pin (``# syntax=``).
    ``spec_path``: the spec as the command was given it, which a refusal's commands carry (``--spec``).
    """
    from nodeweave import __version__

    context = context.resolve()
    notes: List[str] = []
    view = resolve(spec, variant)
    check_push_reaches_a_registry(view.build_tags(None, fixed=tag), push)
    check_build_args(build_args or {})  # the names and values first; the ARG lines once the Dockerfile is known
    check_pins_of(view.variant.key, spec, context)
    notes.extend(secret_build_args(spec.image))
    check_context_paths(context, spec, spec_path)
    relative = f"images/{variant}/Dockerfile"
    text = named_in(rendered_dockerfile(view), relative, spec_path, context)  # as `render --spec --out` writes it
    build_text, frontend = without_frontend_pin(text) if offline and engine_kind == "docker" else (text, None)
    check_build_args(build_args or {}, build_text)
    dockerfile, committed = choose_dockerfile(context, text, variant, scratch,
                                              write=write_dockerfile and not dry_run, build_text=build_text)
    in_context = (context / relative).is_file()
    yours = in_context and not committed and not _marked(context / relative)
    notes.append(_dockerfile_note(relative, committed, in_context, frontend, yours=yours,
                                  refresh=render_command("images", spec_path, context, force=yours)))
    check_copied_sources(context, build_text, relative if committed else f"the Dockerfile rendered for {variant}",
                         spec_path)
    refreshed = refresh_entrypoint(context, write=not dry_run)
    if refreshed:
        notes.append(refreshed)
    written: list = []
    from nodeweave.build.context import WHEELHOUSE

    house_was_there = (context / WHEELHOUSE).exists()  # said before link_wheelhouse makes it (walk17 A1)
    house, count = link_wheelhouse(context, wheelhouse, write=not dry_run,
                                   fill=lambda folder: wheelhouse_command(view, folder, context), written=written)
    given = wheelhouse.expanduser().resolve() if wheelhouse is not None else None
    notes.append(wheelhouse_note(house, count, given, offline, dry_run))
    index = shell_index_note(os.environ, view, context, offline)
    if index:
        notes.append(index)
    if offline and given is not None and given != house.resolve() and wheels_in(given) == 0:
        from nodeweave.errors import UsageError

        raise UsageError(f"--wheelhouse {given} holds none (no *.whl or *.tar.gz), and --offline installs from the "
                         f"wheelhouse only; fill it: {wheelhouse_command(view, given, context)} (docs/images.md, "
                         "offline builds), or give the folder that holds the wheels")
    if offline and count == 0:
        from nodeweave.errors import UsageError

        # the default folder is judged as --wheelhouse DIR is: missing is said as missing, not as empty
        missing = not given and not house_was_there
        where = (f"--wheelhouse {given} holds none (nor does {house})" if given
                 else f"{house} does not exist" if missing else f"{house} is empty")
        fill = given or house
        raise UsageError(f"--offline needs wheels, but {where}; {'make and fill' if missing else 'fill'} it: {wheelhouse_command(view, fill, context)} "
                         "(docs/images.md, offline builds)" + ("" if given else ", or pass --wheelhouse DIR"))
    if offline:
        lacking = wheels_lacking(view, context, [folder for folder in (given, house) if folder is not None])
        if lacking:
            from nodeweave.errors import UsageError

            shown = ", ".join(lacking[:8]) + (f" and {len(lacking) - 8} more" if len(lacking) > 8 else "")
            fill = given or house
            raise UsageError(f"--offline installs from the wheelhouse only, and it holds no distribution of {shown} "
                             f"(what the image installs by name); fill it: {wheelhouse_command(view, fill, context)} "
                             "(docs/images.md, offline builds)")
    revision = git_revision(context)
    if push and revision is None and not (tag or view.fixed_tag):
        notes.append(f"{no_revision_why(context)}, so there is no <variant>-<git sha> tag: only the mutable "
                     f":{variant} is pushed (a later push replaces it); commit the folder in git, or give --tag for "
                     "a fixed tag")
    if network is not None:
        check_build_network(network)
    plan = plan_build(view, context, dockerfile, revision, base=base, push=push,
                      fixed_tag=tag, extra_args=build_args, offline=offline, network=network,
                      version=__version__, source=_git_remote(context))
    own = dockerfile == context / relative  # the context's Dockerfile matches: nothing to write
    return PreparedBuild(plan=plan, notes=notes, dockerfile_text=None if own else build_text, written=written)
