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
    _, lo, hi = normalize_nnodes(text, "--nnodes" if settings.flags.get("nnodes") else "NODEWEAVE_NNODES",
                                 training_most(settings))
    return lo, hi


def training_most(settings):
    """The most training nodes a typed count may give: the spec's range for ``nodes`` (NODES_MAX), or, under
    recovery on a scheduler's allocation (SLURM_NNODES, or a hostfile's lines: walk12b B8), as many as the
    allocation holds less the spares: the training count must be typed there, and a 4097-node allocation's 4096
    was refused (walk11b B9)."""
    from .slurm import training_most_of
    from .sources import hostfile_lines

    return training_most_of(settings.env, settings.get("recovery"), settings.get("spares", 0),
                            hostfile_lines(settings.get("hostfile")))


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
    # walk11b B5, B9: NNODES is no platform's to a person who typed it, and the example took every container as a
    # training node (no container left for a spare; `2:4 node(s) train` for a range): the one rule, as for a
    # hostfile's lines above, is the containers less the spares
    what = "a scheduler's count" if name in COUNTS else "torchrun's count"
    rank = (settings.flags.get("node_rank") or settings.env.get("NODE_RANK") or "").strip()
    if value.isdigit() and rank.isdigit() and int(rank) >= int(value):  # then it cannot count every container
        example = (f"e.g. NODEWEAVE_NNODES={value} if {value} node(s) train and the {spares} spare(s) come besides "
                   f"(this node, rank {rank}, is then a spare)")
    elif value.isdigit() and int(value) > spares:
        example = (f"e.g. NODEWEAVE_NNODES={int(value) - spares} if {name}={value} counts every container "
                   f"({int(value) - spares} training node(s) and the {spares} spare(s))")
    else:
        example = f"with the {spares} spare(s) as containers besides"
    return (f": {name}={value} ({what}) is read under recovery as every container, training nodes and spares "
            f"alike, so it cannot say which {spares} are spares (only NODEWEAVE_NNODES or --nnodes give the "
            f"training count); accepted: NODEWEAVE_NNODES=<training nodes>, {example}")
