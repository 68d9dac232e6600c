"""The folders no verb may write nodeweave's files into or sync over: ``/``, system folders, mount roots and the
parents of homes. A leaf (it imports nothing of nodeweave's), so the path judges of every room can share it.
"""

ROOTISH = {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt",
           "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin",
           "/usr/lib", "/usr/local", "/usr/local/bin", "/var", "/var/lib", "/var/log", "/var/tmp",
           "/mnt", "/media", "/run/media", "/Users", "/var/home"}  # mount roots (every mount below), homes' parents


def system_folder(path: str) -> bool:
    """``/`` or a system folder (``/etc``, ``/usr``, ``/home``, ...): what no sync may send from or write over."""
    return "/" + "/".join(p for p in path.split("/") if p) in ROOTISH
