"""Python garbage-collection pauses, from gc.callbacks (exact start/stop of every collection).

A collection stops every Python thread (it holds the GIL), so it is recorded on its own stream
as a pause overlapping whatever the training thread was doing. Collections shorter than
MIN_PAUSE_NS (young-generation sweeps, a few microseconds each and hundreds per step) are
counted, not recorded: they cost more to record than they delay anything.
"""
from __future__ import annotations

import gc
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns

MIN_PAUSE_NS = 50_000


class GcHooks:
    def __init__(self, recorder: Any):
        self.rec = recorder
        self._start = 0
        self.short_pauses = 0
        self._names: list[int] = []

    def install(self) -> Callable[[], None]:
        self._names = [self.rec.intern(f"gc-gen{g}") for g in range(3)]
        gc.callbacks.append(self._callback)
        return self.uninstall

    def uninstall(self) -> None:
        try:
            gc.callbacks.remove(self._callback)
        except ValueError:
            pass

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = now_ns()
            return
        start, self._start = self._start, 0
        if not start or self.rec.failed or self.rec.paused:
            return
        end = now_ns()
        if end - start < MIN_PAUSE_NS:
            self.short_pauses += 1
            return
        try:
            gen = int(info.get("generation", 0))
            name = self._names[gen] if 0 <= gen < len(self._names) else 0
            self.rec.record_cpu(N.GC, start, end, N.STREAM_GC, name)
        except Exception as err:  # noqa: BLE001 - never raise out of a gc callback
            self.rec.fail(f"gc callback: {type(err).__name__}: {err}")
