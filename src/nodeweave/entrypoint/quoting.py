"""A value quoted in a message as the user typed it, for both programs (stdlib only).

Why: ``repr`` doubles every backslash, so a pattern typed ``'global_step=\\d+'`` came back as
``'global_step=\\\\d+'`` beside an example written with one (walk6 W15); pasted back into the YAML or
the shell it is another pattern. A value with a backslash is quoted whole instead; one that needs an
escape to be read at all (a newline, both kinds of quote) keeps ``repr``.
"""


def as_typed(text) -> str:
    """``text`` in quotes as typed: ``'a\\d'`` for ``a\\d``; ``repr`` where that would not read back."""
    text = str(text)
    if "\\" not in text or not text.isprintable():
        return repr(text)
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return repr(text)
