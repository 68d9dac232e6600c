"""``--sweep VAR=a,b``: one full run per point, then a table of a metric read from the logs.

Repeated ``--sweep`` options multiply (every combination, the first option
varying slowest), as a team compares NCCL/RCCL channel and thread settings
across whole training runs. Each point's variables reach every node through
``env`` in front of its entrypoint (and win over the image's, as your own
values always do). ``--metric REGEX`` reads a number from each node's log:
the last match's first group (or the whole match), averaged over the nodes
that printed it; ``examples/train.py`` prints ``samples/s 8531.2``.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from nodeweave.tables import Table

from nodeweave.entrypoint.quoting import as_typed
from nodeweave.errors import UsageError
from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.planning.reserved import PATH_ACCEPTED, instead, reserved_reason, value_problem

if TYPE_CHECKING:
    from nodeweave.hidden import Hidden

VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# The reserved variables a `nodeweave run` flag sets for one run: a refusal of `-e`/`--sweep` names that flag.
RUN_FLAG_FOR = {"NNODES": "--nodes", "PET_NNODES": "--nodes", "NODEWEAVE_NNODES": "--nodes",
                "NODEWEAVE_NPROC_PER_NODE": "--nproc-per-node", "PET_NPROC_PER_NODE": "--nproc-per-node",
                "NODEWEAVE_LAUNCHER": "--launcher", "NODEWEAVE_PROFILE": "--profile",
                "NODEWEAVE_PROFILE_OPTIONS": "--profile-options"}


class RunFlagInstead(UsageError):
    """A reserved variable one of `nodeweave run`'s own flags sets, given to ``-e``/``--sweep``: refused, with
    that flag's command line as the remedy. Which values the flag takes hangs on the spec and the cluster (``--nodes
    3`` of 2 nodes is refused), so `run` words the remedy once it knows them (:meth:`refusal`): a command it names
    is one it accepts, pasted (walk6 M2)."""

    def __init__(self, option: str, text: str, reason: str, flag: str, values: List[str]):
        self.option, self.text, self.reason, self.flag, self.values = option, text, reason, flag, values
        super().__init__(self.refusal(lambda value: None))

    def refusal(self, problem) -> UsageError:
        """The refusal, ``problem(value)`` saying why this run would not take ``flag value`` (None: it would)."""
        import shlex

        head = f"{self.option} {self.text!r}: {self.reason}; this run's own flag sets it"
        taken = [value for value in self.values if problem(value) is None]
        if not taken:
            why = problem(self.values[0]) if self.values else None
            if why is None:
                return UsageError(f"{head}: `nodeweave run {self.flag} VALUE`")
            return UsageError(f"{head}, {self.flag}, though not to {self.values[0]} here: {why}")
        each = " (one run per value: run it once for each)" if len(taken) > 1 else ""
        return UsageError(f"{head}: `nodeweave run {self.flag} {shlex.quote(taken[0])}`{each}")


def parse_assignment(text: str, option: str, run: bool = False) -> Tuple[str, str]:
    """(name, value) of ``VAR=VALUE``; ``run``: given to `nodeweave run`, whose own flags a refusal may name."""
    name, sep, value = text.partition("=")
    if not sep or not VARIABLE.match(name):
        alone = " (or VAR alone: this shell's value of VAR)" if option == "--env" else ""
        raise UsageError(f"{option} {text!r} is not accepted: VAR=VALUE{alone} with VAR a variable name "
                         "(ASCII letters, digits and '_', not starting with a digit), e.g. NCCL_MAX_NCHANNELS=16")
    if "\n" in value or "\0" in value:
        raise UsageError(f"{option} {text!r}: the value holds a newline or NUL byte")
    reason = reserved_reason(name)
    if reason is not None and run and name in RUN_FLAG_FOR:
        raise RunFlagInstead(option, text, reason, RUN_FLAG_FOR[name],
                             [v for v in value.split(",") if v] if option == "--sweep" else [value])
    if reason is not None:
        remedy = ("run's --nodes flag runs one run on the first nodes; the spec's nodes, every run"
                  if name in ("NNODES", "PET_NNODES") else instead(name))
        raise UsageError(f"{option} {text!r}: {reason}; accepted: any other variable, e.g. NCCL_DEBUG=INFO "
                         f"({remedy})")
    problem = value_problem(name, value)
    if problem is not None:
        raise UsageError(f"{option} {text!r}: {problem}; accepted: {PATH_ACCEPTED}")
    return name, value


def parse_env(options: Sequence[str], option: str = "--env", run: bool = False) -> Tuple[Dict[str, str], "Hidden"]:
    """``-e`` of `run` and `exec`, as docker takes it: ``VAR=VALUE``, or ``VAR`` alone for this shell's value of VAR
    (unset or empty is refused: an empty value never means anything, nor is ``VAR=`` taken). (the variables, a value hidden as its
    placeholder; the hidden values). Hidden (``nodeweave.hidden``, walk8 A31): every value given by name, shown as
    ``$VAR``, and a secret-looking name's value given written out (``env_looks_secret``, as the spec's env is
    judged), shown as ``***``: neither is written in the plan, ``-o json`` or a record, and a local engine's exec
    gets it from its own environment (``podman exec -e VAR``)."""
    import os

    from nodeweave.hidden import Hidden, secret_placeholder
    from nodeweave.spec.sections.job import env_looks_secret

    found: Dict[str, str] = {}
    values: Dict[str, str] = {}
    for text in options:
        if "=" in text or not VARIABLE.match(text):
            name, value = parse_assignment(text, option, run=run)
            if value == "":  # `-e HF_TOKEN=$HF_TOKEN` with it unset: refused as `-e HF_TOKEN` is (walk17a A30)
                raise UsageError(f"{option} {name}=: the value is empty (an unset ${name} in this shell?), and an empty "
                                 f"value never means anything, as `{option} {name}` with {name} empty is refused; "
                                 f"give {option} {name}=VALUE, or leave it off")
            if env_looks_secret(name) and value:  # an empty one hides nothing, and is noted (assignment_notes)
                found[name], values[name] = secret_placeholder(name, by_name=False), value
            else:
                found[name] = value
            continue
        name, value = text, os.environ.get(text)
        if not value:
            state = "is not set" if value is None else "is set but empty"
            raise UsageError(f"{option} {name}: {name} {state} in this shell, and `{option} {name}` takes its value "
                             f"from there (an empty value never means anything); export {name}=VALUE first, or give "
                             f"{option} {name}=VALUE")
        try:
            parse_assignment(f"{name}={value}", option, run=run)
        except RunFlagInstead as err:
            err.text = name
            raise
        except UsageError as err:  # said without the value: given by name, it is never written out
            said = str(err).replace(repr(f"{name}={value}"), repr(name))
            raise UsageError(said.replace(value, f"${name}") if len(value) > 3 else said) from None
        found[name], values[name] = secret_placeholder(name, by_name=True), value
    return found, Hidden(values)


def hidden_notes(env: Dict[str, str], nodes) -> List[str]:
    """How each hidden ``-e`` value (``parse_env``) reaches ``nodes``, in one note: through the exec client's own
    environment where every node's tool takes it from there (``podman exec -e NAME``), else on the exec's command
    line, which `ps` shows here and on the node; either way the plan and the records show ``$NAME`` or ``***``."""
    from nodeweave.hidden import hide, is_secret

    names = [f"-e {name}" + ("" if hide(value).startswith("$") else "=***") for name, value in env.items()
             if is_secret(value)]
    if not names or not nodes:
        return []
    shown = ", ".join(names)
    tools = sorted({node.remote.kind for node in nodes if not node.remote.env_from_client})
    group = nodes[0].group is not None
    if not tools and not group:
        kind = nodes[0].remote.kind
        return [f"{shown}: the value goes to every node through the exec client's own environment (`{kind} exec -e "
                "NAME`), never on a command line; the plan and a run's records show $NAME or ***"]
    tool = "srun" if group else " and ".join(tools)
    return [f"{shown}: through {tool} the value travels on the command line of every node's exec once it starts "
            "(readable in `ps` here and on the node; only `podman`/`docker exec -e NAME` take it from the exec "
            "client's own environment), and is written nowhere: the plan and a run's records show $NAME or ***"]


def parse_sweeps(options: Sequence[str], run: bool = True) -> List[Tuple[str, List[str]]]:
    """``["NCCL_MAX_NCHANNELS=8,16", "RCCL_THREADS_PER_BLOCK=256,512"]`` -> [(name, values)].

    The one reading of ``--sweep`` (`nodeweave run`'s and `nodeweave bench`'s): values are passed to the nodes
    exactly as written, so a value with a space around it is refused with the spelling to use, never trimmed by
    one verb and refused by the other. ``run``: as for :func:`parse_assignment`."""
    found: List[Tuple[str, List[str]]] = []
    for text in options:
        name, values = parse_assignment(text, "--sweep", run=run)
        points = [v for v in values.split(",")]
        if not values or any(v == "" for v in points):
            raise UsageError(f"--sweep {text!r} is not accepted: VAR=a,b,c with no empty value")
        refuse_list_spellings(text, name, values, points)
        padded = next((v for v in points if v != v.strip()), None)
        if padded is not None:
            raise UsageError(f"--sweep {text!r} is not accepted: the value {padded!r} starts or ends with a space, "
                             f"which the node would get as part of it; write {name}="
                             f"{','.join(v.strip() for v in points)}")
        if name in (n for n, _ in found):
            raise UsageError(f"--sweep names {name} twice; give all its values in one option: {name}=a,b,c")
        twice = sorted({v for v in points if points.count(v) > 1})
        if twice:
            raise UsageError(f"--sweep {text!r} gives {name}={twice[0]} twice, which would run the same point twice; "
                             f"give each value once: {name}={','.join(dict.fromkeys(points))}")
        found.append((name, points))
    return found


QUOTES = ("'", '"')
EDGES = "'\"\\"  # what no sweep value starts or ends with: a quote, a backslash
NO_COMMA = "run each such value as its own `nodeweave run -e NAME=VALUE`"


def refuse_list_spellings(text: str, name: str, values: str, points: List[str]) -> None:
    """Lists written the way other tools take them, refused with the spelling to write (walk7 A44): brackets around
    the list (Hydra's, Python's ``[1e-3,3e-4]``: the points were ``[1e-3`` and ``3e-4]``), quotes around a value
    (they reached the node: ``LR="1e-3"``) and spaces between values with no comma (W&B's ``1e-3 3e-4``: one
    point; with commas a value may hold words, ``OPTS=a b,c``). Each value
    reaches the node exactly as written, so none of these would be a number."""
    bare = [v.strip().strip("".join(QUOTES)).strip() for v in points]
    if values[:1] in "[(" and values[-1:] in "])":
        bare = [v.strip().strip("".join(QUOTES)).strip() for v in values[1:-1].split(",")]
        why = "brackets around the list, which the first and last values would get as part of them"
    elif any(v[:1] in EDGES or v[-1:] in EDGES for v in (p.strip() for p in points)):
        # a quote or a backslash at any value's edge (walk10 A19: `LR="1e-3,3e-4"` gave the points `"1e-3` and
        # `3e-4"`, `A=x\,y` the point `x\`): neither groups nor escapes a comma, and the node would get it
        bare = [v.strip().strip("".join(EDGES)).strip() for v in points]
        why = ("quotes around a value, which the node would get as part of it" if not any(
            v.strip().endswith("\\") for v in points) else "a backslash, which escapes nothing here")
        split = any(v.strip()[:1] in QUOTES and v.strip()[-1:] != v.strip()[:1] for v in points) or \
            any(v.strip().endswith("\\") for v in points)
        if split:
            why += f"; no value of a sweep can hold a comma (commas separate the values: {NO_COMMA})"
    elif len(points) == 1 and len(points[0].split()) > 1:  # with commas, a value may hold words (OPTS=a b,c)
        bare = points[0].split()
        if any(ASSIGNMENT.match(word) for word in bare[1:]):  # `A=1 B=2`: two variables, not two values (walk12
            raise UsageError(f"--sweep {text!r} is not accepted: {second_variable(name, points[0], '--sweep')}")
        why = "spaces between values, which make them one value: a sweep of one point"
    else:
        return
    raise UsageError(f"--sweep {text!r} is not accepted: {why}; the values are separated by commas and written "
                     f"bare: write {name}={','.join(bare)}")


# A word that is itself an assignment, ``B=2``: in a value, a second variable typed into one option (walk12 A14-A16).
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def second_variable(name: str, value: str, flag: str, rest: "List[str] | None" = None) -> str:
    """What ``NAME=value`` means when a word of ``value`` after a space (``-e 'A=1 B=2'``) or the whole of a swept
    value (``--sweep A=1,B=2``) is itself ``NAME=...``: the one wording of :func:`refuse_list_spellings`' refusal
    and :func:`assignment_notes`' note, with each variable as its own option (A14: the hint was ``A=1,B=2``, a
    sweep of A over "1" and "B=2")."""
    words = value.split()
    groups: List[List[str]] = [[f"{name}={words[0]}" if words and not ASSIGNMENT.match(value) else name + "="]]
    if words and ASSIGNMENT.match(value):  # the value itself, a swept point B=2
        groups = [[f"{name}=" + ",".join(v for v in rest or [] if not ASSIGNMENT.match(v))], [value]]
    else:
        for word in words[1:]:
            if ASSIGNMENT.match(word):
                groups.append([word])
            else:
                groups[-1].append(word)
    joiner = "," if flag == "--sweep" else " "
    options = " ".join(f"{flag} {shlex_quote(group[0] + (joiner if group[1:] else '') + joiner.join(group[1:]))}"
                       for group in groups)
    return (f"{name}'s value {value!r} holds {'another' if len(groups) == 2 else 'other'} variable"
            f"{'' if len(groups) == 2 else 's'} ({', '.join(g[0].split('=')[0] + '=' for g in groups[1:])}), which "
            f"every node would get as part of {name}; each variable is its own option: {options}")


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def point_words(point: Dict[str, str]) -> str:
    """A point as its assignments, ``LR=1e-3 EPOCHS=2`` (shell-quoted where needed), not a Python dict."""
    import shlex

    return " ".join(shlex.quote(f"{key}={value}") for key, value in point.items())


def assignment_notes(sweeps: List[Tuple[str, List[str]]], env: Dict[str, str], runs: bool = True) -> List[str]:
    """What a ``--sweep``/``-e`` taken as written may not mean (walk8 A18): a value starting with ``=`` (``A==1``
    sets A to ``=1`` on every node: a doubled ``=``?) and, for
    ``runs`` (`nodeweave run`), a sweep of one point (one run, as ``-e`` makes it), and a swept name that looks like a secret, its values written out (as the spec's
    env is judged; a ``-e`` one is hidden: ``parse_env``, ``hidden_notes``). The one judge of run's and bench's
    --sweep and of run's and exec's -e."""
    found = [f"{flag} {name}={value}: {name}'s value {value!r} starts with '=', which every node gets as part of "
             f"it (a doubled '='? {name}={value[1:]})"
             for flag, pairs in (("--sweep", [(n, v) for n, values in sweeps for v in values]),
                                 ("-e", list(env.items())))
             for name, value in pairs if value.startswith("=")]
    # walk12 A15, A16: a value that is itself NAME=... (--sweep A=1,B=2) or holds one after a space (-e 'A=1 B=2')
    found += [f"--sweep {name}={','.join(values)}: {second_variable(name, value, '--sweep', values)}"
              for name, values in sweeps for value in values if ASSIGNMENT.match(value)]
    found += [f"-e {name}={value}: {second_variable(name, value, '-e')}" for name, value in env.items()
              if any(ASSIGNMENT.match(word) for word in value.split()[1:])]
    from nodeweave.spec.sections.job import ENV_SECRET_HINT, env_looks_secret

    # walk8 A31: a secret-looking -e is hidden (parse_env; how it travels: hidden_notes); a swept one is written
    # out in every point's run id, sweep.json and the table, as the spec's env and --build-arg are noted
    found += [f"--sweep {name}=... looks like a secret and holds its values: they go on the command line of every "
              "node's exec (readable in `ps` there and here), into the printed plan, the run ids and each run's "
              "record; " + ENV_SECRET_HINT for name, _ in sweeps if env_looks_secret(name)]
    if runs and sweeps and all(len(values) == 1 for _, values in sweeps):
        given = " ".join(f"{name}={values[0]}" for name, values in sweeps)
        found.append(f"--sweep {given} is one point: one run in a sweep folder; `-e` sets a variable for a plain "
                     "run, and a sweep takes VAR=a,b")
    return found


MAX_POINTS = 256  # more points than this is a grid larger than meant (a pasted `seq`), unless --max-points says so
CEILING = 4096  # whatever --max-points says: each point is a whole run of the cluster, one after another, and the
# dry run plans every one (replay8 N2: the 250,000 the refusal offered planned for minutes in silence)


def sweep_points(sweeps: List[Tuple[str, List[str]]], most: Optional[int] = None) -> List[Dict[str, str]]:
    """Every combination of the swept values; more than ``most`` (``--max-points``) is refused, counted before a
    point is built (walk8 A17: 500 x 500 values computed for minutes in silence; 50 x 50 planned 2,500 whole runs
    of the cluster without a word)."""
    if not sweeps and most is not None:
        raise UsageError(f"--max-points {most} does nothing without --sweep (it bounds a sweep's points); "
                         "give --sweep VAR=a,b, or leave --max-points out")
    most = min(most or MAX_POINTS, CEILING)
    count = math.prod(len(values) for _, values in sweeps)
    if count > most:
        axes = " x ".join(f"{name} ({len(values)} values)" for name, values in sweeps)
        allow = (f"or give --max-points {count} to run them all" if count <= CEILING else
                 f"a sweep has at most {CEILING:,} points whatever --max-points says: split it into sweeps of "
                 "fewer values")
        raise UsageError(f"--sweep: {count:,} points, the product of {axes}, more than --max-points {most}; each "
                         f"point is a run of its own, one after another: narrow the values, {allow}")
    names = [name for name, _ in sweeps]
    return [dict(zip(names, combo)) for combo in itertools.product(*(values for _, values in sweeps))]


def point_label(point: Dict[str, str], job: str = "") -> str:
    """A point's part of its run id: ``NCCL_MAX_NCHANNELS-16_RCCL_THREADS_PER_BLOCK-256``.

    The run id names a folder on every node, and the entrypoint takes only letters, digits, ``.``, ``_`` and
    ``-``, at most 128 characters: ``<UTC time>-<job>-NN-<label>`` (and ``-N`` for a taken second) must fit.
    The point's values themselves are in ``sweep.json``.
    """
    text = "_".join(f"{k}-{v}" for k, v in point.items())
    room = max(8, 128 - len("20260101T000000Z-") - len(job) - len("-00-") - len("-99"))
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:room]


def compile_metric(text: Optional[str]) -> Optional["re.Pattern[str]"]:
    if text is None:
        return None
    try:
        pattern = re.compile(text)
    except re.error as err:
        raise UsageError(f"--metric {as_typed(text)} is not a regular expression: {err}") from None
    if not pattern.groups and re.search(r"[A-Za-z_/:= ]", re.sub(r"\\[dDsSwWbB]|e", "", text)):
        # the whole match is read as the number: with words in it, no point would ever get a metric (walk2 M7),
        # as metrics.step_pattern without a group is refused
        raise UsageError(f"--metric {as_typed(text)} has no group for the number, and its whole match holds words, so no "
                         "run would get a metric; put the number in a group, e.g. 'samples/s ([0-9.]+)'")
    return pattern


# How much of a log's end is searched for the metric: a training log can hold gigabytes; its last report
# is near the end.
METRIC_BYTES = 16 * 1024 * 1024


def read_metric(pattern: "re.Pattern[str]", log: Path) -> Optional[float]:
    """The last number ``pattern`` matches in ``log``'s last METRIC_BYTES (its first group, else the whole match)."""
    from nodeweave.cluster.runfolder import own_log

    value = None
    try:
        text = bounded.read_tail(own_log(log), METRIC_BYTES)
    except OSError:
        return None
    for match in pattern.finditer(text):
        try:
            value = float(match.group(1) if pattern.groups else match.group(0))
        except (ValueError, IndexError):
            continue
    return value


def point_metric(pattern, folder: Path, nodes: int) -> Tuple[Optional[float], List[Optional[float]]]:
    per_node = [read_metric(pattern, folder / f"node-{i}.log") for i in range(nodes)]
    seen = [v for v in per_node if v is not None]
    return (statistics.fmean(seen) if seen else None), per_node


def leaders(ranked: List[Tuple[str, float]], lower_is_better: bool = False) -> List[str]:
    """The keys of ``ranked`` ((key, value) of each run that ended ok) holding the best value: one, or every run
    of a tie (none is picked silently), or none. The one rule ``run --sweep`` and ``runs compare`` rank by; a run
    still running, cut off or failed is never among ``ranked`` (walk5, W21)."""
    if not ranked:
        return []
    top = (min if lower_is_better else max)(value for _, value in ranked)
    return [key for key, value in ranked if value == top]


# Words of a metric that is best at its lowest: a loss, an error rate, a latency, a time (walk16a A16: `runs compare
# --metric "final_loss=([0-9.]+)"` marked the higher loss best, with no word that best meant highest).
LOWER_WORDS = re.compile(r"loss|err|latency|perplexity|ppl|seconds|time|\bms\b", re.IGNORECASE)


def ranking_words(lower_is_better: bool) -> str:
    """How the best is picked, for a ranking table's title: `` (best: lowest)`` or `` (best: highest)``."""
    return " (best: lowest)" if lower_is_better else " (best: highest)"


def ranking_note(metric: Optional[str], lower_is_better: bool) -> Optional[str]:
    """The note for a ``--metric`` whose words say it is best at its lowest while the best is its highest
    (``--lower-is-better`` not given): the one default that reads such a metric backwards, said (`runs compare`
    and `run --sweep`); None otherwise."""
    found = LOWER_WORDS.search(metric or "")
    if found is None or lower_is_better:
        return None
    return (f"the best is the highest mean (the default), yet --metric {as_typed(metric)} names {found.group(0)!r}, "
            "usually best at its lowest: add --lower-is-better to rank it so")


def metric_text(value: float) -> str:
    """A metric as every table shows it (the sweep's, `runs compare`'s, its chart's): plain decimal to 6
    significant digits, never an exponent, so one column reads at a glance (walk17a A14: the sweep's table printed
    2.2e+04 beside 3601 while `runs compare` printed 22003.8 for the same run)."""
    if not value or not math.isfinite(value):
        return f"{value:g}"
    digits = max(0, 5 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else str(round(value))


def best_mark(key: str, won: List[str]) -> str:
    """The table's mark of a leader: `` (best)``, or `` (tied best)`` for each run of a tie."""
    return "" if key not in won else (" (best)" if len(won) == 1 else " (tied best)")


def sweep_table(rows: List[dict], metric: Optional[str], lower_is_better: bool = False) -> Table:
    """One row per point: its variables, result, seconds and the metric (the best marked)."""
    table = Table(title="sweep" + (f": {metric}{ranking_words(lower_is_better)}" if metric else ""),
                  title_justify="left")
    names = list(rows[0]["point"]) if rows else []
    for column in [*names, "result", "seconds", *(["metric (mean of nodes)", "per node"] if metric else []), "run"]:
        table.add_column(column)
    ranked = [(str(r["folder"]), r["metric"]) for r in rows if r.get("metric") is not None and r["exit_code"] == 0]
    won = leaders(ranked, lower_is_better) if sum(r.get("metric") is not None for r in rows) > 1 else []
    for row in rows:
        cells = [row["point"][n] for n in names]
        # a point `nodeweave stop` ended (every node, or `--node N`) is stopped, not failed (replay11 C22)
        result = "ok" if row["exit_code"] == 0 else "stopped" if row.get("stopped") else f"exit {row['exit_code']}"
        cells += [result, f"{row['seconds']:.1f}"]
        if metric:
            m = row.get("metric")
            text = "-" if m is None else metric_text(m) + best_mark(str(row["folder"]), won)
            cells += [text, " ".join("-" if v is None else metric_text(v) for v in row.get("per_node", []))]
        cells.append(row["folder"])
        table.add_row(*cells)
    return table
