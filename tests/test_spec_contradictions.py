"""Contradictions across fields, and the spec habits of the first-day walk, refused (or read) as classes.

Each test covers a class of the walk's rows (issue 41 item 3, issue 43 rows 16, 24, 25, 38, 45, 46, 47,
49, 60): every member the class has, not only the row's instance, and the same words on every path that
takes the value (the spec, ``run -e``, ``--host``, the entrypoint's flags). ``validate``, ``render`` and
``up`` share one loader, so a refusal at validate is one at render and up too: checked through the CLI.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from nodeweave.cli import main
from nodeweave.errors import EXIT_OK, EXIT_USAGE, UsageError
from nodeweave.spec import parse_spec
from nodeweave.rendering import render_targets

from doc_values import shown_as_refused

REPO = Path(__file__).resolve().parents[1]
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


def spec(extra: str = "", base: str = BASE):
    return parse_spec(base + extra, "s.yaml")


def refusal(extra: str = "", base: str = BASE) -> str:
    with pytest.raises(UsageError) as caught:
        spec(extra, base)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def cli(capsys, tmp_path: Path, text: str, *argv) -> "tuple[int, str, str]":
    path = tmp_path / "nodeweave.yaml"
    path.write_text(text)
    code = main([*argv, "--spec", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- issue 41 item 3: contradictions across fields --------------------------------------------------


@pytest.mark.parametrize("argv", [["validate"], ["render", "all", "--dry-run"], ["render", "manifests", "--dry-run"],
                                  ["up", "--dry-run"], ["up", "--dry-run", "-t", "kubernetes"]])
def test_recovery_with_the_exchange_off_is_refused_at_validate_render_and_up(capsys, tmp_path, argv):
    text = BASE.replace("{script: t.py}", "{script: t.py, exchange: false}") + "recovery: {enabled: true}\n"
    code, out, err = cli(capsys, tmp_path, text, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert "recovery.enabled: true with launcher.exchange false" in err and "exit 2" in err
    assert "launcher.exchange: true" in err  # what to write instead


def test_the_exchange_off_without_recovery_and_recovery_with_it_on_are_valid():
    assert spec(BASE.replace("{script: t.py}", "{script: t.py, exchange: false}"), base="").launcher.exchange is False
    assert spec("recovery: {enabled: true, spares: 1}\n").recovery.spares == 1


ROCE = (REPO / "examples" / "openshift-deepspeed-roce.yaml").read_text()
ELASTIC = (REPO / "examples" / "openshift-elastic.yaml").read_text()
FOUR_NODES = "  node_names: [moc-r4pcc04u09-nairr, moc-r4pcc04u11-nairr, moc-r4pcc04u12-nairr, moc-r4pcc04u16-nairr]\n"


def test_the_openshift_seeds_with_a_spare_on_their_listed_nodes_are_refused():
    """The seeds' own forms: one pod per node (required anti-affinity, the default), pods pinned to a list of
    nodes; a spare needs a node of its own, so 5 pods on 4 listed nodes (7 on 6 for the elastic one) is refused."""
    pinned = ROCE.replace("kubernetes:\n", "kubernetes:\n" + FOUR_NODES)
    assert parse_spec(pinned, "roce.yaml").containers == 4
    message = refusal("recovery: {enabled: true, spares: 1}\n", base=pinned)
    assert "kubernetes.node_names: 5 pods (4 node(s) + recovery.spares 1)" in message
    assert "1 pod(s) could never be scheduled" in message and "at least 5 nodes listed" in message
    elastic = ELASTIC.replace('nodes: "2:6"', "nodes: 6")
    message = refusal("recovery: {enabled: true, spares: 1}\n", base=elastic)
    assert "7 pods (6 node(s) + recovery.spares 1)" in message and "pinned to 6 node(s)" in message
    # preferred anti-affinity may share a node; a hostname In term pins as node_names does
    assert spec("recovery: {enabled: true, spares: 1}\n",
                base=pinned.replace("kubernetes:\n", "kubernetes:\n  anti_affinity: preferred\n")).containers == 5
    by_term = ROCE.replace("kubernetes:\n", "kubernetes:\n  node_affinity: [{key: kubernetes.io/hostname, "
                                            "values: [a, b, c, d]}]\n")
    assert "kubernetes.node_affinity: 5 pods" in refusal("recovery: {enabled: true, spares: 1}\n", base=by_term)
    # an elastic range scaled to its MAX needs as many listed nodes too
    assert "6 pods (6 node(s)) when scaled to the range's MAX" in refusal(base=ELASTIC.replace(
        "moc-r4pcc04u25-nairr, moc-r4pcc04u36-nairr", "moc-r4pcc04u25-nairr"))


def test_a_hosts_list_without_a_host_for_the_spare_names_the_count_to_list():
    message = refusal("hosts: [a, b]\nrecovery: {enabled: true, spares: 1}\n")
    assert message.startswith("s.yaml:3: nodes: 2 does not match the 2 hosts") and "or list 3 hosts" in message
    assert spec("hosts: [a, b, c]\nrecovery: {enabled: true, spares: 1}\n").containers == 3


def test_an_elastic_range_under_recovery_is_refused_naming_both_counts():
    message = refusal('recovery: {enabled: true}\n', base=BASE.replace("nodes: 2", 'nodes: "2:64"'))
    assert message.startswith("s.yaml:3: nodes: the elastic range 2:64 under recovery would start all 64 nodes")
    assert "nodes: 64 with recovery.min_nodes: 2 (starts 64), or nodes: 2 (starts 2)" in message
    # without recovery MAX is a ceiling: the range starts MIN
    assert spec(base=BASE.replace("nodes: 2", 'nodes: "2:64"')).containers == 2


@pytest.mark.parametrize("argv", [["validate"], ["render", "all", "--dry-run"], ["up", "--dry-run"],
                                  ["up", "--dry-run", "-t", "kubernetes"], ["up", "--dry-run", "-t", "slurm"],
                                  ["up", "--dry-run", "-t", "hosts", "--host", "a,b", "--remote-dir", "/w"]])
def test_an_elastic_range_under_recovery_is_refused_by_every_verb_on_every_target(capsys, tmp_path, argv):
    """The issue's `nodes: "2:64"` with recovery started 64 containers or replicas with nothing said: every verb
    that reads the spec, on every target, refuses it with both counts and how to start fewer (exit 2)."""
    text = BASE.replace("nodes: 2", 'nodes: "2:64"') + "recovery: {enabled: true}\n"
    code, out, err = cli(capsys, tmp_path, text, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert "the elastic range 2:64 under recovery would start all 64 nodes" in err, err
    assert "nodes: 2 (starts 2)" in err and "Traceback" not in err


RECOVERING = ("name: rj\nimage: {variant: cpu}\nnodes: 3\ngpus_per_node: 8\nlauncher: {script: t.py}\n"
              "recovery: {enabled: true, spares: 1, min_nodes: 2}\n")


def test_every_target_starts_nodes_plus_spares_and_recovery_goes_on_down_to_min_nodes():
    s = parse_spec(RECOVERING, "r.yaml")
    assert (str(s.nodes), s.containers) == ("2:3", 4)
    files = render_targets(s, ["compose", "manifests", "slurm"])
    assert list(yaml.safe_load(files["compose/local.yaml"])["services"]) == ["rj-0", "rj-1", "rj-2", "rj-3"]
    assert yaml.safe_load(files["manifests/base/statefulset.yaml"])["spec"]["replicas"] == 4
    sbatch = files["slurm/job.sbatch"]
    assert "#SBATCH --nodes=4" in sbatch.splitlines() and "NODEWEAVE_NNODES=2:3" in sbatch.replace('"', "")
    assert s.starts == ("starts 4 node(s): 3 training node(s) + 1 spare(s) (32 processes); node 3 is the spare; "
                        "recovery goes on with as "
                        "few as 2 (recovery.min_nodes); to start fewer, lower nodes or recovery.spares")


@pytest.mark.parametrize("argv, stream", [(["validate"], "out"), (["render", "compose", "--dry-run"], "err"),
                                          (["render", "manifests", "--dry-run"], "err"),
                                          # --hold: up's job started (32 processes, no t.py here) would end its dry
                                          # run with the real exit 2 (walk17a A8-A10)
                                          (["up", "--hold", "--dry-run"], "out")])
def test_validate_render_and_up_say_how_many_nodes_start_and_how_to_start_fewer(capsys, tmp_path, argv, stream):
    code, out, err = cli(capsys, tmp_path, RECOVERING, *argv)
    assert code == EXIT_OK, err
    said = out if stream == "out" else err
    assert "starts 4 node(s): 3 training node(s) + 1 spare(s)" in said and "to start fewer, lower nodes" in said


def test_recovery_min_nodes_is_checked_against_nodes_and_the_launcher():
    assert "recovery.min_nodes: got 5; accepted: an integer from 1 to 3 (nodes)" in refusal(
        RECOVERING.replace("min_nodes: 2", "min_nodes: 5"), base="")
    message = refusal(RECOVERING.replace("{script: t.py}", "{script: t.py, type: deepspeed}"), base="")
    assert "recovery.min_nodes: makes the job elastic (2:3), which needs launcher.type torchrun" in message


# -- row 24: a quoted number or boolean, in every field that takes one ------------------------------

QUOTED = [
    ('nodes: "2"', "nodes", "2"),
    ("gpus_per_node: '8'", "gpus_per_node", "8"),
    ('launcher: {script: t.py, master_port: "29500"}', "launcher.master_port", "29500"),
    ('launcher: {script: t.py, exchange_port: "29600"}', "launcher.exchange_port", "29600"),
    ('launcher: {script: t.py, wait_timeout: "60"}', "launcher.wait_timeout", "60"),
    ('launcher: {script: t.py, stall_warn: "0"}', "launcher.stall_warn", "0"),
    ('launcher: {script: t.py, exchange: "false"}', "launcher.exchange", "false"),
    ('recovery: {enabled: "true"}', "recovery.enabled", "true"),
    ('recovery: {enabled: true, spares: "1"}', "recovery.spares", "1"),
    ('kubernetes: {grace_period: "30"}', "kubernetes.grace_period", "30"),
    ('kubernetes: {topology_spread: [{topology_key: zone, max_skew: "2"}]}', "kubernetes.topology_spread[0].max_skew",
     "2"),
    ('kubernetes: {ingress_from: [{pod_labels: {a: b}, ports: ["9090"]}]}', "kubernetes.ingress_from[0].ports[0]",
     "9090"),
    ('resources: {devices: {example.com/nic: "4"}}', "resources.devices.example.com/nic", "4"),
    ('security: {ipc_lock: "false"}', "security.ipc_lock", "false"),
]


@pytest.mark.parametrize("line, field, bare", QUOTED)
def test_a_quoted_number_or_boolean_is_named_as_a_string_with_the_value_to_write(line, field, bare):
    key = line.split(":", 1)[0]
    base = "\n".join(x for x in BASE.splitlines() if not x.startswith(key + ":")) + "\n"  # the line replaced
    message = refusal(line + "\n", base=base)
    assert f": {field}: got the string '{bare}'; write {bare} without quotes; accepted: " in message, message


def test_strings_that_look_like_numbers_stay_strings_where_a_field_takes_a_string():
    s = spec('env: {RETRIES: "3", FLAG: "true"}\nresources: {requests: {cpu: "32"}}\n')
    assert dict(s.env) == {"FLAG": "true", "RETRIES": "3"} and s.resources.requests["cpu"] == "32"
    assert str(spec(base=BASE.replace("nodes: 2", 'nodes: "2:4"')).nodes) == "2:4"


# -- rows 25 and 49: YAML merge keys with overrides, and x- keys for anchors ------------------------


def test_a_local_key_overrides_a_merged_one_and_the_first_merged_mapping_wins():
    s = spec("x-labels: &lab {team: a, tier: gold}\nx-more: &more {tier: bronze, zone: z1}\n"
             "kubernetes: {labels: *lab, pod_labels: {<<: *lab, tier: silver}, annotations: {<<: [*lab, *more]}}\n")
    assert dict(s.kubernetes.labels) == {"team": "a", "tier": "gold"}
    assert dict(s.kubernetes.pod_labels) == {"team": "a", "tier": "silver"}
    assert dict(s.kubernetes.annotations) == {"team": "a", "tier": "gold", "zone": "z1"}
    # sections read twice (recovery, before and after nodes) and aliases keep the merged result
    assert spec("x-r: &r {enabled: true, spares: 1}\nrecovery: {<<: *r, spares: 2}\n").recovery.spares == 2


def test_a_key_written_twice_in_one_mapping_is_still_a_duplicate():
    message = refusal("x-l: &l {a: b}\nkubernetes: {pod_labels: {<<: *l, tier: x, tier: y}}\n")
    assert "kubernetes.pod_labels.tier: duplicate key (first given on line 6)" in message


def test_top_level_x_keys_are_ignored_as_compose_does_so_anchors_can_live_there():
    s = spec('x-common: &env {A: "1", B: two}\nx-anything: [1, 2]\nenv: *env\n')
    assert dict(s.env) == {"A": "1", "B": "two"}
    assert "kubernetes.x-mine: unknown key" in refusal("kubernetes: {x-mine: 1}\n")  # only at the top, as Compose


# -- row 38: environment names: ASCII, and one reason for a reserved name wherever it is given -------


def test_an_env_name_must_be_ascii_and_the_message_says_so():
    message = refusal("env: {ÄBC: x}\n")
    assert "env.ÄBC: key 'ÄBC' is invalid; accepted: an environment variable name: ASCII letters" in message


@pytest.mark.parametrize("name, says", [
    ("NODEWEAVE_FOO", "NODEWEAVE_FOO is not a variable nodeweave reads, and the NODEWEAVE_ prefix is reserved"),
    ("NODEWEAVE_SPARES", "NODEWEAVE_SPARES is in the NODEWEAVE_ prefix, reserved by nodeweave for its own settings"),
    ("NODE_RANK", "NODE_RANK is set on every node by nodeweave from each node's rank"),
    ("MASTER_PORT", "MASTER_PORT is set on every node by nodeweave from launcher.master_port"),
    ("PET_NNODES", "PET_NNODES is torchrun's spelling of --nnodes"),
    ("POD_NAME", "POD_NAME is set on every node by nodeweave from Kubernetes"),
])
def test_a_reserved_name_is_refused_with_the_same_reason_in_the_spec_and_in_run_e(name, says):
    from nodeweave.cluster.sweep import parse_assignment

    assert f"env.{name}: {says}" in refusal(f"env: {{{name}: x}}\n")
    for option in ("--env", "--sweep"):
        with pytest.raises(UsageError) as caught:
            parse_assignment(f"{name}=1", option)
        assert f"{option} '{name}=1': {says}" in str(caught.value)
    with pytest.raises(UsageError, match="ASCII letters"):
        parse_assignment("ÄBC=1", "--env")


# -- row 45: one host under two spellings ----------------------------------------------------------


@pytest.mark.parametrize("hosts", ["[gpu01, GPU01]", "[gpu01.lab, Gpu01.Lab]", "[a, b, A]"])
def test_a_host_listed_twice_in_another_case_is_refused_in_the_spec(hosts):
    message = refusal(f"hosts: {hosts}\n", base=BASE.replace("nodes: 2\n", ""))
    assert "hosts[" in message and "is listed twice (first on line 4 as " in message


@pytest.mark.parametrize("flags", [["A", "a"], ["a.", "a"], ["me@GPU01", "gpu01."]])
def test_a_host_given_twice_in_another_case_or_with_a_dot_is_refused_in_host_flags(flags):
    from nodeweave.cluster.options import ClusterOptions

    with pytest.raises(UsageError, match=r"is given 2 times .*case-insensitive"):
        ClusterOptions(hosts=tuple(flags)).checked()


# -- row 46: one rule for every mount point ---------------------------------------------------------


@pytest.mark.parametrize("line, field, says", [
    ("cache: {path: /workspace}", "cache.path", "/workspace is already mounted by workspace.path"),
    ("workspace: {path: /cache}", "cache.path", "/cache is already mounted by workspace.path"),
    ("workspace: {path: /}", "workspace.path", "/ would hide the whole image"),
    ("workspace: {path: /etc}", "workspace.path", "a mount at /etc would hide"),
    ("workspace: {path: /usr/local/bin}", "workspace.path", "nodeweave-entrypoint"),
    ("workspace: {path: /usr}", "workspace.path", "a mount at /usr would hide the installed software"),
    ("workspace: {path: /proc}", "workspace.path", "a mount at /proc would hide"),
    ("cache: {path: /tmp}", "cache.path", "a mount at /tmp would hide"),
    ("cache: {path: /run/nodeweave}", "cache.path", "the job token"),
    ("cache: {path: /run}", "cache.path", "a mount at /run would hide"),
    ("volumes: [{name: d, path: /dev, claim: c}]", "volumes[0].path", "a mount at /dev would hide the devices"),
    ("volumes: [{name: d, path: /run/nodeweave/x, claim: c}]", "volumes[0].path", "inside /run/nodeweave"),
    ("volumes: [{name: d, path: /dev/shm, claim: c}]", "volumes[0].path", "already mounted by nodeweave's shared"),
    ("volumes: [{name: d, path: /home, claim: c}]", "volumes[0].path", "a mount at /home would hide"),
    ("volumes: [{name: d, path: /data, claim: c}, {name: e, path: /data, claim: f}]", "volumes[1].path",
     "/data is already mounted by volumes[0].path"),
])
def test_a_mount_point_that_clashes_or_hides_the_system_is_refused(line, field, says):
    message = refusal(line + "\n")
    assert f": {field}: " in message and says in message, message
    assert "accepted: a container path no other volume, workspace.path or cache.path uses" in message


def test_mounts_inside_a_system_folder_or_inside_another_mount_are_fine():
    s = spec("volumes: [{name: ds, path: /etc/deepspeed, config_map: c}, {name: d, path: /workspace/data, "
             "claim: c}, {name: t, path: /tmp/scratch, cache: 10Gi}]\ncache: {path: /workspace/.cache}\n")
    assert [v.path for v in s.volumes] == ["/etc/deepspeed", "/workspace/data", "/tmp/scratch"]


# -- row 47: two of the job's ports equal -----------------------------------------------------------


def test_the_exchange_port_cannot_be_the_master_port_in_the_spec():
    message = refusal(base=BASE.replace("{script: t.py}", "{script: t.py, master_port: 29500, exchange_port: 29500}"))
    assert "launcher.exchange_port: 29500 is launcher.master_port too" in message
    message = refusal(base=BASE.replace("{script: t.py}", "{script: t.py, master_port: 1234, exchange_port: 1234}"))
    assert "accepted: a port other than 1234" in message
    assert spec(base=BASE.replace("{script: t.py}", "{script: t.py, exchange_port: 29501}")).launcher.exchange_port


@pytest.mark.parametrize("argv, env", [
    (["--exchange-port", "29500"], {}),
    (["--exchange-port", "4000", "--master-port", "4000"], {}),
    ([], {"NODEWEAVE_EXCHANGE_PORT": "29500"}),
    ([], {"NODEWEAVE_EXCHANGE_PORT": "7000", "NODEWEAVE_MASTER_PORT": "7000"}),
])
def test_the_entrypoint_refuses_an_exchange_port_equal_to_the_master_port(argv, env):
    from nodeweave.entrypoint import make_plan
    from nodeweave.entrypoint.errors import UsageError as EntrypointUsageError

    env = {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1", **env}
    with pytest.raises(EntrypointUsageError, match=r"exchange port \d+ \(from .*\) is the master port too"):
        make_plan([*argv, "--", "t.py"], env=env, sysroot="/")  # a live node: a captured tree has no exchange


# -- row 60: launcher.options against each launcher's own options -----------------------------------


@pytest.mark.parametrize("kind, options, says", [
    ("torchrun", "[--mixed_precision, bf16]", "'--mixed_precision' is not an option of torchrun"),
    ("torchrun", "[--log-dri, /x]", "(did you mean --log-dir?)"),
    ("deepspeed", "[--mixed_precision, bf16]", "is not an option of deepspeed"),
    ("accelerate", "[--redirects, '3']", "is not an option of accelerate"),
    ("accelerate", "[--mixed, bf16]", "is not an option of accelerate"),  # accelerate takes no abbreviations
])
def test_an_option_the_launcher_does_not_have_is_refused(kind, options, says):
    message = refusal(base=BASE.replace("{script: t.py}", f"{{type: {kind}, script: t.py, options: {options}}}"))
    assert says in message and f"accepted: an option of {kind}'s own parser" in message, message


@pytest.mark.parametrize("kind, options", [
    ("torchrun", ["--log-dir", "/w/logs", "--redirects", "3", "--tee=3", "--monitor_interval", "1", "--redir", "3"]),
    ("deepspeed", ["--bind_cores_to_rank", "--bind_core_list", "0-7", "--ssh_port=22"]),
    ("accelerate", ["--mixed_precision", "bf16", "--dynamo-backend", "inductor", "--fsdp_version=2"]),
])
def test_the_launchers_own_options_and_their_values_pass(kind, options):
    text = BASE.replace("{script: t.py}", f"{{type: {kind}, script: t.py, options: {options!r}}}".replace("'", '"'))
    assert spec(base=text).launcher.options == tuple(options)


# -- row 16: a spec value a doc names is one the spec takes ----------------------------------------

NOT_SPEC_VALUES = re.compile(r"<|\bN\b|MIN|MAX|\.\.\.|\+|;")  # placeholders, and messages quoted


def _parse(document: dict) -> None:
    parse_spec(yaml.safe_dump(document, default_flow_style=False, width=1000), "doc.yaml")


def _document(path: str, value) -> dict:
    """A valid spec with the field at ``path`` (section.key, or a top-level key) set to ``value``."""
    document = {"name": "j", "image": {"variant": "cpu"}, "nodes": 2, "launcher": {"script": "t.py"}}
    section, _, leaf = path.partition(".")
    if not leaf:
        document[section] = value
        return document
    document.setdefault(section, {})[leaf] = value
    if section == "recovery":
        document["recovery"].setdefault("enabled", True)
    return document


def _section_keys(section: str) -> "list[str]":
    """The keys a section takes, as the loader's own unknown-key refusal lists them."""
    with pytest.raises(UsageError) as caught:
        _parse(_document(f"{section}.zz_unknown", 1))
    return str(caught.value).partition("accepted: one of ")[2].split(", ")


def _spec_fields() -> "dict[str, str]":
    """Every field's dotted path, also by its bare name where that name is one field's only."""
    paths = {key: key for key in ("name", "nodes", "gpus_per_node")}  # the top level's scalar fields
    by_leaf: "dict[str, list[str]]" = {}
    for section in ("launcher", "workspace", "cache", "kubernetes", "recovery", "security", "slurm", "network"):
        for key in _section_keys(section):
            paths[f"{section}.{key}"] = f"{section}.{key}"
            by_leaf.setdefault(key, []).append(f"{section}.{key}")
    paths.update({leaf: where[0] for leaf, where in by_leaf.items() if len(where) == 1 and leaf not in paths})
    return paths


def _doc_values():
    span = re.compile(r"`([a-z_]+(?:\.[a-z_]+)?): ([^`{}\[\]]+?)`")
    for doc in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for found in span.finditer(line):
                yield f"{doc.name}:{number}", found.group(1), found.group(2).strip(), shown_as_refused(line, found)


def test_every_spec_value_a_doc_names_is_one_the_spec_takes():
    """docs/stalls.md named `wait_timeout: 0`, which the spec refuses (1 to 86400): a doc naming a field's value
    is checked against the loader, so a doc and the spec cannot part again."""
    fields, checked = _spec_fields(), 0
    for where, key, value, refused in _doc_values():
        path = fields.get(key)
        if path is None or NOT_SPEC_VALUES.search(value) or ": " in value or refused:
            continue  # a placeholder, a message quoted, or an example the doc shows as refused
        try:
            _parse(_document(path, yaml.safe_load(f"v: {value}")["v"]))
        except UsageError as err:
            pytest.fail(f"{where}: `{key}: {value}` is refused by the spec: {err}")
        checked += 1
    assert checked >= 30  # the docs name many; a pattern that matched none would check nothing


def test_hosts_given_to_up_under_recovery_are_every_training_node_and_the_spares(capsys, tmp_path):
    """With recovery every training node starts, so hosts given with --host must be nodes + spares exactly; a
    range's MIN is enough only without recovery (torchrun admits the rest)."""
    hosts = ["--host", "a", "--host", "b", "--host", "c"]
    code, out, err = cli(capsys, tmp_path, RECOVERING, "up", "--dry-run", "--remote-dir", "/srv/j", *hosts)
    assert code == EXIT_USAGE and "3 host(s) for a spec of nodes: 2:3 and recovery.spares: 1" in err and "give 4" in err
    code, out, err = cli(capsys, tmp_path, RECOVERING, "up", "--dry-run", "--remote-dir", "/srv/j", *hosts,
                         "--host", "d")
    assert code == EXIT_OK, err
    elastic = BASE.replace("nodes: 2", 'nodes: "2:4"')
    code, out, err = cli(capsys, tmp_path, elastic, "up", "--dry-run", "--remote-dir", "/srv/j", *hosts)
    assert code == EXIT_OK, err


def test_host_flags_name_the_spec_hosts_in_any_case(capsys, tmp_path):
    text = BASE.replace("nodes: 2\n", "hosts: [gpu01, gpu02]\n")
    code, out, err = cli(capsys, tmp_path, text, "up", "--dry-run", "--remote-dir", "/srv/j", "--host", "GPU01",
                         "--host", "me@gpu02.")
    assert code == EXIT_OK, err


def test_without_recovery_a_range_starts_min_and_says_which_workloads_start_max():
    s = spec(base=BASE.replace("nodes: 2", 'nodes: "2:6"').replace("cpu}", "cpu}\ngpus_per_node: 4"))
    assert s.starts == ("starts 2 node(s) (8 processes); torchrun admits more up to 6 as they join (MAX is a ceiling; "
                        "a batch Job, JobSet or TrainJob, which cannot grow, starts all 6); to start fewer, lower nodes")
    files = render_targets(s, ["manifests"])
    assert yaml.safe_load(files["manifests/base/statefulset.yaml"])["spec"]["replicas"] == 2
    assert yaml.safe_load(files["manifests/job/job.yaml"])["spec"]["completions"] == 6


def test_the_entrypoint_reads_min_nodes_as_the_floor_and_the_last_pod_as_a_spare(tmp_path):
    """recovery.min_nodes reaches the entrypoint as NODEWEAVE_NNODES=MIN:nodes: its recovery set-up counts
    nodes + spares containers, `nodes` training slots, and the floor it shrinks to."""
    from test_entrypoint_contract import pod_env, with_hostname
    from test_spares_rendered import NODE, POD_INDEX, SPEC, build_plan, downward, identity_settings, parse

    from nodeweave.entrypoint.recovery.setup import Config

    text = SPEC.read_text().replace("nodes: 2", "nodes: 3").replace("spares: 1", "spares: 1, min_nodes: 2")
    sts = yaml.safe_load(render_targets(parse_spec(text, "r.yaml"), ["manifests"])["manifests/base/statefulset.yaml"])
    assert sts["spec"]["replicas"] == 4
    env = pod_env(sts["spec"]["template"]["spec"]["containers"][0], {**downward("resilient-3", POD_INDEX),
                                                                      POD_INDEX: "3"})
    given = parse(["train.py"], {"PATH": "/usr/bin:/bin", **env})
    given.sysroot = with_hostname(tmp_path, NODE, "resilient-3")
    plan = build_plan(identity_settings(given))
    config = Config(given, plan.topology)
    assert (plan.topology.node_rank.value, config.nodes, config.slots, config.minimum, config.spares) == (3, 4, 3, 2, 1)
