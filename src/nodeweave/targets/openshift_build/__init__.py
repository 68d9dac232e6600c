"""OpenShift builds: the image built on the cluster, and the workloads following its ImageStream tag.

``render_files(spec)`` writes, beside the ``manifests/`` tree it builds on:

- ``openshift/build/``: an ImageStream (``lookupPolicy.local``, so pods in the
  namespace can name ``<name>:<tag>``) and a BuildConfig with the Docker
  strategy on the rendered ``images/<variant>/Dockerfile``, from a binary
  upload (``oc start-build <name> --from-dir=DIR``) or a git repository;
- ``openshift/deploy/``: the ``openshift`` overlay of the StatefulSet, its image
  pointed at the ImageStream tag and annotated with ``image.openshift.io/triggers``,
  so each finished build rolls the pods onto the new image;
- ``openshift/job/``: the same for the Indexed Job.

Pure and byte-stable; a test builds every folder with ``kubectl kustomize``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from nodeweave.targets.kubernetes import common
from nodeweave.targets.kubernetes.kustomize import kustomization
from nodeweave.targets.kubernetes.yamltext import dump as dump_yaml
from nodeweave.resolve import Resolved, resolve
from nodeweave.spec import OpenShiftBuild, Spec

BUILD = "openshift/build"
DEPLOY = "openshift/deploy"
JOB = "openshift/job"
TRIGGERS_ANNOTATION = "image.openshift.io/triggers"
BUILD_NOTE = (
    "Build on the cluster: `nodeweave image build -t openshift` (uploads only what the Dockerfile reads),\n"
    "or oc apply -k openshift/build, then from the directory that holds nodeweave.yaml\n"
    "(the build context: images/, entrypoint/, wheelhouse/ ...):\n"
    "  oc start-build {name} --from-dir=. --follow --wait        (binary source)\n"
    "The deploy overlays follow the ImageStream tag {tag}."
)


def dump(doc: Any, comment: str = "") -> str:
    return dump_yaml(doc, comment, target="openshift-build")


def imagestream_tag(r: Resolved) -> str:
    return f"{r.spec.name}:{r.tag}"


# The cluster's own registry, where the BuildConfig's ImageStreamTag lands: <registry>/<namespace>/<name>:<tag>.
CLUSTER_REGISTRY = "image-registry.openshift-image-registry.svc:5000"


def cluster_registry(namespace: str) -> str:
    """The ``image.registry`` whose image the pods pull is the one this namespace's BuildConfig builds."""
    return f"{CLUSTER_REGISTRY}/{namespace}"


def unused_build_note(r: Resolved) -> Optional[str]:
    """One sentence when the cluster build lands where this spec's pods do not pull from (walk6 W77), or None."""
    wanted = cluster_registry(r.spec.kubernetes.namespace)
    if r.spec.image.registry == wanted:
        return None
    return (f"the build lands in the cluster's registry as {wanted}/{imagestream_tag(r)}, but this spec's pods "
            f"pull {r.image}, so `nodeweave up -t openshift` would not run it: set image.registry: {wanted}")


def imagestream(r: Resolved) -> Dict[str, Any]:
    return {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream",
            "metadata": common.metadata(r, r.spec.name, "image"),
            "spec": {"lookupPolicy": {"local": True}}}  # fmt: skip


def buildconfig(r: Resolved) -> Dict[str, Any]:
    build = r.spec.kubernetes.build or OpenShiftBuild()
    if build.source == "git":
        git: Dict[str, str] = {"uri": build.git}
        if build.ref:
            git["ref"] = build.ref
        source: Dict[str, Any] = {"type": "Git", "git": git}
    else:
        source = {"type": "Binary", "binary": {}}
    body: Dict[str, Any] = {
        "runPolicy": "Serial",
        "source": source,
        "strategy": {"type": "Docker", "dockerStrategy": {"dockerfilePath": f"images/{r.variant.key}/Dockerfile"}},
        "output": {"to": {"kind": "ImageStreamTag", "name": imagestream_tag(r)}},
    }
    if build.source == "git":
        body["triggers"] = [{"type": "ConfigChange"}]
    return {"apiVersion": "build.openshift.io/v1", "kind": "BuildConfig",
            "metadata": common.metadata(r, r.spec.name, "image"), "spec": body}  # fmt: skip


def trigger_patch(r: Resolved, kind: str, api_version: str) -> Dict[str, Any]:
    """Strategic-merge patch: the workload follows the ImageStream tag (OpenShift's image trigger)."""
    trigger = [{"from": {"kind": "ImageStreamTag", "name": imagestream_tag(r)},
                "fieldPath": f'spec.template.spec.containers[?(@.name=="{common.CONTAINER}")].image'}]
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": r.spec.name, "annotations": {TRIGGERS_ANNOTATION: json.dumps(trigger)}}}


NEEDS_NOTE = ("Builds on {resources}, which `nodeweave render manifests` writes: render it into the same folder "
              "(or `nodeweave render all`).")


def _overlay(r: Resolved, resources: List[str], patch_name: str, kind: str, group: str, version: str) -> Dict[str, str]:
    api_version = f"{group}/{version}"
    entry = {"path": patch_name, "target": {"group": group, "version": version, "kind": kind, "name": r.spec.name}}
    images = [{"name": r.repository, "newName": r.spec.name, "newTag": r.tag}]
    return {
        patch_name: dump(trigger_patch(r, kind, api_version)),
        "kustomization.yaml": dump(kustomization(r, resources, [entry], images),
                                   NEEDS_NOTE.format(resources=", ".join(resources))),
    }


def render_files(spec: Spec) -> Dict[str, str]:
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    note = BUILD_NOTE.format(name=spec.name, tag=imagestream_tag(r))
    files = {
        f"{BUILD}/imagestream.yaml": dump(imagestream(r)),
        f"{BUILD}/buildconfig.yaml": dump(buildconfig(r), note),
        f"{BUILD}/kustomization.yaml": dump(kustomization(r, ["imagestream.yaml", "buildconfig.yaml"])),
    }
    deploy = _overlay(r, ["../../manifests/overlays/openshift"], "statefulset-trigger.yaml", "StatefulSet", "apps", "v1")
    job = _overlay(r, ["../../manifests/job"], "job-trigger.yaml", "Job", "batch", "v1")
    files.update({f"{DEPLOY}/{name}": text for name, text in deploy.items()})
    files.update({f"{JOB}/{name}": text for name, text in job.items()})
    return dict(sorted(files.items()))
