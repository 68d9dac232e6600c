"""walk12b rows B8, B10, B14 (and B9's cost) of issue 43, the twelfth walk: fixed by fix12b3.

Each test's docstring starts with the row ids it covers.
"""

from __future__ import annotations

import re

import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

RECOVERY = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_EXCHANGE_ALLOW": "address"}


def _hostfile(lines, slots=(8,)):
    return "".join(f"gpu{i:05d} slots={slots[i % len(slots)]}\n" for i in range(lines))


@pytest.mark.parametrize("given", ["--hostfile", "NODEWEAVE_HOSTFILE"])
def test_b8_a_hostfiles_lines_are_an_allocation_whose_training_count_the_hint_gives(entrypoint, tmp_path, given):
    """B8: an 8192-line hostfile under recovery with 1 spare was told `accepted: NODEWEAVE_NNODES=8191`, and the
    value it offered was then refused as over the typed bound of 2,048, while SLURM_NNODES=4097 let 4096 through.
    A hostfile's lines are the scheduler's count as SLURM_NNODES is (the one rule, ``training_most_of``): the
    training count may go up to the lines less the spares, not past them."""
    (tmp_path / "hosts").write_text(_hostfile(4097))
    argv = ["--explain", "--node-rank", "0"] + (["--hostfile", "hosts"] if given == "--hostfile" else [])
    env = dict(RECOVERY, **({"NODEWEAVE_HOSTFILE": "hosts"} if given != "--hostfile" else {}))
    code, out, err = entrypoint(argv + ["--", "train.py"], env)
    assert code == 3, err
    hint = re.search(r"accepted: (NODEWEAVE_NNODES=(\d+))", err)
    assert hint and hint.group(2) == "4096", err
    code, out, err = entrypoint(argv + ["--", "train.py"], dict(env, NODEWEAVE_NNODES=hint.group(2)))
    assert code == 0, err
    code, out, err = entrypoint(argv + ["--", "train.py"], dict(env, NODEWEAVE_NNODES="4097"))
    assert code == 2 and "at most 4096" in err, err


def _rank_way(way, rank, names):
    """argv and env that give this node's place in a hostfile of ``names`` one ``way``: a rank given (the three
    ways the rank table reads first) or this host's own name on its line."""
    import socket

    if way == "name":
        names[rank] = socket.gethostname()
        return [], {}
    if way == "--node-rank":
        return ["--node-rank", str(rank)], {}
    return [], {way: str(rank)}


@pytest.mark.parametrize("way", ["--node-rank", "NODE_RANK", "NODEWEAVE_NODE_RANK", "name"])
def test_b10_uneven_hostfile_slots_export_their_sum_as_world_size_on_every_node(entrypoint, tmp_path, way):
    """B10: a hostfile of `a slots=1` / `b slots=2` (a job of 3 ranks) made node 0 export WORLD_SIZE=2 and node 1
    WORLD_SIZE=4, with no word: nodes times this node's slots. Every node now exports the lines' sum, whichever
    way its rank came, and a WORLD_SIZE already set is judged against that sum."""
    for rank in (0, 1):
        names = ["hosta", "hostb"]
        argv, env = _rank_way(way, rank, names)
        (tmp_path / "hosts").write_text(f"{names[0]} slots=1\n{names[1]} slots=2\n")
        code, out, err = entrypoint(["--explain", "--hostfile", "hosts"] + argv + ["--", "train.py"],
                                    dict(env, NODEWEAVE_EXCHANGE_ALLOW="address"))
        assert code == 0, err
        assert re.search(r"export WORLD_SIZE=3\b", out), out
        code, out, err = entrypoint(["--explain", "--hostfile", "hosts"] + argv + ["--", "train.py"],
                                    dict(env, NODEWEAVE_EXCHANGE_ALLOW="address", WORLD_SIZE="4"))  # node 1 exported 4
        assert code == 3 and "accepted: 3 (processes)" in err, err


@pytest.mark.parametrize("way", ["--node-rank", "NODE_RANK", "name"])
def test_b10_uneven_hostfile_slots_with_the_exchange_off_are_refused_whichever_way_the_rank_came(entrypoint,
                                                                                                tmp_path, way):
    """B10: the refusal of uneven slots with the check-in exchange off (nothing shares the counts) was made only
    for a host found by its name; a rank given skipped it."""
    names = ["hosta", "hostb"]
    argv, env = _rank_way(way, 1, names)
    (tmp_path / "hosts").write_text(f"{names[0]} slots=1\n{names[1]} slots=2\n")
    code, out, err = entrypoint(["--explain", "--hostfile", "hosts"] + argv + ["--", "train.py"],
                                dict(env, NODEWEAVE_EXCHANGE="off"))
    assert code == 3 and "gives its hosts different slots" in err and "exchange that shares them is off" in err, err


MOUNTINFO = """22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
26 22 0:41 /containers/abc/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw
{lines}"""


def _checkpoint_plan(tmp_path, folder, mounts):
    """``--explain`` of a recovery node whose checkpoint folder is ``folder``, in a captured tree whose
    /proc/self/mountinfo (the kernel's format) lists ``/`` and ``mounts``: (exit code, the plan's ``!`` lines)."""
    import cli_run

    (tmp_path / "w").mkdir(exist_ok=True)
    (tmp_path / "w" / "train.py").write_text("print(1)\n")
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{40 + i} 22 0:{50 + i} / {m} rw,relatime - nfs4 srv:/export/{i} rw\n" for i, m in enumerate(mounts))
    (root / "proc" / "self" / "mountinfo").write_text(MOUNTINFO.format(lines=lines))
    env = {**cli_run.CLEAN, "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
           "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_CHECKPOINT_DIR": folder,
           "NODEWEAVE_METRICS": "off", "NODEWEAVE_SYSROOT": str(root)}
    done = cli_run.entrypoint("--explain", "--", "train.py", cwd=tmp_path / "w", env=env)
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if "checkpoint" in line.lower()
                             and line.strip().startswith("!")]


@pytest.mark.parametrize("folder", ["/ck", "/nodeweave", "/data/ck", "/data/run1/ck"])
def test_b14_a_checkpoint_folder_in_root_on_no_mount_is_said_as_validate_says_it(tmp_path, folder):
    """B14: NODEWEAVE_CHECKPOINT_DIR=/ck (and /nodeweave, made directly in /) on no mount was taken without a
    word, while validate notes the same recovery.checkpoint_dir on no volume and /tmp/ck, /run/ck get the
    per-container warning: in a container it is the image's own layer. The node now warns
    (`checkpoint-dir-unmounted`), by its /proc/self/mountinfo; on a mount at the folder or above it, nothing."""
    code, said = _checkpoint_plan(tmp_path, folder, [])
    assert code == 0 and any("is on no mount of this node" in line and "NODEWEAVE_CHECKPOINT_DIR" in line
                             for line in said), said
    top = "/" + folder.split("/")[1]
    code, said = _checkpoint_plan(tmp_path, folder, [top])
    assert code == 0 and not any("is on no mount" in line for line in said), said
