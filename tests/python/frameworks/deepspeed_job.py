"""A plain DeepSpeed training loop on CPUs, started by the `deepspeed` launcher (single node: no
ssh, no pdsh; its CPU accelerator falls back to gloo when oneCCL's bindings are absent): the
model goes through `deepspeed.initialize` with a ZeRO stage (spec["zero"], default 1) and
gradient accumulation (spec["accumulation"], default 2), and every micro-batch runs
`engine(x)`, `engine.backward(loss)`, `engine.step()`, as DeepSpeed's users write it (the engine
steps the optimizer at each accumulation boundary only).
"""
from __future__ import annotations

from fw_job import StepClock, compute_seconds, load_spec, make_block, regression_data, write_result

spec = load_spec()

import torch  # noqa: E402
import deepspeed  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    accumulation = spec.get("accumulation", 2)
    stage = spec.get("zero", 1)
    micro = 8
    config = {
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": accumulation,
        # ZeRO-3 keeps parameters below this size whole on every rank (1e5 elements by
        # default: all of this small model); 0 partitions them all, so that each forward and
        # backward gathers them as on a real model
        "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0},
        # a torch optimizer of the script's own: DeepSpeed's fused CPU Adam is a compiled op
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    model = make_block()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
    rank = engine.global_rank
    assert engine.world_size == spec["world"], engine.world_size
    model.fwd_s, model.bwd_s = compute_seconds(spec, rank)
    data = regression_data(micro * accumulation * spec["steps"] * spec["world"])
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=False)
    loader = torch.utils.data.DataLoader(data, batch_size=micro, sampler=sampler)
    clock = StepClock()
    loss = torch.zeros(())
    batches = iter(loader)
    for _ in range(spec["steps"]):
        for _ in range(accumulation):
            x, y = next(batches)
            loss = (engine(x) - y).pow(2).mean()
            engine.backward(loss)
            engine.step()
        clock.tick()
    write_result(spec, rank, clock.times, loss=float(loss.detach()), zero_stage=stage,
                 optimizer_steps=engine.global_steps,
                 backend=torch.distributed.get_backend(),
                 accelerator=deepspeed.get_accelerator().device_name())


if __name__ == "__main__":
    main()
