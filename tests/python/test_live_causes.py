"""4-rank jobs with one planted cause each: GC pauses, sequence-length imbalance, a heavier last
pipeline stage. Each must be named for what it is."""
from __future__ import annotations

import harness
from conftest import DP_SPEC, analyzed


def _run(spec: dict, tmp_path) -> harness.JobResult:
    result = harness.run_job(spec, tmp_path)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    return result


def test_gc_pauses_on_one_rank(tmp_path):
    # rank 1 collects every 4th step, inside its forward, for 60 ms (its collector is slow)
    spec = dict(DP_SPEC, gc_rank=1, gc_every=4, gc_pause_ms=60)
    steps = analyzed(_run(spec, tmp_path))
    gc_steps = [s for s in steps if s["step"] % 4 == 3]
    assert len(gc_steps) >= 4, steps
    wrong = [(s["step"], s["cause"], s["worst"]) for s in gc_steps
             if s["cause"] != "gc" or s["worst"] != "rank:1"]
    assert not wrong, f"GC steps not attributed to gc on rank 1: {wrong}"
    others = [s for s in steps if s["step"] % 4 != 3]
    assert sum(s["cause"] == "gc" for s in others) <= 1, [(s["step"], s["cause"]) for s in others]


def test_long_tailed_sequence_lengths(tmp_path):
    # 4 micro-batches per step, each with 4 long-tailed random lengths; compute ~ sum(len^2);
    # the lengths reach the probe through the attention mask passed to forward (seq_lens=auto)
    spec = dict(DP_SPEC, seq_imbalance=True, microbatches=4, max_len=1024,
                per_token_sq_us=0.02, steps=20)
    steps = analyzed(_run(spec, tmp_path))
    straggling = [s for s in steps if s["S"] >= 1.05]
    assert len(straggling) >= len(steps) // 2, [(s["step"], s["S"]) for s in steps]
    seq = [s for s in straggling if s["cause"] == "seq-imbalance"]
    assert len(seq) >= 0.8 * len(straggling), [(s["step"], s["cause"], s["seq_corr"])
                                                 for s in straggling]


def test_heavier_last_pipeline_stage(tmp_path):
    # 2 stages x 2 dp ranks, GPipe with 4 micro-batches; the last stage does 2x the work
    spec = {"pipeline": 2, "fwd_ms": 15, "bwd_ms": 30, "last_stage_factor": 2.0,
            "microbatches": 4, "steps": 16}
    steps = analyzed(_run(spec, tmp_path))
    assert len(steps) >= 10, steps
    hits = [s for s in steps if s["cause"] == "stage-imbalance" and s["worst"] == "stage:1"
            and s["M_S"] >= 0.5]
    assert len(hits) >= 0.9 * len(steps), [(s["step"], s["cause"], s["worst"], s["M_S"])
                                            for s in steps]
