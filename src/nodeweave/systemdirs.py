"""The folders no verb may write nodeweave's files into or sync over: ``/``, system folders, mount roots and the
parents of homes, and anything inside the system's own trees; and the one judge of a home (``a_home``). A leaf (it imports only the entrypoint's stdlib table
of system trees), so the path judges of every room (sync's DEST, --remote-dir, --runs-dir, render --out) share it.
"""

import os
import posixpath

# Trees that are the system's own all the way down: the one table lives with the entrypoint (stdlib only), whose
# checkpoint folder rule judges by it too (walk10 B21/B22).
from nodeweave.entrypoint.systemfolders import SYSTEM_FOLDERS, SYSTEM_TREES, normal_path

# ``/`` and the one table of system folders (``systemfolders.SYSTEM_FOLDERS``, replay11 B21/B22): the node's
# checkpoint folder, the spec's and every host option judge by the same folders.
ROOTISH = frozenset(SYSTEM_FOLDERS) | {"/"}


# The system folders everyone may leave a file in: a file an option names (bench --json-out, --write-hostfile) may
# lie directly in one; in every other system folder (/var, /var/lib, /usr/local, /home, /opt ...) it may not.
SCRATCH = ("/tmp", "/var/tmp")


def system_folder(path: str) -> bool:
    """``/`` or a system folder (``/etc``, ``/usr``, ``/home``, ...): what no sync may send from or write over. This
    user's own home is none (``/root`` for root: walk15 A9, A14): it is judged, and said, as a home (``a_home``)."""
    normal = "/" + "/".join(p for p in path.split("/") if p)
    return normal in ROOTISH and normal not in own_homes()


def made_in_system_folder(path: str) -> "str | None":
    """Why the folder ``path`` may not be made, or None: a folder not there yet whose first missing part would be
    made directly in ``/`` or a system folder (as written or where links lead), but the scratch ones (``SCRATCH``):
    ``runs/`` made by bench run from ``/`` or ``/usr/local``, ``--runs-dir /runs``, ``--json-out /usr/local/runs/x.json``
    (replay10 R3: only the file's own folder was judged, so a new folder one level down passed). A folder that is
    there already (``/data``, a mount of the user's) is not judged here."""
    made = normal_path(os.path.abspath(path))  # //var/tmp/x is /var/tmp/x, a scratch folder's (replay11 R4)
    if os.path.lexists(made):
        return None
    while not os.path.lexists(os.path.dirname(made)) and os.path.dirname(made) != made:
        made = os.path.dirname(made)
    parent = os.path.dirname(made)
    seen_as = dict.fromkeys((parent, os.path.realpath(parent)))
    if any(seen in own_homes() for seen in seen_as):  # this user's own home, /root for root: a folder in it is
        return None  # fine, as ~/proj is for every user (walk12 A19: root's ~/proj was refused as "a system folder")
    for seen in seen_as:
        if system_folder(seen) and seen not in SCRATCH:
            what = "/" if seen == "/" else NAMED.get(seen, "a system folder")
            return (f"{made} would be made directly in {seen}, which is {what}, where nodeweave makes "
                    f"no folder (of those, only {' and '.join(SCRATCH)} take one)")
    return None


# System folders named as what they are in a refusal, where "a system folder" alone leaves a user guessing.
NAMED = {"/root": "root's home (another user's, a system folder)", "/home": "the folder of the homes",
         "/tmp": "a scratch folder"}


def system_tree(path: str) -> "str | None":
    """The system tree ``path`` lies in or is (``/etc`` for ``/etc/ssh``), or None."""
    normal = "/" + "/".join(p for p in path.split("/") if p)
    for tree in SYSTEM_TREES:
        if normal == tree or normal.startswith(tree + "/"):
            return tree
    return None


# The cluster's own namespaces: its system pods (CNI, kube-proxy, device plugins, the OpenShift operators) run there,
# and the job's namespace.yaml labels its namespace with a Pod Security level that would judge them too (walk6 W78).
CLUSTER_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "openshift")
CLUSTER_NAMESPACE_PREFIXES = ("kube-", "openshift-")
CLUSTER_NAMESPACES_TEXT = "not one of the cluster's own (kube-system, kube-public, kube-*, openshift, openshift-*)"


def cluster_namespace(name: str) -> bool:
    """``name`` is a namespace the cluster keeps for itself: no job's objects, claim or Pod Security label go there."""
    return name in CLUSTER_NAMESPACES or name.startswith(CLUSTER_NAMESPACE_PREFIXES)


# Folders whose children are each a home or a user's mount root: /home/me is a home, never a workspace (walk5 W49).
HOMES = ("/home", "/Users", "/var/home", "/media", "/run/media")


def home_itself(path: str) -> bool:
    """``path`` (absolute, normalised) is a home or a user's mount root itself (``/home/me``, ``/Users/me``)."""
    return posixpath.dirname("/" + "/".join(p for p in path.split("/") if p)) in HOMES


def own_homes() -> "dict[str, str]":
    """This user's real home folders on this machine, wherever they are: ``$HOME`` and the passwd entry's home
    (``/root``, ``/tmp/x``, ``/srv/me``), each as written and where links lead, to how it is named (walk9 A27: a
    ``$HOME`` outside /home, /Users and /var/home was taken as a workspace). ``/`` is never one (a home of ``/``
    is a system folder already)."""
    import os

    named = {}
    try:
        import pwd

        named[pwd.getpwuid(os.getuid()).pw_dir] = "your home folder (the passwd entry's)"
    except (ImportError, KeyError, OSError):
        pass
    home = os.environ.get("HOME") or ""
    if home.strip():
        named[home] = "your home folder ($HOME)"  # $HOME's name wins: it is the one the shell's ~ means
    found = {}
    for path, how in named.items():
        if not path.startswith("/"):
            continue
        for seen in (path, os.path.realpath(path)):
            normal = "/" + "/".join(p for p in seen.split("/") if p)
            if normal != "/":
                found[normal] = how
    return found


def a_home(path: str) -> str:
    """What ``path`` (absolute) is when it is a home or a user's mount root itself, as it reads in a refusal (``a
    home itself``; ``a home itself, your home folder ($HOME)`` for this user's own wherever it is: walk9 A27), else
    "". The one judge of a home for every path nodeweave sends, mounts or writes its files into: sync's SRC, the
    spec's workspace and volumes, and every folder option (``failures.own_folder_problem``: replay11 A3, A22)."""
    normal = "/" + "/".join(p for p in path.split("/") if p)
    own = own_homes().get(normal)
    if own is not None:  # this user's home, wherever it is ($HOME=/srv/me, /root)
        return f"a home itself, {own}"
    return "a home itself" if home_itself(normal) else ""  # /home/me, /Users/me: ~ itself as DEST is refused the same
