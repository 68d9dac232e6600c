"""`image build` reads what the Dockerfile copies before any layer, and refuses a context that lacks it.

A team's folder holds its spec and what `nodeweave render` wrote, not nodeweave's sources: the
rendered Dockerfile copies the zipapp from there, and a folder without it (or a .dockerignore
that keeps it out) is named, exit 2, in --dry-run too, where the engine would only have failed
after the torch layers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cli_run
from nodeweave.build.sources import DockerIgnore, copied_sources, missing_sources

SPEC = "name: team\nimage: {variant: cpu}\nlauncher: {script: train.py}\n"


def nodeweave(*args, cwd: Path):
    return cli_run.run([*cli_run.NODEWEAVE, *args],
                          cwd=cwd, timeout=120)


def test_copy_and_add_sources_are_read_as_the_dockerfile_reference_says():
    text = """# syntax=docker/dockerfile:1
FROM base AS one
COPY --chown=1000:0 a.txt \\
     b/ /dest/
# a comment
ADD ["with space.txt", "/x/"]
COPY --from=one /opt /opt
ADD https://example.com/f.tar.gz /tmp/
RUN echo COPY not-a-copy /x
copy ./lower.txt /y
"""
    assert copied_sources(text) == ["a.txt", "b", "with space.txt", "lower.txt"]


def test_dockerignore_last_match_wins_and_a_folder_above_counts():
    ignore = DockerIgnore(["*", "!entrypoint/nodeweave-entrypoint.pyz", "!src/", "**/__pycache__", "src/secret"])
    assert not ignore.excludes("entrypoint/nodeweave-entrypoint.pyz")
    assert ignore.excludes("entrypoint/other.pyz")
    assert not ignore.excludes("src/pkg/mod.py")
    assert ignore.excludes("src/pkg/__pycache__/mod.pyc")
    assert ignore.excludes("src/secret/key")
    assert ignore.excludes("README.md")
    assert not DockerIgnore([]).excludes("anything/at/all")


def test_missing_and_ignored_sources_are_each_named(tmp_path):
    (tmp_path / "present.txt").write_text("x")
    (tmp_path / "hidden.txt").write_text("x")
    (tmp_path / ".dockerignore").write_text("hidden.txt\n")
    text = "FROM x\nCOPY present.txt absent.txt /a/\nCOPY hidden.txt /b/\n"
    assert missing_sources(tmp_path, text) == [f"absent.txt is not in {tmp_path}",
                                               f"hidden.txt is kept out by {tmp_path / '.dockerignore'}"]


def test_a_team_folder_without_the_rendered_entrypoint_is_refused_before_the_build(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    refused = nodeweave("image", "build", "cpu", "--dry-run", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "entrypoint/nodeweave-entrypoint.pyz is not in" in refused.stderr
    assert "nodeweave render entrypoint" in refused.stderr and "Traceback" not in refused.stderr

    assert nodeweave("render", "all", cwd=tmp_path).returncode == 0
    planned = nodeweave("image", "build", "cpu", "--dry-run", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "buildx build" in planned.stdout
    dockerfile = (tmp_path / "images" / "cpu" / "Dockerfile").read_text()
    assert "COPY entrypoint/nodeweave-entrypoint.pyz /opt/nodeweave/nodeweave-entrypoint.pyz" in dockerfile
    assert "COPY src" not in dockerfile and "pyproject.toml" not in dockerfile


def test_a_dockerignore_that_keeps_the_entrypoint_out_is_named(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    assert nodeweave("render", "all", cwd=tmp_path).returncode == 0
    ignore = tmp_path / ".dockerignore"
    ignore.write_text(ignore.read_text() + "entrypoint/\n")
    refused = nodeweave("image", "build", "cpu", "--dry-run", cwd=tmp_path)
    assert refused.returncode == 2
    assert f"entrypoint/nodeweave-entrypoint.pyz is kept out by {ignore}" in refused.stderr


def test_another_context_lacking_the_entrypoint_is_refused(tmp_path):
    team, other = tmp_path / "team", tmp_path / "other"
    team.mkdir()
    other.mkdir()
    (team / "nodeweave.yaml").write_text(SPEC)
    assert nodeweave("render", "all", cwd=team).returncode == 0
    refused = nodeweave("image", "build", "cpu", "--dry-run", "--context", str(other), cwd=team)
    assert refused.returncode == 2 and f"is not in {other}" in refused.stderr, refused.stderr


def test_a_stale_rendered_entrypoint_is_refreshed_and_a_users_own_is_kept(tmp_path):
    from nodeweave.build.context import refresh_entrypoint
    from nodeweave.targets.zipapp import PATH, build, package_root

    (tmp_path / "entrypoint").mkdir()
    target = tmp_path / PATH
    current = build(package_root())
    stale = current.replace(b"nodeweave-entrypoint", b"nodeweave-entrypoinT", 1)
    target.write_bytes(stale)
    assert "would be refreshed" in refresh_entrypoint(tmp_path, write=False)
    assert target.read_bytes() == stale
    assert "refreshed" in refresh_entrypoint(tmp_path)
    assert target.read_bytes() == current and refresh_entrypoint(tmp_path) is None
    own = b"#!/usr/bin/env python3\n" + current.split(b"\n", 2)[2]  # the mark line left out: the user's file
    target.write_bytes(own)
    assert refresh_entrypoint(tmp_path) is None and target.read_bytes() == own
