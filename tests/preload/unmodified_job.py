"""An unmodified data-parallel training script: DDP over gloo on the CPU, nothing of
straggler_probe in it. Forward and backward sleep for a set time (four processes share two cores
in CI; a sleep's length does not depend on who else runs), one rank can be made slower.

    python unmodified_job.py '{"fwd_ms": 40, "bwd_ms": 80, "steps": 24, "slow_rank": 2,
                               "slow_factor": 1.3}'
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class SleepOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fwd_s, bwd_s):  # noqa: ANN001
        time.sleep(fwd_s)
        ctx.bwd_s = bwd_s
        return x.clone()

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        time.sleep(ctx.bwd_s)
        return grad, None, None


class Net(nn.Module):
    def __init__(self, fwd_s: float, bwd_s: float):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.fwd_s, self.bwd_s = fwd_s, bwd_s

    def forward(self, x):
        return SleepOp.apply(self.fc(x), self.fwd_s, self.bwd_s)


def main() -> None:
    spec = json.loads(sys.argv[1])
    rank = int(os.environ["RANK"])
    factor = spec.get("slow_factor", 1.0) if rank == spec.get("slow_rank", -1) else 1.0
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = nn.parallel.DistributedDataParallel(
        Net(spec["fwd_ms"] / 1e3 * factor, spec["bwd_ms"] / 1e3 * factor))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(spec["steps"]):
        loss = model(torch.randn(8, 16)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    dist.barrier()
    dist.destroy_process_group()
    print(f"unmodified job rank {rank} done", flush=True)


if __name__ == "__main__":
    main()
