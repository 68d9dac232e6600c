"""One payload group: each target's plan, the relay chain, and where the source's one tar stream goes.

Without relay every target of the group gets the stream from the source
(its own exec client relays every byte). With relay (``relay.py``) the
plans go out first; each forwarder connects to the next target and reports
its hops; the source then tells each target whose upstream connected to
read from it (``go: peer``) and streams only to the rest (``go: stdin``):
the head, and any target whose upstream could not reach it, which then
heads the rest of its branch. So the bytes go out once per group plus once
per failed hop, never less safely: every target still checks every file
against the source's digests, which reached it over its own exec channel.
"""

from __future__ import annotations

import time

from nodeweave.sync.transport import relay
from nodeweave.sync.source.job import Job, guard
from nodeweave.sync.outcome import OnProgress, Source
from nodeweave.sync.transport.payload import Sink
from nodeweave.sync.node.peer import HOP_S
from nodeweave.sync.transport.plain import start_tar
from nodeweave.sync.transport.plan import Difference
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.transport.session import plan_line

HOP_WAIT_S = HOP_S + 30.0  # each forwarder's hop report: its connects plus reading its plan
GO_STDIN = plan_line({"go": "stdin"})


def agent_plan(job: Job, receive: bool, relay_part: "dict | None" = None) -> dict:
    """What the agent does around the payload: the deletions, and with relay who feeds whom."""
    plan = {"receive": receive, "delete": list(job.diff.delete), "rmdirs": list(job.diff.rmdirs)}
    if relay_part is not None:
        plan["relay"] = relay_part
    return plan


def _payload_bytes(src: Source, diff: Difference) -> int:
    return sum(src.fileset.root.joinpath(rel).lstat().st_size for rel in diff.send)


def _start_relay(mode: str, streams: "list[Job]", payload: int, on_progress: OnProgress) -> "list[Job] | None":
    """Plan the chain, send its plans, read the hop reports, point the peer-fed at their upstream.

    The members the source must feed, or None when the group is not relayed.
    """
    agree = all(j.target.relay_by_default for j in streams)
    if not relay.wanted(mode, len(streams), payload, agree):
        return None
    listens = {j: j.manifest.listen for j in streams}
    for job in streams:
        if job.manifest.listen_error:
            job.result.relay = f"direct: no relay listener there ({job.manifest.listen_error})"
    addresses = relay.usable_addresses(listens)
    chain = relay.plan_chain(streams, addresses)
    if chain is None:
        return None
    for job in chain.order:
        job.plan_sent = True
        guard(job, lambda j=job: j.session.say(agent_plan(j, True, chain.plan(j, listens, addresses))))
    deadline, hops = time.monotonic() + HOP_WAIT_S, {}
    for job in chain.forwards:
        guard(job, lambda j=job: hops.__setitem__(j, j.session.hear(max(0.1, deadline - time.monotonic()),
                                                                    "relay")["hops"]))
    direct = relay.fed_directly(chain, hops)
    for job in chain.order[1:]:
        up = chain.upstream[job]
        if job in direct:
            report, position = hops.get(up) or [], chain.forwards[up].index(job)
            why = report[position].get("error") if position < len(report) else None
            job.result.relay = f"direct: {up.target.label} could not reach it ({why or 'no report'})"
            continue
        job.upstream, job.result.relay = up, f"from {up.target.label}"
        on_progress(job.target, f"from {up.target.label}", 0.5)
        guard(job, lambda j=job: j.session.say({"go": "peer"}, close=True))
    return direct


def open_sinks(req: SyncRequest, src: Source, diff: Difference, jobs: "list[Job]", on_progress: OnProgress,
               relay_mode: str) -> "list[Sink]":
    """Every target's plan sent; the sinks the group's tar stream must be written to."""
    total = _payload_bytes(src, diff) or 1
    streams = [j for j in jobs if j.method == "stream" and j.error is None]
    direct = _start_relay(relay_mode, streams, total, on_progress) if relay_mode != "off" else None
    sinks = []
    for job in jobs:
        report = _reporter(job, total, on_progress)
        if job.error is not None or job.upstream is not None:
            continue
        if job.method == "tar":
            def tar_sink(j=job, r=report):
                j.tar = start_tar(j.target, req.dest)
                sinks.append(Sink(_detach(j.tar), b"", r))
            guard(job, tar_sink)
        elif direct is not None and job in direct:
            guard(job, lambda j=job, r=report: sinks.append(Sink(j.session.payload_fd(), GO_STDIN, r)))
        else:
            job.plan_sent = True
            guard(job, lambda j=job, r=report: sinks.append(
                Sink(j.session.payload_fd(), plan_line(agent_plan(j, True)), r)))
    return sinks


def _reporter(job: Job, total: int, on_progress: OnProgress):
    """A sink's byte count as the target's progress, passed on only when a whole percent changes."""
    last = [-1]

    def report(sent: int) -> None:
        percent = min(100, sent * 100 // total)
        if percent != last[0]:
            last[0] = percent
            on_progress(job.target, "send", percent / 100)
    return report


def _detach(proc) -> int:
    """A descriptor of the process's stdin for a payload writer, which closes it when done."""
    import os

    fd = os.dup(proc.stdin.fileno())
    proc.stdin.close()
    return fd
