"""The workspace folders a job's own files may not be: the workspace itself, nodeweave's state (``.nodeweave/``),
the run folders (``runs/``) and the trees ``nodeweave render`` writes (``images/``, ``compose/``, ...).

One judge for every field or option naming a folder the job fills (``recovery.checkpoint_dir`` and the entrypoint's
``NODEWEAVE_CHECKPOINT_DIR``, ``--runs-dir``): node 0 scans the checkpoint folder for the newest complete save at
every restart, and ``runs ls`` reads every folder under the runs folder, so either mixed with the other, or with
nodeweave's own files, is read as what it is not (walk6, W17, W41 and W76). Stdlib only: the entrypoint judges with
it too, so the spec and a node apply the same rule.
"""

import os
import posixpath

from .systemfolders import normal_path  # the one normalisation every folder rule shares (walk10 B4/B6)

STATE_DIR = ".nodeweave"  # beside the spec: nodeweave's own state (jobstate.py keeps it)
# The top folders `nodeweave render` writes (each target's ``roots`` in targets/registry.py; a test keeps the two
# equal): named here so the spec's rules judge a folder without loading the renderers, which load the spec.
RUNS = "runs"  # beside the spec: the run folders (cluster/runfolder.py writes them)
RENDERED_TREES = ("compose", "entrypoint", "images", "jobset", "kubeflow", "manifests", "openshift", "slurm")
CHECKPOINT_DIR_ACCEPTED = "a folder of the script's saves alone, relative to workspace.path, e.g. checkpoints"
# How far node 0's scan of the checkpoint folder reads (recovery.checkpoints), here so a node 0's claim on the folder
# meets another job's claim as deep as the scan would meet its saves (running.claim, walk17b B19).
SEARCH_DEPTH = 3     # folders below ``folder`` looked into for saves (checkpoints/run-<date>/checkpoint-N)
SEARCH_FOLDERS = 512  # and at most this many of them: a dataset in the folder must not make a restart slow
MIXED = ("node 0 would read it as the script's saves at every restart, and the script would save among those "
         "files")


def nodeweaves(rel: str) -> str:
    """What the workspace-relative folder ``rel`` is when it is the workspace itself or nodeweave's, else ''."""
    normal = normal_path(rel) if rel else "."
    if normal == ".":
        return "the workspace itself (the script, the spec and nodeweave's files are there)"
    top = normal.split("/")[0]
    if top == STATE_DIR:
        return f"in {STATE_DIR}/, nodeweave's own state"
    if top == RUNS:
        return f"in {RUNS}/, the run folders nodeweave writes (`nodeweave runs ls` reads each)"
    if top in RENDERED_TREES:
        return f"in {top}/, a tree `nodeweave render` writes (and `render --prune` removes from)"
    return ""


def _named(rel: str, script) -> str:
    """What workspace-relative ``rel`` is by its name: nodeweave's, or the training script (or inside it)."""
    what = nodeweaves(rel)
    script_rel = normal_path(script) if script else ""
    if not what and script_rel and not script_rel.startswith("/") and (
            rel == script_rel or rel.startswith(script_rel + "/")):
        what = f"the training script {script}"
    return what


class Led:
    """Where a workspace path that is, or passes through, a symbolic link leads: ``shown`` as the link says it
    (``/etc``, ``..``), ``real`` the folder reached, ``inside`` its workspace-relative path or None when it leaves
    the workspace, ``absolute`` whether the link names an absolute path (read as written wherever it is followed:
    in a container, that path of the container's), ``dangling`` the target of a link along it that leads to
    nothing (None when each leads somewhere: a folder below one not made yet is judged where it would be made)."""

    def __init__(self, shown, real, inside, absolute, dangling):
        self.shown, self.real, self.inside, self.absolute, self.dangling = shown, real, inside, absolute, dangling


def link_leads(on_disk, rel):
    """The one resolver of a link among the job's folders (the spec's ``recovery.checkpoint_dir`` and the
    entrypoint's NODEWEAVE_CHECKPOINT_DIR): a :class:`Led`, or None when ``rel`` under ``on_disk`` is no link. A check judges ``real``, where the link leads, as it would judge that path written out (walk6 M3)."""
    path = os.path.join(on_disk, rel)
    parts = [p for p in normal_path(rel).split("/") if p not in ("", ".")]
    links = [os.path.join(on_disk, *parts[:i + 1]) for i in range(len(parts))]
    link = next((candidate for candidate in links if os.path.islink(candidate)), None)
    if link is None:
        return None
    shown = os.readlink(link)  # the first link along the path: what the user made and names
    real, real_root = os.path.realpath(path), os.path.realpath(on_disk)
    inside = os.path.relpath(real, real_root).replace(os.sep, "/") if (
        real == real_root or real.startswith(real_root.rstrip("/") + "/")) else None
    # walk17b B4: ``lnrel/newsub`` (lnrel -> real, there) is ``real/newsub`` not made yet, no link to nothing
    dangling = next((os.readlink(candidate) for candidate in links
                     if os.path.islink(candidate) and not os.path.exists(candidate)), None)
    return Led(shown, real, inside, shown.startswith("/"), dangling)


def checkpoint_dir_problem(folder: str, root: str, script=None, on_disk=None, mounted=None) -> str:
    """What the checkpoint folder ``folder`` is, and what would follow, when it may not hold the script's saves,
    else ''.

    ``root``: the workspace's path in the container (relative folders are inside it; an absolute one elsewhere is
    a mount of its own). ``script``: the training script, workspace-relative. ``on_disk``: where the workspace is on
    this machine, or None: then a link is followed to where it leads and judged there as that path written out
    would be (a link to ``.nodeweave`` is ``.nodeweave``, walk6 N6; to ``..`` leaves the workspace, to ``/etc`` is a
    system folder, to nothing is a link to nothing, M3) and a file is named a file, not a folder not there yet
    (W76). ``mounted``: the container paths the spec mounts, when this machine is not the node (the spec's side):
    a link out of the workspace must lead into one of them, as the containers see the link's absolute path."""
    normal, root = normal_path(folder), normal_path(root)
    if normal.startswith("/") and root.startswith(normal.rstrip("/") + "/"):  # walk7 B6: /data for /data/proj
        return (f"{normal}, which holds the workspace {root}: node 0 would scan the whole job's tree, and every "
                f"folder beside it, as saves, and hand out whichever has the highest step; {MIXED}")
    if normal.startswith("/"):
        if normal != root and not normal.startswith(root.rstrip("/") + "/"):
            return ""  # a mount of its own: the spec's volumes say what it is
        normal = posixpath.relpath(normal, root)
    what = _named(normal, script)
    if what or on_disk is None:
        return f"{what}: {MIXED}" if what else ""
    path = os.path.join(on_disk, normal)
    led = link_leads(on_disk, normal)
    if led is not None:
        what = _led_problem(led, script, mounted)
        if what:
            return what
    if os.path.exists(path) and not os.path.isdir(path):
        from .bounded import what_is_there

        return f"{path}, which is {what_is_there(path)}, not a folder: {MIXED}"
    return ""


def _led_problem(led, script, mounted):
    """What a link among the job's folders leads to, when the path written out would be refused. ``mounted``
    (the spec's side): an absolute link is followed in each container as written, so what it names must be a path
    the containers mount, even when on this machine it comes back into the workspace."""
    from .systemfolders import path_problem  # the plain value's rule

    what = _named(led.inside, script) if led.inside is not None else ""
    if what:  # where it leads names the refusal, made or not (walk17b B4: lnnw/sub is in .nodeweave/)
        return f"a link to {led.inside} ({what}): {MIXED}"
    if led.dangling:
        return (f"a link to nothing ({led.dangling} does not exist): the script's first save fails, and node 0 "
                "finds no checkpoint in it")
    if led.inside is None and not led.absolute:
        return (f"a link to {led.shown}, which leaves workspace.path (it leads to {led.real}): node 0 would hand "
                "out whatever saves are there, another project's too")
    problem = path_problem(led.real) if led.inside is None else None
    if problem:
        return f"a link to {led.shown} ({problem}): the script would save there, and node 0 read it at every restart"
    named = normal_path(led.shown)
    if led.absolute and mounted is not None and not any(
            named == m or named.startswith(m.rstrip("/") + "/") for m in mounted):
        return (f"a link to {led.shown}, on no mount of the spec ({', '.join(mounted)}): in each container the link "
                "leads to a path none of them has, so recovery would start from scratch every time; name the "
                "folder itself and mount storage every node shares there (volumes), or link it relatively")
    if led.inside is not None:
        what = _named(led.inside, script)
        return f"a link to {led.inside} ({what}): {MIXED}" if what else ""
    return ""
