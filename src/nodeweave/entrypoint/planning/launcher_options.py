"""A launcher's own options from the spec (``launcher.options``), checked against what nodeweave passes itself.

The options go between the launcher's flags and the script
(``accelerate launch ... --mixed_precision bf16 train.py``). An option the
plan already passes (``--nnodes``, ``--machine_rank``, DeepSpeed's
``--include`` when the visible devices set it, ...) would fight the value
nodeweave worked out, so it is refused, under any of its spellings
(``--node-rank``/``--node_rank``) and, for parsers that take abbreviations
(torchrun's, DeepSpeed's), as a prefix of one. The spellings are the
launchers' own; a test compares them with their parsers.
"""

from ..errors import UsageError

# Spellings of one option (argparse option_strings) for the options nodeweave passes.
ALIASES = {
    "torchrun": (("--nnodes",), ("--nproc-per-node", "--nproc_per_node"), ("--node-rank", "--node_rank"),
                 ("--master-addr", "--master_addr"), ("--master-port", "--master_port"),
                 ("--rdzv-backend", "--rdzv_backend"), ("--rdzv-endpoint", "--rdzv_endpoint"),
                 ("--rdzv-id", "--rdzv_id"), ("--rdzv-conf", "--rdzv_conf"), ("--local-addr", "--local_addr"),
                 ("--max-restarts", "--max_restarts")),
    "deepspeed": (("-H", "--hostfile"), ("--no_ssh",), ("--node_rank",), ("--master_addr",), ("--master_port",),
                  ("-i", "--include"), ("-e", "--exclude"), ("--num_nodes",), ("--num_gpus", "--num_accelerators"),
                  ("--launcher",)),
    "accelerate": (("--num_machines", "--num-machines"), ("--machine_rank", "--machine-rank"),
                   ("--main_process_ip", "--main-process-ip"), ("--main_process_port", "--main-process-port"),
                   ("--num_processes", "--num-processes"), ("--multi_gpu", "--multi-gpu"),
                   ("--max_restarts", "--max-restarts"), ("--rdzv_backend", "--rdzv-backend"),
                   ("--mpirun_hostfile", "--mpirun-hostfile"), ("--deepspeed_hostfile", "--deepspeed-hostfile"),
                   ("--deepspeed_multinode_launcher", "--deepspeed-multinode-launcher")),
}
# Options the spec may never give a launcher: every plan passes them, or passes what they would override.
# (DeepSpeed's --include/--exclude are passed only in some plans: checked then. torchrun's --rdzv-conf is
# merged into nodeweave's own on an elastic plan, see rdzv_conf(); a fixed-size plan does not pass it.)
ALWAYS = {
    "torchrun": ("--nnodes", "--nproc-per-node", "--node-rank", "--master-addr", "--master-port", "--rdzv-backend",
                 "--rdzv-endpoint", "--rdzv-id", "--local-addr", "--max-restarts"),
    "deepspeed": ("--hostfile", "--no_ssh", "--node_rank", "--master_addr", "--master_port"),
    "accelerate": ("--num_machines", "--machine_rank", "--main_process_ip", "--main_process_port", "--num_processes",
                   "--multi_gpu", "--max_restarts"),
}  # accelerate's --rdzv_backend is the user's: nodeweave never passes it (static, or c10d on the same endpoint)
# torchrun's and DeepSpeed's parsers take unambiguous prefixes (--nnode); accelerate's does not.
ABBREVIATES = ("torchrun", "deepspeed")
# Options that would replace what nodeweave manages, whatever the plan: the deepspeed node set and launcher, and
# each launcher's switches to a rendezvous or node set of its own (torchrun's --standalone: c10d on localhost,
# one node; accelerate's mpirun/DeepSpeed multi-node launchers and hostfiles), which make every node train alone.
NEVER = {"torchrun": ("--standalone",),
         "deepspeed": ("--num_nodes", "--num_gpus", "--launcher", "--hostfile", "--no_ssh"),
         "accelerate": ("--mpirun_hostfile", "--deepspeed_hostfile", "--deepspeed_multinode_launcher")}
# Which spec field gives each option nodeweave passes a launcher itself (a refusal names it; the rest come from
# the node's plan).
OWN_OPTION_FIELDS = {"--nnodes": "nodes", "--nproc-per-node": "gpus_per_node", "--max-restarts": "launcher.max_restarts",
                     "--max_restarts": "launcher.max_restarts", "--num_processes": "nodes and gpus_per_node",
                     "--num_machines": "nodes", "--master_port": "launcher.master_port",
                     "--master-port": "launcher.master_port", "--main_process_port": "launcher.master_port",
                     "--num_nodes": "nodes", "--num_gpus": "gpus_per_node",
                     "--standalone": "nodes and the master: the rendezvous",
                     "--mpirun_hostfile": "nodes and the master: the rendezvous",
                     "--deepspeed_hostfile": "nodes and the master: the rendezvous",
                     "--deepspeed_multinode_launcher": "nodes and the master: the rendezvous"}
PLAN_FIELD = "the node's plan: rank, master, hostfile, process count"
# An option nodeweave sets that a `nodeweave run` flag sets for one run (spellings of the three launchers).
RUN_FLAGS = {"--nproc-per-node": "--nproc-per-node", "--nproc_per_node": "--nproc-per-node",
             "--num_gpus": "--nproc-per-node", "--nnodes": "--nodes", "--num_nodes": "--nodes",
             "--num_machines": "--nodes", "--num-machines": "--nodes"}
# Options after which the launcher reads the script (or module) next: the command's own arguments follow it.
SCRIPT_NEXT = ("-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path")
LAUNCHER_HELP = {"torchrun": "torchrun --help", "deepspeed": "deepspeed --help",
                 "accelerate": "accelerate launch --help"}


def _spellings(launcher, name):
    for group in ALIASES.get(launcher, ()):
        if name in group:
            return group
    return (name,)


def _names(option):
    """The option name of a token (``--lr=1`` -> ``--lr``; ``-ifoo`` -> ``-i``), or None for a value."""
    if not option.startswith("-") or option == "-" or option[1:2].isdigit():
        return None
    if option.startswith("--"):
        return option.split("=", 1)[0]
    return option[:2]


def clash(launcher, option, taken):
    """The option of ``taken`` (names nodeweave passes) that ``option`` would set, or None."""
    name = _names(option)
    if name is None:
        return None
    for own in taken:
        spellings = _spellings(launcher, own)
        if name in spellings:
            return own
        if launcher in ABBREVIATES and name.startswith("--") and len(name) > 2 \
                and any(s.startswith(name) for s in spellings if s.startswith("--")):
            return own
    return None


def unknown(launcher, option):
    """Why ``option`` is not one of ``launcher``'s own options (``launcher_table``), or None when it is one or
    is a value. A parser that takes abbreviations takes an unambiguous prefix of a long option, as argparse does."""
    from .launcher_table import OPTIONS

    name = _names(option)
    known = OPTIONS.get(launcher)
    if name is None or known is None or name in known:
        return None
    if launcher in ABBREVIATES and name.startswith("--") and len(name) > 2:
        longer = sorted(k for k in known if k.startswith(name))
        if len(longer) == 1 or len({k.replace("-", "_") for k in longer}) == 1:
            return None
        if longer:
            return f"is short for more than one {launcher} option ({', '.join(longer)})"
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"is not an option of {launcher}{hint}"


def check(launcher, options, argv, source):
    """Refuse (exit 2) an option that ``argv`` (the planned launcher line) or nodeweave already sets."""
    if not options:
        return
    if launcher == "command":
        raise UsageError(f"launcher options {' '.join(options)!r} (from {source}) need a launcher; launcher command "
                         "runs the command as given: put them in launcher.args (the command's own arguments)")
    taken = [token for token in argv if token.startswith("-")] + list(NEVER.get(launcher, ()))
    if launcher == "deepspeed" and "--include" in taken:
        taken.append("--exclude")  # DeepSpeed takes one of them, not both
    for option in options:
        own = clash(launcher, option, taken)
        if own == "--exclude" and launcher == "deepspeed":
            own = "--include"  # what nodeweave passes; --exclude would contradict it
        if own is not None:
            raise UsageError(f"launcher option {option!r} (from {source}) sets {own}, which nodeweave passes "
                             f"{launcher} itself from the spec and the node; accepted: any other {launcher} option "
                             "(docs/spec.md says which spec field sets each)")
        why = unknown(launcher, option)  # the spec's rule (launcher.options), on the variable too (walk5 W73)
        if why is not None:
            from .launcher_table import READ_FROM

            raise UsageError(f"launcher option {option!r} (from {source}) {why}; accepted: an option of "
                             f"{launcher}'s own parser (as of {READ_FROM[launcher]}; `{LAUNCHER_HELP[launcher]}` "
                             "lists them)")


def command_clash(launcher, command):
    """``(word, own)``: the first launcher option at the head of ``command`` (before the script) that sets ``own``,
    an option nodeweave passes ``launcher`` itself (:data:`ALWAYS`, :data:`NEVER`), or None. The launcher takes the
    last of two, so ``-- --nproc-per-node 2 train.py`` would win over the plan, which says another count (walk6 N7).
    The one table for the spec's launcher.options, the entrypoint's command and ``nodeweave run``'s."""
    taken = list(ALWAYS.get(launcher, ())) + list(NEVER.get(launcher, ()))
    if not taken:
        return None
    after_option = False
    for word in command:
        if not word.startswith("-") or word == "-":
            if word.endswith(".py") or not after_option:
                return None  # the script: what follows is its own
            after_option = False  # an option's value
            continue
        own = clash(launcher, word, taken)
        if own is not None:
            return word, own
        if word.split("=", 1)[0] in SCRIPT_NEXT:
            return None
        after_option = "=" not in word
    return None


def own_option_field(own):
    """Where the value of ``own``, an option nodeweave passes, comes from: a spec field or the node's plan."""
    return OWN_OPTION_FIELDS.get(own, PLAN_FIELD)


RDZV_CONF = ("--rdzv-conf", "--rdzv_conf")
# rendezvous settings the plan decides: node 0 says it hosts the store, no other node may
RDZV_OWN = ("is_host",)


def _rdzv_conf_values(options):
    """(index, value, consumed) of each torchrun ``--rdzv-conf`` in ``options``, in its four spellings."""
    found = []
    i = 0
    while i < len(options):
        option = options[i]
        name, eq, value = option.partition("=")
        if name in RDZV_CONF and eq:
            found.append((i, value, 1))
        elif option in RDZV_CONF:
            if i + 1 >= len(options):
                found.append((i, None, 1))
            else:
                found.append((i, options[i + 1], 2))
                i += 1
        i += 1
    return found


def rdzv_conf(options, source):
    """The ``key=value`` pairs of the spec's ``--rdzv-conf`` (torchrun's own syntax: ``k=v,k2=v2``).

    An elastic plan passes ``--rdzv-conf`` itself (keep-alive, and ``is_host`` on
    node 0); the user's pairs are merged into it rather than replacing it, as
    torchrun's parser would with a second ``--rdzv-conf``. ``is_host`` stays the
    plan's: one node hosts the store.
    """
    pairs = {}
    for _, value, _ in _rdzv_conf_values(list(options)):
        if not value:
            raise UsageError(f"launcher option --rdzv-conf (from {source}) has no value; accepted: "
                             "--rdzv-conf KEY=VALUE[,KEY=VALUE...], e.g. --rdzv-conf last_call_timeout=60")
        for pair in value.split(","):
            key, eq, val = pair.partition("=")
            key = key.strip()
            if not eq or not key:
                raise UsageError(f"launcher option --rdzv-conf {value!r} (from {source}): {pair!r} is not "
                                 "KEY=VALUE; accepted: --rdzv-conf KEY=VALUE[,KEY=VALUE...]")
            if key in RDZV_OWN:
                raise UsageError(f"launcher option --rdzv-conf {value!r} (from {source}) sets {key}, which nodeweave "
                                 "passes torchrun itself (node 0 hosts the c10d store); accepted: any other "
                                 "rendezvous setting (join_timeout, last_call_timeout, keep_alive_interval, ...)")
            pairs[key] = val.strip()
    return pairs


def without_rdzv_conf(options):
    """``options`` less every ``--rdzv-conf`` (merged into the plan's own by :func:`rdzv_conf`)."""
    drop = set()
    for index, _, consumed in _rdzv_conf_values(list(options)):
        drop.update(range(index, index + consumed))
    return [option for i, option in enumerate(options) if i not in drop]
