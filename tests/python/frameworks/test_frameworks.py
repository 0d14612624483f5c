"""The frameworks people train with, each as a real 4-rank CPU job (gloo) with one rank 30% slower
(sleeping longer in its forward and backward, as a slow accelerator would): the probe, added the
documented way, must name that rank with cause `worker` on at least 80% of the steps from step 10
on (issue 8's bar), and leave the job's exit code and step count alone.

Each job is small (a 2-layer model, 40 steps of ~0.1 s; torchtitan's debug llama3, 40 steps of
0.5-1 s of real CPU work) so that the whole file stays within a few minutes on a 2-core CI
machine; what they cost with and without the probe is measured in bench/frameworks, not here.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import launch  # noqa: E402

import harness  # noqa: E402  (tests/python, on sys.path through conftest)

STEPS = 40
STRAGGLER = {"fwd_ms": 30, "bwd_ms": 60, "steps": STEPS, "slow_rank": 2, "slow_factor": 1.3}
BAR = 0.8  # issue 8, must-show 1

# client: (script, launcher, extra spec)
CLIENTS = {
    "lightning-own-launcher": ("lightning_job.py", "lightning", {}),
    "lightning-torchrun": ("lightning_job.py", "torchrun", {}),
    "hf-trainer-accumulation-2": ("hf_job.py", "torchrun", {"accumulation": 2}),
    "accelerate-launch-accumulation-2": ("accelerate_job.py", "accelerate", {"accumulation": 2}),
    "deepspeed-zero1-accumulation-2": ("deepspeed_job.py", "deepspeed",
                                       {"accumulation": 2, "zero": 1}),
}


def probe_warnings(result: harness.JobResult) -> list[str]:
    return [l for err in result.stderr for l in err.splitlines()
            if "straggler_probe" in l and "warn" in l.lower()]


def check_named(result: harness.JobResult, steps: int = STEPS, bar: float = BAR) -> None:
    assert set(result.returncodes) == {0}, result.explain()
    assert all(len(r.get("step_times", [])) == steps for r in result.ranks), result.explain()
    share, table = launch.named_share(result, "rank:2")
    assert len(table) >= steps - 10 - 4, result.explain()  # nearly every step >= 10 analysed
    assert share >= bar, table
    assert not probe_warnings(result), probe_warnings(result)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_framework_names_the_slow_rank(client: str, tmp_path: Path) -> None:
    script, how, extra = CLIENTS[client]
    result = launch.run(script, dict(STRAGGLER, mode="import", **extra), tmp_path, launch=how)
    check_named(result)


def test_lightning_own_launcher_under_ld_preload(tmp_path: Path) -> None:
    # Lightning's children get LOCAL_RANK and WORLD_SIZE, its first process nothing: the
    # autoload must start anyway, and the ranks come from the process group
    if launch.preload_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    result = launch.run("lightning_job.py", dict(STRAGGLER, mode="preload"), tmp_path,
                        launch="lightning")
    check_named(result)


def test_lightning_callback_logs_to_the_trainers_logger(tmp_path: Path) -> None:
    import csv
    result = launch.run("lightning_job.py", dict(STRAGGLER, mode="callback", callback=True),
                        tmp_path, launch="lightning")
    check_named(result)
    rows = list(csv.DictReader(open(tmp_path / "csv" / "version_0" / "metrics.csv")))
    logged = {int(r["step"]): r for r in rows if r.get("straggler/S")}
    verdicts = {s["step"]: s for s in result.steps if s.get("analyzed")}
    assert logged and set(logged) <= set(verdicts)
    assert len(logged) >= len(verdicts) - 2  # the last verdicts may come after training ends
    for step, row in logged.items():
        assert abs(float(row["straggler/S"]) - verdicts[step]["S"]) < 1e-6
        if verdicts[step]["worst"] == "rank:2":
            assert float(row["straggler/worst_rank"]) == 2.0
        assert float(row["straggler/flagged"]) == (verdicts[step]["cause"] != "none")


def test_hf_callback_adds_to_the_trainers_logs(tmp_path: Path) -> None:
    result = launch.run("hf_job.py", dict(STRAGGLER, mode="callback", callback=True,
                                          logging_steps=5), tmp_path)
    check_named(result)
    # what a report_to integration (a callback after ours) is given, and the Trainer's history
    logs = [h for h in result.ranks[0]["logged"] if "straggler/S" in h]
    assert len(logs) >= STEPS // 5 - 2, result.ranks[0]["logged"]
    history = [h for h in result.ranks[0]["log_history"] if "straggler/S" in h]
    assert [h["step"] for h in history] == [h["step"] for h in logs]
    # the probe's step N is the Trainer's global_step N + 1; a log at global_step G carries the
    # latest step analysed by then, so never a later one than G - 1
    assert all(0 <= h["straggler/step"] <= h["step"] - 1 for h in logs), logs
    late = [h for h in logs if h["step"] >= 15]
    assert late and all(h["straggler/worst_rank"] == 2.0 for h in late), late
    assert all(h["straggler/cause"] == 1.0 for h in late)  # worker
    # the share of steps flagged since the previous log (absent when no step was analysed since)
    shares = [h["straggler/flagged_share"] for h in logs if "straggler/flagged_share" in h]
    assert len(shares) >= len(logs) - 1 and all(0.0 <= x <= 1.0 for x in shares), logs


@pytest.mark.parametrize("mode", ["import", "preload"])
def test_fsdp2_collectives_are_seen_below_the_names(mode: str, tmp_path: Path) -> None:
    # FSDP2 in torch 2.15 calls dist.all_gather_single / reduce_scatter_single, which no by-name
    # wrapper covers: the process-group layer must record them, on every rank, and see every
    # collective the group issued; and the slow rank is named (issue 8's bar). Gloo's
    # reduce-scatter work has no future: it ends at its wait, not at its issue.
    if mode == "preload" and launch.preload_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    result = launch.run("fsdp_job.py", dict(STRAGGLER, mode=mode, fsdp=2), tmp_path)
    check_named(result)
    for rank in result.ranks:
        assert len(rank["step_times"]) == STEPS, result.explain()
        pg = rank["stats"]["process_groups"]
        assert pg["recorded"] >= 6 * STEPS and pg["unseen"] == 0, pg  # 4 gathers, 2 scatters
    steps = [s for s in result.steps if s.get("analyzed")]
    assert len(steps) >= STEPS - 6, result.explain()
    assert all({"all-gather", "reduce-scatter"} <= set(s["op_S"]) for s in steps), steps[-1]
    assert not probe_warnings(result), probe_warnings(result)


@pytest.mark.parametrize("mode", ["import", "preload"])
def test_fsdp1_names_the_slow_rank(mode: str, tmp_path: Path) -> None:
    # FullyShardedDataParallel (FSDP1) on CPU: torch 2.15 refuses it without a device_id ("FSDP
    # needs a non-CPU accelerator device"), fsdp_job.py names the CPU. Its all-gathers and
    # reduce-scatters are seen (some by name, the rest at the process-group layer), none unseen.
    if mode == "preload" and launch.preload_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    result = launch.run("fsdp_job.py", dict(STRAGGLER, mode=mode, fsdp=1), tmp_path)
    refused = "FSDP needs a non-CPU accelerator"
    if any(refused in err for err in result.stderr):
        pytest.skip(f"this torch's FullyShardedDataParallel refuses CPU even with device_id "
                    f"(\"{refused} device\")")
    check_named(result)
    for rank in result.ranks:
        assert rank["stats"]["process_groups"]["unseen"] == 0, rank["stats"]["process_groups"]
    steps = [s for s in result.steps if s.get("analyzed")]
    assert all({"all-gather", "reduce-scatter"} <= set(s["op_S"]) for s in steps), steps[-1]


def test_closure_loop_names_the_slow_rank(tmp_path: Path) -> None:
    # optimizer.step(closure) with DDP: forward, backward and the bucket wait inside the step
    result = harness.run_job(dict(STRAGGLER, closure=True), tmp_path)
    check_named(result)


def test_accelerate_launch_under_ld_preload(tmp_path: Path) -> None:
    # an accelerate script never changed for the probe: the library's autoload starts it when
    # accelerate initialises torch.distributed in each rank torchrun started
    if launch.preload_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    result = launch.run("accelerate_job.py", dict(STRAGGLER, mode="preload", accumulation=2),
                        tmp_path, launch="accelerate")
    check_named(result)
    assert {r["distributed_type"] for r in result.ranks} == {"DistributedType.MULTI_CPU"}


@pytest.mark.parametrize("mode", ["import", "preload"])
def test_deepspeed_zero3_collectives_are_seen(mode: str, tmp_path: Path) -> None:
    # DeepSpeed ZeRO-3 (every parameter partitioned: all-gathers in each forward and backward,
    # reduce-scatters of the gradients) started by the `deepspeed` launcher: the slow rank is
    # named, every collective the groups issued is seen (by name or at the process-group layer:
    # under LD_PRELOAD DeepSpeed bound torch.distributed's functions before the autoload), and
    # the engine stepped its optimizer once per step (accumulation 2).
    if mode == "preload" and launch.preload_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    result = launch.run("deepspeed_job.py", dict(STRAGGLER, mode=mode, accumulation=2, zero=3),
                        tmp_path, launch="deepspeed")
    check_named(result)
    for rank in result.ranks:
        assert rank["zero_stage"] == 3 and rank["optimizer_steps"] == STEPS, rank
        pg = rank["stats"]["process_groups"]
        assert pg["seen"] > 0 and pg["unseen"] == 0, pg
    steps = [s for s in result.steps if s.get("analyzed")]
    assert all({"all-gather", "reduce-scatter"} <= set(s["op_S"]) for s in steps), steps[-1]


@pytest.mark.parametrize("layout", ["fsdp", "pp"])
def test_torchtitan_names_the_slow_rank(layout: str, tmp_path: Path) -> None:
    # torchtitan's own Trainer, llama3 debug model and parallelize functions, started by torchrun
    # (torchtitan_job.py: four run-time changes let torchtitan 0.3.0 train on CPUs). "fsdp":
    # FSDP2 over the 4 ranks; "pp": 2 pipeline stages x 2 FSDP ranks each (1F1B), where the slow
    # rank 2 (stage 1, dp rank 0) must be named as the worker, not as its stage: its dp peer in
    # the same stage, rank 3, is not slow. Every collective and send/recv is seen.
    pytest.importorskip("torchtitan")
    result = launch.run("torchtitan_job.py", {"mode": "import", "layout": layout,
                                              "steps": STEPS, "slow_rank": 2,
                                              "slow_factor": 1.3}, tmp_path, timeout=480)
    if layout == "fsdp":
        check_named(result)
    else:
        # Issue 23's bar, 80%: the pipeline reached 87-100% in three runs (bench/README.md,
        # torchtitan) once the stage rule read each rank's own work; before, it named rank 2's
        # stage on 0-20% of the steps, when rank 3's S_w (its dp column's score, with rank 1 in
        # it) ran hot. Never anyone but rank 2 or its stage.
        check_named(result, bar=0.8)
        judged = [s for s in result.steps if s.get("analyzed") and s["step"] >= 10]
        others = [s for s in judged if s["cause"] != "none" and s["worst"] not in ("rank:2", "stage:1")]
        assert not others, others
    for rank in result.ranks:
        pg = rank["stats"]["process_groups"]
        assert pg["seen"] > 0 and pg["unseen"] == 0, pg
    steps = [s for s in result.steps if s.get("analyzed") and s["step"] >= 10]
    # the two dp ranks of the slow rank's stage are scored on their own work
    apart = sum(s["worker_S"][2] > s["worker_S"][3] for s in steps)
    assert apart >= 0.9 * len(steps), [s["worker_S"] for s in steps]
