"""Name rules for everything that reaches a remote argv: pods, containers, hosts, paths.

Each name is checked against the rule of the system that owns it before any
argv is built, so nothing a user types can become an option (a leading
``-``) or a shell metacharacter on the far side of ``ssh``.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re

from nodeweave.errors import UsageError
from nodeweave.systemdirs import ROOTISH as _ROOTISH, SYSTEM_TREES, system_folder, system_tree  # noqa: F401

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONTAINER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")  # docker/podman's own rule
_HOST_LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$")
_SSH_USER = re.compile(r"^[a-z_][a-z0-9_.-]*$")
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._@+=,/-]*$")
# Folders whose children are each a home or a user's mount root: /home/me is a home, never a workspace (walk5 W49).
_HOMES = ("/home", "/Users", "/var/home", "/media", "/run/media")
# Folders of credentials: a sync with --delete there removes what SRC lacks (~/.ssh/authorized_keys: locked out).
CREDENTIAL_FOLDERS = (".ssh", ".gnupg", ".aws", ".kube", ".docker")


def refuse(what: str, value: str, accepted: str) -> UsageError:
    return UsageError(f"{what} {value!r} is not accepted: {accepted}")


def check_dns_label(value: str, what: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise refuse(what, value, "a DNS-1123 label (lowercase letters, digits and '-', "
                     "starting and ending with a letter or digit, at most 63 characters)")
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


def check_ssh_host(value: str, what: str = "host") -> str:
    """``[user@]host`` with an RFC 1123 name or an IPv4 address."""
    user, _, host = value.rpartition("@")
    if user and not _SSH_USER.match(user):
        raise refuse(what, value, "[user@]host, where user is a POSIX login name ([a-z_][a-z0-9_.-]*)")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.version == 6:
        raise refuse(what, value, "a host name or IPv4 address (give IPv6 hosts a name in "
                     "/etc/hosts or ~/.ssh/config: rsync's host:path form cannot carry one)")
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and name and ":" not in name:  # host:port, the first thing most people type
        raise refuse(what, value, f"[user@]host without a port: ssh takes the port apart, as --ssh-option "
                     f"Port={port} (or a `Host {name}` entry with `Port {port}` in ~/.ssh/config), and "
                     f"{'--host ' if what.startswith('--host') else ''}{value.rpartition(':')[0]}")
    labels = host.rstrip(".").split(".") if host else []
    if (address is None and (not labels or len(host) > 253
                             or not all(len(lab) <= 63 and _HOST_LABEL.match(lab) for lab in labels))):
        raise refuse(what, value, "[user@]host with an RFC 1123 host name (letters, digits, '-' "
                     "and '.') or an IPv4 address")
    return value


def check_dest(dest: str, what: str = "DEST", home: bool = False, place: bool = True) -> str:
    """An absolute, normalised directory on the nodes that is not a system directory, a home itself, a mount root
    or a credential folder; with ``home``, also ``~/FOLDER`` under each ssh host's home (the remote shell expands it
    there), by the same rules. ``place`` False: the form only (a path under a home: ``~/etc`` is the home's own)."""
    secret = next((part for part in dest.split("/") if part in CREDENTIAL_FOLDERS), None)
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
    if not dest.startswith("/"):
        raise refuse(what, dest, "an absolute path on the targets such as /workspace "
                     "('~' and relative paths mean different places on different nodes)")
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
    if posixpath.dirname(normal) in _HOMES:
        raise refuse(what, dest, f"a workspace folder inside it such as {normal}/project, not a home or a user's "
                     "mount root itself (a sync with --delete there would remove everything SRC lacks)")
    tree = system_tree(normal)
    if tree is not None:
        raise refuse(what, dest, f"a workspace directory such as /workspace or /home/me/project, not a folder "
                     f"inside {tree} ({SYSTEM_TREES[tree]}: a sync with --delete there would remove its files)")
    return normal
