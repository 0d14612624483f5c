#!/usr/bin/env python3
"""The detection benchmark's real jobs: 4-rank DDP training over gloo on this machine, through
the real probe (straggler_probe.init() in every rank, rank 0's live analysis), with nothing
planted, one rank 30% slower (sleeping: an emulated accelerator's time), one rank burning 30%
more real CPU than its peers (matmuls in its forward; its twin is the clean job without emulated
device time), GC pauses on one rank, and data-loader stalls on one rank.

Each job becomes a cell folder (cell.json, truth.jsonl, and the probe's own report/) that
`sp_detection_bench score` scores like the synthetic ones. Every job runs under the shared lock
(flock on /tmp/sp-heavy.lock, released between jobs).

    bench/detection/real_jobs.py --out OUT [--steps 80] [--repeats 1] [--jobs clean,slow-30,...]

Ground truth: a planted step (as the workload reports it) carries its cause and rank; the slow
rank's job carries `worker` on every step. The measured slowdown of a step is its wall time
(rank 0's loop) over the median step of the clean job run just before; for the slow rank's job,
every step gets the job's mean over the clean job's mean (after the warm-up). A GC or stall
step less than 1% slower than that median is marginal; the slow rank's steps never are.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))
import harness  # noqa: E402

# name -> (the workload's spec, the planted cause, its rank)
JOBS = {
    "clean": ({}, None, None),
    "clean-cpu": ({"device_ms": 0.0, "batch": 16}, None, None),
    "slow-30": ({"slow_rank": 2, "slowdown": 0.3}, "worker", 2),
    "slow-cpu-30": ({"device_ms": 0.0, "batch": 16, "burn_rank": 2, "burn_share": 0.3}, "worker", 2),
    "gc": ({"gc_rank": 1, "gc_every": 4, "gc_pause_ms": 60}, "gc", 1),
    "data-stall": ({"stall_rank": 3, "stall_every": 3, "stall_ms": 60}, "cpu-delay", 3),
}
MIN_EFFECT = 0.01
# A job whose measured slowdown is against another clean job than "clean" (the same job shape).
TWIN = {"slow-cpu-30": "clean-cpu"}


@contextlib.contextmanager
def heavy_lock(path: str | None):
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(name: str, steps: int, cell: Path, lock: str | None) -> harness.JobResult:
    spec = dict(JOBS[name][0], steps=steps)
    shutil.rmtree(cell, ignore_errors=True)  # the probe appends to a JSONL it finds there
    with heavy_lock(lock):
        result = harness.run_job(spec, cell, script=HERE / "real_workload.py", timeout=600)
    if result.returncodes != [0, 0, 0, 0]:
        raise SystemExit(f"real_jobs: job {name} failed\n{result.explain()}")
    return result


def truth_lines(name: str, result: harness.JobResult, clean_times: list[float],
                warmup: int) -> list[dict]:
    """`clean_times`: the clean job's step times after its warm-up."""
    _, cause, rank = JOBS[name]
    times = result.step_times(0)
    median = statistics.median(clean_times)
    job_ratio = statistics.fmean(times[warmup:]) / statistics.fmean(clean_times)
    planted = set(result.ranks[rank]["planted"]) if rank is not None else set()
    lines = []
    for step, t in enumerate(times):
        hit = cause == "worker" or step in planted
        measured = job_ratio if cause == "worker" else t / median
        # The slow rank is there on every step; its job's ratio to another run is reported, not
        # used to mark steps marginal (two runs on this shared machine differ by a few % anyway).
        counts = hit and (cause == "worker" or measured >= 1 + MIN_EFFECT)
        active = [{"cause": cause, "targets": [f"rank:{rank}"]}] if counts else []
        lines.append({"step": step, "active": active, "marginal": hit and not counts,
                      "measured_slowdown": measured})
    return lines


def write_cell(cell: Path, name: str, label: str, steps: int, warmup: int,
               truth: list[dict]) -> None:
    _, cause, rank = JOBS[name]
    spec = JOBS[name][0]
    period = spec.get("gc_every") or spec.get("stall_every") or 1
    faults = [] if cause is None else [{"cause": cause, "targets": [f"rank:{rank}"],
                                        "onset": 0 if cause == "worker" else period - 1,
                                        "every": period}]
    info = {"name": label, "shape": "gloo4", "scenario": name, "source": "gloo", "ranks": 4,
            "jitter": 0, "seed": 0, "steps": steps, "warmup": warmup, "faults": faults,
            "verdicts": "report/straggler_probe_steps.jsonl", "report": "report/report.json",
            "twin": ""}
    (cell / "cell.json").write_text(json.dumps(info, indent=1) + "\n")
    (cell / "truth.jsonl").write_text("".join(json.dumps(t) + "\n" for t in truth))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--jobs", default=",".join(JOBS))
    p.add_argument("--lock", default="/tmp/sp-heavy.lock", help="'' to run without the lock")
    p.add_argument("--bench", default=str(REPO / "build/bench/detection/sp_detection_bench"))
    p.add_argument("--markdown", default="")
    args = p.parse_args()
    names = args.jobs.split(",")
    unknown = [n for n in names if n not in JOBS]
    if unknown:
        raise SystemExit(f"real_jobs: unknown job(s) {unknown}; known: {list(JOBS)}")
    cells = []
    for r in range(args.repeats):
        # The clean job first: the others' measured slowdowns are against it.
        clean_dir = args.out / f"clean#{r + 1}"
        clean = run("clean", args.steps, clean_dir, args.lock)
        times_of = {"clean": clean.step_times(0)[args.warmup:]}
        for name in names:
            cell = clean_dir if name == "clean" else args.out / f"{name}#{r + 1}"
            twin = TWIN.get(name, "clean")
            if twin not in times_of:  # its twin not asked for (or not yet run): run it first
                twin_result = run(twin, args.steps, args.out / f"{twin}#{r + 1}", args.lock)
                times_of[twin] = twin_result.step_times(0)[args.warmup:]
            result = clean if name == "clean" else run(name, args.steps, cell, args.lock)
            if name in TWIN.values():
                times_of[name] = result.step_times(0)[args.warmup:]
            write_cell(cell, name, f"gloo4/{name}#{r + 1}", args.steps, args.warmup,
                       truth_lines(name, result, times_of[twin], args.warmup))
            cells.append(str(cell))
            print(f"real_jobs: {name}#{r + 1}: {len(result.steps)} verdicts", file=sys.stderr)
    cmd = [args.bench, "score", *cells, "--title", "Real 4-rank gloo jobs on this machine"]
    if args.markdown:
        cmd += ["--markdown", args.markdown]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
