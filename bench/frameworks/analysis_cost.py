"""What rank 0's analysis costs a job on a crowded host, from runs already made.

    .venv/bin/python bench/frameworks/analysis_cost.py --cores 2 DIR [DIR ...]

Each DIR is a run's output folder (bench/frameworks/run.py --out, one folder per run; the
tests' harness writes the same): rank 0's `rank0.json` holds its step times and the probe's
`stats()`, whose `pipeline` counters say how long the analysis thread took in all
(`analysis_us_total`: wall time from a step's batch to its verdict, so an upper bound of its CPU
time, since at nice +10 on a busy host it also waits for the ranks' threads) and writing reports
(`report_us_total`), over `steps_analyzed` steps. Per run: both per analysed step; that as a share
of one core over the job's median step ("of a core"), which is what the 10% budget of one core
(online/README.md, "CPU budget") bounds; and as a share of the whole host's CPU over the step
("of the host": `--cores`), the most the job's own ranks can lose to it when they keep every
core busy, as 4 ranks on 2 cores do. It is an upper bound of the job's slowdown from it: the
analysis thread runs at nice +10, so the ranks' threads go first.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def row(run: Path, cores: int) -> dict | None:
    path = run / "rank0.json"
    if not path.exists():
        return None
    rank0 = json.loads(path.read_text())
    pipe = rank0.get("stats", {}).get("pipeline", {})
    steps = pipe.get("steps_analyzed", 0)
    times = rank0.get("step_times", [])[5:]
    if not steps or not times:
        return None
    step_ms = statistics.median(times) * 1e3
    analysis_ms = pipe.get("analysis_us_total", 0) / steps / 1e3
    report_ms = pipe.get("report_us_total", 0) / steps / 1e3
    spent = analysis_ms + report_ms
    return {"run": run.name, "step_ms": step_ms, "analysis_ms": analysis_ms, "report_ms": report_ms,
            "analysis_max_ms": pipe.get("analysis_us_max", 0) / 1e3,
            "of_a_core": spent / step_ms, "of_the_host": spent / (step_ms * cores),
            "skipped_by_budget": pipe.get("steps_skipped_behind", 0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--cores", type=int, default=2)
    a = ap.parse_args()
    if a.cores < 1:
        ap.error("--cores: expected an integer >= 1")
    print("| run | step (ms) | analysis / step (ms, wall) | max (ms) | reports / step (ms) | of a core | of the host | steps skipped by the budget |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for d in a.dirs:
        r = row(d, a.cores)
        if r is None:
            print(f"| {d.name} | no rank0.json with analysed steps | | | | | | |")
            continue
        print(f"| {r['run']} | {r['step_ms']:.0f} | {r['analysis_ms']:.1f} | {r['analysis_max_ms']:.1f} | "
              f"{r['report_ms']:.1f} | {100 * r['of_a_core']:.1f}% | {100 * r['of_the_host']:.2f}% | "
              f"{r['skipped_by_budget']:.0f} |")


if __name__ == "__main__":
    main()
