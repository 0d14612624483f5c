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
        assert result.ranks[r]["stats"]["pipeline"]["state"] in ("stopped-by-rank0", "stopped")
    # analysis stopped early: far fewer lines than steps
    assert len([l for l in result.lines if " S=" in l]) < 10
