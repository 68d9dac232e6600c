"""``--explain``: the plan as text a person reads at a glance, or as JSON.

The JSON is ``Plan.to_dict()`` (schema ``nodeweave.entrypoint/1``, documented
in the package docstring); the text shows the same facts with each value's
source and each variable's reason.
"""

from .hostport import host_port


def _size(n):
    if n is None:
        return "unlimited"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"
    return f"{n} B"


def _quote(argv):
    import shlex
    return " ".join(shlex.quote(a) for a in argv)


def _hardware(node):
    g = node.gpus
    lines = []
    if g.vendor == "none":
        lines.append(("GPUs", "none: CPU only, gloo backend"))
    else:
        extra = [g.interconnect]
        if g.driver:
            extra.append(f"driver {g.driver}")
        if g.arch:
            extra.append(g.arch)
        extra.append(f"GPUDirect RDMA: {g.gpudirect_rdma or 'no'}")
        text = f"{g.count} of {len(g.devices)} x {g.model or g.devices[0].model} ({', '.join(extra)})"
        if g.visible_env:
            text += f"; {g.visible_env} limits them"
        lines.append(("GPUs", text))
    if node.nics:
        for i, p in enumerate(node.nics):
            gid = f"  RoCE v2 GID {p.roce_v2_gid_index} ({p.roce_v2_ipv4})" if p.roce_v2_gid_index is not None else ""
            rate = f"{p.rate_gbps} Gb/s" if p.rate_gbps else "?"
            lines.append(("RDMA" if i == 0 else "", f"{p.name:<12} {p.state or '?':<7} {p.link_layer or '?':<10} "
                          f"{rate:>9}  {p.netdev or '-':<10}{gid}"))
    else:
        lines.append(("RDMA", "none"))
    shown = [i for i in node.interfaces if not i.virtual or i.ipv4 or i.name == node.interface]
    hidden = [i.name for i in node.interfaces if i not in shown]
    for i, iface in enumerate(shown):
        addr = ",".join(iface.ipv4) or "-"
        speed = f"{iface.speed_mbps // 1000} Gb/s" if iface.speed_mbps and iface.speed_mbps >= 1000 else ""
        lines.append(("Interfaces" if i == 0 else "", f"{iface.name:<12} {iface.operstate or '?':<7} {addr:<16} "
                      f"mtu {iface.mtu or '?'} {speed}{' virtual' if iface.virtual else ''}".rstrip()))
    if hidden:
        lines.append(("", f"+ {len(hidden)} virtual without address: {', '.join(hidden)}"))
    if node.interface or node.interface_reason:
        lines.append(("To master", f"{node.interface or '?'}" + (f" from {node.local_ipv4}" if node.local_ipv4 else "")
                      + f" ({node.interface_reason})"))
    lim = node.limits
    lines.append(("Limits", f"/dev/shm {_size(lim.shm_bytes)} ({lim.shm_source}); memlock {_size(lim.memlock_bytes)}"
                  f"{' (CAP_IPC_LOCK: pins past it)' if lim.ipc_lock else ''}; {lim.cpus} CPUs ({lim.cpus_source})"))
    c = node.cloud
    if c and c.provider:
        bits = [c.provider, c.product or ""]
        if c.efa:
            bits.append("EFA")
        if c.profile:
            bits.append(f"profile {c.profile}")
        if c.topo_file:
            bits.append(f"topology {c.topo_file}")
        lines.append(("Cloud", " ".join(b for b in bits if b)))
    return lines


def _topology(topo):
    rows = [
        ("node rank", topo.node_rank), ("nodes", topo.nnodes), ("procs/node", topo.nproc_per_node),
        ("master", topo.master_addr), ("port", topo.master_port),
    ]
    lines = [(k, f"{v.value!s:<24} <- {v.source}") for k, v in rows]
    if topo.platform:
        lines.insert(0, ("rank from", topo.platform))
    world = topo.world_size if topo.world_size is not None else f"elastic {topo.nnodes.value} nodes (c10d)"
    lines.append(("world size", f"{world}" + ("  (this node is the master)" if topo.is_master else "")))
    procs = topo.node_procs
    if procs and len(set(procs)) > 1:  # uneven nodes: the sum, and where this node's ranks start (fix13d)
        from .world import described, ranks_of

        ranks = ranks_of(procs, topo.node_rank.value)
        lines[-1] = (lines[-1][0], f"{lines[-1][1]}  ({described(procs)})")
        lines.append(("ranks", f"{ranks[0]}..{ranks[-1]} here: after the {ranks[0]} process(es) of the nodes "
                               "before this one"))
    for note in topo.notes:
        lines.append(("note", note))
    return lines


def _role(role):
    """What this node does in its job: training node i, a spare, or left out, and why (recovery/roles.py)."""
    name = f"training node {role['rank']}" if role["kind"] == "training node" else role["kind"]
    when = f" in generation {role['generation']}" if role.get("generation") is not None else ""
    rows = [("this node", f"{name}{when} (container identity {role['identity']})")]
    if role.get("why"):
        rows.append(("why", role["why"]))
    return rows


def _heartbeat(exchange, recovery):
    """What a failure does while the nodes watch each other: under recovery a new generation, not the stop of
    every node the plain job makes (walk5 W4: the line said exit 5 beside a Faults section saying otherwise)."""
    if not exchange["heartbeat"]:
        return "off: a plain command is exec'd, so only the check-in runs"
    if recovery:
        from .errors import RECOVERY_ENDS

        ends = ", ".join(f"exit {code} {when}" for code, when in RECOVERY_ENDS.items())
        return f"on: a failure anywhere starts a new generation of the job (recovery); every node stops with {ends}"
    return "on: a failure anywhere stops every node (exit 5)"


def _checkin(exchange, fp, recovery=False):
    """The exchange's part: where and how nodes check in, what this node tells node 0, the last verdict."""
    if not exchange.get("enabled"):
        rows = [("exchange", f"off: {exchange.get('why')}")]
    else:
        rows = [
            ("exchange", f"{exchange['role']} at {host_port(exchange['host'], exchange['port'])} "
                         f"({exchange['port_source']}), deadline {exchange['deadline_s']}s"),
            ("token", exchange["token"]),
            ("allow", ", ".join(exchange["allow"]) or "- (every refusal stops the job)"),
            ("heartbeat", _heartbeat(exchange, recovery)),
        ]
    if fp:
        rows.append(("this node", f"torch {fp.get('torch') or '-'}, nccl {fp.get('nccl') or '-'}, "
                                  f"rccl {fp.get('rccl') or '-'}, {fp.get('launcher')} {fp.get('launcher_version') or '-'}, "
                                  f"image {fp.get('image_digest') or '-'} ({fp.get('distributions')} distributions)"))
        commit = str(fp.get("workspace_commit") or "-")[:12]
        rows.append(("", f"advertises {fp.get('address') or '-'} via {fp.get('address_source')}; "
                         f"workspace {commit} ({fp.get('workspace_source') or 'no stamp, no git'})"))
    last = exchange.get("last")
    if last:
        import time

        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"])) if last.get("at") else "?"
        rows.append(("last start", f"{last['decision']} at {when} ({last['path']})"))
        rows += [("", problem) for problem in last["problems"]]
    return rows


def render_text(plan):
    out = [f"nodeweave-entrypoint: plan for {plan.node.hostname or '?'}"
           + (f" (sysroot {plan.node.sysroot})" if plan.node.sysroot != "/" else "")]

    def section(title, rows, width=12):
        out.append("")
        out.append(title)
        for key, text in rows:
            out.append(f"  {key:<{width}} {text}")

    section("Hardware", _hardware(plan.node))
    if plan.role:
        section("Role", _role(plan.role))
    if plan.topology:
        section("Topology", _topology(plan.topology))
    if plan.env:
        width = max(len(f"{v.name}={v.value}") for v in plan.env)
        rows = [(v.action, f"{v.name}={v.value}".ljust(width) + (f"  # {v.reason}" if v.reason else ""))
                for v in plan.env]
        section("Environment", rows, width=6)
    if plan.launch:
        from .model import SUPERVISED  # supervised launchers run as a child (running/supervise.py)

        from .model import WATCHED_CHILD  # a command that starts ranks runs as a watched child (stall.local.watched)

        verb = "run" if plan.launch.launcher in SUPERVISED or WATCHED_CHILD in plan.launch.notes else "exec"
        rows = [(verb, _quote(plan.launch.argv))]
        kind = plan.role.get("kind") if plan.role else None
        if kind in NOW_NOTHING:  # its launch waits for a place, or none comes (recovery/roles.py WAITING)
            rows = [("now", NOW_NOTHING[kind])] + ([("then", _quote(plan.launch.argv))] if kind != "out for good"
                                                  else [])
        if plan.mode == "hold":  # nothing starts until a run is asked for (hold.py; walk6 W18)
            rows = [("now", "nothing: hold mode: the node plans, prints this plan and waits for `nodeweave run` "
                            "(no wait for the master, no script check until then)"),
                    ("then", f"each run: {_quote(plan.launch.argv)}")]
        for path, content in plan.launch.files.items():
            rows.append(("file", f"{path}: " + "; ".join(content.splitlines())))
        w = plan.launch.wait
        what = f"{w['what']} " if w and w.get("what") else ""
        each = "each run, " if plan.mode == "hold" else ""
        rows.append(("wait", f"{each}for {what}{host_port(w['host'], w['port'])} to accept, up to {w['timeout_s']}s" if w
                     else "no (master, single node, or disabled)"))
        for note in plan.launch.notes:
            rows.append(("note", note))
        section("Launch", rows, width=6)
    if plan.faults:
        section("Faults", [(key, f"{row['value']!s:<24} <- {row['source']}: {row['meaning']}")
                           for key, row in plan.faults.items()], width=21)
    if plan.exchange is not None:
        recovery = bool(plan.faults and plan.faults.get("recovery", {}).get("value") == "on")
        section("Check-in", _checkin(plan.exchange, plan.fingerprint, recovery), width=10)
    if plan.warnings:
        section("Warnings", [("!", w) for w in plan.warnings], width=1)
    if plan.errors:
        section("Errors", [("x", e["message"]) for e in plan.errors], width=1)
    from .quoting import bounded  # a value 100,000 characters long was printed four times (walk18b B9)

    return bounded("\n".join(out)) + "\n"


# what a node of these roles launches now (recovery/roles.py's kinds, as a plan's role spells them)
NOW_NOTHING = {"spare": "nothing: a spare waits for node 0 to give it a left-out node's place",
               "left out": "nothing: this node is left out of the running generation and waits for node 0 to give "
                           "it a place again",
               "out for good": "nothing: this node is out of the job for good"}


def render_json(plan):
    import json
    return json.dumps(plan.to_dict(), indent=2, sort_keys=False) + "\n"
