"""The probe's GPU checks (run by tests/gpu/run.sh on a lent GPU).

  cupti        CUPTI kernel times against CUDA events around the same kernels (within 1%),
               with the kernels attributed to a probe region through external correlation.
  nccl         NCCL collectives at world size 1 under LD_PRELOAD: recorded by the interposer
               with GPU times (CUDA events), NCCL kernels seen by CUPTI.
  nccl-plugin  The same through NCCL_PROFILER_PLUGIN (informational: at world size 1 NCCL may
               take a path without profiler events).
  gpt          A GPT-style training step, timed; with --probe the probe records it (regions,
               CUPTI, NCCL through DDP). run.sh compares the medians.

Each prints one JSON line "RESULT {...}" and exits 0 on pass, 1 on a failed check, 2 when the
check could not run. --cpu-smoke runs the logic on the CPU with tiny shapes (no GPU asserts), so
the script itself can be checked on a machine without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sp_ctypes import OP_BACKWARD, OP_FORWARD, OP_OPTIMIZER, TIME_SOURCES, Probe, \
    report_totals_us, stats_dict  # noqa: E402


def result(ok: bool | None, **fields) -> int:
    fields["ok"] = ok
    print("RESULT " + json.dumps(fields, sort_keys=True), flush=True)
    return 0 if ok else (2 if ok is None else 1)


def set_rank_env() -> None:
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))


def flush_and_wait(probe: Probe, rounds: int = 3, pause_s: float = 0.7) -> None:
    # Parsed records wait one window for late correlations, regions one more to be complete.
    for _ in range(rounds):
        probe.flush()
        time.sleep(pause_s)


# ---------------------------------------------------------------------------------------------
def check_cupti(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="cupti", error="no CUDA device")
    set_rank_env()
    probe = Probe()
    probe.init()
    dev = "cuda" if cuda else "cpu"
    n = 8192 if cuda else 64
    dtype = torch.bfloat16 if cuda else torch.float32
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):  # warm-up before capture: cuBLAS picks its kernel, modules load
        a @ b
    if cuda:
        torch.cuda.synchronize()
    rc = probe.cupti_start()
    if cuda and rc != 0:
        return result(False, check="cupti", error=f"sp_cupti_start returned {rc}")
    name_id = probe.intern("gpu_check_gemm")
    iters = args.iters
    pairs = []
    for i in range(iters):
        probe.push(OP_FORWARD, 0, name_id)
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            a @ b
            e.record()
            pairs.append((s, e))
        else:
            a @ b
        probe.pop()
    if cuda:
        torch.cuda.synchronize()
    events_ms = sum(s.elapsed_time(e) for s, e in pairs) if cuda else 0.0
    flush_and_wait(probe)
    report = probe.report(1000)
    totals = report_totals_us(report)
    region = f"forward#{name_id}"
    tagged_us = totals.get(region, 0)
    all_us = sum(totals.values())
    stats = stats_dict(probe.cupti_stats())
    fields = dict(check="cupti", iters=iters, cuda_events_ms=round(events_ms, 4),
                  cupti_tagged_ms=tagged_us / 1000, cupti_all_ms=all_us / 1000, stats=stats,
                  report=report.splitlines()[:12])
    if not cuda:
        return result(True, smoke=True, **fields)
    ref = tagged_us if tagged_us > 0 else all_us
    ratio = (ref / 1000) / events_ms if events_ms > 0 else 0.0
    fields.update(ratio=round(ratio, 5), attributed=tagged_us > 0)
    ok = abs(1.0 - ratio) <= 0.01 and stats["dropped_records"] == 0
    return result(ok, **fields)


# ---------------------------------------------------------------------------------------------
def check_nccl(args, plugin: bool) -> int:
    import torch
    import torch.distributed as dist
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="nccl", error="no CUDA device")
    set_rank_env()
    probe = Probe()  # before NCCL initialises: in plugin mode NCCL then dlopens this same copy
    probe.init()
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(0)
    dist.init_process_group(backend, rank=0, world_size=1)
    if cuda:
        probe.cupti_start()
    dev = "cuda" if cuda else "cpu"
    x = torch.ones(16 << 20 if cuda else 1024, device=dev)  # 64 MiB of float32 on the GPU
    torch_ms = []
    for _ in range(args.iters):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            dist.all_reduce(x)
            e.record()
            torch_ms.append((s, e))
        else:
            dist.all_reduce(x)
    if cuda:
        torch.cuda.synchronize()
        torch_ms = [s.elapsed_time(e) for s, e in torch_ms]
    flush_and_wait(probe, rounds=2, pause_s=0.5)
    ns = stats_dict(probe.nccl_stats())
    cs = stats_dict(probe.cupti_stats())
    ops = [o for o in probe.recent_nccl_ops() if o.coll == 1]  # all-reduces
    op_fields = [dict(bytes=o.bytes, seq=o.seq, group_id=hex(o.group_id), group_size=o.group_size,
                      dur_us=round((o.end_ns - o.start_ns) / 1000, 2),
                      time_source=TIME_SOURCES.get(o.time_source, o.time_source))
                 for o in ops[-5:]]
    dist.destroy_process_group()
    fields = dict(check="nccl-plugin" if plugin else "nccl", nccl_stats=ns, cupti_nccl_kernels=
                  cs["nccl_kernels"], last_ops=op_fields,
                  torch_event_median_us=round(statistics.median(torch_ms) * 1000, 2)
                  if cuda and torch_ms else None)
    if not cuda:
        return result(True, smoke=True, **fields)
    if plugin:
        # Informational at world size 1: report what NCCL gave the plugin.
        return result(True, informational=True, **fields)
    gpu_timed = [o for o in ops if TIME_SOURCES.get(o.time_source) in ("cuda_event", "nccl")]
    ok = ns["recorded"] >= args.iters and len(gpu_timed) > 0 and \
        all(o.bytes == (16 << 20) * 4 for o in ops)
    if gpu_timed and torch_ms:
        med_probe = statistics.median((o.end_ns - o.start_ns) / 1000 for o in gpu_timed)
        fields["probe_gpu_median_us"] = round(med_probe, 2)
    return result(ok, **fields)


# ---------------------------------------------------------------------------------------------
def check_gpt(args) -> int:
    import torch
    import torch.nn as nn
    import torch.distributed as dist
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="gpt", error="no CUDA device")
    set_rank_env()
    probe = None
    if args.probe:
        probe = Probe()
        probe.init()
    dev = "cuda" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(0)
        torch.backends.cuda.matmul.allow_tf32 = True
    dist.init_process_group("nccl" if cuda else "gloo", rank=0, world_size=1)
    if probe is not None and cuda:
        probe.cupti_start()
    d, heads, layers, seq, batch, vocab = (1024, 16, 12, 1024, 8, 32000) if cuda else \
        (64, 4, 2, 32, 2, 512)

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
    names = {}
    if probe is not None:
        names = {k: probe.intern(k) for k in ("forward", "backward", "optimizer")}

    # The runtime's regions, as the package and instrumented C++ trainers use them: host times
    # plus the CUPTI tag on the kernels launched inside (sp_region_begin pushes it).
    def region(kind, name):
        class R:
            def __enter__(self):
                self.token = probe.region_begin(kind, 0, names[name]) if probe is not None else 0

            def __exit__(self, *exc):
                if probe is not None:
                    probe.region_end(self.token)
        return R()

    times = []
    for step in range(args.warmup + args.steps):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with region(OP_FORWARD, "forward"), torch.autocast(dev, dtype=torch.bfloat16,
                                                            enabled=cuda):
            logits = model(idx)
            loss = nn.functional.cross_entropy(logits.view(-1, vocab).float(), idx.view(-1))
        with region(OP_BACKWARD, "backward"):
            loss.backward()
        with region(OP_OPTIMIZER, "optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        if probe is not None:
            probe.mark_step(step)
            probe.flush()
        if cuda:
            torch.cuda.synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000)
    fields = dict(check="gpt", probe=bool(args.probe), steps=len(times),
                  median_ms=round(statistics.median(times), 4), min_ms=round(min(times), 4))
    if probe is not None:
        flush_and_wait(probe, rounds=2, pause_s=0.5)
        fields["cupti_stats"] = stats_dict(probe.cupti_stats())
        fields["nccl_stats"] = stats_dict(probe.nccl_stats())
        report = probe.report(3)
        fields["top_kernels"] = report.splitlines()[:16]
        # Kernels tagged by sp_region_begin/_end (autograd's backward kernels run on its own
        # device thread, outside the training thread's tag: they count as outside regions).
        fields["region_kernel_us"] = report_totals_us(report)
    dist.destroy_process_group()
    return result(True, smoke=not cuda, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["cupti", "nccl", "nccl-plugin", "gpt"])
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--probe", action="store_true")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    if args.check == "cupti":
        return check_cupti(args)
    if args.check in ("nccl", "nccl-plugin"):
        return check_nccl(args, plugin=args.check == "nccl-plugin")
    return check_gpt(args)


if __name__ == "__main__":
    sys.exit(main())
