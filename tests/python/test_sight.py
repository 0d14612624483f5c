"""A job where the probe can see nothing useful says so in one warning on rank 0, early."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import harness


def ours(err: str) -> list[str]:
    return [l for l in err.splitlines() if "straggler_probe" in l and "Warning" in l]


def test_no_collectives_seen_is_one_warning_on_rank_0(tmp_path):
    # DDP's buckets and every collective hidden from the probe (collectives=False): nothing ties
    # the ranks' steps together
    spec = {"fwd_ms": 20, "bwd_ms": 40, "steps": 12, "probe": {"collectives": False}}
    result = harness.run_job(spec, tmp_path)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    warned = [l for l in ours(result.stderr[0]) if "sees nothing useful" in l]
    assert len(warned) == 1, result.stderr[0]
    assert "no collective" in warned[0] and "by step 4" in warned[0], warned
    for err in result.stderr[1:]:
        assert not [l for l in ours(err) if "sees nothing useful" in l], err


def test_a_loop_without_steps_is_one_warning(tmp_path):
    script = textwrap.dedent("""
        import torch, straggler_probe as sp
        sp.init(out_dir=r"%s")
        model = torch.nn.Linear(4, 4)
        for _ in range(300):  # a hand-written update: no torch.optim optimizer steps
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
                    p.grad = None
        print("done")
    """ % tmp_path)
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr
    warned = [l for l in ours(proc.stderr) if "no step has ended" in l]
    assert len(warned) == 1 and "256 forwards" in warned[0], proc.stderr
