"""Frameworks with and without the probe: overhead, noise and detection per client.

    .venv/bin/python bench/frameworks/run.py overhead [--pairs 4] [--clients a,b] [--out DIR]
    .venv/bin/python bench/frameworks/run.py detect   [--clients a,b] [--modes import,preload]
                                                      [--repeats N] [--clean]

overhead: for each client, `pairs` pairs of clean runs (no straggler), the probe on (import) and
off, interleaved in ABBA order (on-off, off-on, ...) so that drifts of the shared machine fall
on both sides alike. Each run's step time is the median of its steps after the first 5; a pair
gives the ratio on/off; the table has the mean ratio and a 95% confidence interval (Student t
over the pairs). It also checks that each pair's runs exit 0 and end with the same loss, and
counts the share of the "on" runs' analysed steps >= 10 that were flagged (cause != none):
the noise rate with nothing injected.
detect: per client and mode, `--repeats` runs with rank 2 30% slower; the share of steps >= 10
naming it with cause worker; with `--clean`, each run's clean twin and its steps >= 10 named.
Run it under the shared lock (flock /tmp/sp-heavy.lock ...): it measures time.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(REPO / "tests" / "python" / "frameworks"))
import harness  # noqa: E402
import launch  # noqa: E402

BASE = {"fwd_ms": 30, "bwd_ms": 60, "steps": 40}
SLOW = {"slow_rank": 2, "slow_factor": 1.3}
# client: (script or None for tests/python/workload.py, launcher, extra spec)
CLIENTS = {
    "ddp-loop": (None, "harness", {}),
    "ddp-closure": (None, "harness", {"closure": True}),
    "lightning-own": ("lightning_job.py", "lightning", {}),
    "lightning-torchrun": ("lightning_job.py", "torchrun", {}),
    "hf-accum2": ("hf_job.py", "torchrun", {"accumulation": 2}),
    "accelerate-accum2": ("accelerate_job.py", "accelerate", {"accumulation": 2}),
    "fsdp2": ("fsdp_job.py", "torchrun", {"fsdp": 2}),
    "fsdp1": ("fsdp_job.py", "torchrun", {"fsdp": 1}),
    "deepspeed-zero1-accum2": ("deepspeed_job.py", "deepspeed", {"zero": 1, "accumulation": 2}),
    "deepspeed-zero3-accum2": ("deepspeed_job.py", "deepspeed", {"zero": 3, "accumulation": 2}),
    # torchtitan's own trainer and llama3 debug model on the CPU (the job's docstring); its work
    # is real, the slow rank sleeps slow_factor - 1 of its own step on top
    "torchtitan-fsdp2": ("torchtitan_job.py", "torchrun", {"layout": "fsdp"}),
    "torchtitan-pp2xdp2": ("torchtitan_job.py", "torchrun", {"layout": "pp"}),
}
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def run(client: str, spec: dict, out: Path) -> harness.JobResult:
    script, how, extra = CLIENTS[client]
    spec = dict(BASE, **extra, **spec)
    if script is None:
        env = {}
        if spec.get("mode") == "preload":
            env["LD_PRELOAD"] = launch.preload_library()
        if spec.get("mode") == "off":
            env["STRAGGLER_PROBE_ENABLE"] = "0"
        return harness.run_job(spec, out, env=env)
    return launch.run(script, spec, out, launch=how)


def median_step(result: harness.JobResult) -> float:
    times = result.ranks[0].get("step_times", [])[5:]
    return statistics.median(times) if times else float("nan")


def flagged_share(result: harness.JobResult) -> tuple[int, int]:
    steps = [s for s in result.steps if s.get("analyzed") and s["step"] >= 10]
    return sum(s["cause"] != "none" for s in steps), len(steps)


def overhead(clients: list[str], pairs: int, root: Path) -> list[dict]:
    rows = []
    for client in clients:
        ratios, flagged, analysed, same_loss, ok = [], 0, 0, True, True
        for p in range(pairs):
            order = ["import", "off"] if p % 2 == 0 else ["off", "import"]
            got = {}
            for mode in order:
                res = run(client, {"mode": mode}, root / f"{client}-{p}-{mode}")
                ok &= set(res.returncodes) == {0}
                got[mode] = res
            ratios.append(median_step(got["import"]) / median_step(got["off"]))
            f, n = flagged_share(got["import"])
            flagged, analysed = flagged + f, analysed + n
            losses = {m: r.ranks[0].get("loss") for m, r in got.items()}
            same_loss &= losses["import"] == losses["off"]
        mean = statistics.mean(ratios)
        half = (T95.get(len(ratios) - 1, 2.0) * statistics.stdev(ratios) / math.sqrt(len(ratios))
                if len(ratios) > 1 else float("nan"))
        rows.append({"client": client, "pairs": pairs, "ratio": mean, "ci95": half,
                     "ratios": ratios, "noise_flagged": flagged, "noise_analysed": analysed,
                     "same_loss": same_loss, "exit_ok": ok})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def detect(clients: list[str], modes: list[str], root: Path, repeats: int = 1,
           clean: bool = False) -> list[dict]:
    """Per repeat, client and mode: the planted run's share of steps >= 10 naming rank 2
    (cause worker), and with `clean` the same job with nothing planted, its steps >= 10 named
    anything. Repeats run in turn (every client's run 1, then run 2, ...)."""
    rows = []
    for repeat in range(1, repeats + 1):
        for client in clients:
            for mode in modes:
                if mode == "preload" and launch.preload_library() is None:
                    continue
                res = run(client, dict(SLOW, mode=mode), root / f"{client}-{mode}-{repeat}")
                share, table = launch.named_share(res, "rank:2")
                row = {"client": client, "mode": mode, "run": repeat, "named": share,
                       "steps": len(table), "exit_ok": set(res.returncodes) == {0}}
                if clean:
                    twin = run(client, {"mode": mode}, root / f"{client}-{mode}-{repeat}-clean")
                    row["clean_flagged"], row["clean_steps"] = flagged_share(twin)
                    row["exit_ok"] &= set(twin.returncodes) == {0}
                rows.append(row)
                print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["overhead", "detect"])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--modes", default="import,preload")
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeats", type=int, default=1, help="detect: runs per client and mode")
    ap.add_argument("--clean", action="store_true", help="detect: each run's clean twin too")
    a = ap.parse_args()
    root = Path(a.out or tempfile.mkdtemp(prefix="sp-bench-frameworks-"))
    clients = a.clients.split(",")
    if a.what == "overhead":
        overhead(clients, a.pairs, root)
    else:
        detect(clients, a.modes.split(","), root, a.repeats, a.clean)


if __name__ == "__main__":
    main()
