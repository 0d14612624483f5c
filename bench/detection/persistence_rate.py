#!/usr/bin/env python3
"""How often the persistence test (online/src/decision/persistence.h) fires, per cell, from the verdict JSONL.

Each analysed step's verdict carries `persist`: the dp rank that led the most of the recent steps
and its test's p (every dp rank corrected for). This counts, over the scored steps (from
--warmup on), the steps where that p is below the significance level (what the test alone would
name), the steps it named (`named_by` persistence) and the steps that named anyone. On a clean
cell the first is the test's false-positive rate, whatever the other tests did. The same for the
CPU work test (`cpu_work`, `named_by` cpu-work) where the summaries carry CPU times
(`sp_detection_bench run --cpu-times`, real CPU jobs); "-" where they do not.

    persistence_rate.py CELL_DIR... [--alpha 1e-3] [--warmup 5]
"""
import argparse
import json
import os
import sys


def cell_counts(cell_dir, alpha, warmup):
    info = json.load(open(os.path.join(cell_dir, "cell.json")))
    path = os.path.join(cell_dir, info.get("verdicts", "straggler_probe_steps.jsonl"))
    steps = below = by_persistence = named = 0
    work_steps = work_below = by_work = 0
    smallest = work_smallest = 1.0
    for line in open(path):
        v = json.loads(line)
        if v.get("event") != "step" or not v.get("analyzed") or v["step"] < warmup:
            continue
        steps += 1
        p = (v.get("persist") or {}).get("p", 1.0)
        smallest = min(smallest, p)
        below += p < alpha
        by_persistence += v.get("named_by") == "persistence"
        named += v.get("cause", "none") != "none"
        work = v.get("cpu_work")
        if work and "p" in work:  # JSONL of before 8b635ed: cpu_work only where it named
            work_steps += 1
            work_smallest = min(work_smallest, work["p"])
            work_below += work["p"] < alpha
            by_work += v.get("named_by") == "cpu-work"
    work = (work_steps, work_below, by_work, work_smallest)
    return info.get("name", cell_dir), steps, below, by_persistence, named, smallest, work


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cells", nargs="+")
    ap.add_argument("--alpha", type=float, default=1e-3, help="the noise model's level (NoiseConfig::alpha)")
    ap.add_argument("--warmup", type=int, default=5, help="first steps not scored")
    a = ap.parse_args()
    print("| cell | steps | persist p < alpha | named by persistence | named by any test | smallest persist p "
          "| cpu_work p < alpha | named by cpu-work | smallest cpu_work p |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    total = [0, 0, 0, 0]
    for d in a.cells:
        if not os.path.exists(os.path.join(d, "cell.json")):
            continue
        name, steps, below, by_p, named, smallest, work = cell_counts(d, a.alpha, a.warmup)
        total[0] += steps
        total[1] += below
        work_steps, work_below, by_work, work_smallest = work
        total[2] += work_steps
        total[3] += work_below
        work_cols = (f"{work_below} of {work_steps} | {by_work} | {work_smallest:.2g}" if work_steps
                     else "- | - | -")
        print(f"| {name} | {steps} | {below} ({100.0 * below / max(steps, 1):.2f}%) | {by_p} | {named} | {smallest:.2g} "
              f"| {work_cols} |")
    print(f"\nAll cells: the persistence test below alpha on {total[1]} of {total[0]} steps; the CPU work "
          f"test on {total[3]} of {total[2]}.", file=sys.stderr)


if __name__ == "__main__":
    main()
