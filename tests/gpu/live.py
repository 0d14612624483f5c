"""The live check (run by tests/gpu/run.sh): real multi-rank jobs on the one GPU.

Two jobs of 4 ranks each, started the way tests/python/harness.py starts its real jobs (one
process per rank with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT: what
torchrun sets), one after the other: all 4 ranks share the GPU, a gloo process group joins them,
the model (gpt_model.py, the "live" size) trains on CUDA under DDP, straggler_probe.init() in
every rank. In the "slow" job one rank runs --slow-extra extra forward passes of its blocks per
step (no grad: more forward work, same gradients); the "clean" job is its twin with none. Rank 0's
verdicts are read from its JSONL (straggler_probe_steps.jsonl, as tests/python/conftest.py reads
them) and its report.json (alarms).

Asserted: in the slow job the slow rank is named (cause worker, worst rank:N) on >= 80% of the
analysed steps from step --from-step on (and there are at least 10 of them); in the clean job no
culprit is named (cause none) on >= 95% of the analysed steps.

  live.py run [--ranks 4 --steps 36 --slow-rank 2 --slow-extra 3]   (parent: both jobs)
  live.py rank SPEC_JSON                                             (one rank)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_common import free_port, result  # noqa: E402

JSONL = "straggler_probe_steps.jsonl"


def rank_main(spec: dict) -> int:
    import torch
    import straggler_probe
    from gpt_model import Trainer
    rank = int(os.environ["RANK"])
    cuda = not spec["smoke"]
    torch.set_num_threads(1)
    straggler_probe.init(out_dir=spec["report"])
    extra = spec["slow_extra"] if rank == spec["slow_rank"] else 0
    trainer = Trainer("live" if cuda else "smoke", spec["batch"], cuda, backend="gloo",
                      extra_forward=extra, seed=rank)
    times = [trainer.timed_step() for _ in range(spec["steps"])]
    stats = straggler_probe.stats()
    straggler_probe.shutdown()
    with open(os.path.join(spec["out"], f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "step_ms": times, "region_timer": stats.get("region_timer"),
                   "runtime": stats.get("runtime")}, f)
    trainer.torch.distributed.destroy_process_group()
    return 0


def run_job(name: str, args, slow_rank: int) -> dict:
    out = os.path.join(args.out_dir, name)
    os.makedirs(out, exist_ok=True)
    spec = {"smoke": args.cpu_smoke, "steps": args.steps, "batch": args.batch,
            "slow_rank": slow_rank, "slow_extra": args.slow_extra, "out": out,
            "report": os.path.join(out, "report")}
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD",)}
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                WORLD_SIZE=str(args.ranks), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if os.environ.get("SP_LIB"):
        base["STRAGGLER_PROBE_LIB"] = os.environ["SP_LIB"]  # the package loads it by path
    if os.environ.get("SP_PKG"):
        base["PYTHONPATH"] = os.pathsep.join([os.environ["SP_PKG"], HERE])
    t0 = time.monotonic()
    procs = []
    for rank in range(args.ranks):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        log = open(os.path.join(out, f"rank{rank}.log"), "w")
        procs.append((subprocess.Popen([sys.executable, os.path.abspath(__file__), "rank",
                                        json.dumps(spec)], env=env, stdout=log,
                                       stderr=subprocess.STDOUT, cwd=out), log))
    codes = []
    for p, log in procs:
        left = max(1.0, args.job_timeout - (time.monotonic() - t0))
        try:
            codes.append(p.wait(timeout=left))
        except subprocess.TimeoutExpired:
            for q, _ in procs:
                q.kill()
            codes.append("timeout")
        log.close()
    return {"name": name, "returncodes": codes, "seconds": round(time.monotonic() - t0, 1),
            **read_job(out, args)}


def read_job(out: str, args) -> dict:
    steps = []
    path = os.path.join(out, "report", JSONL)
    if os.path.exists(path):
        for line in open(path):
            try:
                steps.append(json.loads(line))
            except ValueError:
                continue
    analysed = [s for s in steps if s.get("event", "step") == "step" and s.get("analyzed")]
    ranks = []
    for r in range(args.ranks):
        try:
            ranks.append(json.load(open(os.path.join(out, f"rank{r}.json"))))
        except (OSError, ValueError):
            ranks.append({})
    alarms = []
    try:
        alarms = json.load(open(os.path.join(out, "report", "report.json"))).get("alarms", [])
    except (OSError, ValueError):
        pass
    tail = ""
    if not analysed:
        try:
            tail = open(os.path.join(out, "rank0.log")).read()[-2500:]
        except OSError:
            pass
    skip = 4
    return {"analysed": analysed, "alarms": alarms, "rank0_tail": tail,
            "median_step_ms": [round(statistics.median(r["step_ms"][skip:]), 2)
                               if len(r.get("step_ms", [])) > skip else None for r in ranks],
            "region_timer": ranks[0].get("region_timer") if ranks else None}


def verdicts(s: dict) -> dict:
    return {"step": s.get("step"), "cause": s.get("cause"), "worst": s.get("worst"),
            "S": round(s.get("S", 0), 3), "p": s.get("p")}


def run(args) -> int:
    slow = run_job("slow", args, args.slow_rank)
    clean = run_job("clean", args, -1)
    target = f"rank:{args.slow_rank}"
    late = [s for s in slow["analysed"] if s.get("step", -1) >= args.from_step]
    named = [s for s in late if s.get("cause") == "worker" and s.get("worst") == target]
    flagged = [s for s in clean["analysed"] if s.get("cause") != "none"]
    share = len(named) / len(late) if late else 0.0
    clean_none = 1 - len(flagged) / len(clean["analysed"]) if clean["analysed"] else 0.0
    med = [m for m in clean["median_step_ms"] if m]
    measured = (max(m for m in slow["median_step_ms"] if m) / statistics.median(med)
                if med and any(slow["median_step_ms"]) else None)
    fields = dict(
        check="live", ranks=args.ranks, steps=args.steps, slow_rank=args.slow_rank,
        slow_work=f"{args.slow_extra} extra no-grad forward passes of the blocks",
        backend="gloo", jobs_seconds=[slow["seconds"], clean["seconds"]],
        returncodes={"slow": slow["returncodes"], "clean": clean["returncodes"]},
        slow_named_share=round(share, 4), slow_steps_judged=len(late), slow_steps_named=len(named),
        slow_judged_from_step=args.from_step, clean_none_share=round(clean_none, 4),
        clean_steps_analysed=len(clean["analysed"]), clean_steps_flagged=len(flagged),
        measured_slowdown=round(measured, 3) if measured else None,
        median_step_ms={"slow": slow["median_step_ms"], "clean": clean["median_step_ms"]},
        region_timer=slow["region_timer"],
        slow_alarms=slow["alarms"][:3], clean_alarms=clean["alarms"][:3],
        slow_verdicts=[verdicts(s) for s in slow["analysed"]][-40:],
        clean_flagged=[verdicts(s) for s in flagged][:10],
        rank0_tails={j["name"]: j["rank0_tail"] for j in (slow, clean) if j["rank0_tail"]})
    if args.cpu_smoke:
        return result(True, smoke=True, **fields)
    ok = (slow["returncodes"] == [0] * args.ranks and clean["returncodes"] == [0] * args.ranks and
          len(late) >= 10 and share >= 0.8 and clean_none >= 0.95)
    return result(ok, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "rank"])
    p.add_argument("spec", nargs="?")
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=36)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--slow-rank", type=int, default=2)
    p.add_argument("--slow-extra", type=int, default=3)
    p.add_argument("--from-step", type=int, default=10)
    p.add_argument("--job-timeout", type=float, default=27.0)
    p.add_argument("--out-dir", default=os.path.join(os.environ.get("OUT", "/tmp"), "sp_out_live"))
    args = p.parse_args()
    if args.mode == "rank":
        return rank_main(json.loads(args.spec))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
