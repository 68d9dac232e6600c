"""The hosts target writes compose/node.yaml (and the bare hosts' files) into a remote folder the hosts may share (an
NFS home): every host's write lands at once. Each must replace the file in one rename, so no host ever reads another's
half-written file (CI once saw `up` refuse its own node.yaml as the team's: it had no header yet)."""

import subprocess
import threading

from nodeweave.cluster.backends.hosts import WRITE_FILE, WRITE_RENDERED

HEADER = "# rendered by nodeweave: do not edit\n"
BODY = HEADER + "services:\n" + "  x: 1\n" * 200_000  # ~1.4 MB: a write takes long enough to be caught mid-way


def _write(argv, folder, text):
    return subprocess.run([*argv, str(folder), "node.yaml", "compose/node.yaml"], input=text, text=True,
                          capture_output=True, timeout=60)


def test_writers_on_a_shared_folder_never_see_a_half_written_file(tmp_path):
    folder = tmp_path / "remote" / "compose"
    assert _write(WRITE_RENDERED, folder, BODY).returncode == 0
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            with open(folder / "node.yaml") as f:
                seen.append(f.read(len(HEADER)) == HEADER)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        writers = [subprocess.Popen([*WRITE_RENDERED, str(folder), "node.yaml", "compose/node.yaml"],
                                    stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
        results = [w.communicate(BODY, timeout=60) for w in writers]
    finally:
        stop.set()
        reader.join()
    assert all(w.returncode == 0 for w in writers), [err for _, err in results]
    assert seen and all(seen), f"{seen.count(False)} of {len(seen)} reads found the file without its header"
    assert (folder / "node.yaml").read_text() == BODY
    assert [p.name for p in folder.iterdir()] == ["node.yaml"]  # no temporary file left behind


def test_a_teams_file_is_still_refused_and_kept(tmp_path):
    folder = tmp_path / "compose"
    folder.mkdir()
    (folder / "node.yaml").write_text("services: {mine: {}}\n")
    done = _write(WRITE_RENDERED, folder, BODY)
    assert done.returncode == 3 and "has no nodeweave header, so it is yours" in done.stderr, done.stderr
    assert (folder / "node.yaml").read_text() == "services: {mine: {}}\n"


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    folder = tmp_path / "marks"
    assert _write(WRITE_FILE, folder, "old\n").returncode == 0
    (folder / "node.yaml").chmod(0o444)
    folder.chmod(0o555)  # the rename cannot happen (root ignores modes: then the write simply succeeds)
    try:
        done = _write(WRITE_FILE, folder, "new\n")
    finally:
        folder.chmod(0o755)
    text = (folder / "node.yaml").read_text()
    assert (done.returncode != 0 and text == "old\n") or (done.returncode == 0 and text == "new\n"), done
    assert [p.name for p in folder.iterdir()] == ["node.yaml"]
