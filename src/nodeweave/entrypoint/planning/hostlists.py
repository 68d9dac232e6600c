"""One rule for every list of hosts a node reads (Slurm's node lists, a hostfile, ``BATCH_HOSTS_FILE``,
``SM_HOSTS``, ``DSTACK_NODES_IPS``, ``SKYPILOT_NODE_IPS``, a Volcano ``VC_*_HOSTS``).

- Bounded before it is expanded: at most ``contract.SCHEDULED_NODES_MAX`` hosts (the scheduler's own count's
  bound, docs/entrypoint.md), counted before anything is built from it (walk14b B7: ``n[1-99999999999]`` was
  expanded until the OOM killer came, on every node of the job).
- Read in linear time: a duplicate is found with a dict, never by a scan per host (walk14b B4: ``list.count``
  per host made an 8,193-host Slurm list 15 s a node).
- UTF-8 text, or refused in one line naming the file or variable, the line and the byte (walk14b B6, B8: a
  Latin-1 byte was replaced by U+FFFD and taken as a host name, a UTF-16 file's NULs written to the terminal),
  as every file of the user's is (:class:`bounded.NotText`).
"""

from ..bounded import TEXT_CAP, NotText, read_bytes, text_of
from ..errors import UsageError
from .contract import SCHEDULED_NODES_MAX

ACCEPTED = "host names or addresses as UTF-8 text (letters, digits, '-', '.')"


def too_many(where, count):
    """The refusal of a host list naming more hosts than any allocation holds; ``count`` None: more than the
    bound (a list read only that far)."""
    said = f"{count:,}" if count is not None else f"more than {SCHEDULED_NODES_MAX:,}"
    return UsageError(f"{where} names {said} hosts, more than the {SCHEDULED_NODES_MAX:,} nodes a scheduler's "
                      f"allocation may hold (a typo'd range?); accepted: at most {SCHEDULED_NODES_MAX:,} hosts")


def few(names, shown=8):
    """The first ``shown`` of ``names`` and a count of the rest: a line naming an 8,192-line hostfile's hosts
    stays one line (walk8 B19)."""
    names = list(names)
    return ", ".join(names[:shown]) + (f", and {len(names) - shown} more" if len(names) > shown else "")


def bounded(hosts, where):
    """``hosts`` (any iterable) as a list of at most ``SCHEDULED_NODES_MAX``; one more is refused, and no more is
    read than that."""
    listed = []
    for host in hosts:
        if len(listed) == SCHEDULED_NODES_MAX:
            raise too_many(where, None)
        listed.append(host)
    return listed


def twice(hosts, key=None):
    """The hosts listed more than once (by ``key``, e.g. ``hostport.host_key``), sorted; linear in the list."""
    seen, again = set(), set()
    for host in hosts:
        name = key(host) if key else host
        (again if name in seen else seen).add(name)
    return sorted(again)


def file_text(path, what, where):
    """The text of a hosts file (``what``: "a hostfile", "a hosts file"), read at most ``TEXT_CAP``: not UTF-8, or
    holding a NUL byte (UTF-16 without its byte-order mark), refused naming it (``where``: "hostfile h",
    "BATCH_HOSTS_FILE=h"), the line and the byte. OSError as ``bounded.read_bytes`` raises it."""
    return _text(read_bytes(path, TEXT_CAP, what), where, what)


def variable_text(env, name):
    """The value of variable ``name``, refused (naming it, its line and byte) when its bytes are not UTF-8: the
    environment's undecodable bytes come as lone surrogates (``surrogateescape``), given back as the bytes."""
    value = env.get(name, "")
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    data = value.encode("utf-8", "surrogateescape") if _escaped_only(value) else \
        value.encode("utf-8", "surrogatepass")
    return _text(data, name, "a host list", variable=True)


def _escaped_only(value):
    return all(not 0xd800 <= ord(ch) <= 0xdfff or 0xdc80 <= ord(ch) <= 0xdcff for ch in value)


def _text(data, where, what, variable=False):
    try:
        text = text_of(data, where, what, variable=variable)
    except NotText as err:
        raise UsageError(str(err)) from None
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise UsageError(f"{where}, line {line}: byte 0x00 (NUL) is no text (a UTF-16 file without its "
                         f"byte-order mark?), and nodeweave reads {what} as UTF-8; save it as UTF-8 "
                         "(iconv -f utf-16le -t utf-8)")
    return text
