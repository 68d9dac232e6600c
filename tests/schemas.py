"""Strict validation against the published API schemas of OpenShift, Kubeflow Trainer and JobSet.

kubernetes-validate knows only Kubernetes' own kinds; for the others the
tests use the schemas their projects publish (tests/fixtures/schemas, see its
README). Like the API server's strict field validation, a field a schema does
not declare is an error (every object schema with ``properties`` gets
``additionalProperties: false`` unless it keeps unknown fields). ``null``
values are dropped first, as the API server drops them; a required field
given as an explicit ``null`` (the SCC's nullable ``priority``) still counts
as given. CEL rules (``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Iterator, List

import jsonschema

FIXTURES = Path(__file__).parent / "fixtures" / "schemas"
OPENSHIFT_KINDS = {
    ("build.openshift.io/v1", "BuildConfig"): "com.github.openshift.api.build.v1.BuildConfig",
    ("image.openshift.io/v1", "ImageStream"): "com.github.openshift.api.image.v1.ImageStream",
    ("security.openshift.io/v1", "SecurityContextConstraints"): "com.github.openshift.api.security.v1.SecurityContextConstraints",
}
CRD_KINDS = {("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainjob.json",
             ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.json"}


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def without_nulls(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: without_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [without_nulls(v) for v in obj]
    return obj


@functools.lru_cache(maxsize=None)
def validator(api_version: str, kind: str) -> jsonschema.Draft4Validator:
    key = (api_version, kind)
    if key in OPENSHIFT_KINDS:
        definitions = _strict(json.loads((FIXTURES / "openshift-api.json").read_text())["definitions"])
        schema = {"$ref": f"#/definitions/{OPENSHIFT_KINDS[key]}", "definitions": definitions}
    elif key in CRD_KINDS:
        schema = _strict(json.loads((FIXTURES / CRD_KINDS[key]).read_text()))
    else:
        raise KeyError(f"no published schema here for {api_version} {kind}")
    return jsonschema.Draft4Validator(schema)


def has_schema(obj: dict) -> bool:
    key = (obj.get("apiVersion"), obj.get("kind"))
    return key in OPENSHIFT_KINDS or key in CRD_KINDS


def _given_as_null(obj: Any, error: jsonschema.ValidationError) -> bool:
    if error.validator != "required":
        return False
    node = obj
    for part in error.absolute_path:
        node = node[part]
    missing = next((name for name in error.validator_value if error.message == f"{name!r} is a required property"), None)
    return missing is not None and missing in node and node[missing] is None


def errors(obj: dict) -> List[str]:
    """Every schema error of ``obj`` as ``path: message``; empty when it validates."""
    found: Iterator = validator(obj["apiVersion"], obj["kind"]).iter_errors(without_nulls(copy.deepcopy(obj)))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in found if not _given_as_null(obj, e)]
