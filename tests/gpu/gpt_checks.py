"""The gpt check (run by tests/gpu/run.sh): straggler_probe.init() in a training job of the GPT
model (gpt_model.py: 8 layers, d=1024) under DDP at world size 1 over NCCL, library preloaded.

Two measured phases of training steps, BEFORE and AFTER a torch.profiler session (the probe hands
CUPTI over and takes it back). In each phase the check times the probe's three regions itself
with CUDA events (forward: the DDP model's call, loss inside; backward: from backward() to the
autograd engine's end, before DDP's bucket wait; optimizer: opt.step()), and reads:

- coverage: kernels attributed to a forward / backward / optimizer region, out of every kernel
  CUPTI captured during the phase's training steps less NCCL's own kernels (by name; they belong
  to their NCCL operation): sp_cupti_report's counts, differenced over the phase. Asserted >= 99%
  in both phases; the largest kernels left outside are listed (DDP's bucket-to-grad copies after
  the engine's end would show there).
- region time: the CUPTI spans of the regions as they reach the runtime's step summaries (the
  analysis's input; taken with sp_set_summary_callback and decoded, summaries.py), matched to the
  CUDA-event regions by time, per kind: sum of span durations within 1% of the events' (the
  phase's first step left out: the GPU idles before it), and their starts within 1 ms of the
  events' on the probe clock (events placed on it through an anchor event). Batch 48 makes the
  step GPU-bound, so the events bracket kernels back to back, as the spans do.
- the clock after the take-back: time_base_changes >= 1, time_base 2 (ticks: Kineto's TSC
  callback), skew within 1000 ppm, clock_offset_ns sane (ns base: |offset| < 1 ms; ticks base:
  the CPU time at tick 0, a moment in the past).
- the hand-over: capture paused during the session, active after, torch.profiler saw kernels,
  one hand-over and one take-back counted; steps completed.
- DDP's comm hook untouched (no hook registered by the probe on an NCCL model).

--cpu-smoke: tiny shapes on the CPU with gloo, no GPU asserts.
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_common import result, set_rank_env, wait_settled  # noqa: E402
from gpt_model import Trainer  # noqa: E402
from sp_ctypes import OP_NAMES, TIME_BASES, TIME_SOURCES, Probe, parse_report, \
    region_kind  # noqa: E402
from summaries import SummaryTap  # noqa: E402

REGION_KINDS = ("forward", "backward", "optimizer")
BOUNDS = {"forward": ("f0", "f1"), "backward": ("b0", "b1"), "optimizer": ("o0", "o1")}
COVERAGE = ("kernels in forward/backward/optimizer regions / (all kernels CUPTI captured during "
            "the phase's training steps - NCCL's own kernels); counts from sp_cupti_report, "
            "differenced over the phase")


def _snapshot(core, lib) -> dict:
    return {"report": parse_report(core.cupti_report(1000) or ""),
            "stats": dict(core.cupti_stats() or {})}


def _coverage(s0: dict, s1: dict) -> dict:
    def delta(key: str, name: str) -> int:
        return s1["report"].get(key, {}).get(name, [0])[0] - s0["report"].get(key, {}).get(name, [0])[0]
    def delta_us(key: str, name: str) -> int:
        return s1["report"].get(key, {}).get(name, [0, 0])[1] - s0["report"].get(key, {}).get(name, [0, 0])[1]
    per_kind: collections.Counter = collections.Counter()
    busy_us: collections.Counter = collections.Counter()
    outside: collections.Counter = collections.Counter()
    for key, names in s1["report"].items():
        for name in names:
            d = delta(key, name)
            if region_kind(key) in REGION_KINDS:
                per_kind[region_kind(key)] += d
                busy_us[region_kind(key)] += delta_us(key, name)
            else:
                outside[name[:80]] += d
    # NCCL's kernels, outside every region: by name (ncclDevKernel_*, ncclKernel_*, the one-rank
    # reduce); CUPTI's nccl_kernels counts every activity of an NCCL operation (copies too).
    nccl = sum(n for name, n in outside.items() if "nccl" in name.lower() or "onerank" in name.lower())
    nccl_stat = s1["stats"].get("nccl_kernels", 0) - s0["stats"].get("nccl_kernels", 0)
    in_regions = sum(per_kind.values())
    total = in_regions + sum(outside.values())
    denominator = total - nccl
    return {"coverage": round(in_regions / denominator, 5) if denominator > 0 else None,
            "kernels_in_regions": dict(per_kind), "kernels_total": total, "nccl_kernels": nccl,
            "nccl_activities_stat": nccl_stat,
            "kernel_busy_ms": {k: round(v / 1000, 3) for k, v in busy_us.items()},
            "kernels_captured_stat": s1["stats"].get("kernels", 0) - s0["stats"].get("kernels", 0),
            "outside_top": dict(outside.most_common(6))}


def _match(regions: list[tuple], spans: list[dict]) -> dict:
    """regions: (kind, t0, t1) from CUDA events on the probe clock; spans: CUPTI-sourced ops.
    Each region gets the span of its kind that overlaps it most."""
    by_kind = collections.defaultdict(list)
    for op in spans:
        by_kind[OP_NAMES.get(op["kind"])].append(op)
    out = {}
    for kind in REGION_KINDS:
        mine = [(t0, t1) for k, t0, t1 in regions if k == kind]
        ev_ns = cu_ns = 0
        starts, ends, matched = [], [], 0
        for t0, t1 in mine:
            best, overlap = None, 0
            for op in by_kind.get(kind, []):
                o = min(t1, op["end_ns"]) - max(t0, op["start_ns"])
                if o > overlap:
                    best, overlap = op, o
            if best is None:
                continue
            matched += 1
            ev_ns += t1 - t0
            cu_ns += best["end_ns"] - best["start_ns"]
            starts.append((best["start_ns"] - t0) / 1000)
            ends.append((best["end_ns"] - t1) / 1000)
        out[kind] = {"regions": len(mine), "matched": matched,
                     "events_ms": round(ev_ns / 1e6, 3), "cupti_ms": round(cu_ns / 1e6, 3),
                     "ratio": round(cu_ns / ev_ns, 5) if ev_ns else None,
                     "start_offset_us_median": round(statistics.median(starts), 1) if starts else None,
                     "end_offset_us_median": round(statistics.median(ends), 1) if ends else None}
    return out


def _phase(name: str, trainer: Trainer, core, lib, steps: int, cuda: bool) -> dict:
    """`steps` training steps with the regions timed by CUDA events; snapshots around them."""
    torch = trainer.torch
    if cuda:
        torch.cuda.synchronize()
    settle0 = wait_settled(lib.flush, lambda: core.cupti_report(1000))
    s0 = _snapshot(core, lib)
    if cuda:
        anchor = torch.cuda.Event(enable_timing=True)
        anchor.record()
        anchor.synchronize()
    anchor_ns = time.time_ns()
    recorded = []
    t_host = time.perf_counter()
    for _ in range(steps):
        evs: dict = {}
        if cuda:
            pool = {k: torch.cuda.Event(enable_timing=True) for b in BOUNDS.values() for k in b}

            def stamp(label, evs=evs, pool=pool):  # noqa: ANN001 - b1: in the engine's callback
                pool[label].record()
                evs[label] = pool[label]
        else:
            def stamp(label, evs=evs):  # noqa: ANN001
                evs[label] = time.time_ns()
        trainer.step(stamp)
        recorded.append(evs)
    host_ms = (time.perf_counter() - t_host) * 1000 / steps
    if cuda:
        torch.cuda.synchronize()
    settle1 = wait_settled(lib.flush, lambda: core.cupti_report(1000))
    s1 = _snapshot(core, lib)

    def at(ev):  # noqa: ANN001
        return anchor_ns + int(anchor.elapsed_time(ev) * 1e6) if cuda else ev
    regions, gpu_ms = [], []
    events_ms: collections.Counter = collections.Counter()
    for i, evs in enumerate(recorded):
        if len(evs) < 6:
            continue
        if cuda:
            gpu_ms.append(evs["f0"].elapsed_time(evs["o1"]))
            for kind, (a, b) in BOUNDS.items():
                events_ms[kind] += evs[a].elapsed_time(evs[b])
        if i == 0:
            continue  # the GPU was idle when it began: the events lead its first kernel
        regions += [(kind, at(evs[a]), at(evs[b])) for kind, (a, b) in BOUNDS.items()]
    coverage = _coverage(s0, s1)
    busy = coverage.pop("kernel_busy_ms")
    # Kernel busy time over event time per kind: below 1 by the gaps between kernels, the same
    # before and after the profiler when durations are converted right (ticks would make it 2x).
    busy_ratio = {k: round(busy.get(k, 0) / events_ms[k], 4) for k in REGION_KINDS if events_ms[k]}
    return {"name": name, "steps": steps, "regions": regions, "s0": s0, "s1": s1,
            "kernel_busy_over_events": busy_ratio,
            "settle_s": [settle0, settle1], "host_ms_per_step": round(host_ms, 2),
            "gpu_ms_per_step": round(statistics.median(gpu_ms), 2) if gpu_ms else None,
            "steps_with_missing_stamps": sum(len(e) < 6 for e in recorded),
            "coverage": coverage}


def _profiler_session(trainer: Trainer, core, cuda: bool, steps: int) -> dict:
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        during = dict(core.cupti_stats() or {})
        for _ in range(steps):
            trainer.step()
        if cuda:
            trainer.torch.cuda.synchronize()
    # Kernels torch.profiler recorded (device time: self_device_time_total from torch 2.4).
    kernels = sum(1 for e in prof.key_averages()
                  if (getattr(e, "self_device_time_total", None) or
                      getattr(e, "self_cuda_time_total", 0)) > 0)
    return {"during": {k: during.get(k) for k in ("active", "paused", "pauses", "kernels")},
            "profiler_kernels": kernels}


def _clock(stats: dict) -> dict:
    base = stats.get("time_base")
    offset = stats.get("clock_offset_ns")
    now = time.time_ns()
    out = {"time_base": TIME_BASES.get(base, base), "time_base_changes": stats.get("time_base_changes"),
           "ns_per_unit": stats.get("ns_per_unit"), "clock_skew_ppm": stats.get("clock_skew_ppm"),
           "clock_offset_ns": offset, "clock_uncertainty_ns": stats.get("clock_uncertainty_ns")}
    if offset is not None and base == 2:
        out["ticks_base_age_s"] = round((now - offset) / 1e9, 1)  # since tick 0 (boot)
        try:
            out["uptime_s"] = float(open("/proc/uptime").read().split()[0])
        except OSError:
            pass
        out["offset_sane"] = 0 < offset < now and (now - offset) < 10 * 365 * 86400 * 1e9
    elif offset is not None:
        out["offset_sane"] = abs(offset) < 1_000_000
    return out


def _ddp_hook(trainer: Trainer, st: dict) -> dict:
    model = trainer.model
    try:
        logging = model._get_ddp_logging_data()
    except Exception as err:  # noqa: BLE001
        logging = {"error": str(err)}
    hooks = getattr(model, "_comm_hooks", None)
    out = {"comm_hook": logging.get("comm_hook"), "comm_hooks_list": len(hooks or []),
           "probe_ddp": st.get("ddp")}
    out["untouched"] = (not out["comm_hook"] and not hooks and
                        (st.get("ddp") or {}).get("comm_hooks_registered", 0) == 0)
    return out


def _phase_ok(p: dict) -> bool:
    m = p["match"]
    return ((p["coverage"]["coverage"] or 0) >= 0.99 and all(
        m[k]["regions"] > 0 and m[k]["matched"] >= 0.8 * m[k]["regions"] and
        m[k]["ratio"] is not None and abs(1 - m[k]["ratio"]) <= 0.01 and
        abs(m[k]["start_offset_us_median"]) <= 1000 for k in REGION_KINDS))


def check_gpt(args) -> int:
    import torch
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        return result(None, check="gpt", error="no CUDA device")
    set_rank_env()
    import straggler_probe
    from straggler_probe import _native
    lib = Probe()  # the preloaded instance: its summaries, its flush
    tap = SummaryTap(lib)
    tap.__enter__()
    if not straggler_probe.init(out_dir=args.out_dir, log_lines=False):
        tap.close()
        return result(False, check="gpt", error="straggler_probe.init() did not start")
    core = _native.core
    trainer = Trainer("gpt" if cuda else "smoke", args.batch if cuda else 2, cuda)
    for _ in range(args.warmup):
        trainer.step()
    before = _phase("before", trainer, core, lib, args.steps, cuda)
    session = _profiler_session(trainer, core, cuda, args.profiler_steps)
    after = _phase("after", trainer, core, lib, args.steps, cuda)
    end_stats = dict(core.cupti_stats() or {})
    st = straggler_probe.stats()
    ddp = _ddp_hook(trainer, st)
    straggler_probe.shutdown()
    tap.close()
    ops = tap.ops({1, 2, 3})
    spans = [op for op in ops if op["time_source"] == 2]
    sources = collections.Counter(f"{OP_NAMES.get(o['kind'])}/{TIME_SOURCES.get(o['time_source'])}"
                                  for o in ops)
    for p in (before, after):
        if not cuda:  # the smoke matches its CPU stamps against the CPU-timed regions
            p["smoke_host_match"] = _match(p["regions"], [o for o in ops if o["time_source"] == 0])
        p["match"] = _match(p.pop("regions"), spans)
        p.pop("s0")
        p.pop("s1")
    guard = st.get("profiler_guard") or {}
    clock = _clock(end_stats)
    b0, b1 = before["kernel_busy_over_events"], after["kernel_busy_over_events"]
    clock["busy_ratio_after_over_before"] = {k: round(b1[k] / b0[k], 4) for k in b0
                                             if k in b1 and b0[k]}  # informational
    fields = dict(check="gpt", batch=args.batch, coverage_definition=COVERAGE,
                  before=before, after=after, profiler=session, clock=clock, ddp_comm_hook=ddp,
                  profiler_guard=guard, runtime=st.get("runtime"), region_timer=st.get("region_timer"),
                  summaries=len(tap.summaries()), summaries_undecodable=tap.undecodable,
                  summary_errors=tap.errors, summary_ops_by_source=dict(sources),
                  cupti_end={k: end_stats.get(k) for k in (
                      "kernels", "tagged_activities", "untagged_activities", "nccl_kernels",
                      "events_emitted", "dropped_records", "attribution", "markers_issued",
                      "markers_lost", "marker_failures", "undecided_released")})
    if not cuda:
        return result(True, smoke=True, **fields)
    ok = (_phase_ok(before) and _phase_ok(after) and session["during"].get("paused") and
          end_stats.get("active") and session["profiler_kernels"] > 0 and
          guard.get("handovers", 0) >= 1 and guard.get("takebacks", 0) >= 1 and
          (st.get("runtime") or {}).get("steps_completed", 0) > 0 and
          (clock["time_base_changes"] or 0) >= 1 and end_stats.get("time_base") == 2 and
          abs(clock["clock_skew_ppm"] or 0) <= 1000 and clock.get("offset_sane", False) and
          ddp["untouched"])
    return result(bool(ok), **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["gpt"])
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--steps", type=int, default=10, help="per phase (before / after)")
    p.add_argument("--profiler-steps", type=int, default=2)
    p.add_argument("--batch", type=int, default=48)
    p.add_argument("--out-dir", default=os.path.join(os.environ.get("OUT", "/tmp"), "sp_out_gpt"))
    args = p.parse_args()
    return check_gpt(args)


if __name__ == "__main__":
    sys.exit(main())
