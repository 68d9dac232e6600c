"""walk17 rows fixed by fix19d: a folder a node writes into is judged where it really is, and against every claim
above and below it."""

import os

from nodeweave.entrypoint import systemfolders


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
