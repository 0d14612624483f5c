#!/usr/bin/env python3
"""What one collective costs the training thread with the probe, against a process that never
loaded it.

One rank (a gloo group of 1, so the collective itself is as cheap as it gets and the probe's share
shows), a 1-element all_reduce issued N times per step: synchronous, and async followed by
wait() (the process-group layer's hooks, the work's end found through its future or its wait).
Separate processes, probe and never-loaded interleaved (off, on, on, off, ...), each the median of
10 steps of N ops; the table gives each pair's microseconds per op and the mean difference with a
95% t interval over the pairs.

    STRAGGLER_PROBE_PYTHONPATH=build/python .venv/bin/python bench/frameworks/per_op_cost.py [--pairs 4] [--ops 200]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}

CHILD = r'''
import json, os, statistics, sys, time
probe, ops = sys.argv[1] == "on", int(sys.argv[2])
if probe:
    import straggler_probe
    straggler_probe.init(out_dir=sys.argv[3])
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
def per_op_us(async_op):
    t0 = time.perf_counter()
    for _ in range(ops):
        if async_op:
            dist.all_reduce(t, async_op=True).wait()
        else:
            dist.all_reduce(t)
    return (time.perf_counter() - t0) / ops * 1e6
rows = []
for step in range(13):
    row = (per_op_us(False), per_op_us(True))
    if step >= 3:  # warm-up: the probe's first steps find the groups and the step boundary
        rows.append(row)
    if probe:
        straggler_probe.step()
print(json.dumps({"sync": statistics.median(r[0] for r in rows),
                  "async_wait": statistics.median(r[1] for r in rows)}))
if probe:
    straggler_probe.shutdown()
dist.destroy_process_group()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(mode: str, ops: int, out: Path) -> dict:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0",
               WORLD_SIZE="1", OMP_NUM_THREADS="1")
    path = os.environ.get("STRAGGLER_PROBE_PYTHONPATH")
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(ops), str(out)], env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise SystemExit(f"per_op_cost: the {mode} run failed:\n{r.stderr[-2000:]}")
    return json.loads(lines[-1])


def interval(diffs: list[float]) -> float:
    return (T95.get(len(diffs) - 1, 2.0) * statistics.stdev(diffs) / math.sqrt(len(diffs))
            if len(diffs) > 1 else float("nan"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("/tmp/sp_per_op_cost"))
    a = ap.parse_args()
    got = {"sync": [], "async_wait": []}
    print("| pair | sync off / on (us per op) | async + wait off / on (us per op) |")
    print("| ---: | --- | --- |")
    for p in range(a.pairs):
        order = ("off", "on") if p % 2 == 0 else ("on", "off")
        res = {m: one_run(m, a.ops, a.out / f"{p}-{m}") for m in order}
        for kind in got:
            got[kind].append(res["on"][kind] - res["off"][kind])
        print(f"| {p + 1} | {res['off']['sync']:.1f} / {res['on']['sync']:.1f} | "
              f"{res['off']['async_wait']:.1f} / {res['on']['async_wait']:.1f} |")
    for kind, diffs in got.items():
        print(f"{kind}: the probe adds {statistics.mean(diffs):.1f} +-{interval(diffs):.1f} us "
              f"per op (95%, {len(diffs)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
