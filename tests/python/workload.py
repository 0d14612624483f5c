"""One rank of a small multi-process training job with controlled, injectable timing.

Run by harness.py as `python workload.py '<json spec>'` in every rank (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT in the environment, as torchrun sets them). Compute is a real
nn.Module under DDP whose forward and backward *sleep* for a set time: four processes share two
cores in CI, and matmul timing under that contention would make the expected numbers flaky,
while a sleep's length does not depend on who else is running.

The job writes <out>/rank<r>.json: its per-step wall times and straggler_probe.stats().
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def pause(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)


def burn(cpu_seconds: float, a: torch.Tensor) -> None:
    """Real work: matmuls until this thread has run `cpu_seconds` on a core. Sized in CPU time,
    not wall time: on shared cores the same work takes a varying wall time, as real work does."""
    if cpu_seconds <= 0:
        return
    end = time.thread_time() + cpu_seconds
    with torch.no_grad():
        while time.thread_time() < end:
            a @ a


class SleepOp(torch.autograd.Function):
    """Identity whose forward and backward take a chosen time."""

    @staticmethod
    def forward(ctx, x, fwd_s, bwd_s):  # noqa: ANN001
        pause(fwd_s)
        ctx.bwd_s = bwd_s
        return x.clone()

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        pause(ctx.bwd_s)
        return grad, None, None


class TimedNet(nn.Module):
    def __init__(self, width: int = 16):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.out = nn.Linear(width, width)
        self.fwd_s = 0.0
        self.bwd_s = 0.0
        self.on_forward = None  # hook for injected work inside the forward (GC pauses)
        self.burn_s = 0.0  # CPU seconds of real work in each forward (burn)
        self.burn_with = torch.randn(64, 64)

    def forward(self, x, attention_mask=None):  # noqa: ANN001
        h = torch.relu(self.inp(x))
        if self.on_forward is not None:
            self.on_forward()
        burn(self.burn_s, self.burn_with)
        h = SleepOp.apply(h, self.fwd_s, self.bwd_s)
        return self.out(h)


def seq_cost(lengths: list[int], per_token_sq_s: float) -> float:
    return per_token_sq_s * sum(s * s for s in lengths)


def long_tailed_lengths(rng: random.Random, count: int, max_len: int) -> list[int]:
    # Pareto-like: most sequences short, a few near max_len (the paper's Fig. 10 shape).
    return [min(max_len, int(64 * rng.paretovariate(1.2))) for _ in range(count)]


STEP_HOOKS: list = []  # called with the step number at the start of every data-parallel step


def main() -> None:
    spec = json.loads(sys.argv[1])
    import straggler_probe

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    probe_kwargs = dict(spec.get("probe", {}))
    if spec.get("pipeline"):  # where this rank sits, told explicitly (stage-major layout)
        dp = world // spec["pipeline"]
        probe_kwargs.update(pp_stage=rank // dp, dp_rank=rank % dp)
    ending = None
    if spec.get("end"):  # the job is ended at a step by a signal (job_end.py)
        from job_end import JobEnd
        ending = JobEnd(spec, rank)
        STEP_HOOKS.append(ending.at_step)
    straggler_probe.init(**probe_kwargs)
    recorded = None
    if spec.get("control"):  # /control's pause and resume, POSTed by rank 0 at set steps
        from control_job import ControlSteps
        recorded = ControlSteps(spec["control"], rank)
        STEP_HOOKS.append(recorded.at_step)
    if ending is not None:
        ending.after_init()
    dist.init_process_group("gloo")
    gc.freeze()  # start-up objects (torch's) out of the collector's way: collections stay short

    if spec.get("pipeline"):
        from pipeline_job import run_pipeline
        step_times = run_pipeline(spec, rank, world)
    elif spec.get("pipelining"):  # torch.distributed.pipelining; the probe infers the layout
        from pipelining_job import run_pipelining
        step_times = run_pipelining(spec, rank, world)
    else:
        step_times = run_data_parallel(spec, rank, world)

    transport = straggler_probe.stats().get("transport")
    straggler_probe.shutdown()
    result = {"rank": rank, "step_times": step_times, "stats": straggler_probe.stats(),
              "transport": transport, "loss": spec.get("final_loss")}
    if recorded is not None:
        result["recorded_at_step_start"] = recorded.counts
        result["pause_state"] = recorded.pause_state
    with open(os.path.join(spec["out"], f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


def run_data_parallel(spec: dict, rank: int, world: int) -> list[float]:
    fwd_s = spec.get("fwd_ms", 30) / 1e3
    bwd_s = spec.get("bwd_ms", 60) / 1e3
    if rank == spec.get("slow_rank", -1):
        fwd_s *= spec["slow_factor"]
        bwd_s *= spec["slow_factor"]
    steps = spec.get("steps", 30)
    microbatches = spec.get("microbatches", 1)
    model = TimedNet()
    # Every rank computes burn_ms of real CPU work per forward; burn_rank burn_factor x that.
    model.burn_s = spec.get("burn_ms", 0) / 1e3
    if rank == spec.get("burn_rank", -1):
        model.burn_s *= spec["burn_factor"]
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4096, 16)),
                                       batch_size=8)
    batches = iter(data)
    rng = random.Random(1000 + rank)

    gc_rank = spec.get("gc_rank", -1)
    gc_every = spec.get("gc_every", 0)
    gc_pause_s = spec.get("gc_pause_ms", 0) / 1e3
    state = {"step": 0, "gc_pending": False}
    if rank == gc_rank:
        gc.disable()  # only the injected collections: automatic ones would blur the test

        def slow_collection(phase: str, info: dict) -> None:
            # Registered after straggler_probe.init(), so it runs inside the probe's GC interval:
            # a collection that takes gc_pause_ms, like a large heap's would.
            if phase == "start" and state["gc_pending"]:
                pause(gc_pause_s)
        gc.callbacks.append(slow_collection)

        def maybe_collect() -> None:
            if gc_every and state["step"] % gc_every == gc_every - 1 and state["step"] > 0:
                state["gc_pending"] = True
                gc.collect()
                state["gc_pending"] = False
        model.on_forward = maybe_collect

    step_times = []
    last = time.perf_counter()
    for step in range(steps):
        state["step"] = step
        for hook in STEP_HOOKS:
            hook(step)
        for mb in range(microbatches):
            (x,) = next(batches)
            kwargs = {}
            model.fwd_s, model.bwd_s = fwd_s, bwd_s
            if spec.get("seq_imbalance"):
                lengths = long_tailed_lengths(rng, 4, spec.get("max_len", 2048))
                cost = seq_cost(lengths, spec.get("per_token_sq_us", 0.01) / 1e6)
                model.fwd_s, model.bwd_s = cost, 2 * cost
                mask = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
                for i, n in enumerate(lengths):
                    mask[i, :n] = 1
                kwargs["attention_mask"] = mask  # picked up by the probe (seq_lens=auto)
            last_mb = mb == microbatches - 1
            if spec.get("closure") and last_mb:
                # optimizer.step(closure): forward and backward run inside the step call
                def closure(x=x, kwargs=kwargs):  # noqa: ANN001, ANN202
                    opt.zero_grad()
                    loss = ddp(x, **kwargs).pow(2).mean()
                    loss.backward()
                    return loss
                break
            ctx = ddp.no_sync() if not last_mb else contextlib.nullcontext()
            with ctx:
                loss = ddp(x, **kwargs).pow(2).mean()
                loss.backward()
        if spec.get("closure"):
            loss = opt.step(closure)
        else:
            opt.step()
            opt.zero_grad()
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
    spec["final_loss"] = float(loss.detach())  # the bench checks the probe leaves it alone
    return step_times


if __name__ == "__main__":
    main()
