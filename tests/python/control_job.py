"""/control in a real job (test_control_ranks.py): every rank notes how many events its runtime
has recorded at the start of each step, and rank 0 POSTs pause and resume to its own metrics
server (with the token) at set steps, from the training thread, as an operator's script would
from outside at that moment."""
from __future__ import annotations

import json
import urllib.request

from straggler_probe import _native


class ControlSteps:
    def __init__(self, control: dict, rank: int):
        self.control = control
        self.rank = rank
        self.counts: list[int] = []  # counts[s]: events recorded before step s started
        self.pause_state: dict | None = None

    def at_step(self, step: int) -> None:
        self.counts.append(int(_native.core.stats().get("events_recorded", 0)))
        self.pause_state = _native.core.pause_state()  # as of the latest step
        if self.rank != 0:
            return
        if step == self.control["pause_at"]:
            self.post("pause")
        elif step == self.control["resume_at"]:
            self.post("resume")

    def post(self, action: str) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.control['port']}/control",
            data=json.dumps({"action": action}).encode(), method="POST",
            headers={"Authorization": f"Bearer {self.control['token']}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 202, reply.status
