"""Detection on torch.distributed.pipelining jobs: for each schedule, the share of steps >= 10
named right and S against the measured slowdown (method: bench/pipelining/README.md).

    flock /tmp/sp-heavy.lock .venv/bin/python bench/pipelining/detection.py [--steps 24] [--repeats 1]
                                                                            [--only TEXT]

Each case runs twice, with the straggler planted and with the same job clean (for a heavier
stage: the work spread evenly over the stages, fwd/bwd scaled by the mean stage factor).
--repeats N runs the whole list N times in turn (run 1 of every case, then run 2, ...), so that
a drift of the machine falls on every case alike; each row says its run.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
import harness  # noqa: E402

JUDGED_FROM = 10
FWD_MS, BWD_MS = 10.0, 20.0

# (name, spec, world, (cause, worst) expected, clean counterpart's spec)
HEAVY = 1.45


def _balanced(pp: int, per_rank: int) -> float:
    stages = pp * per_rank
    return (stages - 1 + HEAVY) / stages


CASES = [
    ("GPipe, 2 stages, last stage 1.45x", {"pipelining": "gpipe", "pp": 2, "last_stage_factor": HEAVY},
     2, ("stage-imbalance", "stage:1"), {"pipelining": "gpipe", "pp": 2, "scale": _balanced(2, 1)}),
    ("1F1B, 2 stages, last stage 1.45x", {"pipelining": "1f1b", "pp": 2, "last_stage_factor": HEAVY},
     2, ("stage-imbalance", "stage:1"), {"pipelining": "1f1b", "pp": 2, "scale": _balanced(2, 1)}),
    ("interleaved 1F1B, 2 ranks x 2 stages, last stage 1.45x",
     {"pipelining": "interleaved", "pp": 2, "last_stage_factor": HEAVY}, 2,
     ("stage-imbalance", "stage:1"), {"pipelining": "interleaved", "pp": 2, "scale": _balanced(2, 2)}),
    ("interleaved 1F1B, 4 ranks x 2 stages, last stage 1.45x",
     {"pipelining": "interleaved", "pp": 4, "last_stage_factor": HEAVY}, 4,
     ("stage-imbalance", "stage:3"), {"pipelining": "interleaved", "pp": 4, "scale": _balanced(4, 2)}),
    ("1F1B, 2 stages x 2 dp (DDP), rank 1 1.3x", {"pipelining": "1f1b", "pp": 2, "slow_rank": 1,
                                                   "slow_factor": 1.3},
     4, ("worker", "rank:1"), {"pipelining": "1f1b", "pp": 2}),
]


def _spec(base: dict, steps: int) -> dict:
    spec = dict(base, microbatches=4, steps=steps)
    scale = spec.pop("scale", 1.0)
    spec.update(fwd_ms=FWD_MS * scale, bwd_ms=BWD_MS * scale)
    return spec


def _run(spec: dict, world: int) -> harness.JobResult:
    with tempfile.TemporaryDirectory() as tmp:
        result = harness.run_job(spec, Path(tmp), world=world, timeout=600)
    if any(result.returncodes):
        raise SystemExit(result.explain())
    return result


def _judged(result: harness.JobResult) -> list[dict]:
    return [s for s in result.steps if s.get("analyzed") and s["step"] >= JUDGED_FROM]


def _step_time(result: harness.JobResult) -> float:
    return statistics.median(result.step_times(0)[JUDGED_FROM:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", default="", help="the cases whose name contains this text")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats: expected an integer >= 1")
    print("| case | run | named right (steps >= 10) | S (median) | S clean (median) | S / S clean | "
          "measured slowdown | S < 1 steps | flagged, clean |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run, (name, spec, world, (cause, worst), clean_spec) in (
            (r + 1, case) for r in range(args.repeats) for case in CASES if args.only in case[0]):
        planted = _run(_spec(spec, args.steps), world)
        clean = _run(_spec(clean_spec, args.steps), world)
        steps, clean_steps = _judged(planted), _judged(clean)
        named = sum(s["cause"] == cause and s["worst"] == worst for s in steps)
        S = statistics.median(s["S"] for s in steps)
        S_clean = statistics.median(s["S"] for s in clean_steps)
        measured = _step_time(planted) / _step_time(clean)
        low = sum(s["S"] < 1 for s in planted.steps + clean.steps if s.get("analyzed"))
        flagged_causes = collections.Counter(s["cause"] for s in clean_steps if s["cause"] != "none")
        flagged = sum(flagged_causes.values())
        what = (" (" + ", ".join(f"{c} {n}" for c, n in flagged_causes.most_common()) + ")"
                if flagged else "")
        print(f"| {name} | {run} | {named}/{len(steps)} | {S:.3f} | {S_clean:.3f} | {S / S_clean:.3f} | "
              f"{measured:.3f} | {low} | {flagged}/{len(clean_steps)}{what} |", flush=True)


if __name__ == "__main__":
    main()
