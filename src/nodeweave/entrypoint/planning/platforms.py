"""Readers of the platforms that announce a node's place in variables of their own.

dstack, AWS Batch multi-node parallel jobs, Google Cloud Batch, SageMaker
training, Azure ML and MPI launches (Open MPI, PMIx, the Kubeflow MPIJob).
Each function is the reader of one row of ``sources.SOURCES``, which stays the
one table; docs/entrypoint.md quotes each platform's documentation. What the
documentation says and these readers rely on:

- dstack: ``DSTACK_NODE_RANK`` (0 is the master), ``DSTACK_NODES_NUM``,
  ``DSTACK_MASTER_NODE_IP``, ``DSTACK_NODES_IPS`` (one address a line),
  ``DSTACK_GPUS_PER_NODE``;
- AWS Batch: ``AWS_BATCH_JOB_NODE_INDEX`` (0-based), ``AWS_BATCH_JOB_NUM_NODES``,
  ``AWS_BATCH_JOB_MAIN_NODE_INDEX`` (any index, not always 0), and
  ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS`` only on the other nodes: the
  main node is the master and uses its own address;
- Google Cloud Batch: ``BATCH_TASK_INDEX`` (0 .. ``BATCH_TASK_COUNT`` - 1) and
  ``BATCH_HOSTS_FILE`` (with ``requireHostsFile``). Batch sets the index on
  every job, also on independent tasks (a sweep), so only a job with the hosts
  file is read as one multi-node job;
- SageMaker: ``SM_CURRENT_HOST`` in ``SM_HOSTS`` (JSON), else
  ``/opt/ml/input/config/resourceconfig.json``; hosts are ``algo-1``, ``algo-2``
  ... (1-based names), the first is the master; ``SM_NUM_GPUS``;
- Azure ML: ``AZ_BATCHAI_TASK_INDEX`` (the node's index with one process per
  node), ``AZUREML_NODE_COUNT``, ``AZ_BATCH_MASTER_NODE`` (``<address>:<port>``);
  it also sets ``NODE_RANK``/``MASTER_ADDR``, read as plain variables;
- MPI: ``OMPI_COMM_WORLD_RANK``/``PMIX_RANK`` and ``OMPI_COMM_WORLD_SIZE`` count
  tasks, so they are a node's rank and count only with one task per node, which
  ``OMPI_COMM_WORLD_LOCAL_SIZE`` tells (``OMPI_COMM_WORLD_NODE_RANK`` is a local
  rank, not the node's). Under Slurm, ``SLURM_NODEID`` names the node and the
  MPI ranks are task ranks: only the tasks per node are read.
"""

from ..errors import UsageError
from ..hostport import ACCEPTED as HOST_PORT_ACCEPTED, split_host_port
from .hostlists import bounded, file_text, variable_text
from ..model import PLATFORM, Claim, host_list, variables

SAGEMAKER_CONFIG = "/opt/ml/input/config/resourceconfig.json"


def set_but_empty(name, platform, instead):
    """The one phrase for a platform's variable set but empty (walk15b B1-B3): the platform sets it, so a wrapper
    emptied it; its remedy, or ``instead`` (``MASTER_ADDR (node 0's address)``) on every node."""
    return (f"{name} is set but empty: {platform} sets it on the job's nodes, so a wrapper's `export {name}=$VALUE` "
            f"or `-e {name}=$VALUE` with VALUE unset emptied it; pass {platform}'s own value through, or unset it "
            f"and set {instead} on every node")


def _index(env, name, what):
    """A 0-based index or count from ``name``; None when unset; UsageError when not a number."""
    text = env.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise UsageError(f"{name}={text!r}: expected {what} (a whole number)")
    return int(text)


def gpu_count(env, name):
    """Processes per node from a platform's GPU count; 0 (a CPU node) claims nothing. ``topology`` weighs a count
    against the GPUs this node sees (``sources.GPU_COUNTS``)."""
    value = env.get(name, "").strip()
    return [] if value in ("", "0") else [Claim("nproc_per_node", value, f"{name}={value}", PLATFORM)]


def _lines(text, where):
    """Addresses delimited by newlines (or, as older dstack wrote them, spaces), at most the node bound."""
    return bounded(text.split(), where)


def _hosts(text, where):
    """The first field of each line that has one (a hosts file may add fields such as ``slots=N``), at most the
    node bound."""
    return bounded((line.split()[0] for line in text.splitlines() if line.split() and
                    not line.lstrip().startswith("#")), where)


def this_node(scene):
    """Every name and address this node answers to (hostname, short name, POD_NAME, interface IPv4s), as
    ``hostport.host_key`` writes them (lowercased): ``hostport.names_this_node`` compares a host with them."""
    from ..hostport import host_key

    node = scene.node
    names = {node.hostname, node.hostname.split(".")[0], scene.env.get("POD_NAME", "")}
    for iface in node.interfaces:
        names.update(iface.ipv4)
    names = {host_key(name) for name in names}
    names.discard("")
    return names


def own_address(node):
    """This node's first IPv4 address off loopback, on a device-backed interface first."""
    ranked = sorted(node.interfaces, key=lambda iface: iface.virtual)
    for iface in ranked:
        for address in iface.ipv4:
            if not address.startswith("127."):
                return address
    return None


def dstack(scene):
    env = scene.env
    claims = variables(env, [("node_rank", "DSTACK_NODE_RANK"), ("nnodes", "DSTACK_NODES_NUM"),
                             ("master_addr", "DSTACK_MASTER_NODE_IP")], PLATFORM)
    if not env.get("DSTACK_NODE_RANK", "").strip():
        return []
    claims += gpu_count(env, "DSTACK_GPUS_PER_NODE")
    ips = _lines(variable_text(env, "DSTACK_NODES_IPS"), "DSTACK_NODES_IPS")
    if ips:
        claims += host_list(ips, "DSTACK_NODES_IPS", "first line of DSTACK_NODES_IPS", "lines of DSTACK_NODES_IPS")
    return claims


def aws_batch(scene):
    """The main node is node 0 (its index may be any); node i counts on from it, modulo the node count."""
    env = scene.env
    index = _index(env, "AWS_BATCH_JOB_NODE_INDEX", "the node's 0-based index")
    if index is None:
        return []
    count = _index(env, "AWS_BATCH_JOB_NUM_NODES", "the node count")
    main = _index(env, "AWS_BATCH_JOB_MAIN_NODE_INDEX", "the main node's index")
    if count is None or main is None or not index < count or not main < count:
        raise UsageError(
            f"AWS_BATCH_JOB_NODE_INDEX={index} needs AWS_BATCH_JOB_NUM_NODES and AWS_BATCH_JOB_MAIN_NODE_INDEX "
            f"(got {env.get('AWS_BATCH_JOB_NUM_NODES', 'unset')!r} and {env.get('AWS_BATCH_JOB_MAIN_NODE_INDEX', 'unset')!r}); "
            "accepted: indices below the node count, as AWS Batch sets them on every node of a multi-node parallel job")
    source = f"AWS_BATCH_JOB_NODE_INDEX={index}"
    if main:
        source += f" counted from the main node AWS_BATCH_JOB_MAIN_NODE_INDEX={main}"
    claims = [Claim("node_rank", (index - main) % count, source, PLATFORM),
              Claim("nnodes", count, f"AWS_BATCH_JOB_NUM_NODES={count}", PLATFORM)]
    address = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "").strip()
    if index != main and address:
        claims.append(Claim("master_addr", address, f"AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS={address}",
                            PLATFORM))
    elif index != main and "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS" not in env:  # set but empty: said so
        scene.missing["master_addr"] = (
            f"AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS is unset on this child node (AWS_BATCH_JOB_NODE_INDEX="
            f"{index}, the main node is {main}): AWS Batch sets it on every node but the main one, so a container "
            "started outside the job's node group lacks it; set MASTER_ADDR to the main node's address")
    elif index == main and own_address(scene.node):
        claims.append(Claim("master_addr", own_address(scene.node),
                            "this node's own address (the AWS Batch main node, which gets no address variable)",
                            PLATFORM))
    return claims


def google_batch(scene):
    env = scene.env
    path = env.get("BATCH_HOSTS_FILE", "").strip()
    if not env.get("BATCH_TASK_INDEX", "").strip():
        return []
    if not path:
        scene.notes.append("BATCH_TASK_INDEX without BATCH_HOSTS_FILE: independent Google Cloud Batch tasks, "
                           "each its own job (set requireHostsFile for one multi-node job)")
        return []
    claims = variables(env, [("node_rank", "BATCH_TASK_INDEX"), ("nnodes", "BATCH_TASK_COUNT")], PLATFORM)
    try:
        hosts = _hosts(file_text(path, "a hosts file", f"BATCH_HOSTS_FILE={path}"), f"BATCH_HOSTS_FILE={path}")
    except OSError as err:
        raise UsageError(f"BATCH_HOSTS_FILE={path}: cannot read it ({err.strerror}); accepted: the hosts file "
                         "Google Cloud Batch writes with requireHostsFile") from None
    me = this_node(scene)
    from ..hostport import names_this_node

    mine = [i for i, host in enumerate(hosts) if names_this_node(host, me)]
    if not mine:
        scene.notes.append(f"this node is not among the {len(hosts)} host(s) of BATCH_HOSTS_FILE={path}: "
                           "its order is not checked, so its first host is not taken as the master")
        return claims
    claims.append(Claim("node_rank", mine[0], f"position of {hosts[mine[0]]} in BATCH_HOSTS_FILE={path}", PLATFORM))
    return claims + host_list(hosts, "BATCH_HOSTS_FILE", f"first host of BATCH_HOSTS_FILE={path}",
                              f"hosts in BATCH_HOSTS_FILE={path}")


def sagemaker_naming(prefix):
    """SageMaker names its hosts algo-1, algo-2, ...: 1-based, so the ordinal is never the rank."""
    return prefix == "algo"


def _sagemaker_config(scene):
    """(current host, hosts, where): from SM_CURRENT_HOST/SM_HOSTS, else resourceconfig.json; None outside."""
    env = scene.env
    if env.get("SM_CURRENT_HOST", "").strip():
        where, text = "SM_HOSTS", variable_text(env, "SM_HOSTS")
        current = env["SM_CURRENT_HOST"].strip()
        if "SM_HOSTS" in env and not text.strip():  # no JSON to name: the variable was emptied (walk15b B1)
            raise UsageError(set_but_empty("SM_HOSTS", "SageMaker", "NODE_RANK, NNODES and MASTER_ADDR"))
    else:
        text = scene.root.read(SAGEMAKER_CONFIG)
        if text is None:
            return None
        where, current = SAGEMAKER_CONFIG, None
    import json  # only SageMaker jobs pay for it (the start-up path imports nothing slow)

    try:
        data = json.loads(text)
    except ValueError:
        raise UsageError(f"{where}: {text[:80]!r} is not JSON; accepted: a list of hosts (SM_HOSTS) or "
                         '{"current_host": ..., "hosts": [...]}') from None
    if current is None:
        data, current = (data.get("hosts"), data.get("current_host")) if isinstance(data, dict) else (None, None)
    if isinstance(data, list):
        data = bounded(data, where)  # before any host is compared (walk14b B7)
    if not (isinstance(data, list) and data and all(isinstance(h, str) for h in data) and current in data):
        raise UsageError(f"{where}: the current host {current!r} is not in its hosts {data!r}; accepted: a JSON list "
                         "of host names that holds the current host, as SageMaker writes them")
    return current, data, where


def sagemaker(scene):
    found = _sagemaker_config(scene)
    if found is None:
        return []
    current, hosts, where = found
    claims = [Claim("node_rank", hosts.index(current), f"position of {current} in {where}", PLATFORM)]
    claims += host_list(hosts, where, f"first host of {where}", f"hosts in {where}")
    return claims + gpu_count(scene.env, "SM_NUM_GPUS")


def azure_ml(scene):
    env = scene.env
    claims = variables(env, [("node_rank", "AZ_BATCHAI_TASK_INDEX"), ("nnodes", "AZUREML_NODE_COUNT")], PLATFORM)
    master = env.get("AZ_BATCH_MASTER_NODE", "").strip()
    if claims and master:
        try:
            host, _ = split_host_port(master)  # host:port, [fd00::1]:port, or an IPv6 address alone
        except ValueError as err:
            raise UsageError(f"AZ_BATCH_MASTER_NODE: {err}; accepted: {HOST_PORT_ACCEPTED}, as Azure ML sets it on "
                             "every node of a distributed job") from None
        claims.append(Claim("master_addr", host, f"AZ_BATCH_MASTER_NODE={master}", PLATFORM))
    return claims


def mpi(scene):
    """One task per node: the MPI rank and size are the node's; several are claimed for the refusal."""
    env = scene.env
    claims = []
    local = _index(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "the number of MPI tasks on this node")
    if local is not None:
        claims.append(Claim("tasks_per_node", local, f"OMPI_COMM_WORLD_LOCAL_SIZE={local}", PLATFORM))
    if any(name.startswith("SLURM") for name in env):
        return claims
    return claims + variables(env, [("node_rank", "OMPI_COMM_WORLD_RANK"), ("node_rank", "PMIX_RANK"),
                                    ("nnodes", "OMPI_COMM_WORLD_SIZE")], PLATFORM)
