"""timeline_ranks reaches rank 0's report from a real job (issue 26): a 4-rank gloo job with one
slow rank and STRAGGLER_PROBE_TIMELINE_RANKS=2 draws rank 0 and the named slow rank only, and
timeline.json says that 2 of the 4 ranks were left out and how to draw them all. (Which ranks a
large job draws under the byte budget: tests/online/output/timeline_ranks_test.cpp.)"""
import json

import harness

SPEC = {"steps": 16, "fwd_ms": 10, "bwd_ms": 20, "slow_rank": 2, "slow_factor": 1.5}


def test_timeline_ranks_caps_the_drawn_ranks_and_says_so(tmp_path):
    result = harness.run_job(SPEC, tmp_path, env={"STRAGGLER_PROBE_TIMELINE_RANKS": "2"})
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    timeline = json.loads((tmp_path / "report" / "timeline.json").read_text())
    drawn = {e["pid"] for e in timeline["traceEvents"] if e["ph"] == "X" and e["pid"] < 4}
    named = {s["worst"] for s in result.steps if s.get("event") == "step" and s.get("worst", "").startswith("rank:")}
    note = timeline["otherData"]["straggler_probe_timeline"]
    assert note["ranks"] == 4 and note["ranks_drawn"] == 2 and note["ranks_left_out"] == 2, note
    assert "STRAGGLER_PROBE_TIMELINE_RANKS=4" in note["note"] and "timeline_ranks=2" in note["note"]
    assert 0 in drawn and len(drawn) == 2, drawn
    if "rank:2" in named:  # the slow rank named in the run: it is the other rank drawn
        assert drawn == {0, 2}, (drawn, named)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["config"]["timeline_ranks"] == 2
