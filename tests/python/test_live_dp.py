"""4 ranks, DDP on gloo: a clean run, and the same job with one rank's compute 30% slower."""
from __future__ import annotations

import json
import statistics

import harness

from conftest import analyzed


def test_clean_run_names_no_straggler(clean_run):
    # issue 10: S keeps what jitter costs the step (a slowest-of-4 on 2 oversubscribed cores),
    # so single steps may exceed 1.05; what must not happen is a culprit named for it (the
    # issue's bar for a real clean job: at most 5% of steps) or a typical step far from 1
    steps = analyzed(clean_run)
    assert len(steps) >= 18, clean_run.explain()
    named = [(s["step"], s["S"], s["cause"], s["worst"], s.get("p")) for s in steps
             if s["cause"] != "none"]
    assert len(named) <= 0.05 * len(steps), f"steps naming a culprit in a clean run: {named}"
    assert statistics.median(s["S"] for s in steps) <= 1.05, [s["S"] for s in steps]
    # rank 0 printed one line per analysed step, in the documented key=value form
    lines = [l for l in clean_run.lines if " S=" in l]
    assert len(lines) >= len(steps)
    assert all(" cause=" in l and " ideal=" in l for l in lines)


def test_slow_rank_is_named_with_cause_worker(straggler_run):
    steps = analyzed(straggler_run)
    assert len(steps) >= 18, straggler_run.explain()
    named = [s for s in steps if s["cause"] == "worker" and s["worst"] == "rank:2"]
    share = len(named) / len(steps)
    assert share >= 0.9, [(s["step"], s["cause"], s["worst"], s["S"]) for s in steps]


def test_slowdown_matches_measured(clean_run, straggler_run):
    # measured: median step time with the injection over median step time without
    skip = 4  # warm-up and the window's first steps
    measured = (statistics.median(straggler_run.step_times()[skip:])
                / statistics.median(clean_run.step_times()[skip:]))
    s = statistics.median(x["S"] for x in analyzed(straggler_run))
    assert abs(s / measured - 1) <= 0.05, f"S={s:.3f} measured={measured:.3f}"


def test_replay_reproduces_step_times(clean_run, straggler_run):
    # fidelity: the replay with the recorded durations (and launch delays) gives the measured
    # step time; and without the launch delays (the paper's simulator, which models none) it
    # still does to within 3%, i.e. the probe leaves little of the step untraced
    for run in (clean_run, straggler_run):
        steps = analyzed(run)
        errs = [s["fidelity_err"] for s in steps]
        assert statistics.median(errs) <= 0.02, errs
        gaps = [abs(s["nodelay_s"] - s["time_s"]) / s["time_s"] for s in steps]
        assert statistics.median(gaps) <= 0.03, gaps


def _report(run: harness.JobResult) -> dict:
    return json.loads((run.out_dir / "report" / "report.json").read_text())


def test_clean_run_raises_no_alarm(clean_run):
    # issue 10: with nothing injected, no alarm (report.json's list is there, and empty) and no
    # alarm line in rank 0's log
    assert _report(clean_run)["alarms"] == []
    assert not [l for l in clean_run.lines if "straggler_probe alarm" in l]
    alarm_records = [s for s in clean_run.steps if s.get("event") == "alarm"]
    assert not alarm_records, alarm_records


def test_slow_rank_raises_its_alarm(straggler_run):
    # issue 10: one rank 30% slower has its alarm raised, as rank:2 with cause worker. How soon:
    # a 10% slow rank must raise within 10 steps, so a 30% one no later than that after the
    # first analysed step.
    alarms = _report(straggler_run)["alarms"]
    mine = [a for a in alarms if a["target"] == "rank:2" and a["cause"] == "worker"]
    assert mine, alarms
    first = min(s["step"] for s in analyzed(straggler_run))
    assert mine[0]["raised_step"] <= first + 10, (first, mine)
    assert not [a for a in alarms if a["target"] not in ("rank:2", "")], alarms
    raised = [l for l in straggler_run.lines if "straggler_probe alarm raised: rank:2 cause=worker" in l]
    assert len(raised) == 1, [l for l in straggler_run.lines if "alarm" in l]
    record = [s for s in straggler_run.steps if s.get("event") == "alarm" and s["target"] == "rank:2"]
    assert record and record[0]["state"] == "raised", record
