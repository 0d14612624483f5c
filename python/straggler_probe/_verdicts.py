"""Rank 0's per-step verdicts as they are written, for code in the same process that wants them
(the framework callbacks in integrations/): the analysis thread appends one JSON line per step
to <out_dir>/straggler_probe_steps.jsonl; a reader follows that file from where it last stopped,
so each call costs one stat and reads only what is new. Other ranks have no verdicts.
"""
from __future__ import annotations

import json
import os
from typing import Any

JSONL_NAME = "straggler_probe_steps.jsonl"  # online/include/straggler_probe/online/config.h

# Causes as numbers, for loggers that take scalars only (TensorBoard); docs/PYTHON.md lists them.
CAUSE_CODES = {"none": 0, "worker": 1, "stage-imbalance": 2, "seq-imbalance": 3, "gc": 4,
               "comm": 5, "cpu-delay": 6, "hang": 7}
# Files written before "host" came to mean the machine only name cpu-delay "host-delay"; read for
# one release, so that a reader started on an older run's directory still gets code 6.
OLD_CAUSE_NAMES = {"host-delay": "cpu-delay"}


class VerdictReader:
    def __init__(self, out_dir: str):
        self.path = os.path.join(out_dir, JSONL_NAME)
        self._offset = 0
        self._partial = b""

    def new(self) -> list[dict[str, Any]]:
        """The verdicts written since the last call (analysed steps and skipped ones)."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        if size < self._offset:  # a new run replaced the file
            self._offset, self._partial = 0, b""
        if size == self._offset:
            return []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            chunk = f.read(size - self._offset)
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # an unfinished last line waits for the rest
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # not ours to judge: the writer is the analysis
        return out


def scalars(verdict: dict[str, Any], prefix: str = "straggler/") -> dict[str, float]:
    """One analysed step as logger scalars: S, the worst S_w, the cause's code, the worst rank
    (or stage), and whether the step was flagged. Empty for a step that was not analysed."""
    if not verdict.get("analyzed"):
        return {}
    cause = str(verdict.get("cause", "none"))
    cause = OLD_CAUSE_NAMES.get(cause, cause)
    out = {f"{prefix}S": float(verdict.get("S", 0.0)),
           f"{prefix}S_w": float(verdict.get("worst_S", 0.0)),
           f"{prefix}cause": float(CAUSE_CODES.get(cause, -1)),
           f"{prefix}flagged": 0.0 if cause == "none" else 1.0}
    where, _, number = str(verdict.get("worst", "")).partition(":")
    if number.isdigit() and where in ("rank", "stage"):
        out[f"{prefix}worst_{where}"] = float(number)
    return out
