"""``image``: the variant and what goes into the image beyond the catalogue (packages, project code, extras).

A requirements file is read here, once, so a loose pin (``torch>=2``) is
refused with its own file and line before any build starts: every layer
nodeweave renders installs exact versions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

from yaml.nodes import Node

from nodeweave.entrypoint import bounded
from nodeweave.catalogue import EXTRAS, get_variant, known_variants
from nodeweave.spec import rules
from nodeweave.spec.fields import optional, rule_list, string_map
from nodeweave.spec.model import Image, Project
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("variant", "registry", "tag", "base", "build_args", "apt", "pip", "requirements", "project", "extras",
        "digest")
# Options a requirements file may carry; -r/-c/-e would reach files outside it or install unpinned code.
REQUIREMENT_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--hash", "--pre",
                       "--only-binary", "--no-binary", "--prefer-binary", "--trusted-host")
# What each of them takes, as pip reads it (None: a flag, no value): a value missing or of another shape is refused
# by validate naming the line, not by pip minutes into the build (walk12 A9, A10). PER_REQUIREMENT: what pip takes
# after a requirement on its line.
OPTION_VALUES = {"--index-url": "a URL", "-i": "a URL", "--extra-index-url": "a URL", "--find-links": "a URL or a path",
                 "-f": "a URL or a path", "--hash": "sha256:<64 hex digits> (or sha384:<96>, sha512:<128>)",
                 "--pre": None, "--only-binary": ":all:, :none: or package names",
                 "--no-binary": ":all:, :none: or package names", "--prefer-binary": None, "--trusted-host": "a host",
                 "--config-settings": "KEY=VALUE", "--global-option": "a setup.py option"}
PER_REQUIREMENT = ("--hash", "--config-settings", "--global-option")
HASH_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


def image(r: Reader, top: Fields, base_dir: Optional[Path]) -> Image:
    f = r.fields(top.require("image", "a mapping with at least 'variant'"), "image", KEYS)
    variant = r.field(lambda: _variant(r, f), None)  # each field on its own: every mistake in one run (walk15 A1)
    requirements = optional(r, f, "requirements", rules.REQUIREMENTS_FILE)
    if requirements is not None and base_dir is not None:
        check_requirements_file(r, f.get("requirements"), base_dir / requirements, requirements, variant,
                                folder=base_dir)
    pip = rule_list(r, f.get("pip"), "image.pip", rules.PINNED_REQUIREMENT, unique=True)
    for path, item in r.field(lambda: list(r.sequence(f.get("pip"), "image.pip", "pinned requirements")), []):
        problem = baked_problem(item.value, variant, requirement=True) if getattr(item, "value", None) in pip \
            else None  # an item the rule refused is said once
        if problem:
            r.keep(r.fail(item, path, f"{redacted(item.value)!r} {problem[0]}", problem[1]))
    build_args = string_map(r, f.get("build_args"), "image.build_args", rules.ENV_NAME)
    for name, value in build_args.items():
        problem = None if rules.looks_secret(name) else url_credential(value)
        if problem:  # a declared ARG's default: in the Dockerfile and the image history
            r.keep(r.fail(_entry_node(r, f.get("build_args"), name), f"image.build_args.{name}", *problem))
    return Image(
        variant=variant,
        registry=optional(r, f, "registry", rules.REGISTRY) or Image.registry,
        tag=optional(r, f, "tag", rules.IMAGE_TAG),
        base=optional(r, f, "base", rules.IMAGE_REFERENCE),
        build_args=build_args,
        apt=rule_list(r, f.get("apt"), "image.apt", rules.APT_PACKAGE, unique=True),
        pip=pip,
        requirements=requirements,
        project=r.field(lambda: _project(r, f.get("project"), base_dir), None),
        extras=r.field(lambda: _extras(r, f.get("extras"), variant), ()),
        digest=optional(r, f, "digest", rules.IMAGE_DIGEST),
    )


def _entry_node(r: Reader, node: Node, key: str) -> Node:
    """The value node of ``key`` in a mapping the reader has read (for the line of a refusal)."""
    return next(value for name, _, value in r.mapping(node, "", "a mapping") if name == key)


SECRET_HINT = ("no build step receives a credential: what a build step downloads with one comes from a wheelhouse "
               "filled on this machine (docs/images.md), one the job needs at run time goes in a Secret volume or "
               "the node's environment")


def notes(spec_image: Image, base_dir: Optional[Path] = None) -> Tuple[str, ...]:
    """What validate (and the build's plan) says of an accepted image section: a secret-looking build arg is kept
    out of the Dockerfile and the build's command line, so no build step sees it; and a requirements line whose
    index URL names ``${VARIABLE}`` (pip's own way to keep a token out of the file), which no build step can fill."""
    args = tuple(f"image.build_args.{name} looks like a secret, so it is kept out of the Dockerfile and the build's "
                 f"command line: no build step sees it ({SECRET_HINT})"
                 for name in sorted(spec_image.build_args) if rules.looks_secret(name))
    return args + _requirement_variable_notes(spec_image.requirements, base_dir)


PRIVATE_INDEX_HINT = ("it passes no credential to pip (a secret-looking build arg is never declared), so pip would "
                      "be refused there: fill a wheelhouse on this machine, where the variable is set (`python -m pip download -d "
                      "wheelhouse -r {file}`), and build with --wheelhouse --offline, or use an index the build "
                      "reaches without credentials")


def _requirement_variable_notes(requirements: Optional[str], base_dir: Optional[Path]) -> Tuple[str, ...]:
    """One note per requirements line that expands ``${VARIABLE}`` in a URL (walk6 W72): pip expands it from
    the environment, and the build's environment never holds it, so pip would get the literal and a 401."""
    if requirements is None or base_dir is None:
        return ()
    try:
        text = bounded.read_text(base_dir / requirements, bounded.TEXT_CAP, "a requirements file")
    except (OSError, UnicodeDecodeError):
        return ()  # check_requirements_file has named it
    found = []
    for number, line in _logical_lines(text):
        names = sorted({m.group(0) for m in _VARIABLE.finditer(line)})
        if names and "://" in line:
            found.append(f"image.requirements: {requirements}:{number} names {', '.join(names)} in a URL, which the "
                         f"image build cannot fill: {PRIVATE_INDEX_HINT.format(file=requirements)}")
    return tuple(found)


def _variant(r: Reader, f: Fields) -> str:
    known = known_variants()
    accepted = "one of " + ", ".join(known) + " (see `nodeweave image variants`)"
    node = f.require("variant", accepted)
    value = r.string(node, "image.variant", accepted)
    if value not in known:
        raise r.bad_value(node, "image.variant", accepted)
    return value


def _project(r: Reader, node: Optional[Node], base_dir: Optional[Path]) -> Optional[Project]:
    if r.is_null(node):
        return None
    f = r.fields(node, "image.project", ("source", "path", "run"))
    source = optional(r, f, "source", rules.PROJECT_SOURCE)
    if source is not None and base_dir is not None and not (base_dir / source.rstrip("/")).is_dir():
        from nodeweave.entrypoint.bounded import not_a_folder

        why = not_a_folder(base_dir / source.rstrip("/"))
        r.keep(r.fail(f.get("source"), "image.project.source", f"{source!r} {why} {looked_in(base_dir)}", "a directory "
                     "inside the build context, relative to the spec's directory (this folder for a spec read from a pipe or -; e.g. third_party/torchtitan)"))
    run = rule_list(r, f.get("run"), "image.project.run", rules.SHELL_LINE)
    for path, item in r.field(lambda: list(r.sequence(f.get("run"), "image.project.run", "shell lines")), []):
        problem = url_credential(item.value) if getattr(item, "value", None) in run else None
        if problem:  # a RUN line is in the image history
            r.keep(r.fail(item, path, *problem))
    if source is None and not run:
        raise r.fail(node, "image.project", "needs a source directory, build commands (run), or both",
                     "source: <directory in the build context> and/or run: [<shell command>, ...]")
    path = optional(r, f, "path", rules.IMAGE_PATH) or Project.path
    return Project(source=source.rstrip("/") if source else None, path=path, run=run)


def _extras(r: Reader, node: Optional[Node], variant: str) -> Tuple[str, ...]:
    accepted = "one of " + ", ".join(EXTRAS) + " (catalogue extras; docs/images.md says what each installs)"
    chosen: List[str] = []
    row = get_variant(variant) if variant is not None else None  # None: the variant was refused

    def read(path: str, item: Node) -> str:
        key = r.string(item, path, accepted)
        if key not in EXTRAS:
            raise r.bad_value(item, path, accepted)
        if row is not None and not EXTRAS[key].applies_to(row):
            raise r.fail(item, path, f"{key} does not apply to variant {variant} ({EXTRAS[key].applies})",
                         "an extra whose vendor and distribution match image.variant")
        if key in chosen:
            raise r.fail(item, path, f"{key!r} is listed twice", "each extra once")
        return key

    for path, item in r.sequence(node, "image.extras", accepted):
        key = r.field(lambda: read(path, item), None)  # each item on its own
        if key is not None:
            chosen.append(key)
    return tuple(chosen)


def looked_in(base_dir: Path) -> str:
    """Where a relative path the spec names was looked for, said in full: with a spec read through a link, which
    folder is meant is the very question (replay6 N2; the folder holding the link, walk6 W58)."""
    return f"in {base_dir.resolve()} (the spec's folder)"


def check_requirements_file(r: Reader, node: Node, file: Path, shown: str, variant: Optional[str] = None,
                            folder: Optional[Path] = None) -> None:
    """Every requirement in ``file`` is pinned, and none contradicts what the image holds or carries what must not
    reach it (``baked_problem``); each that is not is named with its own line, all in one run. ``folder``: the spec's, named
    when the file is not there."""
    field = "image.requirements"
    try:
        text = bounded.read_text(file, bounded.TEXT_CAP, "a requirements file")
    except FileNotFoundError:
        where = f" {looked_in(folder)}" if folder is not None else ""
        raise r.fail(node, field, f"{shown!r} does not exist{where}", "a pinned requirements file inside the build "
                     "context, relative to the spec's directory (this folder for a spec read from a pipe or -)") from None
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or err
        raise r.fail(node, field, f"cannot read {shown!r} ({why})", "a UTF-8 requirements file") from None
    refused = set()
    for number, line in _logical_lines(text):  # every line the image cannot take, each said (walk15 A25)
        problem = _requirement_problem(line)
        if problem:
            refused.add(number)
            r.keep(r.fail(node, field, f"{shown}:{number}: {line!r} {problem}", "name==version or name @ URL per "
                          f"line (with --hash=sha256:<64 hex> after it), comments, and the options "
                          f"{', '.join(REQUIREMENT_OPTIONS)} with their values"))
    for number, line, accepted in requirement_conflicts(text, variant):
        if number not in refused:
            r.keep(r.fail(node, field, f"{shown}:{number}: {line}", accepted))


def requirement_conflicts(text: str, variant: Optional[str]):
    """(line number, what is wrong, what is accepted) for each requirement that contradicts the variant's pins, names a path of this
    machine, or carries a password (``baked_problem``): the build could only fail, or the image would hold it."""
    pinned = {}  # normalised name -> (line number, line): one pin per package, as pip normalises names
    for number, line in _logical_lines(text):
        problem = baked_problem(line, variant, requirement=not line.startswith("-"))
        if problem:
            yield number, f"{redacted(line)!r} {problem[0]}", problem[1]
        match = _PIN.match(line)
        if match is None or line.split(";", 1)[0] != line:  # an environment marker may pin per platform
            continue
        name = _normal_name(match.group(1))
        if name in pinned and _PIN.match(pinned[name][1]).groups()[1:] != match.groups()[1:]:
            first, said = pinned[name]
            yield number, (f"{redacted(line)!r} contradicts line {first} ({redacted(said)!r}): pip reads both "
                           "as one package (names are compared lower case, with -, _ and . alike) and refuses "
                           "the build"), "one pin per package"
        pinned.setdefault(name, (number, line))


PIN_ACCEPTED = ("no pin of torch, deepspeed or accelerate but the variant's (`nodeweave image variants` "
                "lists each variant's)")
PATH_ACCEPTED = ("the wheel in wheelhouse/ and name==version (pip finds it there), or a file:///wheelhouse/... URL "
                 "(where the build mounts the wheelhouse)")
CREDENTIAL_ACCEPTED = ("the URL without its password: fill a wheelhouse with the credentials on this machine "
                       "(`python -m pip download -d wheelhouse ...`) and build with --wheelhouse --offline (a "
                       "${VARIABLE} in the password's place keeps it out of the file, but the build cannot fill it)")
_URL_USER = re.compile(r"\b[a-z][a-z0-9+.-]*://([^/@\s'\"]+)@", re.I)
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(===|==|@)\s*([^\s;]+)")
WHEELHOUSE_IN_BUILD = "/wheelhouse"  # where the build mounts the wheelhouse (PIP_FIND_LINKS)


def redacted(text: str) -> str:
    """``text`` with each URL's password (or long bare token) shown as ``***``: a refusal never prints the secret."""
    def hide(match):
        user, colon, _ = match.group(1).partition(":")
        shown = user + ":***" if colon else ("***" if len(user) >= 20 and not _VARIABLE.fullmatch(user) else user)
        return match.group(0).replace(match.group(1), shown)

    return _URL_USER.sub(hide, text)


def url_credential(text: str, kept: str = "the image (and in every pushed copy)") -> Optional[Tuple[str, str]]:
    """Why ``text`` (a requirement, an index URL, a RUN line, a build arg) carries a credential in a URL, or None:
    a password in ``user:password@``, or a long bare token as the user; ``${VARIABLE}`` stands for one and is fine."""
    for match in _URL_USER.finditer(text):
        user, _, password = match.group(1).partition(":")
        secret = _VARIABLE.sub("", password) if password else ("" if _VARIABLE.fullmatch(user) or len(user) < 20
                                                              else user)
        if secret:
            url = re.split(r"[\s'\"]", text[match.start():], maxsplit=1)[0]
            return f"{redacted(url)} carries a password in its URL, which would stay in {kept}", CREDENTIAL_ACCEPTED
    return None


def _normal_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def baked_problem(line: str, variant: Optional[str], requirement: bool) -> Optional[Tuple[str, str]]:
    """(what is wrong, what is accepted) for one requirement (or option line) whose syntax is fine, or None: it
    carries a password, names a path of this machine, or contradicts the variant's own pins."""
    if url_credential(line):
        return ("carries a password in its URL, which would stay in the image (and in every pushed copy)",
                CREDENTIAL_ACCEPTED)
    words = line.replace("=", " ").split()
    if not requirement and words and words[0] in ("--find-links", "-f", "--index-url", "-i", "--extra-index-url"):
        target = words[1] if len(words) > 1 else ""
        if target and not re.match(r"^https?://", target, re.I) and \
                not target.replace("file://", "").startswith(WHEELHOUSE_IN_BUILD):
            return (f"names {target}, a path on this machine: the build reads this file inside the image, where "
                    "that path does not exist", PATH_ACCEPTED)
        return None
    match = _PIN.match(line)
    if match is None:
        return None
    name, how, target = match.groups()
    if how == "@" and target.lower().startswith("file:") and \
            not re.sub(r"^file:(//)?", "", target).startswith(WHEELHOUSE_IN_BUILD):
        return ("names a file of this machine: the build installs inside the image, where that path does not "
                "exist", PATH_ACCEPTED)
    if variant is None:
        return None
    from nodeweave.catalogue import get_variant

    row = get_variant(variant)
    for pinned in row.pinned_stack:
        own, version = pinned.split("==", 1)
        if _normal_name(own) != _normal_name(name):
            continue
        if how == "@":
            return f"installs {own} from a URL, but image variant {variant} installs {pinned} itself", PIN_ACCEPTED
        given = target if how == "===" else target.split("+", 1)[0]
        if given != version:
            why = ("pip cannot install both" if own == "torch" else
                   f"the layer would replace the variant's {own} with one nobody tested against its torch")
            return (f"pins {own} {target}, but image variant {variant} installs {pinned}: {why} (drop the line, "
                    "or pick a variant with that version)", PIN_ACCEPTED)
    return None


def _logical_lines(text: str):
    """(first line number, text) of each requirement, continuation lines joined, comments dropped."""
    number, pending, start = 0, "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole, pending = (pending + line).strip(), ""
        if whole:
            yield start, whole
    if pending.strip():
        yield start, pending.strip()


def requirement_lines(text: str):
    """(line number, logical line) of a requirements file, continuations joined and comments dropped: what the
    spec's check reads, and what an offline build's wheelhouse is judged against (``build.wheels_lacking``)."""
    return _logical_lines(text)


def _option_problems(words: "list[str]", allowed) -> Optional[str]:
    """Why the option words ``words`` (``--opt VALUE``, ``--opt=VALUE``) are not what pip takes, or None: an option
    not in ``allowed`` (a near one named), a value missing, a flag given one, a --hash not ``ALGO:<hex>`` of its
    length."""
    import difflib
    import re

    index = 0
    while index < len(words):
        word = words[index]
        option, equals, value = word.partition("=")
        if option not in allowed:
            near = difflib.get_close_matches(option, allowed, n=1, cutoff=0.6)
            return (f"has {option!r}, an option pip does not take there" + (f" (did you mean {near[0]}?)" if near
                                                                              else ""))
        takes = OPTION_VALUES.get(option)
        if takes is None:
            if equals:
                return f"gives {option} a value ({value!r}), which it does not take: write {option} alone"
            index += 1
            continue
        if not equals:
            if index + 1 >= len(words) or words[index + 1].startswith("-"):
                return f"has {option} without its value: {option} needs {takes}"
            value = words[index + 1]
            index += 1
        index += 1
        if not value.strip():
            return f"has {option} without its value: {option} needs {takes}"
        if option == "--hash":
            algorithm, _, digest = value.partition(":")
            if algorithm not in HASH_LENGTHS or not re.fullmatch(r"[0-9a-f]{%d}" % HASH_LENGTHS[algorithm], digest):
                return f"has --hash={value}, which pip cannot match: --hash needs {takes}"
    return None


def _requirement_problem(line: str) -> Optional[str]:
    import shlex

    if line.startswith("-"):
        option = line.split("=", 1)[0].split()[0]
        if option in REQUIREMENT_OPTIONS:
            try:
                return _option_problems(shlex.split(line), REQUIREMENT_OPTIONS)
            except ValueError as err:  # an unclosed quote
                return f"cannot be read as pip reads it ({err})"
        if option in ("-e", "--editable"):  # an editable install is a checkout the image cannot keep (replay10 A6)
            target = line[len(option):].lstrip(" =")
            if target.startswith(_VCS) or "://" in target:
                return f"is an editable install, which an image cannot keep: {pin_form(target)}"
            return ("is an editable install of a local folder, which an image cannot keep: copy the folder into the "
                    "workspace and import it from there, or build it into a wheel and give the wheel's folder to the "
                    "build (--wheelhouse FOLDER) as name==version")
        return "is an option a pinned image cannot take"
    requirement, dashes, options = line.partition(" --")
    requirement = requirement.strip()
    if not rules.PINNED_REQUIREMENT.check(requirement):
        return f"is not pinned to one version: {pin_form(requirement)}"
    if dashes:  # the options pip takes after a requirement on its line (walk12 A9: `--hsah=...` passed)
        try:
            return _option_problems(shlex.split("--" + options), PER_REQUIREMENT)
        except ValueError as err:
            return f"cannot be read as pip reads it ({err})"
    return None


_VCS = ("git+", "hg+", "svn+", "bzr+")


def pin_form(requirement: str) -> str:
    """The pinned form that fits an unpinned requirement line, said by validate and by init's note alike (walk9
    A6: a git or wheel URL was told "pin it (name==version)", a form it cannot take): a URL or a VCS reference
    is written ``name @ URL`` (a VCS one at a commit), a local wheel goes to the build's wheelhouse as
    ``name==version``, any other line is pinned ``name==version``."""
    import re

    text = requirement.strip()
    url, _, fragment = text.partition("#")
    egg = re.search(r"(?:^|&)egg=([A-Za-z0-9._-]+)", fragment)
    wheel = re.match(r"([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)-.*\.whl$", url.rsplit("/", 1)[-1])
    if "://" in text or text.startswith(_VCS):
        if text.startswith(_VCS):
            repo = url.split("://", 1)[-1].rstrip("/").rsplit("/", 1)[-1].split("@", 1)[0]
            name = egg.group(1) if egg else repo[:-4] if repo.endswith(".git") else repo
            base = url.rsplit("@", 1)[0] if "@" in url.split("://", 1)[-1] else url
            return f"write it as {name} @ {base}@<commit> (a commit, not a branch or tag, is one version)"
        name = egg.group(1) if egg else wheel.group(1).replace("_", "-") if wheel else "NAME"
        return f"write it as {name} @ {url}"
    if wheel:
        name, version = wheel.group(1).replace("_", "-"), wheel.group(2)
        return (f"a wheel of this machine never reaches the image: write {name}=={version} and give the wheel's "
                "folder to the build (`nodeweave image build --wheelhouse FOLDER`)")
    return "pin it (name==version)"
