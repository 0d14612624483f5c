"""A rank-0 analysis that throws or stalls never stops training: one warning, then the probe
steps aside on every rank."""
from __future__ import annotations

import pytest

import harness
from conftest import DP_SPEC


@pytest.mark.parametrize("fault", ["throw", "stall"])
def test_analysis_failure_steps_aside(tmp_path, fault):
    spec = dict(DP_SPEC, steps=30)
    env = {"STRAGGLER_PROBE_FAULT_INJECT": fault, "STRAGGLER_PROBE_ANALYSIS_TIMEOUT": "1"}
    result = harness.run_job(spec, tmp_path, env=env)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    for r in range(4):  # every rank trained every step
        assert len(result.step_times(r)) == 30, result.explain()
    warnings = [l for l in result.stderr[0].splitlines() if "straggler_probe: WARNING" in l]
    assert len(warnings) == 1, result.stderr[0]
    assert "steps aside" in warnings[0]
    assert result.ranks[0]["stats"]["pipeline"]["state"] == "stepped-aside"
    for r in range(1, 4):
        assert "straggler_probe: WARNING" not in result.stderr[r]
        # the others heard it and stopped sending (or had finished by then)
        assert result.ranks[r]["stats"]["pipeline"]["state"] in ("stopped-by-another-rank", "stopped")
    # analysis stopped early: far fewer lines than steps
    assert len([l for l in result.lines if " S=" in l]) < 10


def test_rank0_falling_behind_skips_whole_steps(tmp_path):
    # analysis takes 500 ms per step, the job ~250 ms: rank 0 keeps at most max_lag=3 steps queued
    # and skips the oldest whole steps, saying how many; training is not slowed
    spec = dict(DP_SPEC, steps=30)
    env = {"STRAGGLER_PROBE_FAULT_INJECT": "slow", "STRAGGLER_PROBE_MAX_LAG": "3"}
    result = harness.run_job(spec, tmp_path, env=env)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    for r in range(4):
        assert len(result.step_times(r)) == 30
    skipped = [l for l in result.lines if "fell behind" in l]
    assert skipped, result.stdout[0]
    p = result.ranks[0]["stats"]["pipeline"]
    assert p["steps_skipped_behind"] > 0
    assert "straggler_probe: WARNING" not in result.stderr[0]
    # every step after warm-up is accounted for: analysed or skipped
    assert p["steps_analyzed"] + p["steps_skipped_behind"] == 30 - 2


def test_python_store_transport(tmp_path):
    # the fallback transport (store driven through Python) carries the same summaries
    spec = dict(DP_SPEC, steps=10)
    result = harness.run_job(spec, tmp_path, env={"STRAGGLER_PROBE_TRANSPORT": "python"})
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    assert result.ranks[1]["transport"] == "python"
    assert result.ranks[0]["stats"]["pipeline"]["steps_analyzed"] == 10 - 2


def test_recording_failure_on_one_rank_stops_the_probe_everywhere(tmp_path):
    spec = dict(DP_SPEC, steps=30)
    result = harness.run_job(spec, tmp_path, env={"STRAGGLER_PROBE_FAULT_INJECT": "record"})
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    for r in range(4):
        assert len(result.step_times(r)) == 30
    assert "recording stopped after an internal error" in result.stderr[1]
    warnings = [l for l in result.stderr[0].splitlines() if "straggler_probe: WARNING" in l]
    assert len(warnings) == 1 and "rank 1" in warnings[0] and "another rank" in warnings[0], \
        result.stderr[0]
    assert result.ranks[0]["stats"]["pipeline"]["state"] == "stepped-aside"
