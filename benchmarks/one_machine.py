"""Every node of a job run as a process on this one machine: their master address and variables.

In a container with a network namespace of its own (only virtual interfaces: a CI runner that is itself a
container, a devcontainer) the entrypoint refuses a loopback master on a multi-node job, exit 3: there, no other
node could reach it (docs/entrypoint.md, exit codes). Where every node runs in that one container the documented
answer is ``NODEWEAVE_EXCHANGE_ALLOW=address``; with the exchange off that variable is refused (it does nothing
then), so such a job's master is this machine's own address instead. A machine with NICs of its own needs neither.
The benchmarks and the tests that start several nodes here take both from this module, so what they measure or
check is the same on a VM and in such a container (issue 43: no test depends on the machine it runs on).
"""

import socket

ALLOW_VARIABLE = "NODEWEAVE_EXCHANGE_ALLOW"
ONE_MACHINE = "address"  # the check-in rule a loopback master meets; the exchange's other rules stay as they are
LOOPBACK = "127.0.0.1"


def exchange_off(env):
    return (env or {}).get("NODEWEAVE_EXCHANGE", "").strip().lower() in ("off", "false", "0")


def one_machine_env(env=None):
    """``env`` (a node's variables) with ``address`` added to ``NODEWEAVE_EXCHANGE_ALLOW``, what it allowed
    already kept in its order; with the exchange off, ``env`` as it is (see :func:`master_address`)."""
    env = dict(env or {})
    if exchange_off(env):
        return env
    allowed = [name for name in env.get(ALLOW_VARIABLE, "").split(",") if name.strip()]
    if ONE_MACHINE not in allowed:
        allowed.append(ONE_MACHINE)
    env[ALLOW_VARIABLE] = ",".join(allowed)
    return env


def master_address(env=None):
    """127.0.0.1, or with the exchange off this machine's own address on its default route (loopback where it
    has none)."""
    return own_address() if exchange_off(env) else LOOPBACK


def own_address():
    """This machine's address on its default route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: the kernel picks the route
            return s.getsockname()[0]
        except OSError:
            return LOOPBACK
