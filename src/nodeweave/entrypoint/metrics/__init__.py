"""Seeing the job: node 0's Prometheus endpoint, the run's goodput timeline, the training's own step numbers.

Owns what node 0 learns about a running job without a change to the script
(docs/observability.md): ``live.py`` (the seams it rides on and the timeline
it keeps: generations, first collectives, stalls, faults, steps),
``collect.py`` (the metric families from the heartbeat's node table, the
stall watch's rank views and the recovery book), ``exposition.py``
(Prometheus' text format), ``server.py`` (``/metrics`` in a daemon thread),
``gpus.py`` (the node's GPU readings), ``steps.py`` (step numbers from the
common training loggers' lines) and ``goodput.py`` (the wall time split into
buckets: pure, shared with ``nodeweave runs``). Reads the other rooms through
their public surfaces only (the HubWatch and its stall watch, ``recovery.json``,
the checkpoint finder, the output capture's seam ``capture.OUTPUT_LISTENERS``).
``__main__.run`` calls :func:`arm`, which hangs :func:`gathering`,
:func:`hub_watch` and :func:`link_watch` on the check-in's seams
``checkin.GATHERS``, ``HUB_WATCHES`` and ``LINK_WATCHES`` (the package alone:
the start-up path stays lean). Stdlib only.
"""

import time

ARMED = []  # [settings, log, when] once ``__main__.run`` armed this process


def arm(settings, log):
    """Remember the settings and when the entrypoint started (the run's launch: the check-in's wait is
    start-up too); nothing more is imported or started until node 0 begins its first gather (metrics on: the
    server, showing the check-in) or makes its first HubWatch (the recorder)."""
    from ..checkin import GATHERS, HUB_WATCHES, LINK_WATCHES

    ARMED[:] = [settings, log, time.time()]
    if hub_watch not in HUB_WATCHES:
        HUB_WATCHES.append(hub_watch)
    if link_watch not in LINK_WATCHES:  # the step lines node 0's goodput needs, metrics on or off
        LINK_WATCHES.append(link_watch)
    if settings.get("metrics", True):
        if gathering not in GATHERS:
            GATHERS.append(gathering)


TAP = []  # this worker's StepTap, once its first heartbeat began


def link_watch(watch):
    """Another node's heartbeat began (one per generation): its newest step line (goodput's, node 0 keeps it with
    metrics off too) and, with metrics on, its GPU readings ride on its beats to node 0. Returns the callable whose
    dict each beat carries (``LinkWatch.beat_extra``), or None."""
    readings = None
    try:
        if ARMED[0].get("metrics", True):
            from . import gpus

            readings = gpus.beat_extra()
    except Exception as err:  # noqa: BLE001 - seeing the job must never stop it
        ARMED[1](f"warning: this node's GPU readings stay here: {err!r}")
    try:
        tap = _tap()
    except Exception as err:  # noqa: BLE001 - nor its step lines
        ARMED[1](f"warning: this node's step lines stay here: {err!r}")
        return readings

    def extra():
        found = dict(readings()) if readings is not None else {}
        found.update(tap.extra())
        return found
    return extra


def _tap():
    if not TAP:
        from ..running import capture
        from .steps import StepTap, compile_pattern

        pattern = ARMED[0].get("step_pattern")
        TAP.append(StepTap(compile_pattern(pattern) if pattern else None))
        capture.OUTPUT_LISTENERS.append(TAP[0].output)
    return TAP[0]


def _live():
    from . import live

    if live.LIVE is None:
        settings, log, launched = ARMED
        live.LIVE = live.Live(settings, log, launched)
    return live.LIVE


def gathering(hub):
    """Node 0 begins a gather on ``hub`` (the job's first check-in, or recovery's regather): on the first, node 0's
    /metrics and /status.json start serving, the check-in in them (whom node 0 waits for, how long: walk12b B13,
    a node that never comes is what a user opens ``top`` to see)."""
    try:
        _live().gathering(hub)
    except Exception as err:  # noqa: BLE001 - seeing the job must never stop it
        ARMED[1](f"warning: metrics: {err!r}")


def hub_watch(watch):
    """Node 0 made a HubWatch (one per generation): record it, and on the first start the recorder and server."""
    try:
        _live().watching(watch)
    except Exception as err:  # noqa: BLE001 - seeing the job must never stop it
        ARMED[1](f"warning: metrics and goodput off: {err!r}")
