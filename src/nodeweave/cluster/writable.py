"""Can the image's user write the job's folders? Asked on this machine before ``up`` starts anything.

nodeweave's images run as uid 1000, group 0 (images/*/Dockerfile: ``useradd --uid 1000 --gid 0``). A
workspace or checkpoint folder it cannot write (a team folder owned by root, mode 0755) makes every
rank fail its first save with the same ``PermissionError``, which recovery would then read as a node's
fault, node after node. So the local target reads the folders' owner and mode here, as the
container's user maps onto this machine (rootful podman or docker: uid 1000, gid 0; rootless podman:
the user's subordinate uid 1000, and the user's own group for group 0): the checkpoint folder
(``recovery.checkpoint_dir``) it must write is refused (exit 3) in one line naming the folder, its
owner and the fix; a workspace it cannot write is a note (many jobs only read their code).
ACLs and SELinux labels are not read.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from nodeweave.entrypoint.systemfolders import normal_path
from nodeweave.errors import EnvironmentProblem

IMAGE_UID, IMAGE_GID = 1000, 0  # the images' user (images/*/Dockerfile)


@dataclass(frozen=True)
class HostUser:
    """The image's user as this machine's kernel sees it inside a container of this engine."""

    uid: int
    gid: int
    rootless: bool

    def fix(self, folder: Path) -> str:
        """The two ways to let this user write ``folder``: hand it over, or the one chmod whose bits apply to
        this user (the owner's, the group's when the folder's group is the user's, else the others'). A link is
        named by where it leads: ``chown -R`` of a link changes the link alone, while ``chmod`` changes its target,
        so each acts on the folder the job writes, and says so (walk6 M3)."""
        folder = Path(os.path.realpath(folder))
        found = folder.stat()
        path = shell_path(folder)  # pasted as is: a space in the name must not make two paths of it (walk6 W62)
        chmod = f"`chmod {self.bits(found.st_uid, found.st_gid, found.st_mode)} {path}`"
        if found.st_uid == self.uid:  # already the user's: only its own bits are missing
            return chmod
        owned = self.bits(self.uid, -1, found.st_mode)  # the owner's bits once it is handed over
        then = f" && {self._as_it} chmod {owned} {path}" if found.st_mode & 0o300 != 0o300 else ""
        runner = " " if found.st_uid == os.geteuid() else f", as its owner {_user_name(found.st_uid)}: "
        return f"`{self._as_it} chown -R {IMAGE_UID}:{IMAGE_GID} {path}{then}` (or{runner}{chmod})"

    def make(self, folder: Path) -> str:
        """The fix for a folder that does not exist yet: make it and hand only it to the image's user (its
        parent, often the whole project with its .git, stays the user's). The chmod is for whoever can make a
        folder there: the parent's owner, named when that is not you; it is judged on the group ``mkdir`` gives
        the folder when that owner runs it (the parent's with setgid, else the owner's own group). A ``chgrp 0``
        would need root from anyone not in group 0 (replay6b N8), so where that group is not known (an owner with
        no passwd entry) the chmod is ``go+w``, which lets the image's user in whichever group it gets."""
        folder = Path(os.path.realpath(folder))  # through a link, to the folder the job would write
        parent = existing(folder).stat()
        owner = parent.st_uid
        gid = parent.st_gid if parent.st_mode & stat.S_ISGID else _primary_gid(owner)
        mode = 0o777 & ~_umask()
        path = shell_path(folder)
        bits = self.bits(owner, gid, mode) if gid is not None else "go+w" if mode & 0o011 == 0o011 else "go+wx"
        above = existing(folder)
        runner = "" if owner == os.geteuid() else f", as {_user_name(owner)}, the owner of {shell_path(above)}: "
        return (f"`mkdir -p {path} && {self._as_it} chown {IMAGE_UID}:{IMAGE_GID} {path}` "
                f"(or{runner or ' '}`mkdir -p {path} && chmod {bits} {path}`)")

    def workspace_fix(self, workspace: Path) -> str:
        """Let the image's user write the one folder a script saves to, not the whole workspace: ``chown -R`` of
        the project hands its script, .git and .nodeweave/ (the job's token) to another uid (walk6 W61)."""
        outputs = workspace / "outputs"
        first = self.fix(outputs) if outputs.is_dir() else self.make(outputs)
        return (f"give it only the folder the script saves to, such as outputs/: {first}; handing over the whole "
                f"workspace (`{self._as_it} chown -R {IMAGE_UID}:{IMAGE_GID} {shell_path(workspace)}`) would take "
                "your own files (the script, .git, .nodeweave/) from you")

    @property
    def _as_it(self) -> str:
        """What runs a command as the owner of the image user's files: root, or rootless podman's namespace."""
        return "podman unshare" if self.rootless else "sudo"

    def bits(self, uid: int, gid: int, mode: int) -> str:
        """chmod's words that let this user create files in a folder of ``uid``:``gid``, ``mode``."""
        who = "u" if uid == self.uid else "g" if gid == self.gid else "o"
        shift = {"u": 6, "g": 3, "o": 0}[who]
        return f"{who}+wx" if not mode >> shift & 1 else f"{who}+w"


def shell_path(folder: Path) -> str:
    """``folder`` as a hint's command line must spell it to be pasted: shell-quoted where it needs it."""
    import shlex

    return shlex.quote(str(folder))


def _primary_gid(uid: int) -> Optional[int]:
    """The group ``mkdir`` gives a folder ``uid`` makes (no setgid parent): its primary group; None if unknown."""
    import pwd

    if uid == os.geteuid():
        return os.getegid()
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return None


def _user_name(uid: int) -> str:
    """``name (uid N)``, or ``uid N`` for an id with no passwd entry."""
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _umask() -> int:
    """This process's umask, read without changing it (os.umask sets it for every thread meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def image_user(engine: str) -> Optional[HostUser]:
    """uid 1000 / gid 0 of the image, mapped onto this machine; None where the mapping is not known."""
    if os.geteuid() == 0 or engine == "docker":  # rootful: the ids are the host's (docker: its root daemon)
        return HostUser(IMAGE_UID, IMAGE_GID, rootless=False)
    start = _subuid_start()
    if start is None:
        return None
    return HostUser(start + IMAGE_UID - 1, os.getegid(), rootless=True)  # container 0 is you, 1 is start


def _subuid_start() -> Optional[int]:
    import pwd

    try:
        names = {pwd.getpwuid(os.geteuid()).pw_name, str(os.geteuid())}
        lines = Path("/etc/subuid").read_text(encoding="utf-8").splitlines()
    except (OSError, KeyError, UnicodeDecodeError):
        return None
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[0] in names and parts[1].isdigit() and parts[2].isdigit() \
                and int(parts[2]) >= IMAGE_UID:
            return int(parts[1])
    return None


def can_write(folder: Path, user: HostUser) -> bool:
    """Whether ``user`` may create files in ``folder`` (owner, group and other bits; root-like ids write all)."""
    found = folder.stat()
    if user.uid == 0:
        return True
    if found.st_uid == user.uid:
        return bool(found.st_mode & stat.S_IWUSR and found.st_mode & stat.S_IXUSR)
    if found.st_gid == user.gid:
        return bool(found.st_mode & stat.S_IWGRP and found.st_mode & stat.S_IXGRP)
    return bool(found.st_mode & stat.S_IWOTH and found.st_mode & stat.S_IXOTH)


def _led(folder: Path) -> str:
    """`` (a link to X)`` when ``folder`` is reached through a link: the remedy that follows names X."""
    real = os.path.realpath(folder)
    return f" (a link to {real})" if real != os.path.abspath(folder) else ""


def existing(folder: Path) -> Path:
    """``folder``, or its nearest parent that exists (where the container would have to make it)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def owner_text(folder: Path) -> str:
    import grp
    import pwd

    found = folder.stat()
    try:
        user = pwd.getpwuid(found.st_uid).pw_name
    except KeyError:
        user = str(found.st_uid)
    try:
        group = grp.getgrgid(found.st_gid).gr_name
    except KeyError:
        group = str(found.st_gid)
    return f"owned by {user}:{group} ({found.st_uid}:{found.st_gid}), mode {stat.S_IMODE(found.st_mode):04o}"


def checkpoint_on_host(spec, workspace: Path) -> Optional[Path]:
    """``recovery.checkpoint_dir`` (a path in the container) as a folder of this machine, through the workspace
    mount or a volume's host_path; None when it is in neither (the image's own file system)."""
    folder = spec.recovery.checkpoint_dir
    if not folder:
        return None
    inside = normal_path(posixpath.join(spec.workspace.path, folder))
    mounts = [(spec.workspace.path, workspace)] + [(v.path, _host(v.host_path, workspace)) for v in spec.volumes
                                                    if v.host_path and not v.read_only]
    for path, host in sorted(mounts, key=lambda m: len(m[0]), reverse=True):
        if inside == path or inside.startswith(path.rstrip("/") + "/"):
            return host / posixpath.relpath(inside, path)
    return None


def _host(host_path: str, spec_dir: Path) -> Path:
    from nodeweave.specpath import host_folder

    found = host_folder(host_path, spec_dir)  # an absolute or ~ one as written, links kept
    return found if host_path.startswith(("/", "~")) else found.resolve()


def workspace_on_host(spec, spec_dir: Path) -> Path:
    return _host(spec.workspace.host_path, spec_dir)


def check_folders(spec, spec_dir: Path, engine: str) -> List[str]:
    """Refuse (exit 3) a checkpoint folder the image's user cannot write; notes for a workspace it cannot."""
    user = image_user(engine)
    if user is None:
        return []
    workspace = workspace_on_host(spec, spec_dir)
    notes = []
    if workspace.is_dir() and not can_write(workspace, user):
        notes.append(f"the workspace {workspace} ({owner_text(workspace)}) is read-only to the image's user "
                     f"(uid {IMAGE_UID}, group {IMAGE_GID}): a script that saves there fails; "
                     f"{user.workspace_fix(workspace)}")
    folder = checkpoint_on_host(spec, workspace)
    if folder is not None:
        there = existing(folder)
        if there.is_dir() and not can_write(there, user):
            made = "" if there == folder else f" (it does not exist; its nearest folder {there} would hold it)"
            raise EnvironmentProblem(
                f"recovery.checkpoint_dir {spec.recovery.checkpoint_dir} is {folder}{_led(folder)} on this "
                f"machine{made}, "
                f"{owner_text(there)}, which the image's user (uid {IMAGE_UID}, group {IMAGE_GID}) cannot write: "
                f"every rank's first save would fail; {user.fix(there) if there == folder else user.make(folder)}")
    return notes


def check_folders_as_you(spec, workspace: Path, why: str) -> List[str]:
    """Where the nodes' steps run as this very user on storage this machine shares (Slurm: pyxis, Apptainer and
    the host runtime keep your uid): a checkpoint folder you cannot write (or make) is refused (exit 3) as above,
    asked of the kernel (``os.access``: ACLs included); a workspace you cannot write is a note."""
    notes = []
    if workspace.is_dir() and not os.access(workspace, os.W_OK | os.X_OK):
        notes.append(f"the workspace {workspace} ({owner_text(workspace)}) is read-only to you, and {why}: a script "
                     "that saves there fails")
    folder = checkpoint_on_host(spec, workspace)
    if folder is not None:
        there = existing(folder)
        if there.is_dir() and not os.access(there, os.W_OK | os.X_OK):
            made = "" if there == folder else f" (it does not exist; its nearest folder {there} would hold it)"
            raise EnvironmentProblem(
                f"recovery.checkpoint_dir {spec.recovery.checkpoint_dir} is {folder}{_led(folder)} on the shared "
                f"storage{made}, {owner_text(there)}, which you (uid {os.geteuid()}) cannot write, and {why}: every "
                f"rank's first save would fail; `chmod u+w {shell_path(Path(os.path.realpath(there)))}` if it is yours, else ask its owner, or set "
                "recovery.checkpoint_dir to a folder you can write")
    return notes


def unchecked_note(spec, target: str, where: str) -> List[str]:
    """What is not checked from here, said in the plan: the checkpoint folder lives on the nodes (``where``)."""
    if not spec.recovery.checkpoint_dir:
        return []
    return [f"not checked from here: whether the nodes can write recovery.checkpoint_dir "
            f"{spec.recovery.checkpoint_dir} (target {target}: {where}); a folder they cannot write fails every "
            "rank's first save"]
