"""Shared set-up of the Python tests: the built package on sys.path (and in the jobs' PYTHONPATH,
see harness.package_path), and one clean 4-rank run reused by the tests that compare with it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

_pkg = harness.package_path()
if _pkg and _pkg not in sys.path:
    sys.path.insert(0, _pkg)

# The data-parallel jobs: 80 ms forward, 160 ms backward per step on every rank (sleeps, see
# workload.py), 24 steps of which the first 2 are warm-up. The only real CPU work (gloo,
# Python) is a few ms per step; its jitter on a shared 2-core machine (a descheduled gloo
# thread can add 10 ms to an all-reduce) stays well below 5% of a step.
DP_SPEC = {"fwd_ms": 80, "bwd_ms": 160, "steps": 24}


@pytest.fixture(scope="session")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> harness.JobResult:
    result = harness.run_job(DP_SPEC, tmp_path_factory.mktemp("clean"))
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    return result


@pytest.fixture(scope="session")
def straggler_run(tmp_path_factory: pytest.TempPathFactory) -> harness.JobResult:
    spec = dict(DP_SPEC, slow_rank=2, slow_factor=1.3)
    result = harness.run_job(spec, tmp_path_factory.mktemp("straggler"))
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    return result


def analyzed(result: harness.JobResult) -> list[dict]:
    """Rank 0's analysed steps (JSONL), after the analysis window has a few steps in it."""
    return [s for s in result.steps if s.get("analyzed")]
