"""What every framework job shares: its spec, the planted straggler, and the result file.

A job is `python <framework>_job.py '<json spec>'`. The spec says how the probe is added
("import": `import straggler_probe; straggler_probe.init()` as the script's first lines;
"preload": nothing in the script, the launcher sets LD_PRELOAD; "callback": the framework
integration starts it; "off": no probe, for the overhead benchmark), the compute per micro-batch (a sleep in the forward and in the backward, as
a slow accelerator would take: four ranks share two cores in CI, and a sleep's length does not
depend on who else runs) and which rank is slower by how much.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/python: workload.SleepOp


def load_spec() -> dict:
    spec = json.loads(sys.argv[1])
    if spec.get("mode", "import") == "import":
        import straggler_probe
        straggler_probe.init(**spec.get("probe", {}))
    return spec


def compute_seconds(spec: dict, rank: int) -> tuple[float, float]:
    """(forward, backward) sleep of one micro-batch on this rank."""
    fwd_s = spec.get("fwd_ms", 30) / 1e3
    bwd_s = spec.get("bwd_ms", 60) / 1e3
    if rank == spec.get("slow_rank", -1):
        fwd_s *= spec["slow_factor"]
        bwd_s *= spec["slow_factor"]
    return fwd_s, bwd_s


def make_block(width: int = 16) -> Any:
    """Linear -> sleep (forward and backward) -> Linear; set .fwd_s / .bwd_s per rank."""
    from workload import TimedNet
    return TimedNet(width)


def regression_data(n: int, width: int = 16) -> Any:
    """n (input, target) pairs of random vectors, the same on every rank and run (seeded)."""
    import torch
    g = torch.Generator().manual_seed(0)
    return torch.utils.data.TensorDataset(torch.randn(n, width, generator=g),
                                          torch.randn(n, width, generator=g))


class StepClock:
    """Wall time of each optimizer step, as the job's own loop sees it."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._last = time.perf_counter()

    def tick(self) -> None:
        now = time.perf_counter()
        self.times.append(now - self._last)
        self._last = now
        TICKS[0] += 1
        if TICKS[0] == CPU_MARK_STEP:
            CPU_MARK.update(threads_cpu_s())


# Each thread's CPU at the end of step CPU_MARK_STEP, so that bench/frameworks can take the
# per-step cost apart from the start-up (imports, init(), hooks installed, the first steps).
CPU_MARK_STEP = 5
CPU_MARK: dict[str, float] = {}
TICKS = [0]  # steps ticked by any StepClock of the process


def threads_cpu_s() -> dict[str, float]:
    """CPU seconds so far per thread name of this process (/proc/self/task/<tid>/schedstat, the
    time on a CPU), summed over threads of one name: what the probe's own threads (sp_*) cost next
    to training's, for bench/frameworks. Empty where /proc has no schedstat."""
    out: dict[str, float] = {}
    try:
        for task in os.scandir("/proc/self/task"):
            try:
                with open(os.path.join(task.path, "comm")) as f:
                    name = f.read().strip()
                with open(os.path.join(task.path, "schedstat")) as f:
                    ns = int(f.read().split()[0])
            except OSError:
                continue  # the thread ended meanwhile
            out[name] = out.get(name, 0.0) + ns / 1e9
    except OSError:
        return {}
    return out


def write_result(spec: dict, rank: int, step_times: list[float], **extra: Any) -> None:
    result: dict[str, Any] = {"rank": rank, "step_times": step_times, **extra}
    result["threads_cpu_s"] = threads_cpu_s()
    result["threads_cpu_s_at_mark"] = dict(CPU_MARK)
    result["cpu_mark_step"] = CPU_MARK_STEP
    result["steps_ticked"] = TICKS[0]
    if "straggler_probe" in sys.modules:
        sp = sys.modules["straggler_probe"]
        result["stats"] = sp.stats()
        sp.shutdown()  # the report before the framework tears the process group down
    with open(os.path.join(spec["out"], f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
