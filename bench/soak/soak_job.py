"""A long run of a real job with the probe (issue 26's soak; prints markdown rows, not a test).

4 CPU ranks (gloo, DDP, a two-layer model whose step is a few milliseconds: the probe's per-step
work dominates, which is what a soak should stress) train for --steps steps. Each rank samples
its own resident memory (/proc/self/statm) every --sample-every steps; the slope is the least
squares fit over the samples after the first fifth of the run (allocator pools, the analysis
windows and the torch caches have filled by then), in KiB per 1000 steps. The same job runs
twice in separate processes, without the probe (its import never happens) and with it, so the
probe's slope is read against the job's own. Rank 0's JSONL bytes per analysed step are
measured over the second half of the run.

    PYTHONPATH=build/python .venv/bin/python bench/soak/soak_job.py [--steps 10000] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib() -> float:
    with open("/proc/self/statm") as f:
        resident = int(f.read().split()[1])
    return resident * os.sysconf("SC_PAGE_SIZE") / 1024.0


def jsonl_bytes(out: Path) -> int:
    p = out / "report" / "straggler_probe_steps.jsonl"
    return p.stat().st_size if p.exists() else 0


def analysed_steps(out: Path) -> int:
    p = out / "report" / "straggler_probe_steps.jsonl"
    if not p.exists():
        return 0
    return sum(1 for line in p.read_text().splitlines() if '"analyzed":true' in line)


def rank_main(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    out = Path(args.out) / ("probe" if args.probe else "plain")
    if args.probe:
        import straggler_probe
        straggler_probe.init(out_dir=str(out / "report"), log_lines=False)
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    samples, half_bytes, half_analysed = [], 0, 0
    t0 = time.monotonic()
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if (step + 1) % args.sample_every == 0:
            samples.append((step + 1, rss_kib()))
        if rank == 0 and args.probe and step + 1 == args.steps // 2:
            half_bytes, half_analysed = jsonl_bytes(out), analysed_steps(out)
    wall = time.monotonic() - t0
    if args.probe:
        straggler_probe.shutdown()
    dist.destroy_process_group()
    result = {"rank": rank, "samples": samples, "wall_s": wall}
    if rank == 0 and args.probe:
        result.update(jsonl_half=half_bytes, analysed_half=half_analysed,
                      jsonl_end=jsonl_bytes(out), analysed_end=analysed_steps(out))
    (out / f"rank{rank}.json").write_text(json.dumps(result))


def slope_kib_per_1000(samples: list, steps: int) -> float:
    pts = [(s, r) for s, r in samples if s >= steps // 5]
    n = len(pts)
    if n < 2:
        return 0.0
    sx = sum(s for s, _ in pts); sy = sum(r for _, r in pts)
    sxx = sum(s * s for s, _ in pts); sxy = sum(s * r for s, r in pts)
    return (n * sxy - sx * sy) / (n * sxx - sx * sx) * 1000.0


def run(args: argparse.Namespace, probe: bool) -> list[dict]:
    import torch.multiprocessing as mp
    args.probe = probe
    out = Path(args.out) / ("probe" if probe else "plain")
    out.mkdir(parents=True, exist_ok=True)
    mp.start_processes(rank_main, args=(args.world, free_port(), args), nprocs=args.world,
                       start_method="spawn")
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(args.world)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--sample-every", type=int, default=250)
    p.add_argument("--out", default="/tmp/sp_soak_job")
    args = p.parse_args()
    print("| process | rank | step time (ms) | RSS after 1/5 (MiB) | RSS at end (MiB) | slope (KiB / 1000 steps) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for probe in (False, True):
        for r in run(args, probe):
            pts = [rss for s, rss in r["samples"] if s >= args.steps // 5]
            print(f"| {'probe' if probe else 'never loaded the probe'} | {r['rank']} | "
                  f"{r['wall_s'] / args.steps * 1e3:.2f} | {pts[0] / 1024:.1f} | "
                  f"{pts[-1] / 1024:.1f} | {slope_kib_per_1000(r['samples'], args.steps):+.1f} |")
            if "jsonl_end" in r:
                per_step = (r["jsonl_end"] - r["jsonl_half"]) / max(1, r["analysed_end"] - r["analysed_half"])
                tail = (f"rank 0: {r['analysed_end']} steps analysed, JSONL "
                        f"{r['jsonl_end'] / 1024:.0f} KiB, {per_step:.0f} bytes per analysed step "
                        "(second half)")
    print()
    print(tail)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
