"""The folders of a node no setting may name: the system's, the kernel's, nodeweave's own, and those each container
has to itself. One table for the spec's rules (``planning.shared_rules``), the checkpoint folder's links
(``ownfolders``) and the spec's mounts, below all of them so none imports another to read it. Stdlib only.
"""

import os
import posixpath

# THE table of system folders (issue 43, replay11 B21/B22): every judge of "may nodeweave make or write this folder"
# reads it, on the host (``systemdirs``: --runs-dir, --out, sync's targets), in the spec (recovery.checkpoint_dir,
# the mounts) and on a node (NODEWEAVE_CHECKPOINT_DIR). The rule (``path_problem``, ``in_system_folder``): ``/``
# and each of these folders itself is never a folder of the job's; inside one of ``SYSTEM_TREES`` nothing is; and a
# folder *in* one (``/opt/ckpt``, ``/srv/ckpt``, ``/var/lib/ck``) only where something was made for it: on a node
# and in the spec, a mount (a volume the spec mounts there, what /proc/self/mountinfo lists); on the host, a folder
# already there (``systemdirs.made_in_system_folder``). ``/`` itself, the homes' parents and the per-container
# folders are not judged by that last clause (/data/checkpoints, ~/ck, /tmp/ck: their own rules and notes).
SYSTEM_FOLDERS = {
    "/bin": "the system's programs", "/boot": "the boot files", "/dev": "the devices", "/etc": "the system's "
    "configuration", "/home": "the image user's home", "/lib": "the system's libraries", "/lib32": "the system's "
    "libraries", "/lib64": "the system's libraries", "/proc": "the kernel's process files", "/root": "root's home",
    "/run": "the runtime's files", "/sbin": "the system's programs", "/sys": "the kernel's files", "/tmp": "the "
    "temporary folder (pods mount their own there)", "/usr": "the installed software", "/usr/bin": "the "
    "installed programs", "/usr/lib": "the installed libraries", "/usr/local": "the image's own software",
    "/usr/local/bin": "nodeweave-entrypoint and the launchers", "/var": "the system's state",
    "/run/nodeweave": "the job token nodeweave mounts", "/etc/nodeweave": "the hosts file nodeweave mounts",
    "/opt": "the add-on software", "/srv": "the services' data", "/var/lib": "the system's and services' state",
    "/var/log": "the system's logs", "/var/tmp": "the temporary folder kept across restarts",
    "/mnt": "a mount root (every mount below it)", "/media": "the removable media's mount root",
    "/run/media": "the removable media's mount root", "/Users": "the homes (macOS)",
    "/var/home": "the homes (Fedora Atomic)", "/var/opt": "/opt's packages' state",
    "/var/local": "/usr/local's packages' state", "/usr/src": "the system's sources",
}  # fmt: skip
# Of those, the folders a volume of the spec may be mounted at (spec.mounts): they hold nothing a container needs
# to start. A mount at any other (``SYSTEM``), or above one, would hide the image's own.
MOUNTABLE = ("/opt", "/srv", "/var/lib", "/var/log", "/var/tmp", "/mnt", "/media", "/run/media", "/Users",
             "/var/home", "/var/opt", "/var/local", "/usr/src")
SYSTEM = {folder: what for folder, what in SYSTEM_FOLDERS.items() if folder not in MOUNTABLE}
# The system folders a job's own folder may lie in without a mount of its own: the homes' parents and root's home
# (a home's folders are the user's), and the per-container ones (noted where they are: ``per_container``).
FREE_IN = ("/home", "/Users", "/var/home", "/media", "/run/media", "/root", "/tmp", "/var/tmp", "/run")
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


NAME_MAX, PATH_MAX = 255, 4095  # bytes: Linux's longest file name and path (limits.h; PATH_MAX counts the NUL)


def shape_problem(text):
    """Why no file can be made at the path ``text`` as written, or None: white space at an end
    (:func:`edge_space_problem`), a control character inside (a newline from a two-line ``$(...)`` or a YAML block
    scalar: one folder shown on two lines, and what no save means), a part longer than the kernel takes (NAME_MAX)
    or the whole (PATH_MAX): every save there fails with ENAMETOOLONG (walk16b B23/B24)."""
    problem = edge_space_problem(text)
    if problem:
        return problem
    control = next((char for char in text if ord(char) < 32 or ord(char) == 127), None)
    if control is not None:
        return (f"{text!r} holds a control character ({control!r}): copied from two lines? a file name with one is "
                "no folder a person means; give the path on one line")
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > PATH_MAX:
        return (f"{text[:40]!r}... is {size} bytes long: the kernel takes a path of at most {PATH_MAX}, so no save "
                "can be written there (a variable expanded into itself?)")
    part = max(text.split("/"), key=lambda name: len(name.encode("utf-8", "surrogateescape")))
    if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
        return (f"{text[:40]!r}... holds a name of {len(part.encode('utf-8', 'surrogateescape'))} bytes: the kernel "
                f"takes at most {NAME_MAX} for one file or folder name, so no save can be written there")
    return None


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
    problem = shape_problem(text)  # white space at an end (one folder read two ways), a newline, too long
    if problem:
        return problem
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
    for folder, what in SYSTEM_FOLDERS.items():
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


def system_folder_in(normal):
    """The system folder (``SYSTEM_FOLDERS``, or ``/``) the absolute, normalised path ``normal`` lies in: the
    parent of its first part that is no system folder (``/opt`` for ``/opt/ck/run1``, ``/var/lib`` for
    ``/var/lib/ck``, ``/`` for ``/data/ck``); ``normal`` itself when it is one."""
    parent = "/"
    parts = [part for part in normal.split("/") if part]
    for i in range(len(parts)):
        here = "/" + "/".join(parts[:i + 1])
        if here not in SYSTEM_FOLDERS:
            return parent
        parent = here
    return parent


def mount_counts(point):
    """Whether a mount at ``point`` is one a job's folder may lie on: one the spec could declare (not ``/``, not a
    folder the image needs, ``SYSTEM``, nor one above such, nor inside a folder the kernel or nodeweave fills).
    /etc/hosts, /dev/shm, /proc and a separate /var partition are mounts, but none is a place made for the job."""
    point = normal_path(point)
    if point == "/" or any(point.startswith(folder + "/") for folder in FILLED):
        return False
    return not any(folder == point or folder.startswith(point + "/") for folder in SYSTEM)


def in_system_folder(text, mounts, where):
    """Why the absolute folder ``text`` lies in a system folder on no mount made for it, or None (the table's last
    clause, for the spec and a node alike): ``/opt/ckpt`` inside a container is the image's own layer beside its
    software, gone with the container, unless a volume is mounted there. ``mounts``: the mount points known
    (the spec's volumes, workspace and cache; a node's /proc/self/mountinfo); ``where`` names them in the line."""
    if not text.startswith("/"):
        return None
    normal = normal_path(text)
    folder = system_folder_in(normal)
    if folder == normal or folder == "/" or folder in FREE_IN:
        return None  # the folder itself is judged by path_problem; / and the free ones by their own rules
    if any(tree == normal or normal.startswith(tree + "/") for tree in SYSTEM_TREES):
        return None  # path_problem refuses it outright
    covering = [m for m in mounts if mount_counts(m) and (normal == normal_path(m) or normal.startswith(
        normal_path(m).rstrip("/") + "/"))]
    if covering:
        return None
    return (f"{normal} is in {folder} ({SYSTEM_FOLDERS[folder]}) and on no mount {where}: saved there, the files "
            f"lie among the system's own (in a container, its image layer, gone with it)")


def on_no_mount_in_root(text, mounts):
    """Why the absolute folder ``text``, in ``/`` itself (``/ck``, ``/data/ck``: the table's last clause leaves
    ``/`` out, as ``/data/checkpoints`` is the documented place), is worth a word: no mount that counts
    (``mount_counts``) is at or above it, so in a container it is the image's own layer. None when a mount holds it,
    when it lies elsewhere (judged by ``in_system_folder``, noted by ``per_container``), or when no mount is known.
    validate says the same of ``recovery.checkpoint_dir`` on no volume of the spec (walk12b B14)."""
    if not text.startswith("/") or not mounts:
        return None
    normal = normal_path(text)
    if system_folder_in(normal) != "/" or normal == "/":
        return None
    if any(mount_counts(m) and (normal == normal_path(m) or normal.startswith(normal_path(m).rstrip("/") + "/"))
           for m in mounts):
        return None
    return (f"{normal} is on no mount of this node (/proc/self/mountinfo lists none at or above it; / itself does "
            "not count): in a container it is the container's own layer, so node 0 sees only its own saves, a "
            "replaced node none, and they are gone with the container; on a host's own disk only that host sees it")


IN_SYSTEM_FOLDER_ACCEPTED = ("a folder in /opt, /srv, /var/lib, /usr/local, /mnt ... only on a mount of its own (a "
                             "volume the spec mounts at it or above it)")


def mount_points(sysroot="/"):
    """The mount points /proc/self/mountinfo lists (under ``sysroot``, for captured trees), or () when it cannot be
    read. Field 5 of each line is the mount point, with space, tab, newline and backslash written as octal escapes
    (``\\040``), as the kernel's show_mountinfo writes them (Documentation/filesystems/proc.rst)."""
    import re  # here, not at the top: the start-up path imports nothing slow (tests/test_entrypoint_cli.py)

    from .bounded import MIB, read_text  # a captured tree's file may be anything: read as every file is

    path = os.path.join(sysroot or "/", "proc/self/mountinfo")
    try:
        lines = read_text(path, 16 * MIB, "the mount table", errors="replace").splitlines()
    except (OSError, ValueError):
        return ()
    points = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4 and fields[4].startswith("/"):
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return tuple(points)


# --- the folder a node keeps its own records in: $TMPDIR/nodeweave (walk14b B14, B15) --------------------------

def state_root(env):
    """``$TMPDIR/nodeweave`` (``/tmp/nodeweave`` with TMPDIR unset or empty): every folder a node keeps of its own
    lies in it, judged at start by :func:`state_root_problem`."""
    return os.path.join(env.get("TMPDIR") or "/tmp", "nodeweave")


STATE_ACCEPTED = ("TMPDIR set to the absolute path of a folder this user may write, not / nor a system folder "
                  "other than /tmp, /var/tmp or /root (a missing one is made, in an existing folder of this user's "
                  "that is not / nor a system folder), or unset (/tmp)")


def state_root_problem(env):
    """The line refusing the folder :func:`state_root` derives from TMPDIR, or None: the one rule for every folder
    a node keeps (its run records, hold, the recovery book, check-in records, the ranks' stall files, the DeepSpeed
    hostfile), applied at start and by ``--explain``/``--status``/``--node`` before anything is written, as the CLI
    judges its cache folder (``cachedir.cache_dir_problem``). TMPDIR must be absolute (a relative one or a ``~`` no
    shell expanded made ``rel/nodeweave`` or a folder named ``~`` in the workspace, which sync sends; walk14b
    B15), a folder, or one to be made in a folder of this user's (``/nonexistent`` was made directly in ``/``;
    ``/dev/null`` ended in a traceback, walk14b B14), not one the kernel fills (``/proc``), writable, and
    ``nodeweave`` in it a folder this user may write (another user's ``/tmp/nodeweave`` on a shared host). Here,
    below every module that reads the folder (``running.runstate``), so the start judges it importing nothing
    slow."""
    given = env.get("TMPDIR") or ""
    base = given or "/tmp"
    said = f"TMPDIR={given}" if given else "/tmp (TMPDIR unset)"
    own = os.path.join(base, "nodeweave")
    why = "the node keeps its records, the recovery book and the ranks' stall files in $TMPDIR/nodeweave"
    problem = (shape_problem(given) or unexpanded(given)) if given else None
    if problem is None and not os.path.isabs(base):
        problem = (f"{given!r} is a relative path: {own} would be made in whatever folder the node runs in (the "
                   "workspace, which sync sends to every node)")
    if problem is None:
        normal = normal_path(base)
        filled = next((folder for folder in FILLED if normal == folder or normal.startswith(folder + "/")), None)
        if filled is not None:
            problem = f"{normal} is {'in ' + filled + ', ' if normal != filled else ''}a folder {FILLED[filled]}"
    if problem is None:
        problem = _system_state_problem(normal)
    if problem is None:
        problem = _folder_problem(base, base)
        if problem is MISSING:
            problem = _missing_problem(normal)
    if problem is None:
        problem = _folder_problem(own, f"{own}, nodeweave's folder in it,", ": remove it, or set TMPDIR elsewhere")
        if problem is MISSING:
            problem = (None if not os.path.islink(own) else  # made at first use
                       f"{own}, nodeweave's folder in it, is a link to nothing: remove it, or set TMPDIR elsewhere")
    if problem is None:
        return None
    return f"{said}: {problem}; {why}; accepted: {STATE_ACCEPTED}"


# The system folders a node's records may go straight into: the temporary ones and root's home (TMPDIR=$HOME).
STATE_FREE = ("/tmp", "/var/tmp", "/root")


def _system_state_problem(normal):
    """Why TMPDIR ``normal`` is itself ``/`` or a system folder, or lies in one of the system's own trees, where it
    is or where its links lead, or None (walk17b B9: ``/srv``, ``/etc``, ``/usr`` passed because they exist, while
    ``/usr/x`` was refused: the records went into ``/srv/nodeweave``, ``/etc/nodeweave``)."""
    real = os.path.realpath(normal)
    for path in (normal, real) if real != normal else (normal,):
        led = f" (where {normal} leads)" if path != normal else ""
        if path == "/":
            return f"/{led} is the root of the file system: the records would go straight into /nodeweave"
        if path in SYSTEM_FOLDERS and path not in STATE_FREE:
            return (f"{path}{led} is a system folder ({SYSTEM_FOLDERS[path]}): the records would go into "
                    f"{path}/nodeweave, among the system's own")
        tree = next((tree for tree in SYSTEM_TREES if path.startswith(tree + "/")), None)
        if tree is not None:
            return f"{path}{led} is inside {tree} ({SYSTEM_TREES[tree]})"
    return None


MISSING = "missing"  # _folder_problem: nothing at that path (what to do about it is the caller's rule)


def _folder_problem(path, name, remedy=""):
    """Why ``path`` (``name`` in the line) is not a folder this user may write, :data:`MISSING` where nothing is
    there, None where it is such a folder: the one look at TMPDIR and at ``nodeweave`` in it. ``remedy`` follows
    a refusal of something that is there but not a folder."""
    import stat

    try:
        status = os.stat(path)
    except FileNotFoundError:
        return MISSING
    except NotADirectoryError:
        return f"{name} goes through a file, not a folder"
    except OSError as err:
        return f"{name} cannot be looked at ({err.strerror or err})"
    if not stat.S_ISDIR(status.st_mode):
        kind = "a file" if stat.S_ISREG(status.st_mode) else "a device, a pipe or a socket"
        return f"{name} is {kind}, not a folder{remedy}"
    if not os.access(path, os.W_OK | os.X_OK):
        if status.st_uid != os.getuid():
            return f"{name} belongs to user {status.st_uid}, and this user ({os.getuid()}) may not write it (a shared /tmp?)"
        return f"{name} is a folder this user ({os.getuid()}) may not write"
    return None


def _missing_problem(normal):
    """Why the missing TMPDIR ``normal`` is not to be made, or None: it is made at first use only in an existing
    folder this user may write that is not ``/`` itself nor a system folder (walk14b B15: ``/nonexistent`` was
    made directly in ``/``), as the CLI makes a missing cache folder."""
    parent = os.path.dirname(normal)
    if parent == "/":
        return f"{normal} does not exist, and would be made directly in / (the root of the file system)"
    if parent in SYSTEM_FOLDERS and parent not in FREE_IN:
        return f"{normal} does not exist, and would be made in the system folder {parent} ({SYSTEM_FOLDERS[parent]})"
    if not os.path.isdir(parent):
        return f"{normal} does not exist, nor does the folder above it ({parent}), which nothing would make"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{normal} does not exist, and {parent}, where it would be made, is a folder this user may not write"
    return None


def check_state_root(env):
    """:func:`state_root_problem` raised as the refusal of a bad variable (exit 2)."""
    from .errors import UsageError

    problem = state_root_problem(env)
    if problem is not None:
        raise UsageError(problem)
