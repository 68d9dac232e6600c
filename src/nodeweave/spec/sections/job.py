"""The job itself: node count, processes per node, launcher, workspace, cache, environment, hosts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Optional

from yaml.nodes import Node, ScalarNode

from nodeweave.entrypoint.hostport import host_key
from nodeweave.entrypoint.planning import launcher_options, launcher_table
from nodeweave.entrypoint.planning.reserved import PATH_ACCEPTED, instead, reserved_reason, value_problem
from nodeweave.spec import rules
from nodeweave.spec.fields import (boolean, choice, each, host_path, integer, optional, optional_container_path,
                                   rule_list, string_map)
from nodeweave.entrypoint.planning.contract import stall_problem
from nodeweave.spec.model import LAUNCHERS, MODES, Cache, Launcher, NodeRange, Workspace
from nodeweave.entrypoint.planning.contract import NODES_MAX, NPROC_MAX
from nodeweave.entrypoint.planning.shared_rules import RANGES, SCRIPT_ACCEPTED
from nodeweave.spec.mounts import check_inside_workspace
from nodeweave.spec.nodes import Fields, Reader

NODES_ACCEPTED = (f'a node count from 1 to {NODES_MAX}, or "MIN:MAX" with 1 <= MIN <= MAX <= {NODES_MAX} for an '
                  'elastic job (e.g. 2 or "2:4")')
GPUS_ACCEPTED = f'processes per node: an integer from 1 to {NPROC_MAX}, or "auto" (one per detected GPU)'


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def nodes(r: Reader, node: Optional[Node]) -> NodeRange:
    if node is None:
        return NodeRange(1, 1)
    r.refuse_quoted(node, "nodes", NODES_ACCEPTED)
    if ":" not in str(getattr(node, "value", "")):  # MIN:MAX (YAML 1.1's base 60) is the elastic range
        r.refuse_unplain_int(node, "nodes", NODES_ACCEPTED)
    if r.is_int(node):
        count = r.integer(node, "nodes", 1, NODES_MAX, accepted=NODES_ACCEPTED)
        return NodeRange(count, count)
    text = r.string(node, "nodes", NODES_ACCEPTED).strip()
    low, sep, high = text.partition(":")
    if not (_digits(low) and (not sep or _digits(high))):  # ASCII digits: str.isdigit() takes '٣' too
        raise r.bad_value(node, "nodes", NODES_ACCEPTED)
    low_n, high_n = int(low), int(high) if sep else int(low)
    if low_n < 1:
        raise r.fail(node, "nodes", f"MIN must be at least 1 (got '{text}')", NODES_ACCEPTED)
    if high_n < low_n:
        raise r.fail(node, "nodes", f"MAX ({high_n}) must be >= MIN ({low_n})", NODES_ACCEPTED)
    if high_n > NODES_MAX:
        raise r.fail(node, "nodes", f"{high_n} nodes is more than nodeweave plans for", NODES_ACCEPTED)
    return NodeRange(low_n, high_n)


def gpus(r: Reader, node: Optional[Node]):
    if node is None:
        return "auto"
    r.refuse_quoted(node, "gpus_per_node", GPUS_ACCEPTED)
    r.refuse_unplain_int(node, "gpus_per_node", GPUS_ACCEPTED)
    if r.is_int(node):
        return r.integer(node, "gpus_per_node", 1, NPROC_MAX, accepted=GPUS_ACCEPTED)
    if r.string(node, "gpus_per_node", GPUS_ACCEPTED) != "auto":
        raise r.bad_value(node, "gpus_per_node", GPUS_ACCEPTED)
    return "auto"


LAUNCHER_KEYS = ("type", "script", "args", "options", "master_port", "max_restarts", "wait_timeout", "exchange",
                 "exchange_port", "exchange_allow", "mode", "setup", "stall_warn", "stall_timeout")
WORKSPACE_KEYS = ("path", "host_path")
CACHE_KEYS = ("path", "host_path", "size")


def launcher(r: Reader, top: Fields) -> Launcher:
    f = r.fields(top.require("launcher", "a mapping with at least 'script'"), "launcher", LAUNCHER_KEYS)
    script_node = r.field(lambda: f.require("script", "the training script, relative to workspace.path (for type "
                                            "command: argv[0])"), None)
    script = None if script_node is None else r.field(lambda: _script(r, script_node), None)  # each field on its own: every mistake in one run
    args = each(r, f.get("args"), "launcher.args", "strings", lambda path, item: r.string(
        item, path, "a string (any scalar but null)"), words=True)
    kind = choice(r, f, "type", LAUNCHERS, "torchrun")
    master_port = integer(r, f, "master_port", 29500, 1, 65535)
    exchange_port = integer(r, f, "exchange_port", None, 1, 65535)
    if exchange_port == master_port:
        raise r.fail(f.get("exchange_port"), "launcher.exchange_port", f"{exchange_port} is launcher.master_port too: "
                     "node 0's check-in exchange and the launcher's rendezvous cannot share one port",
                     f"a port other than {master_port}, or leave exchange_port out (master_port + 1)")
    stall_warn = integer(r, f, "stall_warn", 60, *RANGES["stall_warn"], unit="seconds")
    stall_timeout = integer(r, f, "stall_timeout", 600, *RANGES["stall_timeout"], unit="seconds")
    stall = stall_problem(stall_warn, stall_timeout, f.get("stall_timeout") is not None)
    if stall is not None:
        field = "stall_timeout" if f.get("stall_timeout") is not None else "stall_warn"
        raise r.fail(f.get(field), f"launcher.{field}", stall[0], stall[1])
    if kind != "command" and script is not None:  # a command's argv[0] is a program, not a workspace file
        r.field(lambda: check_inside_workspace(r, script_node, "launcher.script", script, SCRIPT_ACCEPTED,
                                               absolute_too=False), None)
    return Launcher(
        type=kind,
        script=script,
        args=args,
        options=r.field(lambda: _options(r, f.get("options"), kind), ()),
        master_port=master_port,
        max_restarts=integer(r, f, "max_restarts", 0, *RANGES["max_restarts"]),
        wait_timeout=integer(r, f, "wait_timeout", 600, *RANGES["wait_timeout"], unit="seconds"),
        exchange=boolean(r, f, "exchange", True),
        exchange_port=exchange_port,
        exchange_allow=rule_list(r, f.get("exchange_allow"), "launcher.exchange_allow", rules.EXCHANGE_CHECK,
                                 unique=True),
        mode=choice(r, f, "mode", MODES, "run"),
        setup=_setup(r, f.get("setup")),
        stall_warn=stall_warn,
        stall_timeout=stall_timeout,
    )


def _script(r: Reader, node: Node) -> str:
    """``launcher.script``: one argv word, a path; its arguments go in ``args``."""
    r.refuse_number(node, "launcher.script", "a path such as train.py")
    script = r.string(node, "launcher.script", "a path such as train.py")
    if not rules.single_line(script):
        raise r.bad_value(node, "launcher.script", "a non-empty, single-line path such as train.py")
    words = script.split()
    if script.startswith("-"):  # walk15 A6: validate and up took it, and every node's launcher read it as an option
        raise r.fail(node, "launcher.script", f"{script!r} starts with '-', which the launcher would read as its "
                     "own option, on every node", f"the script's path, a file whose name starts with '-' written "
                     f"./{script} (the launcher's options go in launcher.options, the script's in launcher.args)")
    if any(word.startswith("-") for word in words[1:]):  # a path may hold spaces; options after it are args
        raise r.fail(node, "launcher.script", f"{script!r} holds options after the path (it is one argv "
                     "word, a path)", f"the path alone, e.g. script: {words[0]}, and its arguments as a list: "
                     f"args: {list(words[1:])}")
    return script


def _setup(r: Reader, node: Optional[Node]) -> tuple:
    """Shell lines for the node's environment (conda, module load, a site script): one command each, each line
    judged on its own."""
    from nodeweave.entrypoint.planning.contract import setup_line_alone

    def line_of(path: str, item: Node) -> str:
        line = r.string(item, path, "one shell command line, e.g. 'source ~/miniconda3/etc/profile.d/conda.sh'")
        if not rules.single_line(line):
            raise r.bad_value(item, path, "one non-empty shell command line (a list item per line)")
        if setup_line_alone(line):  # every node refuses it (the entrypoint's own test)
            raise r.fail(item, path, f"{line.strip()!r} alone does nothing, and every node refuses it",
                         "the whole command as one item, e.g. 'source /opt/venv/bin/activate' or 'module load cuda'")
        return line

    return each(r, node, "launcher.setup", "shell lines", line_of)




def _options(r: Reader, node: Optional[Node], kind: str) -> tuple:
    """The launcher's own options; one nodeweave passes itself is refused, naming the field that sets it."""
    items = r.sequence(node, "launcher.options", "strings", words=True)
    options = tuple(r.string(item, path, "a string (any scalar but null)") for path, item in items)
    if options and kind == "command":
        raise r.fail(node, "launcher.options", "launcher type command has no launcher to pass options to",
                     "the command's own arguments in launcher.args")
    taken = list(launcher_options.ALWAYS.get(kind, ())) + list(launcher_options.NEVER.get(kind, ()))
    for (path, item), option in zip(r.sequence(node, "launcher.options", "strings"), options):
        own = launcher_options.clash(kind, option, taken)
        if own is not None:
            field = launcher_options.own_option_field(own)
            raise r.fail(item, path, f"{option!r} sets {kind}'s {own}, which nodeweave passes itself (from {field})",
                         f"any other {kind} option, e.g. " + EXAMPLE_OPTIONS[kind])
        unknown = launcher_options.unknown(kind, option)
        if unknown is not None:  # it would fail at launch, on every node, after the image pulled
            raise r.fail(item, path, f"{option!r} {unknown}", f"an option of {kind}'s own parser (as of "
                         f"{launcher_table.READ_FROM[kind]}; `{LAUNCHER_HELP[kind]}` lists them), e.g. "
                         + EXAMPLE_OPTIONS[kind])
    if options and kind in LAUNCHER_HELP:  # judged whole, as every node judges them before its start (walk13 B9)
        import os

        from nodeweave.entrypoint.errors import UsageError as NodeRefusal
        from nodeweave.entrypoint.planning.launcher_parser import judge

        try:
            judge(kind, options, dict(os.environ), "launcher.options")
        except NodeRefusal as refused:
            problem, _, accepted = str(refused).partition("; accepted: ")
            raise r.fail(node, "launcher.options", problem.split(": ", 1)[-1], accepted) from None
    return options


LAUNCHER_HELP = {"torchrun": "torchrun --help", "deepspeed": "deepspeed --help", "accelerate": "accelerate launch --help"}
EXAMPLE_OPTIONS = {"torchrun": "--log-dir /workspace/logs --redirects 3", "deepspeed": "--bind_cores_to_rank",
                   "accelerate": "--mixed_precision bf16 --dynamo_backend inductor"}


def workspace(r: Reader, top: Fields, base_dir: Optional[Path] = None) -> Workspace:
    f = r.fields(top.get("workspace"), "workspace", WORKSPACE_KEYS)
    found = Workspace(path=optional_container_path(r, f, "path", "/workspace"),
                      host_path=host_path(r, f, "host_path", ".", homes=False))  # homes: workspace_folder_problem
    if base_dir is None:
        return found
    why = workspace_folder_problem(base_dir, found.host_path)
    if why and f.get("host_path") is None:  # the default: the spec's own folder is the workspace (walk9 A26, A27)
        raise r.fail(None, "workspace.host_path", f"unset, so the workspace is the spec's folder, and {why}",
                     "a spec in a project folder of its own (mkdir ~/proj && cd ~/proj, then nodeweave init "
                     "there), or workspace.host_path naming one")
    if why:
        raise r.fail(f.get("host_path"), "workspace.host_path", f"{found.host_path!r}: {why}",
                     "the project's own folder (the spec's folder, the default), a folder of its own such as "
                     "~/project, or one holding it (..)")
    return found


def workspace_folder_problem(base_dir: Path, written: str) -> Optional[str]:
    """Why the folder workspace.host_path names (from the spec's folder) may not be mounted into every node and
    sent by sync, or None: what sync refuses as SRC (a system folder such as /tmp, a home itself, a credential
    folder: ``shared_folder_problem``), a file, or nodeweave's own state (``.nodeweave/``, the run folders)
    (walk8 A30: validate took them all, sync refused only the first, and only once reached)."""
    import os

    from nodeweave.entrypoint.ownfolders import RUNS, STATE_DIR
    from nodeweave.remote.names import shared_folder_problem

    real = Path(os.path.realpath(base_dir / Path(written).expanduser()))
    why = shared_folder_problem(str(real))
    if why:
        return why
    if real.exists() and not real.is_dir():
        from nodeweave.entrypoint.bounded import what_is_there

        return f"{real} is {what_is_there(real)}, not a folder: the workspace is the folder that holds the script"
    if STATE_DIR in real.parts:
        return f"{real} is nodeweave's own state ({STATE_DIR}/: the cluster record and the job's token)"
    runs = Path(os.path.realpath(base_dir)) / RUNS
    if real == runs or runs in real.parents:
        return f"{real} is in the run folders {runs}, this machine's record of past runs"
    return None


def cache(r: Reader, top: Fields, base_dir: Optional[Path] = None) -> Cache:
    f = r.fields(top.get("cache"), "cache", CACHE_KEYS)
    return Cache(
        path=optional_container_path(r, f, "path", "/cache"),
        host_path=host_path(r, f, "host_path", "~/.cache/nodeweave", base_dir),
        size=optional(r, f, "size", rules.QUANTITY) or "200Gi",
    )


def _refuse_reserved(r: Reader, node: Node, path: str, key: str) -> None:
    reason = reserved_reason(key)
    if reason is not None:
        raise r.fail(node, path, reason, f"any other variable name ({instead(key)})")
    problem = value_problem(key, node.value) if isinstance(node, ScalarNode) else None
    if problem is not None:
        raise r.fail(node, path, problem, PATH_ACCEPTED)


def env(r: Reader, node: Optional[Node]) -> Mapping[str, str]:
    return string_map(r, node, "env", rules.ENV_NAME, refuse_key=_refuse_reserved)


ENV_SECRET_HINT = ("give it to the nodes as a file they mount read-only instead (volumes: a `secret` on Kubernetes, a "
                   "read-only `host_path` elsewhere) and point the tool at it (HF_TOKEN_PATH=/run/secrets/hf/token, "
                   "a ~/.netrc), or set it in the node's environment outside the spec")


# A secret's name among the environment's: a whole _-separated word (HF_TOKEN, WANDB_API_KEY, DB_PASSWORD), not a
# part of one (TOKENIZERS_PARALLELISM), and not the name of where the secret is (HF_TOKEN_PATH, ..._FILE, ..._DIR).
ENV_SECRET_NAME = re.compile(r"(^|_)(TOKEN|SECRET|PASSW(OR)?D|CREDENTIALS?|API_?KEY|PRIVATE_KEY|ACCESS_KEY)(_|$)",
                             re.IGNORECASE)
ENV_SECRET_WHERE = re.compile(r"_(PATH|FILE|DIR|URL|HOST|PORT)$", re.IGNORECASE)


def env_looks_secret(name: str) -> bool:
    return bool(ENV_SECRET_NAME.search(name)) and not ENV_SECRET_WHERE.search(name)


SETUP_EXPORT = re.compile(r"(?:^|[;&|]\s*|\bexport\s+)([A-Za-z_][A-Za-z0-9_]*)=(?:\S)")


def env_notes(values: Mapping[str, str], setup: tuple = ()) -> tuple:
    """One note per ``env`` entry, or ``launcher.setup`` line assigning a variable, whose name looks like a secret
    (``env_looks_secret``: the build's words, whole) and whose value is written out: the spec's env and setup are rendered in
    clear into compose/ and manifests/ (committed, sent by sync) and recorded in each run's folder, where the build
    keeps such a name out of every file (walk7 A13)."""
    named = [(f"env.{name}", name) for name, value in sorted(values.items()) if str(value).strip()]
    named += [(f"launcher.setup line {i} ({name}=...)", name) for i, line in enumerate(setup, 1)
              for name in SETUP_EXPORT.findall(line)]
    own_token = ((f"env.NODEWEAVE_JOB_TOKEN_FILE {values['NODEWEAVE_JOB_TOKEN_FILE']}: every node reads the job "
                  "token from this file, on every target, in place of the fresh one `nodeweave up` hands out; the "
                  "file must hold the same token on every node",)
                 if str(values.get("NODEWEAVE_JOB_TOKEN_FILE", "")).strip() else ())
    return own_token + tuple(
        f"{where} looks like a secret and holds its value: it is written in clear into the rendered "
        "compose/ and manifests/ files (committed, sent to every node by sync) and into each run's record; "
        + ENV_SECRET_HINT for where, name in named if env_looks_secret(name))


def host_notes(listed: tuple) -> tuple:
    """One note per host of the spec's ``hosts`` that the host rule every verb applies (``check_ssh_host``) refuses:
    an IPv6 address, which the rendered ``compose/node.yaml`` run by hand on each host takes (each host finds its rank
    by an address of its interfaces), but which ``up``, ``sync`` and every verb that reaches the hosts by ssh refuse
    (walk13 A17: validate said valid, then each verb refused a ``--host`` nobody typed)."""
    from nodeweave.errors import UsageError
    from nodeweave.remote.names import check_ssh_host

    notes = []
    for index, host in enumerate(listed):
        try:
            check_ssh_host(host, f"hosts[{index}]")
        except UsageError as err:
            notes.append(f"{err}; the rendered compose/node.yaml, run by hand on each host, takes it, but up, sync "
                         "and every verb that reaches the hosts by ssh refuse it")
    return tuple(notes)


def hosts(r: Reader, node: Optional[Node]) -> tuple:
    """Bare hosts, node 0 first; each must be listed once, in any case (a host's position is its rank)."""
    listed = rule_list(r, node, "hosts", rules.HOST, unique=True, same=host_key)
    loopback = rules.loopback_problem(listed)
    if loopback is not None:
        index, words = loopback
        problem, _, accepted = words.partition("; accepted: ")
        raise r.fail(node.value[index] if node is not None else None, f"hosts[{index}]", problem, accepted)
    return listed
