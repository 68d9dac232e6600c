"""What an output option may replace: only a file of the kind nodeweave writes there.

Why: ``init --out train.py --force`` replaced the training script with a spec, and ``bench --json-out
notes.txt`` or ``runs compare --chart photo.png`` wrote over whatever was there (walk2, row D1). ``--force``
says "replace my earlier output", never "replace any file": a file that is not of the option's kind (a
spec, a bench result, a DeepSpeed hostfile, a chart matplotlib drew) is refused whatever the flags say (exit 2),
and the message does not suggest ``--force`` for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Dict

from nodeweave.errors import UsageError

PEEK_BYTES = 1 << 20  # a file of ours is small; a bigger one is judged on its head (and is no spec or hostfile)


def _head(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(PEEK_BYTES)


def _is_spec(data: bytes) -> bool:
    """An earlier spec: init's header, or a YAML mapping with a ``name`` and a spec section."""
    text = data.decode("utf-8", "replace")
    if "written by `nodeweave init`" in text:
        return True
    try:
        import yaml

        doc = yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - not YAML at all: not a spec
        return False
    return isinstance(doc, dict) and "name" in doc and bool({"launcher", "image", "nodes"} & set(doc))


BENCH_SCHEMA = "nodeweave.bench/"  # bench/report.py's SCHEMA, whatever its version


def _is_bench_result(data: bytes) -> bool:
    """An earlier ``bench --json-out``: a JSON document with bench's schema. Any JSON document was taken as one,
    so ``--json-out ds.json`` replaced the team's DeepSpeed config with numbers (walk8 A23)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and str(doc.get("schema", "")).startswith(BENCH_SCHEMA)


HOSTFILE_LINE = re.compile(r"^\s*(#.*)?$|^\s*\S+\s+slots=\d+\s*(#.*)?$")


def _is_hostfile(data: bytes) -> bool:
    text = data.decode("utf-8", "replace")
    return bool(text.strip()) and all(HOSTFILE_LINE.match(line) for line in text.splitlines())


def _is_plan_record(data: bytes) -> bool:
    """An earlier ``NODEWEAVE_PLAN_RECORD``: the JSON of a plan (its verb and its phases)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and "verb" in doc and "phases" in doc


def _is_chart(data: bytes) -> bool:
    """A chart nodeweave drew: a PNG or SVG that matplotlib wrote (its ``Software`` text chunk, its "Created with
    matplotlib" comment); any PNG was taken as one, so ``--chart photo.png`` replaced a photo (walk8 A23)."""
    head = data[:512].lstrip()
    image = head.startswith(b"\x89PNG") or head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data)
    return image and b"matplotlib" in data.lower()


KINDS: Dict[str, "tuple[str, Callable[[bytes], bool]]"] = {
    "spec": ("a nodeweave spec", _is_spec),
    "bench": ("an earlier bench result (a JSON document with schema nodeweave.bench/N)", _is_bench_result),
    "hostfile": ("a DeepSpeed hostfile (HOST slots=N lines)", _is_hostfile),
    "chart": ("a chart nodeweave drew (a PNG or SVG matplotlib wrote)", _is_chart),
    "plan": ("an earlier plan record (a plan's JSON)", _is_plan_record),
}


# kind: the endings a file of that kind is named with; a name saying another format is refused, written or not
# (walk9 A4: `init --out main.py`, the slip for --script, wrote YAML into main.py, and `--out a.json` YAML into a
# .json). The charts' (.png, .svg) are runs.chart.FORMATS, judged by check_chart_path first.
SUFFIXES: Dict[str, "tuple[str, tuple[str, ...]]"] = {"spec": ("a spec, in YAML", (".yaml", ".yml")),
                                                     "bench": ("bench's numbers, in JSON", (".json",)),
                                                     "chart": ("a chart", (".png", ".svg"))}
# kind: (what it holds, the endings of FORMAT_ENDINGS its name may carry, a name to offer): any name, but never one
# that says another format (walk10 A9: `--write-hostfile ds_config.json` wrote `host slots=N` lines into a .json
# that `deepspeed --deepspeed_config` then read; `spec.yaml` a hostfile `validate --spec` read).
ANY_NAME: Dict[str, "tuple[str, tuple[str, ...], str]"] = {
    "hostfile": ("a DeepSpeed hostfile (HOST slots=N lines)", (), "hostfile"),
    "plan": ("a plan record, in JSON", (".json",), "plan.json"),
}
# Endings that say what a file holds: a file of another kind is never named with one.
FORMAT_ENDINGS: Dict[str, str] = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML",
                                  ".py": "Python", ".sh": "a shell script", ".ipynb": "a notebook", ".csv": "CSV",
                                  ".png": "a PNG image", ".svg": "an SVG image", ".pyz": "a Python zipapp"}


def refuse_foreign_file(path: Path, flag: str, kind: str, also_not: "Dict[Path, str] | None" = None,
                        subject: "str | None" = None, force: "bool | None" = None) -> bool:
    """Refuse a ``path`` whose name says another format than ``kind``'s (SUFFIXES), and replacing ``path`` unless
    it is missing or of ``kind``; ``also_not`` maps the user's own files the new output names (init's script and
    requirements file) to what they are, refused even when they happen to parse as ``kind``. ``subject`` is how
    the line names the path (``option_named``: no flag the user did not type); ``flag`` stays in the remedy, the
    option to give. ``force``: the verb's --force (None: a variable, which has none); an earlier output of
    ``kind`` is replaced only with it, the one rule of every verb that writes a file the user names (init
    --out, hosts probe --write-hostfile, bench --json-out and --plot, runs compare --chart: replay11 A27, a
    second ``bench --json-out base.json`` replaced the baseline without a word). True: the file is there and
    is replaced (a dry run says so)."""
    subject = subject or f"{flag} {path}"
    if not path.is_file():
        _refuse_another_format(path, flag, kind, subject)  # missing (written new), or a device/folder:
        return False  # output_file's check names those
    what, looks_like = KINDS[kind]
    resolved = path.resolve()
    named = next((what for p, what in (also_not or {}).items() if p.resolve() == resolved), None)
    if named is not None:
        raise UsageError(f"{subject}: that is {named}; nodeweave never replaces it, whatever the flags say: "
                         f"give {flag} another file")
    try:
        ours = looks_like(_head(path))
    except OSError as err:
        raise UsageError(f"{subject}: cannot read it to see what it is ({err.strerror}); give {flag} another "
                         "file") from None
    if not ours:
        raise UsageError(f"{subject}: the file exists and is not {what}, so nodeweave never replaces it, "
                         f"whatever the flags say: give {flag} another file, or move it away first")
    _refuse_another_format(path, flag, kind, subject)  # after what the file is: a file of yours is named as that
    if force is False:
        raise UsageError(f"{subject} exists and is {what}: pass --force to replace it, or give {flag} another file")
    return True


def may_replace(flag: str, kind: str, force: "bool | None", also_not: "Dict[Path, str] | None" = None,
                subject: "str | None" = None) -> "Callable[[Path], None] | None":
    """The write-time half of :func:`refuse_foreign_file`, for :func:`nodeweave.newfile.write_new`: None (a file
    that appeared after the start-up check is kept, the write refused) without --force; with it (or for a variable,
    ``force`` None) the same judgement again at that moment, so --force still replaces only an earlier output of
    ``kind`` (walk12 A21-A23: the check made at start held nothing at the moment of writing)."""
    if force is False:
        return None
    return lambda path: refuse_foreign_file(path, flag, kind, also_not=also_not, subject=subject, force=force) and None


def _refuse_another_format(path: Path, flag: str, kind: str, subject: str) -> None:
    written, endings = SUFFIXES.get(kind, ("", ()))
    suffix = path.suffix.lower()
    if endings and suffix not in endings:
        slip = " (--script names the training script)" if kind == "spec" and suffix == ".py" else ""
        raise UsageError(f"{subject}: {flag} writes {written}; accepted: a file name ending in "
                         f"{' or '.join(endings)}{slip}")
    if kind in ANY_NAME and suffix in FORMAT_ENDINGS and suffix not in ANY_NAME[kind][1]:
        written, own, example = ANY_NAME[kind]
        raise UsageError(f"{subject}: {flag} writes {written}, and a name ending in {suffix} says "
                         f"{FORMAT_ENDINGS[suffix]}: whatever reads it as {FORMAT_ENDINGS[suffix]} would fail; "
                         f"accepted: a name that says no other format, e.g. "
                         f"{path.with_name(example) if path.parent != Path('.') else example}")

