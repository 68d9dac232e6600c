"""``nodeweave render``: write what the renderers make of the spec, never clobbering a user's file.

The renderers are pure (``render_files(spec) -> {path: text}``); this module
is the effectful side. It plans every file first (new, changed, unchanged,
refused, obsolete) and writes only when nothing is refused, so a run either
does all it says or nothing. A differing file is overwritten only when it
carries the "by nodeweave" mark every rendered file starts with (or with
``--force``). ``--check`` compares without writing and exits 4 when the files
on disk are stale, which is what CI and tests/test_rendered_up_to_date.py use.
"""

from __future__ import annotations

import enum
import hashlib
import importlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional

import typer

from nodeweave.errors import EXIT_STALE, EnvironmentProblem, NodeweaveError, UsageError

RENDERERS = ("images", "compose", "manifests")
MARK = "by nodeweave"
MARK_LINES = 5


class Target(str, enum.Enum):
    images = "images"
    compose = "compose"
    manifests = "manifests"
    all = "all"


@dataclass(frozen=True)
class Planned:
    path: str
    bytes: int
    status: str  # new | changed | unchanged | refused | obsolete
    sha256: str


def render_targets(spec, targets: List[str]) -> Dict[str, str]:
    """Every file the chosen renderers make, by relative path; two renderers may not claim one path."""
    files: Dict[str, str] = {}
    for name in targets:
        try:
            module = importlib.import_module(f"nodeweave.{name}")
        except ModuleNotFoundError as err:
            if err.name not in (f"nodeweave.{name}", "nodeweave"):
                raise
            raise EnvironmentProblem(f"renderer nodeweave.{name} is not part of this installation; render one of the others")
        render_files = getattr(module, "render_files", None)
        if render_files is None:
            raise EnvironmentProblem(f"renderer nodeweave.{name} has no render_files(spec); this installation is incomplete")
        for path, text in render_files(spec).items():
            _check_relative(name, path)
            if path in files:
                raise NodeweaveError(f"renderers disagree: {path} is rendered twice (second time by nodeweave.{name})")
            files[path] = text
    return dict(sorted(files.items()))


def _check_relative(renderer: str, path: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise NodeweaveError(f"renderer nodeweave.{renderer} returned the path {path!r}, which would leave --out")


def is_marked(text: str) -> bool:
    head = "\n".join(text.splitlines()[:MARK_LINES]).lower()
    return MARK in head


def plan(files: Dict[str, str], out: Path, force: bool = False) -> List[Planned]:
    """What writing ``files`` under ``out`` would do to each path, plus rendered files no longer made."""
    result = []
    for path, text in files.items():
        data = text.encode("utf-8")
        target = out / path
        if target.is_dir():
            status = "refused"
        elif not target.exists():
            status = "new"
        else:
            old = target.read_bytes()
            if old == data:
                status = "unchanged"
            elif force or is_marked(old.decode("utf-8", errors="replace")):
                status = "changed"
            else:
                status = "refused"
        result.append(Planned(path, len(data), status, hashlib.sha256(data).hexdigest()))
    return result + _obsolete(files, out)


def _obsolete(files: Dict[str, str], out: Path) -> List[Planned]:
    """Marked files under the rendered folders (compose/, images/, ...) that no renderer makes now."""
    folders = sorted({PurePosixPath(p).parts[0] for p in files if len(PurePosixPath(p).parts) > 1})
    found = []
    for folder in folders:
        root = out / folder
        if not root.is_dir():
            continue
        for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = file.relative_to(out).as_posix()
            if rel in files:
                continue
            data = file.read_bytes()
            if is_marked(data.decode("utf-8", errors="replace")):
                found.append(Planned(rel, len(data), "obsolete", hashlib.sha256(data).hexdigest()))
    return found


def write(files: Dict[str, str], planned: List[Planned], out: Path, prune: bool) -> None:
    """Write new and changed files atomically (temp file + rename); remove obsolete ones if asked."""
    for item in planned:
        target = out / item.path
        if item.status in ("new", "changed"):
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(files[item.path].encode("utf-8"))
                os.chmod(temp, (target.stat().st_mode & 0o777) if target.exists() else 0o644)
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        elif item.status == "obsolete" and prune:
            target.unlink()


def _relative_host_paths(spec) -> List[str]:
    return [
        f"{field}.host_path {value!r}"
        for field, value in (("workspace", spec.workspace.host_path), ("cache", spec.cache.host_path))
        if not value.startswith(("/", "~"))
    ]


def _report(planned: List[Planned], as_json: bool, header: dict) -> None:
    if as_json:
        typer.echo(json.dumps({**header, "files": [asdict(p) for p in planned]}, indent=2, sort_keys=True))
        return
    width = max((len(str(p.bytes)) for p in planned), default=1)
    for p in planned:
        typer.echo(f"{p.status:<9}  {p.bytes:>{width}} B  {p.path}")
    counts = {s: sum(1 for p in planned if p.status == s) for s in ("new", "changed", "unchanged", "obsolete")}
    typer.echo(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing to render", err=True)


def render(
    target: Target = typer.Argument(Target.all, help="what to render: images, compose, manifests or all"),
    spec_path: Path = typer.Option(Path("nodeweave.yaml"), "--spec", help="the cluster spec"),
    out: Optional[Path] = typer.Option(None, "--out", help="output root (default: the spec's directory)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would be written (path, bytes, status); write nothing"),
    as_json: bool = typer.Option(False, "--json", help="print the plan as JSON"),
    check: bool = typer.Option(False, "--check", help="write nothing; exit 4 when the files on disk differ from the spec"),
    force: bool = typer.Option(False, "--force", help="overwrite differing files even without the 'by nodeweave' mark"),
    prune: bool = typer.Option(False, "--prune", help="remove rendered files (marked 'by nodeweave') no renderer makes any more"),
) -> None:
    """Render images, compose files and manifests from the spec into --out (byte-identical on every run)."""
    from nodeweave.spec import load_spec

    spec = load_spec(spec_path)
    out_dir = (out if out is not None else spec_path.parent).resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir}: exists and is not a directory; accepted: a directory (created if missing)")
    targets = list(RENDERERS) if target is Target.all else [target.value]
    files = render_targets(spec, targets)
    planned = plan(files, out_dir, force)
    header = {"spec": str(spec_path), "out": str(out_dir), "targets": targets, "dry_run": dry_run or check, "check": check}
    _report(planned, as_json, header)
    if check:
        stale = [p.path for p in planned if p.status != "unchanged"]
        if stale:
            shown = ", ".join(stale[:8]) + (f" and {len(stale) - 8} more" if len(stale) > 8 else "")
            raise NodeweaveError(
                f"{len(stale)} rendered file(s) under {out_dir} are stale for {spec_path}: {shown}; "
                "run `make render` (or `nodeweave render all --prune`) and commit the result",
                exit_code=EXIT_STALE,
            )
        return
    refused = [p.path for p in planned if p.status == "refused"]
    if refused:
        raise UsageError(
            f"refusing to overwrite {len(refused)} file(s) under {out_dir} that differ and lack the "
            f"'{MARK}' mark, so they look like yours: {', '.join(refused)}; move them away, "
            "render into another --out, or pass --force to overwrite them"
        )
    if "compose" in targets and out_dir != spec_path.resolve().parent and _relative_host_paths(spec):
        typer.echo(
            f"nodeweave: warning: compose files under {out_dir} resolve {', '.join(_relative_host_paths(spec))} "
            "as if the spec sat in that directory; use absolute host paths to render elsewhere",
            err=True,
        )
    if not dry_run:
        write(files, planned, out_dir, prune)


def register(app: typer.Typer) -> None:
    app.command("render")(render)
