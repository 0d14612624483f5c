"""Rank 0's report of a clean 4-rank CPU job: written once, whole, by the pipeline (the analysis,
the clock offsets and the capture status in one report.json), final, and without GPU files when
GPU capture never ran."""
from __future__ import annotations

import json


def test_final_report_is_complete_and_says_once_that_gpu_capture_never_ran(clean_run):
    out = clean_run.out_dir / "report"
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["complete"] is True, report["run"]
    assert report["run"]["last_step"] == 23, report["run"]
    assert report["steps_analyzed"] >= 18
    assert "clock" in report  # the clock offsets, in the same (single) write
    gpu = report["capture"]["gpu"]
    assert gpu["state"] == "inactive" and gpu["reason"], gpu
    assert "gpu_top_kernels" not in report
    assert not list(out.glob("gpu_kernels_rank*.txt"))
    assert not list(out.glob(".*.tmp"))
    timeline = json.loads((out / "timeline.json").read_text())
    assert timeline["otherData"]["straggler_probe_run"]["complete"] is True
    # while the job ran (24 steps of ~0.25 s), the report was rewritten as it went
    assert clean_run.ranks[0]["stats"]["pipeline"]["reports_written"] >= 3, clean_run.ranks[0]["stats"]
