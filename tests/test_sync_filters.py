"""Filter rules: gitignore translation, defaults, secrets, and agreement with real rsync."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from nodeweave.errors import UsageError
from nodeweave.sync.filters import Rule, build_filter, gitignore_rules


def make_tree(root, paths):
    for rel in paths:
        p = root / rel
        if rel.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(rel)


TREE = [
    "train.py", "pkg/__init__.py", "pkg/__pycache__/m.cpython-311.pyc", "pkg/model.py",
    ".venv/bin/python", ".git/HEAD", "ckpt/step1.pt", "weights/model.safetensors",
    "outputs/2026-11-26/log.txt", "wandb/run/files.json", "data/train.bin", "data/keep.bin",
    "data/sub/x.log", "logs/a.log", "logs/important.log", "notes/todo.md", "docs/api/index.md",
    "a/x/y/b/file.txt", "a/b/file.txt", ".env", ".env.local", "config/.env.example",
    "keys/server.pem", "deploy/.ssh/id_ed25519", "home/.netrc", "certs/tls.key",
    "build/out.o", "src/build/keep.c", "weird name [1].txt", "ünïcode.py",
]

IGNORE = """# project rules
*.log
!important.log
/build/
data/*.bin
!data/keep.bin
a/**/b/
\\#literal
docs/api
"""


@pytest.fixture()
def tree(tmp_path):
    src = tmp_path / "src"
    make_tree(src, TREE)
    os.symlink("train.py", src / "link.py")
    (src / ".nodeweaveignore").write_text(IGNORE)
    return src


def test_default_excludes_secrets_and_ignore_file(tree):
    fs = build_filter(tree).walk(tree)
    files = set(fs.files)
    assert {"train.py", "pkg/model.py", "pkg/__init__.py", "data/keep.bin", "logs/important.log",
            "src/build/keep.c", "weird name [1].txt", "ünïcode.py", "link.py", "notes/todo.md",
            "config/.env.example", ".nodeweaveignore"} <= files
    for gone in ("pkg/__pycache__/m.cpython-311.pyc", ".venv/bin/python", ".git/HEAD", "ckpt/step1.pt",
                 "weights/model.safetensors", "outputs/2026-11-26/log.txt", "wandb/run/files.json",
                 "data/train.bin", "data/sub/x.log", "logs/a.log", "build/out.o", "a/x/y/b/file.txt",
                 "a/b/file.txt", "docs/api/index.md", ".env", ".env.local", "keys/server.pem",
                 "deploy/.ssh/id_ed25519", "home/.netrc", "certs/tls.key"):
        assert gone not in files, gone
    assert fs.files["link.py"] == "l"
    assert fs.held_back_secrets == [".env", ".env.local", "certs/tls.key", "deploy/.ssh/",
                                    "home/.netrc", "keys/server.pem"]


def test_include_secrets_and_no_defaults(tree):
    fs = build_filter(tree, include_secrets=True, default_excludes=False).walk(tree)
    assert {".env", "keys/server.pem", "deploy/.ssh/id_ed25519", ".venv/bin/python", "ckpt/step1.pt"} <= set(fs.files)
    assert fs.held_back_secrets == []


def test_ignore_file_cannot_re_include_secrets_but_can_re_include_defaults(tree):
    (tree / ".nodeweaveignore").write_text("!.env\n!*.pt\n")
    files = set(build_filter(tree).walk(tree).files)
    assert ".env" not in files and "ckpt/step1.pt" in files


def test_cli_excludes_win_over_the_ignore_file(tree):
    files = set(build_filter(tree, extra_excludes=["important.log", "notes/"]).walk(tree).files)
    assert "logs/important.log" not in files and "notes/todo.md" not in files


def test_gitignore_translation_is_reversed_into_first_match_order():
    rules = gitignore_rules(["*.log", "!keep.log", "/build/", "a/b", "**/cache/", "x/**/y"], "f")
    assert [(r.action, r.pattern) for r in rules] == [
        ("-", "/x/y"), ("-", "/x/**/y"), ("-", "cache/"), ("-", "/a/b"), ("-", "/build/"),
        ("+", "keep.log"), ("-", "*.log")]
    assert rules[0].origin == "f:6"


def test_a_pattern_that_matches_nothing_useful_is_refused_with_its_line():
    with pytest.raises(UsageError, match=r"f:2: pattern '/'"):
        gitignore_rules(["ok", "/"], "f")


def rsync_file_list(src, rules: "list[Rule]") -> "set[str]":
    out = subprocess.run(["rsync", "-rl", "--dry-run", "--out-format=%n",
                          *[r.rsync_arg() for r in rules], f"{src}/", f"{src.parent}/nowhere/"],
                         capture_output=True, text=True, check=True)
    return {line for line in out.stdout.splitlines() if line and not line.endswith("/")}


def missing(*tools: str) -> "str | None":
    """Why a test cannot run here: the tools of ``tools`` not on PATH, with the Debian packages that hold them."""
    absent = [tool for tool in tools if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not installed (apt-get install {' '.join(absent)})" if absent else None


@pytest.mark.skipif(bool(missing("rsync")), reason=str(missing("rsync")))
def test_the_python_walk_and_real_rsync_select_the_same_files(tree):
    """The file set we digest must be exactly what rsync sends."""
    for kwargs in ({}, {"include_secrets": True}, {"default_excludes": False},
                   {"extra_excludes": ["*.md", "!docs/**/*.md", "ünïcode.py"]}):
        filt = build_filter(tree, **kwargs)
        assert set(filt.walk(tree).files) == rsync_file_list(tree, filt.rules), kwargs


@pytest.mark.skipif(bool(missing("git", "rsync")), reason=str(missing("git", "rsync")))
def test_what_git_ignores_is_left_out_nested_rules_included(tree):
    shutil.rmtree(tree / ".git")  # the fixture's fake one
    (tree / "pkg" / ".gitignore").write_text("model.py\n")
    (tree / "wild[1].txt").write_text("w")
    (tree / ".gitignore").write_text("/notes/\n*.md\nwild[[]1].txt\n")
    subprocess.run(["git", "-C", str(tree), "init", "-q"], check=True)
    filt = build_filter(tree)
    files = set(filt.walk(tree).files)
    assert "notes/todo.md" not in files and "docs/api/index.md" not in files
    assert "pkg/model.py" not in files and "wild[1].txt" not in files
    assert "pkg/__init__.py" in files and "train.py" in files
    assert files == rsync_file_list(tree, filt.rules)
    assert "pkg/model.py" in set(build_filter(tree, use_gitignore=False).walk(tree).files)
