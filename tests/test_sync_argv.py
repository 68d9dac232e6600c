"""Argv of the commands a sync runs on a target: exact lists, no shell strings, names checked first.

The transports themselves (exec, rsh, logs, shell per kind) are tested in tests/test_remote.py.
"""

from __future__ import annotations

import pytest

from nodeweave.errors import UsageError
from nodeweave.remote import make_target
from nodeweave.sync.transport import RsyncOptions, probe_argv, rsync_argv, tar_extract_argv


def test_rsync_argv_for_a_container():
    t = make_target("podman", "nw-0")
    argv = rsync_argv(t, "/src/proj", "/workspace", ["--filter=- *.pt"],
                      RsyncOptions(delete=True, dry_run=True))
    assert argv[0] == "rsync"
    assert argv[argv.index("--rsh") + 1] == "podman exec -i"
    for flag in ("--recursive", "--links", "--perms", "--times", "--blocking-io", "--stats",
                 "--itemize-changes", "--whole-file", "--delete", "--dry-run", "--filter=- *.pt"):
        assert flag in argv
    assert "--archive" not in argv and "-a" not in argv  # no owners/groups: pods can't chown
    assert argv[-2:] == ["/src/proj/", "nw-0:/workspace/"]


def test_rsync_argv_defaults_are_safe_and_ssh_keeps_delta_transfer():
    argv = rsync_argv(make_target("ssh", "gpu01"), "/src", "/workspace", [])
    assert "--delete" not in argv and "--dry-run" not in argv and "--whole-file" not in argv
    assert argv[-1] == "gpu01:/workspace/"
    with pytest.raises(UsageError, match="absolute"):
        rsync_argv(make_target("ssh", "gpu01"), "src", "/workspace", [])


def test_rsync_into_a_container_on_a_host_names_the_container_as_rsyncs_host():
    argv = rsync_argv(make_target("ssh+docker", "me@gpu01/trainer"), "/src", "/workspace", [])
    assert argv[argv.index("--rsh") + 1].endswith(" me@gpu01 docker exec -i")
    assert argv[-1] == "trainer:/workspace/" and "--whole-file" not in argv


def test_probe_and_tar_keep_dest_as_its_own_argument():
    t = make_target("docker", "c1")
    argv = probe_argv(t, "/workspace")
    assert argv[:4] == ["docker", "exec", "-i", "c1"]
    assert argv[4:6] == ["sh", "-c"] and argv[-3:] == ["sh", "/workspace", "make"]
    assert "/workspace" not in argv[6]  # the script is constant; DEST is $1
    assert probe_argv(t, "/workspace", dry_run=True)[-1] == "dry"  # a dry run creates nothing
    assert tar_extract_argv(t, "/workspace") == [
        "docker", "exec", "-i", "c1", "tar", "-x", "-o", "-f", "-", "-C", "/workspace"]
