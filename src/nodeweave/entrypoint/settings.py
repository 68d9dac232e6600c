"""Command line and ``NODEWEAVE_*`` variables → :class:`Settings`.

A hand-written parser instead of argparse: it keeps start-up small and lets
the command after the options (the container's CMD: ``train.py --lr 3e-4``)
pass through untouched, with or without a ``--`` in front of it. Flags win over
variables; topology flags are kept raw so :mod:`topology` can weigh them
against the other rank sources and report where each value came from.
"""

from .errors import UsageError
from .model import _DICT, Record, Value

LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "command")

# flag → (settings key, environment variable or None, help)
OPTIONS = {
    "--launcher": ("launcher", "NODEWEAVE_LAUNCHER", "torchrun | deepspeed | accelerate | command (default torchrun)"),
    "--nnodes": ("nnodes", "NODEWEAVE_NNODES", "node count N, or MIN:MAX for elastic torchrun"),
    "--node-rank": ("node_rank", "NODEWEAVE_NODE_RANK", "this node's rank, 0..N-1"),
    "--nproc-per-node": ("nproc_per_node", "NODEWEAVE_NPROC_PER_NODE", "processes per node, or auto (one per usable GPU; 1 on CPU)"),
    "--master-addr": ("master_addr", "NODEWEAVE_MASTER_ADDR", "address of node 0 (the rendezvous host)"),
    "--master-port": ("master_port", "NODEWEAVE_MASTER_PORT", "rendezvous port (default 29500)"),
    "--service": ("service", "NODEWEAVE_SERVICE", "headless Service: master = <name>-0.<service>.<namespace>.svc.cluster.local"),
    "--hostfile": ("hostfile", "NODEWEAVE_HOSTFILE", "file of '<host> [slots=N]' lines, node 0 first; this host's line gives the rank"),
    "--rdzv-id": ("job_id", "NODEWEAVE_JOB_ID", "rendezvous id for elastic torchrun (default: the StatefulSet/host name prefix)"),
    "--max-restarts": ("max_restarts", "NODEWEAVE_MAX_RESTARTS", "torchrun --max-restarts / accelerate --max_restarts"),
    "--wait-timeout": ("wait_timeout", "NODEWEAVE_WAIT_TIMEOUT", "seconds a worker waits for the master's port (default 600; 0 = do not wait)"),
    "--ifname": ("ifname", "NODEWEAVE_INTERFACES", "socket interface(s) for NCCL/Gloo, overriding the route to the master"),
    "--exclude-hca": ("exclude_hcas", "NODEWEAVE_EXCLUDE_HCAS", "RDMA devices or dev:port to keep NCCL off (storage fabric), comma list"),
    "--sysroot": ("sysroot", "NODEWEAVE_SYSROOT", "root prefix for every sysfs/procfs read (tests, captured trees)"),
}
FLAGS = {
    "--explain": ("explain", "print what was found and decided, then exit without exec'ing"),
    "--json": ("json", "with --explain: the plan as JSON (schema nodeweave.entrypoint/1)"),
    "--no-wait": ("no_wait", "do not wait for the master's port before exec'ing"),
}
# Topology inputs are weighed against the other rank sources in topology.py.
TOPOLOGY_KEYS = ("nnodes", "node_rank", "nproc_per_node", "master_addr", "master_port")


class Settings(Record):
    FIELDS = (
        ("command", ()),        # the script/command and its arguments
        ("flags", _DICT),       # topology key → value given as a flag
        ("options", _DICT),     # other key → Value(value, source)
        ("explain", False),
        ("json", False),
        ("no_wait", False),
        ("sysroot", "/"),
        ("env", None),          # the environment the plan reads (a dict)
    )

    def get(self, key, default=None):
        value = self.options.get(key)
        return value.value if value is not None else default

    def source(self, key):
        value = self.options.get(key)
        return value.source if value is not None else "default"


def usage():
    lines = [
        "usage: nodeweave-entrypoint [options] [--] SCRIPT [ARGS...]",
        "",
        "Detects the node (GPUs, RDMA NICs, interfaces, limits), finds its rank, node",
        "count and master, sets the few NCCL/RCCL variables NCCL cannot get right alone,",
        "then execs torchrun / deepspeed / accelerate / the command. Flags win over the",
        "variables named in brackets. See docs/entrypoint.md.",
        "",
        "options:",
    ]
    for flag, (_, var, text) in OPTIONS.items():
        lines.append(f"  {flag} VALUE".ljust(26) + f"{text}" + (f" [{var}]" if var else ""))
    for flag, (_, text) in FLAGS.items():
        lines.append(f"  {flag}".ljust(26) + text)
    lines.append("  -h, --help".ljust(26) + "show this help and exit")
    return "\n".join(lines)


class HelpRequested(Exception):
    pass


def parse(argv, env):
    """Parse ``argv`` (without the program name) with ``env`` as the variables."""
    flags, options, switches = {}, {}, {}
    command = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            command = list(argv[i + 1:])
            break
        if arg in ("-h", "--help"):
            raise HelpRequested()
        if not arg.startswith("-") or arg == "-":
            command = list(argv[i:])
            break
        name, eq, inline = arg.partition("=")
        if name in FLAGS:
            if eq:
                raise UsageError(f"{name} takes no value (got {arg!r})")
            switches[FLAGS[name][0]] = True
            i += 1
            continue
        if name not in OPTIONS:
            raise UsageError(
                f"unknown option {name!r}; put the training command after the options "
                f"(or after --). Options: {', '.join(sorted(OPTIONS) + sorted(FLAGS))}"
            )
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value: {OPTIONS[name][2]}")
            value = argv[i + 1]
            i += 2
        key = OPTIONS[name][0]
        if key in TOPOLOGY_KEYS:
            flags[key] = value
        else:
            options[key] = Value(value=value, source=f"flag {name}")
    for flag, (key, var, _) in OPTIONS.items():
        if key in TOPOLOGY_KEYS or key in options or not var:
            continue
        if env.get(var, "") != "":
            options[key] = Value(value=env[var], source=var)
    launcher = options.get("launcher")
    if launcher is not None and launcher.value not in LAUNCHERS:
        raise UsageError(
            f"unknown launcher {launcher.value!r} (from {launcher.source}); "
            f"accepted: {', '.join(LAUNCHERS)}"
        )
    settings = Settings(
        command=tuple(command),
        flags=flags,
        options=options,
        explain=switches.get("explain", False),
        json=switches.get("json", False),
        no_wait=switches.get("no_wait", False),
        env=env,
    )
    settings.sysroot = settings.get("sysroot", "/") or "/"
    return settings


def parse_int(text, what, source, minimum=0):
    """An integer ≥ minimum, or a UsageError naming the value and its source."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise UsageError(f"{what} must be a whole number, got {text!r} (from {source})") from None
    if value < minimum:
        raise UsageError(f"{what} must be ≥ {minimum}, got {value} (from {source})")
    return value


def split_list(text):
    return [item.strip() for item in str(text or "").split(",") if item.strip()]
