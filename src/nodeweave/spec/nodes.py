"""Typed reads from a composed YAML node tree, so every error can name its line.

``yaml.safe_load`` forgets where a value came from; composing the node tree
keeps each node's start mark. The readers here check one value's type and
raise a :class:`UsageError` that names the file, line, field path, the value
as the user wrote it, and what would be accepted.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Iterable, Iterator, List, Optional, Tuple, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nodeweave.entrypoint.switch import parse_switch
from nodeweave.errors import UsageError

_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
# The only integers a spec takes: plain decimal digits. YAML 1.1 reads 010 as 8, 0x10 as 16, 8_0 as 80,
# +5 as 5 and 1:30 as 90 (base 60); YAML 1.2 reads 0o7 as 7. Each is refused with the number to write.
_PLAIN_INT = re.compile(r"(0|-?[1-9][0-9]*)\Z")  # -0 is no plain number (walk9 B27), as in the entrypoint
_OTHER_INT = re.compile(r"[-+]?(0[xXoObB]?[0-9a-fA-F_]*|[0-9][0-9_]*)\Z")
# What a scalar would be read as without its quotes (the safe loader's implicit types).
_RESOLVER = yaml.resolver.Resolver()
BOOLEAN = "true or false (also on, off, 1, 0)"
# Top-level keys starting with this are the user's own (anchors to reuse): ignored, as Compose ignores them.
EXTENSION_PREFIX = "x-"
T = TypeVar("T")


class FieldError(UsageError):
    """One field's refusal, its parts kept as data: a caller that words it another way (``init`` names the flag
    that set the field) reads ``field``, ``problem`` and ``accepted``, never the text."""

    def __init__(self, source: str, line: int, field: str, problem: str, accepted: str):
        super().__init__(f"{source}{f':{line}' if line else ''}: {field}: {problem}; accepted: {accepted}")
        self.line, self.field, self.problem, self.accepted = line, field, problem, accepted


class SpecErrors(UsageError):
    """Every independent mistake of one spec, one line each (``validate`` reports them all, not the first);
    ``errors``: each line's :class:`FieldError` where it is one (else None), in the same order."""

    def __init__(self, problems: "List[str]", errors: "Optional[List[Optional[FieldError]]]" = None):
        super().__init__("\n".join(problems))
        self.problems = list(problems)
        self.errors = list(errors) if errors is not None else [None] * len(self.problems)

    @property
    def fields(self) -> "List[FieldError]":
        return [error for error in self.errors if error is not None]


class _Failed:
    def __repr__(self) -> str:
        return "FAILED"


FAILED = _Failed()  # what :meth:`Reader.attempt` returns for a part that was refused


def shown(node: Optional[Node]) -> str:
    """The value as the user wrote it, for messages (long or multi-line values shortened)."""
    if node is None:
        return "nothing"
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == _NULL:
        return "null"
    if node.style is None and _RESOLVER.resolve(ScalarNode, node.value, (True, False)) in (_INT, _FLOAT):
        # a number as a number, bare (walk16 A20: "got '-1'" read as the string '-1')
        return node.value if len(node.value) <= 80 else node.value[:77] + "..."
    from nodeweave.entrypoint.quoting import as_typed

    text = as_typed(node.value)  # one backslash as typed, not repr's two (walk6 W15)
    return text if len(text) <= 80 else text[:77] + "..." + text[0]


class Reader:
    """Reads values out of one spec file's node tree; ``source`` names the file in errors."""

    def __init__(self, source: str):
        self.source = source
        self._constructor = yaml.constructor.SafeConstructor()
        self._read: "dict[int, dict[str, Tuple[Node, Node]]]" = {}  # a mapping's entries, by node (merged once)
        # every refusal kept so far, in order, each once: its line, and its parts where it is a FieldError
        self.problems: "dict[str, Optional[FieldError]]" = {}
        self.kept = 0  # refusals kept, repeats counted: a part that kept one is refused (attempt)

    def attempt(self, read: "Callable[..., T]", *args) -> "T | _Failed":
        """``read(*args)``, or FAILED when it refuses or kept a refusal of one of its fields (``field``): the
        refusals are kept and reading goes on, so one run names every independent mistake. A part that kept a
        field's refusal read that field's default in its place, so a check of the part that weighs fields
        together may be noise: its refusal is dropped, as every check across parts that needs a refused part is
        skipped."""
        before = self.kept
        try:
            value = read(*args)
        except SpecErrors as err:
            for problem, error in zip(err.problems, err.errors):
                self.keep(error or problem)
        except UsageError as err:
            if self.kept == before:  # else it may weigh a field read as its default: the user fixes that first
                self.keep(err)
        else:
            if self.kept == before:
                return value
        return FAILED

    def field(self, read: "Callable[[], T]", default: T) -> T:
        """One field's value, or ``default`` when it is refused: the refusal is kept and the fields beside it are
        still read (their own mistakes reported in the same run); the part is refused at its end (attempt). A
        field of parts (a list item, a mapping) that kept a refusal of one of them and then refused itself may have
        weighed a part read as its default: that last refusal is dropped, as :meth:`attempt` drops it."""
        before = self.kept
        try:
            return read()
        except SpecErrors:
            raise
        except UsageError as err:
            if self.kept == before:  # else the part kept is refused already
                self.keep(err)
            return default

    def keep(self, error: "UsageError | str") -> None:
        """A refusal that does not stop reading (an unknown key: the keys beside it still mean something)."""
        self.kept += 1
        self.problems.setdefault(str(error), error if isinstance(error, FieldError) else None)

    def refusal(self) -> "Optional[SpecErrors]":
        """Every kept refusal, in the file's order (by line; one without a line first)."""
        def line(problem: str) -> int:
            found = re.match(re.escape(self.source) + r":(\d+):", problem)
            return int(found.group(1)) if found else 0

        if not self.problems:
            return None
        ordered = sorted(self.problems, key=line)
        return SpecErrors(ordered, [self.problems[text] for text in ordered])

    def fail(self, node: Optional[Node], path: str, problem: str, accepted: str) -> "FieldError":
        return FieldError(self.source, node.start_mark.line + 1 if node is not None else 0, path, problem, accepted)

    def bad_value(self, node: Node, path: str, accepted: str) -> "UsageError":
        return self.fail(node, path, f"got {shown(node)}", accepted)

    # -- scalars -------------------------------------------------------------------

    def is_null(self, node: Optional[Node]) -> bool:
        return node is None or (isinstance(node, ScalarNode) and node.tag == _NULL)

    def string(self, node: Node, path: str, accepted: str) -> str:
        """Any scalar but null, exactly as written (``0.10`` stays ``0.10``, ``yes`` stays ``yes``)."""
        if not isinstance(node, ScalarNode) or node.tag == _NULL:
            raise self.bad_value(node, path, accepted)
        if "\x00" in node.value:
            raise self.fail(node, path, "contains a NUL character, which no argument, variable or path can hold", accepted)
        return node.value

    def integer(self, node: Node, path: str, low: int, high: Optional[int] = None, unit: Optional[str] = None,
                accepted: Optional[str] = None) -> int:
        """A whole number in bounds; ``unit`` ("seconds"), when it counts one, is said in the refusal with what a
        value written with a unit (``5m``) is in it (walk7 B3), as the entrypoint's variables say it.
        ``accepted``: the field's own words, where it takes more than this number (``gpus_per_node``'s auto), said
        by every refusal of it: its type check's and its range check's alike (walk16 A20)."""
        bounds = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
        if accepted is not None:
            bounds = accepted
        if unit == "seconds":
            from nodeweave.entrypoint.durations import DURATION_UNITS

            bounds += f", in seconds, or {DURATION_UNITS}"
            spelt = self.duration(node)
            if spelt is not None:  # `stall_warn: 10m`, as the command line's seconds take it (walk17a A26)
                if spelt < low or (high is not None and spelt > high):
                    raise self.bad_value(node, path, f"{bounds} ({node.value} is {spelt} seconds)")
                return spelt
        self.refuse_quoted(node, path, bounds)
        self.refuse_unplain_int(node, path, bounds)
        if not self.is_int(node):
            raise self.bad_value(node, path, bounds)
        try:
            value = self._constructor.construct_object(node)
        except (ValueError, yaml.YAMLError):  # e.g. !!int "abc"
            raise self.bad_value(node, path, bounds) from None
        if value < low or (high is not None and value > high):
            raise self.bad_value(node, path, bounds)
        return value

    @staticmethod
    def duration(node: Node) -> Optional[int]:
        """A seconds field written as a duration with a unit (``30s``, ``10m``, ``1h30m``), as the command line's
        seconds and the entrypoint's seconds variables take it (``entrypoint.durations``, the one reader), in whole
        seconds; None for anything else (a plain number is read as an integer, by the integer rules)."""
        from nodeweave.entrypoint.durations import whole_seconds

        if not isinstance(node, ScalarNode) or node.tag != _STR:
            return None
        return whole_seconds(node.value)

    def boolean(self, node: Node, path: str) -> bool:
        """The entrypoint's switch words (``switch.SWITCH_WORDS``: true/false, on/off, 1/0, any case), one rule for
        a spec field and its variable: YAML 1.1's ``yes``/``no`` are refused in both (YAML 1.2 reads them as
        strings, so the same file means two things to two readers)."""
        meant = {"yes": "true", "no": "false", "y": "true", "n": "false"}.get(str(getattr(node, "value", "")).strip()
                                                                          .lower())
        if meant and isinstance(node, ScalarNode):  # quoted or not: the word to write, not "write yes unquoted"
            raise self.fail(node, path, f"got {shown(node)}, which YAML 1.2 and the entrypoint's variables read as "
                            "a word, not a switch", f"{BOOLEAN}: write {meant}")
        self.refuse_quoted(node, path, BOOLEAN)
        if not isinstance(node, ScalarNode) or node.tag not in (_BOOL, _INT, _STR) or node.tag == _STR and \
                node.style is not None:
            raise self.bad_value(node, path, BOOLEAN)
        value = parse_switch(node.value)
        if value is None:
            raise self.bad_value(node, path, BOOLEAN)
        return value

    def refuse_quoted(self, node: Node, path: str, accepted: str) -> None:
        """Refuse a number or boolean written in quotes: YAML reads ``"8"`` as the string '8', not the number.

        The one rule for every integer and boolean field (``nodes`` and ``gpus_per_node`` too), so a quoted
        value is never accepted in one field and refused as out of range in another.
        """
        if not isinstance(node, ScalarNode) or node.style not in ("'", '"'):
            return
        bare = node.value.strip()
        tag = _RESOLVER.resolve(ScalarNode, bare, (True, False)) if bare else _STR
        if tag not in (_INT, _BOOL) or (tag == _INT and not _PLAIN_INT.match(bare)):
            return
        raise self.fail(node, path, f"got the string {node.value!r}; write {bare} without quotes", accepted)

    def refuse_number(self, node: Node, path: str, accepted: str,
                      check: "Optional[Callable[[str], bool]]" = None) -> None:
        """Refuse a plain YAML number or boolean in a field of a name or a path (``registry: 5``, ``name: true``): the
        mirror of :meth:`refuse_quoted`, one rule for every such field (walk15 A2: they were taken as text, and
        ``script: 3`` was later called a program). ``check``: the field's rule, so quotes are offered only where
        the quoted text would be taken."""
        if not isinstance(node, ScalarNode) or node.style is not None or node.tag not in (_INT, _FLOAT, _BOOL):
            return
        quoted = check is None or check(node.value)
        hint = f'; write "{node.value}" in quotes if that text is meant' if quoted else ""
        kind = "boolean" if node.tag == _BOOL else "number"  # walk18a A23: `name: true` was the job "true"
        raise self.fail(node, path, f"got the {kind} {node.value}{hint}", accepted)

    def refuse_unplain_int(self, node: Node, path: str, accepted: str) -> None:
        """Refuse an integer not written in plain decimal digits, naming the number YAML reads and the one to write."""
        if not isinstance(node, ScalarNode) or node.style is not None or _PLAIN_INT.match(node.value):
            return
        read = self._yaml_reading(node)
        if read is None:
            return
        digits = node.value.lstrip("+-").replace("_", "")
        meant = digits.lstrip("0") or "0" if digits.isdigit() else None
        choices = sorted({str(read)} | ({meant} if meant else set()), key=int)
        written = " or ".join(f"{path.rpartition('.')[2]}: {n}" for n in choices)
        raise self.fail(node, path, f"{node.value!r} is not a plain decimal integer (YAML reads it as {read})",
                        f"{accepted}, in plain digits: write {written}")

    def _yaml_reading(self, node: ScalarNode) -> Optional[int]:
        """The integer a YAML reader makes of ``node`` (1.1's octal, hex, 1_000, +5, base 60; 1.2's 0o7), else None."""
        if node.tag == _INT:
            try:
                return int(self._constructor.construct_object(node))
            except (ValueError, yaml.YAMLError):
                return None
        if node.tag == _STR and _OTHER_INT.match(node.value):
            try:
                return int(node.value.replace("_", ""), 0)
            except ValueError:
                return None
        return None

    def is_int(self, node: Node) -> bool:
        # YAML 1.1 reads 2:4 as the base-60 integer 124; in a spec it is always a range or a typo.
        return isinstance(node, ScalarNode) and node.tag == _INT and ":" not in node.value

    def is_plain_string(self, node: Node) -> bool:
        return isinstance(node, ScalarNode) and node.tag == _STR

    # -- collections ---------------------------------------------------------------

    def sequence(self, node: Node, path: str, accepted: str, words: bool = False) -> Iterator[Tuple[str, Node]]:
        """Items of a list as (path, node); null counts as an empty list. One value where the list is wanted is
        refused with the list written out (``words``: the items are a command's words, split as a shell would)."""
        if self.is_null(node):
            return iter(())
        if not isinstance(node, SequenceNode):
            raise self.bad_value(node, path, f"a YAML list of {accepted}{_as_list(node, path, words)}")
        return ((f"{path}[{i}]", item) for i, item in enumerate(node.value))

    def mapping(self, node: Node, path: str, accepted: str) -> Iterator[Tuple[str, str, Node]]:
        """Entries of a free-form mapping as (key, path, value node); null counts as empty."""
        if self.is_null(node):
            return iter(())
        return ((k, self.join(path, k), v) for k, (_, v) in self._entries(node, path, accepted).items())

    def fields(self, node: Optional[Node], path: str, allowed: Iterable[str], extensions: bool = False) -> "Fields":
        """A mapping with a fixed set of keys; an unknown key is an error with a suggestion.

        ``extensions``: keys starting with ``x-`` are the user's (a place for anchors), skipped as Compose does.
        """
        allowed = list(allowed)
        if node is not None and self.is_null(node) and path.endswith("]"):  # `- ` alone: a list item is never empty
            raise self.bad_value(node, path, "a mapping with keys " + ", ".join(allowed))
        if node is None or self.is_null(node):
            return Fields(self, node, path, {})
        if "enabled" in allowed and isinstance(node, ScalarNode) and parse_switch(node.value) is not None:
            raise self.fail(node, path, f"got {shown(node)}, a switch where a section goes", "a mapping with keys "
                            f"{', '.join(allowed)}: write {path}: {{enabled: {node.value}}}")
        entries = self._entries(node, path, "a mapping with keys " + ", ".join(allowed))
        if extensions:
            entries = {k: v for k, v in entries.items() if not k.startswith(EXTENSION_PREFIX)}
        unknown = {}  # the known key each unknown key is taken for ("did you mean"; None: none like it) -> refusal
        for key, (key_node, _) in entries.items():
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                refusal = self.fail(key_node, self.join(path, key), f"unknown key{hint}", "one of " + ", ".join(allowed))
                unknown.setdefault(close[0] if close else None, refusal)
                self.keep(refusal)
        return Fields(self, node, path, {k: v for k, v in entries.items() if k in allowed}, unknown)

    def _entries(self, node: Node, path: str, accepted: str) -> "dict[str, Tuple[Node, Node]]":
        """The keys of a mapping with YAML's merge semantics: a key written here overrides one merged in with
        ``<<: *anchor``, and of several merged mappings (``<<: [*a, *b]``) the first given wins; a key written
        here twice is refused. Read once per node (an alias, a section read twice)."""
        if not isinstance(node, MappingNode):
            raise self.bad_value(node, path or "the file", accepted)
        if id(node) in self._read:
            return self._read[id(node)]
        merged: "dict[str, Tuple[Node, Node]]" = {}
        own: "dict[str, Tuple[Node, Node]]" = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                for source in self._merge_sources(value_node, path, accepted):
                    for key, entry in self._entries(source, path, accepted).items():
                        merged.setdefault(key, entry)
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag == _NULL:
                raise self.fail(key_node, path or "the file", f"key {shown(key_node)} is not a name", accepted)
            key = key_node.value
            if key in own:
                first = own[key][0].start_mark.line + 1
                raise self.fail(
                    key_node, self.join(path, key), f"duplicate key (first given on line {first})", "each key once"
                )
            own[key] = (key_node, value_node)
        entries = {**merged, **own}
        self._read[id(node)] = entries
        return entries

    def _merge_sources(self, value: Node, path: str, accepted: str) -> "list[MappingNode]":
        sources = value.value if isinstance(value, SequenceNode) else [value]
        if not all(isinstance(source, MappingNode) for source in sources):
            raise UsageError(
                f"{self.source}:{value.start_mark.line + 1}: {path or 'the file'}: a merge key (<<) needs a mapping "
                f"or a list of mappings, such as <<: *defaults; accepted: {accepted}"
            )
        return sources

    @staticmethod
    def join(path: str, key: str) -> str:
        """``path.key``; a key with a line break or other control character is shown quoted (messages stay one line)."""
        shown_key = key if key.isprintable() else repr(key)
        return f"{path}.{shown_key}" if path else shown_key


# the spec's keys that name a file or folder (a bare ~ there was meant as the home folder): by the ends of their names
PATH_KEYS = ("path", "dir", "file", "folder", "context", "script", "sif", "source", "requirements", "wheelhouse")


def _names_a_path(key: str) -> bool:
    return key.endswith(PATH_KEYS)


class Fields:
    """The known keys of one mapping in the spec, with the node of each for error lines."""

    def __init__(self, reader: Reader, node: Optional[Node], path: str, entries: "dict[str, Tuple[Node, Node]]",
                 unknown: "dict[Optional[str], UsageError] | None" = None):
        self.reader, self.node, self.path, self._entries = reader, node, path, entries
        # its unknown keys' refusals (kept by the reader already), by the known key each is taken for
        self.unknown = unknown or {}

    def has(self, key: str) -> bool:
        return key in self._entries and not self.reader.is_null(self._entries[key][1])

    def get(self, key: str) -> Optional[Node]:
        """The value node, or None when absent or null (null means 'use the default'); a bare ``~``, the shell's
        home, is refused: YAML reads it as null, the default, the opposite of what was written (walk8 A29:
        ``workspace: {host_path: ~}`` mounted the spec's folder)."""
        self._refuse_bare_tilde(key)
        return self._entries[key][1] if self.has(key) else None

    def _refuse_bare_tilde(self, key: str, required: "str | None" = None) -> None:
        """``required``: what the field takes, for a field with no default (``require``), whose refusal offers
        none (replay11 A20: `name: ~` was told "or the key left out for the default", and then `required field
        is missing`)."""
        value = self._entries[key][1] if key in self._entries else None
        if isinstance(value, ScalarNode) and value.style is None and value.value == "~":
            if required is not None:
                raise self.reader.fail(value, self.path_of(key), "~ is YAML's null, read as not given, and this "
                                       "field is required (it has no default)", required)
            if _names_a_path(key):
                raise self.reader.fail(value, self.path_of(key), "~ is YAML's null, read as not given (the default), "
                                       "not a home folder", "the value written out ('~/' quoted for your home, or "
                                       "the path), or the key left out for the default")
            # not a path: the home folder is no reading of it (walk10 A20: `nodes: ~` was told of home folders)
            raise self.reader.fail(value, self.path_of(key), "~ is YAML's null, read as not given (the default)",
                                   "the value written out, or the key left out (or null written out) for the "
                                   "default")

    def require(self, key: str, accepted: str) -> Node:
        self._refuse_bare_tilde(key, accepted)
        if not self.has(key):
            # misspelt: the unknown key taken for it ("did you mean") is the one mistake, said once; a required
            # field no unknown key is taken for is missing besides (walk13 A10: `nodez:` hid a missing `image:`)
            if key not in self._entries and key in self.unknown:
                raise self.unknown[key]
            # A null value points at its own line; a missing key at the mapping that lacks it.
            given, where = ("is null", self._entries[key][1]) if key in self._entries else ("is missing", self.node)
            missing = self.reader.fail(where, self.path_of(key), f"required field {given}", accepted)
            self.reader.keep(missing)  # a mistake of its own, said beside an unknown key of the same mapping
            raise missing
        return self._entries[key][1]

    def path_of(self, key: str) -> str:
        return Reader.join(self.path, key)


def _as_list(node: Node, path: str, words: bool = False) -> str:
    """How a list field given one value is written as the list it must be (walk11 A1: ``nodelist: "gpu[01-04]"``,
    sbatch's spelling, was refused naming that very value as an example, never saying a YAML list was wanted):
    ``; write nodelist: ["gpu[01-04]"]``, each item quoted (a bare ``[`` in a YAML list opens a list). The items:
    ``words``, the value split as a shell splits it (``args: "--lr 3e-4"``); else split at commas outside brackets
    (``gpu01,gpu[03-04]`` as two) where no item holds a space, or the value whole (a shell line). "" for a
    mapping or an empty value."""
    import json
    import shlex

    if not isinstance(node, ScalarNode) or not node.value.strip():
        return ""
    items, depth, start = [], 0, 0
    for i, char in enumerate(node.value + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth <= 0:
            items.append(node.value[start:i].strip())
            start = i + 1
    if any(" " in item for item in items):
        items = [node.value]
    if words:
        try:
            items = shlex.split(node.value)
        except ValueError:  # an unclosed quote: the value whole
            items = [node.value]
    key = path.rsplit(".", 1)[-1].split("[", 1)[0] or path
    return f"; write {key}: [{', '.join(json.dumps(item) for item in items if item)}]"
