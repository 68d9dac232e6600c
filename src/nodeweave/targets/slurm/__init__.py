"""Slurm: an ``sbatch`` script that runs the job's image on every allocated node.

``render_files(spec)`` returns ``slurm/job.sbatch``: one task per node, ``srun``
starting ``nodeweave-entrypoint`` in the image through pyxis/enroot
(``--container-image``), Apptainer (``exec --nv``/``--rocm``) or a shared venv
on the hosts (``host``); ``NODEWEAVE_RUNTIME`` picks another at submit time.
Inside, the entrypoint takes the rank (``SLURM_NODEID``), node count
(``SLURM_NNODES``) and master (first host of ``SLURM_JOB_NODELIST``) from
Slurm, so the script carries only what the spec says. Pure and byte-stable.
"""

from __future__ import annotations

from typing import Dict

from nodeweave.targets.slurm.script import render_script
from nodeweave.resolve import resolve
from nodeweave.spec import Spec

SCRIPT = "slurm/job.sbatch"


def render_files(spec: Spec) -> Dict[str, str]:
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    return {SCRIPT: render_script(r)}


__all__ = ["SCRIPT", "render_files", "render_script"]
