"""How jobs really end: a rank killed with SIGKILL (torchrun then ends the others with SIGTERM), a
SIGTERM to the whole job (a scheduler's cancel, a preemption), and a job with its own SIGTERM
handler. Rank 0 keeps a report covering all but the last few steps, replaced whole as it goes
(never half-written) and saying that the run was cut short; the probe installs no signal handler,
so every process ends exactly as it would without the probe (exit status, handlers)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import harness
from conftest import DP_SPEC

END_STEP = 30          # the step at which the job is ended
WARMUP = 2             # STRAGGLER_PROBE_WARMUP_STEPS' default: steps 0-1 are not analysed
# "The last few": rank 0 rewrites the report every 0.5 s at most (a step here is ~0.25 s) and
# its analysis trails the ranks by a step or two.
MAX_STEPS_LOST = 8


def torchrun(spec: dict, out_dir: Path, env: dict | None = None,
             timeout: float = 240.0) -> subprocess.CompletedProcess:
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = dict(spec, out=str(out_dir))
    spec.setdefault("probe", {}).setdefault("out_dir", str(out_dir / "report"))
    penv = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    path = [str(harness.HERE)] + ([harness.package_path()] if harness.package_path() else [])
    penv["PYTHONPATH"] = os.pathsep.join(path + [penv.get("PYTHONPATH", "")])
    penv.update(env or {})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4",
           str(harness.HERE / "workload.py"), json.dumps(spec)]
    return subprocess.run(cmd, env=penv, cwd=str(out_dir), capture_output=True, text=True,
                          timeout=timeout)


def worker_exit_codes(torchrun_output: str) -> list[int]:
    """The workers' exit codes from torchrun's failure summary, sorted."""
    return sorted(int(c) for c in re.findall(r"^\s+exitcode\s+:\s*(-?\d+) \(pid", torchrun_output,
                                             flags=re.MULTILINE))


def check_partial_report(out: Path, end_step: int, explain: str) -> dict:
    """The report of a job cut short at end_step: every file whole, partial, and covering the
    steps up to the last few."""
    report = json.loads((out / "report.json").read_text())  # parses: never half-written
    run = report["run"]
    assert run["complete"] is False, run
    assert "cut short" in run["note"]
    assert end_step - MAX_STEPS_LOST <= run["last_step"] < end_step, (run, explain)
    assert run["first_step"] == WARMUP
    assert report["steps_analyzed"] >= end_step - WARMUP - MAX_STEPS_LOST, explain
    assert report["health"]["useful"] is True, report["health"]
    timeline = json.loads((out / "timeline.json").read_text())
    assert timeline["otherData"]["straggler_probe_run"]["complete"] is False
    assert any(e["ph"] == "X" for e in timeline["traceEvents"])
    svg = (out / "heatmap.svg").read_text()
    assert svg.rstrip().endswith("</svg>") and "partial: steps" in svg
    for line in (out / "straggler_probe_steps.jsonl").read_text().splitlines():
        json.loads(line)  # every record whole
    return report


def check_signals_untouched(out_dir: Path, ranks: list[int], handler: str = "SIG_DFL") -> None:
    for rank in ranks:
        seen = json.loads((out_dir / f"rank{rank}.signals.json").read_text())
        for when in ("before_init", "after_init", "at_end"):
            assert seen[when]["python"] == handler, (rank, seen)
            # SIG_DFL: no handler at the kernel level either (the probe installed none)
            assert seen[when]["kernel_caught"] is (handler != "SIG_DFL"), (rank, seen)


def test_sigkill_of_one_rank_under_torchrun_keeps_rank0s_report(tmp_path: Path) -> None:
    spec = dict(DP_SPEC, steps=200, end="sigkill", end_rank=2, end_at_step=END_STEP)
    proc = torchrun(spec, tmp_path / "probe")
    explain = proc.stdout[-3000:] + proc.stderr[-3000:]
    # the job ends as it does without the probe: torchrun fails, rank 2 killed, the others
    # ended by torchrun's SIGTERM
    baseline = torchrun(dict(spec, end_at_step=5), tmp_path / "baseline",
                        env={"STRAGGLER_PROBE_ENABLE": "0"})
    assert proc.returncode == baseline.returncode != 0, explain
    codes = worker_exit_codes(proc.stderr + proc.stdout)
    assert codes == worker_exit_codes(baseline.stderr + baseline.stdout) == [-15, -15, -15, -9], explain
    assert not (tmp_path / "baseline" / "report").exists()

    check_partial_report(tmp_path / "probe" / "report", END_STEP, explain)
    assert "straggler_probe report:" not in proc.stdout  # the final report never came
    check_signals_untouched(tmp_path / "probe", [2])


def test_sigterm_to_the_whole_job_under_torchrun_keeps_rank0s_report(tmp_path: Path) -> None:
    # rank 0 sends SIGTERM to torchrun, which forwards it to every worker (a cancel, a preemption)
    spec = dict(DP_SPEC, steps=200, end="sigterm-launcher", end_rank=0, end_at_step=END_STEP)
    proc = torchrun(spec, tmp_path)
    explain = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode != 0, explain
    check_partial_report(tmp_path / "report", END_STEP, explain)
    check_signals_untouched(tmp_path, [0])


def test_sigterm_to_every_rank_ends_each_as_without_the_probe(tmp_path: Path) -> None:
    spec = dict(DP_SPEC, steps=200, end="sigterm-self", end_rank=-1, end_at_step=END_STEP)
    result = harness.run_job(spec, tmp_path)
    assert result.returncodes == [-15] * 4, result.explain()  # killed by SIGTERM: SIG_DFL's end
    check_partial_report(tmp_path / "report", END_STEP, result.explain())
    check_signals_untouched(tmp_path, [0, 1, 2, 3])


def test_a_jobs_own_sigterm_handler_is_kept_and_its_clean_exit_writes_the_final_report(
        tmp_path: Path) -> None:
    spec = dict(DP_SPEC, steps=200, end="sigterm-self", end_rank=-1, end_at_step=END_STEP,
                own_sigterm_handler=True)
    result = harness.run_job(spec, tmp_path)
    assert result.returncodes == [143] * 4, result.explain()  # the job's handler's exit code
    check_signals_untouched(tmp_path, [0, 1, 2, 3], handler="_job_sigterm_handler")
    # the handler exits through sys.exit: atexit runs and rank 0 writes the final report
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["run"]["complete"] is True, report["run"]
    assert report["run"]["last_step"] == END_STEP - 1, report["run"]
    assert "straggler_probe report:" in result.stdout[0]
