"""Name rules for everything that reaches a remote argv: pods, containers, hosts, paths.

Each name is checked against the rule of the system that owns it before any
argv is built, so nothing a user types can become an option (a leading
``-``) or a shell metacharacter on the far side of ``ssh``.
"""

from __future__ import annotations

import ipaddress
import re

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.entrypoint.hostport import leading_zero_problem, split_host_port
from nodeweave.errors import UsageError
from nodeweave.systemdirs import ROOTISH as _ROOTISH, SCRATCH, SYSTEM_TREES, system_folder, system_tree  # noqa: F401
from nodeweave.systemdirs import CLUSTER_NAMESPACES_TEXT, cluster_namespace
# The judge of a home lives with the system folders, below every room that names a folder (failures, spec, sync).
from nodeweave.systemdirs import HOMES, a_home, home_itself, own_homes  # noqa: F401

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONTAINER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")  # docker/podman's own rule
# A host name's label as ssh and the resolver take one: RFC 1123's letters, digits and '-', and '_', which ssh takes in
# a ~/.ssh/config Host alias and glibc in /etc/hosts (walk18a A15: `--host gpu_01` was refused); the spec's hosts
# (spec.rules.HOST) and the entrypoint's MASTER_ADDR (planning.contract.HOST_CHARS) take the same.
_HOST_LABEL = re.compile(r"^[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?$")
_SSH_USER = re.compile(r"^[a-z_][a-z0-9_.-]*$")
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._@+=,/-]*$")
# Folders whose every child is a mount point of its own (/mnt/nfs, /media/usb): never emptied by --delete.
MOUNT_PARENTS = ("/mnt", "/media", "/run/media")
# Folders of credentials: a sync with --delete there removes what SRC lacks (~/.ssh/authorized_keys: locked out),
# and a sync from one sends its keys to every node.
CREDENTIAL_FOLDERS = (".ssh", ".gnupg", ".aws", ".kube", ".docker", ".azure", ".password-store")


def credential_folder(path: str) -> "str | None":
    """The credential folder ``path`` is or lies in (``.ssh`` for ``~/.ssh/keys``), or None."""
    return next((part for part in path.split("/") if part in CREDENTIAL_FOLDERS), None)


def shared_folder_problem(real: str) -> "str | None":
    """Why the absolute, resolved ``real`` may not be a workspace handed to every node (sync's SRC, the spec's
    workspace.host_path), or None: ``/`` or a system folder, whose whole tree would go; a home itself (under
    /home, /Users, /var/home, or this user's own wherever it is: :func:`own_homes`) or a credential folder, whose
    keys and tokens would (walk6 W69; walk8 A30: the spec took what sync refused)."""
    if system_folder(real):
        return f"{real} is a system folder, whose whole tree would be sent to (or mounted on) every node"
    tree = system_tree(real)  # /sbin is /usr/sbin where links lead: a system folder's tree is the system's too
    if tree is not None:
        return f"{real} is in {tree} ({SYSTEM_TREES[tree]}), which would be sent to (or mounted on) every node"
    home = a_home(real)
    if home:
        return f"{real} is {home}, whose keys, tokens and caches would be sent to (or mounted on) every node"
    secret = credential_folder(real)
    if secret is not None:
        return f"{real} is in the credential folder {secret}, whose keys would be sent to (or mounted on) every node"
    return None


def refuse(what: str, value: str, accepted: str) -> UsageError:
    return UsageError(f"{what} {value!r} is not accepted: {accepted}")


def check_dns_label(value: str, what: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise refuse(what, value, "a DNS-1123 label (lowercase letters, digits and '-', "
                     "starting and ending with a letter or digit, at most 63 characters)")
    return value


def check_job_namespace(value: str, what: str) -> str:
    """The job's namespace (a flag, a record): a DNS-1123 label the cluster does not keep for itself."""
    check_dns_label(value, what)
    if cluster_namespace(value):
        raise refuse(what, value, f"a namespace of the job's own, {CLUSTER_NAMESPACES_TEXT}: the job's objects, "
                                  "claim and Pod Security label would land among the cluster's system pods")
    return value


def check_pod_name(value: str, what: str = "pod name") -> str:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.match(value):
        raise refuse(what, value, "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                     "starting and ending with a letter or digit, at most 253 characters)")
    return value


def check_container_name(value: str, what: str = "container name") -> str:
    if len(value) > 255 or not _CONTAINER_NAME.match(value):
        raise refuse(what, value, "a container name or ID ([a-zA-Z0-9][a-zA-Z0-9_.-]*)")
    return value


def ipv6_literal(value: str) -> bool:
    """Whether ``[user@]host`` names its host by an IPv6 address, bare or in brackets (``[fd00::1]``, ``[::1]:22``)."""
    host = value.rpartition("@")[2]
    try:
        return ipaddress.ip_address(split_host_port(host)[0] if host.startswith("[") else host).version == 6
    except ValueError:
        return False


def check_ssh_host(value: str, what: str = "host") -> str:
    """``[user@]host`` with a host name (an ssh alias too) or an IPv4 address."""
    user, at, host = value.rpartition("@")
    if at and not user:  # walk8 A16: `--host "$RUSER@gpu01"` with RUSER unset; ssh would print its usage text
        raise refuse(what, value, f"[user@]host, where the user before '@' is not empty (an unset variable?): "
                     f"{host or 'host'} or USER@{host or 'host'}")
    if user and not _SSH_USER.match(user):
        raise refuse(what, value, "[user@]host, where user is a POSIX login name ([a-z_][a-z0-9_.-]*)")
    try:
        address = ipaddress.ip_address(split_host_port(host)[0] if host.startswith("[") else host)
    except ValueError:  # split_host_port's too: "[node-0]" is no address, and refused as a host name below
        address = None
    zero = leading_zero_problem(host)
    if zero:
        raise refuse(what, value, f"[user@]host with an IPv4 address as ssh reads it (this one {zero})")
    if ipv6_literal(host):
        raise refuse(what, value, "a host name or IPv4 address (give IPv6 hosts a name in "
                     "/etc/hosts or ~/.ssh/config: rsync's host:path form cannot carry one)")
    name, colon, port = host.rpartition(":")
    if colon and digits(port) and name and ":" not in name:  # host:port, the first thing most people type
        raise refuse(what, value, f"[user@]host without a port: ssh takes the port apart, as --ssh-option "
                     f"Port={port} (or a `Host {name}` entry with `Port {port}` in ~/.ssh/config), and "
                     f"{'--host ' if what.startswith('--host') else ''}{value.rpartition(':')[0]}")
    labels = host.rstrip(".").split(".") if host else []
    if (address is None and (not labels or len(host) > 253
                             or not all(len(lab) <= 63 and _HOST_LABEL.match(lab) for lab in labels))):
        raise refuse(what, value, "[user@]host with a host name (letters, digits, '-', '_' and '.', as ssh "
                     "takes one, a ~/.ssh/config Host alias too) or an IPv4 address")
    return value


SLOTS = re.compile(r"slots=([1-9][0-9]*)")


def host_of_line(words: "list[str]", where: str) -> str:
    """The host of one hosts-file line's words: one ``[user@]host``, optionally followed by DeepSpeed's ``slots=N``
    (N >= 1); anything else after the host is refused naming ``where`` (the file and line) and the word. The one
    reader of a line for every verb (walk7 A16: ``gpu01 gpu02`` on one line synced gpu01 alone, without a word).
    A host in MPICH's ``host:N`` form (N slots, what Horovod's and mpirun's hostfiles hold) is refused as both
    things it may mean, never only as ssh's host:port (walk10 A8: the hint sent the user to ssh port 8)."""
    from nodeweave.entrypoint.hostport import host_count_form

    user, at, host = words[0].rpartition("@")
    counted = host_count_form(host)
    if counted:
        name, count = f"{user}{at}{counted[0]}", counted[1]
        raise UsageError(f"{where}: host {words[0]!r} is not accepted: MPICH's host:N form (N slots) or ssh's "
                         f"host:port, and a hosts file here holds neither; accepted: '{name} slots={count}' "
                         f"(DeepSpeed's form) for {count} slots, or '{name}' with --ssh-option Port={count} (or a "
                         f"`Host {counted[0]}` entry with `Port {count}` in ~/.ssh/config) if {count} is the ssh port")
    extra = words[1:]
    if len(extra) == 1 and SLOTS.fullmatch(extra[0]):
        return words[0]
    if extra:
        bad = next((w for w in extra if not SLOTS.fullmatch(w)), extra[-1])
        why = ("DeepSpeed's slots=N takes a whole number of at least 1" if bad.startswith(("slots=", "slot="))
               else "one host per line")
        raise UsageError(f"{where}: {bad!r} after the host {words[0]!r}: {why}; accepted: '[user@]host' or "
                         "'[user@]host slots=N', each host on its own line, node 0 first")
    return words[0]


def check_dest(dest: str, what: str = "DEST", home: bool = False, place: bool = True) -> str:
    """An absolute, normalised directory on the nodes that is not a system directory, a home itself, a mount root
    or a credential folder; with ``home``, also ``~/FOLDER`` under each ssh host's home (the remote shell expands it
    there), by the same rules. ``place`` False: the form only (a path under a home: ``~/etc`` is the home's own)."""
    secret = credential_folder(dest)
    if secret is not None:
        raise refuse(what, dest, f"a workspace folder, not in the credential folder {secret} (a sync with --delete "
                                 "there would remove what SRC lacks, ~/.ssh/authorized_keys among it)")
    if home and (dest == "~" or dest.startswith("~/")):
        try:
            inside = check_dest("/" + dest[2:].strip("/"), what, place=False)
            if inside == "/":
                raise UsageError("the home itself")
            return "~/" + inside.lstrip("/")
        except UsageError:
            raise refuse(what, dest, "~/FOLDER: a folder under each host's home, of letters, digits and . _ @ + = , "
                         "- / without '.' or '..' components, not the home itself") from None
    if not home:
        return _absolute_dest(dest, what, place, home)
    try:
        return _absolute_dest(dest, what, place, home)
    except UsageError as err:  # the ~/FOLDER form this DEST takes is offered by every refusal (walk13 A11)
        parts = [p for p in dest.split("/") if p]
        relative = (parts and not dest.startswith(("/", "~")) and not {".", ".."} & set(parts)
                    and _SAFE_PATH.match("/" + "/".join(parts)))
        example = "~/" + "/".join(parts) if relative else "~/FOLDER"
        raise UsageError(f"{err}; or '{example}' (quoted, so your shell leaves it alone), under each host's "
                         "home") from None


def _absolute_dest(dest: str, what: str, place: bool, home: bool) -> str:
    """:func:`check_dest`'s rule for an absolute DEST (``home``: the refusal's caller offers ~/FOLDER after it)."""
    if not dest.startswith("/"):
        raise refuse(what, dest, "an absolute path on the targets such as /workspace (" + (
            "a relative path means" if home else "'~' and relative paths mean") + " different places on different "
                     "nodes)")
    if not _SAFE_PATH.match(dest):
        raise refuse(what, dest, "an absolute path of letters, digits and . _ @ + = , - / "
                     "(no spaces, quotes or shell characters)")
    parts = [p for p in dest.split("/") if p]
    if ".." in parts or "." in parts:
        raise refuse(what, dest, "a normalised absolute path without '.' or '..' components")
    normal = "/" + "/".join(parts)
    if not place:
        return normal
    if normal in _ROOTISH:
        raise refuse(what, dest, "a workspace directory such as /workspace or /home/me/project, "
                     "not a system directory or a mount root (a sync with --delete there would wipe it)")
    if home_itself(normal):
        raise refuse(what, dest, f"a workspace folder inside it such as {normal}/project, not a home or a user's "
                     "mount root itself (a sync with --delete there would remove everything SRC lacks)")
    tree = system_tree(normal)
    if tree is not None:
        raise refuse(what, dest, f"a workspace directory such as /workspace or /home/me/project, not a folder "
                     f"inside {tree} ({SYSTEM_TREES[tree]}: a sync with --delete there would remove its files)")
    refuse_node_state(normal, what, dest)
    return normal


# nodeweave's own folders on a node, in its $TMPDIR (/tmp, /var/tmp where the image or spec sets it): the entrypoint's
# records (systemfolders.state_root: the hold, every run's check-in, ranks and recovery book) and sync's resident
# agent (sync/node/resident.py), which the node side of `.nodeweave/` is.
NODE_STATE = ("nodeweave", "nodeweave-sync-")


def refuse_node_state(normal: str, what: str = "DEST", dest: "str | None" = None, tmpdirs=SCRATCH) -> None:
    """A folder on the nodes that is, or is inside, nodeweave's own folder in a node's temporary folder (``tmpdirs``:
    /tmp and /var/tmp, and the spec's $TMPDIR where it sets one) is refused, exit 2, with or without --delete: the
    files a sync writes there would lie over `up --hold`'s and every run's records, and --delete removed them
    (walk16 A11: `sync --delete . /tmp/nodeweave`, the folder sync's own refusal of /opt advised, deleted them)."""
    for tmp in tmpdirs:
        inside = normal[len(tmp.rstrip("/")) + 1:].split("/")[0] if normal.startswith(tmp.rstrip("/") + "/") else ""
        if inside == NODE_STATE[0] or inside.startswith(NODE_STATE[1]):
            raise refuse(what, dest or normal, f"a workspace folder of its own such as {tmp.rstrip('/')}/work, not "
                         f"{tmp.rstrip('/')}/{inside} nor a folder in it: "
                         "nodeweave's own folder on the nodes ($TMPDIR/nodeweave keeps `up --hold`'s and every "
                         "run's records, $TMPDIR/nodeweave-sync-UID sync's agent; a sync there would write over them, "
                         "and --delete remove them)")


def check_delete_dest(dest: str, workspace: str, what: str = "DEST") -> str:
    """DEST a sync with ``--delete`` may empty of what SRC lacks (``dest`` already passed :func:`check_dest`): not a
    top-level folder (``/scratch``, ``/data``, ``/lustre``, ``/gpfs``: where a cluster mounts the shared file
    systems holding every team's data) nor a mount under ``/mnt`` or ``/media``, unless it is ``workspace`` (the
    spec's ``workspace.path``, the folder the job owns) (walk6, W36). A folder inside them is the user's to mirror."""
    parts = [p for p in dest.split("/") if p] if dest.startswith("/") else []
    mount = len(parts) == 2 and "/" + parts[0] in MOUNT_PARENTS
    if (len(parts) == 1 or mount) and dest != workspace:
        kind = "a mount under /" + parts[0] if mount else "a top-level folder, where shared file systems are mounted"
        raise refuse(f"{what} with --delete", dest, f"a folder inside it such as {dest}/$USER/project (it is {kind}: "
                     "other teams' data lives there, and --delete would remove everything SRC lacks), or the spec's "
                     f"workspace.path {workspace}")
    return dest


def hosts_file_lines(path, fold_case: bool = True) -> "list[tuple[str, str]]":
    """``(where, [user@]host)`` for each host line of the hosts file ``path``, node 0 first: the one reader of a hosts
    file for every verb (the cluster verbs' --hosts-file, ``hosts probe``, ``sync``; walk10 A7: two readers had two
    rules, and ``hosts probe`` named a repeated ``GPU01`` as a ``--node`` nobody typed). ``#`` comments and blank
    lines are skipped; the file is read whole, a leading byte-order mark skipped (``bounded.read_text``); each line
    is read by :func:`host_of_line`; a host listed again is refused naming both lines: by ``hostport.host_key`` (a
    host name is case-insensitive, ``gpu01.`` is ``gpu01``, the user is no part of it: ``remote.refuse_same_host``'s
    key) where ``fold_case``, else as written (container names are case-sensitive)."""
    from nodeweave.entrypoint import bounded
    from nodeweave.entrypoint.hostport import host_key

    try:
        lines = bounded.read_text(path, bounded.TEXT_CAP, "a hosts file").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"hosts file {path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    found, lines_of = [], {}
    for number, line in enumerate(lines, start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"hosts file {path}, line {number}"
        host = host_of_line(words, where)
        name, slash, rest = host.rpartition("@")[2].partition("/")  # ssh+docker's host/container: the host's part
        key = (host_key(name), rest) if fold_case else host
        if key in lines_of:
            first_number, first = lines_of[key]
            spelt = "" if first == host else f" as {first!r}"
            why = " (a host name is case-insensitive and a trailing dot names the same host)" if fold_case else ""
            raise UsageError(f"{where}: host {host!r} is listed already on line {first_number}{spelt}{why}; a host's "
                             "place is its node rank, so list each host once")
        lines_of[key] = (number, host)
        found.append((where, host))
    if not found:
        raise UsageError(f"hosts file {path} lists no host: one [user@]host per line, node 0 first")
    return found
