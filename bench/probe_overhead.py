"""What the Python probe costs a training job, on this machine (prints a table; not a test).

1. Added time per training step: the same single-process training loop (the demo's small GPT,
   forward + backward + AdamW) without the probe, with it recording only (transport=none), and
   with everything (this process is rank 0 of a 1-rank job: it also runs the analysis), the three
   alternating block by block in one process (init/shutdown between blocks). Ratio =
   median(with) / median(without), and (steadier) the added microseconds per step measured on a
   one-layer model, over the GPT's step time. Single process on purpose: four ranks on two cores would bury a 1% effect in
   scheduling noise. On a machine with few cores the "full" figure includes rank 0's analysis
   thread competing with training for a core, which a GPU node's spare cores absorb.
2. Cost per recorded event through the Python binding (_core.record), in ns, and of the probe's
   hooks per step (what a step's hooks cost in total, from the events they record).
   runtime/'s probe_record_bench measures the C++ side alone.
3. Bytes each rank sends per step to rank 0 (its encoded summaries through the store), from a
   4-rank DDP run of the same model (pipeline stats of ranks 1-3).

Usage: PYTHONPATH=build/python .venv/bin/python bench/probe_overhead.py [--steps 25] [--runs 12]
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


def interleaved(blocks: int, block_steps: int, out: str, tiny: bool) -> dict:
    """One process, modes alternating block by block (off, record, full, off, ...): the machine's
    drift (frequency, neighbours) hits every mode alike, which separate processes do not.
    tiny: a one-layer model whose step is framework overhead only (~0.3 ms), where the probe's
    added microseconds stand out of the noise; otherwise the demo's small GPT."""
    import torch

    import straggler_probe
    from tiny_gpt import SyntheticTokens, TinyGPT

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if tiny:
        lin = torch.nn.Linear(32, 32)
        model = lambda x, y: lin(x.float()[:, :32]).pow(2).mean()  # noqa: E731
        params = lin.parameters()
        mod_wrapper = torch.nn.Module()
        mod_wrapper.lin = lin
        mod_wrapper.forward = model
        model = mod_wrapper
    else:
        model = TinyGPT()
        params = model.parameters()
    opt = torch.optim.AdamW(params, lr=1e-3)
    data = torch.utils.data.DataLoader(SyntheticTokens(256, 64, seed=0, size=512), batch_size=8,
                                       drop_last=True)
    it = iter(data)
    times: dict[str, list[float]] = {"off": [], "record": [], "full": []}
    events = steps = 0
    for _ in range(blocks):
        for mode in times:
            if mode != "off":
                straggler_probe.init(out_dir=out, log_lines=False, warmup_steps=0,
                                     transport="none" if mode == "record" else "auto")
            for k in range(block_steps):
                t0 = time.perf_counter()
                try:  # the data loader is part of the step: the probe times its waits too
                    x, y = next(it)
                except StopIteration:
                    it = iter(data)
                    x, y = next(it)
                model(x, y).backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                if k >= 3:  # the first steps of a block pay for start-up (hook discovery)
                    times[mode].append(time.perf_counter() - t0)
            if mode == "full":
                st = straggler_probe.stats()
                events += st["runtime"]["events_recorded"]
                steps += st["step"]
            straggler_probe.shutdown()
    return {"median_s": {m: statistics.median(v) for m, v in times.items()},
            "steps": len(times["off"]), "events_per_step": events / max(1, steps)}


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


def run_child(mode: str, args: argparse.Namespace, out: str, steps: int, runs: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", mode, "--steps", str(steps),
           "--runs", str(runs), "--out", out]
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
    ap.add_argument("--steps", type=int, default=25, help="steps per block")
    ap.add_argument("--runs", type=int, default=12, help="blocks per mode")
    ap.add_argument("--child", choices=["interleaved", "tiny", "ddp"])
    ap.add_argument("--out", default=str(REPO / "sp-out-bench"))
    args = ap.parse_args()
    if args.child == "ddp":
        print(json.dumps(ddp_child(args.steps, args.out)))
        return
    if args.child:
        print(json.dumps(interleaved(args.runs, args.steps, args.out, args.child == "tiny")))
        return

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    tiny = run_child("tiny", args, args.out, 100, 2 * args.runs)
    tt = tiny["median_s"]
    added = {m: tt[m] - tt["off"] for m in ("record", "full")}
    r = run_child("interleaved", args, args.out, args.steps, args.runs)
    t = r["median_s"]
    print(f"added time per step       {added['record'] * 1e6:8.1f} us recording only, "
          f"{added['full'] * 1e6:.1f} us with the analysis  (tiny-model step "
          f"{tt['off'] * 1e6:.0f} us, {tiny['steps']} steps per mode, interleaved)")
    print(f"GPT step without probe    {t['off'] * 1e3:8.3f} ms  (median of {r['steps']} steps in "
          f"{args.runs} blocks, small GPT, 1 thread)")
    for m, label in (("record", "recording only"), ("full", "with analysis ")):
        print(f"ratio, {label}   {1 + added[m] / t['off']:8.4f}  (added time / GPT step; target "
              f"<= 1.02)   direct A/B on the GPT: {t[m] / t['off']:.4f}")
    events_per_step = r["events_per_step"]
    ns = record_cost_ns(20_000)
    print(f"cost per recorded event   {ns:8.0f} ns  (Python -> _core.record, best of 10 x 20k)")
    print(f"events per step           {events_per_step:8.1f}")
    b = bytes_per_step(args, Path(args.out))
    print(f"bytes sent per rank/step  {b['bytes_per_step']:8.0f} B  (4 ranks DDP, "
          f"{b['summaries']} summaries each, transport {b['transport']})")


if __name__ == "__main__":
    main()
