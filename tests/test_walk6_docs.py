"""Walk 6, W48: the model resumable script is named where a user writes their own.

recovery.md's "What the training script sees" and README's recovery paragraph link examples/resilient_train.py,
and the lines recovery.md quotes are the ones that file really has (the variable it reads, the rename last).
Fails before the fix (only benchmarks.md named it).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_recovery_md_and_readme_link_the_script_to_copy():
    section = (REPO / "docs" / "recovery.md").read_text().split("## What the training script sees", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "(../examples/resilient_train.py)" in section
    assert "examples/resilient_train.py" in (REPO / "README.md").read_text()
    script = (REPO / "examples" / "resilient_train.py").read_text()
    for quoted in ('os.environ.get("NODEWEAVE_RESUME_FROM")', 'os.replace(', '.tmp"', "weights_only=True"):
        assert quoted in section and quoted in script, quoted


def test_make_demo_says_what_it_downloads_before_it_starts():
    """W55: `make demo` depends on `install` (DeepSpeed's offline wheel is built against the venv's torch), so
    `make help` and README say so and name `make cli` for the command line alone; an engine-less demo needs no
    more than `make cli` gives (examples/demo.sh calls nodeweave and nodeweave-entrypoint only)."""
    import re
    import subprocess

    makefile = (REPO / "Makefile").read_text()
    demo = re.search(r"^demo: (\S+) ## (.*)$", makefile, re.M)
    assert demo, "the demo target"
    if demo.group(1) == "install":
        assert "make install" in demo.group(2) and "torch" in demo.group(2) and "make cli" in demo.group(2)
        readme = (REPO / "README.md").read_text()
        assert "`make demo` runs `make install`" in readme and "several GB" in readme
    helped = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert demo.group(2)[:40] in helped
    script = (REPO / "examples" / "demo.sh").read_text().split('if ! command -v podman', 1)[0]
    assert set(re.findall(r'"\$bin/([a-z-]+)"', script)) <= {"nodeweave", "nodeweave-entrypoint"}
