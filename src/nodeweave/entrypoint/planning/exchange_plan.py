"""Whether the check-in runs for this start, and where: the cheap half, on every start's path.

The exchange runs for a multi-node job on a live machine unless switched off
(``NODEWEAVE_EXCHANGE=off``, ``--no-wait``, a wait timeout of 0); its port is
the master port + 1 unless ``NODEWEAVE_EXCHANGE_PORT`` says otherwise; a
worker's wait then targets that port, since node 0 starts its launcher (and
opens the master port) only after every node checked in. Doing it is
``checkin.py``'s, imported only then (sockets, threads, hashing).
"""

import os
DEFAULT_OFFSET = 1
TOKEN_VARIABLE = "NODEWEAVE_JOB_TOKEN"
TOKEN_FILE_VARIABLE = "NODEWEAVE_JOB_TOKEN_FILE"  # a mounted Secret: the token never sits in the pod spec
TOKEN_MOUNT = "/run/nodeweave/job-token"  # where `nodeweave up` mounts the random token it made for this job


# A check-in secret is a line of text; a mounted Secret far larger than this is the wrong file.
SECRET_CAP = 64 * 1024


def job_secret(env):
    """(the job's check-in secret or None, where it came from); a token file that cannot be read is refused."""
    from ..model import given

    if given(env, TOKEN_VARIABLE):  # a blank one is set but empty: read as unset, and said so (walk9 B10)
        return env[TOKEN_VARIABLE], TOKEN_VARIABLE
    path = given(env, TOKEN_FILE_VARIABLE)
    if not path:
        return None, None
    from ..bounded import read_text
    from ..errors import UsageError
    from ..systemfolders import unexpanded

    problem = unexpanded(path)
    if problem:
        raise UsageError(f"{TOKEN_FILE_VARIABLE}: {problem}")
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

    master = metrics == topo.master_port.value
    which = (f"the master port (from {topo.master_port.source})" if master
             else f"the check-in exchange's port ({port_source})")
    if settings.source("metrics_port") == "default":  # walk9 B28: the port typed is the one to change, not the default
        subject = (f"master port {metrics} (from {topo.master_port.source})" if master
                   else f"check-in exchange port {metrics} (from {port_source})")
        change = ("another exchange port (--exchange-port, NODEWEAVE_EXCHANGE_PORT)" if not master and
                  settings.get("exchange_port") else "another master port (--master-port, NODEWEAVE_MASTER_PORT"
                  + (")" if master else "; the exchange's is the master port + 1)"))
        raise UsageError(f"{subject} is the metrics port's default ({metrics}) too: node 0 listens on each; accepted: "
                         f"{change}, or a metrics port of its own (--metrics-port, NODEWEAVE_METRICS_PORT), or "
                         "metrics off")
    raise UsageError(f"metrics port {metrics} (from {settings.source('metrics_port')}) is {which} "
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
    if topo.nnodes_max <= 1 or settings.sysroot not in ("/", "", None):
        return
    from .rules import emit
    from ..model import given

    env = settings.env
    off = switched_off(settings)
    if off and off != "--no-wait":  # --no-wait is doctor's plan of a live start: its token is warned as ever
        # the secret is read by the exchange alone; a user who set it believes the nodes check each other (replay10
        # B19). Only the variable: `nodeweave up` hands every node a token file whatever the exchange.
        if given(env, TOKEN_VARIABLE):
            emit(plan.warnings, "job-token-unread", f"{TOKEN_VARIABLE} is set, but the check-in exchange that alone "
                 f"reads it is off ({off}): no node checks another's secret")
        return
    if job_secret(env)[0] is not None:
        path = given(env, TOKEN_FILE_VARIABLE)
        if path and given(env, TOKEN_VARIABLE):  # walk7 B37: the file the peers read is ignored here, silently
            emit(plan.warnings, "job-token-twice", f"{TOKEN_VARIABLE} and {TOKEN_FILE_VARIABLE} are both set: "
                 f"the file {path} is ignored and this node checks in with {TOKEN_VARIABLE}; a node whose secret "
                 "differs from node 0's is refused at check-in")
        elif path:
            try:
                readable = os.stat(path).st_mode & 0o004
            except OSError:
                readable = 0
            if readable:
                emit(plan.warnings, "job-token-file-readable", f"{TOKEN_FILE_VARIABLE}={path} is readable by "
                     "every user of this machine: any of them can check in to this job or relay a failure")
        return

    emit(plan.warnings, "derived-job-token", f"the check-in token is derived from the job id {topo.job_id!r} "
         f"and master port {topo.master_port.value}, {_who_knows(topo, settings)}: a process that reaches node "
         "0's exchange can check in or relay a failure")


def _who_knows(topo, settings):
    """Who can know the job id the token is derived from, on the platform this node is on (walk6 W3: a Slurm
    step was told of pods and compose files)."""
    if settings.get("job_id"):
        return (f"which anyone who can read the job's own files knows (the job id is {settings.source('job_id')}, "
                "written in its compose file, pod spec or sbatch script)")
    if topo.job_id == settings.env.get("SLURM_JOB_ID"):
        return "which anyone who can run squeue on the cluster knows (the job id is SLURM_JOB_ID)"
    if topo.job_id == "nodeweave":
        return ("which is the same for every job that sets no NODEWEAVE_JOB_ID, so anyone knows it (the job id "
                "is the default 'nodeweave')")
    return ("which anyone who can list the pods or hosts knows (the job id is the nodes' host name prefix, "
            f"{topo.job_id}-N)")


def plan_exchange(plan, settings):
    """Record on ``plan.exchange`` what the check-in will do; retarget a worker's wait to its port."""
    topo, launch = plan.topology, plan.launch
    _warn_derived_token(plan, settings)
    # the ports apart whether or not the exchange runs here, as the spec checks them (walk5 W30: one node, its
    # exchange off, served /metrics on the port torchrun's store binds)
    # a refused port is raised once the exchange is recorded as the settings make it: --explain draws the rest of
    # the plan as given (walk8 B22: a port clash drew the exchange as off, a second, false problem)
    from ..errors import UsageError

    try:
        port, port_source, clash = *exchange_port(topo, settings), None
        if not settings.status:  # --status listens on nothing: the node's own metrics port is its environment
            _metrics_apart(topo, settings, port, port_source)  # (walk16b B17)
    except UsageError as err:
        clash = err
        port = settings.get("exchange_port") or topo.master_port.value + DEFAULT_OFFSET
        port_source = settings.source("exchange_port") if settings.get("exchange_port") else "master port + 1"
    _record(plan, settings, topo, launch, port, port_source)
    if clash is not None:
        raise clash
    return plan.exchange


def _record(plan, settings, topo, launch, port, port_source):
    off = off_because(topo, settings)
    if off:
        plan.exchange = {"enabled": False, "why": off}
        return
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
