"""Clocks for regions: host time on CPU, CUDA events on the stream on a GPU.

Both give times on the probe clock (CLOCK_REALTIME ns, what time.time_ns() reads), so host and
GPU regions share one axis. The CUDA path never synchronises the training thread: it records
events and a resolver thread turns them into times once the GPU has passed them.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable

from . import _native as N

now_ns = time.time_ns  # the probe clock (runtime/src/clock.h reads CLOCK_REALTIME too)

# (kind, start, end, microbatch, name_id, stream, coll, group_id, seq, bytes, peer, group_size)
Meta = tuple


class HostTimer:
    """CPU regions: a stamp is the host time; events are recorded at once."""

    is_cuda = False

    def __init__(self, record: Callable[..., Any]):
        self._record = record

    def stamp(self) -> int:
        return now_ns()

    def submit(self, kind: int, start: Any, end: Any, mb: int, name_id: int, stream: int,
               step: int) -> None:
        # step_plus_one = 0: the runtime files the event under the step whose marks enclose start.
        self._record(kind, start, end, mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                     N.TIME_HOST, 0)

    def close(self) -> None:
        pass


class CudaEventTimer:
    """GPU regions timed by events on the current stream, resolved off the training thread.

    Times come from elapsed_time() against an anchor event whose host time was taken when it
    completed; the anchor is renewed every few seconds (by the resolver, never the training
    thread) so that drift between the GPU and host clocks stays small.
    """

    is_cuda = True
    MAX_PENDING = 65536        # regions waiting for the GPU; beyond this they are dropped and counted
    POLL_S = 0.005
    ANCHOR_EVERY_S = 5.0

    def __init__(self, record: Callable[..., Any], torch_mod: Any):
        self._record = record
        self._torch = torch_mod
        self._pool: list[Any] = []
        self._pending: collections.deque = collections.deque()
        self.dropped = 0
        self._stop = threading.Event()
        self._anchor = self._new_anchor()  # one synchronisation, at start-up, not per step
        self._thread = threading.Thread(target=self._run, name="straggler_probe-cuda", daemon=True)
        self._thread.start()

    def _new_anchor(self) -> tuple[Any, int]:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        ev.synchronize()
        return ev, now_ns()

    def stamp(self) -> Any:
        ev = self._pool.pop() if self._pool else self._torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def submit(self, kind: int, start: Any, end: Any, mb: int, name_id: int, stream: int,
               step: int) -> None:
        if len(self._pending) >= self.MAX_PENDING:
            self.dropped += 1
            return
        self._pending.append((kind, start, end, mb, name_id, stream, step))

    def _run(self) -> None:
        last_anchor = time.monotonic()
        while not self._stop.wait(self.POLL_S):
            self._drain()
            if time.monotonic() - last_anchor > self.ANCHOR_EVERY_S:
                self._anchor = self._new_anchor()
                last_anchor = time.monotonic()
        self._drain()

    def _drain(self) -> None:
        anchor, anchor_ns = self._anchor
        while self._pending:
            kind, start, end, mb, name_id, stream, step = self._pending[0]
            if not (end.query() and start.query()):
                return  # in stream order: later regions are not done either
            self._pending.popleft()
            t0 = anchor_ns + int(anchor.elapsed_time(start) * 1e6)
            t1 = anchor_ns + int(anchor.elapsed_time(end) * 1e6)
            # Pinned to the step that launched it: the GPU may finish after the step's mark.
            self._record(kind, t0, max(t0, t1), mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                         N.TIME_CUDA_EVENT, step + 1)
            self._pool.extend((start, end))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


class GpuRegionTags:
    """The regions' kernels on the GPU: each forward / backward / optimizer region pushes its
    (kind, micro-batch) on CUPTI's external-correlation stack of the training thread, so that
    libstraggler_probe.so's GPU capture attributes the kernels launched inside to it and emits the
    region's GPU span (time source CUPTI; the online model then prefers it to the CUDA-event or
    host time of the same region). Only for CUDA jobs whose runtime has GPU capture; a push costs
    one call that returns at once while capture is off or paused.

    Kernels that autograd launches from its own device threads (a CUDA backward) do not see the
    training thread's tag: they count as outside any region, and the backward keeps its
    CUDA-event time.
    """

    def __init__(self, core: Any):
        self._push = core.cupti_region_push
        self._pop = core.cupti_region_pop
        self._open: list[int] = []  # kinds this thread pushed, innermost last

    def push(self, kind: int, mb: int) -> None:
        if self._push(kind, mb, 0):
            self._open.append(kind)

    def pop(self, kind: int) -> None:
        """Ends the innermost open region of `kind`, and any left open inside it (an exception
        skipped their end): CUPTI's stack stays balanced."""
        if kind not in self._open:
            return
        while self._open:
            done = self._open.pop()
            self._pop()
            if done == kind:
                return

    def pop_all(self) -> None:
        while self._open:
            self._open.pop()
            self._pop()
