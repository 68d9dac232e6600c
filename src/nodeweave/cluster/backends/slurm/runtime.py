"""How a Slurm step enters the job's image: pyxis's ``srun --container-*`` options, or ``apptainer exec``.

The batch script (``render slurm``) and the verbs share the image, the mounts
and the container's working folder; this module is the verbs' half, pure. On
``runtime: host`` a step runs on the node itself. On ``pyxis`` every step of
the allocation (the run, and the one-task steps of status, stop, shell)
names the same container (``--container-name``), so the image is imported
once per node and later steps start in it; the node's ``/tmp`` is mounted at
``/tmp`` so the run's records (``$TMPDIR/nodeweave``) are the ones a status
step reads, as Apptainer does by default. pyxis and Apptainer share the
host's process namespace, so a stop step's signals reach the run's processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

from nodeweave.errors import UsageError

GPU_FLAGS = {"nvidia": ("--nv",), "amd": ("--rocm",), "cpu": ()}
NODE_TMP = ("/tmp", "/tmp", False)


@dataclass(frozen=True)
class StepRuntime:
    """One runtime's words around a step's command (empty for ``host``)."""

    kind: str  # host | pyxis | apptainer
    image: str = ""  # pyxis: enroot's [REGISTRY#]IMAGE[:TAG]; apptainer: docker://... or a .sif path
    mounts: Tuple[Tuple[str, str, bool], ...] = ()  # (node path, container path, read-only)
    workdir: str = ""  # the workspace inside the container
    gpu_flags: Tuple[str, ...] = ()  # apptainer: --nv / --rocm
    name: str = ""  # pyxis: the container every step of the allocation shares

    def _mount_list(self, read_only: str) -> str:
        return ",".join(f"{node}:{inside}{read_only if ro else ''}" for node, inside, ro in self.mounts)

    def srun_options(self) -> List[str]:
        """pyxis's options (its own spelling: ``SRC:DST[:FLAGS]``, flags joined by ``+``); none elsewhere."""
        if self.kind != "pyxis":
            return []
        return [f"--container-image={self.image}", f"--container-mounts={self._mount_list(':ro')}",
                f"--container-workdir={self.workdir}", f"--container-name={self.name}",
                "--no-container-mount-home"]

    def command_prefix(self) -> List[str]:
        """``apptainer exec`` with the GPU flag, the binds and the folder, before the step's command."""
        if self.kind != "apptainer":
            return []
        return ["apptainer", "exec", *self.gpu_flags, "--bind", self._mount_list(":ro"), "--pwd", self.workdir,
                self.image]

    @property
    def in_container(self) -> bool:
        return self.kind != "host"


def node_path(path: str, spec_dir: Path) -> str:
    """A host path of the spec as the nodes see it: shared storage, relative paths the spec folder's."""
    expanded = Path(path).expanduser()
    return str(expanded if expanded.is_absolute() else (spec_dir / expanded).resolve())


def step_runtime(resolved, spec_dir: Path, workspace_on_nodes: str) -> StepRuntime:
    """The spec's ``slurm.runtime`` as step words: the image, the batch script's mounts, the workspace."""
    from nodeweave.targets.slurm.script import check_mount_path, container_mounts, pyxis_image

    spec = resolved.spec
    runtime = spec.slurm.runtime if spec.slurm else "pyxis"
    if runtime == "host":
        return StepRuntime("host")
    mounts = [(workspace_on_nodes, spec.workspace.path, False)]
    mounts += [(node_path(host, spec_dir), inside, ro) for host, inside, ro in container_mounts(resolved)[1:]]
    for host, inside, _ in mounts:  # the resolved folders too: the spec's `.` is this folder, --remote-dir the user's
        check_mount_path(host, f"the mount {host} -> {inside}")
    if runtime == "pyxis":
        return StepRuntime("pyxis", image=pyxis_image(resolved.image), mounts=tuple([*mounts, NODE_TMP]),
                           workdir=spec.workspace.path, name=f"nodeweave-{spec.name}")
    if runtime == "apptainer":
        image = node_path(spec.slurm.sif, spec_dir) if spec.slurm.sif else f"docker://{resolved.image}"
        return StepRuntime("apptainer", image=image, mounts=tuple(mounts), workdir=spec.workspace.path,
                           gpu_flags=GPU_FLAGS[resolved.vendor.key])
    raise UsageError(f"slurm.runtime {runtime!r} is not accepted: pyxis, apptainer or host")
