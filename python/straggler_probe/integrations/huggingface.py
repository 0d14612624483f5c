"""Hugging Face transformers: a TrainerCallback that starts the probe and adds each analysed
step's numbers to the Trainer's own logs (so every `report_to` integration, TensorBoard, W&B...,
and `trainer.state.log_history` get them), as scalars under `straggler/`.

    from straggler_probe.integrations.huggingface import StragglerProbeCallback
    trainer = Trainer(..., callbacks=[StragglerProbeCallback()])

The probe starts when the Trainer is built (on_init_end: torch.distributed is initialised by
then); keyword arguments go to straggler_probe.init(). When the Trainer logs (logging_steps),
rank 0 adds the latest analysed step's straggler/S, straggler/S_w, straggler/cause (code: see
docs/PYTHON.md), straggler/worst_rank, straggler/flagged, and straggler/flagged_share (the share
of steps flagged since the previous log). Callbacks see the logs in the order they were added,
report_to integrations first: so that they see ours, this callback moves itself to the front of
the Trainer's list when it starts.
"""
from __future__ import annotations

import sys
from typing import Any

from transformers import TrainerCallback

import straggler_probe
from .._verdicts import VerdictReader, scalars


class StragglerProbeCallback(TrainerCallback):
    def __init__(self, **init_kwargs: Any) -> None:
        self.init_kwargs = init_kwargs
        self._reader: VerdictReader | None = None
        self._latest: dict[str, float] = {}
        self._flagged = 0
        self._analysed = 0

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        straggler_probe.init(**self.init_kwargs)
        out_dir = straggler_probe.out_dir()
        if state.is_world_process_zero and out_dir:
            self._reader = VerdictReader(out_dir)
        _move_to_front(self)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._reader is None:
            return
        for verdict in self._reader.new():
            metrics = scalars(verdict)
            if metrics:
                # which step these numbers are for: the probe counts from 0, the Trainer's
                # global_step from 1, and the latest analysed step lags the log by a few
                metrics["straggler/step"] = float(verdict["step"])
                self._latest = metrics
                self._analysed += 1
                self._flagged += int(metrics["straggler/flagged"])

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if self._reader is None or logs is None or not self._latest:
            return
        ours = dict(self._latest)
        if self._analysed:
            ours["straggler/flagged_share"] = self._flagged / self._analysed
        self._flagged = self._analysed = 0
        logs.update(ours)  # what the report_to integrations, called after us, log
        history = getattr(state, "log_history", None)
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(ours)  # the Trainer copied logs there before calling us


def _move_to_front(callback: StragglerProbeCallback) -> None:
    """Called from Trainer.__init__ (on_init_end): find that Trainer up the stack and put this
    callback first in its handler, so that report_to integrations log what it adds."""
    frame = sys._getframe(1)
    while frame is not None:
        handler = getattr(frame.f_locals.get("self"), "callback_handler", None)
        callbacks = getattr(handler, "callbacks", None)
        if isinstance(callbacks, list) and callback in callbacks:
            callbacks.remove(callback)
            callbacks.insert(0, callback)
            return
        frame = frame.f_back
