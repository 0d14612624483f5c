"""A plain training loop with Hugging Face accelerate, started by `accelerate launch --multi_gpu
--num_processes 4` on CPUs (accelerate then runs torchrun and picks MULTI_CPU over gloo): the
model, optimizer and data loader go through `accelerator.prepare` (DDP inside),
`accelerator.accumulate` gives gradient accumulation (spec["accumulation"], default 2: the first
micro-batch under DDP's no_sync) and `accelerator.backward` the backward, as its users write it.
"""
from __future__ import annotations

import os

from fw_job import StepClock, compute_seconds, load_spec, make_block, regression_data, write_result

spec = load_spec()

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    accumulation = spec.get("accumulation", 2)
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=accumulation)
    rank = accelerator.process_index
    assert accelerator.num_processes == spec["world"], accelerator.state
    model = make_block()
    model.fwd_s, model.bwd_s = compute_seconds(spec, rank)
    data = regression_data(4096)
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    clock = StepClock()
    loss = torch.zeros(())
    batches = iter(loader)
    for _ in range(spec["steps"]):
        for _ in range(accumulation):
            x, y = next(batches)
            with accelerator.accumulate(model):
                loss = (model(x) - y).pow(2).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
        clock.tick()
    write_result(spec, rank, clock.times, loss=float(loss.detach()),
                 distributed_type=str(accelerator.distributed_type))


if __name__ == "__main__":
    main()
