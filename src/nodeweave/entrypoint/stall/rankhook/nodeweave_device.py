"""Device time a rank spends waiting in its collectives, so a straggler is seen under NCCL and RCCL too.

NCCL's (and RCCL's) collectives return to Python at once: the fast rank waits
later, in ``synchronize()``, ``.item()`` or its next kernel, outside every
collective, so host time per collective is the same on every rank. On the
device the wait is plain: the collective starts on a rank's stream when the
rank's earlier work there is done, and ends when the last rank has arrived.
For each synchronous collective on a CUDA (or ROCm) tensor the probe records
one event on the current stream before the call (this rank arrives) and one
after it (the collective is done on this stream); the time between them is
this rank's wait plus the transfer. The last rank to arrive waits least,
whether it was late on the CPU side (it enqueued late) or on the GPU side
(its kernels ran long, or another process shares its GPU). Each pair is read
lazily, on a later collective, once done (``query()``): nothing here waits
for the device. About 10 µs per collective; events are reused.

Not timed here: ``async_op=True`` calls (the caller waits later),
collectives without a tensor (``barrier``), ones captured into a CUDA graph,
and collectives issued from C++ (DDP's reducer). NCCL's flight recorder
durations (``nodeweave_flight.py``, with ``TORCH_NCCL_ENABLE_TIMING``) cover
those; without them they are judged by host time only.
Stdlib at import; torch is taken from ``sys.modules``, never imported here.
"""

import sys
from collections import deque

MAX_PENDING = 1024  # collectives not yet done on the device; past it, a collective goes untimed


def first_tensor(args, kwargs):
    """The collective's first tensor (``all_reduce(t)``; ``all_gather(list, t)``'s first list item), or None.
    Runs on every collective: the common ``all_reduce(t)`` is answered without building anything."""
    for value in args[:2]:
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if value is not None and hasattr(value, "is_cuda"):
            return value
    if kwargs:
        for key in ("tensor", "output_tensor", "tensor_list"):
            value = kwargs.get(key)
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            if value is not None and hasattr(value, "is_cuda"):
                return value
    return None


class DeviceTimer:
    """Sums, per rank, the device time between each timed collective's two events (``waited_s``, ``timed``)."""

    def __init__(self, torch):
        self.torch = torch
        self.free, self.pending = [], deque()
        self.waited_s, self.timed = 0.0, 0

    def begin(self, args, kwargs):
        """A token for :meth:`end`, or None when this call is not timed."""
        if kwargs.get("async_op"):
            return None
        tensor = first_tensor(args, kwargs)
        if tensor is None or not tensor.is_cuda:
            return None
        cuda = self.torch.cuda
        if cuda.is_current_stream_capturing():
            return None
        self.resolve()
        if len(self.pending) >= MAX_PENDING:
            return None
        start, end = self.free.pop() if self.free else (cuda.Event(enable_timing=True), cuda.Event(enable_timing=True))
        stream = cuda.current_stream(tensor.device)
        start.record(stream)
        return start, end, stream

    def end(self, token):
        start, end, stream = token
        end.record(stream)
        self.pending.append((start, end))

    def resolve(self):
        """Add every finished pair, oldest first (a stream runs in order: the first unfinished one stops it)."""
        while self.pending and self.pending[0][1].query():
            start, end = self.pending.popleft()
            self.waited_s += start.elapsed_time(end) / 1000.0
            self.timed += 1
            self.free.append((start, end))


def timer_for(args, kwargs):
    """A :class:`DeviceTimer` when this collective is on a CUDA/ROCm tensor (torch is loaded), else None."""
    torch = sys.modules.get("torch")
    tensor = first_tensor(args, kwargs) if torch is not None else None
    if tensor is None or not tensor.is_cuda:
        return None
    return DeviceTimer(torch)
