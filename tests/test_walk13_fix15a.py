"""The thirteenth walk, part A (issue 43, /work/wt/walk13a-report.md), rows fixed by fix15a: each row's class, one test
per class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli

SPEC = "name: p1\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def _project(tmp_path, monkeypatch, extra: str = "", nodes: bool = True):
    (tmp_path / "train.py").write_text("print(1)\n")
    spec = SPEC if nodes else SPEC.replace("nodes: 2\n", "")
    (tmp_path / "nodeweave.yaml").write_text(spec + extra)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


# -- A1, A17: every place a host is read judges it by the one host rule (check_ssh_host), naming where it was read --

IPV6 = ("2001:db8::1", "::1", "[::1]", "me@[fd00::1]:22", "[2001:db8::1]")
# every option that reads a host where a KIND:NAME target may stand (remote.parse_target / target_kind)
TARGET_READERS = {"hosts probe --node": ("hosts", "probe", "--dry-run", "--node"),
                  "sync --node": ("sync", ".", "/workspace", "--dry-run", "--node"),
                  "doctor --cluster --node": ("doctor", "--cluster", "--dry-run", "--node"),
                  "init --host": ("init", "--dry-run", "--out", "i6.yaml", "--host")}


@pytest.mark.parametrize("address", IPV6)
@pytest.mark.parametrize("member", sorted(TARGET_READERS))
def test_an_ipv6_host_where_a_target_is_read_gets_the_host_rules_line(tmp_path, monkeypatch, capsys, member, address):
    """A1: an IPv6 address given to an option that takes a host or KIND:NAME was read as kind '2001', '' or '['; it
    is refused as `--host` refuses it (the host rule's IPv6 line), exit 2."""
    _project(tmp_path, monkeypatch)
    code, out, err = run_cli(capsys, *TARGET_READERS[member], address)
    assert code == 2, (out, err)
    assert "target kind" not in err, err
    assert f"host {address!r} is not accepted: a host name or IPv4 address (give IPv6 hosts a name" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


SPEC_HOSTS = 'hosts: [gpu01, "2001:db8::1"]\nworkspace: {host_path: /srv/s1}\n'
VERBS_ON_SPEC_HOSTS = {"up": ("up", "--dry-run"), "status": ("status",), "down": ("down", "--dry-run"),
                       "sync": ("sync", ".", "/workspace", "--dry-run"), "logs": ("logs",)}


@pytest.mark.parametrize("verb", sorted(VERBS_ON_SPEC_HOSTS))
def test_the_specs_hosts_are_judged_naming_the_spec_field(tmp_path, monkeypatch, capsys, verb):
    """A17: the spec's hosts holding an IPv6 address, no --host typed: each verb that reaches the hosts refused it as
    "--host '2001:db8::1'"; it names the spec's field (nodeweave.yaml: hosts[1]), exit 2."""
    _project(tmp_path, monkeypatch, SPEC_HOSTS)
    code, out, err = run_cli(capsys, *VERBS_ON_SPEC_HOSTS[verb])
    assert code == 2, (out, err)
    assert "nodeweave.yaml: hosts[1] '2001:db8::1' is not accepted: a host name or IPv4 address" in err, err
    assert "--host" not in err, err


def test_validate_applies_the_host_rule_to_the_specs_hosts(tmp_path, monkeypatch, capsys):
    """A17: validate said only "valid" of an IPv6 host the verbs then refuse; it notes it (the spec stays valid: the
    rendered compose/node.yaml, run by hand on each host, takes an address, as docs/entrypoint.md says), naming the
    field and saying which verbs refuse it."""
    _project(tmp_path, monkeypatch, SPEC_HOSTS)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, (out, err)
    assert "note: hosts[1] '2001:db8::1' is not accepted: a host name or IPv4 address" in err, err
    assert "up, sync and every verb that reaches the hosts by ssh refuse it" in err, err


# -- A6: every text that says the default target says spec_default's whole order, slurm included -----------------------

def _verbs_with_a_target():
    import cli_run

    # the cluster verbs' shared -t (clusteropts.TARGET), not image build's own local/openshift -t
    return [(" ".join(words), command) for words, command in cli_run.leaves()
            if any("--target" in getattr(p, "opts", ()) and "what `nodeweave up` used" in (p.help or "") for p in command.params)]


@pytest.mark.parametrize("words", [w for w, _ in _verbs_with_a_target()] + ["sync (its help)"])
def test_every_verbs_target_help_names_each_default_target(words):
    """A6: `-t`'s help on every verb that takes it (and sync's own help) named hosts, kubernetes and local as the
    default but not slurm, which a spec's slurm: section makes the default (spec_default); it says each target
    spec_default can pick, in its order."""
    import click

    commands = dict(_verbs_with_a_target())
    command = commands["sync"] if words == "sync (its help)" else commands[words]
    if words == "sync (its help)":
        text = command.help
    else:
        option = next(p for p in command.params if "--target" in p.opts)
        text = option.help
    text = " ".join(click.unstyle(text).split())
    order = ["hosts with --host", "kubernetes for an OpenShift spec", "slurm for a spec with a slurm: section",
             "else local"]
    places = [text.find(words_) for words_ in order]
    assert -1 not in places and places == sorted(places), text


@pytest.mark.parametrize("section, target", [("hosts: [gpu01, gpu02]\n", "hosts"),
                                             ("kubernetes: {openshift: true}\n", "kubernetes"),
                                             ("slurm: {partition: gpu}\n", "slurm"), ("", "local")])
def test_the_default_target_text_names_what_spec_default_picks(tmp_path, section, target):
    """A6: the text the helps share names each target spec_default picks for a spec, by the words for its case."""
    from nodeweave.cli.habits.clusteropts import DEFAULT_TARGET_TEXT
    from nodeweave.cluster.options import ClusterOptions, spec_default
    from nodeweave.spec import load_spec

    (tmp_path / "train.py").write_text("print(1)\n")
    spec_file = tmp_path / "nodeweave.yaml"
    spec_file.write_text(SPEC.replace("nodes: 2\n", "") + section)
    picked = spec_default(ClusterOptions(), load_spec(spec_file)).checked().target
    assert picked == target
    assert f"else {target}" in DEFAULT_TARGET_TEXT or DEFAULT_TARGET_TEXT.startswith(f"what `up` used, else {target}")


# -- A11: every place that takes ~/FOLDER (check_dest with home: sync's DEST, --remote-dir on each verb) offers it in
# its refusal, with the value given where it is a plain relative folder ------------------------------------------------

HOME_READERS = {"sync DEST": ("sync", ".", "{}", "--hosts-file", "hosts.txt", "--dry-run"),
                "up --remote-dir": ("up", "-t", "hosts", "--hosts-file", "hosts.txt", "--dry-run", "--remote-dir", "{}"),
                "status --remote-dir": ("status", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "{}")}


@pytest.mark.parametrize("value, offered", [("proj", "'~/proj'"), ("proj/sub/", "'~/proj/sub'"),
                                            ("../x", "'~/FOLDER'"), ("/etc", "'~/FOLDER'")])
@pytest.mark.parametrize("member", sorted(HOME_READERS))
def test_a_refused_folder_on_the_hosts_offers_the_home_form(tmp_path, monkeypatch, capsys, member, value, offered):
    """A11: `sync . proj --hosts-file hosts.txt` said "'~' and relative paths mean different places" while it takes
    '~/proj'; every refusal of a folder that may be ~/FOLDER offers it (quoted), as `up --remote-dir` did, and never
    calls '~' wrong."""
    _project(tmp_path, monkeypatch)
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, *[w.format(value) for w in HOME_READERS[member]])
    assert code == 2, (out, err)
    assert f"{value!r} is not accepted" in err, err
    assert f"or {offered} (quoted" in err and "under each host's home" in err, err
    assert "'~' and relative" not in err, err


# -- A8: doctor --cluster, which asks through the nodes of the cluster `up` made, takes every reach flag the other
# verbs take (clusteropts.REACH_FLAGS); without --cluster each is refused in one line ---------------------------------

def _reach_flags():
    from nodeweave.cli.habits.clusteropts import REACH_FLAGS

    values = {"target": "kubernetes", "engine": "podman", "host": "gpu01", "hosts_file": "hosts.txt",
              "remote_dir": "/srv/x", "namespace": "ml", "kube_cli": "kubectl", "kube_context": "ctx",
              "overlay": "base", "ssh_option": "Port=2222"}
    return [(option.param_decls[0], values[param]) for param, _, option in REACH_FLAGS]


OPENSHIFT = "kubernetes: {openshift: true}\n"


@pytest.mark.parametrize("flag, value", _reach_flags())
def test_doctor_cluster_takes_every_reach_flag(tmp_path, monkeypatch, capsys, flag, value):
    """A8: `doctor --cluster --kube-cli kubectl` (and -n, -t, --kube-context, --engine, --host, --hosts-file,
    --remote-dir, --ssh-option) was "no such option"; each is read as every verb reads it (a flag the target makes
    nothing of gets that verb-wide line, never "no such option")."""
    _project(tmp_path, monkeypatch, OPENSHIFT)
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, "doctor", "--cluster", "--dry-run", flag, value)
    assert "no such option" not in err.lower(), err
    assert "Traceback" not in err, err
    code, out, err = run_cli(capsys, "doctor", flag, value)
    assert code == 2, (out, err)
    # --overlay is for up and down alone: refused as every verb but those refuses it (FLAG_VERBS)
    said = f"{flag} does nothing for doctor" if flag == "--overlay" else f"{flag} does nothing without --cluster"
    assert said in err, err


def test_doctor_cluster_reaches_an_openshift_specs_pods_with_kubectl(tmp_path, monkeypatch, capsys):
    """A8 as walked: an OpenShift spec on a machine without oc: `doctor --cluster --kube-cli kubectl` plans kubectl
    exec into the pods, as `status --kube-cli kubectl` does; -n names their namespace."""
    _project(tmp_path, monkeypatch, OPENSHIFT)
    code, out, err = run_cli(capsys, "doctor", "--cluster", "--dry-run", "--kube-cli", "kubectl", "-n", "ml")
    assert code == 0, (out, err)
    assert "kubectl exec -n ml -c trainer p1-0" in out, out
    assert "oc exec" not in out, out
