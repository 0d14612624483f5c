"""A torch.distributed.pipelining job (GPipe, 1F1B or interleaved 1F1B, optionally x DDP), for the
pipelining tests. The probe is started with init() and no arguments: where each rank sits (stage,
dp rank) must come from the PipelineStage and the device mesh.

The mesh is (dp, pp) as torchtitan lays it out: rank = dp_rank * pp + pp_rank. Each stage is a
TimedNet (workload.py) whose forward and backward sleep; the last stage is `last_stage_factor`
heavier (it carries the loss layer), and `slow_rank` is `slow_factor` slower on every stage it
holds (a slow accelerator). With "dp" > 1 each stage module is wrapped in DDP over its dp group,
and the pipeline schedule drives DDP's gradient sync in the last backward.
"""
from __future__ import annotations

import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from workload import TimedNet

BATCH_PER_MB = 4
WIDTH = 16


def _schedule_class(name: str):
    from torch.distributed.pipelining import schedules
    return {"gpipe": schedules.ScheduleGPipe, "1f1b": schedules.Schedule1F1B,
            "interleaved": schedules.ScheduleInterleaved1F1B}[name]


def _stage_module(spec: dict, stage_index: int, num_stages: int, rank: int) -> nn.Module:
    factor = spec.get("last_stage_factor", 1.0) if stage_index == num_stages - 1 else 1.0
    if rank == spec.get("slow_rank", -1):
        factor *= spec["slow_factor"]
    model = TimedNet(WIDTH)
    model.fwd_s = spec.get("fwd_ms", 10) / 1e3 * factor
    model.bwd_s = spec.get("bwd_ms", 20) / 1e3 * factor
    return model


def run_pipelining(spec: dict, rank: int, world: int) -> list[float]:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.pipelining import PipelineStage

    pp = spec.get("pp", 2)
    dp = world // pp
    mesh = init_device_mesh("cpu", (dp, pp), mesh_dim_names=("dp", "pp"))
    pp_group = mesh["pp"].get_group()
    pp_rank = mesh["pp"].get_local_rank()
    schedule_name = spec["pipelining"]
    per_rank = 2 if schedule_name == "interleaved" else 1
    num_stages = pp * per_rank
    stage_ids = [pp_rank + k * pp for k in range(per_rank)]
    torch.manual_seed(0)
    modules = [_stage_module(spec, s, num_stages, rank) for s in stage_ids]
    params = [p for m in modules for p in m.parameters()]
    if dp > 1:
        modules = [nn.parallel.DistributedDataParallel(m, process_group=mesh["dp"].get_group())
                   for m in modules]
    stages = [PipelineStage(m, s, num_stages, torch.device("cpu"), group=pp_group)
              for m, s in zip(modules, stage_ids)]
    microbatches = spec.get("microbatches", 4)

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (output - target).pow(2).mean()

    cls = _schedule_class(schedule_name)
    schedule = cls(stages if per_rank > 1 else stages[0], microbatches, loss_fn=loss_fn)
    opt = torch.optim.SGD(params, lr=1e-3)
    if spec.get("log_ops"):
        _OpLog.install()
    has_first = any(s == 0 for s in stage_ids)
    has_last = any(s == num_stages - 1 for s in stage_ids)
    step_times = []
    last = time.perf_counter()
    for _ in range(spec.get("steps", 20)):
        x = torch.randn(microbatches * BATCH_PER_MB, WIDTH)
        target = torch.randn(microbatches * BATCH_PER_MB, WIDTH)
        args = (x,) if has_first else ()
        if has_last:
            schedule.step(*args, target=target)
        else:
            schedule.step(*args)
        opt.step()
        opt.zero_grad()
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
    dist.barrier()
    if spec.get("log_ops"):
        _OpLog.dump(spec["out"], rank)
    return step_times


class _OpLog:
    """Test-only spy on the probe's core: the kind, step, micro-batch and peer of every compute
    and p2p record this rank makes, so a test can check what each op was attributed to."""

    KINDS: dict[int, str] = {}
    ops: list[dict] = []

    @classmethod
    def install(cls) -> None:
        import straggler_probe
        from straggler_probe import _native as N

        cls.KINDS = {N.FORWARD: "forward", N.BACKWARD: "backward", N.SEND: "send",
                     N.RECV: "recv"}
        probe = straggler_probe._probe  # noqa: SLF001 - a test's window into the probe
        core = probe.rec.core
        rec = probe.rec

        class Spy:
            def __getattr__(self, name):  # noqa: ANN001, ANN204
                return getattr(core, name)

            def record(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
                kind = args[0] if args else kwargs.get("kind")
                mb = args[3] if len(args) > 3 else kwargs.get("microbatch", kwargs.get("mb"))
                peer = args[10] if len(args) > 10 else kwargs.get("peer")
                if kind in cls.KINDS:
                    cls.ops.append({"kind": cls.KINDS[kind], "mb": mb, "peer": peer,
                                    "step": rec.step})
                return core.record(*args, **kwargs)

        class TimerSpy:
            def __init__(self, timer):  # noqa: ANN001
                self.timer = timer

            def __getattr__(self, name):  # noqa: ANN001, ANN204
                return getattr(self.timer, name)

            def submit(self, kind, start, end, mb, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
                if kind in cls.KINDS:
                    cls.ops.append({"kind": cls.KINDS[kind], "mb": mb, "peer": -1,
                                    "step": rec.step})
                return self.timer.submit(kind, start, end, mb, *args, **kwargs)

        rec.core = Spy()
        rec.timer = TimerSpy(rec.timer)

    @classmethod
    def dump(cls, out: str, rank: int) -> None:
        with open(os.path.join(out, f"ops_rank{rank}.json"), "w") as f:
            json.dump(cls.ops, f)
