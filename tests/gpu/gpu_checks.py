"""The probe's GPU checks of the C ABI (run by tests/gpu/run.sh on a lent GPU), through ctypes on
libstraggler_probe.so ($SP_LIB):

  cupti        100 bf16 16384^2 GEMMs (~11 ms each on an H200: the few microseconds between a
               CUDA event and its kernel weigh 0.1%), each in a probe region of its own (its own
               name, so its own key in sp_cupti_report), cycling sp_cupti_region_push/pop
               (forward, optimizer) and sp_region_begin/end (backward), with an unregioned
               elementwise kernel between two regions and the GPU kept busy (a lead of unregioned
               GEMMs), so that CUDA events around each GEMM bracket it tightly. Asserted: >= 99%
               of the regions hold exactly their GEMM's kernel(s) and nothing else, and no GEMM
               launched in a region is outside; CUPTI's region time (sum, and the median region)
               within 1% of the CUDA events'; no record dropped, no marker failure; the
               attribution mode asked for (STRAGGLER_PROBE_CUPTI_ATTRIBUTION) is the one used.
  nccl         NCCL at world size 1 under LD_PRELOAD (the interposer): AVG all-reduces (NCCL's
               one-rank reduce kernel) and a self send/recv group: recorded, GPU-timed by the
               interposer's CUDA events, their kernels tagged as NCCL kernels by CUPTI.
  nccl-plugin  The same library as NCCL_PROFILER_PLUGIN at one rank: the plugin loaded (the
               version NCCL took, v5 on NCCL 2.28), and self send/recv groups (no channels at one
               rank) completed at their own stop, before the communicator is destroyed. The
               GPU-timed KernelCh path needs channels, i.e. >= 2 GPUs: run as a 2-rank job when
               torch sees 2, else said not exercised.

Each prints one "RESULT {...}" line; exit 0 pass, 1 fail, 2 could not run. --cpu-smoke runs the
flow on a machine without a GPU (no GPU asserts), to check the script itself.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_common import Nccl, captured_output, free_port, result, set_rank_env, \
    wait_settled  # noqa: E402
from sp_ctypes import ATTRIBUTIONS, OP_BACKWARD, OP_FORWARD, OP_NAMES, OP_OPTIMIZER, \
    TIME_SOURCES, Probe, parse_report, stats_dict  # noqa: E402

KINDS = (OP_FORWARD, OP_BACKWARD, OP_OPTIMIZER)  # backward: through sp_region_begin / _end


def _gemm_regions(probe: Probe, torch, a, b, iters: int, cuda: bool) -> list[dict]:
    """The regions, each with its key, its API and its CUDA events."""
    regions = []
    for i in range(iters):
        kind = KINDS[i % 3]
        name_id = probe.intern(f"gpu_check/gemm/{i}")
        reg = {"key": f"{OP_NAMES[kind]}#{name_id}", "api": "push" if kind != OP_BACKWARD else
               "region_begin"}
        token = probe.region_begin(kind, i, name_id) if kind == OP_BACKWARD else \
            probe.push(kind, i, name_id)
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            a @ b
            e.record()
            reg["events"] = (s, e)
        else:
            a @ b
        if kind == OP_BACKWARD:
            probe.region_end(token)
        else:
            probe.pop()
        torch.relu(a)  # outside every region
        regions.append(reg)
    return regions


def _judge_regions(regions: list[dict], report: dict, lead: int) -> dict:
    """Which regions hold exactly their GEMM's kernels; the GEMM kernel is the name most regions
    hold, k its usual count per region."""
    holding = collections.Counter(n for r in regions for n in report.get(r["key"], {}))
    gemm = holding.most_common(1)[0][0] if holding else None
    counts = collections.Counter(report.get(r["key"], {}).get(gemm, [0])[0] for r in regions)
    k = max((c for c in counts if c > 0), key=lambda c: counts[c], default=0)
    bad = []
    for i, r in enumerate(regions):
        names = report.get(r["key"], {})
        r["cupti_us"] = sum(v[1] for v in names.values())
        if not (set(names) == {gemm} and names[gemm][0] == k and k > 0):
            bad.append({"i": i, "key": r["key"], "kernels": {n[:60]: v[0] for n, v in names.items()}})
    outside = report.get("outside-regions", {})
    gemm_outside = outside.get(gemm, [0])[0] if gemm else 0
    return {"gemm_kernel": gemm, "kernels_per_gemm": k, "regions": len(regions),
            "regions_exact": len(regions) - len(bad), "bad_regions": bad[:8],
            "gemms_outside_beyond_lead": gemm_outside - lead * k,
            "outside_kernels": {n[:60]: v[0] for n, v in outside.items()}}


def check_cupti(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check=args.check, error="no CUDA device")
    set_rank_env()
    wanted = os.environ.get("STRAGGLER_PROBE_CUPTI_ATTRIBUTION", "markers")
    probe = Probe()
    probe.init()
    dev = "cuda" if cuda else "cpu"
    n = args.n if cuda else 64
    dtype = torch.bfloat16 if cuda else torch.float32
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):  # warm-up before capture: cuBLAS picks its kernel, modules load
        a @ b
        torch.relu(a)
    if cuda:
        torch.cuda.synchronize()
    rc = probe.cupti_start()
    if cuda and rc != 0:
        return result(False, check=args.check, error=f"sp_cupti_start returned {rc}",
                      warning=probe.last_warning())
    for _ in range(args.lead):  # unregioned: the GPU stays ahead of the host from here on
        a @ b
    regions = _gemm_regions(probe, torch, a, b, args.iters, cuda)
    if cuda:
        torch.cuda.synchronize()
    settle_s = wait_settled(probe.flush, lambda: (probe.cupti_stats().kernels, probe.report(50)))
    text = probe.report(50)
    report = parse_report(text)
    stats = stats_dict(probe.cupti_stats())
    judged = _judge_regions(regions, report, args.lead)
    fields = dict(check=args.check, attribution_wanted=wanted,
                  attribution=ATTRIBUTIONS.get(stats.get("attribution"), stats.get("attribution")),
                  iters=args.iters, lead_gemms=args.lead, settle_s=settle_s, stats=stats,
                  report_head=text.splitlines()[:1], **judged)
    if not cuda:
        return result(True, smoke=True, **fields)
    ev_us = [r["events"][0].elapsed_time(r["events"][1]) * 1000 for r in regions]
    cu_us = [r["cupti_us"] for r in regions]
    ratios = [c / e for c, e in zip(cu_us, ev_us) if e > 0]
    total_ratio = sum(cu_us) / sum(ev_us) if sum(ev_us) > 0 else 0.0
    share = judged["regions_exact"] / max(1, args.iters)
    fields.update(attributed_share=round(share, 4), cuda_events_ms=round(sum(ev_us) / 1000, 3),
                  cupti_region_ms=round(sum(cu_us) / 1000, 3), ratio_total=round(total_ratio, 5),
                  ratio_median=round(statistics.median(ratios), 5) if ratios else None,
                  ratio_min=round(min(ratios), 5) if ratios else None,
                  ratio_max=round(max(ratios), 5) if ratios else None,
                  regions_within_1pct=sum(abs(1 - r) <= 0.01 for r in ratios))
    timing_ok = abs(1 - total_ratio) <= 0.01 and bool(ratios) and \
        abs(1 - statistics.median(ratios)) <= 0.01
    mode_ok = "attribution" not in stats or ATTRIBUTIONS.get(stats["attribution"]) == wanted
    ok = (share >= 0.99 and judged["gemms_outside_beyond_lead"] <= 0 and mode_ok and
          stats.get("dropped_records", 0) == 0 and stats.get("marker_failures", 0) == 0 and
          (timing_ok or not args.assert_timing))
    fields["timing_asserted"] = args.assert_timing
    return result(ok, **fields)


def _op_fields(ops) -> list[dict]:
    return [dict(bytes=o.bytes, seq=o.seq, group_id=hex(o.group_id), group_size=o.group_size,
                 kind=OP_NAMES.get(o.kind, o.kind), coll=o.coll,
                 dur_us=round((o.end_ns - o.start_ns) / 1000, 2),
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
    settle_s = wait_settled(probe.flush, lambda: (probe.cupti_stats().nccl_kernels,
                                                  probe.nccl_stats().recorded))
    ns, cs = stats_dict(probe.nccl_stats()), stats_dict(probe.cupti_stats())
    ops = probe.recent_nccl_ops()
    avg = [o for o in ops if o.coll == 1]
    gpu_timed = [o for o in avg if TIME_SOURCES.get(o.time_source) == "cuda_event"]
    version = nccl.version()
    nccl.destroy()
    dist.destroy_process_group()
    fields = dict(check="nccl", nccl_version=version, nccl_stats=ns, settle_s=settle_s,
                  cupti_nccl_kernels=cs.get("nccl_kernels"), cupti_stats=cs,
                  last_ops=_op_fields(ops),
                  torch_event_median_us=round(statistics.median(torch_ms) * 1000, 2))
    if gpu_timed:
        fields["probe_gpu_median_us"] = round(
            statistics.median((o.end_ns - o.start_ns) / 1000 for o in gpu_timed), 2)
    ok = (ns["recorded"] >= args.iters + 1 and ns["cuda_event_timed"] >= args.iters and
          len(gpu_timed) > 0 and cs.get("nccl_kernels", 0) >= args.iters and
          all(o.bytes == x.numel() * 4 for o in avg))
    return result(ok, **fields)


def _plugin_versions(text: str) -> dict:
    ours = re.findall(r"NCCL profiler plugin v(\d+) attached", text)
    nccls = re.findall(r"PROFILER/Plugin: Loaded \S+ \(v(\d+)\)", text)
    return {"probe_log": int(ours[-1]) if ours else None,
            "nccl_log": int(nccls[-1]) if nccls else None}


def _two_rank_plugin(args) -> dict:
    """A 2-rank NCCL job with the plugin (each rank on its own GPU; gloo on CPU in the smoke):
    all-reduces with channels, GPU-timed through KernelCh."""
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        cmd = [sys.executable, os.path.abspath(__file__), "nccl-plugin-rank", "--iters",
               str(args.iters)] + (["--cpu-smoke"] if args.cpu_smoke else [])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    ranks = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=args.rank_timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        line = next((l for l in out.splitlines()[::-1] if l.startswith("RANKRESULT ")), None)
        ranks.append(json.loads(line[11:]) if line else {"rc": p.returncode, "tail": out[-1500:]})
    return {"ranks": ranks,
            "gpu_timed_ok": all(r.get("nccl_stats", {}).get("plugin_ops_gpu_timed", 0) > 0
                                for r in ranks)}


def nccl_plugin_rank(args) -> int:
    import torch
    import torch.distributed as dist
    cuda = not args.cpu_smoke
    probe = Probe()
    probe.init()
    if cuda:
        probe.cupti_start()
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if cuda else "gloo")
    x = torch.ones(16 << 20, device="cuda" if cuda else "cpu")
    for _ in range(args.iters):
        dist.all_reduce(x)
    if cuda:
        torch.cuda.synchronize()
    wait_settled(probe.flush, lambda: probe.nccl_stats().plugin_ops, max_s=4.0)
    out = {"rank": dist.get_rank(), "nccl_stats": stats_dict(probe.nccl_stats()),
           "last_ops": _op_fields(probe.recent_nccl_ops())}
    print("RANKRESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()
    return 0


def check_nccl_plugin(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="nccl-plugin", error="no CUDA device")
    set_rank_env()
    probe = Probe()  # before NCCL initialises: NCCL then dlopens this same copy as its plugin
    probe.init()
    gpus = torch.cuda.device_count() if cuda else 0
    fields: dict = dict(check="nccl-plugin", gpus=gpus)
    if cuda:
        torch.cuda.set_device(0)
        torch.cuda.nccl.version()  # loads torch's libnccl
        logs: list[str] = []
        with captured_output(logs):
            nccl = Nccl()
            probe.cupti_start()
            nccl.init_one_rank()  # NCCL loads NCCL_PROFILER_PLUGIN here
            x = torch.ones(4 << 20, device="cuda")
            y = torch.empty_like(x)
            stream = torch.cuda.current_stream().cuda_stream
            for _ in range(args.iters):
                nccl.send_recv_self(x.data_ptr(), y.data_ptr(), x.numel(), stream)
            torch.cuda.synchronize()
            fields["settle_s"] = wait_settled(probe.flush, lambda: probe.nccl_stats().plugin_ops)
            before = stats_dict(probe.nccl_stats())
            ops_before = probe.recent_nccl_ops()
            version = nccl.version()
            nccl.destroy()
            after = stats_dict(probe.nccl_stats())
        fields.update(nccl_version=version, plugin_version=_plugin_versions("".join(logs)),
                      before_destroy=before, after_destroy=after,
                      ops_before_destroy=_op_fields(ops_before),
                      cupti_nccl_kernels=stats_dict(probe.cupti_stats()).get("nccl_kernels"),
                      warning=probe.last_warning())
    if gpus >= 2 or not cuda:
        fields["two_ranks"] = _two_rank_plugin(args)
        fields["kernelch_path"] = "exercised: 2-rank job" + (" (CPU smoke: gloo)" if not cuda else "")
    else:
        fields["kernelch_path"] = (f"not exercised: torch.cuda.device_count() = {gpus}; the "
                                   "GPU-timed KernelCh path needs channels, i.e. >= 2 GPUs")
    if not cuda:
        return result(True, smoke=True, **fields)
    ver = fields["plugin_version"]
    loaded = ver["probe_log"] or ver["nccl_log"]
    expect = 5 if 22800 <= fields["nccl_version"] < 22900 else None
    ops_before = [o for o in ops_before if TIME_SOURCES.get(o.time_source) in ("cpu", "nccl")]
    completed = before.get("plugin_ops_completed", before["plugin_ops"])
    ok = (before["plugin_contexts"] > 0 and before["plugin_active"] == 1 and loaded is not None and
          (expect is None or loaded == expect) and before["plugin_ops"] >= args.iters and
          completed >= args.iters and before.get("plugin_ops_swept", 0) == 0 and
          len(ops_before) > 0)
    if gpus >= 2:
        ok = ok and fields["two_ranks"]["gpu_timed_ok"]
    fields.update(expected_plugin_version=expect, plugin_ops_before_destroy=before["plugin_ops"],
                  plugin_ops_completed_before_destroy=before.get("plugin_ops_completed"))
    return result(ok, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["cupti", "cupti-external", "nccl", "nccl-plugin",
                                     "nccl-plugin-rank"])
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--lead", type=int, default=4, help="cupti: unregioned GEMMs launched first")
    p.add_argument("--n", type=int, default=16384, help="cupti: GEMM size (n x n, bf16)")
    p.add_argument("--no-timing-assert", dest="assert_timing", action="store_false",
                   help="cupti: report the CUPTI / CUDA-event ratio without asserting it (when "
                        "other GPU work runs at the same time)")
    p.add_argument("--rank-timeout", type=float, default=60.0)
    args = p.parse_args()
    if args.check in ("cupti", "cupti-external"):
        return check_cupti(args)
    if args.check == "nccl":
        return check_nccl_interposer(args)
    if args.check == "nccl-plugin-rank":
        return nccl_plugin_rank(args)
    return check_nccl_plugin(args)


if __name__ == "__main__":
    sys.exit(main())
