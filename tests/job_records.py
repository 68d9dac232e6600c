"""Where a node keeps a job's records (``runstate.job_dir``: ``$TMPDIR/nodeweave/jobs/<job id>-<master port>/``),
for tests that read them from a node's TMPDIR without knowing the job's port."""

from pathlib import Path


def job_record(tmpdir, name="recovery.json"):
    """The one job's record ``name`` under ``tmpdir`` (a node's TMPDIR): exactly one job's there, or the test fails
    naming what it found."""
    found = sorted(Path(tmpdir).glob(f"nodeweave/jobs/*/{name}"))
    assert len(found) == 1, f"{name} of one job under {tmpdir}: {found}"
    return found[0]
