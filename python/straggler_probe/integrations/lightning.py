"""PyTorch Lightning: a Callback that starts the probe and logs each analysed step to the
Trainer's own loggers (TensorBoard, CSV, W&B...), as scalars under `straggler/`.

    from straggler_probe.integrations.lightning import StragglerProbeCallback
    trainer = L.Trainer(..., callbacks=[StragglerProbeCallback()])

The probe starts in setup() (every rank, after Lightning has initialised torch.distributed and
before it wraps the model in DDP); keyword arguments go to straggler_probe.init(). Rank 0 logs
straggler/S, straggler/S_w, straggler/cause (code: see docs/PYTHON.md), straggler/worst_rank and
straggler/flagged at the step each verdict is for. Works with `lightning` and `pytorch_lightning`.
"""
from __future__ import annotations

from typing import Any

try:
    from lightning.pytorch import Callback
except ImportError:  # the older package name
    from pytorch_lightning import Callback  # type: ignore[no-redef]

import straggler_probe
from .._verdicts import VerdictReader, scalars


class StragglerProbeCallback(Callback):
    def __init__(self, **init_kwargs: Any) -> None:
        super().__init__()
        self.init_kwargs = init_kwargs
        self._reader: VerdictReader | None = None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        straggler_probe.init(**self.init_kwargs)
        out_dir = straggler_probe.out_dir()
        if trainer.global_rank == 0 and out_dir:
            self._reader = VerdictReader(out_dir)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._log(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._log(trainer)

    def _log(self, trainer: Any) -> None:
        if self._reader is None:
            return
        for verdict in self._reader.new():
            metrics = scalars(verdict)
            if not metrics:
                continue
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=int(verdict["step"]))
