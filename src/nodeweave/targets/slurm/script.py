"""The sbatch script's text: directives from the spec, the contract's variables, one srun per runtime.

Every spec value reaches the script either as an ``#SBATCH`` value the spec's
rules already limit to safe characters, or quoted for bash here
(``shlex.quote`` for words, :func:`double_quoted` where a ``${...}`` prefix
must still expand). shellcheck and bash's own parser check the result.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import List, Optional, Tuple

from nodeweave import quantities
from nodeweave.errors import UsageError
from nodeweave.resolve import Resolved
from nodeweave.spec import Slurm

RUN_ONE_PER_NODE = "srun --ntasks-per-node=1 --kill-on-bad-exit={kill}"
APPTAINER_GPU_FLAGS = {"nvidia": ["--nv"], "amd": ["--rocm"], "cpu": []}


def double_quoted(text: str) -> str:
    """``text`` for the inside of a bash double-quoted string: nothing in it expands."""
    for ch in ("\\", '"', "$", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


def host_expression(host_path: str) -> str:
    """A host path as the inside of a double-quoted string: ``~`` is ``${HOME}``, relative is the submit dir's."""
    if host_path == "~" or host_path.startswith("~/"):
        return "${HOME}" + double_quoted(host_path[1:])
    if host_path.startswith("/"):
        return double_quoted(host_path)
    return "${submit_dir}/" + double_quoted(posixpath.normpath(host_path))


def pyxis_image(reference: str) -> str:
    """enroot's image syntax: ``[REGISTRY#]IMAGE[:TAG]`` (a registry host needs the ``#``)."""
    first, slash, rest = reference.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return reference


def container_mounts(r: Resolved) -> List[Tuple[str, str, bool]]:
    """(host path, container path, read-only) of what the containers mount: workspace, cache, host volumes."""
    mounts = [(r.spec.workspace.host_path, r.spec.workspace.path, False), (r.spec.cache.host_path, r.spec.cache.path, False)]
    mounts += [(v.host_path, v.path, v.read_only) for v in r.spec.volumes if v.host_path is not None]
    for host, container, _ in mounts:
        check_mount_path(host, f"the mount {host!r} -> {container!r}")
        check_mount_path(container, f"the mount {host!r} -> {container!r}")
    return mounts


MOUNT_SEPARATORS = ",:"


def check_mount_path(path: str, what: str) -> None:
    """pyxis' ``--container-mounts`` and apptainer's ``--bind`` split their list on ',' and each entry on ':', so a
    path holding either would mount something else on every node (walk8 A1): refused here, once for every path a
    Slurm step mounts (the spec's mounts, the folder they resolve to, ``--remote-dir``)."""
    found = [c for c in MOUNT_SEPARATORS if c in path]
    if found:
        raise UsageError(f"slurm: {what} holds {' and '.join(repr(c) for c in found)}, which pyxis' "
                         "--container-mounts and apptainer's --bind read as separators, so the step would mount "
                         "something else; accepted: paths without ',' or ':' for a Slurm job in a container (move or "
                         "rename the folder, or set slurm.runtime: host)")


# gpus_per_node: auto on whole (exclusive) nodes: no GPU count is asked, each node runs one process per GPU
# its steps see (uneven counts included: the check-in gives every node's count to the launcher).
AUTO_GPUS_NOTE = [
    "# gpus_per_node: auto: whole nodes (--exclusive), no GPU count asked; each node runs one process per GPU",
    "# its steps see. Where the site's cgroups constrain devices (ConstrainDevices=yes) a step sees only GPUs",
    "# it asked for: set gpus_per_node to a count there.",
]


SPARES_NOTE = [
    "# recovery.spares: the allocation holds the spares too (SLURM_NNODES counts them); NODEWEAVE_NNODES is",
    "# the training node count, so the tasks with SLURM_NODEID from it on check in and wait as spares.",
]


# walk6 W3: a plain sbatch runs with the token derived from the job id, which the node warns of; say so here.
TOKEN_NOTE = (
    "# The nodes' check-in token: `nodeweave up -t slurm` hands every node a random one. A plain `sbatch` of",
    "# this file derives it from SLURM_JOB_ID and the master port, which anyone who can run squeue knows; to",
    "# give one, set env: {NODEWEAVE_JOB_TOKEN_FILE: <a file only you can read, on a volume of the spec>}",
    "# in the spec and render again (for this plain-sbatch path: it then replaces `up`'s token on every target).",
)


def directives(r: Resolved) -> List[str]:
    return [f"#SBATCH {line}" for line in allocation_options(r)]


def allocation_options(r: Resolved) -> List[str]:
    """What the job asks Slurm for, as ``--option=value`` words: the #SBATCH lines, and ``salloc``'s options."""
    slurm = r.spec.slurm or Slurm()
    # With recovery every training node starts, and the spares beside them (task N.. of it waits as a spare):
    # the allocation is Spec.containers, as every target's count; without, an elastic range is Slurm's MIN-MAX.
    elastic = r.spec.nodes.elastic and not r.spec.recovery.enabled
    nodes = f"{r.spec.nodes.min}-{r.spec.nodes.max}" if elastic else str(r.spec.containers)
    lines = [f"--job-name={r.spec.name}", f"--nodes={nodes}", "--ntasks-per-node=1"]
    if r.gpu_resource is not None:
        if r.spec.gpus_per_node == "auto" and not slurm.exclusive:
            raise UsageError(f"gpus_per_node: 'auto' cannot go into a Slurm script for variant {r.variant.key!r} "
                             "with slurm.exclusive: false: on a shared node sbatch needs a GPU count to allocate; "
                             "accepted: an integer from 1 to 1024 (e.g. 8), or slurm.exclusive: true (whole nodes, "
                             "each running one process per GPU it has)")
        if r.spec.gpus_per_node != "auto":  # auto, exclusive: whole nodes; each counts its own GPUs
            lines.append(f"--gpus-per-node={r.spec.gpus_per_node}")
    res = r.spec.resources
    cpu = res.requests.get("cpu") or res.limits.get("cpu")
    memory = res.requests.get("memory") or res.limits.get("memory")
    if cpu:
        lines.append(f"--cpus-per-task={quantities.slurm_cpus(cpu)}")
    if memory:
        lines.append(f"--mem={quantities.slurm_megabytes(memory)}")
    for option, value in (("time", slurm.time), ("partition", slurm.partition), ("account", slurm.account),
                          ("qos", slurm.qos), ("constraint", slurm.constraint)):
        if value:
            lines.append(f"--{option}={value}")
    if slurm.nodelist:  # not the spec's `hosts`: that list is the LAN/ssh path's, and the same spec may use both
        lines.append(f"--nodelist={','.join(slurm.nodelist)}")
    if slurm.exclusive:
        lines.append("--exclusive")
    if r.spec.recovery.enabled:  # a failed node does not end the allocation: node 0 goes on without it
        lines.append("--no-kill")
    return lines


def exported(r: Resolved) -> List[Tuple[str, str]]:
    """``(variable, text)`` every task gets: the contract's settings, the spec's env (the script's exports, and
    what `nodeweave run`'s step passes)."""
    env = list(r.contract_env("slurm")) + list(r.spec.env.items())
    if r.spec.recovery.spare_nodes:  # SLURM_NNODES counts the spares; recovery tells them apart by this one
        env.insert(0, r.contract_pair("nnodes"))
    return env


def exports(r: Resolved) -> List[str]:
    return [f"export {name}={shlex.quote(text)}" for name, text in exported(r)]


def run_one_per_node(r: Resolved) -> str:
    """srun, one task per node. With recovery a task that dies is a lost node node 0 recovers from, so the step
    keeps the other tasks (``--kill-on-bad-exit=0``); without, the first bad exit ends the step."""
    return RUN_ONE_PER_NODE.format(kill=0 if r.spec.recovery.enabled else 1)


def _runs(r: Resolved, image_default: str, sif: Optional[str]) -> List[str]:
    workdir = shlex.quote(r.spec.workspace.path)
    srun = run_one_per_node(r)
    gpu_flags = " ".join(APPTAINER_GPU_FLAGS[r.vendor.key] + [""]) if APPTAINER_GPU_FLAGS[r.vendor.key] else ""
    apptainer_image = sif or f"docker://{image_default}"
    return [
        "  pyxis)",
        f"    {srun} \\",
        f"      --container-image=\"${{NODEWEAVE_IMAGE:-{double_quoted(pyxis_image(image_default))}}}\" \\",
        f"      --container-mounts=\"${{mounts}}\" --container-workdir={workdir} \\",
        "      \"${command[@]}\"",
        "    ;;",
        "  apptainer)",
        f"    {srun} \\",
        f"      apptainer exec {gpu_flags}--bind \"${{mounts}}\" --pwd {workdir} \\",
        f"      \"${{NODEWEAVE_IMAGE:-{double_quoted(apptainer_image)}}}\" \"${{command[@]}}\"",
        "    ;;",
        "  host)",
        f"    {srun} --chdir=\"{host_expression(r.spec.workspace.host_path)}\" \"${{command[@]}}\"",
        "    ;;",
        "  *)",
        "    echo \"NODEWEAVE_RUNTIME=${runtime}: accepted: pyxis, apptainer or host\" >&2",
        "    exit 2",
        "    ;;",
    ]


# walk8 A1: the submit folder becomes a mount source, whose ',' or ':' pyxis and apptainer would split on.
SUBMIT_DIR_SEPARATORS = [
    "if [ \"${runtime}\" != host ] && [[ \"${submit_dir}\" == *[,:]* ]]; then",
    "  echo \"job.sbatch: the submit folder ${submit_dir} holds a ',' or ':', which pyxis' --container-mounts and "
    "apptainer's --bind read as separators: sbatch from a folder without them, or NODEWEAVE_RUNTIME=host\" >&2",
    "  exit 2",
    "fi",
]


def submit_dir_check(r: Resolved) -> List[str]:
    """Before any srun: a relative workspace is the submit folder's, so a script submitted from elsewhere (``cd ~ &&
    sbatch ...``) would mount that folder read-write on every node and fail after the queue wait (walk7 A45). The
    spec's script is looked for where the nodes will look; missing, the job ends at once (exit 2) naming the
    remedy. Skipped where the script is not a workspace file: a ``command`` launcher's program, a project baked
    into the image."""
    script = r.spec.launcher.script
    if (r.spec.launcher.type == "command" or r.spec.image.project is not None or script.startswith("/")
            or r.spec.workspace.host_path.startswith(("/", "~"))):
        return []
    rel = posixpath.relpath(posixpath.normpath(posixpath.join(r.spec.workspace.path, script)), r.spec.workspace.path)
    if rel.startswith(".."):
        return []
    where = f"{host_expression(r.spec.workspace.host_path)}/{double_quoted(rel)}"
    shown = double_quoted(rel)
    return [f"if [ ! -f \"{where}\" ]; then  # submitted from another folder: the nodes would not find the script",
            f"  echo \"job.sbatch: {shown} is not in the workspace ${{submit_dir}}/{double_quoted(posixpath.normpath(r.spec.workspace.host_path))} "
            f"(taken from the folder sbatch was run in): cd to the spec's folder and sbatch from there\" >&2",
            "  exit 2",
            "fi"]


def render_script(r: Resolved) -> str:
    slurm = r.spec.slurm or Slurm()
    mounts = ",".join(f"{host_expression(h)}:{double_quoted(c)}{':ro' if ro else ''}"
                      for h, c, ro in container_mounts(r))
    command = " ".join(shlex.quote(word) for word in ("nodeweave-entrypoint", r.spec.launcher.script, *r.spec.launcher.args))
    runs = _runs(r, r.image, slurm.sif)
    # Relative host paths are the submit directory's (sbatch runs a copy of this script elsewhere).
    uses_submit_dir = "${submit_dir}" in mounts or any("${submit_dir}" in line for line in runs)
    lines = [
        "#!/bin/bash",
        "# shellcheck disable=SC2016  # single-quoted spec values are literal on purpose",
        "# Rendered by nodeweave from the cluster spec (nodeweave.yaml): edit the spec and run",
        "# `nodeweave render slurm`, not this file. Submit from the spec's directory:",
        "#   sbatch slurm/job.sbatch                        (runtime: NODEWEAVE_RUNTIME=pyxis|apptainer|host)",
        *directives(r),
        *AUTO_GPUS_NOTE * (r.gpu_resource is not None and r.spec.gpus_per_node == "auto"),
        "set -euo pipefail",
        "",
        "# The spec's settings for the entrypoint. Rank, node count and master come from Slurm itself",
        "# (SLURM_NODEID, SLURM_NNODES, the first host of SLURM_JOB_NODELIST).",
        *SPARES_NOTE * bool(r.spec.recovery.spare_nodes),
        *TOKEN_NOTE * ("NODEWEAVE_JOB_TOKEN_FILE" not in r.spec.env and "NODEWEAVE_JOB_TOKEN" not in r.spec.env),
        *exports(r),
        "",
        *(["submit_dir=\"${SLURM_SUBMIT_DIR:-${PWD}}\"", *submit_dir_check(r)] if uses_submit_dir else []),
        f"runtime=\"${{NODEWEAVE_RUNTIME:-{slurm.runtime}}}\"",
        f"mounts=\"{mounts}\"",
        *(SUBMIT_DIR_SEPARATORS if "${submit_dir}" in mounts else []),
        f"command=({command})",
        "",
        "case \"${runtime}\" in",
        *runs,
        "esac",
    ]
    return "\n".join(lines) + "\n"
