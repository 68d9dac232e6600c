""".ci/run's own shell, on a machine that never ran it: its disk lines must not end the run.

On a new machine /var/lib/containers does not exist until podman is installed; ``df`` on it exits 1, and
under ``set -euo pipefail`` the first disk line ended the whole run (issue 43). The functions are taken
from the script itself and run under the same shell options.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _functions() -> str:
    """``existing`` and ``disk`` as .ci/run defines them."""
    text = (REPO / ".ci" / "run").read_text()
    found = []
    for name in ("existing", "disk"):
        start = text.index(f"\n{name}() {{") + 1
        found.append(text[start:text.index("\n}\n", start) + 3])
    return "".join(found)


def _bash(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = "set -euo pipefail\n" + _functions() + body + "\necho reached-the-end\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_a_disk_line_for_a_folder_not_made_yet_names_its_nearest_parent_and_the_run_goes_on(tmp_path):
    missing = tmp_path / "var" / "lib" / "containers"
    out = _bash(f'disk "at the start" / "{missing}" /tmp\nexisting "{missing}"', tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("reached-the-end"), out.stdout
    assert "== disk at the start: " in out.stdout and " free on /" in out.stdout, out.stdout
    assert f"\n{tmp_path}\n" in out.stdout, "the nearest existing parent of the missing folder"


def test_the_disk_lines_default_to_the_folders_the_engines_and_tests_write_even_where_none_exists(tmp_path):
    out = _bash('cd "$(mktemp -d)"; rmdir "$PWD"; disk "before the tests"', tmp_path)
    assert out.returncode == 0, out.stderr
    assert "== disk before the tests: " in out.stdout and out.stdout.rstrip().endswith("reached-the-end")


# .ci/apt-update-once.sh: skips `apt-get update` only where every configured source's lists are fresh. A root
# debootstrapped minutes before holds a fresh list of the one suite debootstrap read and none of its other
# sources; the script took that one list for all of them and installed without an update (cleanci12's clean root).
SOURCES = ("deb.debian.org_debian_dists_bookworm_", "deb.debian.org_debian_dists_bookworm-updates_",
           "deb.debian.org_debian-security_dists_bookworm-security_")


def _apt_once(tmp_path: Path, fresh=SOURCES, old=(),
              print_uris=True) -> tuple[subprocess.CompletedProcess, bool]:
    """Run the script with apt-get and apt-config faked on PATH and its lists in tmp_path: (the result, whether
    it updated)."""
    lists, bin_dir, log = tmp_path / "lists", tmp_path / "bin", tmp_path / "apt.log"
    lists.mkdir()
    bin_dir.mkdir()
    # debootstrap's own files: its suite's Release (not InRelease) and Packages
    for base in fresh:
        (lists / f"{base}Release").write_text("")
        (lists / f"{base}main_binary-amd64_Packages").write_text("")
    for base in old:
        (lists / f"{base}InRelease").write_text("")
        subprocess.run(["touch", "-d", "2 hours ago", str(lists / f"{base}InRelease")], check=True)
    uris = "".join(f"echo \"'http://x/{base}InRelease' {base}InRelease 0 \"\n"
                   f"echo \"'http://x/{base}Packages.xz' {base}main_binary-amd64_Packages 0 \"\n" for base in SOURCES)
    (bin_dir / "apt-config").write_text(f"#!/bin/sh\necho \"lists='{lists}/'\"\n")
    (bin_dir / "apt-get").write_text(
        "#!/bin/bash\n"
        f'if [ "$*" = "update --print-uris" ]; then {"" if print_uris else "exit 100;"}\n{uris}exit 0; fi\n'
        f'echo "$*" >> "{log}"\n')
    for tool in ("apt-config", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    out = subprocess.run(["bash", str(REPO / ".ci" / "apt-update-once.sh")], capture_output=True, text=True,
                         timeout=60, env=env)
    return out, log.exists() and "update -qq" in log.read_text()


def test_apt_update_once_skips_the_update_only_where_every_source_was_fetched_in_the_last_hour(tmp_path):
    out, updated = _apt_once(tmp_path)
    assert out.returncode == 0, out.stderr
    assert not updated, out.stdout
    assert "apt lists are fresh (all 3 sources" in out.stdout, out.stdout


def test_apt_update_once_updates_a_fresh_debootstrapped_root_that_holds_the_list_of_one_source_only(tmp_path):
    out, updated = _apt_once(tmp_path, fresh=SOURCES[:1])
    assert out.returncode == 0, out.stderr
    assert updated, out.stdout
    assert "apt-get update: no list of deb.debian.org_debian_dists_bookworm-updates fetched in the last hour" \
        in out.stdout, out.stdout


def test_apt_update_once_updates_where_one_sources_list_is_older_than_an_hour(tmp_path):
    out, updated = _apt_once(tmp_path, fresh=SOURCES[:2], old=SOURCES[2:])
    assert out.returncode == 0, out.stderr
    assert updated and "bookworm-security fetched in the last hour" in out.stdout, out.stdout


def test_apt_update_once_updates_where_apt_names_no_source(tmp_path):
    out, updated = _apt_once(tmp_path, print_uris=False)
    assert out.returncode == 0, out.stderr
    assert updated and "named no source" in out.stdout, out.stdout
