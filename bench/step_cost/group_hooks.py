"""What the process-group layer's hooks cost a gloo DDP step: C++ hooks, Python hooks, or none,
in one process, blocks interleaved.

Separate processes on this VM differ in speed by more than the cost being measured (the same
never-probed step ran 53 and 72 us per collective in two processes a minute apart), so this
bench keeps one process and switches the layer's hooks on the probe's own group between blocks:

  cpp     the C++ GroupObserver attached (straggler_probe._c10d, python/src/c10d/group_observer.h),
          the default where _c10d is built against torch 2.15;
  python  the C++ observer detached and the Python pre/post hooks of hooks/process_group.py
          registered instead (the fallback, and what the probe did before);
  none    neither: the probe's other hooks (modules, backward, optimizer, step) still run, so
          cpp - none is the C++ hooks' own cost per step and python - none the Python hooks'.

The model is bench/step_cost's launch-bound DDP job (a GPT of 8 blocks of width 64 under
DistributedDataParallel over gloo, world size 1, 14 bucket all-reduces a step, one thread).
`--blocks` rounds of the three modes in rotating order, `--steps` steps each after 5 dropped;
a block's figure is its median step (wall and the training thread's CPU time); per mode the
median of its blocks, and the per-round differences against `none` with a 95% t interval.

    flock /tmp/sp-heavy.lock .venv/bin/python bench/step_cost/group_hooks.py [--blocks 12]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_cost import build_job, timed_step  # noqa: E402

T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13}
MODES = ("cpp", "python", "none")


class LayerSwitch:
    """Puts the process-group layer of the running probe into one of MODES."""

    def __init__(self, hooks, pg):
        from straggler_probe.hooks.process_group import HOOK_ID
        self.hooks, self.pg, self.hook_id = hooks, pg, HOOK_ID
        entry = hooks._seen[id(pg)]
        self.observer = entry[3]
        if self.observer is None:
            raise SystemExit("the probe's group has no C++ observer (no _c10d with group hooks)")
        self.key = id(pg)
        self.mode = "cpp"

    def set(self, mode: str) -> None:
        if mode == self.mode:
            return
        if self.mode == "cpp":
            self.observer.detach()
        elif self.mode == "python":
            self.pg.unregister_pre_hook(self.hook_id)
            self.pg.unregister_post_hook(self.hook_id)
        if mode == "cpp":
            self.observer.attach(self.pg)
        elif mode == "python":
            key, hooks = self.key, self.hooks
            self.pg.register_pre_hook(self.hook_id, lambda args: hooks._pre_hook(key, args))
            self.pg.register_post_hook(self.hook_id, lambda args: hooks._post_hook(args))
        self.mode = mode


def interval(diffs: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(diffs)
    if len(diffs) < 2:
        return mean, math.nan
    half = T95.get(len(diffs) - 1, 2.0) * statistics.stdev(diffs) / math.sqrt(len(diffs))
    return mean, half


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=12, help="rounds of the three modes")
    ap.add_argument("--steps", type=int, default=40, help="timed steps per block")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import warnings
    # `none` blocks hide the group's ops from the probe on purpose: its sight check says so once
    warnings.filterwarnings("ignore", message=".*went by without the probe seeing them")
    import straggler_probe
    straggler_probe.init(transport="none", log_lines=False)
    model, ddp, opt, data = build_job("ddp", seed=0)
    it = iter(data)
    for _ in range(10):  # the group is adopted at a step boundary
        it, _, _ = timed_step(model, opt, data, it)
    import torch.distributed as dist
    switch = LayerSwitch(straggler_probe._probe.process_groups, dist.group.WORLD)
    per_mode: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
    for b in range(args.blocks):
        order = MODES[b % 3:] + MODES[:b % 3]
        for mode in order:
            switch.set(mode)
            wall, cpu = [], []
            for k in range(5 + args.steps):
                it, dt_wall, dt_cpu = timed_step(model, opt, data, it)
                if k >= 5:
                    wall.append(dt_wall)
                    cpu.append(dt_cpu)
            per_mode[mode].append((statistics.median(wall) / 1e3, statistics.median(cpu) / 1e3))
    switch.set("cpp")
    stats = straggler_probe.stats()["process_groups"]
    straggler_probe.shutdown()
    out = {"blocks": args.blocks, "steps": args.steps, "process_groups": stats, "modes": {}}
    print(f"| mode | step wall (us, median of blocks) | thread CPU (us) | - none, wall (95% t) "
          f"| - none, CPU (95% t) |")
    print("| --- | ---: | ---: | --- | --- |")
    for mode in MODES:
        walls = [w for w, _ in per_mode[mode]]
        cpus = [c for _, c in per_mode[mode]]
        dw = interval([w - n for (w, _), (n, _) in zip(per_mode[mode], per_mode["none"])])
        dc = interval([c - n for (_, c), (_, n) in zip(per_mode[mode], per_mode["none"])])
        out["modes"][mode] = {"wall_us": statistics.median(walls), "cpu_us": statistics.median(cpus),
                              "minus_none_wall_us": dw, "minus_none_cpu_us": dc}
        print(f"| {mode} | {statistics.median(walls):.0f} | {statistics.median(cpus):.0f} | "
              f"{dw[0]:+.0f} +-{dw[1]:.0f} | {dc[0]:+.0f} +-{dc[1]:.0f} |")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; seen {stats['seen']}, "
          f"recorded {stats['recorded']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
