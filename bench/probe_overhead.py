"""What the Python probe costs a training job, on this machine (prints a table; not a test).

1. Added time per training step: the same single-process training loop (the demo's small GPT,
   forward + backward + AdamW) with and without straggler_probe.init(), in alternating runs
   (A B A B ...), each run reporting the median of its step times. Ratio = median(B) / median(A).
   Single process on purpose: four ranks on two cores would bury a 1% effect in scheduling noise.
2. Cost per recorded event through the Python binding (_core.record), in ns, and of the probe's
   hooks per step (what a step's hooks cost in total, from the events they record).
   plugin/'s probe_record_bench measures the C++ side alone.
3. Bytes each rank sends per step to rank 0 (its encoded summaries through the store), from a
   4-rank DDP run of the same model (pipeline stats of ranks 1-3).

Usage: PYTHONPATH=build/python .venv/bin/python bench/probe_overhead.py [--steps 150] [--runs 4]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))


def train_steps(steps: int, probe: bool, out: str) -> dict:
    import torch

    import straggler_probe
    from tiny_gpt import SyntheticTokens, TinyGPT

    torch.set_num_threads(1)
    if probe:
        straggler_probe.init(out_dir=out, log_lines=False)
    torch.manual_seed(0)
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(SyntheticTokens(256, 64, seed=0, size=512), batch_size=8,
                                       drop_last=True)
    times = []
    it = iter(data)
    for _ in range(steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(data)
            x, y = next(it)
        t0 = time.perf_counter()
        model(x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    stats = straggler_probe.stats() if probe else {}
    straggler_probe.shutdown()
    warm = times[10:]
    return {"median_s": statistics.median(warm), "steps": len(warm),
            "events": stats.get("runtime", {}).get("events_recorded", 0),
            "probe_steps": stats.get("step", 0)}


def record_cost_ns(n: int) -> float:
    import straggler_probe
    from straggler_probe import _native as N

    straggler_probe.init(transport="none", log_lines=False)
    core = N.core
    rec = core.record
    best = float("inf")
    dropped = 0
    for batch in range(10):  # best of 10 batches: the cost, not the machine's noise
        t = time.time_ns()
        t0 = time.perf_counter_ns()
        for i in range(n):
            dropped += rec(N.OTHER, t + i, t + i + 1, -1, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0) != 0
        best = min(best, (time.perf_counter_ns() - t0) / n)
        core.mark_step(batch)
        time.sleep(0.05)  # the consumer drains the ring: the next batch records, not drops
    straggler_probe.shutdown()
    if dropped:
        print(f"(note: {dropped} events dropped by a full ring during the timing)")
    return best


def run_child(mode: str, args: argparse.Namespace, out: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", mode, "--steps", str(args.steps), "--out", out]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bytes_per_step(args: argparse.Namespace, out: Path) -> dict:
    """4 ranks, DDP over gloo, 40 steps; ranks 1-3 report what they sent."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(4):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--child", "ddp", "--steps", "40",
                                       "--out", str(out)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True))
    results = [json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1]) for p in procs]
    sent = [r for r in results if r["rank"] != 0]
    per_step = [r["bytes_sent"] / max(1, r["summaries_sent"]) for r in sent]
    return {"bytes_per_step": statistics.mean(per_step), "summaries": sent[0]["summaries_sent"],
            "transport": results[0]["transport"]}


def ddp_child(steps: int, out: str) -> dict:
    import torch
    import torch.distributed as dist

    import straggler_probe
    from tiny_gpt import SyntheticTokens, TinyGPT

    torch.set_num_threads(1)
    straggler_probe.init(out_dir=out, log_lines=False)
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(TinyGPT())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(SyntheticTokens(256, 64, seed=dist.get_rank(), size=512),
                                       batch_size=8, drop_last=True)
    it = iter(data)
    for _ in range(steps):
        x, y = next(it)
        model(x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    transport = straggler_probe.stats().get("transport")
    straggler_probe.shutdown()
    p = straggler_probe.stats()["pipeline"]
    result = {"rank": dist.get_rank(), "bytes_sent": p.get("bytes_sent", 0),
              "summaries_sent": p.get("summaries_sent", 0), "transport": transport}
    dist.destroy_process_group()
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--child", choices=["off", "on", "ddp"])
    ap.add_argument("--out", default=str(REPO / "sp-out-bench"))
    args = ap.parse_args()
    if args.child == "ddp":
        print(json.dumps(ddp_child(args.steps, args.out)))
        return
    if args.child:
        print(json.dumps(train_steps(args.steps, args.child == "on", args.out)))
        return

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    off, on = [], []
    for _ in range(args.runs):  # alternate, so that drifting load hits both sides alike
        off.append(run_child("off", args, args.out))
        on.append(run_child("on", args, args.out))
    t_off = statistics.median(r["median_s"] for r in off)
    t_on = statistics.median(r["median_s"] for r in on)
    events_per_step = on[-1]["events"] / max(1, on[-1]["probe_steps"])
    print(f"step time without probe   {t_off * 1e3:8.3f} ms  (median of {args.runs} runs x "
          f"{off[0]['steps']} steps, small GPT, 1 thread)")
    print(f"step time with probe      {t_on * 1e3:8.3f} ms")
    print(f"ratio with/without        {t_on / t_off:8.4f}  (target <= 1.02)")
    ns = record_cost_ns(20_000)
    print(f"cost per recorded event   {ns:8.0f} ns  (Python -> _core.record, best of 10 x 20k)")
    print(f"events per step           {events_per_step:8.1f}")
    b = bytes_per_step(args, Path(args.out))
    print(f"bytes sent per rank/step  {b['bytes_per_step']:8.0f} B  (4 ranks DDP, "
          f"{b['summaries']} summaries each, transport {b['transport']})")


if __name__ == "__main__":
    main()
