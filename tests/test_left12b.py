"""Node-side rows the last walks left open (issue 43), each fixed as a class.

- B21/B22: one table of system folders (``systemfolders.SYSTEM_FOLDERS``) and one rule for "a folder nodeweave may
  make or write", on the host (``--runs-dir``), in the spec (``validate``: recovery.checkpoint_dir) and on a node
  (``nodeweave-entrypoint``: NODEWEAVE_CHECKPOINT_DIR): a system folder itself is never one; a folder in one
  (``/opt/ck``, ``/var/lib/ck``) only on a mount made for it (the spec's volumes; the node's /proc/self/mountinfo).
- B18: a hostfile that does not list this host with the rank given by hand, in every format and every way a rank is
  given; and what reading a long hostfile costs.

Real processes (``cli_run``), not mocks. Each test fails on the code before its fix.
"""

import pytest

import cli_run

from nodeweave.entrypoint.systemfolders import FILLED, FREE_IN, SYSTEM_FOLDERS, SYSTEM_TREES

TREES = tuple(SYSTEM_TREES)
# The members whose inside the mount clause judges: not a home's parent or a per-container folder, not one of the
# system's trees nor a folder the kernel or nodeweave fills (path_problem refuses those outright).
JUDGED_IN = sorted(m for m in SYSTEM_FOLDERS if m not in FREE_IN and m not in FILLED
                   and not any(m == t or m.startswith(t + "/") for t in TREES))

SPEC = """name: left12b
image:
  variant: cpu
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
recovery: {{enabled: true, spares: 1, checkpoint_dir: "{folder}"}}
"""

# The kernel's own format (Documentation/filesystems/proc.rst, /proc/<pid>/mountinfo): id, parent, major:minor,
# root, mount point (octal escapes for space, tab, newline, backslash), options, optional fields, -, type, source.
MOUNTINFO = """22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
24 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4008704k,nr_inodes=1002176,mode=755
25 22 8:2 / /var rw,relatime shared:3 - ext4 /dev/sda2 rw
26 22 0:41 /containers/abc/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw
{lines}"""


def _project(tmp_path, folder, volume=None):
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (project / "train.py").write_text("print(1)\n")
    text = SPEC.format(folder=folder)
    if volume:
        (tmp_path / "v").mkdir(exist_ok=True)
        text += f"volumes: [{{name: ck, host_path: {tmp_path / 'v'}, path: \"{volume}\"}}]\n"
    (project / "nodeweave.yaml").write_text(text)
    return project


def _validate(tmp_path, folder, volume=None):
    project = _project(tmp_path, folder, volume)
    env = cli_run.checkout_env({**cli_run.CLEAN, "HOME": cli_run.home_beside(project)})
    return cli_run.nodeweave("validate", "--spec", "nodeweave.yaml", cwd=project, env=env)


def _entrypoint(tmp_path, folder, mounts=None):
    (tmp_path / "w").mkdir(exist_ok=True)
    (tmp_path / "w" / "train.py").write_text("print(1)\n")
    env = {**cli_run.CLEAN, "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
           "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_CHECKPOINT_DIR": folder,
           "NODEWEAVE_METRICS": "off"}
    if mounts is not None:  # a captured tree whose mountinfo is the kernel's format
        root = tmp_path / "root"
        (root / "proc" / "self").mkdir(parents=True, exist_ok=True)
        lines = "".join(f"{40 + i} 22 0:{50 + i} / {m.replace(' ', chr(92) + '040')} rw,relatime shared:{30 + i} "
                        f"- nfs4 srv:/export/{i} rw,vers=4.2\n" for i, m in enumerate(mounts))
        (root / "proc" / "self" / "mountinfo").write_text(MOUNTINFO.format(lines=lines))
        env["NODEWEAVE_SYSROOT"] = str(root)
    return cli_run.entrypoint("--explain", "--", "train.py", cwd=tmp_path / "w", env=env)


def _host(tmp_path, folder):
    project = _project(tmp_path, "checkpoints")
    env = cli_run.checkout_env({**cli_run.CLEAN, "HOME": cli_run.home_beside(project)})
    return cli_run.nodeweave("run", "--dry-run", "--runs-dir", folder, cwd=project, env=env)


SIDES = {"host": (_host, "--runs-dir"), "validate": (_validate, "recovery.checkpoint_dir"),
         "entrypoint": (_entrypoint, "NODEWEAVE_CHECKPOINT_DIR")}


@pytest.mark.parametrize("side", sorted(SIDES))
@pytest.mark.parametrize("member", sorted(SYSTEM_FOLDERS))
def test_b21_b22_every_system_folder_of_the_one_table_is_refused_on_every_side(tmp_path, member, side):
    """B21/B22: NODEWEAVE_CHECKPOINT_DIR=/opt or /srv and recovery.checkpoint_dir: /opt were taken while --runs-dir
    /opt was refused as a system folder. Every member of the one table is refused by all three, in one line naming
    the variable, field or option and the folder."""
    run, name = SIDES[side]
    done = run(tmp_path, member)
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = cli_run.one_line(done.stderr)
    assert name in line and member in line and "accepted:" in line, line


@pytest.mark.parametrize("side", sorted(SIDES))
@pytest.mark.parametrize("member", JUDGED_IN)
def test_b21_b22_a_folder_in_a_system_folder_on_no_mount_is_refused_on_every_side(tmp_path, member, side):
    """B21/B22: NODEWEAVE_CHECKPOINT_DIR=/var/lib/ck (and recovery.checkpoint_dir) were taken where --runs-dir
    /var/lib/ck was refused as made in a system folder: a folder in a member of the table, on no mount made for
    it, is refused by all three, the line naming the system folder it lies in and what is accepted."""
    folder = f"{member}/left12b-ck"
    run, name = SIDES[side]
    done = run(tmp_path, folder)
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = cli_run.one_line(done.stderr)
    assert name in line and folder in line and f"in {member}" in line and "accepted:" in line, line
    if side != "host":
        assert "only on a mount of its own" in line, line


@pytest.mark.parametrize("side", ["validate", "entrypoint"])
@pytest.mark.parametrize("member", JUDGED_IN)
def test_b21_b22_a_folder_in_a_system_folder_on_a_mount_of_the_spec_is_taken(tmp_path, member, side):
    """B21/B22: inside a container /opt/ckpt may be a good mount (a volume the spec mounts there): the spec's
    volume (validate) and the node's /proc/self/mountinfo (entrypoint, a captured tree in the kernel's format, the
    mount point with a space written as the kernel's \\040) make the same folder fine."""
    mount = f"{member}/left12b ck"
    folder = f"{mount}/run1"
    if side == "validate":
        done = _validate(tmp_path, folder, volume=mount)
    else:
        done = _entrypoint(tmp_path, folder, mounts=[mount])
    assert done.returncode == 0, (done.stdout, done.stderr)


@pytest.mark.parametrize("member", ["/var/lib", "/opt", "/usr/local"])
def test_b21_b22_a_mount_that_is_no_place_for_the_job_does_not_count(tmp_path, member):
    """B21/B22: a separate /var partition, /etc/hosts, / are mounts, but none was made for the job's folder: a
    folder in a system folder under them is still refused on the node."""
    done = _entrypoint(tmp_path, f"{member}/left12b-ck", mounts=["/usr", "/opt/other"])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "on no mount of this node" in cli_run.one_line(done.stderr)


HOSTFILES = {  # the formats docs/entrypoint.md lists: '<host> [slots=N]', plain names, Open MPI's max_slots beside
    "slots": "".join(f"n{i} slots=1\n" for i in range(16)),
    "plain": "".join(f"n{i}\n" for i in range(16)),
    "mpi": "".join(f"n{i} slots=2 max_slots=4\n" for i in range(16)),
    "commented": "# written on the login node\n" + "".join(f"n{i} slots=1   # rack a\n" for i in range(16)),
}
RANK_WAYS = {  # every way a rank is given above the hostfile's row (entrypoint/planning/sources.py: SOURCES)
    "--node-rank": (["--node-rank", "5"], {}), "NODE_RANK": ([], {"NODE_RANK": "5"}),
    "NODEWEAVE_NODE_RANK": ([], {"NODEWEAVE_NODE_RANK": "5"}), "PET_NODE_RANK": ([], {"PET_NODE_RANK": "5"}),
    "JOB_COMPLETION_INDEX": ([], {"JOB_COMPLETION_INDEX": "5"}),
}


def _hostfile_plan(tmp_path, text, flags, env, by_variable=False):
    (tmp_path / "hf").write_text(text)
    (tmp_path / "train.py").write_text("print(1)\n")
    env = {**cli_run.CLEAN, "NODEWEAVE_METRICS": "off", **env}
    given = ["--hostfile", str(tmp_path / "hf")]
    if by_variable:
        env["NODEWEAVE_HOSTFILE"], given = str(tmp_path / "hf"), []
    return cli_run.entrypoint("--explain", *given, *flags, "--", "train.py", cwd=tmp_path, env=env)


@pytest.mark.parametrize("by_variable", [False, True], ids=["--hostfile", "NODEWEAVE_HOSTFILE"])
@pytest.mark.parametrize("way", sorted(RANK_WAYS))
@pytest.mark.parametrize("form", sorted(HOSTFILES))
def test_b18_a_hostfile_without_this_host_takes_the_rank_given_every_way(tmp_path, form, way, by_variable):
    """B18: a hostfile of other machines' names with the rank given: the rank is taken and the hostfile gives the
    count, the master and that line's slots, in every format the docs list and every way a rank is given
    (PET_NODE_RANK and an Indexed Job's JOB_COMPLETION_INDEX were refused with "give this node's rank")."""
    flags, env = RANK_WAYS[way]
    done = _hostfile_plan(tmp_path, HOSTFILES[form], flags, env, by_variable)
    assert done.returncode == 0, (done.stdout, done.stderr)
    slots = "2" if form == "mpi" else "1"
    assert (f"--nnodes 16 --nproc-per-node {slots} --node-rank 5 --master-addr n0" in done.stdout), done.stdout


@pytest.mark.parametrize("way", ["--node-rank", "NODE_RANK", "PET_NODE_RANK"])
def test_b18_a_rank_past_the_hostfile_is_named_not_asked_for(tmp_path, way):
    """B18: a rank given past the hostfile's lines was told "give this node's rank (NODE_RANK, --node-rank)",
    which it had: the line names the rank given, where it came from and the ranks the lines give."""
    flags, env = ([f.replace("5", "16") for f in RANK_WAYS[way][0]],
                  {k: "16" for k in RANK_WAYS[way][1]})
    done = _hostfile_plan(tmp_path, HOSTFILES["slots"], flags, env)
    assert done.returncode == 3, (done.stdout, done.stderr)
    line = cli_run.one_line(done.stderr)
    assert f"{way}" in line and "16" in line and "ranks 0 to 15" in line and "give this node's rank" not in line, line


def _cpu_of(tmp_path, lines):
    import resource

    folder = tmp_path / str(lines)
    folder.mkdir()
    text = "".join(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}\n" for i in range(1, lines + 1))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = _hostfile_plan(folder, text, ["--node-rank", "5"], {})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_b18_an_8192_line_hostfile_costs_a_node_little_more_than_8_lines(tmp_path):
    """B18: every node paid 2.5 s of CPU (13 s wall on a loaded machine) reading an 8,192-line hostfile of
    addresses: each line was compared with every line before it for a duplicate. CPU time (which load inflates
    far less than wall time): the 8,192-line start costs under 0.6 s more than the 8-line one."""
    small, large = _cpu_of(tmp_path, 8), _cpu_of(tmp_path, 8192)
    assert large - small < 0.6, (small, large)
