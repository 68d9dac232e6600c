"""Read a file a user names without trusting it to end: at most ``cap + 1`` bytes, whatever it is.

Why one helper for every such read (the spec, a hosts file, a state or run record, a token file):
a path can name a device or a pipe (``--spec /dev/zero``, ``--spec <(yes)``, a record linked to
``/dev/urandom``), which ``stat`` reports as size 0 and a plain ``read()`` follows until the machine
runs out of memory. Reading ``cap + 1`` bytes and refusing when they all came is the only check
that holds for every kind of file. Stdlib only: the entrypoint and the CLI both use it.
"""

import errno
import fcntl
import os
import stat

MIB = 1024 * 1024
# A spec, a hosts file, a requirements file: pages of text a person writes.
TEXT_CAP = MIB
# A record nodeweave writes (cluster.json, run.json, rendered.json): small JSON, far below this.
RECORD_CAP = 16 * MIB
# A file render writes (the entrypoint zipapp is the largest, under 2 MiB), read back to compare.
RENDERED_CAP = 64 * MIB


class TooLarge(OSError):
    """``path`` held more than ``cap`` bytes (or never ended): an OSError, so every reader's handler names it."""

    def __init__(self, path, cap, what):
        super().__init__(errno.EFBIG, f"more than {size_text(cap)}: too large for {what} (a device, an endless "
                                      "pipe or the wrong file?)", str(path))
        self.cap = cap
        self.what = what


def size_text(size):
    return f"{size // MIB} MiB" if size >= MIB and size % MIB == 0 else f"{size // 1024} KiB" if size >= 1024 else \
        f"{size} bytes"


def _open(path):
    """``path`` opened for reading without waiting for a writer: a named FIFO nobody writes to blocked ``open``
    forever (``validate --spec FIFO`` hung); opened non-blocking, then blocking again, its read ends at once
    when no one has it open for writing (POSIX: end of file), and waits as before for a writer that has."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, cap, what):
    """The bytes of ``path``, at most ``cap``; :class:`TooLarge` when there are more (``what``: the file's kind);
    :class:`NothingWritten` for a named pipe that gave nothing (read as empty, it was "the spec is empty")."""
    with _open(path) as handle:
        data = read_stream(handle, cap, what, path)
        if not data and stat.S_ISFIFO(os.fstat(handle.fileno()).st_mode):
            raise NothingWritten(path)
        return data


class NothingWritten(OSError):
    """A named pipe that nothing was written to: no writer had it open, or one closed it without a byte."""

    def __init__(self, path):
        super().__init__(errno.ENODATA, "a named pipe that nothing was written to (no program had it open for "
                                        "writing); give a regular file, or a pipe a program writes, as <(cmd) "
                                        "makes", str(path))


def file_kind(mode):
    """What ``mode`` (from ``lstat``) is, in the words a message uses: "a symbolic link", "a named pipe", ..."""
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
             (stat.S_ISSOCK, "a socket"))
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def what_is_there(path):
    """What ``path`` is, its links followed, in a message's words ("a file", "a named pipe", "a socket", ...): the
    one way a refusal of a non-folder says what it found (walk12 B16: a named pipe was said as "a file")."""
    try:
        return file_kind(os.stat(path).st_mode)
    except OSError:
        return "not a folder"


def not_a_folder(path):
    """Why ``path`` is no folder to read, in the words of every option naming one (``sync`` SRC, ``--sysroot``,
    ``image build --context``, ``--wheelhouse``, ``image.project.source``), or "" for a folder: "does not exist",
    "is a symbolic link to X, which does not exist", "is not a directory" (walk12 A4, A8: a missing path was said as
    "is not a directory")."""
    if os.path.isdir(path):
        return ""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "does not exist"
    if stat.S_ISLNK(mode):
        try:
            return "is a symbolic link to {}, which does not exist".format(os.readlink(path))
        except OSError:
            return "is a symbolic link that leads nowhere"
    return "is not a directory"


class NotOwnFile(OSError):
    """A file nodeweave writes itself (a state or run record, a run's log) that is a link, a pipe, a device or a
    folder: nodeweave never made it so, and never reads through it (issue 43, W9)."""

    def __init__(self, path, mode):
        kind = file_kind(mode)
        if stat.S_ISLNK(mode):
            try:
                kind += f" (to {os.readlink(path)})"
            except OSError:
                pass
        super().__init__(errno.EINVAL, f"is {kind}, not a file nodeweave wrote", str(path))


def own_file(path):
    """``path`` when it is a regular file (or absent: FileNotFoundError, as a read gives); :class:`NotOwnFile` for
    anything else there. For what nodeweave wrote itself: a spec or a hosts file may be a link or a pipe, a record
    may not."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotOwnFile(path, mode)
    return path


def read_own(path, cap, what):
    """``read_text`` of a file nodeweave wrote itself, refused (:class:`NotOwnFile`) unless it is a regular file."""
    return read_text(own_file(path), cap, what)


def read_stream(handle, cap, what, name):
    """At most ``cap`` bytes of an open binary ``handle`` (standard input, say); ``name`` is what an error shows."""
    data = handle.read(cap + 1)
    if len(data) > cap:
        raise TooLarge(name, cap, what)
    return data


class NotText(UnicodeDecodeError):
    """A file of the user's that is not UTF-8 text (a Latin-1 comment in a .dockerignore, walk7 A33): one line
    naming the file, the line, the byte and the remedy. Still a UnicodeDecodeError, so each reader's own handler
    takes it; ``cli.main`` says it as it is where none did. ``variable``: ``path`` is the name of an environment
    variable (a host list such as ``SM_HOSTS``, walk14b B8), whose remedy is to set it again; a file that starts
    with a UTF-16 byte-order mark (Notepad's "Unicode") is said as UTF-16 (walk14b B6)."""

    def __init__(self, path, err, what, variable=False):
        super().__init__(err.encoding, err.object, err.start, err.end, err.reason)
        self.path, self.what, self.variable = path, what, variable

    def __str__(self):
        name = self.path if self.variable else os.fsdecode(self.path)
        if not self.variable and self.object.startswith(UTF16_BOMS):
            return (f"{name} is UTF-16 text (it starts with a UTF-16 byte-order mark, as Notepad's \"Unicode\" "
                    f"writes), and nodeweave reads {self.what} as UTF-8; save it as UTF-8 (iconv -f utf-16 -t utf-8)")
        line = self.object.count(b"\n", 0, self.start) + 1
        where = f"{name}, line {line}" if not self.variable or b"\n" in self.object else name
        remedy = "set it again as UTF-8 text" if self.variable else "save it as UTF-8 (iconv -f latin1 -t utf-8)"
        return (f"{where}: byte 0x{self.object[self.start]:02x} is not UTF-8 text, and nodeweave reads {self.what} "
                f"as UTF-8; {remedy}")


UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def text_of(data, path, what, errors="strict", variable=False):
    """``data`` decoded as UTF-8, a leading UTF-8 byte-order mark skipped; :class:`NotText` names ``path`` (a file,
    or with ``variable`` a variable's name), the line and the byte that is not."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as err:
        raise NotText(path, err, what, variable) from None


def read_text(path, cap, what, errors="strict"):
    """``read_bytes`` decoded as UTF-8; :class:`NotText` names the file, line and byte that is not. A leading UTF-8
    byte-order mark (Notepad's "UTF-8 with BOM") is skipped, as the spec's YAML reader skips it: every file read
    here, a hosts file's first host too, is what the editor shows (walk10 A6: ``\ufeffgpu01`` was no host name)."""
    return text_of(read_bytes(path, cap, what), path, what, errors)


def read_tail(path, cap, errors="replace", own=False):
    """The last ``cap`` bytes of ``path`` as text: a run's log can hold gigabytes, its end is what is shown.

    A file that cannot seek (a pipe, a device) gives its first ``cap`` bytes instead, never more. ``own``: a log
    nodeweave wrote, refused (:class:`NotOwnFile`) unless it is a regular file.
    """
    with _open(own_file(path) if own else path) as handle:
        try:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - cap))
        except OSError:
            pass
        return handle.read(cap).decode("utf-8", errors)
