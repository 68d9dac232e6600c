"""JobSet (``jobset.x-k8s.io/v1alpha2``): the spec's pods as one replicated Indexed Job.

``render_files(spec)`` writes ``jobset/``: the ServiceAccount, the shared
workspace claim (``claim: shared``) and a JobSet with one replicated Job
``node`` of ``nodes`` pods (and ``recovery.spares`` more). JobSet makes the headless Service itself
(``network.subdomain`` = ``kubernetes.service``, not-ready addresses
published), so pods are ``<name>-node-0-<i>.<service>``; the entrypoint takes
its rank from ``JOB_COMPLETION_INDEX`` and the master is
``<name>-node-0-0.<service>``. Checked against the JobSet CRD's schema
(tests/fixtures/schemas/jobset.json). Pure and byte-stable.
"""

from __future__ import annotations

from typing import Any, Dict

from nodeweave.targets.kubernetes import common, placement, workloads
from nodeweave.targets.kubernetes.kustomize import workload_tree
from nodeweave.targets.kubernetes.pod import pod_template
from nodeweave.resolve import Resolved, resolve
from nodeweave.spec import Spec

FOLDER = "jobset"


def jobset(r: Resolved) -> Dict[str, Any]:
    """The JobSet; its Job template is the Indexed Job's, failure policy included (``workloads.failure_policy``:
    without recovery one failed rank fails the set; with it a lost pod is recreated and the set goes on)."""
    job = workloads.indexed_job(r)["spec"]
    job["template"] = pod_template(r, "jobset")
    body = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True, "subdomain": r.spec.kubernetes.service},
        # Restarts are in place (torchrun's, or recovery's generations); JobSet does not recreate the set: a
        # failed Job is one its own policy gave up on (recovery's exit 8, 9 or 10 included), and a new set would loop.
        "failurePolicy": {"maxRestarts": 0},
        "replicatedJobs": [{"name": common.REPLICATED_JOB, "replicas": 1, "template": {"spec": job}}],
    }
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": placement.workload_metadata(r, "trainer"), "spec": body}  # fmt: skip


def render_files(spec: Spec) -> Dict[str, str]:
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    return workload_tree(r, FOLDER, "jobset", ("jobset.yaml", jobset(r)))
