"""The launcher command line, and the variables every launcher convention expects.

- torchrun, fixed size: static rendezvous with ``--node-rank``; ``MIN:MAX``:
  ``--rdzv-backend c10d`` with ``--rdzv-endpoint``/``--rdzv-id`` (the endpoint
  through ``hostport.host_port``: ``[fd00::1]:29500``). ``--local-addr``
  is this node's address toward the master, so the address rank 0 publishes is
  one peers can reach (not a short hostname).
- deepspeed: ``--no_ssh --node_rank`` with a generated hostfile, one
  ``<host> slots=<n>`` line per node in rank order (DeepSpeed sums the slots for
  the world size and indexes the lines by node rank; the names need not resolve,
  and are ``node-<rank>`` when one is an IPv6 address: see :func:`hostfile_names`).
- accelerate: ``accelerate launch`` with machine rank and main process address,
  ``--num_processes`` counted over all machines, ``--multi_gpu`` (its torchrun
  path) when there is more than one. Without a usable GPU it also exports
  ``ACCELERATE_USE_CPU=true``, accelerate's own CPU switch (what ``--cpu``
  sets, which may not be combined with ``--multi_gpu``): without it each
  process sees ``DistributedType.NO`` and trains alone.
- command: the command as given.

``launcher.options`` (``NODEWEAVE_LAUNCHER_OPTIONS``) go between the
launcher's flags and the script; one that nodeweave already passes is
refused (``launcher_options.py``).

Every launcher also gets ``MASTER_ADDR MASTER_PORT NODE_RANK NNODES WORLD_SIZE``
(WORLD_SIZE counts processes) and torchrun's ``PET_*`` equivalents. The master
address is handed bare, IPv6 too (``--master-addr``, ``--master_addr``,
``--main_process_ip``, ``MASTER_ADDR``): each launcher reads it as a host.
"""

import os

from . import launcher_options
from .. import world
from ..errors import TopologyError, UsageError
from ..hostport import host_port, is_ipv6
from ..model import EnvVar, Launch

# Off for elastic jobs: torch 2.13 loses scale-up with the shared rendezvous store (see exports()).
SHARED_STORE_OFF = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


def _procs(topo):
    """Every node's processes of a fixed-size plan (:mod:`world`): the topology's, else this node's on each."""
    return topo.node_procs or [topo.nproc_per_node.value] * topo.nnodes_max


def _export(name, value, reason):
    return EnvVar(name=name, value=str(value), action="export", source="topology", reason=reason)


def exports(topo, env):
    """Launcher-neutral variables, plus PET_* as torchrun's flags would read them."""
    rank, nnodes = topo.node_rank.value, topo.nnodes.value
    addr, port = topo.master_addr.value, topo.master_port.value
    out = [
        _export("MASTER_ADDR", addr, topo.master_addr.source),
        _export("MASTER_PORT", port, topo.master_port.source),
        _export("NODE_RANK", rank, topo.node_rank.source),
        _export("NNODES", nnodes, topo.nnodes.source),
    ]
    if topo.world_size is not None:
        reason = world.described(_procs(topo))  # uneven slots: their sum (walk12b B10; fix13d)
        if env.get("WORLD_SIZE") not in (None, str(topo.world_size)):
            reason += f" (was {env['WORLD_SIZE']}: counted pods, not processes)"
        out.append(_export("WORLD_SIZE", topo.world_size, reason))
    out += [
        _export("PET_NNODES", nnodes, "torchrun --nnodes"),
        _export("PET_NPROC_PER_NODE", topo.nproc_per_node.value, "torchrun --nproc-per-node"),
    ]
    if topo.elastic:
        out += [
            _export("PET_RDZV_BACKEND", "c10d", "torchrun --rdzv-backend (elastic)"),
            _export("PET_RDZV_ENDPOINT", host_port(addr, port), "torchrun --rdzv-endpoint"),
            _export("PET_RDZV_ID", topo.job_id, "torchrun --rdzv-id"),
        ]
        if SHARED_STORE_OFF not in env:
            out.append(_export(SHARED_STORE_OFF, "1", "a node joining a running job otherwise waits for a "
                               "MASTER_ADDR the shared rendezvous store never publishes (torch 2.13; docs/engine.md)"))
    else:
        out += [
            _export("PET_NODE_RANK", rank, "torchrun --node-rank"),
            _export("PET_MASTER_ADDR", addr, "torchrun --master-addr"),
            _export("PET_MASTER_PORT", port, "torchrun --master-port"),
        ]
    return out


def launcher_exports(launch, node, env):
    """Variables one launcher needs beyond the common ones."""
    if launch.launcher == "accelerate" and not node.gpus.count and "ACCELERATE_USE_CPU" not in env:
        return [_export("ACCELERATE_USE_CPU", "true", "no usable GPU: accelerate's own CPU switch, so its processes "
                        "join one gloo group (MULTI_CPU) instead of each training alone")]
    return []


DROPPED_UNDER_RECOVERY = ("nodeweave restarts the whole job as a new generation instead, up to recovery's own "
                          "budget (NODEWEAVE_RECOVERY_MAX_RESTARTS)")


def _restarts(settings, topo, launcher, warnings):
    """The launcher's own restart count: none under recovery (nodeweave restarts the job); a warning where
    the launcher's restarts cannot work (a static rendezvous spanning nodes restarts one node's ranks alone)."""
    restarts = settings.get("max_restarts")
    given = _restarts_option(settings, launcher)
    source = settings.source("launcher_options")
    if settings.get("recovery"):
        # every spelling of the launcher's own restart count is dropped from the launch and said, one rule
        # (walk7 B44; walk11b B1: the launcher options' spelling was refused while the setting's was warned)
        dropped = [(f"max restarts {restarts} ({settings.source('max_restarts')})", restarts)]
        if given is not None:
            dropped.append((f"launcher option {given[0]!r} (from {source})", given[1]))
        for said, value in dropped:
            if value not in (0, "0", None) and warnings is not None:  # said, not silent
                from .rules import emit

                emit(warnings, "restarts-across-nodes", f"{said} is not passed to {launcher} under recovery: "
                     f"{DROPPED_UNDER_RECOVERY}")
        return None
    if given is not None:  # the launcher's own option is the same count by another road (walk8 B21)
        said, value = given[:2]
        if value not in ("0", None) and topo.nnodes_max > 1 and not topo.elastic and warnings is not None:
            from .rules import emit

            emit(warnings, "restarts-across-nodes", f"launcher option {said!r} ({source}): {launcher}'s static "
                 f"rendezvous across {topo.nnodes_max} nodes restarts only the failed node's ranks, and the others "
                 "wait in the old collective until the stall watch stops the job")
    if restarts and topo.nnodes_max > 1 and not topo.elastic and launcher in ("torchrun", "accelerate") \
            and warnings is not None:
        from .rules import emit

        emit(warnings, "restarts-across-nodes", f"max restarts {restarts} ({settings.source('max_restarts')}): "
             f"{launcher}'s static rendezvous across {topo.nnodes_max} nodes restarts only the failed node's ranks, "
             "and the others wait in the old collective until the stall watch stops the job")
    if elastic_ends_at_first_loss(settings, topo, launcher) and warnings is not None:
        from .rules import emit

        emit(warnings, "elastic-no-restarts", elastic_ends_at_first_loss(settings, topo, launcher))
    return restarts


def elastic_ends_at_first_loss(settings, topo, launcher):
    """What a MIN:MAX plan without recovery and without a restart count does when a node is lost, or None (walk10
    B20): torchrun re-forms the job at MIN..MAX nodes only on a restart, and with none (max restarts 0, the
    default) the survivors' collective fails and the launcher exits 1, so the elastic job ends at the first loss.
    The Faults row of --explain and the start-up warning say this one line."""
    if settings.get("recovery") or settings.get("max_restarts") or topo is None or not topo.elastic:
        return None
    if launcher not in ("torchrun", "accelerate") or _restarts_option(settings, launcher) is not None:
        return None  # a restart count in the launcher options is the same count by another road
    return (f"nnodes {topo.nnodes_min}:{topo.nnodes_max} without a restart count (max restarts 0, "
            f"{settings.source('max_restarts')}): a lost node ends the job ({launcher} exits 1 on every node left), "
            f"since {launcher}'s rendezvous re-forms the job at {topo.nnodes_min} or more nodes only on a restart; "
            "NODEWEAVE_MAX_RESTARTS 1 or more (launcher.max_restarts) lets it go on with fewer nodes")


def _restarts_option(settings, launcher):
    """(as written, its value, the words it takes) of a restart count in the launcher options
    (``--max-restarts 3``, ``--max_restarts=2``), or None."""
    names = {"torchrun": ("--max-restarts", "--max_restarts"), "accelerate": ("--max_restarts", "--max-restarts")}
    options = list(settings.get("launcher_options") or ())
    for index, word in enumerate(options):
        name, equals, value = word.partition("=")
        if name in names.get(launcher, ()):
            if equals:
                return word, value, [index]
            after = options[index + 1] if index + 1 < len(options) else None
            return (f"{word} {after}" if after is not None else word), after, [index, index + 1]
    return None


def plan_launch(settings, topo, node, warnings=None):
    """The :class:`Launch` for this node."""
    launcher = settings.get("launcher", "torchrun")
    command = list(settings.command)
    if not command:
        raise UsageError("no training command: give the script and its arguments after the options, "
                         "e.g. nodeweave-entrypoint -- train.py --lr 3e-4 (the container's CMD)")
    restarts = _restarts(settings, topo, launcher, warnings)
    if topo.elastic and launcher != "torchrun":
        raise UsageError(f"an elastic node count ({topo.nnodes.value}, from {topo.nnodes.source}) needs "
                         f"launcher torchrun; {launcher} runs a fixed number of nodes")
    build = {"torchrun": _torchrun, "deepspeed": _deepspeed, "accelerate": _accelerate, "command": _command}
    launch = build[launcher](topo, node, command, restarts, settings)
    from .programs import launcher_missing

    missing = [launcher_missing(launcher, command, settings, setup_too=True)] if warnings is not None else []
    if warnings is not None and settings.get("profile"):
        from ..running.profile import profiler_missing

        missing.append(profiler_missing(settings, setup_too=True))
    if warnings is not None and settings.sysroot in ("/", "", None):
        from .consistency import script_notes
        from .rules import emit

        for line in script_notes(launcher, command, os.getcwd()):
            emit(warnings, "script-will-not-train", line)
    for program in filter(None, missing):  # the plan says it; the start refuses it before any wait
        from .rules import emit            # (consistency.start_problem)

        emit(warnings, "command-not-found", f"{program[0]}: " + (
            f"every node would exit {program[1]} unless launcher.setup puts it on PATH" if settings.get("setup") else
            f"a start here stops with exit {program[1]} before any check-in"))
    own = launch.argv[:len(launch.argv) - len(command)]
    options = list(settings.get("launcher_options") or ())
    given = _restarts_option(settings, launcher)
    if settings.get("recovery") and given is not None:  # dropped, as the setting is (_restarts)
        options = [option for i, option in enumerate(options) if i not in given[2]]
    if launcher == "torchrun" and topo.elastic:
        options = launcher_options.without_rdzv_conf(options)  # merged into nodeweave's own (_torchrun)
    launcher_options.check(launcher, options, own, settings.source("launcher_options"))
    if options and launcher != "command":  # only a start with options pays for argparse and ast (the hot path)
        from .launcher_parser import judge  # judged whole, as the launcher's own parser reads them (walk13 B9)

        judge(launcher, options, settings.env if settings.sysroot in ("/", "", None) else {},
              settings.source("launcher_options"), command)  # a captured tree's plan: not this machine's launcher
    launch.argv = own + options + command  # the launcher's own options go before the script
    launch.launcher = launcher
    if settings.get("profile"):
        from ..running.profile import wrap_ranks  # only a profiled run pays for it

        wrap_ranks(launch, command, settings, topo.node_rank.value)
    launch.wait = _wait(topo, settings)
    setup = settings.get("setup")
    if setup:  # the lines' exports and activations are the launcher's environment: the shell execs it
        launch.argv = ["bash", "-c", "set -e\n" + "\n".join(setup) + '\nexec "$@"', "nodeweave-setup"] + launch.argv
        launch.notes.append(f"launcher.setup ({len(setup)} line(s), from {settings.source('setup')}) runs in bash, "
                            "which then execs the launcher")
    if node.cloud and node.cloud.profile:
        launch.argv = ["/bin/sh", "-c", '. "$0" && exec "$@"', node.cloud.profile] + launch.argv
        launch.notes.append(f"{node.cloud.profile} is sourced in a shell that then execs the launcher")
    return launch


def _wait(topo, settings):
    if topo.is_master or topo.nnodes_max == 1 or settings.no_wait:
        return None
    timeout = settings.get("wait_timeout", 600)
    if timeout == 0:
        return None
    return {"host": topo.master_addr.value, "port": topo.master_port.value, "timeout_s": timeout}


# c10d's keep-alive (every 5 s) is renewed through node 0's store. torch drops a node whose last one is older
# than interval x attempts (15 s by default) from the rendezvous state, yet that node's agent never hears of it.
# A store stalled longer (its accept path does a reverse DNS lookup: glibc gives up after 5 s x 2 tries per
# nameserver) then splits a scale-up: the node that joins finds every running node "dead", opens a new round
# alone and waits out the join timeout, while the others train on at the old size. 12 attempts (60 s) outlast
# such a stall; a dead node is still dropped, 45 s later. docs/engine.md; launcher.options may set it.
KEEP_ALIVE = {"keep_alive_max_attempt": "12"}


def _torchrun(topo, node, command, restarts, settings):
    argv = ["torchrun", "--nnodes", topo.nnodes.value, "--nproc-per-node", str(topo.nproc_per_node.value)]
    notes = []
    addr, port = topo.master_addr.value, topo.master_port.value
    if topo.elastic:
        argv += ["--rdzv-backend", "c10d", "--rdzv-endpoint", host_port(addr, port), "--rdzv-id", topo.job_id]
        conf = dict(KEEP_ALIVE)
        # told, never guessed: torch's own guess (the endpoint is one of my addresses) is true on every node where
        # the master is loopback or this machine, and the second to bind dies in a traceback (walk11b B13)
        conf["is_host"] = "true" if topo.is_master else "false"
        notes.append("node 0 hosts the c10d store: is_host=true, so an FQDN endpoint cannot hide that"
                     if topo.is_master else
                     "node 0 hosts the c10d store, not this node: is_host=false, so a master on this machine "
                     "(loopback, host networking) is joined, not bound a second time")
        user = launcher_options.rdzv_conf(settings.get("launcher_options") or (), settings.source("launcher_options"))
        conf.update(user)
        argv += ["--rdzv-conf", ",".join(f"{key}={value}" for key, value in conf.items())]
        if "keep_alive_max_attempt" not in user:
            notes.append("keep_alive_max_attempt=12: a node is dropped from the rendezvous after 12 keep-alive "
                         "intervals without one (60 s at torch's 5 s), not 3, so a store stalled by a slow DNS "
                         "lookup cannot split a scale-up")
    else:
        argv += ["--node-rank", str(topo.node_rank.value), "--master-addr", addr, "--master-port", str(port)]
    if topo.nnodes_max > 1 and node.local_ipv4 and node.interface != "lo":
        argv += ["--local-addr", node.local_ipv4]
        notes.append(f"--local-addr {node.local_ipv4}: this node's address on {node.interface}, reachable by peers")
    if restarts is not None:
        argv += ["--max-restarts", str(restarts)]
    return Launch(argv=argv + command, notes=notes)


def hostfile_slots(topo, node, settings):
    """This node's line of the DeepSpeed hostfile; without the check-in, every node's.

    Each node writes the hostfile and DeepSpeed sums the slots for the world
    size, so every node must write the same counts. With the check-in exchange
    (``checkin.py``) node 0's verdict carries every node's count and
    :func:`apply_counts` rewrites the hostfile with them, so ``auto`` and
    uneven GPU counts work. Without it (``NODEWEAVE_EXCHANGE=off``) each node
    only knows its own: ``auto`` is refused on GPU nodes. Either way a node
    refuses when it has fewer usable GPUs than the count it was given.
    """
    from .exchange_plan import off_because

    nproc, gpus = topo.nproc_per_node, node.gpus
    if topo.nnodes_max == 1 or not gpus.count:
        return nproc.value
    if nproc.source.startswith("auto") and off_because(topo, settings) is None:
        return nproc.value  # the check-in exchanges every node's count
    if nproc.source.startswith("auto"):
        raise TopologyError(
            f"launcher deepspeed with processes per node 'auto' on {topo.nnodes_max} nodes: every node writes the "
            f"hostfile with its own GPU count ({gpus.count} here), and nodes that count differently disagree on the "
            "world size; set gpus_per_node (NODEWEAVE_NPROC_PER_NODE) to the count every node has, or let the "
            f"nodes check in (the exchange is off here: {off_because(topo, settings)})")
    return nproc.value  # more processes than usable GPUs is refused for every launcher (topology)


def hostfile_path(env, topo):
    """``$TMPDIR/nodeweave/jobs/<job id>-<master port>/hostfile``: two jobs on one host (a Slurm node's /tmp,
    bare hosts) never launch from each other's hostfile."""
    from ..running.runstate import job_dir_of

    return os.path.join(job_dir_of(env, topo), "hostfile")


def hostfile_names(topo):
    """The DeepSpeed hostfile's names in rank order: the nodes' own, or ``node-<rank>`` for every node when one
    is an IPv6 address, which DeepSpeed's ``--include NAME:SLOTS`` cannot carry (it splits at every colon and
    takes no brackets). With ``--no_ssh`` the names only index the lines by node rank: none is looked up."""
    names = topo.node_names
    if any(is_ipv6(name) for name in names):
        return [f"node-{rank}" for rank in range(len(names))]
    return names


def _deepspeed(topo, node, command, restarts, settings):
    nproc = hostfile_slots(topo, node, settings)
    hostfile = hostfile_path(settings.env, topo)
    names = hostfile_names(topo)
    argv = ["deepspeed", "--hostfile", hostfile, "--no_ssh", "--node_rank", str(topo.node_rank.value),
            "--master_addr", topo.master_addr.value, "--master_port", str(topo.master_port.value)]
    notes = ["--no_ssh: every node starts its own launcher; no pdsh, no ssh between containers"]
    procs = list(_procs(topo))
    procs[topo.node_rank.value] = nproc
    content, include = deepspeed_lines(names, procs, topo.node_rank.value, node.gpus.visible)
    if include:
        argv += ["--include", include]
        ids = node.gpus.visible[:nproc]
        notes.append(f"--include keeps {node.gpus.visible_env}={','.join(map(str, ids))}: "
                     "DeepSpeed otherwise renumbers GPUs from 0")
    if not world.even(procs):
        notes.append(f"hostfile slots by node: {', '.join(map(str, procs))} (DeepSpeed numbers each node's ranks "
                     "after the slots of the lines before it)")
    if restarts:
        notes.append("deepspeed has no restart flag; --max-restarts applies to torchrun and accelerate only")
    return Launch(argv=argv + command, files={hostfile: content}, notes=notes)


def deepspeed_lines(names, procs, rank, visible):
    """(the DeepSpeed hostfile's text, its ``--include`` or ""): one ``<name> slots=<n>`` line per node with that
    node's processes (:mod:`world`: DeepSpeed numbers a node's ranks after the slots of the nodes before it).
    With this node's GPUs visible by number, ``--include`` keeps their ids here and names each other node's
    first slots; a line's slots cover the highest id it names."""
    if not (visible and all(isinstance(v, int) for v in visible)):
        return "".join(f"{name} slots={count}\n" for name, count in zip(names, procs)), ""
    mine = visible[:procs[rank]]
    ids = [mine if i == rank else list(range(count)) for i, count in enumerate(procs)]
    content = "".join(f"{name} slots={max(own) + 1}\n" for name, own in zip(names, ids))
    return content, "@".join(f"{name}:{','.join(map(str, own))}" for name, own in zip(names, ids))


def _accelerate(topo, node, command, restarts, settings):
    total = topo.world_size
    procs = topo.node_procs
    if procs and not world.even(procs):
        raise TopologyError(
            f"launcher accelerate runs the same process count on every machine (--num_processes over "
            f"--num_machines), but the nodes' counts differ ({world.described(procs)}); accepted: the same slots "
            "on every hostfile line, or the torchrun or deepspeed launcher, which number uneven nodes' ranks")
    argv = ["accelerate", "launch", "--num_machines", str(topo.nnodes_max), "--machine_rank", str(topo.node_rank.value),
            "--main_process_ip", topo.master_addr.value, "--main_process_port", str(topo.master_port.value),
            "--num_processes", str(total)]
    notes = []
    if total > 1:
        argv.append("--multi_gpu")
        if node.gpus.vendor == "none":
            notes.append("--multi_gpu selects accelerate's torchrun path; on CPU the processes use gloo")
    if restarts is not None:
        argv += ["--max_restarts", str(restarts)]
    return Launch(argv=argv + command, notes=notes)


def _command(topo, node, command, restarts, settings):
    return Launch(argv=list(command), notes=["plain command: ranks and master come from the exported variables"])


def apply_counts(plan, verdict):
    """After a check-in: every node's real process count into WORLD_SIZE and the DeepSpeed hostfile.

    ``verdict["procs"]`` lists the counts by node rank (fixed-size jobs); an
    elastic job's world is torchrun's to count.
    """
    topo, launch = plan.topology, plan.launch
    procs = verdict.get("procs") or []
    if topo.elastic or len(procs) != topo.nnodes_max or not all(isinstance(p, int) for p in procs):
        return
    topo.node_procs, topo.world_size = list(procs), world.world_size(procs)
    uneven = not world.even(procs)
    for var in plan.env:
        if var.name == "WORLD_SIZE" and var.action == "export":
            var.value = str(topo.world_size)
            if uneven:
                var.reason = f"sum of every node's processes from the check-in: {'+'.join(map(str, procs))}"
    if launch.launcher == "deepspeed":
        ids = plan.node.gpus.visible if plan.node is not None and plan.node.gpus is not None else None
        content, include = deepspeed_lines(hostfile_names(topo), procs, topo.node_rank.value, ids)
        for path in launch.files:
            launch.files[path] = content
        if "--include" in launch.argv and include:  # the other nodes' ids: their counts, not this node's
            launch.argv[launch.argv.index("--include") + 1] = include
        if uneven:
            launch.notes.append(f"hostfile slots from the check-in: {', '.join(map(str, procs))} (uneven counts)")
