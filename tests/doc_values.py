"""How the doc-scanning tests tell a `field: value` a doc shows as a mistake from one it offers to copy: one rule,
so test_cli_named_commands (the value is accepted) and test_spec_contradictions (the loader takes it) cannot
disagree about the same span (each kept a list of its own, and a new refused example failed one of them)."""

from __future__ import annotations

import re

# Words that, near a span, say the doc shows it as refused or wrong.
REFUSED_NEAR = re.compile(r"refus|not accepted|rejected|is an error|errors?\b|caught|surprise|instead of|not `", re.I)
NEAR = 80  # characters either side of the span


def shown_as_refused(line: str, match: "re.Match[str]") -> bool:
    """Whether the words around ``match`` in ``line`` say the span is an example of what is refused."""
    return bool(REFUSED_NEAR.search(line[max(0, match.start() - NEAR):match.end() + NEAR]))
