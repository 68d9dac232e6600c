"""Whether the check-in runs for this start, and where: the cheap half, on every start's path.

The exchange runs for a multi-node job on a live machine unless switched off
(``NODEWEAVE_EXCHANGE=off``, ``--no-wait``, a wait timeout of 0); its port is
the master port + 1 unless ``NODEWEAVE_EXCHANGE_PORT`` says otherwise; a
worker's wait then targets that port, since node 0 starts its launcher (and
opens the master port) only after every node checked in. Doing it is
``checkin.py``'s, imported only then (sockets, threads, hashing).
"""

DEFAULT_OFFSET = 1
TOKEN_VARIABLE = "NODEWEAVE_JOB_TOKEN"
TOKEN_FILE_VARIABLE = "NODEWEAVE_JOB_TOKEN_FILE"  # a mounted Secret: the token never sits in the pod spec
TOKEN_MOUNT = "/run/nodeweave/job-token"  # where `nodeweave up` mounts the random token it made for this job


# A check-in secret is a line of text; a mounted Secret far larger than this is the wrong file.
SECRET_CAP = 64 * 1024


def job_secret(env):
    """(the job's check-in secret or None, where it came from); a token file that cannot be read is refused."""
    if env.get(TOKEN_VARIABLE):
        return env[TOKEN_VARIABLE], TOKEN_VARIABLE
    path = env.get(TOKEN_FILE_VARIABLE)
    if not path:
        return None, None
    from ..bounded import read_text
    from ..errors import UsageError

    try:
        secret = read_text(path, SECRET_CAP, "a token file").strip()
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or str(err)
        raise UsageError(f"{TOKEN_FILE_VARIABLE}={path!r}: cannot read it ({why}); accepted: a readable UTF-8 "
                         "file holding the job's check-in secret (a mounted Secret), or leave the variable unset")
    if not secret:
        raise UsageError(f"{TOKEN_FILE_VARIABLE}={path!r} is empty; accepted: a file holding the job's check-in "
                         "secret, the same on every node")
    return secret, f"{TOKEN_FILE_VARIABLE} ({path})"


def exchange_port(topo, settings):
    """(port, where it came from); one the launcher's rendezvous takes (the master port) is refused."""
    port = settings.get("exchange_port")
    if port and port == topo.master_port.value:
        from ..errors import UsageError

        raise UsageError(f"exchange port {port} (from {settings.source('exchange_port')}) is the master port too "
                         f"(from {topo.master_port.source}): node 0's check-in exchange and the launcher's rendezvous "
                         "cannot share one port; accepted: another port, or leave the exchange port out (master port "
                         "+ 1)")
    if port:
        return port, settings.source("exchange_port")
    master = topo.master_port.value
    return (master + DEFAULT_OFFSET, f"master port {master} + 1") if master < 65535 else (
        master - 1, f"master port {master} - 1")


def _metrics_apart(topo, settings, port, port_source):
    """Node 0 serves /metrics on a port of its own: the rendezvous' or the exchange's is refused (the spec's rule)."""
    from .contract import METRICS_PORT

    metrics = settings.get("metrics_port", METRICS_PORT)
    if not settings.get("metrics", True) or metrics not in (port, topo.master_port.value):
        return
    from ..errors import UsageError

    which = (f"the master port (from {topo.master_port.source})" if metrics == topo.master_port.value
             else f"the check-in exchange's port ({port_source})")
    raise UsageError(f"metrics port {metrics} (from {settings.source('metrics_port') or 'its default'}) is {which} "
                     f"too: node 0 listens on each; accepted: a metrics port other than {topo.master_port.value} and "
                     f"{port} (--metrics-port, NODEWEAVE_METRICS_PORT), or metrics off")


def off_because(topo, settings):
    """Why the exchange does not run for this start, or None when it does."""
    if topo.nnodes_max <= 1:
        return "single node"
    return switched_off(settings)


def switched_off(settings):
    """Why the settings alone keep the exchange off (whatever the node count), or None."""
    if settings.get("exchange") is False:
        return f"switched off by {settings.source('exchange')}"
    if settings.sysroot not in ("/", "", None):
        return "a captured tree (--sysroot) is not a live node"
    if settings.no_wait:
        return "--no-wait"
    if settings.get("wait_timeout", 600) == 0:
        return f"wait timeout 0 ({settings.source('wait_timeout')})"
    return None


def bind_address(plan, settings):
    """The one address the exchange's ports listen on (``NODEWEAVE_EXCHANGE_BIND=route``), or None for all.

    ``route`` is the address this node uses toward the master; on node 0 the master's own address, which
    is what every other node connects to. Unknown (no route yet) or loopback (a host whose own name maps to
    127.0.1.1, as Debian's /etc/hosts does, while the others resolve it to its real address): every address.
    """
    if settings.get("exchange_bind") != "route":
        return None
    address = plan.node.local_ipv4 or ""
    return None if not address or address.startswith("127.") else address


def _warn_derived_token(plan, settings):
    """A live multi-node node whose check-in would use the derived token (also under --no-wait: doctor's plan;
    not for a captured tree, whose plans show the hardware's findings)."""
    topo = plan.topology
    if topo.nnodes_max <= 1 or settings.get("exchange") is False or settings.sysroot not in ("/", "", None):
        return
    if job_secret(settings.env)[0] is not None:
        return
    from .rules import emit

    emit(plan.warnings, "derived-job-token", f"the check-in token is derived from the job id {topo.job_id!r} "
         f"and master port {topo.master_port.value}, which anyone who can list the pods or read the compose "
         "file knows: a container that reaches node 0's exchange can check in or relay a failure")


def plan_exchange(plan, settings):
    """Record on ``plan.exchange`` what the check-in will do; retarget a worker's wait to its port."""
    topo, launch = plan.topology, plan.launch
    _warn_derived_token(plan, settings)
    # the ports apart whether or not the exchange runs here, as the spec checks them (walk5 W30: one node, its
    # exchange off, served /metrics on the port torchrun's store binds)
    port, port_source = exchange_port(topo, settings)
    _metrics_apart(topo, settings, port, port_source)
    off = off_because(topo, settings)
    if off:
        plan.exchange = {"enabled": False, "why": off}
        return plan.exchange
    from ..model import SUPERVISED
    deadline = settings.get("wait_timeout", 600)
    secret_source = job_secret(settings.env)[1]
    plan.exchange = {
        "enabled": True, "role": "node 0 (gathers and judges)" if topo.is_master else "checks in with node 0",
        "host": topo.master_addr.value, "port": port, "port_source": port_source, "deadline_s": deadline,
        "allow": list(settings.get("exchange_allow") or []),
        "token": secret_source or
                 f"derived from job id {topo.job_id!r} and master port {topo.master_port.value}",
        "heartbeat": launch.launcher in SUPERVISED,
        "bind": bind_address(plan, settings) or "every address",
    }
    if launch.wait:
        launch.wait = dict(launch.wait, port=port, what="node 0's check-in exchange")
    return plan.exchange
