"""Findings: what is wrong or worth knowing about a node, how bad, and what to do.

Every finding comes from a row of a rule table (``Rule(code, check,
severity, remedy)``): the entrypoint's own rows (``nodeweave.entrypoint.planning.rules``),
which it evaluates at every start and doctor sees as the plan's warnings, and
doctor's rows of the same type (``rules.py``) for what the entrypoint has no
reason to check at start-up. A finding takes its severity and remedy from its
row, by the warning's stable code, never from its wording; there is no second
table of grades here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from nodeweave.entrypoint.planning.rules import BY_CODE, ERROR, INFO, WARNING

SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}
__all__ = ["ERROR", "INFO", "WARNING", "Finding", "grade_plan_warning", "merge", "sort_findings"]


@dataclass(frozen=True)
class Finding:
    """One observation: its severity, a stable code, the message and the remedy."""

    severity: str
    code: str
    message: str
    action: str
    source: str = "doctor"  # "doctor" | "entrypoint" (a plan warning, graded by its row) | "bench"

    def to_dict(self) -> dict:
        return asdict(self)


def grade_plan_warning(message: str) -> Finding:
    """A plan warning as a finding: the level its rule gave it, else its row's, and the row's remedy."""
    code = getattr(message, "code", None)
    rule = BY_CODE.get(code)
    if rule is None:
        return Finding(WARNING, code or "entrypoint-warning", str(message), "see docs/entrypoint.md", "entrypoint")
    severity = getattr(message, "severity", None) or rule.level()
    return Finding(severity, code, str(message), rule.remedy, "entrypoint")


def findings_of(hits, source: str = "doctor") -> "list[Finding]":
    """Findings for ``nodeweave.entrypoint.planning.rules.evaluate``'s hits."""
    return [Finding(severity, rule.code, message, rule.remedy, source) for rule, message, severity in hits]


def sort_findings(findings: "list[Finding]") -> "list[Finding]":
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.code))


def merge(graded: "list[Finding]", own: "list[Finding]") -> "list[Finding]":
    """The entrypoint's findings, plus doctor's own whose code the entrypoint did not report."""
    codes = {finding.code for finding in graded}
    return sort_findings(graded + [finding for finding in own if finding.code not in codes])
