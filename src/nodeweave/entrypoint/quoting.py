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


# A word (a run of characters without a space) a message shows whole: a path, a host, a variable's value as typed.
WORD_MAX = 300
SHOWN = 40  # what is shown of a longer one, as the checkpoint folder's refusal shows a path past PATH_MAX
# A line past this after its words are clipped (a pasted file's words) keeps its start and its end: the reason
LINE_MAX, LINE_HEAD, LINE_TAIL = 4000, 2000, 1500


def clipped(text) -> str:
    """``text`` as a message may quote it: whole up to ``WORD_MAX`` characters, else its first ``SHOWN``, '...'
    and its length. A value expanded into itself or a file pasted into a variable made a refusal line of 200 KB
    (walk18b B9), which a pod log, kubectl logs and Loki cut before the reason at its end."""
    text = str(text)
    return text if len(text) <= WORD_MAX else f"{text[:SHOWN]}...({len(text)} characters)"


def bounded(text) -> str:
    """``text``, a message or a plan for people, with every word :func:`clipped` and every line kept below
    ``LINE_MAX`` (its start and end kept): the one bound each program's printer applies (the entrypoint's ``say``
    and plan, the CLI's error and warning lines), so no refusal quoting an unbounded value needs its own."""
    text = str(text)
    if len(text) <= WORD_MAX:
        return text
    lines = []
    for line in text.split("\n"):
        if len(line) > WORD_MAX:
            line = " ".join(clipped(word) for word in line.split(" "))
        if len(line) > LINE_MAX:
            left = len(line) - LINE_HEAD - LINE_TAIL
            line = f"{line[:LINE_HEAD]} ...({left} characters left out)... {line[-LINE_TAIL:]}"
        lines.append(line)
    return "\n".join(lines)
