"""Recovery's training node count, the spares apart: the count as given (``--nnodes``, ``NODEWEAVE_NNODES``), which
the plan's notes, the fault rows and recovery's loop all read. In planning/, as the count is: the planner reads it
(``core``), and recovery/ builds on the planner, never the other way."""

from ..errors import EXIT_TOPOLOGY, EntrypointError


def job_size(settings):
    """(fewest, most) training nodes, from --nnodes or NODEWEAVE_NNODES."""
    from .topology import normalize_nnodes

    text = settings.flags.get("nnodes") or settings.env.get("NODEWEAVE_NNODES")
    if not text:
        spares = settings.source("spares") or "NODEWEAVE_SPARES"
        spares = spares[len("flag "):] if spares.startswith("flag ") else spares
        raise EntrypointError(f"{spares} {settings.get('spares', 0) or 0} needs the training node count "
                              "(NODEWEAVE_NNODES or --nnodes) to tell nodes from spares" + _platform_count(settings),
                              EXIT_TOPOLOGY)
    _, lo, hi = normalize_nnodes(text, "--nnodes" if settings.flags.get("nnodes") else "NODEWEAVE_NNODES")
    return lo, hi


def _platform_count(settings):
    """Why a count the platform gave (torchrun's NNODES, Slurm's) does not do: it counts every container, spares
    too (walk7 B34: NNODES=2 was right there, and the line said nothing of it); "" when none is set."""
    from .slurm import COUNTS

    name = next((name for name in ("NNODES", "PET_NNODES", *COUNTS) if (settings.env.get(name) or "").strip()), None)
    spares = settings.get("spares", 0) or 0
    hostfile = settings.get("hostfile")
    if name is None and hostfile:  # its lines are every container too (walk8 B37)
        try:
            from .sources import read_hostfile

            lines = len(read_hostfile(hostfile))
        except EntrypointError:
            return ""
        return (f"; accepted: NODEWEAVE_NNODES={max(1, lines - spares)} (hostfile {hostfile}'s {lines} hosts less "
                f"{spares} spare(s): the spares are its last lines)")
    if name is None:
        return ""
    value = settings.env[name].strip()
    rank = (settings.flags.get("node_rank") or settings.env.get("NODE_RANK") or "").strip()
    spare = (f" (this node, rank {rank}, is then a spare)" if value.isdigit() and rank.isdigit()
             and int(rank) >= int(value) else "")
    return (f": {name}={value} is the platform's count, read as every container (training nodes and spares alike), "
            f"so it cannot say which {spares} are spares; accepted: NODEWEAVE_NNODES=<training nodes>, e.g. "
            f"NODEWEAVE_NNODES={value} if {value} node(s) train and the {spares} spare(s) come besides{spare}")
