"""Seconds as people write them: ``300``, or with a unit, ``30s``, ``10m``, ``2h``, ``1h30m``.

Why one reader in the entrypoint package: the spec's seconds fields (``launcher.stall_warn: 10m``), the
entrypoint's seconds variables and flags (``NODEWEAVE_STALL_WARN=10m``) and the command line's seconds options
(``--grace 5m``, through ``quantities.seconds``) took three spellings; one field, variable or option now reads
what another takes (fix20b, note18 "Left"). Stdlib only, Python 3.6: the entrypoint imports it on its start.
"""


_NUMBER = r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+"  # ASCII digits: \d takes '٣' (walk13 A22)
_PART = r"(" + _NUMBER + r")([hms])"
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}

# What a seconds value takes, in every refusal of one: the spec's, a variable's, a flag's.
DURATION_UNITS = "a duration with a unit, s, m or h (30s, 10m, 1h30m)"
DURATION_WORDS = "a number of seconds (300, 2.5), or one with a unit, s, m or h (30s, 5m, 2h, 1h30m)"


def seconds(text):
    """``text`` as seconds (``300`` -> 300, ``5m`` -> 300, ``1h30m`` -> 5400, ``2.5`` -> 2.5), or None when it is
    neither a plain number nor a duration (white space at an end is stripped: a command line's option)."""
    import re  # here, not at the top: the entrypoint's start-up path imports this module, and re costs ms

    text = str(text).strip()
    if re.match(r"(?:" + _NUMBER + r")\Z", text):
        return float(text)
    return _duration(text)


def whole_seconds(text):
    """``text`` written with a unit (``10m``, ``1h30m``, ``1.5m``) in whole seconds, or None: a plain number is
    the integer rules' (``05``, ``+5`` refused there), and white space at an end or a part of a second
    (``1.5s``) is no value a seconds field or variable takes."""
    number = _duration(str(text))
    return int(number) if number is not None and number == int(number) else None


def _duration(text):
    import re

    if not text or not re.match(r"(?:" + _PART + r")+\Z", text):
        return None
    return float(sum(float(number) * _UNIT_SECONDS[unit] for number, unit in re.findall(_PART, text)))
