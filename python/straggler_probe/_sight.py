"""Whether the probe can see anything useful in this job, said once on rank 0 within the first
steps after the warm-up: otherwise a job whose collectives go by unseen, whose ranks never met
in a process group, or whose every step rank 0 skips would print nothing but skipped lines or
zeros, and nobody would know why.

Checked at each step boundary from warmup_steps + 2 on, until rank 0 has analysed a step with
collectives seen (all is well: silence) or it finds a problem (one warning naming each problem
found, then silence), or warmup_steps + 20 steps have gone by without any verdict (one warning).
Steps that never end (no optimizer step, no straggler_probe.step()) are the Recorder's check.
"""
from __future__ import annotations

import warnings
from typing import Any

from ._verdicts import VerdictReader

FIRST_LOOK = 2      # steps after the warm-up: the analysis has had a few steps by then
LAST_LOOK = 20      # ... and by this many it has had every chance
SKIPPED_ENOUGH = 3  # that many skipped steps with none analysed is no accident


class Sight:
    def __init__(self, probe: Any):
        self.probe = probe
        self.done = False
        self.problems: list[str] = []
        self._reader = VerdictReader(probe.cfg.out_dir) if probe.cfg.out_dir else None
        self._analysed = 0
        self._skipped: list[dict] = []

    def at_step(self, step: int) -> None:
        """step: the step just marked."""
        probe = self.probe
        if self.done or probe.rank != 0 or probe.cfg.transport == "none":
            return
        first = probe.cfg.warmup_steps + FIRST_LOOK
        if step < first:
            return
        problems = self._problems()
        if problems:
            self._warn(problems, step)
        elif self._analysed:
            self.done = True
        elif step >= probe.cfg.warmup_steps + LAST_LOOK:
            self._warn([f"rank 0 has analysed no step yet (transport: {probe.transport})"], step)

    def _problems(self) -> list[str]:
        probe = self.probe
        out = []
        if probe.world > 1 and not probe.identity.live:
            out.append("torch.distributed is not initialised in this process, so the ranks' "
                       "steps never reach rank 0")
        elif probe.world > 1 and probe.collectives_seen() == 0:
            out.append("no collective or send/receive has been seen on rank 0 (communication "
                       "outside torch.distributed, or collectives turned off): nothing ties "
                       "the ranks' steps together, so no rank can be found to hold the others up")
        if self._reader is not None:
            for verdict in self._reader.new():
                if verdict.get("analyzed"):
                    self._analysed += 1
                else:
                    self._skipped.append(verdict)
        if not self._analysed and len(self._skipped) >= SKIPPED_ENOUGH:
            reason = str(self._skipped[0].get("skip_reason", "?"))
            out.append(f"rank 0 skipped all {len(self._skipped)} steps it was given so far "
                       f"(first: step {self._skipped[0].get('step')}: {reason})")
        return out

    def _warn(self, problems: list[str], step: int) -> None:
        self.done = True
        self.problems = problems
        warnings.warn("straggler_probe: by step " + str(step) + " the probe sees nothing useful "
                      "in this job: " + "; ".join(problems) + ". The per-step lines and the "
                      "report cannot name stragglers until that changes.",
                      RuntimeWarning, stacklevel=3)
