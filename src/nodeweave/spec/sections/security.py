"""``security`` (capabilities, seccomp) and ``slurm`` (the sbatch allocation): small sections."""

from __future__ import annotations

from typing import Optional

from yaml.nodes import Node

from nodeweave.spec import rules
from nodeweave.spec.fields import boolean, choice, optional, rule_list
from nodeweave.spec.model import SECCOMP_PROFILES, SLURM_RUNTIMES, Security, Slurm
from nodeweave.spec.nodes import Fields, Reader


KEYS = ("cap_add", "seccomp", "read_only_root", "ipc_lock")


def security(r: Reader, top: Fields) -> Security:
    f = r.fields(top.get("security"), "security", KEYS)
    return Security(
        cap_add=rule_list(r, f.get("cap_add"), "security.cap_add", rules.CAPABILITY, unique=True),
        seccomp=choice(r, f, "seccomp", SECCOMP_PROFILES, "runtime-default"),
        read_only_root=boolean(r, f, "read_only_root", True),
        ipc_lock=boolean(r, f, "ipc_lock", True),
    )


SLURM_KEYS = ("partition", "account", "qos", "time", "constraint", "exclusive", "runtime", "sif", "nodelist")


def slurm(r: Reader, node: Optional[Node]) -> Optional[Slurm]:
    if node is None:
        return None
    f = r.fields(node, "slurm", SLURM_KEYS)
    before = r.kept
    runtime = choice(r, f, "runtime", SLURM_RUNTIMES, "pyxis")
    sif_node = f.get("sif")  # read on its own; weighed against the runtime only where the runtime was read
    sif = None if sif_node is None else r.field(lambda: _sif(r, sif_node, runtime if r.kept == before else None),
                                                None)
    return Slurm(
        partition=optional(r, f, "partition", rules.SLURM_NAME),
        account=optional(r, f, "account", rules.SLURM_NAME),
        qos=optional(r, f, "qos", rules.SLURM_NAME),
        time=optional(r, f, "time", rules.SLURM_TIME),
        constraint=optional(r, f, "constraint", rules.SLURM_CONSTRAINT),
        exclusive=boolean(r, f, "exclusive", True),
        runtime=runtime,
        sif=sif,
        nodelist=rule_list(r, f.get("nodelist"), "slurm.nodelist", rules.SLURM_NODES, unique=True),
    )


def _sif(r: Reader, node: Node, runtime: Optional[str]) -> str:
    if runtime not in ("apptainer", None):
        raise r.fail(node, "slurm.sif", "applies to runtime apptainer only", "runtime: apptainer with sif")
    r.refuse_number(node, "slurm.sif", "an absolute path to a .sif image on the cluster's shared storage")
    sif = r.string(node, "slurm.sif", "an absolute path to a .sif image on the cluster's shared storage")
    if not rules.absolute_path(sif):
        raise r.bad_value(node, "slurm.sif", "an absolute path to a .sif image on the cluster's shared storage")
    return sif


MOST_SLURM_NAMES = 65536  # more names than any job: a range past it is not expanded (gpu[0-999999999])


def slurm_node_count(entry: str) -> int:
    """How many node names one ``slurm.nodelist`` entry names, its ranges counted, not expanded
    (``gpu[01-04,07]``: 5); the rule (``rules.SLURM_NODES``) has judged its shape."""
    import re

    count = 1
    for ranges in re.findall(r"\[([^\]]*)\]", entry):
        count *= sum(int(hi) - int(lo) + 1 if hi else 1
                     for lo, _, hi in (item.partition("-") for item in ranges.split(",")))
    return count


def slurm_node_names(nodelist) -> list:
    """Every node ``slurm.nodelist`` names, its ranges expanded (``gpu[01-03]``: gpu01, gpu02, gpu03), in order;
    refused (the entrypoint's UsageError) past ``MOST_SLURM_NAMES``."""
    from nodeweave.entrypoint.errors import UsageError as RangeError
    from nodeweave.entrypoint.planning.slurm import expand_nodelist

    if sum(max(slurm_node_count(entry), 0) for entry in nodelist) > MOST_SLURM_NAMES:
        raise RangeError(f"names more than {MOST_SLURM_NAMES} nodes, more than any job")
    return [name for entry in nodelist for name in expand_nodelist(entry)]
