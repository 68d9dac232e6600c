"""The syntax rules a spec value must follow, each with the words that explain it.

Each rule is a predicate plus the sentence an error message quotes, so a
refused value always tells the user what would have been accepted. The
patterns are the ones Kubernetes, the OCI distribution spec and the Linux
kernel enforce; refusing early beats a failed ``kubectl apply`` on node 7.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from nodeweave.entrypoint.hostport import host_key, leading_zero_problem
from nodeweave.entrypoint.planning.contract import EXCHANGE_ALLOWABLE
from nodeweave.systemdirs import CLUSTER_NAMESPACES_TEXT, cluster_namespace


@dataclass(frozen=True)
class Rule:
    check: Callable[[str], bool]
    accepted: str
    # a plain YAML number is one of its values (8 cores, a tag 2024, a Slurm time of 60 minutes); a name or a path
    # is not, and is refused in a field of one, as a quoted number is in a number's (walk15 A2)
    numbers: bool = False
    # a size in bytes: a number without its unit (memory: 256) is refused, naming the unit to add (walk16 A8)
    sized: bool = False


def _full(pattern: str) -> Callable[[str], bool]:
    """A whole-value match, compiled on first use (re's cache): a spec uses a few of the ~30 rules, and
    compiling all of them cost every ``nodeweave`` call that reads a spec ~10 ms of start-up."""
    return lambda value: re.fullmatch(pattern, value) is not None


_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"


def _dns_label(max_len: int) -> Callable[[str], bool]:
    match = _full(_LABEL)
    return lambda v: len(v) <= max_len and match(v)


DNS_LABEL = Rule(
    _dns_label(63),
    "a DNS-1123 label: at most 63 characters, lower-case letters, digits and '-', "
    "starting and ending with a letter or digit (regex [a-z0-9]([-a-z0-9]*[a-z0-9])?)",
)

JOB_NAMESPACE = Rule(
    lambda v: _dns_label(63)(v) and not cluster_namespace(v),
    "a namespace of the job's own: a DNS-1123 label (at most 63 characters, lower-case letters, digits and '-', "
    f"starting and ending with a letter or digit), {CLUSTER_NAMESPACES_TEXT}",
)

# A StatefulSet's pods carry the label controller-revision-hash=<name>-<10-char hash>,
# and a label value is at most 63 characters, so the name itself must stay within 52. The name also names the
# headless Service, which Kubernetes judges as a DNS-1035 label: it starts with a letter (walk7 A4: `7b-llm` was
# valid here and refused by the API server after the RBAC and the claim were applied).
JOB_NAME = Rule(
    lambda v: _dns_label(52)(v) and v[:1].isalpha(),
    "a DNS-1035 label of at most 52 characters (63 minus the 11 a StatefulSet adds for "
    "its controller-revision-hash label): lower-case letters, digits and '-', starting "
    "with a letter (it names the Kubernetes Service: write llm-7b, not 7b-llm) and ending with a letter or digit "
    "(regex [a-z]([-a-z0-9]*[a-z0-9])?)",
)

SERVICE_NAME = Rule(
    lambda v: _dns_label(63)(v) and v[:1].isalpha(),
    "a DNS-1035 label, as Kubernetes judges a Service's name: at most 63 characters, lower-case letters, digits "
    "and '-', starting with a letter and ending with a letter or digit (regex [a-z]([-a-z0-9]*[a-z0-9])?)",
)

DNS_SUBDOMAIN = Rule(
    lambda v: len(v) <= 253 and _full(_SUBDOMAIN)(v),
    "a DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels "
    "(lower-case letters, digits and '-')",
)

# OCI distribution spec: [host[:port]/]path-component(/path-component)*, lower case.
_PATH_COMPONENT = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_HOST = r"([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?"
REGISTRY = Rule(
    _full(rf"({_HOST}/)?{_PATH_COMPONENT}(/{_PATH_COMPONENT})*|{_HOST}"),
    "a registry and optional repository path such as ghcr.io/example, "
    "registry.local:5000/team or localhost/nodeweave (lower-case path components)",
)

IMAGE_TAG = Rule(
    _full(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"),
    "an image tag: 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'", numbers=True,
)

IMAGE_DIGEST = Rule(_full(r"sha256:[a-f0-9]{64}"), "an image digest: sha256: and 64 lowercase hex digits")

IMAGE_REFERENCE = Rule(
    _full(
        rf"({_HOST}/)?{_PATH_COMPONENT}(/{_PATH_COMPONENT})*"
        r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?"
    ),
    "an image reference such as docker.io/library/ubuntu:22.04, "
    "nvcr.io/nvidia/pytorch:24.05-py3 or localhost/nodeweave-base:bookworm",
)

ENV_NAME = Rule(
    _full(r"[A-Za-z_][A-Za-z0-9_]*"),
    "an environment variable name: ASCII letters, digits and '_', not starting with a digit",
)

# Kubernetes resource.Quantity, the binary/decimal suffixes people use for storage and memory, the unit written:
# Kubernetes reads a bare number as bytes, and nobody means a 500-byte claim or 256 bytes of memory (walk16 A8).
_BARE_NUMBER = r"[0-9]+(\.[0-9]+)?"
QUANTITY = Rule(
    _full(rf"{_BARE_NUMBER}(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)"),
    "a size with its unit, a Kubernetes quantity such as 100Gi, 500G or 2Ti", numbers=True, sized=True,
)


def unitless(value: str) -> bool:
    """A size written without its unit (``256``), which Kubernetes would read as bytes."""
    return re.fullmatch(_BARE_NUMBER, value) is not None


def unitless_problem(value: str) -> str:
    """The refusal's words for a size without its unit: what Kubernetes would make of it."""
    return f"{value} has no unit, and Kubernetes reads a bare number as bytes ({value} bytes)"

# Linux IFNAMSIZ is 16 including the NUL; '/', ':' and whitespace are not allowed.
INTERFACE = Rule(
    _full(r"[^/:\s]{1,15}"),
    "a network interface name (1 to 15 characters, no '/', ':' or whitespace) such as eth0 or ens1f0np0",
)

HCA = Rule(
    _full(r"[A-Za-z0-9_]+(:[0-9]+)?"),
    "an RDMA device name with an optional port, such as mlx5_3, bnxt_re0 or mlx5_0:1",
)

# Extended resource name: <DNS subdomain>/<name>, e.g. rdma/rdma_shared_device_a.
_QUALIFIED_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
RESOURCE_NAME = Rule(
    _full(rf"{_SUBDOMAIN}/{_QUALIFIED_NAME}"),
    "a Kubernetes extended resource name <domain>/<name>, such as "
    "rdma/rdma_shared_device_a or nvidia.com/mlnxnics",
)

# Multus: [<namespace>/]<network>[@<interface>]
ATTACHMENT = Rule(
    _full(rf"({_LABEL}/)?{_SUBDOMAIN}(@[^/:\s@]{{1,15}})?"),
    "a NetworkAttachmentDefinition name, optionally <namespace>/<name> and @<interface> "
    "(Multus syntax), such as sriov-net-a or infra/sriov-net-a@net1",
)

LABEL_KEY = Rule(
    lambda v: _full(rf"({_SUBDOMAIN}/)?{_QUALIFIED_NAME}")(v) and len(v.rsplit("/", 1)[0]) <= 253,
    "a Kubernetes label key: [prefix/]name, name at most 63 letters, digits, '-', '_' or '.' "
    "(e.g. nvidia.com/gpu.product)",
)

LABEL_VALUE = Rule(
    _full(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?"),
    "a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', "
    "starting and ending with a letter or digit", numbers=True,
)

VARIANT_NAME = Rule(
    _full(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?"),
    "an image variant name (lower-case letters, digits, '.' and '-'), such as cuda12, rocm70 or cpu",
)


def single_line(value: str) -> bool:
    """No control characters: for values that become paths or argv[0]."""
    return bool(value) and not any(ord(c) < 32 or ord(c) == 127 for c in value)


def absolute_path(value: str) -> bool:
    return single_line(value) and value.startswith("/") and ":" not in value

# Kubernetes CPU quantities: whole or decimal cores, or millicores (500m).
CPU = Rule(
    _full(r"([0-9]+(\.[0-9]{1,3})?|[0-9]+m)"),
    "a CPU quantity: cores such as 8 or 1.5, or millicores such as 500m", numbers=True,
)

# Hugepage sizes the kernel offers on x86-64 and arm64 (hugepages-<size> resources).
HUGEPAGE_SIZE = Rule(
    _full(r"(64Ki|2Mi|32Mi|512Mi|1Gi|16Gi)"),
    "a huge page size: 2Mi or 1Gi (x86-64), 64Ki, 2Mi, 32Mi, 512Mi, 1Gi or 16Gi (arm64)",
)

# Linux capabilities (capabilities(7)), without the CAP_ prefix.
CAPABILITIES = (
    "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE", "CHOWN",
    "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE",
    "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST",
    "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT",
    "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME",
    "SYS_TTY_CONFIG", "WAKE_ALARM",
)  # fmt: skip
CAPABILITY = Rule(
    lambda v: v in CAPABILITIES,
    "a Linux capability without CAP_, upper case, such as SYS_PTRACE, SYS_NICE or NET_ADMIN (capabilities(7))",
)

# Debian policy package names, optionally pinned with =version.
APT_PACKAGE = Rule(
    _full(r"[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?"),
    "a Debian/Ubuntu package name (lower case, digits, '+', '-', '.'), optionally =version, such as htop or git",
)

# PEP 508 name with extras, pinned exactly (== or ===) or a direct reference (name @ url).
PINNED_REQUIREMENT = Rule(
    _full(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._, -]+\])?"
          r"( *===? *[A-Za-z0-9.+!_-]+| +@ +[^\s;]+)( *;[^\n]*)?"),  # no `*`: 1.26.* is a range (walk8 A25)
    "a pinned pip requirement: name==version (e.g. transformers==4.57.1) or name @ URL",
)

# A host of a bare-metal job: a host name (RFC 1123, dots allowed) or an IPv4/IPv6 address.
# A Slurm node name, or a range of them as Slurm writes one (gpu[01-04], gpu[01-04,07]); sbatch's file form (a
# name with '/') is not taken: its count could not be checked here.
SLURM_NODES = Rule(
    _full(r"[A-Za-z0-9](?:[A-Za-z0-9._-]|\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\])*"),
    "a Slurm node name such as gpu01, or a range of them such as gpu[01-04] or gpu[01-04,07]",
)

# '_' as ssh, /etc/hosts and the entrypoint's MASTER_ADDR take it (remote.names._HOST_LABEL; walk18a A15)
_HOST_FORM = _full(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*"
                   r"|[0-9a-fA-F:]*:[0-9a-fA-F:.]+")
HOST = Rule(
    lambda v: _HOST_FORM(v) and leading_zero_problem(v) is None,  # 010.0.0.1 is 8.0.0.1 to ssh (walk6 W46)
    "a host name (letters, digits, '-', '_', dots) or an IP address without leading zeros (ssh reads 010.0.0.1 as "
    "octal 8.0.0.1), as each host knows itself, such as gpu01, "
    "gpu01.lab.example or 10.0.0.11; no user@ and no :port, which are ssh's (--host user@gpu01, --ssh-option "
    "Port=N, or a Host entry with Port N in ~/.ssh/config)",
)



LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def is_loopback_host(host: str) -> bool:
    """``localhost`` (and its .localdomain, ip6- and *.localhost names), 127.0.0.0/8, ::1 or 0.0.0.0: a name that
    means "this machine" on whichever machine reads it."""
    import ipaddress

    key = host_key(host.rpartition("@")[2])
    if key in LOOPBACK_NAMES or key.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(key.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def loopback_problem(hosts) -> "tuple[int, str] | None":
    """(index, the words) when a job of several hosts lists a loopback name: every other host would read it as
    itself (node 0's is MASTER_ADDR: each node would wait for a master on its own loopback, walk7 A43); None
    otherwise. One host alone may be this machine, and so may every host when all are loopback names (several
    nodes on one machine, each reaching node 0 at its own loopback, which is this machine): only a list that mixes
    a loopback name with other machines' names is wrong."""
    if len(hosts) < 2 or all(is_loopback_host(str(host)) for host in hosts):
        return None
    for index, host in enumerate(hosts):
        if is_loopback_host(str(host)):
            role = ("node 0, whose address every node takes as MASTER_ADDR: each would wait for a master on its own "
                    "loopback" if index == 0 else f"node {index}, which every other host would reach as itself")
            return index, (f"{host!r} is a loopback name or address and names {role}; accepted: this machine's "
                           "name or address on the training network (`hostname -f`, `ip -br addr`)")
    return None


def _slurm_time(value: str) -> bool:
    """Slurm's own time formats (sbatch --time), each part in its range: minutes and seconds after the first part
    below 60, hours after a day count below 24 (``25:99:00`` matched the shape and meant nothing)."""
    if value in ("UNLIMITED", "INFINITE"):
        return True
    days, dash, clock = value.rpartition("-")
    parts = clock.split(":")
    if (dash and not days.isdigit()) or not all(p.isdigit() and len(p) <= (2 if i or dash else 9)
                                                for i, p in enumerate(parts)):
        return False
    if dash:
        return len(parts) <= 3 and int(parts[0]) < 24 and all(int(p) < 60 for p in parts[1:])
    return len(parts) <= 3 and all(int(p) < 60 for p in parts[1:])


SLURM_TIME = Rule(
    _slurm_time,
    "a Slurm time limit: MINUTES, MM:SS, HH:MM:SS, DAYS-HH, DAYS-HH:MM or DAYS-HH:MM:SS, minutes and seconds "
    "below 60 and hours after DAYS- below 24 (e.g. 24:00:00 or 2-00:00:00)", numbers=True,
)

SLURM_NAME = Rule(
    _full(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"),
    "a Slurm partition, account or QOS name: letters, digits, '_', '.', '-'",
)

SLURM_CONSTRAINT = Rule(
    _full(r"[A-Za-z0-9_.&|,*\[\]()-]{1,256}"),
    "a Slurm --constraint expression of features, such as h100 or a100&ib (letters, digits, & | , [ ] ( ) *)",
)

# A path inside the build context: relative, no '..', single line, no ':', starting with a letter, digit or '_'
# (so never '.', './x' or '/x'). Each field that takes one says what it names (walk13 A18: one generic text said
# "a file or directory ... e.g. third_party/torchtitan" for the requirements file, and "relative, letters, digits,
# '.'" to a project source '.' it refused, without the first character's rule or why the folder itself is refused).
_IN_CONTEXT = lambda v: _full(r"[A-Za-z0-9_][A-Za-z0-9_.+/-]*")(v) and ".." not in v.split("/")  # noqa: E731
_SPELLED = ("relative to it, of letters, digits, '_', '.', '+', '-' and '/', starting with a letter, digit or '_' "
            "and without '..'")

REQUIREMENTS_FILE = Rule(
    _IN_CONTEXT,
    f"a pinned requirements file inside the build context (the spec's directory), named {_SPELLED} "
    "(e.g. requirements.txt or deps/train-requirements.txt; not ./requirements.txt, nor a folder)",
)

PROJECT_SOURCE = Rule(
    _IN_CONTEXT,
    f"a subfolder of the build context (the spec's directory), named {_SPELLED} (e.g. src or "
    "third_party/torchtitan; not ./src); not the spec's folder itself ('.'), which would copy the spec, "
    ".nodeweave/, runs/ and the wheelhouse into the image: move the project into a subfolder, or leave "
    "image.project out, as the spec's folder is already the workspace every node sees (mounted, or sent by "
    "`nodeweave sync`)",
)

CONTEXT_RULES = {"image.requirements": REQUIREMENTS_FILE, "image.project.source": PROJECT_SOURCE}

# Where project code lands in the image: a plain absolute path (WORKDIR takes it verbatim).
IMAGE_PATH = Rule(
    _full(r"/[A-Za-z0-9_.+/-]*"),
    "an absolute container path of letters, digits, '_', '.', '+', '-' and '/', such as /opt/torchtitan",
)

GIT_URL = Rule(
    _full(r"(https?|ssh|git)://[^\s'\"\\]+|[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:[^\s'\"\\]+"),
    "a git repository URL: https://..., ssh://..., git://... or user@host:path",
)

GIT_REF = Rule(
    _full(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,199}"),
    "a git branch, tag or commit such as main, v0.2.0 or a commit sha", numbers=True,
)

SHELL_LINE = Rule(
    lambda v: single_line(v) and v.strip() != "" and not v.rstrip().endswith("\\"),
    "a non-empty, single-line shell command not ending in '\\' (a Dockerfile would join the next line)",
)


EXCHANGE_CHECK = Rule(
    lambda value: value in EXCHANGE_ALLOWABLE,
    "a check-in refusal that may start as a warning: " + ", ".join(EXCHANGE_ALLOWABLE),
)


# Build-argument names whose values must not be written into a committed Dockerfile, the image history or a build's
# command line (``ps`` shows it): the renderer leaves them undeclared, the build plan leaves them off.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|API_?KEY|PRIVATE_KEY|ACCESS_KEY", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    return SECRET_NAME.search(name) is not None
