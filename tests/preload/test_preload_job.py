"""LD_PRELOAD into Python training jobs.

1. A preloaded run of a CPU training job (4 ranks, DDP over gloo, one rank 30% slower) still gives
rank 0's per-step lines and names the straggler: libstraggler_probe.so in LD_PRELOAD must not
disturb the job or the Python package that records it (which then reaches the preloaded copy of
the runtime through its exported C functions).

2. An unmodified script (no straggler_probe in it) under LD_PRELOAD gives the same per-step lines:
the library puts its autoload directory on PYTHONPATH and the package starts when the script
initialises torch.distributed.

Run by CTest (tests/preload/CMakeLists.txt) with STRAGGLER_PROBE_PYTHONPATH (the built package)
and SP_PRELOAD_LIB (the library) set; uses tests/python's job harness."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
import harness  # noqa: E402

LIB = os.environ.get("SP_PRELOAD_LIB")


@pytest.mark.skipif(not LIB, reason="SP_PRELOAD_LIB not set")
def test_preloaded_job_names_the_straggler(tmp_path: Path) -> None:
    spec = {"fwd_ms": 40, "bwd_ms": 80, "steps": 24, "slow_rank": 2, "slow_factor": 1.3}
    result = harness.run_job(spec, tmp_path, env={"LD_PRELOAD": LIB})
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    lines = [l for l in result.lines if " S=" in l]
    assert len(lines) >= 10, result.explain()
    steps = [s for s in result.steps if s.get("analyzed")]
    named = [s for s in steps if s["cause"] == "worker" and s["worst"] == "rank:2"]
    assert steps and len(named) / len(steps) >= 0.8, [(s["step"], s["cause"], s["worst"]) for s in steps]
    # At most one warning of ours per rank (no driver, no NCCL here: usually none).
    for err in result.stderr:
        assert sum("straggler_probe" in l and "warning" in l.lower() for l in err.splitlines()) <= 1, err


@pytest.mark.skipif(not LIB, reason="SP_PRELOAD_LIB not set")
def test_unmodified_script_gets_the_lines(tmp_path: Path) -> None:
    spec = {"fwd_ms": 40, "bwd_ms": 80, "steps": 24, "slow_rank": 2, "slow_factor": 1.3}
    world = 4
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    extra = os.environ.get("STRAGGLER_PROBE_PYTHONPATH")
    env.update(LD_PRELOAD=LIB, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(harness.free_port()),
               WORLD_SIZE=str(world), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               STRAGGLER_PROBE_OUT_DIR=str(tmp_path / "report"),
               PYTHONPATH=os.pathsep.join(p for p in (extra, env.get("PYTHONPATH")) if p))
    script = Path(__file__).resolve().parent / "unmodified_job.py"
    procs = [subprocess.Popen([sys.executable, str(script), json.dumps(spec)],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    outs = [p.communicate(timeout=300) for p in procs]
    explain = "\n".join(f"--- rank {r} rc={p.returncode}\n{o[-3000:]}\n{e[-3000:]}"
                        for r, (p, (o, e)) in enumerate(zip(procs, outs)))
    assert [p.returncode for p in procs] == [0] * world, explain
    lines = [l for l in outs[0][0].splitlines() if l.startswith("straggler_probe ") and " S=" in l]
    assert len(lines) >= 10, explain
    jsonl = tmp_path / "report" / "straggler_probe_steps.jsonl"
    steps = [json.loads(l) for l in jsonl.read_text().splitlines() if l.strip()]
    steps = [s for s in steps if s.get("analyzed")]
    named = [s for s in steps if s["cause"] == "worker" and s["worst"] == "rank:2"]
    assert steps and len(named) / len(steps) >= 0.8, [(s["step"], s["cause"], s["worst"]) for s in steps]
