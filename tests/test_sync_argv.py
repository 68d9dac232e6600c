"""Argv of the commands a sync runs on a target: exact lists, no shell strings, names checked first.

The transports themselves (exec, rsh, logs, shell per kind) are tested in tests/test_remote.py.
"""

from __future__ import annotations

import shlex

import pytest

from nodeweave.errors import UsageError
from nodeweave.remote import make_target
from nodeweave.sync.transport.plain import UNTAR_SCRIPT, list_files_argv, tar_extract_argv
from nodeweave.sync.transport.rsync import RsyncOptions, rsync_argv
from nodeweave.sync.transport.session import AGENT_PROGRAM, LAUNCH, session_argv


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


def test_rsync_of_a_known_difference_reads_the_paths_from_stdin():
    argv = rsync_argv(make_target("ssh", "gpu01"), "/src", "/workspace", [], files_from=True)
    assert ["--files-from=-", "--from0", "--ignore-times"] == [a for a in argv if a.startswith(("--files", "--from0",
                                                                                                 "--ignore"))]


def test_the_session_launcher_is_constant_and_keeps_dest_as_its_own_argument():
    t = make_target("docker", "c1")
    argv = session_argv(t, "/workspace", "make")
    assert argv[:4] == ["docker", "exec", "-i", "c1"]
    assert argv[4:] == ["sh", "-c", LAUNCH, "sh", AGENT_PROGRAM, "/workspace", "make"]
    assert "/workspace" not in LAUNCH and "/workspace" not in AGENT_PROGRAM  # DEST is $2, never script text
    assert session_argv(t, "/workspace", "dry")[-1] == "dry"  # a dry run creates nothing
    ssh = session_argv(make_target("ssh", "me@gpu01"), "/workspace", "make")
    assert shlex.split(ssh[-1]) == ["sh", "-c", LAUNCH, "sh", AGENT_PROGRAM, "/workspace", "make"]


def test_tar_and_find_keep_dest_as_its_own_argument():
    t = make_target("docker", "c1")
    assert tar_extract_argv(t, "/workspace") == [  # through a stage of nodeweave's own (fix20a)
        "docker", "exec", "-i", "c1", "sh", "-c", UNTAR_SCRIPT, "sh", "/workspace"]
    assert list_files_argv(t, "/workspace")[4:7] == ["find", "/workspace", "-mindepth"]


def test_the_agent_program_fits_one_argument_of_an_exec():
    # Linux refuses any single argv string over MAX_ARG_STRLEN (32 pages: 128 KiB) with E2BIG;
    # over ssh the program is quoted into one command string, which grows it (each ' becomes '\'').
    assert len(AGENT_PROGRAM.encode()) + 3 * AGENT_PROGRAM.count("'") < 128 * 1024


def test_the_agent_program_is_python_3_6():
    """Any image with a python3 receives, down to 3.6: no syntax or module-level feature of a later Python.

    tests/test_sync_agent.py runs the program under a real 3.6 where one is installed.
    """
    import ast

    ast.parse(AGENT_PROGRAM, feature_version=(3, 6))  # walrus, positional-only parameters, f"{x=}", match, ...
    later = ["from __future__ import annotations", "capture_output=", ".removeprefix(", ".removesuffix(",
             "time_ns(", "nullcontext", "dataclasses", "asyncio.run(", "math.prod(", "cached_property"]
    assert [name for name in later if name in AGENT_PROGRAM] == []

