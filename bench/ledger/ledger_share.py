#!/usr/bin/env python3
"""The ledger's share charged to a planted slow rank against what the job itself measured
(issue 25): pairs of real 4-rank DDP jobs over gloo (tests/python/workload.py, as conftest's
clean_run / straggler_run: 80 ms forward, 160 ms backward by sleeps, rank 2's compute x1.3 in
the slow job), run one after the other.

  named     = sum over the slow job's analysed steps (from step 4) of the rank's fix_gain_gpu_s
              / sum of time_s x gpus (the JSONL's lost entries)
  measured  = (median slow step - median clean step) / mean slow step, by the jobs' own clocks
              (workload.py's per-step times, from step 4): the step time the clean job did not
              need over the ledger's denominator, the slow job's GPU time (as tests/python/
              test_ledger.py); and (median slow - median clean) / median slow

usage: STRAGGLER_PROBE_PYTHONPATH=build/python bench/ledger/ledger_share.py [--pairs 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests" / "python"))
import harness  # noqa: E402

SKIP = 4
SPEC = {"fwd_ms": 80, "bwd_ms": 160, "steps": 24}


def shares(run: harness.JobResult, target: str | None) -> tuple[float, float, str]:
    """(charged to target, lost, "named on k/n steps"), shares of the run's GPU time."""
    steps = [s for s in run.steps if s.get("analyzed") and s["step"] >= SKIP]
    gpu_s = sum(s["time_s"] * s["lost"]["gpus"] for s in steps)
    mine = [s for s in steps if s["lost"]["target"] is not None and (target is None or s["lost"]["target"] == target)]
    named = sum(s["lost"]["fix_gain_gpu_s"] for s in mine)
    lost = sum(s["lost"]["gpu_s"] for s in steps)
    return named / gpu_s, lost / gpu_s, f"{len(mine)}/{len(steps)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| pair | named (rank 2) | steps naming it | measured | ratio | measured / median slow | ratio | "
          "lost, slow job | charged, clean job | lost, clean job |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            clean = harness.run_job(SPEC, Path(tmp) / f"clean{i}")
            slow = harness.run_job(dict(SPEC, slow_rank=2, slow_factor=1.3), Path(tmp) / f"slow{i}")
            assert clean.returncodes == [0] * 4 and slow.returncodes == [0] * 4, slow.explain()
            named, lost, count = shares(slow, "rank:2")
            clean_named, clean_lost, _ = shares(clean, None)
            ts, tc = slow.step_times()[SKIP:], clean.step_times()[SKIP:]
            measured = (statistics.median(ts) - statistics.median(tc)) / statistics.mean(ts)
            med = (statistics.median(ts) - statistics.median(tc)) / statistics.median(ts)
            print(f"| {i} | {named:.4f} | {count} | {measured:.4f} | {named / measured:.3f} | {med:.4f} | {named / med:.3f} | "
                  f"{lost:.4f} | {clean_named:.4f} | {clean_lost:.4f} |", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
