"""Hugging Face transformers.Trainer under torchrun on 4 CPU ranks (gloo via accelerate), with
gradient accumulation 2: two micro-batches per optimizer step, the first under DDP's no_sync.
The model is a plain nn.Module returning {"loss": ...} (Trainer accepts any such module).
spec["callback"]: log through straggler_probe.integrations.huggingface.StragglerProbeCallback.
"""
from __future__ import annotations

import os

from fw_job import StepClock, compute_seconds, load_spec, make_block, write_result

spec = load_spec()

import torch  # noqa: E402
import transformers  # noqa: E402


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = make_block()

    def forward(self, x, labels=None):  # noqa: ANN001
        return {"loss": (self.net(x) - labels).pow(2).mean()}


class Data(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g)
        self.y = torch.randn(n, 16, generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict:
        return {"x": self.x[i], "labels": self.y[i]}


class Clock(transformers.TrainerCallback):
    """Times the steps, and keeps what on_log is given, as a report_to integration would."""

    def __init__(self) -> None:
        self.clock = StepClock()
        self.logged: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201
        self.logged.append(dict(logs or {}, step=state.global_step))

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self.clock.tick()


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the model is built before the Trainer seeds: same start every run
    rank = int(os.environ["RANK"])
    model = Model()
    model.net.fwd_s, model.net.bwd_s = compute_seconds(spec, rank)
    args = transformers.TrainingArguments(
        output_dir=os.path.join(spec["out"], "hf"), per_device_train_batch_size=8,
        gradient_accumulation_steps=spec.get("accumulation", 2), max_steps=spec["steps"],
        learning_rate=1e-3, logging_steps=spec.get("logging_steps", 10_000), save_strategy="no",
        report_to=spec.get("report_to", []), use_cpu=True, ddp_backend="gloo",
        dataloader_num_workers=0, disable_tqdm=True, seed=0)
    clock = Clock()
    callbacks: list = [clock]
    if spec.get("callback"):
        from straggler_probe.integrations.huggingface import StragglerProbeCallback
        callbacks.append(StragglerProbeCallback(**spec.get("probe", {})))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Data(4096),
                                   callbacks=callbacks)
    out = trainer.train()
    write_result(spec, rank, clock.clock.times, loss=float(out.training_loss),
                 log_history=trainer.state.log_history, logged=clock.logged)


if __name__ == "__main__":
    main()
