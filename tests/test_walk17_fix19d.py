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
