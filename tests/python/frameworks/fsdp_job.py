"""FSDP on 4 CPU ranks (gloo): spec["fsdp"] = 2 for fully_shard (FSDP2, per block and the root),
1 for FullyShardedDataParallel (FSDP1, one unit per block). Two blocks, each sleeping half of
the micro-batch's forward and backward; a plain loop (forward, backward, step). Both parameter
all-gathers and gradient reduce-scatters run through torch.distributed entry points that the
probe has no per-name wrapper for in every torch (all_gather_single / reduce_scatter_single in
torch 2.15): the process-group layer sees them.
"""
from __future__ import annotations

import os

from fw_job import StepClock, compute_seconds, load_spec, make_block, write_result

spec = load_spec()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402


def shard(model: nn.Sequential, version: int) -> nn.Module:
    if version == 2:
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # torch < 2.6
            from torch.distributed._composable.fsdp import fully_shard
        for block in model:
            fully_shard(block)
        return fully_shard(model)
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    # torch 2.15's FSDP1 takes its device from device_id, else from the parameters, else from
    # the accelerator, and refuses CPU only in the last case ("FSDP needs a non-CPU accelerator
    # device"): named, CPU is accepted
    cpu = {"device_id": torch.device("cpu")}
    return FSDP(nn.Sequential(*[FSDP(b, use_orig_params=True, **cpu) for b in model]),
                use_orig_params=True, **cpu)


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fwd_s, bwd_s = compute_seconds(spec, rank)
    blocks = [make_block() for _ in range(2)]
    for b in blocks:
        b.fwd_s, b.bwd_s = fwd_s / 2, bwd_s / 2
    model = shard(nn.Sequential(*blocks), spec.get("fsdp", 2))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4096, 16)),
                                       batch_size=8)
    batches = iter(data)
    clock = StepClock()
    loss = torch.zeros(())
    for _ in range(spec["steps"]):
        (x,) = next(batches)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        clock.tick()
    write_result(spec, rank, clock.times, loss=float(loss.detach()))
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0")
    main()
