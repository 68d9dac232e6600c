"""The contract between rendered files and the entrypoint, declared once.

Each :class:`Setting` row names one setting of ``nodeweave-entrypoint``: its key, its flag, the
``NODEWEAVE_*`` variable the renderers set, the spec field it comes from (``None`` when the spec does not
give it), which renderers set it, how its text is read and its help line. ``settings.py`` builds the command
line from these rows and ``nodeweave.resolve`` the renderers' environment, so a new setting is one row here
(plus its spec field), and a test round-trips every row: spec value -> rendered variable -> the plan.
Stdlib only, like the whole entrypoint.
"""

import os

from ..errors import UsageError
from ..durations import DURATION_UNITS, whole_seconds
from ..hostport import leading_zero_problem, split_host_port
from ..switch import parse_switch, switch_problem

LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "command")
EVERYWHERE = ("compose", "kubernetes", "slurm")
# Where the per-host compose file mounts the hosts list it is rendered with (spec ``hosts``).
HOSTFILE_PATH = "/etc/nodeweave/hosts"
MODES = ("run", "hold")  # hold: plan, print it, keep the container up; `nodeweave run` starts jobs in it
PROFILERS = ("nsys", "rocprofv3")
# ``--node ACTION`` (nodeinfo.py), each action with what may follow it: ``--help`` shows these, and a refusal
# names the same list.
NODE_USAGES = {"status": "status [-- COMMAND...]", "stop": "stop [--run ID] [--grace S]", "report": "report RUN_ID",
               "ready": "ready", "live": "live [--port P]"}
STALL_WARN_S = 60  # the stall defaults: docs/stalls.md
RECOVERY_RESTARTS, RECOVERY_NO_PROGRESS = 5, 3  # recovery's brakes by default: docs/recovery.md
STALL_TIMEOUT_S = 600
FAULT_CHECKS = 10  # with recovery.straggler_is_fault on: named 10 checks in a row (~33 s at node 0's 3.3 s)
METRICS_PORT = 9464  # node 0's /metrics by default: docs/observability.md
# The most nodes and processes per node nodeweave plans for, in the spec and on the entrypoint alike (beyond
# these a typo is likelier than a job: 100000 nodes rendered an 85 MB compose file for minutes).
NODES_MAX, NPROC_MAX = 2048, 1024
# A count the scheduler made (SLURM_NNODES, a hostfile's lines, an MPI size) is no typo: only a number past any
# cluster's size is refused (the check-in and --status were measured to 8,192 nodes: docs/benchmarks.md).
SCHEDULED_NODES_MAX = 65536


# Readers: (text, what, source) -> value, where ``what`` names the setting ("max restarts") and
# ``source`` where the text came from ("flag --max-restarts", "NODEWEAVE_MAX_RESTARTS").


def read_text(text, what, source):
    return str(text).strip()


def read_number_text(text, what, source):
    """A topology number's text as given: its claim's reader (``topology``: ``read_int``) refuses white space at
    an end, for a flag as for a variable (walk8 B2)."""
    return str(text)


def read_path(text, what, source):
    """A path handed on as given, made absolute for the ranks (``loop.absolute_for_ranks``): white space at either
    end is refused, never stripped here while kept there, and so is a path no file can be made at (a newline
    inside, too long: ``systemfolders.shape_problem``, the spec's rule too)."""
    from ..systemfolders import shape_problem

    problem = shape_problem(str(text))
    if problem:
        raise UsageError(f"{what} (from {source}): {problem}")
    return str(text)


def read_file_path(text, what, source):
    """A file or folder this node reads (a hostfile, a captured tree): ``~`` or ``$NAME`` left unexpanded is
    named as such, never met as "no such file" (walk8 B45)."""
    from ..systemfolders import unexpanded

    problem = unexpanded(str(text).strip())
    if problem:
        raise UsageError(f"{what} (from {source}): {problem}")
    return str(text).strip()


DIGITS = frozenset("0123456789")


def plain_int(text):
    """A whole number as the spec takes one (spec/nodes.py): plain ASCII decimal digits, so ``05``, ``+5``,
    ``1_000``, ``-0`` and other scripts' digits, which Python's int() reads, are refused here as they are in the
    spec (walk9 B27: ``-0`` was read as 0). A minus before any other number is the number's own (``-2``: refused by
    its bound, naming it). (No ``re``: this is on the entrypoint's start-up path.)"""
    body = text[1:] if text.startswith("-") else text
    return bool(body) and set(body) <= DIGITS and (text == "0" or not body.startswith("0"))  # no isascii: 3.6


def digits(text):
    """ASCII decimal digits, at least one: the one test of "written as a number" for every reader of a number typed
    to nodeweave (the CLI's options, a node selector, a size, a spec, this entrypoint). str.isdigit(), re's \\d and
    int() take other scripts' digits too (walk13 A22: ``--node ١`` picked node 1, ``--sizes ١K`` reached the nodes,
    which refuse it)."""
    return bool(text) and set(text) <= DIGITS


def ascii_spelling(text):
    """``text`` with each decimal digit of another script written as its ASCII one (``'٣٠'`` -> ``'30'``), or None
    when it has none: what a refusal of such a number says to type instead."""
    import unicodedata

    text = str(text)
    spelt = "".join(str(unicodedata.decimal(c)) if c not in DIGITS and unicodedata.decimal(c, None) is not None
                    else c for c in text)
    return spelt if spelt != text else None


def edge_space_refusal(text, what, source, accepted):
    """The one refusal of a number or count with white space at an end (walk8 B2: ' 2' was stripped and taken,
    while `05` and `2.0` are refused and a path's edge space is never stripped): a YAML "2 " or a `$(...)` with
    its newline is a copy the user did not mean; ``accepted`` is what would be taken instead."""
    return UsageError(f"{what} must be plain decimal digits, got {text!r} (white space at an end: copied?) "
                      f"(from {source}); accepted: {accepted}")


def read_int(minimum, unit=None, maximum=None):
    """A reader of whole numbers >= ``minimum``, naming the value and its source when it is not one; ``unit``
    ("seconds"), when the number counts one, is said in the refusal, with what a value written with a unit
    (``5m``) is in it (walk7 B3: `5m` was answered "e.g. 5", five seconds). White space at an end is refused,
    never stripped, and a number below ``minimum`` is refused naming that bound and what is accepted (walk8 B1:
    "must be ≥ 0" answered -2 for a count that takes 1 or more). ``maximum``, where there is one (a port), is
    said in every refusal's accepted range (walk9 B27: a port's said "1 or more")."""
    bounds = f"{minimum}..{maximum}" if maximum is not None else f"{minimum} or more"
    within = f"in {bounds}" if maximum is not None else f"of {bounds}"

    def read(text, what, source):
        text = str(text)
        if text != text.strip() and plain_int(text.strip()) and int(text.strip()) >= minimum:
            raise edge_space_refusal(text, what, source, f"{text.strip()!r}, with nothing around it")
        spelt = whole_seconds(text) if unit == "seconds" else None
        if spelt is not None:  # NODEWEAVE_STALL_WARN=10m, as the spec's `stall_warn: 10m` (fix20b)
            text = str(spelt)
        if not plain_int(text.strip()):
            if unit == "seconds":
                raise UsageError(f"{what} must be a whole number of seconds, got {text!r} (from {source}); "
                                 f"accepted: {bounds} in plain decimal digits, or {DURATION_UNITS} (e.g. 300 or 5m; "
                                 "not 05, +5, -0, 1_000 or 1.5s)")
            counted = f" of {unit}" if unit else ""
            raise UsageError(f"{what} must be a whole number{counted}, got {text!r} (from {source}); accepted: {bounds} "
                             f"in plain decimal digits{', in ' + unit if unit else ''} (e.g. 5; not 05, +5, -0 "
                             "or 1_000)")
        value = int(text.strip())
        if value < minimum:
            raise UsageError(f"{what} must be a whole number {within}, got {text!r} (from {source}); "
                             f"accepted: {bounds} (e.g. {max(minimum, 2)})")
        return value
    return read


def read_choice(choices):
    def read(text, what, source):
        value = str(text).strip()
        if value not in choices:
            raise UsageError(f"unknown {what} {value!r} (from {source}); accepted: {', '.join(choices)}")
        return value
    return read


def read_list(text, what, source):
    """A comma list. An empty item (``eth0,,lo``, ``eth0,``) is refused, as nodeweave's ``--node 0,,1`` is: it
    was dropped silently (walk5 W40), and an unset ``$IF`` in ``eth0,$IF`` is no item the user meant to leave out."""
    items = [item.strip() for item in str(text).split(",")]
    kept = [item for item in items if item]
    if "" in items:
        example = f"e.g. {','.join(kept)!r}" if kept else "or leave the variable unset (none)"
        raise UsageError(f"{what} {str(text)!r} (from {source}) holds an empty item; accepted: a comma list "
                         f"without one, {example}")
    twice = sorted({item for item in items if items.count(item) > 1})
    if twice:  # eth0,eth0 was passed on as NCCL_SOCKET_IFNAME==eth0,=eth0 (walk7 B25)
        raise UsageError(f"{what} {str(text)!r} (from {source}) names {', '.join(twice)} twice; accepted: a comma "
                         f"list naming each once, e.g. {','.join(dict.fromkeys(items))!r}")
    globbed = next((item for item in items if any(char in item for char in "*?[")), None)
    if globbed is not None:  # walk7 B47: '*' meant "every one" and matched none
        raise UsageError(f"{what} {str(text)!r} (from {source}): {globbed!r} holds a glob (*, ? or [), which "
                         "nothing expands here: it would name a device or interface of that very name; accepted: "
                         "the names themselves, comma-separated")
    return items



SYSROOT_ACCEPTED = ("accepted: a tree `nodeweave doctor --capture DIR` wrote (its proc/ and sys/), or / (the "
                    "default)")


def read_sysroot(text, what, source):
    """A root every sysfs/procfs read is prefixed with: ``/``, or a captured tree, which holds proc/ or sys/. A
    folder holding neither (a project folder, a typo) or a kernel file system itself (/proc, /sys) would be read
    as a machine with no GPU, no interface and no limits, and judged clean (walk6 W59)."""
    path = str(text).strip() or "/"
    read_file_path(path, what, source)
    if not os.path.isdir(path):
        from ..bounded import not_a_folder

        raise UsageError(f"{what} {path!r} (from {source}) {not_a_folder(path)}; {SYSROOT_ACCEPTED}")
    real = os.path.realpath(path)
    if real == "/":
        return path
    kernel = next((fs for fs in ("/proc", "/sys") if real == fs or real.startswith(fs + "/")), None)
    if kernel is not None or not any(os.path.isdir(os.path.join(path, part)) for part in ("proc", "sys")):
        held = f"is inside {kernel}, a kernel file system" if kernel else "holds no proc/ or sys/"
        raise UsageError(f"{what} {path!r} (from {source}) {held}: not a captured tree, and a report on it would "
                         f"be about nothing; {SYSROOT_ACCEPTED}")
    return path


# The check-in's refusals a job may turn into warnings (nodeweave.entrypoint.checkin.verdict); the
# structural ones (a duplicate or missing rank, another node count or launcher) are not among them.
EXCHANGE_ALLOWABLE = ("vendor", "nccl", "rccl", "torch", "image", "workspace", "command", "address",
                      "connect-back")


def read_switch(text, what, source):
    value = parse_switch(text)
    if value is None:
        raise UsageError(switch_problem(what, text, source))
    return value


def stall_problem(warn, timeout, timeout_given):
    """Why a stall warning and stop cannot both hold, or None: one rule for the spec and the entrypoint.

    The report comes at ``warn`` and the stop at ``timeout`` (0: never); a report after the stop, or a stop
    asked for (``timeout_given``) with the watch switched off (``warn`` 0: no hook on the ranks), never happens.
    """
    if warn and timeout and warn > timeout:
        return (f"stall_warn {warn} s is above stall_timeout {timeout} s: the report would come after the stop",
                f"a stall_warn below stall_timeout (defaults {STALL_WARN_S} and {STALL_TIMEOUT_S}), or stall_timeout 0 "
                "(never stop)")
    if not warn and timeout and timeout_given:
        return (f"stall_timeout {timeout} s with stall_warn 0: stall_warn 0 switches the stall watch off, so no "
                "stall is ever seen to time out", f"a stall_warn above 0 (default {STALL_WARN_S}), or leave "
                "stall_timeout out")
    return None


PORT_MAX = 65535
MASTER_PORT = 29500  # torchrun's rendezvous port by default; the exchange's is the master port + 1
# Each port's own default, the example its refusal gives (replay10 B16: every port said "e.g. 9464", the metrics
# port's, which the master and exchange ports then refuse as taken; a malformed one said "e.g. 5"), by its name.
PORT_EXAMPLES = (("master", MASTER_PORT, "the default"), ("exchange", MASTER_PORT + 1, "the default: the master port + 1"),
                 ("metrics", METRICS_PORT, "the default"), ("live", METRICS_PORT, "the metrics port's default"))


def port_accepted(what):
    """What a refusal of the port ``what`` ("master port", "exchange port", ...) accepts, its example its own
    default (not another port's, which the check of ports that meet would then refuse)."""
    port, said = next(((port, said) for word, port, said in PORT_EXAMPLES if word in str(what)),
                      (METRICS_PORT, "the metrics port's default"))
    return (f"a port number from 1 to {PORT_MAX} in plain decimal digits (e.g. {port}, {said}; not 0{port}, +{port}, "
            f"-0 or {str(port)[:-3]}_{str(port)[-3:]})")


def read_port(text, what, source):
    """Every port the entrypoint reads (master, exchange, metrics, ``--node live --port``): one line for both
    ends of the range and for a value that is no number, naming the range and the port's own default as the example
    (walk9 B16: 0 was "a whole number of 1 or more (e.g. 2)" while 70000 was "must be 1..65535"; B27: its bounds in
    every refusal; replay10 B16: each port's own example, never "e.g. 5")."""
    if str(text) != str(text).strip() and plain_int(str(text).strip()):
        return read_int(1, maximum=PORT_MAX)(text, what, source)  # white space at an end: the numbers' one refusal
    if not plain_int(str(text)):
        raise UsageError(f"{what} must be a whole number in 1..{PORT_MAX}, got {text!r} (from {source}); accepted: "
                         f"{port_accepted(what)}")
    value = int(str(text))
    if not 1 <= value <= PORT_MAX:
        raise UsageError(f"{what} must be 1..{PORT_MAX}, got {value} (from {source}); accepted: "
                         f"{port_accepted(what)}")
    return value


def read_allow(text, what, source):
    """A comma list of refusal kinds: a closed set, so a word outside it (a glob, ``all``) is named against the
    set first, never with the device lists' reasons (walk8 B23)."""
    unknown = [name for name in (item.strip() for item in str(text).split(",")) if name
               and name not in EXCHANGE_ALLOWABLE]
    if unknown:
        wide = [name for name in unknown if name.lower() in ("all", "any", "every", "everything", "*")
                or any(char in name for char in "*?[")]
        why = (f"{', '.join(map(repr, wide))} is no refusal kind: nothing expands a glob here and there is no "
               "'all' (a duplicate or missing rank, another node count or launcher are always refused)"
               if wide else "(a duplicate or missing rank, another node count or launcher are always refused)")
        raise UsageError(f"{what} names {', '.join(map(repr, unknown))} (from {source}); {why}; accepted: "
                         f"{', '.join(EXCHANGE_ALLOWABLE)}, comma-separated" if wide else
                         f"{what} names {', '.join(map(repr, unknown))} (from {source}); accepted: "
                         f"{', '.join(EXCHANGE_ALLOWABLE)} {why}")
    return read_list(text, what, source)


def switch_text(value):
    """Only a switched-off exchange is written out: on is the default."""
    return None if value else "off"


def list_text(value):
    """A spec list as the variable's text; None (variable left out) when empty."""
    return ",".join(value) if value else None


def optional_text(value):
    """An optional spec value as the variable's text; None (variable left out) when unset."""
    return None if value is None else str(value)


def text_unless(default):
    """A spec value as the variable's text; None (variable left out) at the entrypoint's own ``default``."""
    return lambda value: None if value == default else str(value)


def on_text(value):
    """Only a switched-on option is written out: off is the default."""
    return "on" if value else None


HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
HOST_ACCEPTED = "a host name (letters, digits, '-', '.'), an IPv4 address or an IPv6 address, without a port"


def _host_alone(text):
    """The advice for a master written with a scheme or a port: the host and the port each where it goes, in one
    line, so following it is never refused next (walk11b B10: `tcp://10.0.0.1:29500` was told to give
    `10.0.0.1:29500`, refused next for its port)."""
    try:
        host, port = split_host_port(text)
    except ValueError:
        host, port = text, None
    host = host or "node 0"
    if port is None:
        return f"give the host alone ({host})"
    return f"give the host alone ({host}) and the port as MASTER_PORT={port} (--master-port {port})"


def _host_problem(text):
    """Why ``text`` is not a host name or an address, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "holds bytes that are not UTF-8"
    if any(ord(c) > 127 for c in text):  # str.isascii is 3.7+; the entrypoint runs on 3.6
        return "holds non-ASCII characters"
    if any(ch.isspace() for ch in text):
        return "holds spaces"
    scheme, slashes, rest = text.partition("://")
    if slashes:  # http://10.0.0.1 is no port to move (walk8 B30)
        return f"holds a URL scheme ({scheme}://): {_host_alone(rest.split('/', 1)[0].rsplit('@', 1)[-1])}"
    if _unspecified(text):
        return ("is the unspecified (\"any\") address, which a listener binds but no node can dial: give node 0's "
                "name or address")
    if text.startswith("[") and text.endswith("]") and ":" in text:  # a URL's brackets, no port (walk5 W47)
        inner = text[1:-1]
        return (f"is an IPv6 address in brackets: write it without them ({inner}); the port goes in MASTER_PORT "
                "(--master-port)")
    if text.startswith("[") or text.count(":") == 1:
        return f"holds a port: {_host_alone(text)}"
    if ":" in text:
        return None if set(text) <= frozenset("0123456789abcdefABCDEF:.") and text.count("::") <= 1 else \
            "is not an IPv6 address"
    zero = leading_zero_problem(text)
    if zero:
        return zero
    labels = text[:-1].split(".") if text.endswith(".") else text.split(".")
    if labels[-1].isdigit() and set(text) <= frozenset("0123456789."):  # no name ends in a number: an IPv4 address
        if len(labels) != 4 or any(not label or int(label) > 255 for label in labels):
            big = next((label for label in labels if label and int(label) > 255), None)
            return "is not an IPv4 address (" + (f"{big} > 255" if big else f"{len(labels)} parts, not 4") + ")"
    if not set(text) <= HOST_CHARS or len(text) > 253:
        return "holds characters a host name cannot have" if len(text) <= 253 else "is longer than 253 characters"
    if any(not label or len(label) > 63 or label[0] == "-" or label[-1] == "-" for label in labels):
        return "has an empty, over-long or hyphen-edged label"
    return None


def _unspecified(text):
    """Whether ``text`` is 0.0.0.0 or :: (IPv6's all-zero address, in any spelling)."""
    if text == "0.0.0.0":
        return True
    if ":" in text and set(text) <= frozenset("0:") and text.count("::") <= 1:
        return True
    return False


def read_host(text, what, source):
    """A host name or an address, refused (exit 2) before anyone waits for a host that cannot exist."""
    value = str(text).strip()
    problem = _host_problem(value)
    if problem:
        raise UsageError(f"{what} {value!r} (from {source}) {problem}; accepted: {HOST_ACCEPTED}")
    return value


LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def _dns_1123(value, longest):
    """Whether ``value`` is DNS-1123 (the spec's rule, spec/rules.py): dot-separated labels of lower-case letters,
    digits and '-', none starting or ending with '-', at most ``longest`` characters in all."""
    return 0 < len(value) <= longest and all(
        label and set(label) <= LABEL_CHARS and label[0] != "-" and label[-1] != "-" for label in value.split("."))


def read_domain(text, what, source):
    """A DNS domain such as ``cluster.local`` (no leading dot, no port): a DNS-1123 subdomain, as in the spec."""
    value = str(text).strip().strip(".")
    if not _dns_1123(value, 253):
        raise UsageError(f"{what} {value!r} (from {source}) is not a DNS-1123 subdomain; accepted: a DNS domain of "
                         "dot-separated labels of lower-case letters, digits and '-', such as cluster.local")
    return value


def read_label(text, what, source):
    """A Service's name as Kubernetes judges it, a DNS-1035 label, as the spec's ``kubernetes.service`` (walk7 A4:
    one starting with a digit was refused by the API server)."""
    value = str(text).strip()
    if "." in value or not _dns_1123(value, 63) or not value[:1].isalpha():
        raise UsageError(f"{what} {value!r} (from {source}) is not a DNS-1035 label; accepted: at most 63 lower-case "
                         "letters, digits and '-', starting with a letter and ending with a letter or digit, such "
                         "as rdzv")
    return value


def read_words_like(example):
    """A reader of a shell-quoted word list (``--mixed_precision bf16 --note 'a b'``), as POSIX shells split it,
    whose refusal shows ``example``, one of the setting's own kind: setup's words are shell lines, not a
    launcher's options (walk5 W38). ``words`` marks it: its empty value is the explicit "none"."""
    def read(text, what, source):
        import shlex  # only when the variable is set: the start-up path stays lean

        try:
            return shlex.split(str(text))
        except ValueError as err:
            raise UsageError(f"{what} {text!r} (from {source}) cannot be split into words ({err}); accepted: "
                             f"shell-quoted words such as {example}") from None
    read.words = True
    return read


read_words = read_words_like("--mixed_precision bf16")

# the first word of a setup line that does nothing alone: a line that is only it is a line split into words
_NOT_ALONE = frozenset({"source", ".", "conda", "module", "ml", "spack", "export", "eval", "exec"})


def setup_line_alone(line):
    """Whether a setup line is only a word that does nothing alone (``source``, ``module``, ``export``...): the
    node refuses it (``read_setup_lines``), and so does the spec's launcher.setup, with the same list (replay11
    R3: validate took ``setup: ["source"]``, every node refused it)."""
    return line.strip() in _NOT_ALONE


def read_setup_lines(text, what, source):
    """Setup's shell lines: each shell-quoted word is one line bash runs. A value written as one line
    (``source /opt/venv/bin/activate``, no quotes, several words) would split into lines of a word each, bash
    running ``source`` alone: refused, showing the quoted form (walk8 B18)."""
    import shlex

    lines = _split_setup(text, what, source)
    unquoted = not any(mark in str(text) for mark in "'\"\\")
    alone = [line for line in lines if setup_line_alone(line)]
    if (unquoted and len(lines) > 1) or alone:
        shown = ", ".join(repr(line) for line in lines[:4]) + (", ..." if len(lines) > 4 else "")
        # the user's words as one line only where that line works: never the very word refused (walk10 B16)
        whole = str(text).strip()
        meant = shlex.quote(whole) if unquoted and whole not in _NOT_ALONE else "'source /opt/venv/bin/activate'"
        other = "'module load cuda' 'source /opt/conda/bin/activate train'"
        raise UsageError(f"{what} {text!r} (from {source}) splits into {len(lines)} line(s) ({shown})"
                         + (f", and {alone[0]!r} alone does nothing" if alone else "")
                         + f": each shell-quoted word is one line; accepted: one quoted word per line, "
                         f"e.g. {meant} or {other}")
    return lines


_split_setup = read_words_like("'source /opt/conda/bin/activate train' 'module load cuda' (each line one quoted word)")
read_setup_lines.words = True


def words_text(words):
    """A spec list as a shell-quoted string; None (variable left out) when empty."""
    import shlex

    return shlex.join(words) if words else None


def setup_text(lines):
    """Setup's lines, each single-quoted even when it is one word: an unquoted value of several words is a line
    split into words (``read_setup_lines``); None when there are none."""
    return " ".join("'" + line.replace("'", "'\\''") + "'" for line in lines) if lines else None


def hostfile_text(hosts):
    """Where compose mounts the rendered hosts list; None when the spec lists no hosts."""
    return HOSTFILE_PATH if hosts else None


RUN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def read_run_id(text, what, source):
    """A run's name: it becomes a directory under $TMPDIR/nodeweave/runs on the node."""
    value = str(text).strip()
    if not value or len(value) > 128 or not set(value) <= RUN_ID_CHARS or not value[0].isalnum():
        raise UsageError(f"{what} {value!r} (from {source}) is not accepted: letters, digits, '.', '_' and '-', "
                         "starting with a letter or digit, at most 128 characters (nodeweave run makes "
                         "<UTC time>-<job>)")
    return value


def read_step_pattern(text, what, source):
    """A regular expression with a group for the step (``(?P<step>\\d+)`` or the first group)."""
    import re

    from ..quoting import as_typed

    value = str(text)
    try:
        pattern = re.compile(value)
    except re.error as err:
        raise UsageError(f"{what} {as_typed(value)} (from {source}) is not a regular expression ({err}); accepted: e.g. "
                         "'global_step=(\\d+)'") from None
    if "step" not in pattern.groupindex and pattern.groups < 1:
        raise UsageError(f"{what} {as_typed(value)} (from {source}) has no group for the step number; accepted: a regular "
                         "expression with (?P<step>\\d+) or one group, e.g. 'global_step=(\\d+)'")
    return value


# spec fields with no variable of their own: written into another's value (walk11b B8)
FOLDED_FIELDS = {
    "recovery.min_nodes": "NODEWEAVE_NNODES as MIN:MAX (recovery.min_nodes): under recovery NODEWEAVE_NNODES=1:2 "
                          "(or --nnodes 1:2) goes on with as few as 1 of the 2 training nodes",
}


class Setting:
    """One row of the contract."""

    __slots__ = ("key", "flag", "variable", "help", "spec", "where", "read", "text", "topology", "aliases",
                 "overridable")

    def __init__(self, key, flag, variable, help, spec=None, where=EVERYWHERE, read=read_text, text=str,
                 topology=False, aliases=(), overridable=False):
        self.key, self.flag, self.variable, self.help = key, flag, variable, help
        self.spec = spec          # dotted path into nodeweave.yaml's typed Spec, e.g. "launcher.type"
        self.where = where if spec else ()  # renderers that set the variable from the spec
        self.read = read          # (text, source) -> value; raises UsageError naming the source
        self.text = text          # spec value -> variable text, or None to leave the variable out
        self.topology = topology  # weighed against the other rank sources (topology.py), kept raw
        self.aliases = aliases    # older flag spellings, still accepted
        self.overridable = overridable  # compose writes ${VARIABLE:-value}: the environment of `compose up` may change it

    @property
    def what(self):
        """The setting's name in messages: ``max restarts``."""
        return self.key.replace("_", " ")

    def __repr__(self):
        return f"Setting({self.key!r}, {self.flag!r}, {self.variable!r})"


SETTINGS = (
    Setting("nnodes", "--nnodes", "NODEWEAVE_NNODES", "node count N, or MIN:MAX for elastic torchrun",
            spec="nodes", where=("compose", "kubernetes"), topology=True, read=read_number_text),  # Slurm: SLURM_NNODES says
    Setting("node_rank", "--node-rank", "NODEWEAVE_NODE_RANK", "this node's rank, 0..N-1", topology=True,
            read=read_number_text),
    Setting("master_addr", "--master-addr", "NODEWEAVE_MASTER_ADDR", "address of node 0 (the rendezvous host)",
            topology=True),
    Setting("service", "--service", "NODEWEAVE_SERVICE",
            "headless Service: master = <name>-0.<service>.<namespace>.svc.<cluster domain>",
            spec="kubernetes.service", where=("kubernetes",), read=read_label),
    Setting("cluster_domain", "--cluster-domain", "NODEWEAVE_CLUSTER_DOMAIN",
            "Kubernetes cluster domain of the master's name (default: the svc.<domain> entry of "
            "/etc/resolv.conf's search list, else cluster.local)",
            spec="kubernetes.cluster_domain", where=("kubernetes",), read=read_domain, text=optional_text),
    Setting("launcher", "--launcher", "NODEWEAVE_LAUNCHER",
            "torchrun | deepspeed | accelerate | command (default torchrun)",
            spec="launcher.type", read=read_choice(LAUNCHERS)),
    Setting("launcher_options", "--launcher-options", "NODEWEAVE_LAUNCHER_OPTIONS",
            "the launcher's own options, shell-quoted, placed before the script (e.g. '--mixed_precision bf16')",
            spec="launcher.options", read=read_words, text=words_text),
    Setting("setup", "--setup", "NODEWEAVE_SETUP",
            "shell lines, shell-quoted, run by bash before the launcher, which that shell then execs "
            "(conda activate, module load, a site script)", spec="launcher.setup",
            read=read_setup_lines, text=setup_text),
    Setting("nproc_per_node", "--nproc-per-node", "NODEWEAVE_NPROC_PER_NODE",
            "processes per node, or auto (one per usable GPU; 1 on CPU)", spec="gpus_per_node", topology=True,
            read=read_number_text),
    Setting("master_port", "--master-port", "NODEWEAVE_MASTER_PORT", "rendezvous port (default 29500)",
            spec="launcher.master_port", topology=True, read=read_number_text),
    Setting("max_restarts", "--max-restarts", "NODEWEAVE_MAX_RESTARTS",
            "torchrun --max-restarts / accelerate --max_restarts", spec="launcher.max_restarts", read=read_int(0)),
    Setting("wait_timeout", "--wait-timeout", "NODEWEAVE_WAIT_TIMEOUT",
            "seconds (or 10m, 1h30m) a worker waits for node 0: its check-in exchange, or the master's port with "
            "--exchange off (default 600, at most 86400; 0 = do not wait)",
            spec="launcher.wait_timeout", read=read_int(0, "seconds")),
    Setting("exchange", "--exchange", "NODEWEAVE_EXCHANGE",
            "on | off: nodes check in with node 0 before the launch and watch each other after (default on)",
            spec="launcher.exchange", read=read_switch, text=switch_text),
    Setting("exchange_port", "--exchange-port", "NODEWEAVE_EXCHANGE_PORT",
            "port of node 0's check-in exchange (default: the master port + 1)",
            spec="launcher.exchange_port", read=read_port, text=optional_text),
    Setting("exchange_allow", "--exchange-allow", "NODEWEAVE_EXCHANGE_ALLOW",
            "check-in refusals to start with as warnings, comma list: " + ", ".join(EXCHANGE_ALLOWABLE),
            spec="launcher.exchange_allow", read=read_allow, text=list_text),
    Setting("exchange_bind", "--exchange-bind", "NODEWEAVE_EXCHANGE_BIND",
            "any (default) | route: node 0's exchange, its /metrics (127.0.0.1 too) and each node's probe port "
            "listen only on the address this "
            "node uses toward the master (host networking: not on every interface of the host); refused with "
            "the exchange off",
            read=read_choice(("any", "route"))),
    Setting("interfaces", "--interfaces", "NODEWEAVE_INTERFACES",
            "socket interface(s) for NCCL/Gloo, comma list, overriding the route to the master",
            spec="network.interfaces", read=read_list, text=list_text, aliases=("--ifname",)),
    Setting("exclude_hcas", "--exclude-hcas", "NODEWEAVE_EXCLUDE_HCAS",
            "RDMA devices or dev:port to keep NCCL off (storage fabric), comma list",
            spec="network.exclude_hcas", read=read_list, text=list_text, aliases=("--exclude-hca",)),
    Setting("hostfile", "--hostfile", "NODEWEAVE_HOSTFILE",
            "file of '<host> [slots=N]' lines, node 0 first; this host's line gives the rank",
            spec="hosts", where=("compose",), read=read_file_path, text=hostfile_text),
    # compose's files carry the spec's name: on a host network no host name prefix gives it, and every job
    # rendered so was known as 'nodeweave' to its token, rendezvous and metrics (walk6 W8)
    Setting("job_id", "--rdzv-id", "NODEWEAVE_JOB_ID",
            "the job's id: the check-in token's base, elastic torchrun's rendezvous id, the metrics' job_name "
            "(compose files: the spec's name; default: the StatefulSet/host name prefix, else SLURM_JOB_ID, else "
            "'nodeweave')", spec="name", where=("compose",)),
    Setting("image_ref", "--image-ref", "NODEWEAVE_IMAGE_REF",
            "the image reference of the rendered compose service (shown in the check-in's fingerprint)"),
    Setting("sysroot", "--sysroot", "NODEWEAVE_SYSROOT",
            "root prefix for every sysfs/procfs read (tests, captured trees)", read=read_sysroot),
    Setting("mode", "--mode", "NODEWEAVE_MODE",
            "run (default): wait for the master, start the launcher | hold: plan, print the plan and keep the "
            "container up with nothing launched (`nodeweave run` starts jobs in it)", spec="launcher.mode",
            where=("compose", "kubernetes"), read=read_choice(MODES), overridable=True),
    Setting("run_id", "--run-id", "NODEWEAVE_RUN_ID",
            "set by `nodeweave run`: record this run (process, start, plan) under $TMPDIR/nodeweave/runs/<id> "
            "for `nodeweave status`/`stop` (on a node started by hand: `nodeweave-entrypoint --node status`, "
            "`--node stop --run ID`)", read=read_run_id),
    Setting("profile", "--profile", "NODEWEAVE_PROFILE",
            "nsys | rocprofv3: run every rank under the profiler, output under "
            "$TMPDIR/nodeweave/runs/<run id>/profile", read=read_choice(PROFILERS)),
    Setting("profile_options", "--profile-options", "NODEWEAVE_PROFILE_OPTIONS",
            "the profiler's own options, shell-quoted, instead of nodeweave's (rocprofv3: --kernel-trace --stats; "
            "nsys: none), e.g. '-i counters.yaml' or '--trace=cuda,nvtx --stats=true'; the output stays nodeweave's",
            read=read_words_like("--trace=cuda,nvtx --stats=true")),
    Setting("straggler_fault", "--straggler-fault", "NODEWEAVE_STRAGGLER_FAULT",
            "checks in a row a straggler is named before node 0 reports it as a STRAGGLER FAULT; recovery acts on "
            "it only with --straggler-is-fault on (docs/stalls.md); 0 = never (default; 10 with "
            "--straggler-is-fault on, which refuses 0); node 0 checks over the exchange's heartbeat, so it is "
            "refused with the exchange off", read=read_int(0)),
    Setting("stall_warn", "--stall-warn", "NODEWEAVE_STALL_WARN",
            "seconds (or 5m) of a stall before the report; 0 = off",
            spec="launcher.stall_warn", read=read_int(0, "seconds"), text=text_unless(STALL_WARN_S)),
    Setting("stall_timeout", "--stall-timeout", "NODEWEAVE_STALL_TIMEOUT",
            "seconds (or 10m) of a stall before exit 7; 0 = never",
            spec="launcher.stall_timeout", read=read_int(0, "seconds"), text=text_unless(STALL_TIMEOUT_S)),
    Setting("recovery", "--recovery", "NODEWEAVE_RECOVERY", "on | off (default): a fault starts a new generation "
            "of the job instead of ending it (docs/recovery.md)", spec="recovery.enabled", read=read_switch,
            text=on_text),
    Setting("spares", "--spares", "NODEWEAVE_SPARES", "nodes beyond the node count that check in and wait to "
            "replace a left-out node (node ranks N..N+spares-1)", spec="recovery.spares", read=read_int(0),
            text=text_unless(0)),
    Setting("recovery_max_restarts", "--recovery-max-restarts", "NODEWEAVE_RECOVERY_MAX_RESTARTS",
            f"restarts of the whole job before exit 8 (default {RECOVERY_RESTARTS})",
            spec="recovery.max_restarts", read=read_int(1), text=text_unless(RECOVERY_RESTARTS)),
    Setting("no_progress_restarts", "--no-progress-restarts", "NODEWEAVE_NO_PROGRESS_RESTARTS",
            f"generations in a row without a newer checkpoint before exit 9; 0 = never (default "
            f"{RECOVERY_NO_PROGRESS})", spec="recovery.no_progress_restarts", read=read_int(0),
            text=text_unless(RECOVERY_NO_PROGRESS)),
    Setting("checkpoint_dir", "--checkpoint-dir", "NODEWEAVE_CHECKPOINT_DIR", "the folder the script saves "
            "checkpoints in; node 0 hands the newest complete one to the ranks as NODEWEAVE_RESUME_FROM (both absolute "
            "paths, a relative one taken from the working folder; never "
            ".nodeweave/, runs/, a rendered tree, the workspace, the script or a file, nor a link to one)",
            spec="recovery.checkpoint_dir", read=read_path, text=optional_text),
    Setting("straggler_is_fault", "--straggler-is-fault", "NODEWEAVE_STRAGGLER_IS_FAULT", "on | off (default): "
            "a lasting straggler (named --straggler-fault checks in a row, default 10) counts as a fault for recovery", spec="recovery.straggler_is_fault",
            read=read_switch, text=on_text),
    Setting("warm_start", "--warm-start", "NODEWEAVE_WARM_START", "on (default) | off: under recovery each node "
            "holds its next launcher started ahead, its imports done, so a relaunch skips them (docs/recovery.md)",
            spec="recovery.warm_start", read=read_switch, text=switch_text),
    Setting("metrics", "--metrics", "NODEWEAVE_METRICS", "on (default) | off: node 0 serves Prometheus' /metrics "
            "and /status.json (docs/observability.md)", spec="metrics.enabled", read=read_switch, text=switch_text),
    Setting("metrics_port", "--metrics-port", "NODEWEAVE_METRICS_PORT",
            f"port of node 0's /metrics (default {METRICS_PORT})", spec="metrics.port", read=read_port,
            text=text_unless(METRICS_PORT)),
    Setting("step_pattern", "--step-pattern", "NODEWEAVE_STEP_PATTERN", "a regular expression that finds the step "
            "number in the training's log lines, beside the common loggers' formats nodeweave knows "
            "(docs/observability.md)", spec="metrics.step_pattern", read=read_step_pattern, text=optional_text),
)

# The variables the rank sources read under other names than the rows' (docs/entrypoint.md's first table): plain
# ones and torchrun's PET_* ones (Kubeflow); ``sources.py`` claims from these tables.
PLAIN_VARIABLES = (("node_rank", "NODE_RANK"), ("nnodes", "NNODES"), ("master_addr", "MASTER_ADDR"),
                   ("master_port", "MASTER_PORT"), ("world_size", "WORLD_SIZE"), ("rank", "RANK"))
TORCHRUN_VARIABLES = (("node_rank", "PET_NODE_RANK"), ("nnodes", "PET_NNODES"),
                      ("nproc_per_node", "PET_NPROC_PER_NODE"), ("master_addr", "PET_MASTER_ADDR"),
                      ("master_port", "PET_MASTER_PORT"))
# NODEWEAVE_* variables no row has a flag for (the same table's last rows); a secret's value is never printed.
OTHER_VARIABLES = ("NODEWEAVE_JOB_TOKEN", "NODEWEAVE_JOB_TOKEN_FILE", "NODEWEAVE_KUBE_API",
                   "NODEWEAVE_NCCL_VERSION", "NODEWEAVE_RCCL_VERSION")
SECRET_VARIABLES = frozenset(("NODEWEAVE_JOB_TOKEN",))
# Every variable the entrypoint reads by name as a setting (the platforms' own, a scheduler's output, are not typed
# by anyone): a value with white space at an end is refused in each (``padded_refusal``).
READ_VARIABLES = (tuple(row.variable for row in SETTINGS) + tuple(name for _, name in PLAIN_VARIABLES)
                  + tuple(name for _, name in TORCHRUN_VARIABLES) + OTHER_VARIABLES)


def padded_refusal(name, value, flag=False):
    """The one refusal of a flag's or variable's value with white space (a space, a tab, a newline) at an end,
    or None: such a value was trimmed by one reader, refused by another and taken whole by a third (replay N3:
    MASTER_ADDR=' 10.0.0.1' was taken as 10.0.0.1 without a word), where the CLI refuses it naming the spelling
    to use. Blank values are the "set but empty" rule's. ``flag``: ``name`` is an option (``--master-addr``)."""
    text = str(value)
    if text == text.strip() or not text.strip():
        return None
    from ..quoting import as_typed

    shown = "(not shown: a secret)" if name in SECRET_VARIABLES else as_typed(text)
    bare = "..." if name in SECRET_VARIABLES else text.strip()
    quoted = "'" + bare.replace("'", "'\\''") + "'"  # shell words, as the user types them
    spelling = f"{name} {quoted}" if flag else f"{name}={quoted}"
    return UsageError(f"{name} {shown}: white space at an end (a space, tab or newline: copied?), which is never "
                      f"trimmed; accepted: the value with nothing around it, write {spelling}")


BY_KEY = {row.key: row for row in SETTINGS}
BY_FLAG = {flag: row for row in SETTINGS for flag in (row.flag, *row.aliases)}
TOPOLOGY_KEYS = tuple(row.key for row in SETTINGS if row.topology)


def setting_credit(settings, key):
    """``default; set with --flag / VARIABLE, the spec's field`` for a line that names a setting's value to a user:
    where this node got it first, then every way to set it (walk12b B19: the restart budget's end named only
    ``recovery.max_restarts`` to a node started with flags and no spec), as the --explain rows credit theirs."""
    row = BY_KEY[key]
    ways = " / ".join(way for way in (row.flag, row.variable) if way)
    spec = f", the spec's {row.spec}" if row.spec else ""
    return f"{settings.source(key)}; set with {ways}{spec}"
