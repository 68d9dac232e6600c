"""Render ``images/docker-bake.json``: one ``docker buildx bake`` target per variant.

JSON rather than HCL because ``json.dumps`` quotes any value correctly; bake
still treats ``${...}`` in JSON strings as templates, so spec values are
passed through :func:`bake_literal` and only the variables declared here
(``REVISION``, ``VERSION``, ``SOURCE``) interpolate.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import nodeweave
from nodeweave.images.catalogue import Variant
from nodeweave.images.dockerfile import looks_secret
from nodeweave.images.quoting import bake_literal


def _tags(variant: Variant, spec: Any) -> list:
    repository = bake_literal(f"{spec.image.registry}/{spec.name}")
    moving = f"{repository}:{variant.key}"
    if variant.key == spec.image.variant and spec.image.tag:
        return [moving, f"{repository}:{bake_literal(spec.image.tag)}"]
    return [moving, f"{repository}:{variant.key}-${{REVISION}}"]


def render_bake(variants: Mapping[str, Variant], spec: Any) -> str:
    """Bake file text building every variant from the repository root."""
    # A secret-looking value stays out of this committed file, as it does out of the Dockerfile.
    user_args = {name: bake_literal(value) for name, value in spec.image.build_args.items() if not looks_secret(name)}
    targets = {}
    for key, variant in variants.items():
        args = dict(user_args)
        args.update({"REVISION": "${REVISION}", "SOURCE": "${SOURCE}", "VERSION": "${VERSION}"})
        targets[key] = {
            "args": args,
            "context": ".",
            "dockerfile": f"images/{key}/Dockerfile",
            "labels": {"io.nodeweave.variant": key},
            "tags": _tags(variant, spec),
        }
    document = {
        "group": {"default": {"targets": list(variants)}},
        "target": targets,
        "variable": {
            "REVISION": {"default": "unknown"},
            "SOURCE": {"default": "unknown"},
            "VERSION": {"default": nodeweave.__version__},
        },
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
