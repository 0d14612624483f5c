"""The ledger (issue 25) on real 4-rank DDP jobs over gloo: the share of GPU time charged to a
planted slow rank against what the job itself measured, its own step times with and without the
slow rank (conftest's straggler_run and clean_run: the same job, rank 2's compute 30% slower);
the ledger's sums, report.json's `lost`, rank 0's last line and exclude_hosts.txt."""
from __future__ import annotations

import json
import socket
import statistics

import harness

from conftest import analyzed

SKIP = 4  # warm-up and the window's first steps, as test_live_dp
# The bar: the named share within 3% of what the job measured, as points of GPU time
# (the shares are fractions of it). Relative to the measured share (~0.21) it would be 0.006,
# less than the measurement's own scatter on the shared 2-core machine: five pairs of these
# jobs measured 0.197-0.221 while the ledger charged 0.209-0.220, rank 2 named on 20 of 20
# steps each time (bench/ledger/ledger_share.py, bench/README.md "The ledger").
TOLERANCE = 0.03
GPUS = 4


def _report(run: harness.JobResult) -> dict:
    return json.loads((run.out_dir / "report" / "report.json").read_text())


def _steps(run: harness.JobResult) -> list[dict]:
    return [s for s in analyzed(run) if s["step"] >= SKIP]


def _named_share(run: harness.JobResult, target: str | None) -> float:
    """The ledger's share of GPU time charged to `target` (None: to any culprit) over the
    analysed steps after the warm-up."""
    steps = _steps(run)
    charged = sum(s["lost"]["fix_gain_gpu_s"] for s in steps
                  if target is None or s["lost"]["target"] == target)
    return charged / sum(s["time_s"] * s["lost"]["gpus"] for s in steps)


def _measured_share(slow: harness.JobResult, clean: harness.JobResult) -> float:
    """What the slow rank cost the job by its own clock (workload.py's step times), as a share of
    its GPU time: the step time the clean job did not need (medians: a descheduled gloo thread on
    the shared 2-core machine adds tens of ms to single steps of either job) over the slow job's
    mean step, which is the ledger's denominator too (its GPU time)."""
    slow_t = slow.step_times()[SKIP:]
    clean_t = clean.step_times()[SKIP:]
    return (statistics.median(slow_t) - statistics.median(clean_t)) / statistics.mean(slow_t)


def test_the_slow_ranks_share_is_what_the_job_measured(clean_run, straggler_run):
    measured = _measured_share(straggler_run, clean_run)
    named = _named_share(straggler_run, "rank:2")
    assert len(_steps(straggler_run)) >= 16, straggler_run.explain()
    print(f"ledger: rank 2 charged {named:.4f} of GPU time, the job measured {measured:.4f} "
          f"(ratio {named / measured:.3f})")
    assert abs(named - measured) <= TOLERANCE, f"named {named:.4f} measured {measured:.4f}"


def test_a_clean_job_charges_no_culprit(clean_run):
    # without the fault the job measured nothing to charge (the noise model names someone on
    # about alpha of a clean job's steps, and charges it what fixing it would give back then)
    assert len(_steps(clean_run)) >= 16, clean_run.explain()
    print(f"ledger: a clean job charged {_named_share(clean_run, None):.4f} of GPU time to culprits")
    assert _named_share(clean_run, None) <= TOLERANCE, [s["lost"] for s in _steps(clean_run)]
    assert (clean_run.out_dir / "report" / "exclude_hosts.txt").read_text() == ""


def test_every_record_and_the_report_add_up(straggler_run):
    steps = analyzed(straggler_run)
    for s in steps:
        lost = s["lost"]
        assert lost["gpus"] == GPUS
        assert abs(lost["gpu_s"] - max(0.0, s["time_s"] - s["ideal_s"]) * GPUS) <= 1e-9, s
        assert 0 <= lost["fix_gain_gpu_s"] <= lost["gpu_s"] + 1e-12, s
    section = _report(straggler_run)["lost"]
    total = sum(s["lost"]["gpu_s"] for s in steps)
    assert section["analyzed_steps"] == len(steps)
    assert abs(section["lost_gpu_seconds"] - total) <= 0.01 * total, (section, total)
    assert abs(sum(section["by_cause"].values()) - section["lost_gpu_seconds"]) <= 1e-9 * total
    assert section["top_ranks"][0]["rank"] == 2, section["top_ranks"]
    assert section["top_ranks"][0]["host"] == socket.gethostname()


def test_rank_zeros_last_line_and_the_host_to_drain(straggler_run):
    last = straggler_run.lines[-1]
    assert last.startswith("straggler_probe lost "), straggler_run.lines[-3:]
    assert f"worker on {socket.gethostname()}" in last and "(rank 2)" in last, last
    hosts = (straggler_run.out_dir / "report" / "exclude_hosts.txt").read_text()
    assert hosts == socket.gethostname() + "\n"
