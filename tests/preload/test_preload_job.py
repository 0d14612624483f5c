"""A preloaded run of a CPU training job (4 ranks, DDP over gloo, one rank 30% slower) still gives
rank 0's per-step lines and names the straggler: libstraggler_probe.so in LD_PRELOAD must not
disturb the job or the Python package that records it (which then reaches the preloaded copy of
the runtime through its exported C functions).

Run by CTest (tests/preload/CMakeLists.txt) with STRAGGLER_PROBE_PYTHONPATH (the built package)
and SP_PRELOAD_LIB (the library) set; uses tests/python's job harness."""
from __future__ import annotations

import os
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
