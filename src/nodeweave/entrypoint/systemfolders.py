"""The folders of a node no setting may name: the system's, the kernel's, nodeweave's own, and those each container
has to itself. One table for the spec's rules (``planning.shared_rules``), the checkpoint folder's links
(``ownfolders``) and the spec's mounts, below all of them so none imports another to read it. Stdlib only.
"""

import os
import posixpath

# Folders of the image a mount at them, or above them, would hide: the system's, and those nodeweave puts there.
SYSTEM = {
    "/bin": "the system's programs", "/boot": "the boot files", "/dev": "the devices", "/etc": "the system's "
    "configuration", "/home": "the image user's home", "/lib": "the system's libraries", "/lib32": "the system's "
    "libraries", "/lib64": "the system's libraries", "/proc": "the kernel's process files", "/root": "root's home",
    "/run": "the runtime's files", "/sbin": "the system's programs", "/sys": "the kernel's files", "/tmp": "the "
    "temporary folder (pods mount their own there)", "/usr": "the installed software", "/usr/bin": "the "
    "installed programs", "/usr/lib": "the installed libraries", "/usr/local": "the image's own software",
    "/usr/local/bin": "nodeweave-entrypoint and the launchers", "/var": "the system's state",
    "/run/nodeweave": "the job token nodeweave mounts", "/etc/nodeweave": "the hosts file nodeweave mounts",
}  # fmt: skip
# Folders whose inside is the kernel's or nodeweave's own: nothing of the spec's is mounted or kept in them.
FILLED = {"/proc": "the kernel fills", "/sys": "the kernel fills", "/dev": "the kernel and runtime fill",
          "/run/nodeweave": "nodeweave fills", "/etc/nodeweave": "nodeweave fills"}
# Folders each container has to itself (an emptyDir, the image's own layer): what a node writes there the others
# never see, and it is gone with the container.
PER_CONTAINER = ("/tmp", "/var/tmp", "/run")  # /dev/shm: refused outright (inside /dev)
# Trees that are the system's own all the way down: a folder inside one is never a workspace, a run folder or a
# render's output (a sync with --delete into /etc/ssh removes sshd's config; into /var/lib/containers, the engine's
# storage). /usr/local and /opt hold installed software too, but a user's own folder there is common: only the
# folders themselves are refused (ROOTISH).
SYSTEM_TREES = {  # the CLI's own folders (failures.own_folder_problem) and the checkpoint folder (path_problem)
    "/etc": "the system's configuration",
    "/boot": "the kernel and bootloader",
    "/proc": "a kernel file system",
    "/sys": "a kernel file system",
    "/dev": "the devices",
    "/bin": "the system's programs",
    "/sbin": "the system's programs",
    "/lib": "the system's libraries",
    "/lib32": "the system's libraries",
    "/lib64": "the system's libraries",
    "/usr/bin": "the system's programs",
    "/usr/sbin": "the system's programs",
    "/usr/lib": "the system's libraries",
    "/usr/lib64": "the system's libraries",
    "/usr/include": "the system's headers",
    "/usr/share": "the system's data",
    "/var/lib/containers": "the container engine's storage",
    "/var/lib/docker": "the container engine's storage",
    "/var/lib/containerd": "the container engine's storage",
    "/var/lib/kubelet": "the kubelet's storage",
    "/var/lib/dpkg": "the package manager's records",
    "/var/lib/apt": "the package manager's records",
    "/var/run": "the running services' sockets",
    "/run/containerd": "the container engine's sockets",
    "/run/docker": "the container engine's sockets",
    "/run/podman": "the container engine's sockets",
    "/usr/libexec": "the system's programs",
    "/usr/lib32": "the system's libraries",
    "/usr/libx32": "the system's libraries",
    "/usr/games": "the system's programs",
    "/var/cache": "the package managers' and the system's caches",
    "/var/spool": "the system's queues (mail, cron, print)",
    "/var/mail": "the users' mailboxes",
    "/var/backups": "the system's backups",
    "/var/crash": "the system's crash dumps",
    "/var/lock": "the running services' locks",
    "/var/account": "the process accounting records",
    "/var/empty": "sshd's empty folder",
}


def normal_path(text):
    """``text`` as the kernel reads it: ``posixpath.normpath``, with a leading ``//`` made one ``/``. POSIX lets
    normpath keep exactly two leading slashes, which Linux reads as one: ``//etc`` is ``/etc``, yet every rule that
    compares names (the system folders, /proc, /dev, the per-container folders, the mounts) passed it (walk10 B4,
    B6). Every judge of a folder's name normalises through here."""
    normal = posixpath.normpath(text)
    return normal[1:] if normal.startswith("//") else normal


def edge_space_problem(text):
    """Why a path that starts or ends in white space is refused (walk7 B27: `checkpoints ` was saved into by the
    script as is while node 0 scanned `checkpoints`, and ' ' was a folder named ' ' to one reader, unset to
    another), or None."""
    if text == text.strip():
        return None
    where = "ends" if text[-1:].isspace() else "starts"
    return (f"{text!r} {where} in white space (copied from a document?), which the script keeps and a reader that "
            f"strips it does not: one folder read two ways; write it as {text.strip()!r}" if text.strip() else
            f"{text!r} is only white space: a folder named {text!r}, or none at all, depending on who reads it")


def unexpanded(text):
    """Why a path still holds ``~`` or ``$NAME`` (a quoted YAML or compose value, ``-e VAR='$X'``), naming what a
    shell would have made of it here, or None: no shell reads the path, so it names a file called ``~`` or
    ``$SECRET_PATH`` (walk8 B45: one rule for every path variable)."""
    text = str(text)
    if not (text.startswith("~") or "$" in text):
        return None
    meant = os.path.expandvars(os.path.expanduser(text))
    said = f": give the path itself ({meant})" if meant != text else ": give the path itself"
    return f"{text!r} holds {'~' if text.startswith('~') else '$'}, which nothing expands here{said}"


def path_problem(text, absolute_too=True):
    """Why ``text``, read relative to ``workspace.path``, is not a folder of the job's own, or None: a relative
    path stays inside the workspace; with ``absolute_too`` an absolute one is not a system folder nor inside one of
    the system's own trees (``SYSTEM_TREES``: /etc/ssh, /usr/lib/x), the rule the CLI's own folders follow. ``~`` and
    ``$VAR`` are refused: no shell reads the path, so they would name a folder ``~`` or ``$HOME`` in the workspace."""
    if text != text.strip():  # kept by the script, dropped by a reader that strips: one folder read two ways
        return edge_space_problem(text)
    if text.startswith("~") or "$" in text:
        return (f"{text!r} holds {'~' if text.startswith('~') else '$'}, which nothing expands here (the path is "
                "used as written: a folder of that name inside workspace.path)")
    glob = next((char for char in "*?[" if char in text), None)
    if glob is not None:  # walk7 B47: a glob left unexpanded by a quoted value names a folder called '*'
        return (f"{text!r} holds a glob ({glob}), which nothing expands here (the path is used as written: a "
                "folder of that very name); give one folder")
    if not text.startswith("/"):
        normal = normal_path(text)
        if normal == ".." or normal.startswith("../"):
            return f"{text!r} leaves workspace.path (it is read relative to it)"
        return None
    if not absolute_too:
        return None
    normal = normal_path(text)
    if normal == "/":
        return "/ is the whole file system"
    for folder, what in FILLED.items():
        if normal.startswith(folder + "/"):
            return f"{normal} is inside {folder}, which {what}"
    for folder, what in SYSTEM.items():
        if folder == normal:
            return f"{normal} is a system folder ({what})"
        if folder.startswith(normal.rstrip("/") + "/"):
            return f"{normal} holds the system folder {folder} ({what})"
    tree = next((tree for tree in SYSTEM_TREES if normal.startswith(tree + "/")), None)
    if tree is not None:  # walk10 B21/B22: /etc/ssh, /usr/lib/x, as the CLI's own folders are refused
        return f"{normal} is inside {tree} ({SYSTEM_TREES[tree]})"
    return None


def per_container(text):
    """The per-container folder ``text`` lies in (``/tmp/ckpt``: ``/tmp``), or None."""
    normal = normal_path(text) if text.startswith("/") else ""
    return next((folder for folder in PER_CONTAINER if normal == folder or normal.startswith(folder + "/")), None)
