"""The GPU checks of the Python package (run by tests/gpu/run.sh), on a GPT-style model under DDP
at world size 1 (NCCL), with the package imported and started by straggler_probe.init() in the
job (CUDA-event regions, GPU region tags, the profiler guard, the DDP and collective hooks):

  gpt       Training steps with a torch.profiler session in the middle: the probe hands CUPTI
            over (capture paused while the session runs, asserted), torch.profiler sees the
            kernels (asserted), and the probe takes CUPTI back afterwards (its kernel count
            grows again, asserted); the regions' kernels are attributed (forward, optimizer),
            the steps are recorded, and DDP's all-reduces reach the NCCL layer.
  overhead  Probe on / off interleaved in blocks in one process (straggler_probe.init() and
            shutdown() around each "on" block, CUPTI paused in "off" blocks) over >= 200
            measured steps: the ratio of step times with a 95% confidence interval from the
            paired blocks, and whether its upper end is within the 1% target. A figure to
            report, not a pass/fail (one short run on a shared machine); never in CI.

Needs PYTHONPATH to a build of the package for this Python and SP_LIB (the library, preloaded).
--cpu-smoke: tiny shapes on the CPU with gloo, no GPU asserts.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_common import result, set_rank_env, wait_flushed  # noqa: E402
from sp_ctypes import Probe, report_counts, stats_dict  # noqa: E402

# t quantiles (two-sided 95%) by degrees of freedom, for the paired-block interval.
_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(dof: int) -> float:
    keys = [k for k in sorted(_T95) if k <= dof]
    return _T95[keys[-1]] if keys else _T95[1]


def build(cuda: bool):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    dev = "cuda" if cuda else "cpu"
    d, heads, layers, seq, batch, vocab = (1024, 16, 8, 512, 8, 32000) if cuda else \
        (64, 4, 2, 32, 2, 512)
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    model = nn.parallel.DistributedDataParallel(GPT().to(dev))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    idx = torch.randint(0, vocab, (batch, seq), device=dev)

    def step() -> float:
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=cuda):
            logits = model(idx)
        loss = nn.functional.cross_entropy(logits.view(-1, vocab).float(), idx.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000
    return step


def check_gpt(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="gpt", error="no CUDA device")
    set_rank_env()
    import straggler_probe
    from straggler_probe import _native
    if not straggler_probe.init(out_dir=args.out_dir, log_lines=False):
        return result(False, check="gpt", error="straggler_probe.init() did not start")
    core = _native.core
    lib = Probe() if os.environ.get("SP_LIB") else None  # the same instance, for NCCL counters
    step = build(cuda)
    for _ in range(args.warmup):
        step()
    before = core.cupti_stats() or {}
    for _ in range(5):
        step()
    # torch.profiler in the middle of training: hand-over and take-back.
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        during = core.cupti_stats() or {}
        for _ in range(3):
            step()
    after_session = core.cupti_stats() or {}
    times = [step() for _ in range(args.steps)]
    if lib is not None:
        wait_flushed(lib.flush, rounds=2, pause_s=0.6)
    end = core.cupti_stats() or {}
    report = core.cupti_report(5)
    counts = report_counts(report)
    # Kernels torch.profiler itself recorded (GPU time is self_device_time_total from torch 2.4,
    # self_cuda_time_total before).
    prof_kernels = sum(1 for e in prof.key_averages()
                       if (getattr(e, "self_device_time_total", None) or
                           getattr(e, "self_cuda_time_total", 0)) > 0)
    st = straggler_probe.stats()
    fields = dict(check="gpt", steps=len(times), median_ms=round(statistics.median(times), 3),
                  cupti_before=before, cupti_during_profiler=during,
                  cupti_after_profiler=after_session, cupti_end=end,
                  profiler_kernels=prof_kernels, profiler_guard=st.get("profiler_guard"),
                  region_kernels=counts, runtime=st.get("runtime"),
                  nccl_stats=stats_dict(lib.nccl_stats()) if lib is not None else None,
                  report=report.splitlines()[:14])
    straggler_probe.shutdown()
    if not cuda:
        return result(True, smoke=True, **fields)
    guard = st.get("profiler_guard") or {}
    regions = {k.split("#")[0] for k, n in counts.items() if n > 0}
    ok = (before.get("active") and during.get("paused") and not end.get("paused") and
          end.get("kernels", 0) > after_session.get("kernels", 0) and prof_kernels > 0 and
          guard.get("handovers", 0) >= 1 and guard.get("takebacks", 0) >= 1 and
          {"forward", "optimizer"} <= regions and
          (st.get("runtime") or {}).get("steps_completed", 0) > 0 and
          (lib is None or stats_dict(lib.nccl_stats())["recorded"] > 0 or
           stats_dict(lib.nccl_stats())["plugin_ops"] > 0))
    return result(bool(ok), **fields)


def check_overhead(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="overhead", error="no CUDA device")
    set_rank_env()
    import straggler_probe
    from straggler_probe import _native
    step = build(cuda)
    for _ in range(args.warmup):
        step()
    pairs, on_ms, off_ms = [], [], []
    for block in range(args.blocks):
        order = ("on", "off") if block % 2 == 0 else ("off", "on")  # no drift favours one side
        means = {}
        for state in order:
            if state == "on":
                straggler_probe.init(out_dir=args.out_dir, log_lines=False)
                _native.core.cupti_resume()
            for _ in range(2):
                step()  # the first steps after a switch settle (hooks, CUPTI buffers)
            times = [step() for _ in range(args.block_steps)]
            if state == "on":
                straggler_probe.shutdown()
                _native.core.cupti_pause("overhead check: probe off")
            means[state] = statistics.mean(times)
            (on_ms if state == "on" else off_ms).extend(times)
        pairs.append(means["on"] / means["off"])
    n = len(pairs)
    ratio = statistics.mean(pairs)
    half = t95(n - 1) * statistics.stdev(pairs) / math.sqrt(n) if n > 1 else float("inf")
    fields = dict(check="overhead", blocks=n, block_steps=args.block_steps,
                  measured_steps=len(on_ms) + len(off_ms), ratio=round(ratio, 5),
                  ci95=[round(ratio - half, 5), round(ratio + half, 5)],
                  overhead_percent=round((ratio - 1) * 100, 3),
                  within_1pct=ratio + half <= 1.01,
                  on_median_ms=round(statistics.median(on_ms), 3),
                  off_median_ms=round(statistics.median(off_ms), 3))
    return result(True, smoke=not cuda, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["gpt", "overhead"])
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--block-steps", type=int, default=10)
    p.add_argument("--out-dir", default=os.path.join(os.environ.get("OUT", "/tmp"), "sp_out"))
    args = p.parse_args()
    return check_gpt(args) if args.check == "gpt" else check_overhead(args)


if __name__ == "__main__":
    sys.exit(main())
