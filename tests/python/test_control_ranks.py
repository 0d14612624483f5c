"""Issue 25, must-show 4: POST /control pause and resume reach every rank of a real 4-rank gloo
job within two steps. Rank 0 POSTs (with the token) at the start of step PAUSE_AT and of
RESUME_AT (control_job.py); every rank notes its runtime's recorded-event count at the start of
each step, so a step that recorded nothing on a rank is one its recording was paused for. The
job's exit codes and loss are those of the same job without control."""
from __future__ import annotations

import harness

PAUSE_AT, RESUME_AT, STEPS = 6, 14, 22
SPEC = {"fwd_ms": 30, "bwd_ms": 60, "steps": STEPS}
TOKEN = "h5-control-token"


def quiet_steps(counts: list[int]) -> list[int]:
    """Steps during which the rank recorded no event (counts[s]: events before step s)."""
    return [s for s in range(len(counts) - 1) if counts[s + 1] == counts[s]]


def test_pause_and_resume_reach_every_rank_within_two_steps(tmp_path):
    port = harness.free_port()
    env = {"STRAGGLER_PROBE_METRICS_PORT": str(port), "STRAGGLER_PROBE_CONTROL_TOKEN": TOKEN}
    spec = dict(SPEC, control={"pause_at": PAUSE_AT, "resume_at": RESUME_AT, "port": port,
                               "token": TOKEN})
    result = harness.run_job(spec, tmp_path / "control", env=env)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    baseline = harness.run_job(SPEC, tmp_path / "baseline")
    assert baseline.returncodes == [0, 0, 0, 0], baseline.explain()
    assert [r["loss"] for r in result.ranks] == [r["loss"] for r in baseline.ranks]

    for r in result.ranks:
        quiet = quiet_steps(r["recorded_at_step_start"])
        assert quiet, (r["rank"], r["recorded_at_step_start"])
        first, last = quiet[0], quiet[-1]
        # Paused from a step boundary at most two steps after the POST, for one whole stretch,
        # and recording again at most two steps after the resume.
        assert PAUSE_AT < first <= PAUSE_AT + 2, (r["rank"], quiet)
        assert quiet == list(range(first, last + 1)), (r["rank"], quiet)
        assert RESUME_AT <= last <= RESUME_AT + 2, (r["rank"], quiet)
        print(f"rank {r['rank']}: paused from step {first} (POST at {PAUSE_AT}), "
              f"recording again from step {last + 1} (POST at {RESUME_AT})")
        pause = r["pause_state"]
        assert pause["pauses"] == 1 and pause["steps_paused"] == last - first + 1, pause
        assert not pause["paused"]

    log = "\n".join(result.lines)
    assert log.count("straggler_probe control: analysis paused") == 1, log
    assert log.count("straggler_probe control: analysis resumed") == 1, log
    assert 'reason="paused' in log, log
    # The steps every rank recorded are analysed as before, none as a straggler of the pause.
    analysed = [s for s in result.steps if s.get("status", "analyzed") == "analyzed" and "S" in s]
    assert any(s["step"] > RESUME_AT + 2 for s in analysed), result.explain()
