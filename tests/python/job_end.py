"""How a job ends, for workload.py: at a chosen step, a rank is killed (SIGKILL), or sends SIGTERM
to itself or to its launcher (torchrun), as a dying rank, a scheduler's cancel or a preemption
would. Before that, each rank writes <out>/rank<r>.signals.json: its SIGTERM disposition as
Python sees it (signal.getsignal) and as the kernel does (SigCgt in /proc/self/status) before
straggler_probe.init(), after it, and at the end, so a test can tell that the probe took over no
signal handling.

Spec keys: end_at_step (the step), end_rank (-1: every rank), end ("sigkill", "sigterm-self",
"sigterm-launcher"), own_sigterm_handler (the job installs its own handler, which exits 143).
"""
from __future__ import annotations

import json
import os
import signal
import sys


def _disposition() -> dict:
    handler = signal.getsignal(signal.SIGTERM)
    if handler is signal.SIG_DFL:
        name = "SIG_DFL"
    elif handler is signal.SIG_IGN:
        name = "SIG_IGN"
    else:
        name = getattr(handler, "__qualname__", repr(handler))
    caught = None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    caught = bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        pass
    return {"python": name, "kernel_caught": caught}


class JobEnd:
    def __init__(self, spec: dict, rank: int):
        self.spec = spec
        self.rank = rank
        self.end_step = spec.get("end_at_step", -1)
        self.seen: dict[str, dict] = {}
        if spec.get("own_sigterm_handler"):
            signal.signal(signal.SIGTERM, _job_sigterm_handler)
        self.seen["before_init"] = _disposition()

    def after_init(self) -> None:
        self.seen["after_init"] = _disposition()

    def at_step(self, step: int) -> None:
        if step != self.end_step or self.spec.get("end_rank", -1) not in (-1, self.rank):
            return
        self.seen["at_end"] = _disposition()
        with open(os.path.join(self.spec["out"], f"rank{self.rank}.signals.json"), "w") as f:
            json.dump(self.seen, f)
        end = self.spec["end"]
        if end == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif end == "sigterm-self":
            os.kill(os.getpid(), signal.SIGTERM)
        elif end == "sigterm-launcher":
            os.kill(os.getppid(), signal.SIGTERM)
        else:
            raise ValueError(f"job_end: unknown end {end!r}")


def _job_sigterm_handler(signum, frame):  # noqa: ANN001 - the job's own: a clean exit, code 143
    sys.exit(143)
