"""Pure checks of the GPU proof: nvidia-smi text and NCCL logs in, verdicts out (stdlib only).

The proof compares what the entrypoint detected with what ``nvidia-smi``
reports, and reads NCCL's own log to see which transport joined each pair of
ranks. Both parsers take the tools' exact text (as captured under
``tests/fixtures/``), so the CPU test suite checks them against an 8-GPU HGX
without a GPU.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELLS = re.compile(r"\t| {2,}")
_NV = re.compile(r"^NV(\d+)$")
_SMI_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^)]+)\))?$")
_SMI_LINK = re.compile(r"^\s*Link (\d+): (.+?)\s*$")
_NCCL_LINE = re.compile(r"^(?P<host>[\w.-]+):\d+:\d+ \[\d+\] NCCL INFO (?P<msg>.*)$")
_NCCL_RANK = re.compile(r"\brank (\d+) nranks (\d+) cudaDev (\d+)")
_NCCL_CHANNEL = re.compile(r"Channel \d+(?:/\d+)? : (\d+)\[[0-9a-fx]+\] -> (\d+)\[[0-9a-fx]+\](?: \[\w+\])? via (\S+)")
_NCCL_NVLINK = re.compile(r"type NVL/|\+ NVL\[")
TORCHRUN_FORCED_OMP = "Setting OMP_NUM_THREADS environment variable for each process to be 1"


def bus_id(text: str) -> str:
    """``00000000:18:00.0`` (nvidia-smi) and ``0000:18:00.0`` (sysfs) -> ``0000:18:00.0``."""
    domain, _, rest = text.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def parse_gpu_query(text: str) -> "list[dict]":
    """``nvidia-smi --query-gpu=name,pci.bus_id,count --format=csv,noheader`` -> one dict per GPU."""
    rows = [[cell.strip() for cell in line.split(",")] for line in text.strip().splitlines() if line.count(",") == 2]
    return [{"model": name, "pci": bus_id(bus), "count": int(count)} for name, bus, count in rows if count.isdigit()]


def parse_topo_matrix(text: str) -> dict:
    """``nvidia-smi topo -m`` -> ``{"gpus": [...], "links": {"GPU0": {"GPU1": "NV18", ...}}, "nics": {...}}``.

    Piped output has a tab-separated header; on a terminal the header is
    underlined with ANSI escapes; copies in reports often have spaces.
    """
    lines = [_ANSI.sub("", line).rstrip("\n") for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if _is_header(_cells(line))), None)
    if header_at is None:
        return {"gpus": [], "links": {}, "nics": {}}
    columns = _cells(lines[header_at])
    gpus = [c for c in columns if re.match(r"^GPU\d+$", c)]
    links: "dict[str, dict[str, str]]" = {}
    for line in lines[header_at + 1:]:
        cells = _cells(line)
        if not cells or not re.match(r"^GPU\d+$", cells[0]):
            if cells and cells[0] == "Legend:":
                break
            continue
        values = cells[1:]
        links[cells[0]] = {col: values[k] for k, col in enumerate(columns) if col in gpus and k < len(values)}
    nics = dict(re.findall(r"^\s*(NIC\d+): (\S+)\s*$", text, re.MULTILINE))
    return {"gpus": gpus, "links": links, "nics": nics}


def _is_header(cells: "list[str]") -> bool:
    """The column header starts with GPU0 too, but never has the diagonal ``X`` next to it."""
    return bool(cells) and cells[0] == "GPU0" and (len(cells) == 1 or cells[1] != "X")


def _cells(line: str) -> "list[str]":
    return [cell.strip() for cell in _CELLS.split(line.strip())]


def parse_nvlink_status(text: str) -> "dict[int, dict]":
    """``nvidia-smi nvlink --status`` -> ``{gpu index: {"model", "uuid", "up", "inactive", "gbps"}}``."""
    gpus: "dict[int, dict]" = {}
    current = None
    for line in text.splitlines():
        head = _SMI_GPU.match(line.strip())
        if head:
            current = gpus.setdefault(int(head.group(1)), {"model": head.group(2), "uuid": head.group(3), "up": 0,
                                                           "inactive": 0, "gbps": 0.0})
            continue
        link = _SMI_LINK.match(line)
        if link and current is not None:
            speed = re.match(r"^([\d.]+) GB/s$", link.group(2))
            if speed:
                current["up"] += 1
                current["gbps"] = round(current["gbps"] + float(speed.group(1)), 3)
            else:
                current["inactive"] += 1
    return gpus


def nvlink_fabric(topo: dict, status: "dict[int, dict]") -> str:
    """``switched``, ``direct``, ``direct-or-switched`` or ``none``, from nvidia-smi alone.

    A GPU whose NVLink peers add up to more links than it has up cannot be
    wired to them directly: an NVSwitch sits between (8x H100: NV18 to 7
    peers on 18 links). With two GPUs the two cannot be told apart.
    """
    per_gpu = {}
    for row, peers in topo["links"].items():
        counts = [int(m.group(1)) for v in peers.values() if (m := _NV.match(v))]
        if counts:
            per_gpu[int(row[3:])] = sum(counts)
    if not per_gpu:
        return "none"
    if any(total > status.get(index, {}).get("up", total) for index, total in per_gpu.items()):
        return "switched"
    return "direct" if len(topo["gpus"]) > 2 else "direct-or-switched"


def compare_detection(plan_gpus: dict, query: str, nvlink_status: str, topo: str) -> dict:
    """The entrypoint's GPUs (``--explain --json`` node.gpus) against nvidia-smi's three views."""
    rows = parse_gpu_query(query)
    links = parse_nvlink_status(nvlink_status)
    matrix = parse_topo_matrix(topo)
    smi_links = sum(gpu["up"] for gpu in links.values())
    smi_nvlink = smi_links > 0 or any(_NV.match(v) for peers in matrix["links"].values() for v in peers.values())
    fabric = nvlink_fabric(matrix, links)
    said = plan_gpus.get("interconnect")
    checks = {
        "count": (plan_gpus.get("count"), rows[0]["count"] if rows else 0),
        "models_and_bus_ids": (sorted((d["model"], bus_id(d["pci"])) for d in plan_gpus.get("devices", [])),
                               sorted((r["model"], r["pci"]) for r in rows)),
        "nvlink": (said in ("nvlink", "nvswitch"), smi_nvlink),
        # a claimed NVSwitch must show as one; a switch the OS cannot see (a VM's slice of an HGX) is no error
        "nvswitch": (said == "nvswitch", said == "nvswitch" and fabric in ("switched", "direct-or-switched")),
        "topology_covers_every_gpu": (len(rows), len(matrix["gpus"])),
    }
    down = {index: gpu["inactive"] for index, gpu in links.items() if gpu["inactive"]}
    return {"agree": all(a == b for a, b in checks.values()), "checks": checks, "interconnect": said,
            "nvidia_smi_fabric": fabric, "nvswitch_hidden_from_os": said == "nvlink" and fabric == "switched",
            "nvidia_smi_nvlink_links_up": smi_links, "nvlink_links_inactive": down,
            "nvlink_per_gpu_gbps": {index: gpu["gbps"] for index, gpu in links.items()},
            "topo_gpu_links": {row: sorted(set(peers.values()) - {"X"}) for row, peers in matrix["links"].items()}}


def nccl_transports(node_logs: "dict[str, str]") -> dict:
    """Which transport joined each pair of ranks, from NCCL_DEBUG=INFO logs, one text per simulated node.

    A rank belongs to the node whose log holds its ``rank R nranks N cudaDev D``
    line. Inside a node every connection must be P2P (NVLink or PCIe, never
    SHM or the network); between nodes every one must be NET.
    """
    owner: "dict[int, str]" = {}
    hosts: "dict[str, list[str]]" = {}
    nvlink: "dict[str, bool]" = {}
    edges = []
    for node, text in node_logs.items():
        seen_hosts = set()
        for line in text.splitlines():
            parsed = _NCCL_LINE.match(line.strip())
            if not parsed:
                continue
            seen_hosts.add(parsed.group("host"))
            msg = parsed.group("msg")
            if (rank := _NCCL_RANK.search(msg)) and " - Init" in msg:
                owner.setdefault(int(rank.group(1)), node)
            if channel := _NCCL_CHANNEL.search(msg):
                edges.append((int(channel.group(1)), int(channel.group(2)), "/".join(channel.group(3).split("/")[:2])))
            nvlink[node] = nvlink.get(node, False) or bool(_NCCL_NVLINK.search(msg))
        hosts[node] = sorted(seen_hosts)
    intra: "dict[str, int]" = {}
    inter: "dict[str, int]" = {}
    unplaced = set()
    for src, dst, transport in edges:
        if src not in owner or dst not in owner:
            unplaced.update(r for r in (src, dst) if r not in owner)
            continue
        bucket = intra if owner[src] == owner[dst] else inter
        bucket[transport] = bucket.get(transport, 0) + 1
    nodes_with_peers = {n for n in node_logs if sum(1 for r in owner.values() if r == n) > 1}
    return {
        "ranks_by_node": {n: sorted(r for r, o in owner.items() if o == n) for n in node_logs},
        "hostnames_by_node": hosts, "intra_node": intra, "inter_node": inter, "unplaced_ranks": sorted(unplaced),
        "nvlink_in_graph_by_node": {n: nvlink.get(n, False) for n in node_logs},
        "intra_node_p2p_only": bool(intra) and all(t.startswith("P2P") for t in intra) if nodes_with_peers else None,
        "inter_node_net_only": bool(inter) and all(t.startswith("NET") for t in inter),
        "nvlink_inside_each_node": all(nvlink.get(n, False) for n in nodes_with_peers) if nodes_with_peers else None,
    }


def transports_ok(summary: dict) -> bool:
    """Every check of :func:`nccl_transports` that applies passed (``None`` means it does not apply)."""
    return (summary["inter_node_net_only"] and not summary["unplaced_ranks"]
            and summary["intra_node_p2p_only"] in (True, None) and summary["nvlink_inside_each_node"] in (True, None))


def torchrun_forced_one_omp_thread(log: str) -> bool:
    """Whether torchrun printed that it set OMP_NUM_THREADS=1 for its workers."""
    return TORCHRUN_FORCED_OMP in log
