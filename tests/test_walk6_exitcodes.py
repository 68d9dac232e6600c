"""Walk 6, W54: recovery's final exit codes come from ONE table.

README's exit table says 8, 9 and 10 are each a recovery end a restart would only repeat. Every restart policy
nodeweave renders or keeps (the Indexed Job's and the JobSet's ``podFailurePolicy``, a compose container's
``ended_before``, which also stops on a job that finished or was stopped on purpose) must stop on exactly those
codes, read from the entrypoint's ``RECOVERY_FINAL``.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from nodeweave.entrypoint.errors import EXIT_CODES, RECOVERY_FINAL
from nodeweave.rendering import render_targets
from nodeweave.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "tests" / "golden" / "manifests" / "specs" / "recovery.yaml"


def readme_recovery_ends():
    """The codes of README's exit table whose meaning begins "recovery" (gave up, stopped)."""
    rows = re.findall(r"^\| (\d+) \| recovery ", (REPO / "README.md").read_text(), re.M)
    return {int(code) for code in rows}


def fail_job_codes(job_spec):
    rules = [rule for rule in job_spec["podFailurePolicy"]["rules"] if rule["action"] == "FailJob"]
    assert len(rules) == 1, rules
    return set(rules[0]["onExitCodes"]["values"])


def test_readme_and_the_entrypoint_agree_on_recoverys_final_codes():
    assert readme_recovery_ends() == set(RECOVERY_FINAL) == {8, 9, 10}
    assert all(EXIT_CODES[code].startswith("recovery") for code in RECOVERY_FINAL)


def test_every_rendered_job_fails_at_once_on_each_final_code():
    files = render_targets(load_spec(SPEC), ("manifests", "jobset"))
    job = yaml.safe_load(files["manifests/job/job.yaml"])["spec"]
    jobset = yaml.safe_load(files["jobset/jobset.yaml"])["spec"]["replicatedJobs"][0]["template"]["spec"]
    for spec in (job, jobset):
        assert fail_job_codes(spec) == readme_recovery_ends(), "exit 10 (the job's own error) must end the Job too"
