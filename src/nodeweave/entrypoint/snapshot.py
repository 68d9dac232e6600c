"""Capture this machine as a tree ``--sysroot`` reads: exactly the files detection reads, plus GPU tool text.

For bug reports (``nodeweave doctor --capture DIR``) and test fixtures: the
same detection the entrypoint and doctor run is run once against ``/`` while
every :class:`~nodeweave.entrypoint.detection.sysfs.Root` read, listing, existence
test and link lookup is recorded; then each recorded path is copied into
DIR with sysfs' symlinks kept as symlinks (absolute targets made relative,
so nothing in the tree points back at the live machine). ``/proc/self`` is
copied as a folder. Kubernetes service-account files (a token) are never
copied. Beside the tree, ``DIR/capture/`` holds ``nvidia-smi`` and
``amd-smi`` text (where those tools exist), the live ``--explain --json``
node (so a test can check that detection on the tree equals detection on
the machine), and ``provenance.json``. Stdlib only, like the entrypoint.
"""

import json
import os
import platform
import shutil
import subprocess
import sys
import time

from .detection import sysfs

NEVER = ("/var/run/secrets", "/run/secrets")  # service-account tokens: not for a bug report
# Where a live root asks the kernel (uname, statvfs) and a sysroot reads a file instead (detect_host.py):
# those files too; of /proc/mounts only the /dev/shm line (what the sysroot branch reads).
ALSO = ("/etc/hostname", "/proc/mounts", "/proc/meminfo")
MAX_BYTES = 1 << 20
RECORDED = ("read", "listdir", "exists", "isdir", "link_name", "realpath")
# (file name under capture/, argv): the text the GPU checks compare detection with (benchmarks/gpu_checks.py).
TOOLS = (
    ("query.csv", ["nvidia-smi", "--query-gpu=name,pci.bus_id,count", "--format=csv,noheader"]),
    ("nvlink-status.txt", ["nvidia-smi", "nvlink", "--status"]),
    ("topo-m.txt", ["nvidia-smi", "topo", "-m"]),
    ("nvidia-smi-q.txt", ["nvidia-smi", "-q"]),
    ("amd-smi-static.json", ["amd-smi", "static", "--json"]),
    ("amd-smi-topology.txt", ["amd-smi", "topology"]),
)
# --recovery off: a one-node plan of the node's detection, whatever the job's recovery says (a recovery job's node
# would otherwise be refused as one node without spares)
EXPLAIN = ["--no-wait", "--launcher", "command", "--nnodes", "1", "--node-rank", "0", "--master-addr", "127.0.0.1",
           "--recovery", "off", "--", "true"]


def recording(run):
    """``run()`` with every live Root access recorded; returns (result, {path: {kinds}})."""
    seen = {}
    originals = {name: getattr(sysfs.Root, name) for name in RECORDED}

    def wrap(name, original):
        def recorded(self, path, *args, **kwargs):
            if self.real:
                seen.setdefault(path, set()).add(name)
            return original(self, path, *args, **kwargs)
        return recorded

    for name, original in originals.items():
        setattr(sysfs.Root, name, wrap(name, original))
    try:
        return run(), seen
    finally:
        for name, original in originals.items():
            setattr(sysfs.Root, name, original)


def detect_node(env, sysroot="/"):
    """What the entrypoint's ``--explain`` and doctor's rules read: the plan for one node, and its node."""
    from .core import build_plan
    from .planning.rules import RULES, Context, evaluate
    from .planning.settings import parse

    settings = parse(["--sysroot", sysroot] + EXPLAIN, env)
    plan = build_plan(settings, partial=True, audit=True)
    evaluate(RULES, Context(plan.node, env, sysfs.Root(sysroot), audit=True))
    return json.loads(json.dumps(plan.to_dict()["node"], default=str))


def _never(path):
    return any(path == p or path.startswith(p + "/") for p in NEVER)


def _place_link(dest, path, target):
    out = dest + path
    if os.path.lexists(out):
        return
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.isabs(target):  # inside the tree, never back to the live machine
        target = os.path.relpath(target, os.path.dirname(path))
    os.symlink(target, out)


def copy_path(dest, path, depth=0):
    """Copy ``path`` (live) into ``dest``: its symlinks as symlinks, then the file or folder it names."""
    if depth > 40 or _never(path):
        return None
    parts = [part for part in path.split("/") if part]
    here = ""
    for index, part in enumerate(parts):
        here += "/" + part
        if here != "/proc/self" and os.path.islink(here):
            target = os.readlink(here)
            _place_link(dest, here, target)
            resolved = os.path.normpath(os.path.join(os.path.dirname(here), target))
            rest = "/".join(parts[index + 1:])
            return copy_path(dest, resolved + ("/" + rest if rest else ""), depth + 1)
    _place(dest, here or "/")
    return here or "/"


def _place(dest, path):
    out = dest + path
    if os.path.isdir(path):
        os.makedirs(out, exist_ok=True)
    elif os.path.isfile(path) and not os.path.exists(out):
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_BYTES)
        except OSError:  # an unpopulated GID entry answers EINVAL: absent in the tree, as the reader sees it
            return
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(data)


def copy_listing(dest, path):
    """A listed folder's entries, so the tree lists the same names: links as links, folders, empty files."""
    real = copy_path(dest, path)
    if real is None or not os.path.isdir(real):
        return
    for name in os.listdir(real):
        entry = real + "/" + name if real != "/" else "/" + name
        if _never(entry) or os.path.lexists(dest + entry):
            continue
        if os.path.islink(entry):
            _place_link(dest, entry, os.readlink(entry))
        elif os.path.isdir(entry):
            os.makedirs(dest + entry, exist_ok=True)
        else:
            open(dest + entry, "wb").close()  # listed, never read: its name is what detection saw


def tool_text(argv, env):
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{argv[0]} failed: {err}\n"
    return out.stdout if out.returncode == 0 else f"{argv[0]} exited {out.returncode}: {out.stderr.strip()}\n"


CLAIM = "capture"  # the capture's own folder inside DEST, made first and exclusively: the folder is this capture's


def claim(dest):
    """Take ``dest`` (new or found empty) for this capture before anything is copied, nothing a user owns written
    over (the CLI's one write rule, nodeweave.newfile): its ``capture/`` folder made exclusively (a second capture into
    the same folder started at the same moment fails here, exit 2, and writes nothing), then ``dest`` read again
    (a file another writer put there after the emptiness check: this capture's folder taken back, ValueError)."""
    os.makedirs(dest, exist_ok=True)
    info = os.path.join(dest, CLAIM)
    try:
        os.mkdir(info)
    except FileExistsError:
        raise ValueError(f"{dest}: another capture began writing into it after this one started; it is kept as it "
                         "is: give a new or empty folder") from None
    others = sorted(set(os.listdir(dest)) - {CLAIM})
    if others:
        os.rmdir(info)
        raise ValueError(f"{dest}: {others[0]!r}{' and more' if len(others) > 1 else ''} appeared there after this "
                         "capture started (another writer?); nothing was written and it is kept: give a new or empty "
                         "folder")


def capture(dest, env=None, note=""):
    """Write the capture of this machine to ``dest`` (a new or empty folder); returns the provenance."""
    env = dict(os.environ) if env is None else dict(env)
    if os.path.exists(dest) and os.listdir(dest):
        raise ValueError(f"{dest} is not empty; the capture goes into a new or empty folder")
    claim(dest)
    node, seen = recording(lambda: detect_node(env))
    dest = os.path.abspath(dest)
    for path, kinds in sorted(seen.items()):
        if "listdir" in kinds:
            copy_listing(dest, path)
        copy_path(dest, path)
    for path in ALSO:
        copy_path(dest, path)
    mounts = os.path.join(dest, "proc", "mounts")
    if os.path.isfile(mounts):
        with open(mounts) as f:
            kept = [line for line in f if len(line.split()) > 1 and line.split()[1] == "/dev/shm"]
        with open(mounts, "w") as f:
            f.writelines(kept)
    info = os.path.join(dest, "capture")
    os.makedirs(info, exist_ok=True)
    tools = []
    for name, argv in TOOLS:
        text = tool_text(argv, env)
        if text is not None:
            tools.append(" ".join(argv))
            with open(os.path.join(info, name), "w") as f:
                f.write(text)
    with open(os.path.join(info, "node.json"), "w") as f:
        json.dump(node, f, indent=1, sort_keys=True)
    gpus = node.get("gpus") or {}
    provenance = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "kernel": platform.release(),
                  "gpus": f"{gpus.get('count', 0)} x {gpus.get('model') or 'none'}", "driver": gpus.get("driver"),
                  "visible": {k: env[k] for k in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
                              if k in env},
                  "paths_read": len(seen), "tools": tools, "note": note,
                  "made_by": "nodeweave doctor --capture (src/nodeweave/entrypoint/snapshot.py)"}
    with open(os.path.join(info, "provenance.json"), "w") as f:
        json.dump(provenance, f, indent=1, sort_keys=True)
    return provenance


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2) or argv[0].startswith("-"):
        print("usage: python -m nodeweave.entrypoint.snapshot DIR [NOTE]", file=sys.stderr)
        return 2
    try:
        provenance = capture(argv[0], note=argv[1] if len(argv) > 1 else "")
    except ValueError as err:
        print(f"capture: {err}", file=sys.stderr)
        return 2
    print(json.dumps(provenance, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
