"""Render ``images/docker-bake.json``: one ``docker buildx bake`` target per variant.

JSON rather than HCL because ``json.dumps`` quotes any value correctly; bake
still treats ``${...}`` in JSON strings as templates, so spec values are
passed through :func:`bake_literal` and only the variables declared here
(``REVISION``, ``VERSION``, ``SOURCE``) interpolate. JSON has no comments, so
the "by nodeweave" mark that lets ``nodeweave render`` overwrite the file is
the default of an (unused) first variable, ``NODEWEAVE_RENDERED``.
"""

from __future__ import annotations

import json
from typing import Any, List, Sequence

import nodeweave
from nodeweave.targets.images.dockerfile import looks_secret
from nodeweave.targets.images.quoting import bake_literal
from nodeweave.resolve import Resolved


RENDERED_MARK = "Rendered by nodeweave from nodeweave.yaml: edit the spec and run `nodeweave render images`, not this file"


def _tags(r: Resolved) -> List[str]:
    """The moving tag, then the fixed one or ``<variant>-${REVISION}`` (bake fills in the revision)."""
    repository = bake_literal(r.repository)
    moving = f"{repository}:{r.variant.key}"
    if r.fixed_tag:
        return [moving, f"{repository}:{bake_literal(r.fixed_tag)}"]
    return [moving, f"{repository}:{r.variant.key}-${{REVISION}}"]


def render_bake(views: Sequence[Resolved]) -> str:
    """Bake file text building every variant (one view of the spec each) from the repository root."""
    spec = views[0].spec
    # A secret-looking value stays out of this committed file, as it does out of the Dockerfile.
    user_args = {name: bake_literal(value) for name, value in spec.image.build_args.items() if not looks_secret(name)}
    targets = {}
    for r in views:
        key = r.variant.key
        args = dict(user_args)
        args.update({"REVISION": "${REVISION}", "SOURCE": "${SOURCE}", "VERSION": "${VERSION}"})
        targets[key] = {
            "args": args,
            "context": ".",
            "dockerfile": f"images/{key}/Dockerfile",
            "labels": {"io.nodeweave.variant": key},
            "tags": _tags(r),
        }
    variables = {
        "NODEWEAVE_RENDERED": {"default": RENDERED_MARK},
        "REVISION": {"default": "unknown"},
        "SOURCE": {"default": "unknown"},
        "VERSION": {"default": nodeweave.__version__},
    }
    document = {"variable": variables, "group": {"default": {"targets": [r.variant.key for r in views]}},
                "target": targets}
    # Top-level order is fixed (the mark first); everything below it is sorted.
    body = ",\n".join(f"  {json.dumps(key)}: {_indented(value)}" for key, value in document.items())
    return "{\n" + body + "\n}\n"


def _indented(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return text.replace("\n", "\n  ")
