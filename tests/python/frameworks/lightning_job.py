"""PyTorch Lightning, Trainer(strategy="ddp") on 4 CPU processes (gloo), automatic optimisation
(Lightning steps the optimizer with a closure that runs forward and backward).

launch="lightning": Lightning's own launcher (this script is started once; Lightning starts the
other ranks by running it again with LOCAL_RANK and WORLD_SIZE, never RANK). launch="torchrun":
started by torchrun, every rank already has RANK. spec["callback"] (with mode="callback":
no init() at the top): the probe starts from
straggler_probe.integrations.lightning.StragglerProbeCallback, which logs to a CSVLogger in out.
"""
from __future__ import annotations

from fw_job import StepClock, compute_seconds, load_spec, make_block, write_result

spec = load_spec()

import torch  # noqa: E402
import lightning as L  # noqa: E402


class Module(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = make_block()
        self.clock = StepClock()

    def setup(self, stage: str) -> None:
        torch.set_num_threads(1)
        self.net.fwd_s, self.net.bwd_s = compute_seconds(spec, self.global_rank)

    def training_step(self, batch, batch_idx):  # noqa: ANN001
        (x,) = batch
        loss = self.net(x).pow(2).mean()
        self.last_loss = loss.detach()
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:  # noqa: ANN001
        self.clock.tick()

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.SGD(self.parameters(), lr=1e-3)


def main() -> None:
    torch.manual_seed(0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4096, 16)),
                                       batch_size=8)
    callbacks = []
    if spec.get("callback"):
        from straggler_probe.integrations.lightning import StragglerProbeCallback
        callbacks.append(StragglerProbeCallback(**spec.get("probe", {})))
    module = Module()
    logger = False
    if spec.get("callback"):
        logger = L.pytorch.loggers.CSVLogger(spec["out"], name="csv", version=0)
    trainer = L.Trainer(accelerator="cpu", devices=spec.get("world", 4), strategy="ddp",
                        max_steps=spec["steps"], logger=logger, log_every_n_steps=1,
                        callbacks=callbacks, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, limit_val_batches=0,
                        default_root_dir=spec["out"])
    trainer.fit(module, data)
    write_result(spec, trainer.global_rank, module.clock.times,
                 loss=float(module.last_loss))


if __name__ == "__main__":
    main()
