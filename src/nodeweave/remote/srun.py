"""A node of a Slurm allocation, reached with ``srun --jobid=JOB --overlap -w HOST``: ``srun:JOB/HOST``.

Each command is a one-task step on that node inside the allocation
``nodeweave up --target slurm`` took; ``--overlap`` lets it share the node
with a running job's step (a status or a stop must get in while training
holds every CPU). The command is an argv (no shell on the way). rsync cannot
use srun as its transport (it appends a host name to the ``--rsh`` line),
so sync sends a stream or tar over the exec. On a container runtime the
step's command runs in the job's image (pyxis's options, or ``apptainer exec``
in front); sync's remotes are plain steps on the node, into the folder the
container mounts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Tuple

from nodeweave.errors import UsageError
from nodeweave.remote.base import Remote, RemoteOptions
from nodeweave.remote.names import refuse

_NAME = re.compile(r"^(\d+)/([A-Za-z0-9][A-Za-z0-9._-]*)$")


def srun_one(job: str, host: str) -> "list[str]":
    """A one-task step on ``host`` inside allocation ``job``, beside any other step."""
    return ["srun", f"--jobid={job}", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={host}", "--quiet"]


@dataclass(frozen=True)
class Srun(Remote):
    """``step_options``/``prefix``: how each step enters the job's container (pyxis options, ``apptainer exec``)."""

    step_options: Tuple[str, ...] = ()
    prefix: Tuple[str, ...] = ()
    kind = "srun"
    tool = "srun"
    network_link = False  # never rsync (it cannot ride srun): the stream, or tar without python3

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "Srun":
        if not _NAME.match(name):
            raise refuse("srun target", name, "JOBID/NODE, a node of a running Slurm allocation (e.g. 1234/gpu01)")
        return cls(name, options)

    @property
    def job(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def host(self) -> str:
        return self.name.split("/", 1)[1]

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        io = (["--pty"] if tty else []) + ([] if stdin or tty else ["--input=none"])
        return [*srun_one(self.job, self.host), *self.step_options, *io, *self.prefix, *argv]

    def rsh(self) -> str:
        raise UsageError(f"{self.label}: rsync cannot reach a node through srun; leave out --method rsync "
                         "(a stream or tar goes over the step)")

    def logs_argv(self, follow: bool = True, window: "tuple[str, ...]" = ()) -> "list[str]":
        raise UsageError(f"{self.label} is a node of a Slurm allocation: it has no container log; "
                         "`nodeweave logs` shows the runs' logs from runs/")

    def transient(self, code: int, stderr: str) -> bool:
        return "Socket timed out" in stderr or "Unable to contact slurm controller" in stderr
