"""Load ``nodeweave.yaml`` into a :class:`Spec`, refusing anything a renderer could not use.

The loader is the only place that sees raw YAML. It reads the composed node
tree (for line numbers), hands each part of the file to its section
(``nodeweave.spec.sections``), and checks the few constraints that span
sections (elastic ranges need torchrun, a hosts list fixes the node count,
mount paths are not used twice), so renderers can trust every value they
receive.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Optional

import yaml
from yaml.nodes import Node

from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.planning import shared_rules
from nodeweave.entrypoint.planning.contract import BY_KEY, HOSTFILE_PATH
from nodeweave.entrypoint.planning.exchange_plan import TOKEN_FILE_VARIABLE
from nodeweave.entrypoint.systemfolders import normal_path, per_container
from nodeweave.entrypoint.planning.shared_rules import CHECKPOINT_DIR_ACCEPTED, Naming
from nodeweave.errors import UsageError
from nodeweave.spec import rules
from nodeweave.spec.fields import rule_string
from nodeweave.runfiles import (RUN_FILES, refuse_run_record, run_file_is_spec, run_file_words,  # noqa: F401
                                run_folder_of, spec_above)
from nodeweave.specpath import STDIN, is_stdin, is_stream, spec_folder
from nodeweave.spec.model import NodeRange, Spec
from nodeweave.spec.mounts import MountPoints
from nodeweave.spec.nodes import FAILED, Fields, Reader, SpecErrors
from nodeweave.spec.sections import (image, job, kubernetes, metrics, network, recovery, resources, security,
                                     volumes)

TOP_KEYS = ("name", "image", "nodes", "gpus_per_node", "launcher", "workspace", "cache", "network", "env",
            "kubernetes", "resources", "volumes", "security", "hosts", "slurm", "recovery", "metrics")
# Each section's own keys (a mapping's; volumes: each item's), the one list a hint naming a spec field is held to.
SECTION_KEYS = {"image": image.KEYS, "launcher": job.LAUNCHER_KEYS, "workspace": job.WORKSPACE_KEYS,
                "cache": job.CACHE_KEYS, "network": network.KEYS, "kubernetes": kubernetes.KEYS,
                "resources": resources.KEYS, "volumes": volumes.KEYS, "security": security.KEYS,
                "slurm": security.SLURM_KEYS, "recovery": recovery.KEYS, "metrics": metrics.KEYS}
# A spec is a page or two of YAML (the largest example is ~5 KB); past this, --spec names the wrong file
# (a data set, a log) and reading it would take minutes, so it is refused at once.
MAX_SPEC_BYTES = 1024 * 1024
# Where nodeweave mounts things of its own: a spec volume there would hide them.
HOSTFILE_DIR = posixpath.dirname(HOSTFILE_PATH)


def load_spec(path: "str | Path") -> Spec:
    """Read and validate a spec file (``-``: standard input); every problem is a UsageError naming file and line."""
    path = Path(path)
    text = read_spec_text(path)
    refuse_nodeweaves_own(path, text)
    return parse_spec(text, STDIN_NAME if is_stdin(path) else str(path), base_dir=spec_folder(path))


def refuse_nodeweaves_own(path: Path, text: str) -> None:
    """A file nodeweave wrote, given as the spec (tab completion offers ``compose/local.yaml``): one line naming it as
    what it is, not a spec whose "unknown key" would be fixed by editing a rendered file (walk7 A22). Rendered files
    carry the header; nodeweave's state (``.nodeweave/rendered.json``, ``cluster.json``) lives in ``.nodeweave/``."""
    from nodeweave.entrypoint.ownfolders import STATE_DIR

    head = "\n".join(text.splitlines()[:5])
    rendered = "by nodeweave" in head.lower()
    if rendered:
        from nodeweave.renderedmark import is_marked

        rendered = is_marked(text)
    refuse_run_record(path)
    refuse_own_document(path, text)
    refuse_a_script(path, text)
    own_state = not is_stream(path) and not is_stdin(path) and STATE_DIR in Path(os.path.abspath(path)).parts
    if rendered or own_state:
        found = None if is_stream(path) or is_stdin(path) else spec_above(path)
        shown = found and os.path.relpath(found)
        what = "a file nodeweave rendered from a spec" if rendered else f"nodeweave's own state ({STATE_DIR}/)"
        raise UsageError(f"{path} is {what}, not a spec: give the spec itself"
                         f"{f' (--spec {shown})' if shown else ' (nodeweave.yaml, in the folder render ran in)'}")


# nodeweave's own JSON documents by their schema's name (``{"schema": "nodeweave.NAME/1", ...}``), as a refusal
# names one given as the spec (walk10 A16: bench's result and doctor's report got one "unknown key" line per key).
DOCUMENTS = {"bench": "bench's result (bench --json-out)", "doctor": "doctor's report (doctor -o json)",
             "check": "check's result", "entrypoint": "a node's plan (nodeweave-entrypoint --explain --json)",
             "runfolder": "a run's record (its run.json)", "goodput": "a run's goodput",
             "heat": "a run's step-time heat map", "live": "a node's live status (top -o json)",
             "node": "a node's facts", "run": "a node's record of a run", "hold": "a held node's state",
             "dashboard": "the dashboard's data"}


def refuse_own_document(path: Path, text: str) -> None:
    """A document nodeweave wrote (its top-level ``schema`` one of nodeweave's) given as the spec: one line naming
    it as what it is (``DOCUMENTS``), never one "unknown key" line per key of it."""
    import re

    if not re.search(r"nodeweave\.[\w-]+/\d", text[:MAX_SPEC_BYTES]):
        return
    try:
        data = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError:
        return
    schema = data.get("schema") if isinstance(data, dict) else None
    found = re.fullmatch(r"nodeweave\.([\w-]+)/\d+", schema) if isinstance(schema, str) else None
    if found is None:
        return
    what = DOCUMENTS.get(found.group(1), "a document nodeweave wrote")
    spec = None if is_stream(path) or is_stdin(path) else spec_above(path)
    shown = spec and os.path.relpath(spec)
    raise UsageError(f"{path} is {what}, schema {schema}, not a spec: give the spec itself"
                     f"{f' (--spec {shown})' if shown else ' (nodeweave.yaml)'}")


# Files a --spec names by mistake (tab completion offers train.py beside nodeweave.yaml), by their ending: each is
# named as what it is, never answered by the YAML reader's token names (walk15 A24).
NOT_SPECS = {".py": "a Python script", ".sh": "a shell script", ".bash": "a shell script",
             ".ipynb": "a Jupyter notebook", ".md": "a Markdown document", ".rst": "a reStructuredText document"}


def refuse_a_script(path: Path, text: str) -> None:
    """A script or a document given as the spec (by its ending, or a ``#!`` line): one line naming it as what it
    is and what --spec and launcher.script each name."""
    what = None if is_stdin(path) or is_stream(path) else NOT_SPECS.get(Path(path).suffix.lower())
    if what is None and text.startswith("#!"):
        what = f"a script ({text.splitlines()[0][:60]})"
    if what is None:
        return
    spec = None if is_stream(path) or is_stdin(path) else spec_above(path)
    shown = f"here --spec {min(os.path.relpath(spec), str(spec), key=len)}" if spec else \
        "nodeweave.yaml; `nodeweave init` writes one"
    name = STDIN_NAME if is_stdin(path) else path
    script = "; launcher.script names the training script" if "script" in what or "notebook" in what else ""
    raise UsageError(f"{name} is {what}, not a spec: --spec names the cluster spec ({shown}){script}")


STDIN_NAME = "<stdin>"
SPEC_ENV = "NODEWEAVE_SPEC"
# A stream can be read once; a verb that reads the spec twice gets the same text again: {"-" or the path and the
# pipe's device:inode: text}.
_read_from_streams: "dict[str, str]" = {}
def read_spec_text(path: Path) -> str:
    """The spec's text, at most MAX_SPEC_BYTES from any file (a device or a pipe too); ``-`` reads standard input."""
    try:
        if is_stdin(path):
            if STDIN not in _read_from_streams:
                import sys

                if sys.stdin is None:  # `<&-`: a CI step or `ssh host '...'` with no stdin (walk10 A18)
                    raise UsageError("--spec -: standard input is closed (<&-), so no spec can be read from it; "
                                     "pipe the spec in (--spec - < nodeweave.yaml) or give its path (--spec FILE)")
                _read_from_streams[STDIN] = bounded.read_stream(sys.stdin.buffer, MAX_SPEC_BYTES, "a spec",
                                                                STDIN_NAME).decode("utf-8")
            return _read_from_streams[STDIN]
        if is_stream(path):
            found = os.stat(path)  # the pipe itself: a later one under the same name is another spec
            key = f"{path} {found.st_dev}:{found.st_ino}"
            if key not in _read_from_streams:
                _read_from_streams[key] = bounded.read_text(path, MAX_SPEC_BYTES, "a spec")
            return _read_from_streams[key]
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_SPEC_BYTES:
            raise UsageError(_too_large(path, size))
        return bounded.read_text(path, MAX_SPEC_BYTES, "a spec")
    except bounded.TooLarge:  # a device or a pipe: stat said 0, the bytes said more
        raise UsageError(_too_large(STDIN_NAME if is_stdin(path) else path, MAX_SPEC_BYTES + 1, "more than ")) from None
    except FileNotFoundError:
        raise UsageError(_broken_link(path) or _not_found(path)) from None
    except IsADirectoryError:
        if os.path.islink(path):
            raise UsageError(f"{path}: is a symbolic link to {os.readlink(path)}, a directory{_came_from(path)}; "
                             "make the link name the spec file, or pass it with --spec") from None
        example = _specs_in(path) or f"e.g. {path / 'nodeweave.yaml'}, which it lacks"
        raise UsageError(f"{path}: is a directory{_came_from(path)}; pass the spec file itself ({example})") from None
    except UnicodeDecodeError as err:
        shown = STDIN_NAME if is_stdin(path) else path  # one name for standard input in every message
        raise UsageError(f"{shown}: not UTF-8 text ({err.reason} at byte {err.start}); save the spec as UTF-8"
                         ) from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read the spec file: {err.strerror}") from None


def _broken_link(path: Path) -> str:
    """A spec that is a link to nothing, named as one (walk8 A27: it read "no nodeweave.yaml here", and the verbs
    took the parent folder's spec instead), else ""."""
    if not os.path.islink(path):
        return ""
    return (f"{path}: is a symbolic link to {os.readlink(path)}, which does not exist{_came_from(path)}; fix the "
            "link, or pass an existing spec with --spec")


def _came_from(path: Path) -> str:
    """Where a path no flag gave came from: $NODEWEAVE_SPEC (a shell's leftover is the usual surprise)."""
    import os

    return f" (from ${SPEC_ENV})" if os.environ.get(SPEC_ENV) == str(path) else ""


def spec_flag(path: Path) -> str:
    """`` --spec PATH`` for a command a hint names, as the failing command was given it; "" where the plain command
    finds the same spec (nodeweave.yaml here): a pasted hint then acts on this spec, not on none (walk6, W9)."""
    import shlex

    if Path(path).name == "nodeweave.yaml" and Path(path).resolve() == (Path.cwd() / "nodeweave.yaml").resolve():
        return ""
    return f" --spec {shlex.quote(str(path))}"


def _specs_in(folder: Path) -> str:
    """``--spec a.yaml`` hints for the YAML files in ``folder``, or ""."""
    try:
        found = sorted(p.name for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())[:4]
    except OSError:
        return ""
    return ", ".join(f"--spec {folder / name}" if str(folder) not in ("", ".") else f"--spec {name}"
                     for name in found)


def _not_found(path: Path) -> str:
    """Where the spec was looked for and what to do: init, --spec with a file found here, or the variable to fix."""
    came = _came_from(path)
    if came:
        return (f"{path}: spec file not found{came}; fix or unset {SPEC_ENV}, or pass an existing file with --spec")
    if str(path) == "nodeweave.yaml":
        here = Path.cwd()
        hint = _specs_in(Path("."))
        return (f"no nodeweave.yaml in {here} or any folder above it; `nodeweave init` writes one"
                + (f", or pass the spec you have: {hint}" if hint else ", or pass --spec FILE"))
    return f"{path}: spec file not found; pass an existing file with --spec (default: the nearest nodeweave.yaml)"


def parse_spec(text: str, source_name: str = "nodeweave.yaml", base_dir: Optional[Path] = None) -> Spec:
    """Validate spec text; ``source_name`` is the file name errors show.

    ``base_dir`` is the spec's directory, where files it names (``image.requirements``)
    are read and checked; without it they are taken on trust.
    """
    if len(text) > MAX_SPEC_BYTES:
        raise UsageError(_too_large(source_name, len(text)))
    try:
        return _parse(text, source_name, base_dir)
    except RecursionError:  # thousands of nested [ or {: Python's reader and ours recurse per level
        raise UsageError(f"{source_name}: nested too deeply to read (lists or mappings inside each other thousands "
                         "of levels down); accepted: a spec nests a few levels, as nodeweave.yaml does") from None


def _too_large(source, size: int, more: str = "") -> str:
    return (f"{source}: {more}{size / 1024 / 1024:.1f} MiB is too large for a spec "
            f"(at most {MAX_SPEC_BYTES // 1024} KiB); "
            "--spec names the cluster spec, a page of YAML such as nodeweave.yaml")


# What the YAML reader's words mean for a spec, and what to do (walk2, row U8: they came with no remedy).
YAML_REMEDIES = (
    ("'\\t' that cannot start any token", "indent with spaces, not tabs"),
    ("another document", "a spec is one YAML document: remove the `---` line and what follows it, or keep it in "
                         "a file of its own"),
    ("found undefined alias", "define the anchor (&name) before the alias (*name) that uses it"),
    ("mapping values are not allowed here", "put a space after each colon, and quote a value that holds ': '"),
)


def _yaml_remedy(problem: str) -> str:
    return next((f"; {remedy}" for words, remedy in YAML_REMEDIES if words in problem), "")


def yaml_refusal(err: "yaml.YAMLError", text: str, source_name: str) -> str:
    """Any error of the YAML reader as one line: the file, line and column, the problem, what to do. The reader's
    refusal of a character (a NUL, a control character, U+FFFE) carries no line, only an offset in the text, and
    its words were PyYAML's two lines naming ``<unicode string>`` (walk13 A21): here it is placed as every other
    YAML error is, the character named with its code point."""
    if isinstance(err, yaml.reader.ReaderError):
        offset = max(0, min(int(err.position), len(text)))
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        char = err.character if isinstance(err.character, str) else chr(err.character)
        code = f"U+{ord(char):04X}"
        if char == "\0":
            remedy = ("a NUL byte: the file is binary or saved as UTF-16; save the spec as UTF-8 text")
        else:
            point = ord(char)
            escape = (f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}" if point < 0x10000
                      else f"\\U{point:08x}")
            remedy = f'remove it, or write it as an escape inside a double-quoted string ("{escape}")'
        return f"{source_name}:{line}:{column}: not valid YAML: the character {code} is not allowed in YAML; {remedy}"
    mark = getattr(err, "problem_mark", None)
    where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(err, "problem", None) or err).split())  # one line, whatever the reader said
    return f"{source_name}{where}: not valid YAML: {problem}{_yaml_remedy(problem)}"


def _parse(text: str, source_name: str, base_dir: Optional[Path]) -> Spec:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise UsageError(yaml_refusal(err, text, source_name)) from None
    except ValueError as err:
        raise UsageError(f"{source_name}: not valid YAML: {' '.join(str(err).split())}") from None
    reader = Reader(source_name)
    if reader.is_null(root):
        raise UsageError(
            f"{source_name}: the spec is empty; accepted: a mapping with at least 'name', "
            "'image: {variant: ...}' and 'launcher: {script: ...}' (`nodeweave init` writes a first one)"
        )
    try:
        return _spec(reader, root, base_dir)
    except SpecErrors:
        raise
    except UsageError as err:  # a structural refusal (the file is not a mapping): what was kept before it, then it
        reader.keep(err)
        raise reader.refusal() from None


def _spec(r: Reader, root: Node, base_dir: Optional[Path]) -> Spec:
    """Every part of the file read on its own, so one run names every independent mistake (one line each): within a
    part each field, list item, mapping entry and requirements line too (``Reader.field``: walk15 A1, A23, A25); a
    check across parts runs only when the parts it weighs were read, and a part is read for its own mistakes
    whatever another's refusal (volumes beside a refused resources)."""
    top = r.fields(root, "", TOP_KEYS, extensions=True)
    name = r.attempt(lambda: rule_string(r, top.require("name", rules.JOB_NAME.accepted), "name", rules.JOB_NAME))
    launcher = r.attempt(job.launcher, r, top)
    hosts = r.attempt(job.hosts, r, top.get("hosts"))
    nodes = restarts = FAILED
    if hosts is not FAILED:
        nodes = r.attempt(lambda: _nodes(r, top, hosts, recovery.listed_spares(r, top) if hosts else 0))
    elif top.get("nodes") is not None:  # the hosts refused: nodes' own mistakes are still said (walk6 W32)
        r.attempt(job.nodes, r, top.get("nodes"))
    if nodes is not FAILED:
        made = r.attempt(recovery.recovery, r, top, nodes)
        restarts, nodes = (FAILED, FAILED) if made is FAILED else made
    else:  # the count refused: the section's own mistakes are still said, only its checks against the count are
        # not (walk6 W32: `nodes: two` hid `recovery.enabled: yes` until nodes was fixed)
        made = r.attempt(recovery.recovery, r, top, None)
        restarts = FAILED if made is FAILED else made[0]
    if nodes is not FAILED and launcher is not FAILED and restarts is not FAILED:
        r.attempt(_elastic_needs_torchrun, r, top, nodes, launcher, restarts)
    spec_image = r.attempt(image.image, r, top, base_dir)
    gpus = r.attempt(job.gpus, r, top.get("gpus_per_node"))
    workspace, cache = r.attempt(job.workspace, r, top, base_dir), r.attempt(job.cache, r, top, base_dir)
    net = r.attempt(network.network, r, top)
    env = r.attempt(job.env, r, top.get("env"))
    k8s = r.attempt(kubernetes.kubernetes, r, top, name if name is not FAILED else "job")
    extra = r.attempt(resources.resources, r, top, None if net is FAILED else net.rdma_resources)
    if net is FAILED:  # read for its own mistakes; its clash with the network's resources is not weighed
        extra = FAILED
    if FAILED not in (k8s, nodes, restarts):
        r.attempt(_placeable, r, top, k8s, nodes, restarts)
    watched = r.attempt(metrics.metrics, r, top)
    listening = watched if watched is not FAILED else r.attempt(metrics.listening, r, top)  # its ports, if they read
    if launcher is not FAILED and listening is not FAILED:
        r.attempt(_ports_apart, r, top, launcher, listening)
    if FAILED not in (launcher, restarts, watched):  # without the count where it was refused
        _shared_rules(r, top, {"launcher": launcher, "recovery": restarts, "metrics": watched},
                      None if nodes is FAILED else nodes)
    mounts = FAILED if FAILED in (workspace, cache, extra, hosts) else \
        r.attempt(_mount_points, r, top, workspace.path, cache.path, extra, hosts)
    # the volumes' own mistakes are said whatever else was refused; their mount points only against the others'
    spec_volumes = r.attempt(volumes.volumes, r, top.get("volumes"), None if mounts is FAILED else mounts, base_dir)
    if mounts is FAILED:
        spec_volumes = FAILED
    if FAILED not in (launcher, restarts, workspace) and restarts.checkpoint_dir:
        mounted = None if spec_volumes is FAILED else [v.path for v in spec_volumes]
        r.attempt(_checkpoint_dir_apart, r, top, restarts.checkpoint_dir, launcher.script, workspace, base_dir,
                  mounted)
    if FAILED not in (restarts, spec_volumes, workspace, cache) and restarts.enabled and restarts.checkpoint_dir:
        r.attempt(_checkpoint_dir_mounted, r, top, restarts.checkpoint_dir,
                  [workspace.path, cache.path, *(v.path for v in spec_volumes)])
    if FAILED not in (restarts, spec_volumes) and restarts.enabled and restarts.checkpoint_dir:
        r.attempt(_checkpoint_dir_writable, r, top, restarts.checkpoint_dir, spec_volumes)
    if FAILED not in (env, workspace, cache, spec_volumes) and env and TOKEN_FILE_VARIABLE in env:
        r.attempt(_token_file_mounted, r, top, env[TOKEN_FILE_VARIABLE], workspace.path, cache.path, spec_volumes)
    if FAILED not in (spec_image, spec_volumes) and spec_image.project is not None:
        r.attempt(_project_not_hidden, r, top, spec_image.project.path, mounts)
    guarded, slurm = r.attempt(security.security, r, top), r.attempt(security.slurm, r, top.get("slurm"))
    if FAILED not in (slurm, gpus, spec_image) and slurm is not None:
        r.attempt(_slurm_allocates, r, top, slurm, gpus, spec_image)
    if FAILED not in (slurm, nodes, restarts) and slurm is not None and slurm.nodelist:
        r.attempt(_slurm_nodelist_fits, r, top, slurm, nodes, restarts)
    refusal = r.refusal()
    if refusal is not None:
        raise refusal
    made = Spec(
        name=name,
        image=spec_image,
        nodes=nodes,
        gpus_per_node=gpus,
        launcher=launcher,
        workspace=workspace,
        cache=cache,
        network=net,
        env=env,
        kubernetes=k8s,
        resources=extra,
        volumes=spec_volumes,
        security=guarded,
        hosts=hosts,
        slurm=slurm,
        nodes_given=top.get("nodes") is not None,
        kubernetes_given=tuple(sorted(_given_fields(r, top, "kubernetes"))),
        recovery=restarts,
        metrics=watched,
        notes=_notes(restarts, spec_volumes, launcher, _given_fields(r, top, "launcher"), workspace.path, nodes.max,
                     watched, fewest=nodes.min, cache=cache)
        + _elastic_notes(nodes, launcher, restarts)
        + image.notes(spec_image, base_dir) + job.env_notes(env or {}, tuple(launcher.setup or ()))
        + job.host_notes(hosts),
    )
    _read_as_the_nodes_do(r, top, made)
    refusal = r.refusal()
    if refusal is not None:
        raise refusal
    return made


def _read_as_the_nodes_do(r: Reader, top: Fields, made: Spec) -> None:
    """Every spec field that becomes a node's variable (a row of the contract's table, ``SETTINGS``), rendered as
    the renderers write it (``Setting.text``) and read back by the node's own reader of that variable: the one
    rule of white space at an end (``padded_refusal``), the row's reader (``Setting.read``) and, for the rows the
    rank sources weigh, their reader (``topology.READERS``). What every node would refuse at its start is refused
    here, by validate, render and up alike, in the node's words, naming the field and its line (replay11 R3:
    ``launcher.setup: ["source"]`` was valid, rendered and planned, and every node refused NODEWEAVE_SETUP). One
    loop over the table: a new row is judged with no rule of its own."""
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.planning.contract import SETTINGS, padded_refusal
    from nodeweave.entrypoint.planning.topology import READERS

    for row in SETTINGS:
        if row.spec is None:
            continue
        value = made
        for part in row.spec.split("."):  # resolve.spec_value's walk (spec/ does not import resolve.py)
            value = getattr(value, part)
        text = row.text(value)
        if text is None:  # the variable is left out: the node reads its own default
            continue
        source = f"{row.variable}, as every node receives it"
        try:
            padded = padded_refusal(row.variable, text)
            if padded is not None:
                raise padded
            row.read(text, row.what, source)
            if row.topology:
                READERS[row.key](text, row.what, source)
        except EntrypointError as err:
            problem, _, accepted = str(err).partition("; accepted: ")
            r.keep(r.fail(_field_node(r, top, row.spec), row.spec, problem,
                          accepted or f"a value every node reads ({row.variable})"))


def _field_node(r: Reader, top: Fields, dotted: str) -> Optional[Node]:
    """The YAML node of a dotted spec field (``launcher.setup``), or the nearest section written (its line)."""
    first, *rest = dotted.split(".")
    node = top.get(first)
    path = first
    for part in rest:
        try:
            entries = {key: value for key, _, value in r.mapping(node, path, "a mapping")}
        except UsageError:
            break
        if entries.get(part) is None:
            break
        node, path = entries[part], f"{path}.{part}"
    return node


def _checkpoint_dir_mounted(r: Reader, top: Fields, folder: str, mounted) -> None:
    """recovery.checkpoint_dir in a system folder (/opt/ck, /srv/ck, /var/lib/ck) only on a mount the spec declares
    (``systemfolders.in_system_folder``: the rule every node applies to NODEWEAVE_CHECKPOINT_DIR with its
    /proc/self/mountinfo, and the host's verbs to their folders; replay11 B22)."""
    from nodeweave.entrypoint.systemfolders import in_system_folder

    what = in_system_folder(folder, mounted, f"of the spec (mounted: {', '.join(mounted)})")
    if what:
        node = r.fields(top.get("recovery"), "recovery", recovery.KEYS).get("checkpoint_dir")
        raise r.fail(node, "recovery.checkpoint_dir", what, CHECKPOINT_DIR_ACCEPTED)


def _checkpoint_dir_writable(r: Reader, top: Fields, folder: str, spec_volumes) -> None:
    """The script saves into recovery.checkpoint_dir: on a volume every node mounts read-only, each rank's first
    save fails (``Read-only file system``), and recovery ends the job with exit 10 (walk7 B38)."""
    folder = normal_path(folder)
    for volume in sorted(spec_volumes or (), key=lambda v: -len(v.path)):  # the deepest mount holding it
        mount = normal_path(volume.path)
        if folder == mount or folder.startswith(mount.rstrip("/") + "/"):
            if volume.read_only or volume.secret or volume.config_map:
                node = r.fields(top.get("recovery"), "recovery", recovery.KEYS).get("checkpoint_dir")
                raise r.fail(node, "recovery.checkpoint_dir", f"{folder} is on volume {volume.name} ({mount}), "
                             "which every node mounts read-only: the script cannot save there, and each rank's "
                             "first save would fail", "a folder on a read-write volume, or a path inside "
                             "workspace.path")
            return


def _token_file_mounted(r: Reader, top: Fields, path: str, workspace_path: str, cache_path: str,
                        spec_volumes) -> None:
    """``env.NODEWEAVE_JOB_TOKEN_FILE`` replaces, on every target, the token ``up`` hands each node (its own file is
    not read then), so the nodes must be able to read it: a path on a mount of the spec (the workspace, the cache,
    a volume). Elsewhere every node refuses to start, after ``up`` waited for it (walk7 A48)."""
    if not path.startswith("/"):
        return  # relative: the node's working directory, the workspace
    folder = normal_path(path)
    mounted = [workspace_path, cache_path, *(v.path for v in spec_volumes)]
    if any(folder.startswith(m.rstrip("/") + "/") for m in mounted):
        return
    node = next((v for k, _, v in r.mapping(top.get("env"), "env", "a mapping") if k == TOKEN_FILE_VARIABLE), None)
    raise r.fail(node, f"env.{TOKEN_FILE_VARIABLE}", f"{path!r} is on no mount of the spec (mounted: "
                 f"{', '.join(mounted)}), so no node could read it; it replaces the token `nodeweave up` hands every "
                 "node, on every target",
                 "leave it out (up gives every node a fresh token; a plain sbatch derives one), or a file on a "
                 "read-only volume every node mounts (volumes: - {name: secrets, host_path: /SHARED/secrets, path: "
                 "/secrets, read_only: true})")


def _project_not_hidden(r: Reader, top: Fields, path: str, mounts: MountPoints) -> None:
    """image.project.path is where the build puts the project's code: a mount at it or above it (the workspace
    at /workspace, the cache, a volume) would hide that code on every node at run time."""
    path = path.rstrip("/") or "/"
    for mount, field in mounts.taken.items():
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            project = r.fields(top.get("image"), "image", image.KEYS).get("project")
            node = r.fields(project, "image.project", ("source", "path", "run")).get("path") or project
            where = "where" if path == mount else f"inside {mount}, where"
            raise r.fail(node, "image.project.path", f"{path} is {where} {field} mounts over the image: the "
                         "project built there would be hidden on every node",
                         "a container path no mount covers, such as /opt/project")


def _checkpoint_dir_apart(r: Reader, top: Fields, folder: str, script: str, workspace, base_dir,
                          mounted=None) -> None:
    """``recovery.checkpoint_dir`` holds the script's saves alone: node 0 scans it (three levels down, ``.json``
    files too) for the newest complete save at every restart. Judged by the rule the entrypoint applies to
    NODEWEAVE_CHECKPOINT_DIR (``ownfolders.checkpoint_dir_problem``), on the workspace as this machine has it; a
    link out of it must lead into one of the ``mounted`` volumes' paths, which the containers see as written."""
    from nodeweave.entrypoint import ownfolders

    on_disk = None
    if base_dir is not None and not posixpath.isabs(workspace.host_path):
        on_disk = str(Path(base_dir) / workspace.host_path)
    what = ownfolders.checkpoint_dir_problem(folder, workspace.path, script, on_disk,
                                             [workspace.path, *(mounted or ())] if on_disk else None)
    if what:
        node = r.fields(top.get("recovery"), "recovery", recovery.KEYS).get("checkpoint_dir")
        raise r.fail(node, "recovery.checkpoint_dir", f"{folder!r} is {what}",
                     ownfolders.CHECKPOINT_DIR_ACCEPTED)


def _given_fields(r: Reader, top: Fields, section: str) -> set:
    """The fields of ``section`` the spec writes (not null): a default and a value written out read alike."""
    return {k for k, _, v in r.mapping(top.get(section), section, "a mapping") if not r.is_null(v)}


def _elastic_notes(nodes, launcher, restarts) -> tuple:
    """The entrypoint's own line for an elastic range that ends at the first lost node (no recovery, no restart
    count: ``planning.launch.elastic_ends_at_first_loss``), said by validate and up as each node's --explain says it
    (replay11 B20: validate said only "torchrun admits more up to MAX as they join")."""
    from types import SimpleNamespace

    from nodeweave.entrypoint.planning.launch import elastic_ends_at_first_loss

    values = {"recovery": restarts.enabled, "max_restarts": launcher.max_restarts, "launcher_options": launcher.options}
    settings = SimpleNamespace(get=values.get, source=lambda key: "the default")
    topo = SimpleNamespace(elastic=nodes.elastic, nnodes_min=nodes.min, nnodes_max=nodes.max)
    line = elastic_ends_at_first_loss(settings, topo, launcher.type)
    return (f"nodes: {line}",) if line else ()


def _notes(restarts, spec_volumes, launcher, launcher_given, workspace_path: str, training: int,
           watched=None, fewest=None, cache=None) -> tuple:
    """The entrypoint's warnings (``shared_rules.notes``), said by validate and up: a checkpoint folder in /tmp is
    each container's own unless a volume is mounted over it; ``stall_warn: 0`` takes the stall timeout's stop with
    it. The spec also knows its mounts: an absolute checkpoint folder no mount of it holds (walk5, W2) is in each
    container's own layer, wherever it is."""
    folder = normal_path(restarts.checkpoint_dir) if restarts.checkpoint_dir else ""
    values = {"recovery": restarts.enabled, "checkpoint_dir": restarts.checkpoint_dir,
              "stall_warn": launcher.stall_warn, "stall_timeout": launcher.stall_timeout,
              "spares": restarts.spares, "nnodes": training, "nnodes_min": training if fewest is None else fewest}
    values.update(master_port=launcher.master_port, exchange_port=launcher.exchange_port,
                  no_progress_restarts=restarts.no_progress_restarts, recovery_max_restarts=restarts.max_restarts,
                  checkpoint_given=bool(restarts.checkpoint_dir))  # the folder, even where a mount answers its note
    if watched is not None:
        values.update(metrics=watched.enabled, metrics_port=watched.port, step_pattern=watched.step_pattern)
    mounted = [v.path for v in spec_volumes] + [workspace_path] + ([cache.path] if cache is not None else [])
    if any(folder == path or folder.startswith(path.rstrip("/") + "/") for path in mounted):
        values["checkpoint_dir"] = None
    found = [f"{BY_KEY[key].spec}: {line}" for key, line in
             shared_rules.notes(values, {f"stall_{k[6:]}" for k in launcher_given if k.startswith("stall_")},
                                SPEC_NAMING)]
    root = next((v for v in spec_volumes or () if restarts.enabled and folder and
                 folder == normal_path(v.path)), None)
    if root is not None:  # walk7 B38: the volume's own root, as the workspace root is refused
        found.append(f"recovery.checkpoint_dir: {restarts.checkpoint_dir} is the root of volume {root.name}: node "
                     "0 reads everything on it (datasets, downloaded models with their own checkpoint-N folders) "
                     f"as the script's saves; give the saves a folder of their own, e.g. {folder.rstrip('/')}/ckpt")
    if restarts.enabled and values["checkpoint_dir"] and folder.startswith("/") and \
            not per_container(folder):
        volumes = f", volumes: {', '.join(v.path for v in spec_volumes)}" if spec_volumes else ""
        found.insert(0, f"recovery.checkpoint_dir: {restarts.checkpoint_dir} is on no mount of the spec "
                        f"(workspace.path {workspace_path}{volumes}): each node saves into its own container, node "
                        "0 never sees the others' saves and a replaced node none; put it inside workspace.path, or "
                        "mount storage every node shares there (volumes: - {name: checkpoints, host_path: /SHARED, "
                        f"path: {folder}}})")
    scratch = _node_local(folder, spec_volumes, cache) if restarts.enabled and folder.startswith("/") else ""
    if scratch:
        found.insert(0, f"recovery.checkpoint_dir: {restarts.checkpoint_dir} is on {scratch}: node 0 never sees "
                        "the saves of a node on another host (or pod), and a replaced one starts with none; put it "
                        "inside workspace.path, or mount storage every node shares there (volumes: - {name: "
                        f"checkpoints, host_path: /SHARED, path: {folder}}})")
    unsyncable = sync_dest_problem(workspace_path)
    if unsyncable:
        found.append(f"workspace.path: {unsyncable}")
    return tuple(found)


def _node_local(folder: str, spec_volumes, cache) -> str:
    """The spec's node-local mount ``folder`` lies on, in words, or "" (walk17b B16: ``/cache/ck`` was said to be on
    no mount): ``cache.path`` and a ``cache:`` volume are each host's or each pod's own, never shared storage; the
    deepest mount holding the folder is the one it is on."""
    mounts = [(v.path, _volume_scratch(v)) for v in spec_volumes or ()]
    if cache is not None:
        mounts.append((cache.path, f"cache.path ({cache.path}), which each host or pod has to itself: the host folder "
                                   f"cache.host_path ({cache.host_path}) of each host under compose and Slurm, an "
                                   "emptyDir of each pod on Kubernetes, gone with the pod"))
    held = [(normal_path(path), words) for path, words in mounts
            if folder == normal_path(path) or folder.startswith(normal_path(path).rstrip("/") + "/")]
    return max(held, key=lambda item: len(item[0]))[1] if held else ""


def _volume_scratch(volume) -> str:
    """A ``cache:`` volume in words (node-local scratch), or "" for any other volume."""
    if not volume.cache:
        return ""
    compose = f"the host folder {volume.host_path}" if volume.host_path else "a named volume of each host"
    return (f"volume {volume.name} ({volume.path}, cache: {volume.cache}), node-local scratch: {compose} under "
            "compose, an emptyDir of each pod on Kubernetes, gone with the pod")


def sync_dest_problem(workspace_path: str) -> str:
    """Why ``nodeweave sync`` cannot send to ``workspace_path``, its default DEST (one rule, ``remote.check_dest``:
    a space or a shell character there would have every sync refused, walk7 A15), or ""."""
    from nodeweave.errors import UsageError
    from nodeweave.remote.names import check_dest

    try:
        check_dest(workspace_path, "workspace.path")
    except UsageError as err:
        return (f"{err}; `nodeweave sync` sends to workspace.path by default, so `up --hold; sync; run` cannot sync "
                "this spec's code: name a folder sync accepts (such as /workspace)")
    return ""


SPEC_NAMING = Naming(lambda key: BY_KEY[key].spec, on="true", off="false", assign=": ")


def _shared_rules(r: Reader, top: Fields, sections: dict, count: Optional[NodeRange]) -> None:
    """The rules the entrypoint applies to its flags and variables (``shared_rules``), on the spec's fields;
    ``count`` None: the node count was refused, so the rules that weigh it are not applied."""
    values, given, where = ({"nnodes": count.max}, {"nnodes"}, {"nnodes": top.get("nodes") or top.get("hosts")}) \
        if count is not None else ({"nnodes": None}, set(), {})
    for key in shared_rules.KEYS - {"nnodes"}:
        if BY_KEY[key].spec is None:  # a setting with no spec field (exchange_bind): never given by a spec
            continue
        section, _, field = BY_KEY[key].spec.partition(".")
        values[key] = getattr(sections[section], field)
        entries = {k: v for k, _, v in r.mapping(top.get(section), section, "a mapping")}
        if not r.is_null(entries.get(field)):
            given.add(key)
            where[key] = entries[field]
    for problem in shared_rules.problems(values, given, SPEC_NAMING):
        r.keep(r.fail(where.get(problem.key, top.get(BY_KEY[problem.key].spec.partition(".")[0])),
                      BY_KEY[problem.key].spec, problem.problem, problem.accepted))


def _slurm_allocates(r: Reader, top: Fields, slurm, gpus, spec_image) -> None:
    """On a shared node (``exclusive: false``) sbatch must be told a GPU count: ``auto`` asks for none, so the
    job would see no GPU or another job's. Refused here, where ``render slurm`` refused it after validate passed."""
    from nodeweave.catalogue import get_variant

    if gpus != "auto" or slurm.exclusive or get_variant(spec_image.variant).gpu_resource is None:
        return
    node = {k: v for k, _, v in r.mapping(top.get("slurm"), "slurm", "a mapping")}.get("exclusive")
    raise r.fail(node, "slurm.exclusive", f"false with gpus_per_node auto (variant {spec_image.variant}): on "
                 "a shared node sbatch needs a GPU count to allocate", "gpus_per_node as a count (e.g. 8), or "
                 "slurm.exclusive: true (whole nodes, each running one process per GPU it has)")


def _elastic_needs_torchrun(r: Reader, top: Fields, nodes: NodeRange, launcher, restarts) -> None:
    """An elastic range needs torchrun's rendezvous; under recovery the range is recovery.min_nodes."""
    if not nodes.elastic or launcher.type == "torchrun":
        return
    field = "recovery.min_nodes" if restarts.enabled else "nodes"
    where = r.fields(top.get("recovery"), "recovery", recovery.KEYS).get("min_nodes") if restarts.enabled \
        else top.get("nodes")
    what = (f"makes the job elastic ({nodes}), which needs launcher.type torchrun "
            f"(got {launcher.type})") if restarts.enabled else \
        f"the elastic range {nodes} needs launcher.type torchrun (got {launcher.type})"
    raise r.fail(where, field, what, "a fixed node count with " + launcher.type +
                 (" (leave recovery.min_nodes out)" if restarts.enabled else ""))


def _ports_apart(r: Reader, top: Fields, launcher, watched) -> None:
    """Node 0 listens on three ports (the rendezvous, the check-in exchange, /metrics): the metrics port may be
    neither of the others, or node 0's metrics server and the job would fight for it."""
    if not watched.enabled:
        return
    exchange = launcher.exchange_port or launcher.master_port + 1
    taken = {launcher.master_port: "launcher.master_port", exchange: (
        "launcher.exchange_port" if launcher.exchange_port else "the check-in exchange's port (launcher.master_port "
        "+ 1)")}
    if watched.port not in taken:
        return
    given = r.fields(top.get("metrics"), "metrics", metrics.KEYS).get("port")
    others = " and ".join(str(p) for p in sorted(taken))
    raise r.fail(given or top.get("launcher"), "metrics.port",
                 f"{watched.port}{'' if given else ' (the default)'} is {taken[watched.port]} too: node 0 listens "
                 "on each", f"metrics.port other than {others}" + ("" if given else _other_port(launcher, watched)))


def _other_port(launcher, watched) -> str:
    """With metrics.port left at its default, the port the spec set is the one to change (walk9 B28: another
    master_port was offered for an exchange_port that was the metrics default)."""
    if launcher.exchange_port == watched.port:
        return ", or another launcher.exchange_port"
    return ", or another launcher.master_port"


def _nodes(r: Reader, top: Fields, hosts: tuple, spares: int) -> NodeRange:
    """``nodes``; with a hosts list it defaults to the list's length, less recovery's spares (the list's last
    hosts), and must equal that."""
    node = top.get("nodes")
    if not hosts:
        return job.nodes(r, node)
    training = len(hosts) - spares
    after = f", less recovery.spares {spares} (the last hosts)" if spares else ""
    if training < 1:
        raise r.fail(top.get("hosts"), "hosts", f"{len(hosts)} host(s) leave no training node beside "
                     f"recovery.spares {spares}", f"more than {spares} hosts: the training nodes, then the spares")
    if node is None:
        return NodeRange(training, training)
    nodes = job.nodes(r, node)
    if nodes.elastic or nodes.min != training:
        more = (f", or list {nodes.max + spares} hosts (the training nodes, then a host for each spare)"
                if spares and nodes.max + spares > len(hosts) else "")
        raise r.fail(node, "nodes", f"{nodes} does not match the {len(hosts)} hosts listed in hosts{after} (each "
                     "host is one node, in order)", f"{training}{more}, or leave nodes out with a hosts list")
    return nodes


def _slurm_nodelist_fits(r: Reader, top: Fields, slurm, nodes: NodeRange, restarts) -> None:
    """``--nodelist`` pins hosts and never caps the count: "the job will contain all of these hosts" (sbatch(1)), so
    a list naming more nodes than the job asks for (nodes, an elastic range's MAX without recovery, + the spares)
    makes a bigger job than the spec says; a shorter one is filled by Slurm. A node named twice is a mistake Slurm
    would drop silently."""
    from nodeweave.spec.sections.security import slurm_node_names

    from nodeweave.entrypoint.errors import UsageError as RangeError

    where = r.fields(top.get("slurm"), "slurm", security.SLURM_KEYS).get("nodelist")
    try:
        names = slurm_node_names(slurm.nodelist)
    except RangeError as err:  # gpu[04-01]: a descending range
        raise r.fail(where, "slurm.nodelist", str(err), rules.SLURM_NODES.accepted) from None
    seen: dict = {}
    for name, entry in ((n, e) for e in slurm.nodelist for n in slurm_node_names([e])):
        if name in seen:
            twice = f"{seen[name]!r} and {entry!r}" if seen[name] != entry else repr(entry)
            raise r.fail(where, "slurm.nodelist", f"names node {name} twice ({twice})", "each node once")
        seen[name] = entry
    most = nodes.max + restarts.spare_nodes
    if len(names) <= most:
        return
    parts = f"nodes: {nodes}" + (f" + recovery.spares {restarts.spare_nodes}" if restarts.spare_nodes else "")
    raise r.fail(where, "slurm.nodelist", f"names {len(names)} nodes ({', '.join(slurm.nodelist)}) but the job is "
                 f"{most} ({parts}): a Slurm job contains every --nodelist host, so it would be {len(names)} nodes",
                 f"at most {most} nodes (Slurm picks the rest), or nodes raised to match")


HOSTNAME_LABEL = "kubernetes.io/hostname"


def _placeable(r: Reader, top: Fields, k8s, nodes: NodeRange, restarts) -> None:
    """Required anti-affinity puts one pod per Kubernetes node; pinned to a list of nodes (``node_names``, or a
    ``kubernetes.io/hostname In`` term), the list must hold every pod the job runs, spares and an elastic MAX
    included, or the last pods stay Pending for ever."""
    pinned = set(k8s.node_names) if k8s.node_names else None
    for term in k8s.node_affinity:
        if term.key == HOSTNAME_LABEL and term.operator == "In":
            pinned = set(term.values) if pinned is None else pinned & set(term.values)
    pods = nodes.max + restarts.spare_nodes
    if k8s.anti_affinity != "required" or pinned is None or pods <= len(pinned):
        return
    parts = f"{nodes.max} node(s)" + (f" + recovery.spares {restarts.spare_nodes}" if restarts.spare_nodes else "")
    scaled = " when scaled to the range's MAX" if nodes.elastic and not restarts.enabled else ""
    where = r.fields(top.get("kubernetes"), "kubernetes", kubernetes.KEYS)
    field = "node_names" if k8s.node_names else "node_affinity"
    raise r.fail(where.get(field), f"kubernetes.{field}", f"{pods} pods ({parts}){scaled} with kubernetes."
                 f"anti_affinity required (one pod per Kubernetes node) are pinned to {len(pinned)} node(s): "
                 f"{pods - len(pinned)} pod(s) could never be scheduled",
                 f"at least {pods} nodes listed, fewer nodes or spares, or kubernetes.anti_affinity: preferred")


def _mount_points(r: Reader, top: Fields, workspace: str, cache: str, extra, hosts: tuple) -> MountPoints:
    """nodeweave's own mounts, then the workspace's and the cache's, each claimed under the one mount rule."""
    own = {"/dev/shm": "nodeweave's shared memory"}
    for _, _, path in extra.hugepage_mounts:
        own[path] = "resources.hugepages"
    if hosts:
        own[HOSTFILE_DIR] = "the hosts list (compose mounts it there)"
    mounts = MountPoints(r, own)
    for section, keys, path in (("workspace", job.WORKSPACE_KEYS, workspace), ("cache", job.CACHE_KEYS, cache)):
        node = top.get(section)
        mounts.claim(r.fields(node, section, keys).get("path") or node, f"{section}.path", path)
    return mounts
