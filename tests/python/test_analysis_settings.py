"""The analysis's knobs from the environment reach rank 0's analysis: the slowdown threshold
below which no straggler is named, the noise model's significance levels, and the interval of
the text summaries."""
from __future__ import annotations

import json

import harness
from conftest import DP_SPEC, analyzed


def test_threshold_and_recap_interval_from_the_environment(tmp_path):
    # A 30% slow rank gives S ~1.2: above any default (the noise model names it: see test_live_dp),
    # below 2.0 (nothing named). Short window so that steps are analysed early.
    spec = dict(DP_SPEC, steps=14, slow_rank=1, slow_factor=1.3)
    env = {"STRAGGLER_PROBE_SLOWDOWN_THRESHOLD": "2.0", "STRAGGLER_PROBE_RECAP_INTERVAL": "4",
           "STRAGGLER_PROBE_WINDOW_STEPS": "6", "STRAGGLER_PROBE_SIGNIFICANCE": "0.01",
           "STRAGGLER_PROBE_ALARM_SIGNIFICANCE": "0.0001"}
    result = harness.run_job(spec, tmp_path, world=2, env=env)
    assert result.returncodes == [0, 0], result.explain()
    steps = analyzed(result)
    assert len(steps) >= 8, result.explain()
    assert all(s["S"] > 1.05 for s in steps[2:]), [(s["step"], s["S"]) for s in steps]
    named = [(s["step"], s["cause"], s["worst"]) for s in steps if s["cause"] != "none"]
    assert not named, f"S below the 2.0 threshold, yet causes were named: {named}"
    summaries = [l for l in result.lines if l.startswith("straggler_probe recap ")]
    # one every 4 analysed steps, plus the closing one
    assert len(summaries) >= len(steps) // 4, result.lines
    # the noise model's levels reached the analysis (report.json says what it ran with)
    config = json.loads((result.out_dir / "report" / "report.json").read_text())["config"]
    assert config["alpha"] == 0.01 and config["alarm_alpha"] == 0.0001, config
