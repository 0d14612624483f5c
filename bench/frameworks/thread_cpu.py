#!/usr/bin/env python3
"""Where a framework job's CPU goes per step, by thread, with the probe and without.

Every framework job (tests/python/frameworks/fw_job.py) writes each thread's CPU time (from
/proc/self/task/<tid>/schedstat) at the end of its step `cpu_mark_step` and at its end. The
difference over the steps between is the steady state: start-up (imports, init(), the hooks'
install, the first steps) left out. Threads are grouped by name: the probe's own (sp_*, sp-*),
the training thread (`python`: the probe's hooks run there), gloo's, and the rest.

On a machine whose cores are shared by the ranks (this one: 4 ranks, 2 cores) every CPU second
of the probe's threads is taken from training, so the added CPU per step is what the wall time
pays; where a rank has a core to itself and idle cores beside it, the background threads' share
runs beside training and only the training thread's share is paid.

    bench/frameworks/thread_cpu.py RUN_DIR [RUN_DIR ...]   (folders of run.py's runs)
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

GROUPS = ("probe threads", "training thread", "gloo threads", "other threads")


def group_of(thread: str) -> str:
    if thread.startswith(("sp_", "sp-")):
        return "probe threads"
    if thread == "python":
        return "training thread"
    if "gloo" in thread:
        return "gloo threads"
    return "other threads"


def per_step_ms(rank_file: Path) -> tuple[dict[str, float], float]:
    """CPU ms per step per group between the mark and the end, and the median step (ms)."""
    d = json.loads(rank_file.read_text())
    end, mark = d.get("threads_cpu_s", {}), d.get("threads_cpu_s_at_mark", {})
    if not end or not mark:
        raise SystemExit(f"thread_cpu: {rank_file} has no thread CPU marks (an older job script?)")
    times = d["step_times"]
    # steps between the two readings (jobs before steps_ticked kept every tick in step_times)
    steps = d.get("steps_ticked", len(times)) - d["cpu_mark_step"]
    out = {g: 0.0 for g in GROUPS}
    for name, s in end.items():
        out[group_of(name)] += s - mark.get(name, 0.0)
    return {g: v * 1e3 / steps for g, v in out.items()}, statistics.median(times[5:]) * 1e3


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    print("| run | rank | median step (ms) | " + " | ".join(f"{g} (ms/step)" for g in GROUPS) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in GROUPS) + " |")
    for run in sys.argv[1:]:
        for f in sorted(Path(run).glob("rank*.json")):
            cpu, step = per_step_ms(f)
            print(f"| {Path(run).name} | {f.stem[4:]} | {step:.1f} | "
                  + " | ".join(f"{cpu[g]:.1f}" for g in GROUPS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
