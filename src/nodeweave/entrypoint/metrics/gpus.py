"""This node's GPUs as the metrics show them: utilisation, memory, power, refreshed in a thread of their own.

The readings come from the node's one GPU reader (``detection.gpu_use``: nvidia-smi, amd-smi, rocm-smi or
AMD's sysfs, the same that answers ``nodeweave status``); on NVIDIA nodes that may read ``/dev/kmsg`` each
GPU's Xid events since the sampler started are added. A :class:`Sampler` thread reads them every
:data:`EVERY_S` so a scrape never waits on a tool (nvidia-smi takes ~0.1-1 s).
"""

import threading
import time

from ..detection.gpu_use import read_gpu_use

EVERY_S = 10.0


def read_gpus():
    """(source, [readings]): the node's one GPU reader (``detection.gpu_use``); (None, []) without GPUs."""
    found = read_gpu_use()
    return (found["tool"], found["gpus"]) if found["gpus"] else (None, [])


def with_xids(gpus, xids):
    """NVIDIA readings with their Xid events since the sampler started (``xid_errors``, ``xid_last``), where the
    kernel log is readable; the others as they are."""
    return [dict(g, **xids.of(g.get("pci"))) for g in gpus]


class Sampler:
    """The latest readings, refreshed every :data:`EVERY_S` in a daemon thread; on an NVIDIA node each GPU's Xid
    events from the kernel log as they come (``detection.xid.XidCounter``), where the node may read it."""

    def __init__(self, read=read_gpus, every_s=EVERY_S, kmsg="/dev/kmsg"):
        self.read, self.every_s, self.kmsg = read, every_s, kmsg
        self.xids = None  # the node's XidCounter, from its first nvidia-smi reading on
        self.latest = (None, [], None)  # (source, gpus, time.time() of the reading)
        self.thread = threading.Thread(target=self._run, name="nodeweave-gpus", daemon=True)

    def start(self):
        self.thread.start()
        return self

    def sample(self):
        try:
            source, gpus = self.read()
        except Exception:  # noqa: BLE001 - a reading that fails is only missing
            source, gpus = None, []
        if source == "nvidia-smi":
            if self.xids is None:
                from ..detection.xid import XidCounter

                self.xids = XidCounter(self.kmsg)
            self.xids.update()
            gpus = with_xids(gpus, self.xids)
        self.latest = (source, gpus, time.time())
        return source

    def _run(self):
        while True:
            source = self.sample()
            if source is None:
                return  # no GPU tool and no sysfs GPUs: nothing will appear later
            time.sleep(self.every_s)


SAMPLER = None  # this process's sampler (a worker's, for its beats), started by the first beat_extra


def beat_extra():
    """A callable for ``LinkStall.beat_extra``: each new reading once, ``{}`` between them (beats stay small)."""
    global SAMPLER
    if SAMPLER is None:
        SAMPLER = Sampler().start()
    sent = [None]

    def extra():
        source, found, at = SAMPLER.latest
        if at is None or at == sent[0] or not found:
            return {}
        sent[0] = at
        return {"gpus": found, "gpu_source": source}
    return extra
