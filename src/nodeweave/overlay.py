"""What ``nodeweave up`` and ``down`` apply over the rendered files: each target's overlay, as pure renderers.

Why here, above the renderers (it composes compose/ and kubernetes/, and a target never imports
another) and below the backends: the overlay was assembled inside each backend, mixed with what the
backend asks the platform, so nothing said which of its bytes came from the spec and which from
the machine. Each function below takes the spec and the options that decide the overlay (the
mode, the namespace, the job's mark as plain labels) and returns files as ``{path: text}``: the
same inputs give the same bytes, and nothing is read or run (no engine, kubectl, ssh, no file).
The backend's ``plan_up`` / ``plan_down`` hands what they return to a ``FilesPhase`` (the local
compose file, the kustomize tree) or to the steps that send it (a host's compose file, on stdin).

- :func:`local_compose`: ``compose/local.yaml`` with host paths absolute (from the spec's folder),
  this folder's compose project and every service labelled with the job's mark;
- :func:`host_files`: ``compose/node.yaml`` (marked the same way) and ``compose/hosts`` for every host;
- :func:`kube_tree`: the spec's kustomize tree plus the ``manifests/nodeweave-up`` overlay (namespace,
  mark annotations, ``NODEWEAVE_MODE``, the job token's Secret, a kept claim, a pinned image; on ``down``
  only the objects labelled as the job's).
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import Dict, List, Mapping, Optional, Tuple

import yaml

from nodeweave.entrypoint.planning.exchange_plan import TOKEN_FILE_VARIABLE, TOKEN_MOUNT
from nodeweave.spec import Spec
from nodeweave.errors import UsageError
from nodeweave.yamltext import dump_yaml

LOCAL_COMPOSE = "compose/local.yaml"  # the rendered file the local overlay is made like
KUBE_OVERLAY = "manifests/nodeweave-up"  # the overlay's folder inside the kept tree
TOKEN_KEY = TOKEN_MOUNT.rpartition("/")[2]  # the token Secret's one key: the file name in the mounted folder
TOKEN_DIR = TOKEN_MOUNT.rpartition("/")[0]  # Kubernetes mounts the Secret's folder here
# libyaml's safe loader where PyYAML has it (the same data as yaml.safe_load): the local compose file of a
# 2048-node job is 2.2 MB, which the pure-Python loader took most of `up --dry-run`'s 14 s to read back
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
JOB_LABEL = "app.kubernetes.io/instance"  # every object the spec renders for the job carries it (the job's name)


def token_secret_name(job: str) -> str:
    """The Kubernetes token Secret's name before kustomize's content hash is appended."""
    return f"{job}-job-token"


# --- compose ----------------------------------------------------------------------------------------------
def local_compose(spec: Spec, spec_dir: str, project: Optional[str] = None,
                  labels: Optional[Mapping[str, str]] = None) -> str:
    """``compose/local.yaml`` as ``render`` makes it, every relative host path made absolute from ``spec_dir`` (an
    absolute folder: the file means the same from the job's state folder as from compose/); with ``project``,
    that compose project and every service labelled with ``labels``."""
    from nodeweave.targets.compose import render_files

    def absolute(host_path):
        if host_path is None or host_path.startswith(("/", "~")):
            return yaml_path(host_path)
        return yaml_path(posixpath.normpath(posixpath.join(spec_dir, host_path)))

    rebased = replace(spec, workspace=replace(spec.workspace, host_path=absolute(spec.workspace.host_path)),
                      cache=replace(spec.cache, host_path=absolute(spec.cache.host_path)),
                      volumes=tuple(replace(v, host_path=absolute(v.host_path)) for v in spec.volumes))
    text = render_files(rebased)[LOCAL_COMPOSE]
    return text if project is None else marked_compose(text, project, labels or {})


def yaml_path(path: Optional[str]) -> Optional[str]:
    """``path`` for a compose file, or one line (exit 2) when it holds a byte that is not UTF-8: YAML is UTF-8 text,
    and an escape would reach docker compose as another path (walk7 A32)."""
    from nodeweave.usertext import is_utf8, shell_shown

    if path is not None and not is_utf8(path):
        raise UsageError(f"{shell_shown(path)} holds a byte that is not UTF-8 text, and the compose file that mounts "
                         "it is YAML, which holds only UTF-8: rename the folder (or give the volume a UTF-8 path)")
    return path


def host_files(spec: Spec, project: str, labels: Mapping[str, str]) -> Dict[str, str]:
    """What every host gets in ``<remote dir>/compose/``: ``node.yaml`` in this folder's project, its service
    labelled with ``labels``, and ``hosts`` when the spec lists hosts."""
    from nodeweave.targets.compose import render_files

    files = render_files(spec)
    sent = {"node.yaml": marked_compose(files["compose/node.yaml"], project, labels)}
    if "compose/hosts" in files:
        sent["hosts"] = files["compose/hosts"]
    return sent


def marked_compose(text: str, project: str, labels: Mapping[str, str]) -> str:
    """The compose file's project named ``project`` and every service labelled with ``labels``; its comments kept."""
    from nodeweave.yamltext import dump_yaml

    head = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    data = yaml.load(text, Loader=SAFE_LOADER)
    data["name"] = project
    for service in data.get("services", {}).values():
        service["labels"] = {**(service.get("labels") or {}), **labels}
    return head + dump_yaml(data, sort_keys=True)


# --- kustomize ----------------------------------------------------------------------------------------------
def kube_tree(spec: Spec, namespace: str, resource: str, annotations: Mapping[str, str],
              mode: Optional[str] = None, keep_claims: bool = False, pinned: Optional[Mapping[str, str]] = None
              ) -> Dict[str, str]:
    """The tree ``apply -k`` / ``delete -k`` reads, relative to its root: the spec's kustomize tree (sorted), then
    the overlay in :data:`KUBE_OVERLAY` over ``resource`` (a folder relative to the overlay): ``namespace``,
    ``annotations`` on every object, with ``mode`` the trainer's ``NODEWEAVE_MODE`` and the job token's Secret
    (generated from the file :func:`kube_token_file` names, which the caller makes), with ``keep_claims`` the
    shared workspace claim left out, with ``pinned`` kustomize's ``images`` entry.

    Without ``mode`` (``down``'s tree) every object not labelled :data:`JOB_LABEL` ``=<job>`` is left out: a
    team's own overlay may hold the Namespace (or an SCC, a ClusterRole) that ``up`` applied over what was
    already there, and ``delete -k`` of it would delete the namespace with every object in it (walk5, W71)."""
    from nodeweave.resolve import resolve
    from nodeweave.targets import kubernetes as manifests
    from nodeweave.targets.kubernetes.common import CONTAINER, workspace_claim

    files = dict(sorted(manifests.render_files(spec).items()))
    patches: List[Tuple[dict, dict]] = []  # (target, strategic-merge patch): by kind and name, in any namespace
    if mode is not None:
        patches.append(({"kind": "StatefulSet", "name": spec.name},
                        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": spec.name},
                         "spec": {"template": {"spec": {"containers": [
                             {"name": CONTAINER, "env": [{"name": "NODEWEAVE_MODE", "value": mode}]}]}}}}))
    if keep_claims and spec.kubernetes.claim == "shared":
        claim = workspace_claim(resolve(spec))
        patches.append(({"kind": "PersistentVolumeClaim", "name": claim},
                        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
                         "$patch": "delete"}))
    if mode is None:  # down: only the job's own objects; a Namespace or an SCC an overlay of yours holds stays
        patches.append(({"labelSelector": f"{JOB_LABEL}!={spec.name}"},
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "not-the-jobs"},
                         "$patch": "delete"}))
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "namespace": namespace, "commonAnnotations": dict(annotations), "resources": [resource]}
    if kube_makes_token(spec, mode):
        kustomization["secretGenerator"] = [token_secret(spec)]
        patches.append(({"kind": "StatefulSet", "name": spec.name}, token_patch(spec)))
    if pinned:
        kustomization["images"] = [dict(pinned)]
    kustomization["patches"] = [{"path": f"patch-{i}.yaml", "target": target} for i, (target, _) in enumerate(patches)]
    for i, (_, patch) in enumerate(patches):
        files[f"{KUBE_OVERLAY}/patch-{i}.yaml"] = dump_yaml(patch, sort_keys=False)
    # kustomize reads YAML 1.2: an owner id such as 8e123456 written bare is a number there (walk5's targets
    # test met it once in a full run); the renderers' dumper quotes every such string
    files[f"{KUBE_OVERLAY}/kustomization.yaml"] = dump_yaml(kustomization, sort_keys=False)
    return files


def kube_makes_token(spec: Spec, mode: Optional[str]) -> bool:
    """Whether the overlay generates the job token's Secret: on ``up`` (a mode), unless the spec names its own file."""
    return mode is not None and TOKEN_FILE_VARIABLE not in spec.env


def kube_token_file() -> str:
    """The token file the overlay's Secret is generated from, relative to the tree's root: the caller makes it
    (0600, a fresh secret), never a renderer."""
    return f"{KUBE_OVERLAY}/{TOKEN_KEY}"


def token_secret(spec: Spec) -> dict:
    """A kustomize secretGenerator entry: this up's random token, from a 0600 file in the overlay folder."""
    from nodeweave.resolve import resolve
    from nodeweave.targets.kubernetes.common import labels

    return {"name": token_secret_name(spec.name), "files": [TOKEN_KEY],
            "options": {"labels": labels(resolve(spec), "job-token")}}


def token_patch(spec: Spec) -> dict:
    """The trainer container reads the token Secret (kustomize renames the reference with the Secret)."""
    from nodeweave.targets.kubernetes.common import CONTAINER

    volume = "job-token"
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": spec.name}, "spec": {"template": {
        "spec": {"volumes": [{"name": volume, "secret": {"secretName": token_secret_name(spec.name),
                                                          "defaultMode": 0o440}}],
                 "containers": [{"name": CONTAINER,
                                 "env": [{"name": TOKEN_FILE_VARIABLE, "value": TOKEN_MOUNT}],
                                 "volumeMounts": [{"name": volume, "mountPath": TOKEN_DIR,
                                                   "readOnly": True}]}]}}}}
