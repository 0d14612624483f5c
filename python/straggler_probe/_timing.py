"""Clocks for regions: CPU time on CPU; on a GPU, CPU time under the GPU capture's spans, or
CUDA events on the stream where there is no GPU capture.

All give times on the probe clock (CLOCK_REALTIME ns, what time.time_ns() reads), so CPU and
GPU regions share one axis. On a CUDA job whose GPU capture (CUPTI) is active the regions' GPU
times are the spans of their kernels (GpuRegionTags below): the online model prefers them to any
other time of the same region (online/src/model/source_selection.h: CUPTI > CUDA events > CPU), so
the regions take CPU stamps there (CuptiRegionTimer) and no CUDA event is made. Without GPU
capture CUDA events time them (CudaEventTimer): it never synchronises the training thread; it
records pooled events and a resolver thread turns them into times once the GPU has passed them.
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
import warnings
from typing import Any, Callable

from . import _native as N

now_ns = time.time_ns  # the probe clock (runtime/src/capture/clock.h reads CLOCK_REALTIME too)

# (kind, start, end, microbatch, name_id, stream, coll, group_id, seq, bytes, peer, group_size)
Meta = tuple


class CpuTimer:
    """CPU regions: a stamp is the CPU time; events are recorded at once."""

    is_cuda = False

    def __init__(self, record: Callable[..., Any]):
        self._record = record

    def stamp(self) -> int:
        return now_ns()

    def submit(self, kind: int, start: Any, end: Any, mb: int, name_id: int, stream: int,
               step: int) -> None:
        # step_plus_one = 0: the runtime files the event under the step whose marks enclose start.
        self._record(kind, start, end, mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                     N.TIME_CPU, 0)

    def close(self) -> None:
        pass


class CuptiRegionTimer:
    """CUDA regions while the GPU capture is active: CPU stamps, recorded at once (time source
    host), beside the CUPTI spans of the regions' kernels that supersede them in the analysis.
    A region the capture has no span for (paused for a torch.profiler session) keeps its host
    time. CUDA graph captures are still watched: the runtime's NCCL stream timer must be told."""

    is_cuda = True  # CPU-timed data waits go on their own stream (they overlap GPU time)

    def __init__(self, record: Callable[..., Any], torch_mod: Any,
                 on_capture: Callable[[bool], Any] | None = None):
        self._record = record
        self.capture = GraphCaptureWatch(torch_mod, on_capture)
        self.dropped = 0

    def stamp(self) -> int:
        return now_ns()

    def submit(self, kind: int, start: Any, end: Any, mb: int, name_id: int, stream: int,
               step: int) -> None:
        self._record(kind, start, end, mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                     N.TIME_CPU, 0)

    def close(self) -> None:
        self.capture.close()


class GraphCaptureWatch:
    """CUDA graph captures under way in this process.

    torch.cuda.graph captures in the global mode by default, in which an event query from any
    other thread is an error that invalidates the capture (PyTorch's caching allocator defers its
    own queries for this reason). So the resolver queries nothing while a capture is under way:
    torch.cuda.CUDAGraph.capture_begin / capture_end are wrapped to count captures, and the native
    runtime is told too (its NCCL stream timer polls events the same way).
    """

    def __init__(self, torch_mod: Any, notify: Callable[[bool], Any] | None = None):
        self._lock = threading.Lock()
        self._underway = 0
        self.captures = 0
        self._notify = notify
        self._graph_cls = getattr(getattr(torch_mod, "cuda", None), "CUDAGraph", None)
        self._originals: dict[str, Any] = {}
        if self._graph_cls is None:
            return
        for name, begin in (("capture_begin", True), ("capture_end", False)):
            original = getattr(self._graph_cls, name, None)
            if original is None:
                continue
            self._originals[name] = original
            setattr(self._graph_cls, name, self._wrap(original, begin))

    def _wrap(self, original: Callable[..., Any], begin: bool) -> Callable[..., Any]:
        watch = self

        def wrapper(graph: Any, *args: Any, **kwargs: Any) -> Any:
            if begin:
                watch._changed(True)  # before: the capture starts inside
                try:
                    return original(graph, *args, **kwargs)
                except BaseException:
                    watch._changed(False)
                    raise
            try:
                return original(graph, *args, **kwargs)
            finally:
                watch._changed(False)
        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return wrapper

    def _changed(self, begin: bool) -> None:
        with self._lock:
            if begin:
                self._underway += 1
                self.captures += 1
            elif self._underway > 0:
                self._underway -= 1
        if self._notify is not None:
            try:
                self._notify(begin)
            except Exception:  # noqa: BLE001 - telling the runtime is a courtesy
                pass

    def underway(self) -> bool:
        return self._underway > 0

    def close(self) -> None:
        for name, original in self._originals.items():
            setattr(self._graph_cls, name, original)
        self._originals.clear()


class CudaEventTimer:
    """GPU regions timed by events on the current stream, resolved off the training thread.

    Times come from elapsed_time() against an anchor event whose CPU time was taken when it
    completed; the anchor is renewed every few seconds (by the resolver, never the training
    thread) so that drift between the GPU and CPU clocks stays small.

    The resolver thread works on the rank's device: the one current on the training thread when
    the timer was made (the job's torch.cuda.set_device(LOCAL_RANK)), else LOCAL_RANK. A new
    thread's current device is 0, so without this ranks 1-7 of a host would open contexts on GPU 0
    and elapsed_time across devices fails. One failure (a query, an elapsed time, a new anchor)
    costs that region, counted in `failed` with one warning; the resolver goes on.
    """

    is_cuda = True
    MAX_PENDING = 65536        # regions waiting for the GPU; beyond this they are dropped and counted
    POLL_S = 0.005
    ANCHOR_EVERY_S = 5.0
    POOL_START = 64            # events made up front: a step's regions reuse them, none made later

    def __init__(self, record: Callable[..., Any], torch_mod: Any, device: int | None = None,
                 on_capture: Callable[[bool], Any] | None = None):
        self._record = record
        self._torch = torch_mod
        self.device = self._rank_device(torch_mod) if device is None else device
        self._pending: collections.deque = collections.deque()
        self.dropped = 0
        self.failed = 0
        self._warned = False
        self.capture = GraphCaptureWatch(torch_mod, on_capture)
        self._stop = threading.Event()
        self._wake = threading.Event()  # set when a region is pending: the resolver sleeps on it
        self._anchor = self._new_anchor()  # one synchronisation, at start-up, not per step
        self._anchored_at = time.monotonic()
        self._pool = [self._torch.cuda.Event(enable_timing=True) for _ in range(self.POOL_START)]
        self._thread: threading.Thread | None = None  # started at the first region
        self._start_lock = threading.Lock()

    @staticmethod
    def _rank_device(torch_mod: Any) -> int | None:
        cuda = torch_mod.cuda
        if not hasattr(cuda, "current_device"):
            return None  # a stand-in without devices: nothing to set
        current = cuda.current_device()
        local = os.environ.get("LOCAL_RANK", "")
        if current == 0 and local.isdigit() and 0 < int(local) < cuda.device_count():
            return int(local)  # no set_device: the torchrun convention, one GPU per local rank
        return current

    def _new_anchor(self) -> tuple[Any, int]:
        cuda = self._torch.cuda
        guard = cuda.device(self.device) if self.device is not None else contextlib.nullcontext()
        with guard:
            ev = cuda.Event(enable_timing=True)
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
        if self._thread is None:
            self._start_resolver()
        if not self._wake.is_set():
            self._wake.set()

    def _start_resolver(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="straggler_probe-cuda",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        if self.device is not None:
            try:
                self._torch.cuda.set_device(self.device)  # this thread's current device is 0
            except Exception as err:  # noqa: BLE001
                self._failed(err)
        while not self._stop.is_set():
            if not self._pending:
                # Nothing to resolve: sleep until a region comes (a poll would take the GIL
                # from the training thread every POLL_S for nothing).
                self._wake.clear()
                if not self._pending:
                    self._wake.wait()
                continue
            if self._stop.wait(self.POLL_S) or self.capture.underway():
                continue  # a query during a capture would invalidate it
            if time.monotonic() - self._anchored_at > self.ANCHOR_EVERY_S:
                try:
                    self._anchor = self._new_anchor()
                except Exception as err:  # noqa: BLE001 - the old anchor stays
                    self._failed(err)
                self._anchored_at = time.monotonic()
            try:
                self._drain()
            except Exception as err:  # noqa: BLE001 - one failure must not end every later region
                self._failed(err)
                if self._pending:
                    self._pending.popleft()  # the region that failed: counted, not retried
        if not self.capture.underway():
            try:
                self._drain()
            except Exception as err:  # noqa: BLE001
                self._failed(err)

    def _failed(self, err: BaseException) -> None:
        self.failed += 1
        if not self._warned:
            self._warned = True
            warnings.warn(f"straggler_probe: a CUDA-event region could not be timed "
                          f"({type(err).__name__}: {err}); it is left out (counted) and later "
                          "regions go on", RuntimeWarning, stacklevel=2)

    def _drain(self) -> None:
        anchor, anchor_ns = self._anchor
        while self._pending:
            kind, start, end, mb, name_id, stream, step = self._pending[0]
            if not (end.query() and start.query()):
                return  # in stream order: later regions are not done either
            t0 = anchor_ns + int(anchor.elapsed_time(start) * 1e6)
            t1 = anchor_ns + int(anchor.elapsed_time(end) * 1e6)
            self._pending.popleft()
            # Pinned to the step that launched it: the GPU may finish after the step's mark.
            self._record(kind, t0, max(t0, t1), mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                         N.TIME_CUDA_EVENT, step + 1)
            self._pool.extend((start, end))

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._start_lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=2.0)
        self.capture.close()


class GpuRegionTags:
    """The regions' kernels on the GPU: each forward / backward / optimizer region is bracketed
    by libstraggler_probe.so's launch markers (cupti/src/attribution/launch_markers.h: a marker at push and at
    pop), so that its GPU capture attributes every kernel launched in between, from any thread
    (autograd's device threads in a CUDA backward too), to the region and emits the region's GPU
    span (time source CUPTI; the online model then prefers it to the CUDA-event or CPU time of the
    same region). Only for CUDA jobs whose runtime has GPU capture; a push costs one call that
    returns at once while capture is off or paused, else one asynchronous driver call.
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
