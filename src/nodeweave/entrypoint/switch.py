"""The one reading of an on/off variable or option, for the entrypoint and the command line alike.

Why: each reader had its own words (``yes`` was taken by one and ignored by another, and the
error listed fewer words than were accepted), so ``NODEWEAVE_RECOVERY=yes`` left a user unsure
whether recovery was on. The accepted words are exactly these, and docs/entrypoint.md lists them.
"""

SWITCH_WORDS = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}
ACCEPTED = "on, off (also true, false, 1, 0)"


def parse_switch(text) -> "bool | None":
    """True or False for an accepted word (any case, spaces around ignored), else None."""
    return SWITCH_WORDS.get(str(text).strip().lower())


def switch_problem(what: str, text, source: str) -> str:
    """The one line that refuses ``text``: the setting, the value, where it came from, the accepted words."""
    return f"{what} must be on or off, got {text!r} (from {source}); accepted: {ACCEPTED}"
