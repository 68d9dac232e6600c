"""Every command line nodeweave names anywhere is one the real command line takes.

A user copies what they read: the README and docs/, every ``--help``, ``make help``, and the hints in
error messages and notes. Each ``nodeweave ...`` command found in any of them (code spans and blocks in
the docs; backticked spans in help texts and in every string of the sources; the ``make`` examples
substituted into the target's recipe; the hints the CLI prints for common mistakes) is parsed by the
real click tree: the verb exists, every flag is a shown one (a deprecated, hidden spelling named in a
doc fails), each value of a fixed-choice option is one of its choices, the arguments fit. A note that
says "`OLD` is now `NEW`" is checked by running NEW: it must do what OLD did, not be refused.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import typer.main

from nodeweave.cli import app, main, verb_options_first
from nodeweave.cli.habits.lazy import LazyVerbs, every_command

from doc_values import shown_as_refused

REPO = Path(__file__).resolve().parents[1]
ROOT = typer.main.get_command(app)
SPAN = re.compile(r"`([^`\n]+)`")
PLACEHOLDER = re.compile(r"[<{\[]|^[A-Z][A-Z0-9_]*$|\.\.\.")


def walk(command=ROOT, path=""):
    yield path, command
    below = every_command(command) if isinstance(command, LazyVerbs) else getattr(command, "commands", {})
    for name, sub in sorted(below.items()):
        yield from walk(sub, f"{path} {name}".strip())


COMMANDS = dict(walk())
VERBS = {p.split()[0] for p in COMMANDS if p}


def command_lines(text: str, *, verb_first: bool = False):
    """The ``nodeweave ...`` commands in ``text``'s backticked spans (``verb_first``: also spans that start
    with a verb, as notes write them: `doctor --node X`)."""
    found = []
    for piece in SPAN.findall(text.replace("\\[", "[")):
        for part in re.split(r"\s*(?:;|&&|\|\|?)\s*", piece.split("  #")[0]):
            words = part.strip().split()
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value nodeweave ...
                words = words[1:]
            if verb_first and words[:1] and words[0] in VERBS:
                words = ["nodeweave", *words]
            if words[:1] == ["nodeweave"] and len(words) > 1:
                found.append(" ".join(words))
    return found


def doc_lines():
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        block, held = False, ""
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip().startswith("```"):
                block = not block
                continue
            if block and line.rstrip().endswith("\\"):  # a command continued on the next line
                held += line.rstrip()[:-1] + " "
                continue
            line, held = held + line, ""
            for text in command_lines(f"`{line}`" if block else line):
                found.append((f"{doc.name}:{number}", text))
    return found


def help_lines():
    found = []
    for path, command in COMMANDS.items():
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            found += [(f"`nodeweave {path} --help`", line) for line in command_lines(text)]
    return found


def _string(node) -> "str | None":
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: each value becomes a placeholder
        return "".join(v.value if isinstance(v, ast.Constant) else "{X}" for v in node.values)
    return None


def source_lines():
    """Backticked commands in every string of the sources: the hints errors and notes print."""
    found = []
    for path in sorted((REPO / "src" / "nodeweave").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            text = _string(node)
            if text is None or id(node) in docstrings:
                continue
            for line in command_lines(text):
                found.append((f"{path.relative_to(REPO)}:{node.lineno}", line))
    return found


def make_lines():
    """``make help``'s examples, each put in its target's recipe: SYNC_ARGS="--dry-run" -> nodeweave sync ... --dry-run."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipes = {m.group(1): m.group(2) for m in re.finditer(r"^([a-z]+):.*\n\t\$\(BIN\)/nodeweave (.*)$", makefile, re.M)}
    shown = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    found = []
    for line in shown.replace("\\\n", " ").splitlines():
        for target, rest in re.findall(r"make ([a-z]+)\s+(.*?)(?=;\s*make |$)", line):
            recipe = recipes.get(target)
            if recipe is None:
                continue
            examples = []
            for var, values in re.findall(r'([A-Z]+_ARGS)=((?:"[^"]*"(?:, )?)+|[^\s"),;]+)', rest):
                for value in re.findall(r'"([^"]*)"', values) or [values]:
                    examples.append((var, value))
            if not examples and rest.split()[:1] == []:
                examples = [(None, "")]
            for var, value in examples or [(None, "")]:
                command = re.sub(r"\$\(([A-Z_]+)\)", lambda m: value if m.group(1) == var else
                                 {"SPEC": "nodeweave.yaml", "SPEC_WORD": "nodeweave.yaml"}.get(m.group(1), ""), recipe)
                found.append((f"make help: make {target}", "nodeweave " + " ".join(command.split())))
    return found


def _parse(words):
    """Parse ``words`` (after ``nodeweave``) down to the leaf command as click would; its context."""
    command, ctx = ROOT, ROOT.make_context("nodeweave", list(words), resilient_parsing=False)
    while hasattr(command, "resolve_command"):
        args = [*ctx._protected_args, *ctx.args]
        if not args:
            break
        name, sub, rest = command.resolve_command(ctx, args)
        ctx, command = sub.make_context(name, rest, parent=ctx), sub
    return command, ctx


def path_of(words) -> str:
    path = ""
    for word in words:
        if word == "--":
            break
        if not word.startswith("-") and f"{path} {word}".strip() in COMMANDS:
            path = f"{path} {word}".strip()
    return path


def problems(text: str) -> "list[str]":
    """What is wrong with the command line ``text`` (empty: the real command line takes it)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    words = [w for w in words[1:] if w not in ("...", "[OPTIONS]")]
    words = verb_options_first(words)  # `nodeweave -o json status` is `status -o json`, as main reads it
    if words[:1] == ["help"]:  # `nodeweave help VERB` is `nodeweave VERB --help`, as main reads it
        words = [*words[1:], "--help"]
    if "--help" in words or "-h" in words:
        return [] if path_of(words) in COMMANDS else ["names no command"]
    out = []
    if "--" in words:
        tail = words.index("--")
    else:
        tail = len(words)
    path = path_of(words[:tail])
    command = COMMANDS.get(path)
    if command is None:
        return [f"names no command"]
    flags = {}
    for param in command.params:
        for flag in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
            if flag.startswith("-"):
                flags[flag] = param
    for i, word in enumerate(words[:tail]):
        flag = word.split("=", 1)[0]
        if not word.startswith("-") or re.match(r"^-\d", word) or word == "-":
            continue
        param = flags.get(flag)
        if param is None:
            continue  # the parser below names it
        if getattr(param, "hidden", False):
            out.append(f"{flag} is a deprecated spelling (hidden from --help): {param.help}")
        value = word.split("=", 1)[1] if "=" in word else (words[i + 1] if i + 1 < tail else None)
        choices = fixed_choices(param)
        if choices and value is not None and not getattr(param, "is_flag", False) and not PLACEHOLDER.search(value) \
                and value not in choices:
            out.append(f"{flag} {value!r} is not one of its values: {', '.join(choices)}")
    if PLACEHOLDER.search(" ".join(words[:tail])):  # placeholders (<job>, {X}, ID): flags checked, no parse
        return out
    try:
        _parse(words)
    except Exception as err:  # click's usage errors
        message = getattr(err, "format_message", lambda: str(err))()
        prose = "requires an argument" in message and words[-1].startswith("-")  # `run --profile` in a sentence
        if type(err).__name__ not in ("Exit", "MissingParameter") and not prose:
            out.append(f"the parser refuses it: {message}")
    return out


def fixed_choices(param) -> "tuple[str, ...]":
    """The values an option offers by completion when they are a fixed list (output formats, targets, ...)."""
    if "--target" in getattr(param, "opts", ()):
        from nodeweave.cluster.options import TARGET_ALIASES, TARGETS

        return (*TARGETS, *TARGET_ALIASES)
    complete = getattr(param, "_custom_shell_complete", None)
    inner = getattr(complete, "__closure__", None) or ()
    for cell in inner:
        found = getattr(cell.cell_contents, "choices", None)
        if found:
            return tuple(found)
    return ()


ALL_LINES = doc_lines() + help_lines() + source_lines() + make_lines()


def test_the_walk_finds_commands_in_every_source():
    kinds = {where.split(":")[0] for where, _ in ALL_LINES}
    assert len(ALL_LINES) > 250
    assert {"README.md", "spec.md", "make help", "src/nodeweave/cli/render.py"} <= kinds
    assert any(where.startswith("`nodeweave sync --help`") for where, _ in ALL_LINES)


@pytest.mark.parametrize("where, text", ALL_LINES, ids=[f"{w}|{t}" for w, t in ALL_LINES])
def test_every_named_command_is_taken_by_the_command_line(where, text):
    assert problems(text) == [], f"{where}: `{text}`"


def test_the_check_refuses_what_it_should():
    """Not vacuous: a deprecated flag, a bad choice, an unknown flag and an unknown verb each fail."""
    assert problems("nodeweave sync --to podman:c1")
    assert problems("nodeweave status -o tabel")
    assert problems("nodeweave up --target marsnet")
    assert problems("nodeweave run --dryrun -- x.py")
    assert problems("nodeweave frobnicate")
    assert problems("nodeweave sync --node podman:c1 --dry-run") == []


# ---- the hints the command line prints, and its "`OLD` is now `NEW`" notes ----------------------

def _call(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no engine, kubectl or ssh: nothing is reached
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


SPEC = "name: demo\nnodes: 2\ngpus_per_node: 1\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: train.py}\n"

# Mistakes a new user makes whose answer names a command to type instead.
MISTAKES = [
    ["run", "--", "accelerate", "launch", "train.py"],
    ["run", "--", "deepspeed", "train.py"],
    ["run", "--", "torchrun", "--nproc-per-node", "2", "train.py"],
    ["run", "--dry-run", "--", "python", "-m", "torch.distributed.run", "train.py"],
    ["doctor", "--on", "podman:x"],
    ["sync", "--to", "podman:c1", "--dry-run", ".", "/workspace"],
    ["sync", "-t", "podman:c1", "--dry-run", ".", "/workspace"],
    ["shell", "1", "--dry-run"],
    ["variants"],
    ["hosts", "probe", "--via", "podman:x"],
    ["init", "--via", "podman", "--host", "x", "--dry-run"],
]


@pytest.mark.parametrize("argv", MISTAKES, ids=[" ".join(a) for a in MISTAKES])
def test_every_hint_printed_names_a_command_that_is_taken(argv, capsys, tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('hi')\n")
    _, said = _call(argv, capsys, tmp_path, monkeypatch)
    named = command_lines(said, verb_first=True)
    notes = dict(re.findall(r"`([^`]+)` is now `([^`]+)`", said))
    for line in named:
        if any(line.endswith(old) for old in notes):
            continue  # the old spelling the note quotes
        assert problems(line) == [], f"`nodeweave {' '.join(argv)}` says {said.strip()!r}; `{line}` is not taken"


def _hidden_params():
    """Every hidden parameter but the root's copies of the verbs' own options, there for shell completion only
    (`nodeweave -o <TAB>`, walk5 W54; a real call moves them after the verb)."""
    from nodeweave.cli import VERB_FLAGS, VERB_OPTIONS_WITH_VALUE
    from nodeweave.cluster.options import FLAG_VERBS

    completing = set(VERB_OPTIONS_WITH_VALUE) | set(VERB_FLAGS)
    # a reach flag a verb refuses (FLAG_VERBS: --overlay outside up and down) is read only to be refused, and so
    # hidden from that verb's --help (walk12 A17): no old spelling either
    refused = {(verb, flag) for flag, verbs, _ in FLAG_VERBS.values() for verb in COMMANDS if verb not in verbs}
    return sorted({(path, p.opts[0] if getattr(p, "opts", None) else p.name)
                   for path, c in COMMANDS.items() for p in c.params if getattr(p, "hidden", False)
                   and not (not path and set(getattr(p, "opts", ())) & completing)
                   and (path, p.opts[0] if getattr(p, "opts", None) else p.name) not in refused})


# each hidden (deprecated) spelling, as a user would still type it: the note must name a working new one
OLD_SPELLINGS = {
    ("doctor", "--on"): ["doctor", "--on", "podman:x"],  # --on only ever named the nodes --cluster asks
    ("hosts probe", "hosts"): ["hosts", "probe", "podman:x"],
    ("hosts probe", "--via"): ["hosts", "probe", "--via", "podman:x"],
    ("hosts probe", "--hostfile"): ["hosts", "probe", "--node", "podman:x", "--hostfile", "h.txt"],
    ("init", "--via"): ["init", "--via", "podman", "--host", "x", "--dry-run"],
    ("shell", "command"): ["shell", "1", "--dry-run"],
    ("sync", "--to"): ["sync", "--to", "podman:c1", "--dry-run", ".", "/workspace"],
}


def test_every_hidden_spelling_has_a_case():
    assert set(_hidden_params()) <= set(OLD_SPELLINGS)


@pytest.mark.parametrize("key", sorted(OLD_SPELLINGS), ids=[" ".join(k) for k in sorted(OLD_SPELLINGS)])
def test_a_renamed_spelling_notes_a_new_one_that_does_the_same(key, capsys, tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    argv = OLD_SPELLINGS[key]
    old_code, said = _call(argv, capsys, tmp_path, monkeypatch)
    notes = re.findall(r"`([^`]+)` is now `([^`]+)`", said)
    assert notes, f"`nodeweave {' '.join(argv)}` prints no note naming the new spelling: {said!r}"
    old, new = notes[0]
    old_words, new_words = shlex.split(old), shlex.split(new)
    old_words = old_words[1:] if old_words[0] == "nodeweave" else old_words
    new_words = new_words[1:] if new_words[0] == "nodeweave" else new_words
    rest = list(argv)
    for word in old_words:  # the words the note quotes, in order, replaced by the new ones
        if word in rest:
            rest.remove(word)
    verb_words = [w for w in new_words if f"{w}" in VERBS or w in ("probe",)]
    rest = [w for w in rest if w not in verb_words]
    new_argv = [*new_words, *rest]
    new_code, new_said = _call(new_argv, capsys, tmp_path, monkeypatch)
    assert "is now" not in new_said
    assert new_code != 2 or old_code == 2 and "error: --node" not in new_said, (
        f"`nodeweave {' '.join(argv)}` says to type `nodeweave {' '.join(new_argv)}`, which is refused: {new_said!r}")
    assert new_code == old_code or old_code == 2, (f"`nodeweave {' '.join(argv)}` (exit {old_code}) says to type "
                                  f"`nodeweave {' '.join(new_argv)}`, which ends {new_code}: {new_said.strip()!r}")


# ---- the defaults and exit codes each help states ----------------------------------------------

def test_every_help_that_lists_exit_codes_lists_bad_input_and_not_up():
    """A verb's `Exit 0: ...` list is whole: every verb that acts on nodes also ends 2 (bad input) and 3."""
    listed = {path: c.help for path, c in COMMANDS.items() if re.search(r"\bExit 0\b", c.help or "")}
    assert {"run", "exec", "check", "sync"} <= set(listed)
    for path, text in listed.items():
        for code in ("1", "2", "3"):
            assert re.search(rf"\b{code}: ", text), f"`nodeweave {path} --help` lists no exit {code}: {text}"
    assert "5: " in listed["run"], "run --check ends 5 when it names a node"


def test_one_default_target_and_one_text_on_every_verb():
    """Every verb's -t/--target says the same default (sync's included), naming the file local starts."""
    texts = {path: next(p.help for p in c.params if "--target" in getattr(p, "opts", ()))
             for path, c in COMMANDS.items() if any("--target" in getattr(p, "opts", ()) for p in c.params)
             and path != "image build"}  # where to build (this machine or OpenShift), not a cluster
    assert len(set(texts.values())) == 1, texts
    text = next(iter(texts.values()))
    assert ".nodeweave/<job>/compose.yaml" in text and "compose/local.yaml" not in text
    sync_help = COMMANDS["sync"].help
    assert "StatefulSet pods" not in sync_help and "else local" in sync_help


def test_an_option_default_and_its_verb_say_the_same():
    """doctor: the description and --node agree on what --node defaults to."""
    doctor = COMMANDS["doctor"]
    node = next(p for p in doctor.params if "--node" in getattr(p, "opts", ()))
    description = " ".join((doctor.help or "").split())
    said_by_option = re.findall(r"default: ([^;,.)]*)", node.help or "")
    said_by_verb = re.findall(r"default: ([^;,.)]*)", description)
    assert said_by_option and said_by_option == said_by_verb, (node.help, description)


# ---- what the docs say a spec or a verb takes ----------------------------------------------------

DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_synopsis_lists_every_choice_of_its_argument():
    """`nodeweave render [images|compose|...]`: the bracketed list is the argument's whole choice list."""
    seen = 0
    for doc in DOC_FILES:
        for match in re.finditer(r"nodeweave ([a-z ]+?) \[([a-z-]+(?:\|[a-z-]+)+)\]", doc.read_text(encoding="utf-8")):
            command = COMMANDS.get(match.group(1).strip())
            argument = next((p for p in getattr(command, "params", ()) if p.param_type_name == "argument"), None)
            choices = fixed_choices(argument) if argument is not None else ()
            if not choices:
                continue
            seen += 1
            assert set(match.group(2).split("|")) == set(choices), (
                f"{doc.name}: `nodeweave {match.group(1)} [{match.group(2)}]`; the command takes {'|'.join(choices)}")
    assert seen


def test_each_spec_field_has_one_row():
    rows = re.findall(r"^\| `([a-z_.]+)` \|", (REPO / "docs" / "spec.md").read_text(encoding="utf-8"), re.M)
    assert len(rows) > 40
    assert sorted(r for r in set(rows) if rows.count(r) > 1) == []


def _field_paths():
    return set(re.findall(r"^\| `([a-z_.]+)` \|", (REPO / "docs" / "spec.md").read_text(encoding="utf-8"), re.M))


BASE_SPEC = {"name": "demo", "nodes": 2, "gpus_per_node": 1, "image": {"variant": "cpu"},
             "launcher": {"type": "torchrun", "script": "train.py"}}


def doc_spec_settings():
    """(where, field path, value text) of every `field: value` a doc writes as something to put in a spec."""
    paths = _field_paths()
    leaves = {}
    for path in paths:
        leaves.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    found = []
    for doc in DOC_FILES:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for match in re.finditer(r"`([a-z_]+(?:\.[a-z_]+)*): ([^`{}\[\]<>]+)`", line):
                name, value = match.group(1), match.group(2).strip()
                path = name if name in paths else (leaves.get(name, [None])[0] if len(leaves.get(name, [])) == 1 else None)
                if path is None or re.search(r"[A-Z]{2,}|\.\.\.|\bS\b", value) or value.startswith("*"):
                    continue  # a placeholder, or a YAML alias whose anchor the sentence sets elsewhere
                if shown_as_refused(line, match):
                    continue  # the doc shows it as a mistake
                found.append((f"{doc.name}:{number}", path, value))
    return found


SETTINGS = doc_spec_settings()


def test_the_docs_write_many_spec_settings():
    assert len(SETTINGS) > 15


@pytest.mark.parametrize("where, path, value", SETTINGS, ids=[f"{w}|{p}: {v}" for w, p, v in SETTINGS])
def test_every_spec_setting_a_doc_writes_is_accepted(where, path, value, tmp_path):
    import copy

    import yaml

    from nodeweave.errors import NodeweaveError
    from nodeweave.spec.loader import parse_spec

    data = copy.deepcopy(BASE_SPEC)
    keys = path.split(".")
    holder = data
    for key in keys[:-1]:
        holder = holder.setdefault(key, {})
        if not isinstance(holder, dict):
            pytest.skip(f"{path} sits under a value that is not a mapping here")
    holder[keys[-1]] = yaml.safe_load(value)
    if path.startswith("slurm"):
        data.setdefault("slurm", {})
    if path.startswith("recovery.") and path != "recovery.enabled":  # the docs write recovery's fields with it on;
        data["recovery"].setdefault("enabled", True)  # with it off they do nothing and are refused
    (tmp_path / "train.py").write_text("print(1)\n")
    try:
        parse_spec(yaml.safe_dump(data), base_dir=tmp_path)
    except NodeweaveError as err:
        pytest.fail(f"{where}: `{path.rsplit('.', 1)[-1] if path not in value else path}: {value}` is refused: {err}")


def test_a_job_keeps_everything_in_its_own_folder(tmp_path, capsys, monkeypatch):
    """cluster.md: everything nodeweave keeps for a job lives in `.nodeweave/<job>/`, so a job named `kube`
    meets no other job's tree (the kube tree was .nodeweave/kube/<job>, every job's in one folder)."""
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    assert main(["up", "-t", "kubernetes", "--dry-run"]) == 0
    written = re.findall(r"would write (\S+)", capsys.readouterr().out)
    assert written and all(path.startswith(".nodeweave/demo/") for path in written), written


def test_doctor_judges_this_machine_as_the_specs_job(tmp_path, capsys, monkeypatch):
    """doctor --spec: the token warning names the spec's job (what the nodes use), not the fallback id."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC.replace("name: demo", "name: llama-pretrain"))
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    for name in ("NODEWEAVE_JOB_ID", "NODEWEAVE_JOB_TOKEN", "NODEWEAVE_JOB_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    main(["doctor", "--spec", "nodeweave.yaml", "-o", "json"])
    said = capsys.readouterr().out
    assert "job id 'llama-pretrain'" in said and "job id 'nodeweave'" not in said


def test_a_node_index_miss_lists_the_nodes_as_a_name_miss_does(tmp_path, capsys, monkeypatch):
    """cluster.md: a --node that is no node fails listing the cluster's nodes with their addresses."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    for wanted in ("5", "1-5", "node-9"):
        assert main(["exec", "--node", wanted, "--dry-run", "--", "hostname"]) == 2
        err = capsys.readouterr().err
        assert "node-0 (podman:demo-0), node-1 (podman:demo-1)" in err, err


# ---- make's loop targets need only the command line --------------------------------------------

LOOP_TARGETS = ("render", "image", "sync", "up", "run", "status", "logs", "down")


@pytest.mark.parametrize("target", LOOP_TARGETS)
def test_a_loop_target_installs_only_the_command_line(target, tmp_path):
    """`make status` on a fresh checkout builds a venv with nodeweave alone: no torch, launchers or checkov."""
    planned = subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    assert "pip install" in planned.stdout, planned.stdout
    for heavy in ("torch", "checkov", "deepspeed", "[test", "launchers"):
        assert heavy not in planned.stdout, f"make {target} would install {heavy}: {planned.stdout}"
