"""Time the training thread waits for the next batch (DataLoader iterators' __next__).

Patched on torch's base iterator class, so single- and multi-process loaders are both covered.
The batch is also where CPU-side sequence lengths are still cheap to read (before .to(device)):
they are handed to the forward hooks for the micro-batch that consumes the batch.
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from . import seqlens


class DataLoaderHooks:
    def __init__(self, recorder: Any, torch_mod: Any,
                 on_batch: Callable[[list[int]], None] | None):
        self.rec = recorder
        self.torch = torch_mod
        self.on_batch = on_batch
        self._cls: Any = None
        self._orig: Callable[..., Any] | None = None

    def install(self) -> Callable[[], None]:
        cls = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
        orig = cls.__next__
        if getattr(orig, "_straggler_probe", False):
            return lambda: None
        self._cls, self._orig = cls, orig
        rec = self.rec
        on_batch = self.on_batch
        name_id = rec.intern("dataloader-next")

        def __next__(it: Any) -> Any:
            if rec.failed or rec.paused or threading.get_ident() != rec.train_thread:
                return orig(it)
            rec.training_activity()
            start = now_ns()
            batch = orig(it)  # StopIteration passes through unrecorded: no batch was waited for
            end = now_ns()
            try:
                # In the training thread's sequence on CPU; on its own stream when the other
                # regions are GPU-timed, since a CPU wait and GPU work overlap in time.
                stream = N.STREAM_CPU_WAIT if rec.timer.is_cuda else N.STREAM_MAIN
                rec.record_cpu(N.DATA_WAIT, start, end, stream, name_id)
                if on_batch is not None:
                    lengths = seqlens.from_mapping(batch)
                    if lengths:
                        on_batch(lengths)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"data loader hook: {type(err).__name__}: {err}")
            return batch

        __next__._straggler_probe = True  # type: ignore[attr-defined]
        cls.__next__ = __next__
        return self.uninstall

    def uninstall(self) -> None:
        if self._cls is not None:
            self._cls.__next__ = self._orig
            self._cls = None
