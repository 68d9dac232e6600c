"""Rows B7, B4, B6, B8 of the fourteenth walk (walk14b, issue 43), each fixed as a class: every list of hosts a node
reads (Slurm's node lists, a hostfile, BATCH_HOSTS_FILE, SM_HOSTS, DSTACK_NODES_IPS, SKYPILOT_NODE_IPS, a Volcano
VC_*_HOSTS) is bounded before it is expanded, read in linear time, and refused in one line naming the file or
variable, the line and the byte when it is not UTF-8 text (``planning/hostlists.py``). Each test fails on the code
before its fix; each docstring starts with the row ids it covers."""

import time

import pytest

import cli_run

from nodeweave.entrypoint.planning.contract import SCHEDULED_NODES_MAX
from nodeweave.entrypoint.planning.slurm import NODELISTS

entrypoint = pytest.fixture(cli_run.in_a_folder_with_train_py)

BOUND = f"{SCHEDULED_NODES_MAX:,}"


def _names(count, first="vm"):
    return [first] + [f"n{i}" for i in range(1, count)]


def _file(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# Every host list source: (its name in a refusal, env for a list of `hosts` (str names, or bytes for a bad one)).
def _hostfile(tmp_path, hosts):
    return {"NODEWEAVE_HOSTFILE": _file(tmp_path, "hosts", b"\n".join(_b(h) for h in hosts) + b"\n"),
            "NODE_RANK": "0"}


def _batch(tmp_path, hosts):
    return {"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "2",
            "BATCH_HOSTS_FILE": _file(tmp_path, "batch", b"\n".join(_b(h) for h in hosts) + b"\n")}


def _sagemaker(tmp_path, hosts):
    return {"SM_CURRENT_HOST": _s(hosts[0]), "SM_HOSTS": "[" + ",".join('"%s"' % _s(h) for h in hosts) + "]"}


def _dstack(tmp_path, hosts):
    return {"DSTACK_NODE_RANK": "0", "DSTACK_NODES_NUM": "2", "DSTACK_NODES_IPS": "\n".join(_s(h) for h in hosts)}


def _skypilot(tmp_path, hosts):
    return {"SKYPILOT_NODE_RANK": "0", "SKYPILOT_NUM_NODES": "2",
            "SKYPILOT_NODE_IPS": "\n".join(_s(h) for h in hosts)}


def _volcano(tmp_path, hosts):
    return {"VC_TASK_INDEX": "0", "VC_WORKER_HOSTS": ",".join(_s(h) for h in hosts)}


def _slurm(name):
    def env(tmp_path, hosts):
        return {"SLURM_NNODES": "2", "SLURM_NODEID": "0", name: ",".join(_s(h) for h in hosts)}
    return env


def _b(host):
    return host if isinstance(host, bytes) else host.encode()


def _s(host):
    """A host as the environment gives it: undecodable bytes as lone surrogates (os.environ's surrogateescape)."""
    return host.decode("utf-8", "surrogateescape") if isinstance(host, bytes) else host


SOURCES = {"hostfile": ("hostfile", _hostfile), "BATCH_HOSTS_FILE": ("BATCH_HOSTS_FILE", _batch),
           "SM_HOSTS": ("SM_HOSTS", _sagemaker), "DSTACK_NODES_IPS": ("DSTACK_NODES_IPS", _dstack),
           "SKYPILOT_NODE_IPS": ("SKYPILOT_NODE_IPS", _skypilot), "VC_WORKER_HOSTS": ("VC_WORKER_HOSTS", _volcano)}
SOURCES.update({name: (name, _slurm(name)) for name in NODELISTS})


def test_the_sources_here_are_every_host_list_the_table_reads():
    """B7, B4, B6, B8: the members below are the readers of ``sources.SOURCES`` that give a ``hosts`` claim."""
    import inspect

    from nodeweave.entrypoint.planning import platforms, slurm, sources

    readers = [s.read for s in sources.SOURCES]
    with_hosts = {r.__name__ for r in readers if "host_list(" in inspect.getsource(r)}
    assert with_hosts == {"volcano", "skypilot", "dstack", "google_batch", "sagemaker", "hostfile"}
    assert "host_list(" in inspect.getsource(slurm.slurm_claims) and platforms and sources


# --- B7, B4: every host list is bounded before it is expanded, and read in linear time ----------------------------

@pytest.mark.parametrize("name", NODELISTS)
@pytest.mark.parametrize("value", ["n[1-99999999999]", "n[1-200000]", "a[1-300]b[1-300]",
                                   f"n[1-{SCHEDULED_NODES_MAX}],m1"])
def test_b7_a_slurm_list_past_the_bound_is_refused_before_it_is_expanded(name, value, tmp_path):
    """B7: a typo'd range (``n[1-99999999999]``) was expanded in full before any bound: the memory grew to the OOM
    killer, on every node of the job. It is counted first, and refused at once (exit 2) naming the variable, the
    count and the bound."""
    (tmp_path / "train.py").write_text("print(1)\n")
    env = {**cli_run.CLEAN, "SLURM_NNODES": "2", "SLURM_NODEID": "0", name: value}
    start = time.monotonic()
    done = cli_run.entrypoint("--explain", "--", "train.py", env=env, timeout=30, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = cli_run.one_line(done.stderr)
    assert f"{name}={value!r}" in line and BOUND in line, line
    assert time.monotonic() - start < 20


@pytest.mark.parametrize("member", sorted(SOURCES))
def test_b7_every_host_list_past_the_bound_is_refused_naming_it(member, entrypoint, tmp_path):
    """B7: one bound for every host list (the scheduler's count's, 65,536): one host more is refused, exit 2, in
    one line naming the source and the bound (a 70,000-line hostfile was planned as far as the count's check; a
    Slurm list was expanded whatever its size)."""
    where, make = SOURCES[member]
    count = SCHEDULED_NODES_MAX + 1
    hosts = _names(count) if not member.startswith("SLURM") else None
    env = make(tmp_path, hosts) if hosts else {"SLURM_NNODES": "2", "SLURM_NODEID": "0",
                                               member: f"vm,n[1-{count - 1}]"}
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
    assert code == 2, (out, err)
    line = cli_run.one_line(err)
    assert where in line and BOUND in line, line


def test_b7_expand_nodelist_refuses_past_the_bound_for_every_caller():
    """B7: the Slurm expansion the CLI shares (the spec's slurm.nodelist, the Slurm backend) counts before it
    expands: a typo'd range is a refusal, never a list that fills the memory."""
    from nodeweave.entrypoint.errors import UsageError
    from nodeweave.entrypoint.planning.slurm import count_nodelist, expand_nodelist

    assert count_nodelist("n[1-99999999999]") == 99999999999
    assert count_nodelist("a[1-3,07]b[1-2],c") == 9
    with pytest.raises(UsageError, match=BOUND):
        expand_nodelist("n[1-99999999999]")
    assert expand_nodelist("a[1-2]b[08-09],c") == ["a1b08", "a1b09", "a2b08", "a2b09", "c"]


def test_b4_a_slurm_list_at_the_bound_is_read_in_linear_time(tmp_path):
    """B4: the Slurm node list's duplicate check was ``list.count`` per host, and the list was read four times:
    8,193 hosts took 15 s a node, 65,536 would have taken most of an hour. At the bound, under recovery (the
    walker's slowest case), a node's whole --explain now takes a few seconds of CPU."""
    import resource

    (tmp_path / "train.py").write_text("print(1)\n")
    env = {**cli_run.CLEAN, "SLURM_NNODES": str(SCHEDULED_NODES_MAX), "SLURM_NODEID": str(SCHEDULED_NODES_MAX - 1),
           "SLURM_JOB_NODELIST": f"node[00000-{SCHEDULED_NODES_MAX - 1:05d}]"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = cli_run.entrypoint("--explain", "--recovery", "on", "--spares", "1", "--checkpoint-dir", "ck",
                              "--nnodes", str(SCHEDULED_NODES_MAX - 1), "--", "train.py", env=env, timeout=120,
                              cwd=tmp_path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 8


def test_b4_a_node_list_twice_names_its_duplicates_in_one_line(entrypoint):
    """B4: the duplicate check kept its refusal (a dict now, not a count per host), one line however many."""
    env = {"SLURM_NNODES": "2", "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "vm,n[1-30],n[1-30]"}
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
    assert code == 2
    line = cli_run.one_line(err)
    assert "twice" in line and "and 22 more" in line, line


# --- B6, B8: one rule for host list text that is not UTF-8 ----------------------------------------------------------

@pytest.mark.parametrize("member", sorted(SOURCES))
@pytest.mark.parametrize("bad", [b"no\xffde1", b"m\xe4ster"], ids=["node-1", "latin1"])
def test_b6_b8_a_host_list_that_is_not_utf8_is_refused_naming_source_and_byte(member, bad, entrypoint, tmp_path):
    """B6, B8: a Latin-1 byte in a host list was replaced by U+FFFD (a hostfile, BATCH_HOSTS_FILE) or kept as a
    lone surrogate (SM_HOSTS, the Slurm and platform lists) and taken as node 1's host, exit 0; on node 0's line it
    was said as "non-ASCII characters". Every host list is refused (exit 2) in one line naming the file or
    variable and the byte, as NODEWEAVE_JOB_TOKEN_FILE is."""
    where, make = SOURCES[member]
    hosts = ["vm", bad] if bad.startswith(b"no") else [bad, "vm"]
    env = make(tmp_path, hosts)
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
    assert code == 2, (out, err)
    line = cli_run.one_line(err)
    byte = "0xff" if b"\xff" in bad else "0xe4"
    assert where in line and f"byte {byte} is not UTF-8 text" in line and "\ufffd" not in line, line
    if member in ("hostfile", "BATCH_HOSTS_FILE", "DSTACK_NODES_IPS", "SKYPILOT_NODE_IPS"):  # one host a line
        assert f"line {hosts.index(bad) + 1}:" in line, line


@pytest.mark.parametrize("member", ["hostfile", "BATCH_HOSTS_FILE"])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_b6_a_utf16_hosts_file_is_said_as_utf16(member, encoding, entrypoint, tmp_path):
    """B6: a UTF-16 hostfile (Notepad's "Unicode") was refused as "this host is not listed" with its NULs and
    U+FFFD written to the terminal. Its byte-order mark is named, with the remedy."""
    where, make = SOURCES[member]
    env = make(tmp_path, ["vm", "node1"])
    path = env.get("NODEWEAVE_HOSTFILE") or env["BATCH_HOSTS_FILE"]
    with open(path, "wb") as f:
        f.write(("\ufeff" if encoding == "utf-16-be" else "").encode(encoding) + "vm\nnode1\n".encode(encoding))
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
    assert code == 2, (out, err)
    line = cli_run.one_line(err)
    assert where in line and "is UTF-16 text" in line and "iconv -f utf-16 -t utf-8" in line, line
    assert "\0" not in err and "\ufffd" not in err


def test_b6_a_utf16_hosts_file_without_its_mark_is_refused_at_its_nul(entrypoint, tmp_path):
    """B6: UTF-16 without a byte-order mark decodes as UTF-8 full of NULs; its first NUL is named, never printed."""
    path = _file(tmp_path, "h", "vm\nnode1\n".encode("utf-16-le"))
    code, out, err = entrypoint(["--explain", "--hostfile", path, "--", "train.py"])
    assert code == 2, (out, err)
    line = cli_run.one_line(err)
    assert "line 1: byte 0x00 (NUL)" in line and "\0" not in err, line


def test_b6_b8_valid_lists_still_plan(entrypoint, tmp_path):
    """B6, B8: the rule takes nothing from a list that is UTF-8 (a UTF-8 byte-order mark is still skipped)."""
    for member in sorted(SOURCES):
        env = SOURCES[member][1](tmp_path, ["vm", "node1"])
        code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
        assert code == 0 and "node1" in out, (member, err)
    env = _hostfile(tmp_path, ["vm", "node1"])
    with open(env["NODEWEAVE_HOSTFILE"], "wb") as f:
        f.write(b"\xef\xbb\xbfvm\nnode1\n")
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=env)
    assert code == 0, err
