"""The probe's GPU checks of the C ABI (run by tests/gpu/run.sh on a lent GPU), through ctypes on
libstraggler_probe.so ($SP_LIB):

  cupti        CUPTI kernel times against CUDA events around the same GEMMs (within 1%), every
               GEMM kernel attributed to the probe region it was launched in (asserted).
  nccl         NCCL at world size 1 under LD_PRELOAD (the interposer): AVG all-reduces, which at
               one rank launch NCCL's one-rank reduce kernel (an in-place SUM launches nothing),
               GPU-timed by the interposer's CUDA events and seen by CUPTI as NCCL kernels
               (asserted); a self send/recv group as one operation.
  nccl-plugin  The same library as NCCL_PROFILER_PLUGIN: plugin loaded (contexts > 0), and self
               send/recv groups, the one-rank operation that takes NCCL's kernel path, recorded
               with GPU times from the plugin's KernelCh events and their kernels seen by CUPTI
               (asserted).

Each prints one "RESULT {...}" line; exit 0 pass, 1 fail, 2 could not run. --cpu-smoke runs the
flow on a machine without a GPU (no GPU asserts), to check the script itself.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_common import Nccl, result, set_rank_env, wait_flushed  # noqa: E402
from sp_ctypes import OP_FORWARD, TIME_SOURCES, Probe, report_counts, report_totals_us, \
    stats_dict  # noqa: E402


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
        return result(False, check="cupti", error=f"sp_cupti_start returned {rc}",
                      warning=probe.last_warning())
    name_id = probe.intern("gpu_check_gemm")
    pairs = []
    for _ in range(args.iters):
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
    wait_flushed(probe.flush)
    report = probe.report(1000)
    region = f"forward#{name_id}"
    tagged_us = report_totals_us(report).get(region, 0)
    tagged_kernels = report_counts(report).get(region, 0)
    stats = stats_dict(probe.cupti_stats())
    fields = dict(check="cupti", iters=args.iters, cuda_events_ms=round(events_ms, 4),
                  cupti_region_ms=tagged_us / 1000, region_kernels=tagged_kernels, stats=stats,
                  report=report.splitlines()[:12])
    if not cuda:
        return result(True, smoke=True, **fields)
    ratio = (tagged_us / 1000) / events_ms if events_ms > 0 else 0.0
    # Attributed: every GEMM's kernel(s) came back in the region (one or more kernels per GEMM).
    attributed = tagged_kernels >= args.iters and stats["tagged_activities"] >= args.iters
    fields.update(ratio=round(ratio, 5), attributed=attributed)
    ok = attributed and abs(1.0 - ratio) <= 0.01 and stats["dropped_records"] == 0
    return result(ok, **fields)


def _op_fields(ops) -> list[dict]:
    return [dict(bytes=o.bytes, seq=o.seq, group_id=hex(o.group_id), group_size=o.group_size,
                 kind=o.kind, dur_us=round((o.end_ns - o.start_ns) / 1000, 2),
                 time_source=TIME_SOURCES.get(o.time_source, o.time_source)) for o in ops[-6:]]


def check_nccl_interposer(args) -> int:
    import torch
    import torch.distributed as dist
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="nccl", error="no CUDA device")
    set_rank_env()
    probe = Probe()
    probe.init()
    if not cuda:
        dist.init_process_group("gloo", rank=0, world_size=1)
        dist.all_reduce(torch.ones(16))
        dist.destroy_process_group()
        return result(True, smoke=True, check="nccl", nccl_stats=stats_dict(probe.nccl_stats()))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    x = torch.ones(16 << 20, device="cuda")  # 64 MiB of float32
    dist.all_reduce(x, op=dist.ReduceOp.AVG)  # the communicator is made here
    probe.cupti_start()
    torch_ms = []
    for _ in range(args.iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dist.all_reduce(x, op=dist.ReduceOp.AVG)  # one rank: NCCL's one-rank reduce kernel
        e.record()
        torch_ms.append((s, e))
    nccl = Nccl()
    nccl.init_one_rank()
    y = torch.empty_like(x)
    nccl.send_recv_self(x.data_ptr(), y.data_ptr(), x.numel(),
                        torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    torch_ms = [s.elapsed_time(e) for s, e in torch_ms]
    wait_flushed(probe.flush, rounds=2, pause_s=0.5)
    ns, cs = stats_dict(probe.nccl_stats()), stats_dict(probe.cupti_stats())
    ops = probe.recent_nccl_ops()
    avg = [o for o in ops if o.coll == 1]
    gpu_timed = [o for o in avg if TIME_SOURCES.get(o.time_source) == "cuda_event"]
    nccl.destroy()
    dist.destroy_process_group()
    fields = dict(check="nccl", nccl_version=nccl.version(), nccl_stats=ns,
                  cupti_nccl_kernels=cs["nccl_kernels"], last_ops=_op_fields(ops),
                  torch_event_median_us=round(statistics.median(torch_ms) * 1000, 2))
    if gpu_timed:
        fields["probe_gpu_median_us"] = round(
            statistics.median((o.end_ns - o.start_ns) / 1000 for o in gpu_timed), 2)
    ok = (ns["recorded"] >= args.iters + 1 and ns["cuda_event_timed"] >= args.iters and
          len(gpu_timed) > 0 and cs["nccl_kernels"] >= args.iters and
          all(o.bytes == x.numel() * 4 for o in avg))
    return result(ok, **fields)


def check_nccl_plugin(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="nccl-plugin", error="no CUDA device")
    set_rank_env()
    probe = Probe()  # before NCCL initialises: NCCL then dlopens this same copy as its plugin
    probe.init()
    if not cuda:
        return result(True, smoke=True, check="nccl-plugin",
                      nccl_stats=stats_dict(probe.nccl_stats()))
    torch.cuda.set_device(0)
    torch.cuda.nccl.version()  # loads torch's libnccl
    nccl = Nccl()
    probe.cupti_start()
    nccl.init_one_rank()  # NCCL loads NCCL_PROFILER_PLUGIN here
    x = torch.ones(4 << 20, device="cuda")
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(args.iters):
        nccl.send_recv_self(x.data_ptr(), y.data_ptr(), x.numel(), stream)
    torch.cuda.synchronize()
    wait_flushed(probe.flush, rounds=2, pause_s=0.5)
    ns, cs = stats_dict(probe.nccl_stats()), stats_dict(probe.cupti_stats())
    ops = probe.recent_nccl_ops()
    nccl_timed = [o for o in ops if TIME_SOURCES.get(o.time_source) == "nccl"]
    version = nccl.version()
    nccl.destroy()
    fields = dict(check="nccl-plugin", nccl_version=version, nccl_stats=ns,
                  cupti_nccl_kernels=cs["nccl_kernels"], last_ops=_op_fields(ops),
                  warning=probe.last_warning())
    if nccl_timed:
        fields["plugin_gpu_median_us"] = round(
            statistics.median((o.end_ns - o.start_ns) / 1000 for o in nccl_timed), 2)
    ok = (ns["plugin_contexts"] > 0 and ns["plugin_active"] == 1 and
          ns["plugin_ops"] >= 2 * args.iters and ns["plugin_ops_gpu_timed"] > 0 and
          len(nccl_timed) > 0 and cs["nccl_kernels"] > 0)
    return result(ok, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["cupti", "nccl", "nccl-plugin"])
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--iters", type=int, default=30)
    args = p.parse_args()
    if args.check == "cupti":
        return check_cupti(args)
    if args.check == "nccl":
        return check_nccl_interposer(args)
    return check_nccl_plugin(args)


if __name__ == "__main__":
    sys.exit(main())
