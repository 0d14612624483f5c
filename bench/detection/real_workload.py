"""One rank of the detection benchmark's real jobs: the demo's small GPT (examples/) under DDP
over gloo, with an emulated accelerator's time per micro-batch (examples/straggler.py says why),
and one planted fault at a time.

Started by real_jobs.py through tests/python/harness.py (`python real_workload.py '<json spec>'`
in every rank, RANK / WORLD_SIZE / MASTER_* set). Spec keys:
  steps, batch, device_ms          the job (device_ms 0: the model's CPU compute only)
  slow_rank, slowdown              that rank's compute `slowdown` longer (the demo's straggler)
  gc_rank, gc_every, gc_pause_ms   that rank collects on steps s % gc_every == gc_every - 1,
                                   inside its forward, for gc_pause_ms (a slow collector)
  stall_rank, stall_every, stall_ms  that rank's data loader stalls on steps
                                   s % stall_every == stall_every - 1, for stall_ms
  burn_rank, burn_share            that rank burns real CPU in its forward (matmuls), burn_share x
                                   its own forward + backward as measured over its first steps
Writes <out>/rank<r>.json: its per-step wall times, the CPU time of its training steps (this
thread, data loading left out) and the steps it planted a fault on.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time

import torch
import torch.distributed as dist

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))
import straggler  # noqa: E402
from tiny_gpt import SyntheticTokens, TinyGPT  # noqa: E402


class StallingTokens(torch.utils.data.Dataset):
    """The demo's tokens; the first item of a batch takes `stall_s` longer while `pending`."""

    def __init__(self, base: torch.utils.data.Dataset, stall_s: float):
        self.base = base
        self.stall_s = stall_s
        self.pending = False

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int):  # noqa: ANN204
        if self.pending:
            self.pending = False
            time.sleep(self.stall_s)
        return self.base[i]


class CpuBurn:
    """Real CPU work in this rank's forward (no sleep: the other ranks on the same cores feel it
    too, as they would a rank that computes more): `share` x the rank's own forward + backward
    time, which RankTime measures over the first `calibrate` steps before any burning."""

    def __init__(self, share: float, rank_time: "straggler.RankTime", calibrate: int = 5):
        self.share, self.rank_time, self.calibrate = share, rank_time, calibrate
        self.calls, self.burn_s = 0, 0.0
        self.a = torch.randn(96, 96)

    def __call__(self, module, args):  # noqa: ANN001, ANN204 (a forward pre-hook)
        self.calls += 1
        if self.calls <= self.calibrate:
            return
        if not self.burn_s:  # fixed once: the burn itself must not feed its own measure
            self.burn_s = self.share * (self.rank_time.cpu_fwd_s + self.rank_time.cpu_bwd_s)
        end = time.perf_counter() + self.burn_s
        with torch.no_grad():
            while time.perf_counter() < end:
                self.a @ self.a


def every(spec: dict, key: str, step: int) -> bool:
    n = spec.get(key, 0)
    return n > 0 and step % n == n - 1


def main() -> None:
    spec = json.loads(sys.argv[1])
    import straggler_probe

    straggler_probe.init(**spec.get("probe", {}))
    torch.set_num_threads(1)  # 4 ranks share the machine's cores
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    slow = spec.get("slowdown", 0.0) if rank == spec.get("slow_rank", -1) else 0.0
    rank_time = straggler.RankTime(spec.get("device_ms", 15.0), slow)
    gpt = TinyGPT()
    model = torch.nn.parallel.DistributedDataParallel(straggler.OnDevice(gpt, rank_time))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tokens = StallingTokens(SyntheticTokens(256, 64, seed=rank), spec.get("stall_ms", 0) / 1e3)
    data = torch.utils.data.DataLoader(tokens, batch_size=spec.get("batch", 8), shuffle=True,
                                       drop_last=True)
    if rank == spec.get("burn_rank", -1):
        gpt.register_forward_pre_hook(CpuBurn(spec["burn_share"], rank_time))
    gc.freeze()
    state = {"collect": False}
    if rank == spec.get("gc_rank", -1):
        gc.disable()  # only the planted collections

        def slow_collection(phase: str, info: dict) -> None:
            # Registered after init(), so it runs inside the probe's GC interval.
            if phase == "start" and state["collect"]:
                time.sleep(spec["gc_pause_ms"] / 1e3)
        gc.callbacks.append(slow_collection)

        def collect_in_forward(module, args):  # noqa: ANN001, ANN202
            if state["collect"]:
                gc.collect()
                state["collect"] = False
        gpt.register_forward_pre_hook(collect_in_forward)

    planted, step_times, step_cpu = [], [], []
    batches = straggler.endless(data)
    last = time.perf_counter()
    for step in range(spec.get("steps", 60)):
        stall = rank == spec.get("stall_rank", -1) and every(spec, "stall_every", step)
        state["collect"] = rank == spec.get("gc_rank", -1) and every(spec, "gc_every", step)
        if stall or state["collect"]:
            planted.append(step)
        tokens.pending = stall
        x, y = next(batches)  # after `pending` is set: the stall is in this fetch
        c0 = time.thread_time()
        straggler.train_step(model, opt, rank_time, x, y)
        step_cpu.append(time.thread_time() - c0)
        now = time.perf_counter()
        step_times.append(now - last)
        last = now

    straggler_probe.shutdown()
    with open(os.path.join(spec["out"], f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "step_times": step_times, "planted": planted,
                   "step_cpu": step_cpu}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
