"""host:port written and read one way (entrypoint/hostport.py), IPv6 included (issue 43, replay N3).

Three classes: the text a person reads (explain, logs, errors), what the launchers are handed (checked with each
launcher's own parser), and what nodeweave reads back from a platform or a user. A scan of the source keeps new
sites on the helper.
"""

import ast
from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.hostport import host_port, http_url, split_host_port

SRC = Path(__file__).resolve().parents[1] / "src" / "nodeweave"
FIX = Path(__file__).parent / "fixtures" / "synthetic"
SCRIPT = ["train.py", "--lr", "3e-4"]


def plan(fixture, launcher="torchrun", **env):
    env.setdefault("NODEWEAVE_LAUNCHER", launcher)
    return make_plan(["--", *SCRIPT], env=env, sysroot=str(FIX / fixture))


# --- the helper ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host, port, text", [
    ("fd00::1", 29501, "[fd00::1]:29501"),
    ("::1", 9464, "[::1]:9464"),
    ("[fd00::1]", 29501, "[fd00::1]:29501"),  # already bracketed: not twice
    ("10.0.0.1", 29501, "10.0.0.1:29501"),
    ("node-0.svc", 29501, "node-0.svc:29501"),
])
def test_host_port_brackets_only_ipv6(host, port, text):
    assert host_port(host, port) == text


def test_http_url_brackets_ipv6():
    assert http_url("fd00::1", 9464) == "http://[fd00::1]:9464/"
    assert http_url("127.0.0.1", 9464, "/status.json") == "http://127.0.0.1:9464/status.json"
    assert http_url("fd00::1", 443, "", "https") == "https://[fd00::1]:443"


@pytest.mark.parametrize("text, parsed", [
    ("[fd00::1]:29501", ("fd00::1", 29501)),
    ("[fd00::1]", ("fd00::1", 7)),
    ("fd00::1", ("fd00::1", 7)),            # never host "fd00:" port 1
    ("fd00::1:29501", ("fd00::1:29501", 7)),  # itself an IPv6 address: taken whole, not guessed apart
    ("10.0.0.4:6105", ("10.0.0.4", 6105)),
    ("node-0.svc", ("node-0.svc", 7)),
    (" node-0:80 ", ("node-0", 80)),
])
def test_split_host_port(text, parsed):
    assert split_host_port(text, default_port=7) == parsed


@pytest.mark.parametrize("text, says", [
    ("[fd00::1]:", "not a port number from 1 to 65535"),
    ("[fd00::1]:99999", "not a port number from 1 to 65535"),
    ("node:0", "not a port number"),
    ("node:²", "not a port number"),
    ("[fd00::1]x", "after the brackets"),
    ("[fd00::1", "bracket"),
    ("[node-0]:80", "bracket"),
    (":80", "names no host"),
])
def test_split_host_port_refuses_in_words(text, says):
    with pytest.raises(ValueError, match=says):
        split_host_port(text)


def test_hostport_is_stdlib_only():
    """The CLI and the entrypoint (stdlib only, shipped alone) both import it: it imports no nodeweave module."""
    import sys

    tree = ast.parse((SRC / "entrypoint" / "hostport.py").read_text())
    names = [alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and all(name.split(".")[0] in sys.stdlib_module_names for name in names), names


# --- class 1: the text a person reads --------------------------------------------------------------------------

def test_explain_writes_the_exchange_of_an_ipv6_master_in_brackets():
    """Replay N3: `NODE_RANK=1 NNODES=2 MASTER_ADDR=fd00::1 nodeweave-entrypoint --explain` said
    'exchange fd00::1:29501', which reads as the address fd00::1:29501."""
    from nodeweave.entrypoint.explain import render_text

    p = make_plan(["--", *SCRIPT], env={"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "fd00::1"})  # this machine
    text = render_text(p)
    assert "node 0's check-in exchange [fd00::1]:29501 to accept" in text
    assert "checks in with node 0 at [fd00::1]:29501" in text
    assert "fd00::1:2950" not in text
    assert p.exchange["host"] == "fd00::1"  # the address itself stays bare: it is handed to connect()


def test_wait_messages_bracket_an_ipv6_master():
    from nodeweave.entrypoint.running.wait import dropped_line

    line = dropped_line("master", "fd00::1", 29500, "fd00::1", 20, 5)
    assert line.startswith("master [fd00::1]:29500: every connection")


def test_a_connection_to_an_ipv6_exchange_is_named_in_brackets():
    """The Channel node 0's side makes from a socket and the one a node opens name the peer the same way, and
    node 0 still records the bare address it saw (the verdict compares it with what the node advertises)."""
    import socket

    from nodeweave.entrypoint.checkin.wire import Channel, connect

    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        server = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with server:
        port = server.getsockname()[1]
        client = connect("::1", port, 5.0)
        accepted, _ = server.accept()
        ours = Channel(accepted)
        try:
            assert client.peer == f"[::1]:{port}"
            assert ours.seen == "::1" and ours.peer.startswith("[::1]:")
        finally:
            client.close()
            ours.close()


# --- class 2: what the launchers are handed, read by their own parsers ------------------------------------------

@pytest.fixture(scope="module")
def torchrun():
    return pytest.importorskip("torch.distributed.run")


def test_torchrun_rdzv_endpoint_of_an_ipv6_master(torchrun):
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    p = plan("cpu-only", NODEWEAVE_NNODES="1:2", NODE_RANK="1", MASTER_ADDR="fd00::1")
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    assert args.rdzv_endpoint == "[fd00::1]:29500"  # not fd00::1:29500, which reads as an address
    assert parse_rendezvous_endpoint(args.rdzv_endpoint, default_port=1) == ("fd00::1", 29500)
    config, _, _ = torchrun.config_from_args(args)
    assert parse_rendezvous_endpoint(config.rdzv_endpoint, default_port=1) == ("fd00::1", 29500)
    exported = {v.name: v.value for v in p.env if v.action == "export"}
    assert exported["PET_RDZV_ENDPOINT"] == "[fd00::1]:29500"
    assert parse_rendezvous_endpoint(exported["PET_RDZV_ENDPOINT"], default_port=1) == ("fd00::1", 29500)
    assert exported["MASTER_ADDR"] == "fd00::1"  # a host for torch's env://, never bracketed


def test_torchs_c10d_backend_hosts_its_store_at_the_bracketed_endpoint(torchrun):
    """Beyond the parser: torch's own c10d rendezvous backend, given node 0's plan for MASTER_ADDR=::1, opens its
    TCPStore there and a key goes through it."""
    import socket

    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import create_backend

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip("no IPv6 loopback here")
    p = plan("cpu-only", NODEWEAVE_NNODES="1:2", NODE_RANK="0", MASTER_ADDR="::1", MASTER_PORT=str(port))
    config, _, _ = torchrun.config_from_args(torchrun.get_args_parser().parse_args(p.launch.argv[1:]))
    assert config.rdzv_endpoint == f"[::1]:{port}"
    params = RendezvousParameters(backend="c10d", endpoint=config.rdzv_endpoint, run_id=config.run_id,
                                  min_nodes=config.min_nodes, max_nodes=config.max_nodes, **config.rdzv_configs)
    _, store = create_backend(params)
    store.set("nodeweave", "ipv6")
    assert store.get("nodeweave") == b"ipv6"


def test_torchrun_static_keeps_the_master_address_bare(torchrun):
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    p = plan("cpu-only", NNODES="2", NODE_RANK="1", MASTER_ADDR="fd00::1")
    args = torchrun.get_args_parser().parse_args(p.launch.argv[1:])
    assert args.master_addr == "fd00::1"
    config, _, _ = torchrun.config_from_args(args)  # torch joins master addr and port itself for static
    assert parse_rendezvous_endpoint(config.rdzv_endpoint, default_port=1) == ("fd00::1", 29500)


def test_accelerate_gets_the_ipv6_master_bare_and_torch_reads_its_endpoint(tmp_path, monkeypatch):
    """accelerate joins ``--main_process_ip`` and the port itself on its torchrun path (f"{ip}:{port}") and
    writes MASTER_ADDR from the ip on its others: the ip stays bare, and torch's parser reads the join right."""
    launch = pytest.importorskip("accelerate.commands.launch")
    from accelerate.utils.launch import prepare_multi_gpu_env
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    monkeypatch.setenv("HF_HOME", str(tmp_path))
    p = plan("hgx-h100", "accelerate", NNODES="2", NODE_RANK="1", MASTER_ADDR="fd00::1")
    args = launch.launch_command_parser().parse_args(p.launch.argv[2:])
    assert args.main_process_ip == "fd00::1"
    args, _, _ = launch._validate_launch_command(args)
    prepare_multi_gpu_env(args)
    assert parse_rendezvous_endpoint(args.rdzv_endpoint, default_port=1) == ("fd00::1", 29500)


def test_deepspeed_hostfile_and_include_with_ipv6_node_names(tmp_path):
    """DeepSpeed's ``--include NAME:SLOTS`` splits at every colon and takes no brackets: an IPv6 node name
    (dstack's DSTACK_NODES_IPS) broke its parser. The hostfile's names only index its lines (--no_ssh)."""
    runner = pytest.importorskip("deepspeed.launcher.runner")
    p = plan("hgx-h100", "deepspeed", CUDA_VISIBLE_DEVICES="2,3", NODEWEAVE_NPROC_PER_NODE="2",
             DSTACK_NODE_RANK="1", DSTACK_NODES_NUM="2", DSTACK_MASTER_NODE_IP="fd00::1",
             DSTACK_NODES_IPS="fd00::1\nfd00::2")
    (path, content), = p.launch.files.items()
    local = tmp_path / "hostfile"
    local.write_text(content)
    argv = list(p.launch.argv)
    argv[argv.index(path)] = str(local)
    args = runner.parse_args(argv[1:])
    assert (args.master_addr, args.node_rank) == ("fd00::1", 1)
    active = runner.parse_inclusion_exclusion(runner.fetch_hostfile(args.hostfile), args.include, args.exclude)
    # this node (rank 1) keeps its visible GPU ids; another node's line only counts its processes (fix13d)
    assert list(active.values()) == [[0, 1], [2, 3]]
    assert 0 <= args.node_rank < len(active)


# --- class 3: what nodeweave reads back ---------------------------------------------------------------------------

def test_azure_master_node_in_brackets_is_the_ipv6_address():
    azure = {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2"}
    p = plan("cpu-only", **azure, AZ_BATCH_MASTER_NODE="[fd00::4]:6105")
    assert p.topology.master_addr.value == "fd00::4"
    assert plan("cpu-only", **azure, AZ_BATCH_MASTER_NODE="fd00::4").topology.master_addr.value == "fd00::4"
    assert plan("cpu-only", **azure, AZ_BATCH_MASTER_NODE="10.0.0.4:6105").topology.master_addr.value == "10.0.0.4"


def test_azure_master_node_with_a_bad_port_is_refused_in_one_line():
    from nodeweave.entrypoint import EntrypointError

    with pytest.raises(EntrypointError) as caught:
        plan("cpu-only", AZ_BATCHAI_TASK_INDEX="1", AZUREML_NODE_COUNT="2", AZ_BATCH_MASTER_NODE="m:http")
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("AZ_BATCH_MASTER_NODE: 'm:http' has the port 'http'")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("host", ["[fd00::1]:22", "user@[fd00::1]", "fe80::1"])
def test_an_ssh_host_in_ipv6_brackets_is_refused_for_being_ipv6_not_as_a_bad_name(host):
    """rsync's host:path cannot carry an IPv6 address; a bracketed one (as ssh and URLs write it) was refused as a
    host name with bad characters, which sends the user looking at the wrong thing."""
    from nodeweave.errors import UsageError
    from nodeweave.remote.names import check_ssh_host

    with pytest.raises(UsageError, match="give IPv6 hosts a name") as caught:
        check_ssh_host(host, "--host")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("url, says", [
    ("http://fd00::1:9464", "an IPv6 address in a URL goes in brackets"),
    ("http://[fd00::1]:99999", "the port '99999' is not a port number from 1 to 65535"),
    ("http://node-0:abc", "the port 'abc' is not"),
])
def test_top_url_refuses_what_urllib_would_misread(url, says):
    """urllib reads http://fd00::1:9464 as host 'fd00' and fails only when asked for the port: before, that was
    a job 'down', not the user's typo (exit 2)."""
    from nodeweave.cluster.top import check_url
    from nodeweave.errors import UsageError

    with pytest.raises(UsageError, match=says) as caught:
        check_url(url)
    assert "\n" not in str(caught.value)
    check_url("http://[fd00::1]:9464")  # the bracketed form is taken


def test_nodes_check_in_with_node_0_at_an_ipv6_address_and_at_its_ipv4_one():
    """Node 0's exchange listened on IPv4 only: a node given MASTER_ADDR=fd00::1 waited out its deadline for a
    port node 0 had open. It listens on both now, and an IPv4 node is still seen at its IPv4 address (the
    verdict compares what a node advertises with what node 0 sees)."""
    import socket

    from loopback_hub import Cluster

    if not socket.has_dualstack_ipv6():
        pytest.skip("no dual-stack IPv6 here")
    for host in ("::1", "127.0.0.1"):
        cluster = Cluster(2, host=host)
        try:
            verdict = cluster.decide()
            assert verdict["decision"] == "start", verdict
            assert cluster.errors == {}
            assert [peer.seen for peer in cluster.hub.peers] == [host, host]
            assert all(peer.probe == "ok" for peer in cluster.hub.peers)  # node 0 connected back to each node
        finally:
            cluster.close()


def test_the_dashboard_listens_on_the_ipv6_address_it_is_given_and_its_url_reaches_it():
    """``dashboard --bind ::1`` was refused as 'cannot listen there' (http.server listens on IPv4 only), though
    the URL it prints already had the brackets for it."""
    import json
    import socket
    import urllib.request

    from nodeweave.cluster import dashboard

    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    server = dashboard.serve(lambda: {"schema": "test"}, "::1", 0)
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(http_url(host, port, "/state.json"), timeout=10) as answer:
            assert json.loads(answer.read()) == {"schema": "test"}
    finally:
        server.shutdown()
        server.server_close()


def test_node_0s_metrics_answer_on_ipv6_and_ipv4():
    """Prometheus on an IPv6 cluster scrapes a pod's IPv6 address: node 0's /metrics listened on IPv4 only."""
    import socket
    import urllib.request

    from nodeweave.entrypoint.metrics.server import serve

    if not socket.has_dualstack_ipv6():
        pytest.skip("no dual-stack IPv6 here")
    server = serve(0, live=None)
    try:
        port = server.server_address[1]
        for host in ("::1", "127.0.0.1"):
            with urllib.request.urlopen(http_url(host, port, "/"), timeout=10) as answer:
                assert answer.read().startswith(b"nodeweave: /metrics")
    finally:
        server.shutdown()
        server.server_close()


# --- every site uses the helper -----------------------------------------------------------------------------------

def _text(node):
    return ast.unparse(node).lower()


def _bare_joins(tree):
    """(line, what) of each host:port joined without the helper: f"{a}:{b}" with b a port (an RDMA device's
    port, "mlx5_0:1", is no address), f"http(s)://{a}", "%s:%s" % (.., port), "{}:{}".format(.., port),
    ":".join((.., port)), a + ":" + port."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for i, part in enumerate(parts):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    after = parts[i + 1] if i + 1 < len(parts) else None
                    before = parts[i - 1] if i else None
                    if part.value.endswith(("http://", "https://")) and isinstance(after, ast.FormattedValue):
                        yield node.lineno, f"a URL's host {ast.unparse(after.value)}: use http_url()"
                    if part.value == ":" and isinstance(before, ast.FormattedValue) \
                            and isinstance(after, ast.FormattedValue) and "port" in _text(after.value) \
                            and "dev" not in _text(before.value):
                        yield node.lineno, f"{ast.unparse(before.value)}:{ast.unparse(after.value)}: use host_port()"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str) and "s:%" in node.left.value and "port" in _text(node.right):
            yield node.lineno, f"{node.left.value!r} % ...: use host_port()"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
                and isinstance(node.func.value, ast.Constant) and "}:{" in str(node.func.value.value) \
                and any("port" in _text(arg) for arg in node.args):
            yield node.lineno, f"{node.func.value.value!r}.format(...): use host_port()"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
                and isinstance(node.func.value, ast.Constant) and node.func.value.value == ":" \
                and any("port" in _text(arg) for arg in node.args):
            yield node.lineno, "':'.join((host, port)): use host_port()"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.BinOp) \
                and isinstance(node.left.right, ast.Constant) and node.left.right.value == ":" \
                and "port" in _text(node.right):
            yield node.lineno, "... + ':' + port: use host_port()"


def test_no_address_is_joined_to_its_port_without_the_helper():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "hostport.py":
            continue
        for line, what in _bare_joins(ast.parse(path.read_text(), str(path))):
            found.append(f"{path.relative_to(SRC.parent)}:{line}: {what}")
    assert not found, "host and port joined by hand (an IPv6 address loses its brackets):\n" + "\n".join(found)


def test_the_scan_finds_each_form():
    sample = ast.parse('f"{host}:{port}"\nf"at {info[\'host\']}:{info[\'port\']}"\nf"http://{h}:{p}/"\n'
                       '"%s:%d" % (host, port)\n"{}:{}".format(host, port)\nhost + ":" + str(port)\n'
                       '":".join((host, str(port)))\nf"{self.device}:{self.port}"\nf"{low}:{high}"\n'
                       '":".join(IMAGE_PATH)\nuser + ":" + group\n')
    assert sorted(line for line, _ in _bare_joins(sample)) == [1, 2, 3, 4, 5, 6, 7]
