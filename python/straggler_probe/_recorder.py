"""The per-process recording state: which step and micro-batch we are in, and where events go.

Hooks (straggler_probe.hooks.*) report what happened; the Recorder numbers micro-batches, merges
what belongs to one forward, and hands complete events to the core. Everything here runs on the
training thread except comm completions, GC pauses and CUDA resolution, which only call
record_comm/record_cpu (thread-safe: the core's rings are per thread).
"""
from __future__ import annotations

import threading
import warnings
from typing import Any, Callable

from . import _native as N
from ._timing import CpuTimer, now_ns


# Forwards in one step without a step boundary before the probe says it sees no steps: more
# micro-batches than any gradient accumulation we know of, and far fewer than a job runs.
NO_STEP_FORWARDS = 256


class Recorder:
    def __init__(self, core: Any, timer: Any):
        self.core = core
        self.timer = timer
        self.train_thread = threading.get_ident()
        self.step = 0                # label of the step in progress
        self.fwd_mb = 0              # micro-batches started this step (forward)
        self.bwd_mb = 0              # backwards run this step
        self.in_backward = False     # activation-checkpoint recomputation is not a new forward
        self._bwd_engine_end: Any = None  # stamp from the final callback (hooks/autograd.py)
        self._bwd_end_queued = False
        self.ddp_backward_ends_at_engine = False  # a DDP model was seen (hooks/autograd.py)
        self._bwd_start: Any = None  # start of the backward's current piece (split_at_wait)
        self._fwd: list[Any] | None = None  # open forward: [start, end, mb]
        self._fwd_depth = 0
        self._names: dict[str, int] = {}
        self._failed = False
        # /control paused this rank's recording (read once per step, after its mark): the
        # per-operation hooks (collectives, data waits, GC) return after this one check; those
        # that shape steps and micro-batches (forward, backward, optimizer) keep going.
        self.paused = False
        self._paused_now = getattr(core, "recording_paused", None)  # None: a core without it
        self._last_compute = 0       # FORWARD or BACKWARD: which micro-batch a send follows
        self.compute_end_ns = 0      # CPU time the last forward/backward call returned
        self._pending_recv: list[dict] = []  # receives wait for the compute they feed
        self.p2p_tags: Any = None    # hooks/pipelining.P2pTags: micro-batches named by a schedule
        self._training = False       # set at the first data wait / forward / backward / optimizer
        self.gpu: Any = None         # _timing.GpuRegionTags when the GPU capture tags regions
        self.on_first_forward: Callable[[], None] | None = None  # optimizer hooks learn from it
        self.on_training_start: Callable[[], None] | None = None  # the probe picks its timer
        self.on_step_marked: Callable[[], None] | None = None
        self.on_backward_end: Callable[[], None] | None = None  # the process-group layer polls
        self.on_no_steps: Callable[[int], None] | None = None  # called once, with the forwards
        self.on_fail: Callable[[str], None] | None = None

    # ---- plumbing ------------------------------------------------------------------------
    def intern(self, name: str) -> int:
        nid = self._names.get(name)
        if nid is None:
            nid = self.core.intern(name)
            self._names[name] = nid
        return nid

    def fail(self, message: str) -> None:
        """A bug in the probe's own hooks: one warning, recording stops on this rank, and (through
        on_fail) every rank's probe steps aside, since the analysis needs all ranks."""
        if not self._failed:
            self._failed = True
            warnings.warn(f"straggler_probe: recording stopped after an internal error ({message}); "
                          "the probe steps aside and training continues without it",
                          RuntimeWarning, stacklevel=3)
            if self.on_fail is not None:
                try:
                    self.on_fail(message)
                except Exception:  # noqa: BLE001 - already failing: nothing more to say
                    pass

    def disable(self) -> None:
        """Stop recording without a warning (the probe stepped aside; someone already said why)."""
        self._failed = True

    @property
    def failed(self) -> bool:
        return self._failed

    def training_activity(self) -> None:
        """The first sign of training closes the set-up period (init, model and DDP construction)
        as step -1, so that step 0 starts where training starts. Step -1 is never analysed."""
        if not self._training:
            self._training = True
            if self.step == 0:
                self.core.mark_step(-1)
            if self.on_training_start is not None:
                self.on_training_start()

    # ---- forward --------------------------------------------------------------------------
    def forward_begin(self) -> bool:
        """A top-level module's forward starts; returns whether it is being recorded."""
        if self.in_backward or threading.get_ident() != self.train_thread:
            return False
        self._fwd_depth += 1
        if self._fwd_depth > 1:
            return True  # nested top-level modules (a loss module inside a wrapper): one region
        if self._fwd is None:
            self.training_activity()
            if self.fwd_mb == 0 and self.on_first_forward is not None:
                self.on_first_forward()
            self._flush_recv(self.fwd_mb)
            self._fwd = [self.timer.stamp(), None, self.fwd_mb]
            self.fwd_mb += 1
            if self.fwd_mb == NO_STEP_FORWARDS and self.step == 0 and self.on_no_steps:
                self.on_no_steps(self.fwd_mb)
        if self.gpu is not None:
            self.gpu.push(N.FORWARD, self._fwd[2])
        return True

    def forward_end(self) -> None:
        self._fwd_depth = max(0, self._fwd_depth - 1)
        if self.gpu is not None and self._fwd_depth == 0:
            self.gpu.pop(N.FORWARD)
        if self._fwd is not None and self._fwd_depth == 0:
            # Kept open: a loss module called right after the model extends the same micro-batch;
            # anything else (backward, p2p, the step end) closes it.
            self._fwd[1] = self.timer.stamp()
            self.compute_end_ns = now_ns()

    def close_forward(self) -> None:
        fwd = self._fwd
        if fwd is None or fwd[1] is None:
            return
        self._fwd = None
        self._last_compute = N.FORWARD
        self.timer.submit(N.FORWARD, fwd[0], fwd[1], fwd[2], 0, N.STREAM_MAIN, self.step)

    @property
    def current_microbatch(self) -> int:
        """The micro-batch a forward starting now would get (annotations before the forward)."""
        return self._fwd[2] if self._fwd is not None else self.fwd_mb

    # ---- backward -------------------------------------------------------------------------
    def backward_begin(self) -> Any:
        self.training_activity()
        self.close_forward()
        self._flush_recv(self.bwd_mb)
        self._bwd_engine_end = None
        self._bwd_end_queued = False
        self.in_backward = True
        start = self._bwd_start = self.timer.stamp()
        if self.gpu is not None:
            self.gpu.pop(N.BACKWARD)  # left open by a backward that raised
            self.gpu.push(N.BACKWARD, self.bwd_mb)
        return start

    def engine_end_wanted(self) -> bool:
        """True once per backward: the caller (a pre-hook on the backward's root, while the engine
        runs the graph) queues engine_done as a final callback, before DDP queues the wait for its
        buckets."""
        if not self.in_backward or self._bwd_end_queued:
            return False
        self._bwd_end_queued = True
        return True

    def engine_done(self) -> None:
        """Final callback: the graph has run; what follows is waiting for communication."""
        if self.in_backward and not self._failed:
            self._bwd_engine_end = self.timer.stamp()

    def backward_end(self, start: Any) -> None:
        if self.gpu is not None:
            self.gpu.pop(N.BACKWARD)
        end = self._bwd_engine_end if self._bwd_engine_end is not None else self.timer.stamp()
        if self._bwd_start is not None:
            start = self._bwd_start  # after a wait inside it: the last piece
        self._bwd_start = None
        self.in_backward = False
        self.compute_end_ns = now_ns()
        mb = self.bwd_mb
        self.bwd_mb += 1
        self._last_compute = N.BACKWARD
        self.timer.submit(N.BACKWARD, start, end, mb, 0, N.STREAM_MAIN, self.step)
        if self.on_backward_end is not None:
            self.on_backward_end()

    @property
    def in_region(self) -> bool:
        """A forward or backward is running on the training thread right now."""
        return self.in_backward or (self._fwd is not None and self._fwd[1] is None)

    def split_at_wait(self, wait_start: int, wait_end: int) -> None:
        """The training thread waited for a collective (Work.wait()) inside a forward or
        backward (FSDP waits for each layer's all-gather in its forward): the region so far is
        one piece, and the next starts when the wait ended, so the wait is a gap that the
        analysis ties to the collective instead of compute of this rank. CPU-timed regions
        only: on CUDA a wait blocks the stream, not this thread."""
        if not isinstance(self.timer, CpuTimer):
            return
        fwd = self._fwd
        if self.in_backward and self._bwd_start is not None:
            mb = self.bwd_mb
            self.timer.submit(N.BACKWARD, self._bwd_start, wait_start, mb, 0, N.STREAM_MAIN,
                              self.step)
            self._bwd_start = wait_end
        elif fwd is not None and fwd[1] is None and self._fwd_depth > 0:
            self.timer.submit(N.FORWARD, fwd[0], wait_start, fwd[2], 0, N.STREAM_MAIN, self.step)
            fwd[0] = wait_end

    # ---- optimizer and steps --------------------------------------------------------------
    def optimizer_begin(self) -> Any:
        self.training_activity()
        self.close_forward()
        start = self.timer.stamp()
        if self.gpu is not None:
            self.gpu.push(N.OPTIMIZER, -1)
        return start

    def optimizer_suspend(self) -> None:
        """An optimizer region begun but not recorded: its step called the closure (forward and
        backward) before doing its own work."""
        if self.gpu is not None:
            self.gpu.pop(N.OPTIMIZER)

    def optimizer_end(self, start: Any) -> None:
        if self.gpu is not None:
            self.gpu.pop(N.OPTIMIZER)
        self.timer.submit(N.OPTIMIZER, start, self.timer.stamp(), -1, 0, N.STREAM_MAIN, self.step)

    def end_step(self) -> None:
        self.close_forward()
        self._flush_recv(-1)
        if self.gpu is not None:
            self.gpu.pop_all()  # no region spans a step boundary
        self.core.mark_step(self.step)
        if self._paused_now is not None:
            self.paused = bool(self._paused_now())
        self.step += 1
        self.fwd_mb = 0
        self.bwd_mb = 0
        self._fwd_depth = 0
        self._last_compute = 0
        if self.on_step_marked is not None:
            self.on_step_marked()

    # ---- CPU-only and communication events ---------------------------------------------------
    # Positional calls: pybind11 takes keyword arguments at ~4x the cost (1.8 vs 0.4 µs a call),
    # and GC pauses, data waits and every collective come through here. The order is
    # _core.record's: kind, start, end, microbatch, name_id, stream, coll, group_id, seq, bytes,
    # peer, group_size, time_source, step_plus_one.
    def record_cpu(self, kind: int, start_ns: int, end_ns: int, stream: int, name_id: int = 0,
                    mb: int = -1) -> None:
        self.core.record(kind, start_ns, end_ns, mb, name_id, stream, N.COLL_NONE, 0, 0, 0, -1, 0,
                         N.TIME_CPU, 0)

    def record_comm(self, kind: int, coll: int, start_ns: int, end_ns: int, stream: int,
                    group_id: int, seq: int, nbytes: int, peer: int, group_size: int,
                    name_id: int = 0, mb: int | None = None) -> None:
        """mb: the micro-batch a send/recv carries, as p2p_boundary() said when it was issued
        (None from a caller that did not ask it: a send then carries the compute that just ran)."""
        if mb is None and kind == N.SEND:
            mb = self._last_output_mb()
        if kind == N.RECV and mb is None and threading.get_ident() == self.train_thread:
            # A receive feeds the next compute, which is not known yet (forward or backward).
            self._pending_recv.append((kind, start_ns, end_ns, name_id, stream, coll, group_id,
                                       seq, nbytes, peer, group_size))
        else:
            self.core.record(kind, start_ns, end_ns, -1 if mb is None else mb, name_id, stream,
                             coll, group_id, seq, nbytes, peer, group_size, N.TIME_CPU, 0)

    def _last_output_mb(self) -> int:
        """The micro-batch whose output a send carries: that of the compute that just ran."""
        return max(self.fwd_mb - 1 if self._last_compute == N.FORWARD else self.bwd_mb - 1, -1)

    def _flush_recv(self, mb: int) -> None:
        if self._pending_recv:
            for kind, start, end, name_id, stream, coll, gid, seq, nbytes, peer, size in \
                    self._pending_recv:
                self.core.record(kind, start, end, mb, name_id, stream, coll, gid, seq, nbytes,
                                 peer, size, N.TIME_CPU, 0)
            self._pending_recv.clear()

    def annotate(self, mb: int, key: str, value: str) -> None:
        self.core.annotate(mb, key, value)

    def p2p_boundary(self, kind: int = N.SEND, peer: int = -1) -> int | None:
        """A send/recv is issued: it ends the forward in progress (pipeline stages send between
        micro-batches). Returns the micro-batch it carries: the one a pipeline schedule named for
        it (hooks/pipelining.py), else for a send the output of the compute that just ran, else
        None (a receive feeds the next compute, not known yet). Decided at the issue, not at the
        completion: a schedule may wait for its sends long after (GPipe waits after all forwards)."""
        self.close_forward()
        tags = self.p2p_tags
        mb = tags.take(kind, peer) if tags is not None else None
        if mb is None and kind == N.SEND:
            mb = self._last_output_mb()
        return mb
