"""A 2-stage pipeline (GPipe schedule) x data parallel, for the stage-imbalance test.

Ranks are laid out stage-major: stage = rank // dp, dp rank = rank % dp. Stage 0 sends each
micro-batch's activations to its peer in stage 1 and receives the gradients back; each stage then
all-reduces its gradients over its own data-parallel group. The last stage does more work per
micro-batch (it carries the loss, as the paper's imbalanced jobs do).
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn as nn

from workload import TimedNet


def run_pipeline(spec: dict, rank: int, world: int) -> list[float]:
    stages = spec["pipeline"]
    dp = world // stages
    stage, dp_rank = rank // dp, rank % dp
    groups = [dist.new_group([s * dp + d for d in range(dp)]) for s in range(stages)]
    my_group = groups[stage]
    factor = spec.get("last_stage_factor", 2.0) if stage == stages - 1 else 1.0
    model = TimedNet()
    model.fwd_s = spec.get("fwd_ms", 20) / 1e3 * factor
    model.bwd_s = spec.get("bwd_ms", 40) / 1e3 * factor
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    prev_rank = rank - dp if stage > 0 else None
    next_rank = rank + dp if stage < stages - 1 else None
    microbatches = spec.get("microbatches", 4)
    step_times = []
    last = time.perf_counter()
    for _ in range(spec.get("steps", 20)):
        outputs = []
        for _mb in range(microbatches):
            if prev_rank is None:
                x = torch.randn(8, 16)
            else:
                x = torch.empty(8, 16)
                dist.recv(x, prev_rank)
                x.requires_grad_(True)
            y = model(x)
            if next_rank is not None:
                dist.send(y.detach(), next_rank)
            outputs.append((x, y))
        for x, y in outputs:
            if next_rank is None:
                y.pow(2).mean().backward()
            else:
                grad = torch.empty_like(y)
                dist.recv(grad, next_rank)
                torch.autograd.backward(y, grad)
            if prev_rank is not None:
                dist.send(x.grad, prev_rank)
        for p in model.parameters():
            dist.all_reduce(p.grad, group=my_group)
        opt.step()
        opt.zero_grad()
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
    return step_times
