"""The spec fields real setups needed (issue 12): typed values when right, one-line errors when wrong.

Each bad value names file, line, field path, the value and what would be
accepted, as every other spec field does (tests/test_spec.py holds the
older fields to the same standard).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.errors import UsageError
from nodeweave.spec import load_spec, parse_spec

HEAD = "name: job\nlauncher: {script: train.py}\n"


def text(extra: str = "", image: str = "{variant: cuda12}") -> str:
    """A valid spec: name, launcher, image on lines 1-3; ``extra`` starts on line 4."""
    return f"{HEAD}image: {image}\n{extra}"


def error(source: str) -> str:
    with pytest.raises(UsageError) as caught:
        parse_spec(source, "cluster.yaml")
    return str(caught.value)


FULL = """gpus_per_node: 8  # slurm.exclusive false needs a count on a GPU variant
resources:
  requests: {cpu: 500m, memory: 400Gi}
  limits: {cpu: "64", memory: 512Gi}
  devices: {smarter-devices/fuse: 2}
  hugepages: {2Mi: 4Gi, 1Gi: 8Gi}
volumes:
  - {name: data, path: /data/, host_path: /mnt/data, claim: data-pvc, read_only: true}
  - {name: cfg, path: /etc/cfg, config_map: cfg}
  - {name: tok, path: /run/tok, secret: tok}
  - {name: scratch, path: /scratch, cache: 1Ti}
security: {cap_add: [SYS_PTRACE, SYS_NICE], seccomp: unconfined}
hosts: [gpu01, gpu02.lab.example, 10.0.0.13]
network:
  attachments:
    - {name: sriov-a, namespace: infra, interface: net1, resource: openshift.io/nic_a}
    - {name: sriov-b, resource: openshift.io/nic_a}
    - plain-net
kubernetes:
  labels: {team: ml}
  annotations: {owner: "a@b.c"}
  pod_labels: {tier: train}
  pod_annotations: {note: "x: y"}
  node_names: [node-a, node-b, node-c]
  node_affinity: [{key: zone, operator: NotIn, values: [z1]}, {key: gen, operator: Gt, values: ["3"]}]
  topology_spread: [{topology_key: topology.kubernetes.io/zone}]
  scheduler_name: volcano
  queue: research
  network_policy: false
  ingress_from: [{namespace_labels: {team: obs}, ports: [9090, 9091]}]
  build: {source: git, git: "https://github.com/example/train.git", ref: v1.2}
slurm: {partition: gpu, account: proj-7, time: "2-00:00:00", runtime: apptainer, sif: /shared/train.sif,
        exclusive: false, constraint: "h100&ib"}
"""


def test_every_new_field_reads_into_typed_values():
    spec = parse_spec(text(FULL))
    res = spec.resources
    assert dict(res.requests) == {"cpu": "500m", "memory": "400Gi"} and dict(res.devices) == {"smarter-devices/fuse": 2}
    assert dict(res.hugepages) == {"1Gi": "8Gi", "2Mi": "4Gi"}
    assert [name for name, _, _ in res.hugepage_mounts] == ["hugepages-1gi", "hugepages-2mi"]
    data, cfg, tok, scratch = spec.volumes
    assert (data.path, data.kubernetes_source, data.read_only) == ("/data", "claim", True)
    assert cfg.read_only and tok.read_only, "ConfigMaps and Secrets are read-only files"
    assert scratch.kubernetes_source == "cache" and scratch.cache == "1Ti"
    assert spec.security.cap_add == ("SYS_PTRACE", "SYS_NICE") and spec.security.seccomp == "unconfined"
    assert spec.hosts == ("gpu01", "gpu02.lab.example", "10.0.0.13")
    assert spec.nodes.min == spec.nodes.max == 3, "a hosts list sets the node count"
    assert spec.network.attachments == ("infra/sriov-a@net1", "sriov-b", "plain-net")
    assert dict(spec.network.rdma_resources) == {"openshift.io/nic_a": 2}, "one VF per attachment naming it"
    k8s = spec.kubernetes
    assert [t.to_kubernetes() for t in k8s.node_affinity] == [
        {"key": "zone", "operator": "NotIn", "values": ["z1"]}, {"key": "gen", "operator": "Gt", "values": ["3"]}]
    assert k8s.topology_spread[0].max_skew == 1 and k8s.topology_spread[0].when_unsatisfiable == "DoNotSchedule"
    assert (k8s.scheduler_name, k8s.queue, k8s.build.source, k8s.build.ref) == ("volcano", "research", "git", "v1.2")
    assert k8s.network_policy is False and len(k8s.ingress_from) == 1
    assert dict(k8s.ingress_from[0].namespace_labels) == {"team": "obs"} and k8s.ingress_from[0].ports == (9090, 9091)
    assert (spec.slurm.runtime, spec.slurm.sif, spec.slurm.exclusive) == ("apptainer", "/shared/train.sif", False)


def test_new_fields_default_to_nothing():
    spec = parse_spec(text())
    assert not spec.resources and spec.volumes == () and spec.hosts == () and spec.slurm is None
    assert spec.security.cap_add == () and spec.security.seccomp == "runtime-default"
    assert spec.image.apt == spec.image.pip == spec.image.extras == () and spec.image.project is None
    assert spec.kubernetes.build is None and spec.kubernetes.queue is None
    assert spec.kubernetes.network_policy is True and spec.kubernetes.ingress_from == ()


CASES = [
    (text("resources: {requests: {cpu: 8x}}\n"), 4, "resources.requests.cpu", "'8x'", "millicores"),
    (text("resources: {requests: {gpu: 1}}\n"), 4, "resources.requests.gpu", "unknown key", "cpu or memory"),
    (text("resources:\n  requests: {memory: 8Gi}\n  limits: {memory: 4Gi}\n"), 5, "resources.requests.memory",
     "8Gi is above the limit 4Gi", "a request <="),
    (text("resources: {hugepages: {2Mi: 1Gi}}\n"), 4, "resources.hugepages", "needs a CPU or memory request", "requests.memory"),
    (text("resources: {limits: {cpu: '1'}, hugepages: {3Mi: 1Gi}}\n"), 4, "resources.hugepages.3Mi", "page size '3Mi'", "2Mi or 1Gi"),
    (text("resources: {limits: {cpu: '1'}, hugepages: {2Mi: 3Mi}}\n"), 4, "resources.hugepages.2Mi", "not a whole number", "a multiple of 2Mi"),
    (text("resources: {devices: {nvidia.com/gpu: 1}}\n"), 4, "resources.devices.nvidia.com/gpu", "is set from gpus_per_node", "another extended resource"),
    (text("network: {rdma_resources: {r.io/x: 1}}\nresources: {devices: {r.io/x: 1}}\n"), 5, "resources.devices.r.io/x",
     "is set from network.rdma_resources", "change network.rdma_resources"),
    (text("volumes: [{name: d, path: /d}]\n"), 4, "volumes[0]", "has no source", "host_path, claim"),
    (text("volumes: [{name: d, path: /d, host_path: data}]\n"), 4, "volumes[0].host_path", "'data' is not absolute", "an absolute host path"),
    (text("volumes: [{name: d, path: /d, claim: a, secret: b}]\n"), 4, "volumes[0].secret", "one Kubernetes source", "one of claim"),
    (text("volumes: [{name: d, path: /workspace, claim: a}]\n"), 4, "volumes[0].path", "already mounted by workspace.path", "no other volume"),
    (text("volumes: [{name: dshm, path: /d, claim: a}]\n"), 4, "volumes[0].name", "'dshm' is already used", "a name not used"),
    (text("volumes:\n  - {name: d, path: /d, claim: a}\n  - {name: d, path: /e, claim: b}\n"), 6, "volumes[1].name",
     "'d' is already used by volumes[0]", "a name not used"),
    (text("volumes: [{name: s, path: /s, secret: s, read_only: false}]\n"), 4, "volumes[0].read_only", "always mounted read-only", "true"),
    (text("volumes: [{name: D, path: /d, claim: a}]\n"), 4, "volumes[0].name", "'D'", "DNS-1123 label"),
    (text("hosts: [a]\nresources: {limits: {memory: 1Gi}, hugepages: {2Mi: 2Mi}}\nvolumes: [{name: h, path: /dev/hugepages, claim: a}]\n"),
     6, "volumes[0].path", "already mounted by resources.hugepages", "no other volume"),
    (text("hosts: [a]\nvolumes: [{name: h, path: /etc/nodeweave, claim: a}]\n"), 5, "volumes[0].path", "the hosts list", "no other volume"),
    (text("security: {cap_add: [CAP_SYS_PTRACE]}\n"), 4, "security.cap_add[0]", "'CAP_SYS_PTRACE'", "without CAP_"),
    (text("security: {cap_add: [SYS_NICE, SYS_NICE]}\n"), 4, "security.cap_add[1]", "listed twice", "each item once"),
    (text("security: {seccomp: off}\n"), 4, "security.seccomp", "'off'", "runtime-default, unconfined"),
    (text("hosts: [a, b]\nnodes: 3\n"), 5, "nodes", "3 does not match the 2 hosts", "2, or leave nodes out"),
    (text("hosts: [a, b]\nnodes: '2:3'\n"), 5, "nodes", "2:3 does not match", "leave nodes out"),
    (text("hosts: [a, a]\n"), 4, "hosts[1]", "'a' is listed twice (first on line 4)", "each item once"),
    (text("hosts: ['gpu 01']\n"), 4, "hosts[0]", "'gpu 01'", "a host name"),
    (text("network: {attachments: [{name: a, resource: r.io/x}], rdma_resources: {r.io/x: 1}}\n"), 4,
     "network.attachments[0].resource", "r.io/x is also in network.rdma_resources", "a resource in one place"),
    (text("network: {attachments: [{nmae: a}]}\n"), 4, "network.attachments[0].nmae", "unknown key", "name, namespace"),
    (text("network: {attachments: [{name: a, interface: 'bad if'}]}\n"), 4, "network.attachments[0].interface", "'bad if'", "interface name"),
    (text("kubernetes: {labels: {app.kubernetes.io/instance: x}}\n"), 4, "kubernetes.labels.app.kubernetes.io/instance",
     "is set by nodeweave", "another key"),
    (text("kubernetes: {pod_annotations: {k8s.v1.cni.cncf.io/networks: x}}\n"), 4,
     "kubernetes.pod_annotations.k8s.v1.cni.cncf.io/networks", "is set by nodeweave", "another key"),
    (text("kubernetes: {pod_labels: {tier: 'a b'}}\n"), 4, "kubernetes.pod_labels.tier", "'a b'", "label value"),
    (text("kubernetes: {node_names: [Node_A]}\n"), 4, "kubernetes.node_names[0]", "'Node_A'", "DNS-1123 subdomain"),
    (text("kubernetes: {node_affinity: [{key: a, operator: In}]}\n"), 4, "kubernetes.node_affinity[0].values",
     "operator In takes one or more values", "with In"),
    (text("kubernetes: {node_affinity: [{key: a, operator: Exists, values: [b]}]}\n"), 4,
     "kubernetes.node_affinity[0].values", "takes no values", "with Exists"),
    (text("kubernetes: {node_affinity: [{key: a, operator: Lt, values: [x]}]}\n"), 4,
     "kubernetes.node_affinity[0].values", "exactly one integer value", "with Lt"),
    (text("kubernetes: {node_affinity: [{key: a, operator: Near, values: [x]}]}\n"), 4,
     "kubernetes.node_affinity[0].operator", "'Near'", "In, NotIn, Exists, DoesNotExist, Gt, Lt"),
    (text("kubernetes: {topology_spread: [{max_skew: 1}]}\n"), 4, "kubernetes.topology_spread[0].topology_key",
     "required field is missing", "topology.kubernetes.io/zone"),
    (text("kubernetes: {topology_spread: [{topology_key: z, when_unsatisfiable: Never}]}\n"), 4,
     "kubernetes.topology_spread[0].when_unsatisfiable", "'Never'", "DoNotSchedule, ScheduleAnyway"),
    (text("kubernetes: {scheduler_name: Volcano}\n"), 4, "kubernetes.scheduler_name", "'Volcano'", "DNS-1123 subdomain"),
    (text(image="{variant: cuda12, digest: 'sha256:abc'}"), 3, "image.digest", "'sha256:abc'", "64 lowercase hex"),
    (text("security: {read_only_root: sometimes}\n"), 4, "security.read_only_root", "'sometimes'", "true or false"),
    (text("kubernetes: {network_policy: maybe}\n"), 4, "kubernetes.network_policy", "'maybe'", "true or false"),
    (text("kubernetes: {ingress_from: [{ports: [9090]}]}\n"), 4, "kubernetes.ingress_from[0]", "names no pods",
     "pod_labels and/or namespace_labels"),
    (text("kubernetes: {ingress_from: [{pod_labels: {app: x}, ports: [0]}]}\n"), 4, "kubernetes.ingress_from[0].ports[0]",
     "got 0", "1 to 65535"),
    (text("kubernetes: {ingress_from: [{pod_labels: {'a b': x}}]}\n"), 4, "kubernetes.ingress_from[0].pod_labels.a b",
     "'a b'", "label key"),
    (text("kubernetes: {build: {source: git}}\n"), 4, "kubernetes.build.git", "is required with source git", "repository URL"),
    (text("kubernetes: {build: {git: 'https://x/y.git'}}\n"), 4, "kubernetes.build.git", "applies to source git only", "source: git"),
    (text("kubernetes: {build: {source: s3}}\n"), 4, "kubernetes.build.source", "'s3'", "binary, git"),
    (text("slurm: {time: 1day}\n"), 4, "slurm.time", "'1day'", "HH:MM:SS"),
    (text("slurm: {partition: 'gpu queue'}\n"), 4, "slurm.partition", "'gpu queue'", "Slurm partition"),
    (text("slurm: {runtime: docker}\n"), 4, "slurm.runtime", "'docker'", "pyxis, apptainer, host"),
    (text("slurm: {sif: /x.sif}\n"), 4, "slurm.sif", "applies to runtime apptainer only", "runtime: apptainer"),
    (text("slurm: {runtime: apptainer, sif: x.sif}\n"), 4, "slurm.sif", "'x.sif'", "an absolute path"),
    (text(image="{variant: cpu, extras: [mofed]}"), 3, "image.extras[0]", "mofed does not apply to variant cpu", "vendor and distribution"),
    (text(image="{variant: rocm70, extras: [efa]}"), 3, "image.extras[0]", "efa does not apply to variant rocm70", "vendor"),
    (text(image="{variant: cuda12, extras: [tcpx]}"), 3, "image.extras[0]", "'tcpx'", "mofed, efa"),
    (text(image="{variant: cuda12, pip: ['torch>=2']}"), 3, "image.pip[0]", "'torch>=2'", "name==version"),
    (text(image="{variant: cuda12, apt: ['Bad Pkg']}"), 3, "image.apt[0]", "'Bad Pkg'", "Debian/Ubuntu package name"),
    (text(image="{variant: cuda12, requirements: ../r.txt}"), 3, "image.requirements", "'../r.txt'", "without '..'"),
    (text(image="{variant: cuda12, project: {}}"), 3, "image.project", "needs a source directory", "run:"),
    (text(image="{variant: cuda12, project: {run: ['make \\\\']}}"), 3, "image.project.run[0]", "got 'make ", "not ending in"),
    (text(image="{variant: cuda12, project: {source: x, path: '/opt/my project'}}"), 3, "image.project.path",
     "'/opt/my project'", "absolute container path"),
]


@pytest.mark.parametrize("source, line, field, value, accepted", CASES, ids=[f"{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_names_file_line_field_value_and_accepted(source, line, field, value, accepted):
    message = error(source)
    assert message.startswith(f"cluster.yaml:{line}: {field}: "), message
    problem, _, accepted_part = message.partition("; accepted: ")
    assert value in problem, message
    assert accepted in accepted_part, message
    assert "\n" not in message


def _spec_with_requirements(tmp_path: Path, lines: str) -> Path:
    (tmp_path / "req.txt").write_text(lines)
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(text(image="{variant: cuda12, requirements: req.txt}"))
    return spec


def test_requirements_file_is_read_and_every_line_must_be_pinned(tmp_path):
    good = (f"# pinned\ntransformers==4.57.1  # comment\nfoo[bar]==1.0 \\\n  --hash=sha256:{'a' * 64}\n"  # pip's own shape
            "--extra-index-url https://x/simple\n")
    assert load_spec(_spec_with_requirements(tmp_path, good)).image.requirements == "req.txt"
    with pytest.raises(UsageError) as caught:
        load_spec(_spec_with_requirements(tmp_path, "a==1\n\ntorch>=2.0\n"))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'nodeweave.yaml'}:3: image.requirements: req.txt:3: 'torch>=2.0' is not pinned")
    assert "accepted: name==version or name @ URL" in message
    with pytest.raises(UsageError, match=r"req.txt:1: '-r other.txt' is an option a pinned image cannot take"):
        load_spec(_spec_with_requirements(tmp_path, "-r other.txt\n"))


def test_missing_requirements_file_is_named(tmp_path):
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(text(image="{variant: cuda12, requirements: nope.txt}"))
    with pytest.raises(UsageError, match=r":3: image.requirements: 'nope.txt' does not exist in .*\(the spec's "
                                         r"folder\); accepted: a pinned "):
        load_spec(spec)
