"""The in-container entrypoint: detect the node, plan rank/env/launcher, explain, exec.

Stdlib only and never imports torch (a test holds it to that); every read of
the machine takes a root prefix (``--sysroot`` / ``NODEWEAVE_SYSROOT``) so tests
run on captured trees. ``docs/entrypoint.md`` is the user manual.

Python API (stable; ``doctor`` and ``hosts probe`` build on it)
----------------------------------------------------------------

``detect(sysroot="/", env=None, master=None) -> Node``
    The hardware, read without side effects. ``env`` (default ``os.environ``)
    supplies ``CUDA_VISIBLE_DEVICES``/``HIP_VISIBLE_DEVICES``/``ROCR_VISIBLE_DEVICES``.
    With ``master`` (a name or IPv4), also the interface that routes to it.
``make_plan(argv=None, env=None, sysroot=None) -> Plan``
    Everything the entrypoint would do, for command-line ``argv`` (without the
    program name, e.g. ``["--nnodes", "2", "--node-rank", "0", "--", "train.py"]``)
    and the variables ``env`` (default ``os.environ``). Raises
    :class:`EntrypointError` (``.exit_code``) for bad input or unknown topology.
``parse(argv, env) -> Settings`` then ``build_plan(settings, partial=False) -> Plan``
    The two halves of ``make_plan``; ``partial=True`` records errors in
    ``plan.errors`` instead of raising (what ``--explain`` shows).
``discover(settings, node, root, kube, warnings) -> Topology``,
``plan_env(node, topology, settings, root, warnings) -> [EnvVar]``,
``plan_launch(settings, topology, node) -> Launch``, ``exports(topology, env) -> [EnvVar]``
    The steps, for callers that already hold a Node. ``root`` is ``Root(sysroot)``;
    ``kube`` is ``detection.kube.read_kube(root, env)`` (``discover`` raises
    ``ReplicasWanted`` where the node count must come from the API: ``build_plan`` asks it).
``plan = make_plan`` (the name docs/design.md uses).

Records (attributes; ``.to_dict()`` gives the JSON below): ``Node(hostname,
sysroot, gpus: Gpus, nics: [RdmaPort], interfaces: [Interface], interface,
interface_reason, local_ipv4, limits: Limits, cloud: Cloud, libraries)``;
``Gpus(vendor, devices: [Gpu], count, visible, visible_env, visible_invalid, model, arch, driver,
interconnect, gpudirect_rdma, source)``; ``Gpu(index, vendor, model, pci,
numa_node, uuid, arch)``; ``RdmaPort(device, port, state, phys_state,
link_layer, rate_gbps, rate, netdev, roce_v2_gid_index, roce_v2_ipv4, driver,
numa_node, pci)`` with ``.name`` ("mlx5_0:1"), ``.active``, ``.roce``;
``Interface(name, kind, operstate, mtu, speed_mbps, ipv4, virtual)``;
``Limits(shm_bytes, shm_source, memlock_bytes, cpus, cpus_source, ipc_lock)``;
``Cloud(provider, vendor, product, efa, profile, topo_file)``;
``Topology(node_rank, nnodes, nproc_per_node, master_addr, master_port: Value(value, source),
nnodes_min, nnodes_max, elastic, world_size, node_procs, is_master, node_names, job_id, notes, platform)``;
``EnvVar(name, value, action, source, reason)``; ``Launch(launcher, argv, files, wait, notes)``;
``Plan(node, topology, env, launch, warnings, errors)`` with ``.environ(base)``; each warning
is a ``PlanWarning``: a ``str`` (its message) with a stable ``.code`` that tools grade on and the
``.severity`` its row gave it (``nodeweave.entrypoint.planning.rules``: ``Rule(code, check, severity, remedy)``).
The rank sources are the table ``nodeweave.entrypoint.planning.sources.SOURCES``.

``nodeweave-entrypoint --explain --json`` schema ``nodeweave.entrypoint/1``
---------------------------------------------------------------------------
One JSON object; keys are only ever added under this schema name::

    {
      "schema": "nodeweave.entrypoint/1",
      "node": {
        "hostname": str, "sysroot": str,
        "gpus": {"vendor": "nvidia"|"amd"|"none", "count": int (usable), "model": str|null,
                 "arch": str|null (gfx942), "driver": str|null,
                 "interconnect": "nvswitch"|"nvlink"|"xgmi"|"pcie"|"none",
                 "gpudirect_rdma": "nvidia_peermem"|"nv_mem"|"amdkfd"|null,
                 "visible": [int|str]|null, "visible_env": str|null, "source": str,
                 "visible_invalid": [str] (entries naming no GPU here; the plan refuses them),
                 "devices": [{"index", "vendor", "model", "pci", "numa_node", "uuid", "arch"}]},
        "nics": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "phys_state": "LinkUp",
                  "link_layer": "InfiniBand"|"Ethernet", "rate_gbps": 400, "rate": str,
                  "netdev": str|null, "roce_v2_gid_index": int|null, "roce_v2_ipv4": str|null,
                  "driver": str|null, "numa_node": int|null, "pci": str|null}],
        "interfaces": [{"name", "kind": "ether"|"infiniband"|"loopback"|"other", "operstate",
                        "mtu", "speed_mbps", "ipv4": [str], "virtual": bool}],
        "interface": str|null (routes to the master), "interface_reason": str|null,
        "local_ipv4": str|null,
        "limits": {"shm_bytes": int|null, "shm_source": str, "memlock_bytes": int|null (null = unlimited),
                   "cpus": int|null, "cpus_source": str, "ipc_lock": bool|null (CAP_IPC_LOCK effective)},
        "cloud": {"provider": "aws"|"gcp"|"azure"|null, "vendor", "product", "efa": bool,
                  "profile": str|null, "topo_file": str|null},
        "libraries": {"nccl"?: str|null, "rccl"?: str|null}   (only those a decision needed)
      },
      "topology": null | {
        "node_rank" | "nnodes" | "nproc_per_node" | "master_addr" | "master_port": {"value", "source"},
        "nnodes_min": int, "nnodes_max": int, "elastic": bool, "world_size": int|null,
        "node_procs": [int]|null,   # every node's processes in rank order (their sum is world_size; a node's
                                    # first global rank is the sum before it: entrypoint/world.py); null: elastic
        "is_master": bool, "node_names": [str], "job_id": str, "notes": [str],
        "platform": str|null},   # the row of sources.SOURCES that named the rank (null: single node)
      "env": [{"name", "value", "action": "set"|"kept"|"export", "source", "reason"}],
      "launch": null | {"launcher", "argv": [str], "files": {path: text},
                        "wait": {"host", "port", "timeout_s"}|null, "notes": [str]},
      "warnings": [str],
      "errors": [{"message": str, "exit_code": int}],
      "exchange": null | {"enabled": false, "why": str}
                  | {"enabled": true, "role": str, "host": str, "port": int, "port_source": str,
                     "deadline_s": int, "allow": [str], "token": str (where it comes from, never its value),
                     "heartbeat": bool, "last"?: null | {"path", "at", "decision", "problems": [str]}},
      "fingerprint": null | {flat fields, see nodeweave.entrypoint.checkin.fingerprint: "rank", "hostname",
                     "nnodes", "job", "launcher", "address", "route_address", "gpu_vendor", "gpu_model",
                     "gpu_count", "nproc", "nccl", "rccl", "torch", "launcher_version", "image_ref",
                     "image_digest", "workspace_commit", "workspace_digest", "command", "command_digest",
                     "script_digest", "env_hash", "env": {name: value},
                     "interface", "mtu", "speed_mbps", "shm_bytes", "memlock_bytes", ...}   (--explain only)
      "role": null | {"kind": "training node"|"spare"|"left out"|"out for good",
                      "identity": int (the container's node rank among nodes + spares),
                      "rank": int|null (its training rank), "why": str, "generation": int|null}
                  (nodeweave-entrypoint's own paths; null from build_plan alone)
      "faults": null | {key: {"value", "source": "default"|"flag --name"|"a NODEWEAVE_* variable"|..., "meaning": str}}
                  (--explain only; what this node does on a fault, in this order: "recovery", under recovery
                   "nodes", "spares", "checkpoint_dir" (meaning names the checkpoint it would hand out now;
                   its "scan" the same as data: {"folder", "newest_complete", "step", "layout", "passed_over":
                   [{"path", "why"}], "before_job": null | {"saves", "up_to_step", "newest_saved", "cut_off"}},
                   the saves already there, none of which a job starting now hands out: up_to_step is the
                   newest complete one's, cut_off the newer ones cut off),
                   "recovery_max_restarts", "no_progress_restarts", "warm_start"; then "stall_warn",
                   "stall_timeout", "straggler_fault", "max_restarts" (when set), "metrics", "metrics_port")
      "mode": "run"|"hold"   (hold: the node plans, prints its plan and launches nothing; each `nodeweave run`
                   starts the launch shown, waits included)
    }

``--explain`` exits 0 when the plan is complete, else with the first error's
exit code, still printing ``node`` (so a host probe always gets the hardware).
With no node count and no rank source the plan is a single node, exit 0.
"""

# What the names above come from, imported on first use (PEP 562): nodeweave's command line reads files through
# ``bounded`` and the spec checks through ``planning.shared_rules``, and importing those must not load the whole
# planner (~35 ms of ``render --check`` and ``status``, issue 43).
_HOMES = {
    ".core": ("build_plan", "make_plan"),
    ".detection.node": ("detect", "locate_master"),
    ".errors": ("EXIT_CODES", "EntrypointError", "TopologyError", "UsageError"),
    ".planning.launch": ("exports", "plan_launch"),
    ".model": ("SCHEMA", "Cloud", "EnvVar", "Gpu", "Gpus", "Interface", "Launch", "Limits", "Node", "Plan",
               "RdmaPort", "Topology", "Value"),
    ".planning.policy": ("plan_env",),
    ".planning.settings": ("Settings", "parse"),
    ".detection.sysfs": ("Root",),
    ".planning.topology": ("discover",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}
_HOME["plan"] = ".core"  # plan = make_plan, the name docs/design.md uses


def __getattr__(name):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), "make_plan" if name == "plan" else name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "SCHEMA", "EXIT_CODES", "Cloud", "EntrypointError", "EnvVar", "Gpu", "Gpus", "Interface", "Launch",
    "Limits", "Node", "Plan", "RdmaPort", "Root", "Settings", "Topology", "TopologyError", "UsageError",
    "Value", "build_plan", "detect", "discover", "exports", "locate_master", "make_plan", "parse",
    "plan", "plan_env", "plan_launch",
]
