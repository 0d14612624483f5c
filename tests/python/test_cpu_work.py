"""Issue 23: a rank that computes more on cores its peers share. 4 gloo ranks on the machine's
cores, each doing real CPU work in its forward (matmuls, sized in its own CPU time) beside
sleeps; rank 2 does 30% more of it. On shared cores its work also slows whichever rank waits
for its core, so the wall times scatter; the probe's per-step CPU time of each rank tells who
computes more. Its clean twin (every rank the same work) names no one and raises nothing."""
from __future__ import annotations

import json

import harness

CPU_SPEC = {"fwd_ms": 20, "bwd_ms": 40, "burn_ms": 40, "steps": 48}
SETTLED = 20  # the burn is there from the first step: the short window (8 steps) has filled
# by then, with some steps to spare for the analysis's first ones


def _run(spec: dict, tmp_path) -> harness.JobResult:
    result = harness.run_job(spec, tmp_path)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    return result


def _alarms(run: harness.JobResult) -> list[dict]:
    return json.loads((run.out_dir / "report" / "report.json").read_text())["alarms"]


def _named(steps: list[dict]) -> list[tuple]:
    return [(s["step"], s["cause"], s["worst"], s.get("named_by"), s.get("cpu_work")) for s in steps]


def test_a_rank_that_computes_more_is_named_and_raises_its_alarm(tmp_path):
    run = _run(dict(CPU_SPEC, burn_rank=2, burn_factor=1.3), tmp_path)
    steps = [s for s in run.steps if s.get("analyzed") and s["step"] >= SETTLED]
    assert len(steps) >= 20, run.explain()
    right = [s for s in steps if s["cause"] == "worker" and s["worst"] == "rank:2"]
    assert len(right) >= 0.8 * len(steps), _named(steps)
    wrong = [s for s in steps if s["cause"] != "none" and s not in right]
    assert not wrong, _named(wrong)
    # Named for the work it does: the steps the wall tests leave within the jitter are named by
    # the CPU work test, which says how often it was above its peers.
    by_work = [s for s in right if s.get("named_by") == "cpu-work"]
    assert len(by_work) >= len(right) // 4, _named(right)
    for s in by_work:
        assert s["cpu_work"]["above"] >= s["cpu_work"]["of"] // 2, s
    alarms = _alarms(run)
    mine = [a for a in alarms if a["target"] == "rank:2" and a["cause"] == "worker"]
    assert len(mine) == 1, alarms
    assert len(alarms) == 1, alarms


def test_its_clean_twin_names_no_one(tmp_path):
    run = _run(CPU_SPEC, tmp_path)
    steps = [s for s in run.steps if s.get("analyzed")]
    assert len(steps) >= 36, run.explain()
    named = [s for s in steps if s["cause"] != "none"]
    assert len(named) <= 0.05 * len(steps), _named(named)
    assert _alarms(run) == [], _alarms(run)
