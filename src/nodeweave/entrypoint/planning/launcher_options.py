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
                   ("--max_restarts", "--max-restarts"), ("--rdzv_backend", "--rdzv-backend")),
}
# Options the spec may never give a launcher: every plan passes them, or passes what they would override.
# (torchrun's --rdzv-conf and DeepSpeed's --include/--exclude are passed only in some plans: checked then.)
ALWAYS = {
    "torchrun": ("--nnodes", "--nproc-per-node", "--node-rank", "--master-addr", "--master-port", "--rdzv-backend",
                 "--rdzv-endpoint", "--rdzv-id", "--local-addr", "--max-restarts"),
    "deepspeed": ("--hostfile", "--no_ssh", "--node_rank", "--master_addr", "--master_port"),
    "accelerate": ("--num_machines", "--machine_rank", "--main_process_ip", "--main_process_port", "--num_processes",
                   "--multi_gpu", "--max_restarts"),
}  # accelerate's --rdzv_backend is the user's: nodeweave never passes it (static, or c10d on the same endpoint)
# torchrun's and DeepSpeed's parsers take unambiguous prefixes (--nnode); accelerate's does not.
ABBREVIATES = ("torchrun", "deepspeed")
# Options that would replace what nodeweave manages, whatever the plan: the deepspeed node set and launcher.
NEVER = {"deepspeed": ("--num_nodes", "--num_gpus", "--launcher", "--hostfile", "--no_ssh")}


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
