"""Prints the short human summary of a straggler_probe report directory (what rank 0 wrote at
the end of the run, or while it ran if it was cut short): python examples/show_report.py DIR"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(out: Path) -> int:
    report = out / "report.json"
    if not report.exists():
        print(f"no report in {out} (did rank 0 finish?)", file=sys.stderr)
        return 1
    r = json.loads(report.read_text())
    run = r.get("run", {})
    if run.get("complete") is False:
        print(f"partial report (steps {run.get('first_step')}-{run.get('last_step')}): written while "
              "the job ran and never replaced by a final one, so the run was cut short (a signal or "
              "a crash) if it is over")
    health = r.get("health", {})
    for problem in health.get("problems", []):
        print(f"the probe saw nothing useful: {problem}")
    n = r.get("steps_analyzed", 0)
    print(f"report: {n} steps analysed, mean S={r.get('mean_S', 0):.2f} "
          f"(mean step {r.get('mean_time_s', 0) * 1e3:.0f} ms, ideal "
          f"{r.get('mean_ideal_s', 0) * 1e3:.0f} ms)")
    causes = sorted(r.get("causes", {}).items(), key=lambda kv: -kv[1])
    print("causes: " + ", ".join(f"{c}={k}" for c, k in causes))
    worst = sorted(r.get("worst", {}).items(), key=lambda kv: -kv[1])
    if worst:
        print("named most often: " + ", ".join(f"{w} ({k} steps)" for w, k in worst[:3]))
    lost = r.get("lost")  # the ledger (online/README.md, "The ledger")
    if lost and lost.get("gpu_seconds"):
        whole = lost["gpu_seconds"]
        print(f"lost {100 * lost['lost_share']:.1f}% of GPU time ({lost['lost_gpu_seconds'] / 3600:.2f} of "
              f"{whole / 3600:.2f} GPU-h); fixing the named culprits gives back "
              f"{100 * lost['fixable_gpu_seconds'] / whole:.1f}%")
        for t in lost.get("top_ranks", [])[:3]:
            where = f" on {t['host']}" + (f" gpu {t['gpu']}" if t.get("gpu") is not None else "") if t.get("host") else ""
            print(f"  rank {t['rank']}{where}: {100 * t['share']:.1f}%")
    drain = out / "exclude_hosts.txt"
    if drain.exists() and drain.read_text().strip():
        print("hosts to drain (open worker alarms): " + " ".join(drain.read_text().split()))
    grid = r.get("mean_worker_S", {})
    for stage, row in enumerate(grid.get("rows_by_stage", [])):
        cells = " ".join(f"dp{d}={s:.2f}" for d, s in enumerate(row))
        print(f"mean S_w stage {stage}: {cells}")
    files = [p.name for p in sorted(out.iterdir()) if p.is_file()]
    print(f"files in {out}/: " + " ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "sp-out-demo")))
