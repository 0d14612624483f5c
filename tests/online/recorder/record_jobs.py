"""Records the step summaries of some of tests/python's real 4-rank jobs (gloo, CPU) for the
online-analysis tests: tests/data/online_jobs/<job>/rank<R>.spsum (see the README there).

    PYTHONPATH=build/python .venv/bin/python tests/online/recorder/record_jobs.py OUT_DIR [JOB...]

Each job runs through tests/python's harness (workload.py, as the Python tests run it) with the
built libstraggler_probe.so preloaded (the straggler_probe package then uses that copy of the
runtime) and, after it, this folder's recorder (build/tests/online/libsp_summary_recorder.so),
which writes what the runtime hands the transport.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))
import harness  # noqa: E402

DP = {"fwd_ms": 80, "bwd_ms": 160}
JOBS = {
    # tests/python/conftest.py's straggler_run: rank 2 computes 1.3x slower
    "dp-slow-rank": dict(DP, steps=14, slow_rank=2, slow_factor=1.3),
    # test_live_causes.py: rank 1 collects for 60 ms every 4th step
    "dp-gc": dict(DP, steps=14, gc_rank=1, gc_every=4, gc_pause_ms=60),
    # test_live_causes.py: 2 stages x 2 dp ranks, GPipe, 4 micro-batches, last stage 2x the work
    "pp-heavy-last-stage": {"pipeline": 2, "fwd_ms": 15, "bwd_ms": 30, "last_stage_factor": 2.0,
                            "microbatches": 4, "steps": 14},
}


def record(name: str, out_root: Path) -> None:
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    runtime = REPO / "build" / "runtime" / "libstraggler_probe.so"
    recorder = REPO / "build" / "tests" / "online" / "libsp_summary_recorder.so"
    env = {"LD_PRELOAD": f"{runtime} {recorder}", "SP_RECORD_DIR": str(out)}
    work = out_root / (name + ".run")
    result = harness.run_job(JOBS[name], work, env=env)
    if result.returncodes != [0] * 4:
        raise SystemExit(result.explain())
    shutil.rmtree(work, ignore_errors=True)
    sizes = {p.name: p.stat().st_size for p in sorted(out.glob("rank*.spsum"))}
    print(name, sizes)


if __name__ == "__main__":
    root = Path(sys.argv[1])
    for job in sys.argv[2:] or JOBS:
        record(job, root)
