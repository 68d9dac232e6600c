"""A rank's count of collectives, read one way by node 0's rates (``live``) and its exposition (``collect``)."""


def recorded(views):
    """Whether every rank's flight recorder is read (its count of the default group's collectives)."""
    return bool(views) and all(v.get("fr_enqueued", -1) >= 0 for v in views)


def collectives(view, read):
    """A rank's collectives, the one count top, /status.json, Prometheus and the rates show: its Python calls
    (``seq``), or the flight recorder's count of the default group's collectives where ``read`` (every rank's is)
    and it is the larger, as it is when C++ issued some (DDP's reducer). The recorder counts the Python ones too,
    so the two are never added (walk7 B13: the sum showed a job doing 2 all_reduces a second as 4)."""
    return max(view.get("seq", 0), view.get("fr_enqueued", 0) if read else 0)
