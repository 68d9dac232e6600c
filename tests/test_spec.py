"""The spec loader: typed values, defaults, and an error for every bad input that names
file, line, field, the value and what would be accepted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.spec import NodeRange, Spec, known_variants, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[1]


def text(extra: str = "", name: str = "job", image: str = "{variant: cpu}", launcher: str = "{script: train.py}") -> str:
    """A valid spec whose first three lines are name, image, launcher; ``extra`` starts on line 4."""
    return f"name: {name}\nimage: {image}\nlauncher: {launcher}\n{extra}"


def error(source: str) -> str:
    with pytest.raises(UsageError) as caught:
        parse_spec(source, "cluster.yaml")
    return str(caught.value)


# -- what a good spec gives -----------------------------------------------------------


def test_example_spec_loads_with_the_documented_values():
    spec = load_spec(REPO / "nodeweave.yaml")
    assert isinstance(spec, Spec)
    assert spec.name == "llama-pretrain"
    assert spec.image.variant == "cuda12"
    assert spec.nodes == NodeRange(2, 2) and not spec.nodes.elastic and str(spec.nodes) == "2"
    assert spec.gpus_per_node == 8
    assert spec.launcher.type == "torchrun"
    assert spec.launcher.script == "examples/train.py" and (REPO / spec.launcher.script).is_file()
    assert spec.launcher.args == ("--steps", "50", "--lr", "3e-3")
    assert spec.network.rdma is True
    assert dict(spec.network.rdma_resources) == {"rdma/rdma_shared_device_a": 1}
    assert spec.network.attachments == ("sriov-net-a",)
    assert spec.kubernetes.service == "llama-pretrain"  # resolved from name
    assert spec.kubernetes.openshift is False
    assert spec.kubernetes.tolerations[0].to_kubernetes() == {
        "key": "nvidia.com/gpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


def test_minimal_spec_gets_the_documented_defaults():
    spec = parse_spec(text())
    assert spec.nodes == NodeRange(1, 1)
    assert spec.gpus_per_node == "auto"
    assert spec.launcher.master_port == 29500 and spec.launcher.max_restarts == 0
    assert spec.workspace.path == "/workspace" and spec.workspace.host_path == "."
    assert spec.cache.size == "200Gi"
    assert spec.kubernetes.namespace == "default" and spec.kubernetes.service == "job"
    assert spec.kubernetes.claim == "shared" and spec.kubernetes.anti_affinity == "required"
    assert spec.kubernetes.grace_period == 120 and spec.kubernetes.cluster_domain is None
    assert dict(spec.env) == {}


def test_spec_is_frozen():
    spec = parse_spec(text())
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.env["X"] = "1"  # type: ignore[index]


@pytest.mark.parametrize(
    "value, expected, elastic, shown",
    [
        ("3", NodeRange(3, 3), False, "3"),
        ('"2:4"', NodeRange(2, 4), True, "2:4"),
        ("2:4", NodeRange(2, 4), True, "2:4"),  # unquoted: YAML 1.1 would read base-60 124
        ('"2:2"', NodeRange(2, 2), False, "2"),
    ],
)
def test_nodes_count_or_range(value, expected, elastic, shown):
    spec = parse_spec(text(f"nodes: {value}\n"))
    assert spec.nodes == expected
    assert spec.nodes.elastic is elastic
    assert str(spec.nodes) == shown


def test_strings_keep_what_the_user_wrote():
    spec = parse_spec(
        text(
            'env: {LR: 0.10, FLAG: yes, EMPTY: "", Q: "it\'s \\"x\\": ${HOME}\\nnext"}\n',
            launcher="{script: train.py, args: [--lr, 3e-4, 10, true]}",
        )
    )
    assert spec.launcher.args == ("--lr", "3e-4", "10", "true")
    assert dict(spec.env) == {"EMPTY": "", "FLAG": "yes", "LR": "0.10", "Q": "it's \"x\": ${HOME}\nnext"}


def test_service_given_explicitly_is_kept():
    assert parse_spec(text("kubernetes: {service: trainers}\n")).kubernetes.service == "trainers"


def test_yaml_merge_keys_work():
    spec = parse_spec(text("x: &common {MODE: a}\n", launcher="{script: t.py}").replace("x:", "env:"))
    assert dict(spec.env) == {"MODE": "a"}


def test_the_check_in_secrets_file_is_the_users_to_set():
    """On a volume of the spec: a path no mount holds is refused (walk7 A48, tests/test_walk7_g.py)."""
    spec = parse_spec(text("env: {NODEWEAVE_JOB_TOKEN_FILE: /run/secrets/nw/token}\n"
                           "volumes: [{name: nw, host_path: /srv/secrets/nw, path: /run/secrets/nw, read_only: true}]\n"),
                      "t.yaml")
    assert spec.env["NODEWEAVE_JOB_TOKEN_FILE"] == "/run/secrets/nw/token"


def test_variant_is_checked_against_the_images_catalogue():
    known = known_variants()
    assert {"cpu", "cuda12", "rocm70"} <= set(known)
    message = error(text(image="{variant: cuda99}"))
    assert message.startswith("cluster.yaml:2: image.variant: got 'cuda99'")
    for name in known:
        assert name in message


# -- every bad input: file, line, field, value, what is accepted ------------------------------

CASES = [
    # (spec text, line, field, value as shown, a phrase of the accepted part)
    (text(name="Foo"), 1, "name", "'Foo'", "DNS-1035 label"),
    (text(name="a" * 53), 1, "name", "'" + "a" * 53 + "'", "at most 52 characters"),
    (text(name="-job"), 1, "name", "'-job'", "[a-z]([-a-z0-9]*[a-z0-9])?"),
    (text(name="job_1"), 1, "name", "'job_1'", "DNS-1035 label"),
    (text(name="null"), 1, "name", "required field is null", "DNS-1035"),
    ("image: {variant: cpu}\nlauncher: {script: t.py}\n", 1, "name", "required field is missing", "DNS-1035"),
    (text(image="cpu"), 2, "image", "'cpu'", "a mapping with keys variant"),
    (text(image="{}"), 2, "image.variant", "required field is missing", "cpu"),
    (text(image="{variant: CPU}"), 2, "image.variant", "'CPU'", "cpu"),
    (text(image="{variant: cpu, registry: ghcr.io/Example}"), 2, "image.registry", "'ghcr.io/Example'", "lower-case path"),
    (text(image="{variant: cpu, tag: 'v 1'}"), 2, "image.tag", "'v 1'", "an image tag"),
    (text(image="{variant: cpu, base: 'ubuntu latest'}"), 2, "image.base", "'ubuntu latest'", "an image reference"),
    (text(image="{variant: cpu, build_args: {1X: a}}"), 2, "image.build_args.1X", "key '1X' is invalid", "environment variable name"),
    (text("nodes: 0\n"), 4, "nodes", "got 0", "a node count from 1 to 2048"),
    (text("nodes: '0:2'\n"), 4, "nodes", "MIN must be at least 1", '"MIN:MAX"'),
    (text("nodes: '4:2'\n"), 4, "nodes", "MAX (2) must be >= MIN (4)", '"MIN:MAX"'),
    (text("nodes: two\n"), 4, "nodes", "'two'", '"MIN:MAX"'),
    (text("nodes: [2]\n"), 4, "nodes", "a list", '"MIN:MAX"'),
    (text("nodes: '2:4'\n", launcher="{script: t.py, type: deepspeed}"), 4, "nodes", "elastic range 2:4 needs launcher.type torchrun", "fixed node count"),
    (text("gpus_per_node: 0\n"), 4, "gpus_per_node", "got 0", "from 1 to 1024"),
    (text("gpus_per_node: all\n"), 4, "gpus_per_node", "'all'", '"auto"'),
    (text(launcher="{script: t.py, type: mpirun}"), 3, "launcher.type", "'mpirun'", "torchrun, deepspeed, accelerate, command"),
    (text(launcher="{type: torchrun}"), 3, "launcher.script", "required field is missing", "relative to workspace.path"),
    (text(launcher="{script: \"a\\nb\"}"), 3, "launcher.script", "'a\\nb'", "single-line"),
    (text(launcher="{script: t.py, master_port: 70000}"), 3, "launcher.master_port", "got 70000", "from 1 to 65535"),
    (text(launcher="{script: t.py, master_port: true}"), 3, "launcher.master_port", "'true'", "an integer"),
    (text(launcher="{script: t.py, master_port: '29500'}"), 3, "launcher.master_port", "'29500'", "an integer"),
    (text(launcher="{script: t.py, max_restarts: -1}"), 3, "launcher.max_restarts", "got -1", "from 0"),
    (text(launcher="{script: t.py, args: --lr}"), 3, "launcher.args", "'--lr'", "a YAML list of strings"),
    (text(launcher="{script: t.py, args: [{a: 1}]}"), 3, "launcher.args[0]", "a mapping", "a string"),
    (text(launcher="{script: t.py, args: [null]}"), 3, "launcher.args[0]", "null", "a string"),
    (text("workspace: {path: work}\n"), 4, "workspace.path", "'work'", "absolute"),
    (text("workspace: {host_path: 'C:/x'}\n"), 4, "workspace.host_path", "'C:/x'", "no ':'"),
    (text("cache: {size: lots}\n"), 4, "cache.size", "'lots'", "Kubernetes quantity"),
    (text("network: {interfaces: eth0}\n"), 4, "network.interfaces", "'eth0'", "a YAML list of"),
    (text("network: {interfaces: [averyveryverylongname0]}\n"), 4, "network.interfaces[0]", "'averyveryverylongname0'", "1 to 15 characters"),
    (text("network: {exclude_hcas: ['mlx5 0']}\n"), 4, "network.exclude_hcas[0]", "'mlx5 0'", "RDMA device"),
    (text("network: {rdma_resources: {rdma: 1}}\n"), 4, "network.rdma_resources.rdma", "resource name 'rdma' is invalid", "<domain>/<name>"),
    (text("network: {rdma_resources: {rdma/hca: 0}}\n"), 4, "network.rdma_resources.rdma/hca", "got 0", "from 1 to 1024"),
    (text("network: {attachments: [Bad_Net]}\n"), 4, "network.attachments[0]", "'Bad_Net'", "NetworkAttachmentDefinition"),
    (text("env: {1BAD: x}\n"), 4, "env.1BAD", "key '1BAD' is invalid", "environment variable name"),
    (text("env: {GOOD: null}\n"), 4, "env.GOOD", "null", "write '' for empty"),
    (text("env: {GOOD: [1]}\n"), 4, "env.GOOD", "a list", "a string"),
    (text("env: {NODEWEAVE_NNODES: '3'}\n"), 4, "env.NODEWEAVE_NNODES", "in the NODEWEAVE_ prefix, reserved by "
     "nodeweave", "any other variable name"),
    (text("env: {MASTER_ADDR: x}\n"), 4, "env.MASTER_ADDR", "set on every node by nodeweave from node 0's address",
     "any other variable name"),
    (text("env: [A=1]\n"), 4, "env", "a list", "a mapping of names to strings"),
    (text('env: {A: "x\\0y"}\n'), 4, "env.A", "contains a NUL character", "a string"),
    (text("kubernetes: {namespace: Default}\n"), 4, "kubernetes.namespace", "'Default'", "DNS-1123 label"),
    (text("kubernetes: {service: my_svc}\n"), 4, "kubernetes.service", "'my_svc'", "DNS-1035 label"),
    (text("kubernetes: {storage_class: Fast_SSD}\n"), 4, "kubernetes.storage_class", "'Fast_SSD'", "DNS-1123 subdomain"),
    (text("kubernetes: {storage_size: 10GB}\n"), 4, "kubernetes.storage_size", "'10GB'", "Kubernetes quantity"),
    (text("kubernetes: {claim: rwx}\n"), 4, "kubernetes.claim", "'rwx'", "shared, per-pod"),
    (text("kubernetes: {anti_affinity: soft}\n"), 4, "kubernetes.anti_affinity", "'soft'", "required, preferred, none"),
    (text("kubernetes: {grace_period: -5}\n"), 4, "kubernetes.grace_period", "got -5", "from 0 to 86400"),
    (text("kubernetes: {cluster_domain: Corp_Example}\n"), 4, "kubernetes.cluster_domain", "'Corp_Example'", "DNS-1123 subdomain"),
    (text("kubernetes: {openshift: maybe}\n"), 4, "kubernetes.openshift", "'maybe'", "true or false"),
    (text("kubernetes: {node_selector: {gpu: 'a b'}}\n"), 4, "kubernetes.node_selector.gpu", "'a b'", "label value"),
    (text("kubernetes: {node_selector: {'bad key!': x}}\n"), 4, "kubernetes.node_selector.bad key!", "key 'bad key!' is invalid", "label key"),
    (text("kubernetes:\n  tolerations:\n    - {key: a, operator: Exists, value: b}\n"), 6, "kubernetes.tolerations[0].value", "must be empty when operator is Exists", "no value"),
    (text("kubernetes:\n  tolerations:\n    - {operator: Equal, value: b}\n"), 6, "kubernetes.tolerations[0].key", "may be left out only with operator Exists", "a taint key"),
    (text("kubernetes:\n  tolerations:\n    - {key: a, effect: Sometimes}\n"), 6, "kubernetes.tolerations[0].effect", "'Sometimes'", "NoSchedule, PreferNoSchedule, NoExecute"),
    (text("kubernetes:\n  tolerations:\n    - {key: a, tolerationSeconds: 30}\n"), 6, "kubernetes.tolerations[0].tolerationSeconds", "applies only to effect NoExecute", "NoExecute"),
    (text("kubernetes:\n  tolerations: {key: a}\n"), 5, "kubernetes.tolerations", "a mapping", "a YAML list of tolerations"),
    ("- name: job\n", 1, "the file", "a list", "a mapping with keys name, image"),
    (text("nodes: !!int abc\n"), 4, "nodes", "'abc'", "a node count from 1 to 2048"),
    (text("kubernetes: {openshift: !!bool maybe}\n"), 4, "kubernetes.openshift", "'maybe'", "true or false"),
    (text("<<: 5\n"), 4, "the file", "a merge key (<<) needs a mapping", "a mapping with keys name"),
    (text("name: again\n"), 4, "name", "duplicate key (first given on line 1)", "each key once"),
]


@pytest.mark.parametrize("source, line, field, value, accepted", CASES, ids=[f"{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_names_file_line_field_value_and_accepted(source, line, field, value, accepted):
    message = error(source)
    assert message.startswith(f"cluster.yaml:{line}: {field}: "), message
    problem, _, accepted_part = message.partition("; accepted: ")
    assert value in problem, message
    assert accepted in accepted_part, message
    assert "Traceback" not in message


@pytest.mark.parametrize(
    "source, line, field, suggestion",
    [
        (text("nodez: 2\n"), 4, "nodez", "nodes"),
        (text("gpu_per_node: 2\n"), 4, "gpu_per_node", "gpus_per_node"),
        (text(launcher="{scirpt: t.py}"), 3, "launcher.scirpt", "script"),
        (text(image="{variant: cpu, regsitry: x}"), 2, "image.regsitry", "registry"),
        (text("kubernetes: {namespce: a}\n"), 4, "kubernetes.namespce", "namespace"),
        (text("kubernetes: {tolerations: [{key: a, efect: NoSchedule}]}\n"), 4, "kubernetes.tolerations[0].efect", "effect"),
        (text("network: {interface: [eth0]}\n"), 4, "network.interface", "interfaces"),
    ],
)
def test_unknown_keys_suggest_the_closest_known_key(source, line, field, suggestion):
    message = error(source)
    assert message.startswith(f"cluster.yaml:{line}: {field}: unknown key (did you mean '{suggestion}'?)"), message
    assert "accepted: one of " in message


def test_unknown_key_without_a_close_match_lists_the_keys():
    message = error(text("zzzzzz: 1\n"))
    assert "did you mean" not in message
    assert re.search(r"accepted: one of name, image, nodes, gpus_per_node, launcher", message)


@pytest.mark.parametrize(
    "source, where",
    [
        ("name: [unclosed\n", "cluster.yaml:2:1: not valid YAML"),
        ("name: job\n  bad: indent\n", "cluster.yaml:2:6: not valid YAML"),
        ("name: 'open\n", "cluster.yaml:2:1: not valid YAML"),
    ],
)
def test_yaml_syntax_errors_give_line_and_column(source, where):
    assert error(source).startswith(where)


@pytest.mark.parametrize("source", ["", "# only a comment\n", "~\n"])
def test_empty_spec_says_what_it_needs(source):
    message = error(source)
    assert message.startswith("cluster.yaml: the spec is empty")
    assert "'name'" in message and "variant" in message and "script" in message


def test_load_spec_file_problems(tmp_path):
    with pytest.raises(UsageError, match=r"missing\.yaml: spec file not found; pass an existing file with --spec"):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(UsageError, match="is a directory"):
        load_spec(tmp_path)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(UsageError, match=r"latin\.yaml: not UTF-8 text .* at byte 9"):
        load_spec(latin)


def test_errors_name_the_file_given(tmp_path):
    bad = tmp_path / "team.yaml"
    bad.write_text(text("nodes: -1\n"))
    with pytest.raises(UsageError) as caught:
        load_spec(bad)
    assert str(caught.value).startswith(f"{bad}:4: nodes: ")


def test_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "nodeweave.yaml"
    bad.write_text(text("kubernetes: {namespce: a}\n"))
    code = main(["render", "compose", "--spec", str(bad), "--dry-run"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.strip() == (
        f"nodeweave: error: {bad}:4: kubernetes.namespce: unknown key (did you mean 'namespace'?); accepted: one of "
        "namespace, service, storage_class, storage_size, claim, node_selector, tolerations, anti_affinity, "
        "grace_period, openshift, cluster_domain, labels, annotations, pod_labels, pod_annotations, node_names, "
        "node_affinity, topology_spread, scheduler_name, queue, build, network_policy, ingress_from"
    )


def test_catalogue_keys_are_valid_variant_names():
    """A variant key becomes a folder (images/<key>/), a tag and a bake target: the rule keeps it usable."""
    from nodeweave.spec import rules

    for key in known_variants():
        assert rules.VARIANT_NAME.check(key), key


def test_network_rdma_defaults_to_whether_rdma_resources_are_listed():
    assert not parse_spec(text()).network.rdma
    assert parse_spec(text("network: {rdma_resources: {rdma/hca: 1}}\n")).network.rdma
    assert parse_spec(text("network: {rdma: true}\n")).network.rdma


def test_network_rdma_false_with_rdma_resources_is_refused():
    message = error(text("network: {rdma: false, attachments: [sriov-a]}\n"))
    assert "network.rdma" in message and "contradicts" in message and "accepted: true" in message
