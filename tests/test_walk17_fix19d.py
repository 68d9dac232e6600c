"""walk17 rows fixed by fix19d: a folder a node writes into is judged where it really is, and against every claim
above and below it."""

import os

from nodeweave.entrypoint import systemfolders

from test_walk13_fix14d import save


def test_tmpdir_that_is_a_system_folder_itself_is_refused_as_one_inside_it(tmp_path):
    """walk17b B9: TMPDIR=/srv, /etc, /usr, /, /var, /opt, /boot passed (they exist) while /usr/x was refused; the
    node's records went into /srv/nodeweave. The temporary folders, a user's own folder and root's home pass."""
    for folder in ("/srv", "/etc", "/usr", "/", "/var", "/opt", "/boot", "//etc", "/etc/ssh"):
        problem = systemfolders.state_root_problem({"TMPDIR": folder})
        assert problem and problem.startswith(f"TMPDIR={folder}: "), (folder, problem)
        assert "system folder" in problem or "root of the file system" in problem or "inside /etc" in problem
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    problem = systemfolders.state_root_problem({"TMPDIR": str(link)})
    assert problem and "/etc (where" in problem, problem
    for folder in ("/tmp", str(tmp_path)):
        assert systemfolders.state_root_problem({"TMPDIR": folder}) is None, folder


def _claim_by_another_job(folder, job):
    """A live claim on ``folder`` as another job's node 0 on this host writes it: a process that runs now."""
    import json
    import socket
    import subprocess

    holder = subprocess.Popen(["sleep", "60"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".nodeweave-claim").write_text(json.dumps(
        {"job": job, "run": None, "host": socket.gethostname(), "pid": holder.pid, "since": 0}))
    return holder


def test_checkpoint_folder_claim_meets_claims_above_and_below(tmp_path):
    """walk17b B19: a job over ckcl/sub started while job w17b claimed ckcl (and the other way round), and w17b's
    node 0 handed out the other job's ckcl/sub/step-200.pt. Refused, exit 3, as the same folder is; the scan
    passes a subfolder another job claims, said."""
    from nodeweave.entrypoint.errors import EXIT_TOPOLOGY
    from nodeweave.entrypoint.recovery import checkpoints
    from nodeweave.entrypoint.running.claim import refusal

    outer, inner = tmp_path / "ckcl", tmp_path / "ckcl" / "sub"
    holder = _claim_by_another_job(outer, "w17b")
    try:
        refused = refusal(str(inner), "w17bb", None)
        assert refused is not None and refused.exit_code == EXIT_TOPOLOGY
        assert f"checkpoint_dir {inner} is inside {outer}, which is in use by another job now: job 'w17b'" in str(
            refused)
        assert refusal(str(tmp_path / "elsewhere"), "w17bb", None) is None
    finally:
        holder.kill()
        holder.wait()
    (outer / ".nodeweave-claim").unlink()
    holder = _claim_by_another_job(inner, "w17bb")
    try:
        save(inner / "step-200.pt")
        save(outer / "step-10.pt")
        refused = refusal(str(outer), "w17b", None)
        assert refused is not None and refused.exit_code == EXIT_TOPOLOGY
        assert f"checkpoint_dir {outer} holds {inner}, which is in use by another job now: job 'w17bb'" in str(
            refused)
        found = checkpoints.scan(str(outer))
        assert found.newest().path == str(outer / "step-10.pt"), found.newest()
        assert [path for path, why in found.unscanned if "claims this folder now" in why] == [str(inner)]
    finally:
        holder.kill()
        holder.wait()
    assert refusal(str(outer), "w17b", None) is None  # its writer gone: a job that ended
    assert checkpoints.scan(str(outer)).newest().path == str(inner / "step-200.pt")  # the save a claim passed over


def test_a_folder_not_made_yet_below_a_link_is_judged_where_it_would_be_made(tmp_path, monkeypatch, capsys):
    """walk17b B4: ``lnrel/newsub`` (lnrel -> real, there) was refused as 'a link to nothing (real does not
    exist)', in validate and on a node alike, while ``real/newsub`` was taken; ``lnnw/sub`` (-> .nodeweave) was
    refused for the false reason. Judged where it would be made; a link that does lead to nothing still is one."""
    from cli_run import entrypoint
    from cli_run import in_process as run_cli

    work = tmp_path / "proj"
    (work / "real").mkdir(parents=True)
    (work / ".nodeweave").mkdir()
    (work / "train.py").write_text("print('training')\n")
    (work / "lnrel").symlink_to("real")
    (work / "lnws").symlink_to(".")
    (work / "lnnw").symlink_to(".nodeweave")
    (work / "lndead").symlink_to("nowhere")
    node0 = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1",
             "NODEWEAVE_RECOVERY": "on"}
    monkeypatch.chdir(work)
    for folder in ("lnrel/newsub", "lnws/newck"):
        done = entrypoint("--explain", "--", "train.py", cwd=work, env={**node0, "NODEWEAVE_CHECKPOINT_DIR": folder})
        assert done.returncode == 0 and "not there yet" in done.stdout, done.stdout + done.stderr
        (work / "nodeweave.yaml").write_text(
            "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
            f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n")
        code, out, err = run_cli(capsys, "validate")
        assert "link to nothing" not in err and "recovery.checkpoint_dir" not in err, err
    for folder, what in (("lnnw/sub", "in .nodeweave/, nodeweave's own state"),
                         ("lndead/x", "a link to nothing (nowhere does not exist)")):
        done = entrypoint("--explain", "--", "train.py", cwd=work, env={**node0, "NODEWEAVE_CHECKPOINT_DIR": folder})
        assert done.returncode == 2 and what in done.stderr, done.stderr
    (work / ".nodeweave").rmdir()  # a link to nodeweave's folder not made yet is still nodeweave's
    done = entrypoint("--explain", "--", "train.py", cwd=work, env={**node0, "NODEWEAVE_CHECKPOINT_DIR": "lnnw/sub"})
    assert done.returncode == 2 and "in .nodeweave/" in done.stderr, done.stderr


def test_the_checkpoint_folder_mount_note_knows_the_spec_s_node_local_mounts(tmp_path, monkeypatch, capsys):
    """walk17b B16: ``/cache/ck`` was noted as 'on no mount of the spec' while cache.path mounts /cache; the note
    names the mount it is on and what it is: each host's (compose, Slurm) or each pod's (Kubernetes emptyDir) own,
    as a ``cache:`` volume is. A volume of shared storage answers the note."""
    from cli_run import in_process as run_cli

    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    head = ("name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
            "cache: {path: /cache, host_path: ~/.cache/nodeweave}\n")
    for folder, volumes, said in (
            ("/cache/ck", "", "is on cache.path (/cache), which each host or pod has to itself"),
            ("/scratch/ck", "volumes: [{name: scr, path: /scratch, cache: 50Gi}]\n",
             "is on volume scr (/scratch, cache: 50Gi), node-local scratch"),
            ("/cache/ck/run1", f"volumes: [{{name: ck, path: /cache/ck, host_path: {tmp_path}}}]\n", None)):
        (tmp_path / "nodeweave.yaml").write_text(
            head + volumes + f"recovery: {{enabled: true, checkpoint_dir: {folder}, spares: 1}}\n")
        code, out, err = run_cli(capsys, "validate")
        assert code == 0 and "on no mount of the spec" not in err, err
        if said:
            assert f"recovery.checkpoint_dir: {folder} {said}" in err and "emptyDir of each pod" in err, err
        else:
            assert "recovery.checkpoint_dir" not in err, err
