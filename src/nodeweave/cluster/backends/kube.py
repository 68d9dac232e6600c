"""Kubernetes and OpenShift: ``kubectl``/``oc apply -k`` of the rendered tree, pods reached with exec.

``up`` renders the spec's kustomize tree into ``.nodeweave/<job>/kube/`` beside
the spec (kept: the dry run's ``apply -k`` line can be inspected and rerun) and applies a
small overlay of it (``manifests/nodeweave-up``): the chosen folder (``base``
or an overlay), the namespace, and a strategic-merge patch setting
``NODEWEAVE_MODE`` on the trainer container, so ``--hold`` works for any
spec. ``down`` deletes the job's objects of the same tree (``delete -k``; only
those labelled as the job's, never a Namespace an overlay holds) except the workspace
claim, which holds the synced code and checkpoints, unless
``--delete-claims``; per-pod claims of ``volumeClaimTemplates`` stay too (the
StatefulSet controller never deletes them) unless asked. Pod state for the
readiness display comes from one ``get pods -o json``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import yaml

from nodeweave.cluster.base import Backend, Node, NodeState, PlatformState
from nodeweave.steps import Step
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.remote import RemoteOptions, cluster_kind, kind_class
from nodeweave.remote.discover import statefulset_replicas, statefulset_targets
from nodeweave.overlay import JOB_LABEL, KUBE_OVERLAY as OVERLAY

KEPT_TREE = "kube"  # in the job's folder: .nodeweave/<job>/kube
FOLDERS = {"base": "../base", "openshift": "../overlays/openshift", "rocm": "../overlays/rocm"}
# Waiting reasons a pod does not leave by itself.
STUCK = ("CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
         "CreateContainerError", "RunContainerError", "Failed", "Error")


def pod_state(pod: dict) -> PlatformState:
    """``Running, ready``, ``Pending: Unschedulable (...)``, ``Pending: ImagePullBackOff``, ``Failed``..., as a
    :class:`NodeState` with that word."""
    word = pod_word(pod)
    if any(stuck in word for stuck in STUCK):
        return PlatformState(NodeState.STUCK, word)
    if word.startswith(("Pending", "ContainerCreating")):
        return PlatformState(NodeState.STARTING, word)
    return PlatformState(NodeState.RUNNING if word.startswith("Running") else NodeState.UNKNOWN, word)


def pod_word(pod: dict) -> str:
    """The pod's phase and why, as ``status`` shows it."""
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") not in (None, "ContainerCreating", "PodInitializing"):
            return f"{phase}: {waiting['reason']}"
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and phase == "Running":
            return f"Running: container exited {terminated.get('exitCode')}"
    scheduled = conditions.get("PodScheduled") or {}
    if phase == "Pending" and scheduled.get("status") == "False":
        return f"Pending: {scheduled.get('reason', 'not scheduled')} ({(scheduled.get('message') or '')[:120]})"
    if phase == "Running":
        return "Running, ready" if (conditions.get("Ready") or {}).get("status") == "True" else "Running"
    return phase


@dataclass(frozen=True)
class Applied:
    """One object ``apply -k`` applies: its kind, name, namespace (None: cluster-scoped, as kustomize leaves it),
    and whether it is the job token Secret (its name ends in a hash of a token made only when up writes it)."""

    kind: str
    name: str
    namespace: Optional[str]
    token: bool = False
    jobs: bool = True  # labelled as the job's (JOB_LABEL): what down deletes; the rest it keeps

    @classmethod
    def of(cls, doc: dict, job: str) -> "Applied":
        meta = doc.get("metadata") or {}
        labels = meta.get("labels") or {}
        return cls(str(doc.get("kind", "?")), str(meta.get("name", "?")), meta.get("namespace"),
                   doc.get("kind") == "Secret" and labels.get("app.kubernetes.io/component") == "job-token",
                   labels.get(JOB_LABEL) == job)

    @property
    def named(self) -> str:
        return f"the {self.kind} {self.name}" + (" (cluster-scoped)" if self.namespace is None else "")


def _by_kind(applied: List[Applied]) -> List[str]:
    """``StatefulSet team``, ``Service team, team-headless``, ``a new job token Secret``: one entry per kind, in the
    order kustomize printed them."""
    kinds: Dict[str, List[str]] = {}
    token = False
    for one in applied:
        if one.token:
            token = True
            continue
        kinds.setdefault(one.kind, []).append(one.name)
    return [f"{kind} {', '.join(names)}" for kind, names in kinds.items()] + (["a new job token Secret"] if token
                                                                             else [])


class KubeCluster(Backend):
    target = "kubernetes"
    fixed_image = "the image comes from the spec (image.registry, image.tag) or an overlay of your own"

    def __init__(self, spec, spec_path, options):
        super().__init__(spec, spec_path, options)
        self.cli = options.kube_cli or cluster_kind(spec.kubernetes.openshift)
        self.namespace = options.namespace or spec.kubernetes.namespace
        self.remote = RemoteOptions(kube_context=options.kube_context)
        self.folder = options.overlay or "base"
        if self.folder == "openshift" and spec.kubernetes.openshift:
            # kubernetes.openshift: true renders base for OpenShift already (no fixed runAsUser, the same security
            # context the overlay patches in), so -t openshift or --overlay openshift applies base as rendered
            self.folder = "base"
        self.scaled_down = False
        self.tool = self.cli
        self.recorded = {"namespace": self.namespace}

    def _call(self, verb: str, *args: str) -> List[str]:
        return [*kind_class(self.cli).cli_argv(verb, self.remote, self.namespace), *args]

    def nodes(self, for_up: bool = False, dry_run: bool = False) -> List[Node]:
        """A dry run reads the live count (a read changes nothing); with no cluster to ask, the spec's."""
        from nodeweave.targets.kubernetes.common import CONTAINER

        if for_up:
            count = self._up_replicas()
        elif dry_run:
            try:
                count = self._replicas()
            except NodeweaveError:
                count = self.spec.containers
        else:
            count = self._replicas()
        self.scaled_down = count == 0
        self.dormant = None
        if self.scaled_down:  # dormant: the StatefulSet and its claims stay, no pod runs
            self.dormant = (f"is scaled to zero: StatefulSet/{self.spec.name} in {self.cli} namespace {self.namespace} "
                            "has 0 replicas, so no pod",
                            f"`{self.cli} scale statefulset/{self.spec.name} -n {self.namespace} --replicas "
                            f"{self.spec.containers}` brings them back")
            return []
        pods = statefulset_targets(self.spec.name, count, kind=self.cli, namespace=self.namespace,
                                   container=CONTAINER, options=self.remote)
        return [self._node(i, pod) for i, pod in enumerate(pods)]

    def _replicas(self) -> int:
        """The live ``.spec.replicas``: after ``oc scale`` every verb uses every pod."""
        return statefulset_replicas(self.spec.name, kind=self.cli, namespace=self.namespace, options=self.remote)

    def _up_replicas(self) -> int:
        """The pods up waits for: the spec's count, or what an overlay of the team's own sets (its own build,
        here: the nodeweave-up overlay over it adds a namespace, a variable and the token, never replicas)."""
        if self.folder in FOLDERS:
            return self.spec.containers  # the rendered replicas (with recovery: every slot and the spares)
        try:
            out = subprocess.run([self.cli, "kustomize", str(self.spec_dir / self.folder)], capture_output=True,
                                 text=True, timeout=120)
            docs = list(yaml.safe_load_all(out.stdout)) if out.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, yaml.YAMLError):
            docs = []
        counts = [d["spec"].get("replicas", 1) for d in docs if d and d.get("kind") == "StatefulSet"
                  and d.get("metadata", {}).get("name") == self.spec.name]
        return counts[0] if counts else self.spec.containers

    def reach_problem(self) -> Optional[str]:
        """kubectl's "cannot reach a Kubernetes cluster" (walk2, row W3): the dry run said nothing of it."""
        from nodeweave.errors import EnvironmentProblem

        try:
            self._replicas()
        except EnvironmentProblem as err:
            return str(err)
        except NodeweaveError:
            return None  # it answered (no such StatefulSet yet, ...)
        return None

    def nothing_up_line(self) -> Optional[str]:
        """Only when kubectl answers that the namespace holds neither the job's StatefulSet nor a claim of it (walk2,
        row W5): a down with no up planned 23 files and a delete; no answer, or an error, leaves down as planned."""
        found = []
        for words in (("get", "statefulset", self.spec.name, "--ignore-not-found", "-o", "name"),
                      ("get", "pvc", "-l", f"app.kubernetes.io/instance={self.spec.name}", "-o", "name")):
            try:
                out = subprocess.run(self._call(*words), capture_output=True, text=True, timeout=60,
                                     stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired):
                return None
            if out.returncode != 0:
                return None
            found += out.stdout.split()
        if found:
            return None
        return (f"{self.spec.name} is not up on {self.where}: no StatefulSet {self.spec.name} and no claim of the "
                "job in the namespace; nothing to take down")

    def sync_targets(self):
        from nodeweave.cluster.onbackend import live_nodes

        return [node.remote for node in live_nodes(self, "sync")], self.spec.workspace.path

    def _tree(self, mode: Optional[str], keep_claims: bool) -> List["PlannedFile"]:
        """The kept tree as files to write under :meth:`tree_path`: what the pure renderer makes of the spec and
        this up's options (``overlay.kube_tree``), and on ``up`` a fresh token (made when written)."""
        from nodeweave.plan import PlannedFile
        from nodeweave.overlay import kube_makes_token, kube_token_file

        tree = self._tree_path()
        shown = os.path.relpath(tree, self.spec_dir)
        rendered = self._rendered_tree(tree, mode, keep_claims)
        planned = [PlannedFile(f"{shown}/{rel}", "the spec's kustomize tree", text.encode("utf-8"))
                   for rel, text in rendered.items() if not rel.startswith(OVERLAY + "/")]
        if kube_makes_token(self.spec, mode):
            planned.append(PlannedFile(f"{shown}/{kube_token_file()}", "a new random job token (0600), "
                                       "the job token Secret's content", mode=0o600))
        return planned + [PlannedFile(f"{shown}/{rel}", "the nodeweave-up overlay", text.encode("utf-8"))
                          for rel, text in rendered.items() if rel.startswith(OVERLAY + "/")]

    def _rendered_tree(self, tree: Path, mode: Optional[str], keep_claims: bool) -> Dict[str, str]:
        """The tree's files ``{relative path: text}`` (``overlay.kube_tree``) as they read from ``tree``: the
        overlay names the applied folder relative to where it sits."""
        from nodeweave.overlay import kube_tree

        return kube_tree(self.spec, self.namespace, self._resource(tree / OVERLAY), self.mark.annotations(),
                         mode=mode, keep_claims=keep_claims, pinned=self._pushed_digest())

    def _applied(self, mode: str) -> Optional[List["Applied"]]:
        """What ``apply -k`` of up's tree applies, built by the real kustomize (``kubectl kustomize``) from a copy
        of the tree in a temporary folder (a dry run writes nothing beside the spec), so the plan names every object,
        a Namespace or a ClusterRole of a team's own overlay too (replay N2). None where this machine has no
        kubectl (its dry run says so); exit 2 when kustomize refuses the tree, as ``apply -k`` would."""
        import shutil
        import tempfile

        from nodeweave.failures import tool_message
        from nodeweave.overlay import kube_makes_token, kube_token_file

        if shutil.which(self.cli) is None:
            return None
        with tempfile.TemporaryDirectory(prefix="nodeweave-kustomize-") as folder:
            tree = Path(folder)
            files = self._rendered_tree(tree, mode, keep_claims=False)
            if kube_makes_token(self.spec, mode):
                files[kube_token_file()] = "a token is made when up writes the tree\n"
            for rel, text in files.items():
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_text(text)
            try:
                out = subprocess.run([self.cli, "kustomize", str(tree / OVERLAY)], capture_output=True, text=True,
                                     timeout=120, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise NodeweaveError(f"{self.cli} kustomize of the tree up applies gave no answer: {err}") from None
        if out.returncode != 0:  # kustomize nests its errors: the innermost, what to fix, comes last
            said = tool_message(out.stderr or out.stdout, limit=10_000)
            said = said if len(said) <= 300 else "..." + said[-297:]
            raise UsageError(f"--overlay {self.folder}: `{self.cli} kustomize` refuses the tree up would apply: "
                             f"{said}; fix the kustomization (`{self.cli} kustomize {self.folder}` shows it)")
        try:
            docs = [doc for doc in yaml.safe_load_all(out.stdout) if isinstance(doc, dict)]
        except yaml.YAMLError as err:
            raise NodeweaveError(f"{self.cli} kustomize printed no YAML: {err}") from None
        return [Applied.of(doc, self.spec.name) for doc in docs]

    def judge_tree(self) -> None:
        """A team's own overlay that kustomize refuses: exit 2 before kubectl is asked for the cluster (the rendered
        folders are nodeweave's: they build). A folder that holds no kustomization is refused first, by the same
        words whatever this machine has: without kubectl the real up and down said "kubectl is not on PATH" (exit
        3) where their dry runs refused the folder (walk10 A10)."""
        if self.folder not in FOLDERS:
            self._resource(self._tree_path() / OVERLAY)
            self._applied("hold")

    def _apply_what(self, mode: str) -> str:
        """The apply step's words: every object of the built tree by kind and name, in the namespace, then each
        cluster-scoped one (kustomize left it without a namespace) named as such."""
        applied = self._applied(mode)
        if applied is None:  # no kubectl here: the rendered folders' objects, in words
            return (f"apply the StatefulSet, Service, RBAC, claim and a new job token Secret ({self.folder}) to "
                    f"{self.namespace}")
        inside = [a for a in applied if a.namespace is not None]
        outside = [a for a in applied if a.namespace is None]
        namespaces = sorted({a.namespace for a in inside} - {self.namespace})
        words = f"apply ({self.folder}) to {self.namespace}: " + "; ".join(_by_kind(inside))
        for other in namespaces:
            words += f"; in namespace {other}: " + ", ".join(
                a.kind + " " + a.name for a in inside if a.namespace == other)
        if outside:
            words += "; and " + ", ".join(a.named for a in outside)
        return words

    def _pushed_digest(self) -> Optional[dict]:
        """kustomize's ``images`` entry naming the image by the digest ``image build --push`` recorded, or None.

        Only where the spec pins nothing itself (``image.digest``), and only for the repository and tag the
        pods name: a node that cached an older build of a moving tag then cannot run it.
        """
        from nodeweave.build.pushed import recorded_digest
        from nodeweave.resolve import resolve

        if self.spec.image.digest or self.folder == "rocm":  # the rocm overlay names another variant's tag
            return None
        image = resolve(self.spec)
        digest = recorded_digest(self.spec_dir, image.repository, image.tag)
        return {"name": image.repository, "digest": digest} if digest else None

    def _resource(self, overlay: Path) -> str:
        """The folder applied: a rendered one, or the team's own kustomization beside the spec (over the render)."""
        if self.folder in FOLDERS:
            return FOLDERS[self.folder]
        mine = self.spec_dir / self.folder
        if not (mine / "kustomization.yaml").is_file():
            raise UsageError(f"--overlay {self.folder!r} is not accepted: {mine} holds no kustomization.yaml; give "
                             f"{', '.join(FOLDERS)} or a kustomize folder of your own beside the spec")
        return os.path.relpath(mine, overlay)

    def _tree_path(self) -> Path:
        """Where the applied tree is kept (to inspect, or to apply by hand): beside the spec, per job."""
        from nodeweave.jobstate import JobState

        return JobState(self.spec_dir, self.spec.name).kept(KEPT_TREE)

    def _up_files(self, mode: str) -> List["PlannedFile"]:
        """The tree ``apply -k`` reads, kept under ``.nodeweave/<job>/kube`` (files of an older render that
        the new kustomizations do not name are never read)."""
        return self._tree(mode, keep_claims=False)

    def _up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        overlay = self._tree_path() / OVERLAY  # where _up_files puts the overlay
        # The last up's token Secret goes first: the pods roll onto this up's, whose name differs.
        checks = self._check_needed_steps()
        return [*([checks] if checks else []), [self._delete_tokens_step()],
                [Step(self._apply_what(mode), tuple(self._call("apply", "-k", str(overlay))), timeout=300)]]

    def _down_files(self, delete_claims: bool) -> List["PlannedFile"]:
        """The tree ``delete -k`` reads: the spec's, the claim kept out of it unless ``--delete-claims``."""
        return self._tree(None, keep_claims=not delete_claims)

    def _down_steps(self, delete_claims: bool) -> List[List[Step]]:
        overlay = self._tree_path() / OVERLAY  # where _down_files puts the overlay
        kept = [*self._kept_by_down(), *([] if delete_claims else ["the workspace claim"])]
        steps = [Step(f"delete the job's objects up applied (those labelled {JOB_LABEL}={self.spec.name})"
                      + (f"; kept: {', '.join(kept)}" if kept else ""),
                      tuple(self._call("delete", "-k", str(overlay), "--ignore-not-found")), timeout=600),
                 self._delete_tokens_step()]
        if delete_claims:
            selector = f"app.kubernetes.io/instance={self.spec.name}"
            steps.append(Step("delete every claim of the job (shared and per-pod)",
                              tuple(self._call("delete", "pvc", "-l", selector, "--ignore-not-found")), timeout=600))
        return [[step] for step in steps]

    def _kept_by_down(self) -> List[str]:
        """What up applies that down keeps (not labelled as the job's: a Namespace, a ClusterRole of a team's own
        overlay), each named from the tree kustomize builds; where it cannot be built here (no kubectl), the kinds it
        may be. A tree kustomize refuses is exit 2, as for up: ``delete -k`` of it would fail the same way."""
        applied = self._applied("hold")
        if applied is None:
            return [f"every other object of {self.folder} (a Namespace, an SCC, a ClusterRole, ...)"]
        return [one.named for one in applied if not one.jobs]

    def _delete_tokens_step(self) -> Step:
        """Every job-token Secret an up made (each up's has its own name: the content hash)."""
        selector = f"app.kubernetes.io/instance={self.spec.name},app.kubernetes.io/component=job-token"
        return Step("delete the job's token Secrets", tuple(self._call("delete", "secret", "-l", selector,
                                                                       "--ignore-not-found")), timeout=300)

    marked_kind = "the job's"  # marks() names each object's kind: "the job's StatefulSet ...", "the job's claim ..."
    reach_variables = ("KUBECONFIG",)  # which cluster (and, through its context, which namespace) kubectl reaches

    def marks(self):
        """The marks (annotations) of the StatefulSet and of the job's claims, read with two gets; nothing for
        what is not there or does not answer. The claims count too: another folder's `down` keeps its claim, and
        this folder's `up` would apply over it (its pods mounting that folder's data) or its `down
        --delete-claims` delete it, both by the job's name alone."""
        from nodeweave.cluster.identity import mark_of

        found = {}
        sts = self._get_json("get", "statefulset", self.spec.name, "--ignore-not-found", "-o", "json")
        if isinstance(sts, dict) and sts.get("metadata"):
            annotations = sts["metadata"].get("annotations") or {}
            found[f"StatefulSet {self.spec.name} in namespace {self.namespace}"] = mark_of(annotations, kube=True)
        claims = self._get_json("get", "pvc", "-l", f"app.kubernetes.io/instance={self.spec.name}", "-o", "json")
        for item in (claims.get("items") or []) if isinstance(claims, dict) else []:
            meta = (item.get("metadata") or {}) if isinstance(item, dict) else {}
            if meta.get("name"):
                found[f"claim {meta['name']} in namespace {self.namespace}"] = \
                    mark_of(meta.get("annotations") or {}, kube=True)
        return found

    def _get_json(self, *words):
        """kubectl's JSON answer to ``words``, or None (no answer, an error, nothing found)."""
        try:
            out = subprocess.run(self._call(*words), capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL)
            return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None

    def _unread_variables(self) -> Dict[str, str]:
        return {"NODEWEAVE_IMAGE": "the pods run the image their manifests name (above)"}

    def _up_image(self, image: Optional[str]) -> Optional[str]:
        """The spec's image, pinned by the digest `image build --push` recorded; the rocm overlay's variant's
        (an overlay of your own may set another: its note says so)."""
        from nodeweave.resolve import resolve

        if self.folder == "rocm":
            from nodeweave.targets.kubernetes.kustomize import rocm_images

            for rocm in rocm_images(resolve(self.spec)):  # none when the spec's own variant is already ROCm's
                return f"{rocm['name']}:{rocm['newTag']}"
        pinned = self._pushed_digest()
        return f"{pinned['name']}@{pinned['digest']}" if pinned else resolve(self.spec).image

    def _up_notes(self, image: Optional[str]) -> List[str]:
        """The image every pod runs (the spec's, pinned by the digest `image build --push` recorded)."""
        from nodeweave.cluster.environment import SPEC_IMAGE

        pinned = self._pushed_digest()
        ref = self._up_image(image)
        why = "the digest `image build --push` recorded" if pinned else SPEC_IMAGE
        if self.folder not in FOLDERS:
            why += f", unless --overlay {self.folder} sets another"
        line = f"every pod runs image {ref}: {why}" if self.folder != "rocm" else self._rocm_line()
        return [line, *self._openshift_lines(), *self._prerequisite_lines(), *super()._up_notes(image)]

    def _openshift_lines(self) -> List[str]:
        """On OpenShift, why it applies the folder it does (walk5, W19) and the image the cluster builds."""
        from nodeweave.resolve import resolve
        from nodeweave.spec.loader import spec_flag

        if not (self.spec.kubernetes.openshift or self.cli == "oc" or self.folder == "openshift"):
            return []
        r = resolve(self.spec)
        lines = []
        if self.folder == "openshift" and not self.spec.kubernetes.openshift:
            lines.append("applies overlays/openshift (-t openshift picks it unless --overlay is given): base pins "
                         "runAsUser 1000, which OpenShift's restricted-v2 SCC refuses; the overlay leaves the UID to the "
                         "SCC (--overlay base applies base as rendered; kubernetes.openshift: true renders base for "
                         "OpenShift)")
        if self.folder == "base" and self.spec.kubernetes.openshift:
            lines.append("applies base: the spec says openshift: true, so base is rendered for OpenShift already (no "
                         "fixed runAsUser: the SCC assigns one), and the openshift overlay, which adapts a plain Kubernetes render, "
                         "would change nothing")
        if self.spec.kubernetes.build:
            lines.append(f"needs the image first: {r.image} is built on the cluster, by `nodeweave image build "
                         f"{self.spec.image.variant} -t openshift{spec_flag(self.spec_path)}` (the BuildConfig of "
                         "`render openshift-build`); up applies the StatefulSet only, not openshift/deploy")
        return lines

    def _prerequisite_lines(self) -> List[str]:
        """Everything the pods reference that ``apply -k`` does not make, in one place (walk6, W10/W33/W37): the
        objects a volume or an attachment names (the real up checks them first), the SCC an admin grants, and how
        Prometheus scrapes node 0; each file named as the path up writes, which exists once up (or its dry run's
        paste) ran."""
        from nodeweave.cluster.pullable import machine_local
        from nodeweave.resolve import resolve
        from nodeweave.targets.kubernetes import BASE, OPENSHIFT
        from nodeweave.spec.loader import spec_flag
        from nodeweave.targets.kubernetes.kustomize import needs_scc, scc_file
        from nodeweave.targets.kubernetes.prerequisites import needed_objects

        r = resolve(self.spec)
        lines = []
        needed = needed_objects(r, self.namespace)
        if needed:
            lines.append(f"needs first (up applies none of them, and without them every pod waits in "
                         f"ContainerCreating or Pending): " + "; ".join(
                             f"{n.label} in {n.namespace}" for n in needed) + "; the real up checks they exist")
        if (self.spec.kubernetes.openshift or self.cli == "oc") and needs_scc(r):
            scc = self._shown(self._tree_path() / OPENSHIFT / scc_file(r))
            lines.append(f"needs an admin first: the pods need more than OpenShift's restricted-v2 SCC allows; a "
                         f"cluster admin applies {scc} once (`oc apply -f {scc}`, written by this up), else no pod "
                         "is admitted")
        pushed_elsewhere = self.spec.kubernetes.build or self.folder == "rocm" or machine_local(r.image)
        if not (pushed_elsewhere or self._pushed_digest()):  # the OpenShift build, the rocm note, pullable.py say
            lines.append(f"needs the image in its registry first: up builds and pushes nothing; `nodeweave image build "
                         f"{self.spec.image.variant} --push{spec_flag(self.spec_path)}` pushes {r.image} (and pins "
                         "it by digest for later ups)")
        if self.spec.metrics.enabled:
            monitor = self._shown(self._tree_path() / BASE / "podmonitor.yaml")
            line = (f"metrics: node 0 serves :{self.spec.metrics.port}/metrics; the PodMonitor is not applied (it "
                    f"needs the Prometheus Operator's CRD): `{self.cli} apply -n {self.namespace} -f {monitor}`")
            if self.spec.kubernetes.network_policy and not self.spec.kubernetes.ingress_from:
                line += (f"; the job's NetworkPolicy admits only its own pods, so a Prometheus outside "
                         f"{self.namespace} scrapes nothing until kubernetes.ingress_from names it")
            lines.append(line)
        return lines

    @staticmethod
    def _shown(path: Path) -> str:
        """``path`` as a person pastes it here: relative to this folder when under it, else absolute."""
        rel = os.path.relpath(path)
        return str(path) if rel.startswith("..") else rel

    def _check_needed_steps(self) -> List[Step]:
        """One ``get`` per namespace of the objects the pods need and up does not make: it fails, naming the missing
        one, before anything is applied (rather than pods waiting out the timeout)."""
        from nodeweave.resolve import resolve
        from nodeweave.targets.kubernetes.prerequisites import by_namespace, needed_objects

        steps = []
        for space, items in by_namespace(needed_objects(resolve(self.spec), self.namespace)):
            argv = [*kind_class(self.cli).cli_argv("get", self.remote, space), *(n.ref for n in items), "-o", "name"]
            steps.append(Step(f"check that {', '.join(f'{n.kind} {n.name}' for n in items)} exist in {space} "
                              "(the pods need them; up does not make them)", tuple(argv), timeout=120))
        return steps

    def grow_hint(self, count: int) -> str:
        return f"`{self.cli} scale statefulset/{self.spec.name} -n {self.namespace} --replicas {count}` first"

    def _rocm_line(self) -> str:
        """The rocm overlay runs its own variant's tag on AMD nodes, whatever the spec's variant: the image is named,
        and when the spec's variant is another, the build it needs (walk5, W17: nothing said a ROCm image of the job
        had to exist)."""
        from nodeweave.catalogue import VENDORS
        from nodeweave.resolve import resolve

        variant = VENDORS["amd"].default_variant
        rocm = resolve(self.spec, variant)
        line = f"every pod runs image {rocm.image}: the rocm overlay's own (variant {variant}, on amd.com/gpu nodes)"
        if self.spec.image.variant != variant:
            line += (f"; the spec's variant is {self.spec.image.variant}, so that image exists only after `nodeweave "
                     f"image build {variant} --push` (or set image.variant: {variant} and leave --overlay out)")
        return line

    def states(self, nodes: List[Node]) -> Dict[int, PlatformState]:
        argv = self._call("get", "pods", "-l", f"app.kubernetes.io/instance={self.spec.name}", "-o", "json")
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            items = json.loads(out.stdout).get("items", []) if out.returncode == 0 else None
        except (OSError, ValueError, subprocess.TimeoutExpired):
            items = None
        if items is None:  # no answer: unknown, the verb goes on as planned (a dry run says so)
            self.unanswered = f"`{self.cli} get pods` of the job gave no readable answer"
            return {}
        by_name = {(pod.get("metadata") or {}).get("name"): pod_state(pod) for pod in items}
        absent = PlatformState(NodeState.ABSENT, "missing (no pod yet)")
        return {node.index: by_name.get(node.remote.name, absent) for node in nodes}

    @property
    def where(self) -> str:
        dormant = (f", scaled down (0 replicas): `{self.cli} scale statefulset/{self.spec.name} -n {self.namespace} "
                   "--replicas=N` wakes it") if self.scaled_down else ""
        return f"{self.cli} namespace {self.namespace} (StatefulSet {self.spec.name}{dormant})"
