"""Target names, hosts files and destinations: hostile input is refused with a message naming it."""

from __future__ import annotations

import pytest

from nodeweave.errors import UsageError
from nodeweave.remote import check_dest, make_target, parse_target
from nodeweave.remote.discover import read_hosts_file, statefulset_targets

HOSTILE = ["-oProxyCommand=touch /tmp/pwned", "a;rm -rf /", "a b", "$(id)", "`id`", "a|b",
           "a&b", "a>b", "x\ny", "", "--help", "a'b", 'a"b', "a\\b", "*"]


@pytest.mark.parametrize("kind", ["podman", "docker", "kubectl", "oc", "ssh", "ssh+docker"])
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_target_names_are_refused(kind, name):
    with pytest.raises(UsageError) as err:
        make_target(kind, name)
    assert repr(name) in str(err.value) and "not accepted" in str(err.value)


def test_good_names_pass():
    assert make_target("podman", "nwsync_a.1-B").name == "nwsync_a.1-B"
    assert make_target("kubectl", "llama-pretrain-0", namespace="ml", container="trainer").label == (
        "pod:ml/llama-pretrain-0[trainer]")
    assert make_target("ssh", "me@gpu-01.lab.example").label == "ssh:me@gpu-01.lab.example"
    assert make_target("ssh", "10.0.0.7").name == "10.0.0.7"


@pytest.mark.parametrize("field,kwargs", [
    ("namespace", {"namespace": "ML"}),
    ("namespace", {"namespace": "-n"}),
    ("container", {"container": "a;b"}),
])
def test_pod_namespace_and_container_are_dns_labels(field, kwargs):
    with pytest.raises(UsageError, match=f"^{field} "):
        make_target("kubectl", "llama-0", **kwargs)


def test_pod_names_are_dns_subdomains():
    with pytest.raises(UsageError, match="DNS-1123 subdomain"):
        make_target("kubectl", "Llama_0")


def test_ipv6_and_bad_users_are_refused_with_the_reason():
    with pytest.raises(UsageError, match="IPv6"):
        make_target("ssh", "fe80::1")
    with pytest.raises(UsageError, match="POSIX login name"):
        make_target("ssh", "-l@host")


def test_parse_target_kinds_and_aliases():
    assert parse_target("pod:llama-0", namespace="ml").kind == "kubectl"
    assert parse_target("oc:llama-0").kind == "oc"
    assert parse_target("container:nw-1").kind == "podman"
    with pytest.raises(UsageError, match="KIND:NAME"):
        parse_target("llama-0")
    with pytest.raises(UsageError, match="target kind 'ftp'"):
        parse_target("ftp:llama-0")


@pytest.mark.parametrize("dest", ["/", "/etc", "/usr", "/usr/", "/var/lib", "/root", "/tmp", "//etc"])
def test_system_directories_are_refused(dest):
    with pytest.raises(UsageError, match="system directory"):
        check_dest(dest)


@pytest.mark.parametrize("dest,accepted", [
    ("~", "absolute"), ("~/work", "absolute"), ("workspace", "absolute"),
    ("/workspace/../etc", "'..'"), ("/work space", "no spaces"), ("/w;rm -rf", "no spaces"),
    ("/w/$HOME", "no spaces"),
])
def test_relative_and_odd_destinations_are_refused(dest, accepted):
    with pytest.raises(UsageError) as err:
        check_dest(dest)
    assert repr(dest) in str(err.value) and accepted in str(err.value)


def test_good_destinations_are_normalised():
    assert check_dest("/workspace/") == "/workspace"
    assert check_dest("/home/me/proj") == "/home/me/proj"
    assert check_dest("/tmp/nw") == "/tmp/nw"


def test_statefulset_ordinals_rank_zero_first():
    pods = statefulset_targets("llama", 3, kind="oc", namespace="ml")
    assert [p.name for p in pods] == ["llama-0", "llama-1", "llama-2"]
    assert {p.kind for p in pods} == {"oc"} and {p.namespace for p in pods} == {"ml"}
    with pytest.raises(UsageError, match="StatefulSet name 'Llama'"):
        statefulset_targets("Llama", 2)


def test_hosts_file_keeps_order_reads_hostfiles_and_names_bad_lines(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# master first\ngpu-a slots=8\n\ngpu-b   # second\nme@gpu-c\n")
    assert [t.name for t in read_hosts_file(f)] == ["gpu-a", "gpu-b", "me@gpu-c"]
    f.write_text("gpu-a\ngpu-b;reboot\n")
    with pytest.raises(UsageError, match=r"hosts line 2|line 2: host 'gpu-b;reboot'"):
        read_hosts_file(f)
    f.write_text("gpu-a\ngpu-a\n")
    with pytest.raises(UsageError, match="line 2: host 'gpu-a' is listed already on line 1"):  # every reader's words
        read_hosts_file(f)
    f.write_text("# nothing\n")
    with pytest.raises(UsageError, match="lists no host"):
        read_hosts_file(f)
