"""Per-step cost of straggler_probe against a process that never imported it (CPU, no GPU).

A launch-bound training step: a GPT of 8 blocks of width 64 on sequences of 16 tokens, batch 2,
one thread, so that the step is Python and operator dispatch, not arithmetic (what a launch-bound
GPU step is too). Each measurement is a fresh process:

  A  never imports straggler_probe (checked: not in sys.modules at the end)
  B  import straggler_probe; straggler_probe.init() with every default

run interleaved, round by round (A,B in even rounds, B,A in odd ones, so that a drift of the
machine within a round falls on both alike). A process runs `--warmup` steps that are dropped,
then `--steps` timed ones; its figure is the median step time on the training thread (wall
clock around data loader + forward + backward + optimizer, the thread's CPU time beside it).
The ratio is B/A per round (paired: the two processes of a round ran back to back); the
estimate is the geometric mean of the per-round ratios with a 95% t interval on their logs, and
a bootstrap percentile interval as a cross-check.

Variants: `single` (no torch.distributed) and `ddp` (gloo, world size 1, DistributedDataParallel
with small buckets so that a step has several bucket all-reduces, as a real model's does). In
the DDP variant every process also checks that the model's comm hook state is what DDP made it
(no hook registered, DistributedDataParallel.register_comm_hook the class's own), after the
training steps and, in B, after straggler_probe.shutdown().

A third arm, C, is optional (`--c-kwargs`, init() keywords as JSON): it runs in the same rounds,
the three orders rotating (A,B,C; C,A,B; B,C,A; ...), and the table adds C/A and C/B. With
`--scrape-port P` the driver GETs /metrics and /status on 127.0.0.1:P once a second while a C
process runs (what a Prometheus server and a person at /status do, ten times Prometheus' default
rate), and counts the replies, so that C/B is the cost of the metrics server being on and read.

Usage (one timing run at a time on a shared machine):
  flock /tmp/sp-heavy.lock .venv/bin/python bench/step_cost/step_cost.py [--rounds 10]
      [--variants single ddp] [--steps 300] [--warmup 60] [--json OUT]
The built package is taken from STRAGGLER_PROBE_PYTHONPATH, else build/python.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# two-sided 95% t quantiles by degrees of freedom (no scipy in the venv)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000}


# ---- one measured process ------------------------------------------------------------------
def build_job(variant: str, seed: int):
    """The model, optimizer and data of the launch-bound job; DDP over gloo for 'ddp'."""
    import torch

    sys.path.insert(0, str(REPO / "examples"))
    from tiny_gpt import SyntheticTokens, TinyGPT

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = TinyGPT(vocab=64, d_model=64, n_head=4, n_layer=8, block=16)
    ddp = None
    if variant == "ddp":
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        dist.init_process_group("gloo", rank=0, world_size=1)
        # 1.5 MB of parameters in 0.11 MB buckets: 14 bucket all-reduces per step, as the H200
        # job of issue 22 had
        ddp = model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.11)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(SyntheticTokens(64, 16, seed=seed, size=4096),
                                       batch_size=2, drop_last=True)
    return model, ddp, opt, data


def comm_hook_state(ddp) -> dict:
    """What a DDP model's comm hook is: the Python list DDP keeps of registered hooks, and
    whether the class's register_comm_hook is still torch's own (not a wrapper)."""
    from torch.nn.parallel import DistributedDataParallel
    register = DistributedDataParallel.register_comm_hook
    return {"comm_hooks": [repr(h) for h in getattr(ddp, "_comm_hooks", [])],
            "register_is_torch": register.__module__ == "torch.nn.parallel.distributed"
            and not hasattr(register, "__wrapped__")
            and getattr(register, "__qualname__", "") == "DistributedDataParallel.register_comm_hook"}


def timed_step(model, opt, data, it):
    """One training step (data, forward, backward, optimizer) on this thread; returns the data
    iterator (restarted at the end of the data) and the step's wall and thread-CPU ns."""
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(data)
        x, y = next(it)
    model(x, y).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return it, time.perf_counter_ns() - t0, time.thread_time_ns() - c0


def worker(mode: str, variant: str, steps: int, warmup: int, probe_kwargs: dict) -> dict:
    if mode == "probe":
        import straggler_probe
        straggler_probe.init(**probe_kwargs)  # every default unless --b-kwargs
    import torch  # noqa: F401
    model, ddp, opt, data = build_job(variant, seed=0)
    before = comm_hook_state(ddp) if ddp is not None else None
    it = iter(data)
    wall, cpu = [], []
    for k in range(warmup + steps):
        it, dt_wall, dt_cpu = timed_step(model, opt, data, it)
        if k >= warmup:
            wall.append(dt_wall)
            cpu.append(dt_cpu)
    out = {"mode": mode, "variant": variant, "median_wall_ns": statistics.median(wall),
           "median_cpu_ns": statistics.median(cpu), "steps": steps}
    if ddp is not None:
        out["hooks_before"] = before
        out["hooks_after_steps"] = comm_hook_state(ddp)
    if mode == "probe":
        import straggler_probe
        stats = straggler_probe.stats()
        out["recording"] = stats.get("recording")
        out["events_recorded"] = stats.get("runtime", {}).get("events_recorded")
        straggler_probe.shutdown()
        if ddp is not None:
            out["hooks_after_shutdown"] = comm_hook_state(ddp)
    else:
        out["never_imported"] = not any(m.startswith("straggler_probe") for m in sys.modules)
    return out


# ---- the driver ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper:
    """GETs /metrics and /status on 127.0.0.1:port once a second while started; counts replies."""

    def __init__(self, port: int):
        self.port, self.replies, self.failures = port, 0, 0
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _loop(self):
        while not self._stop.wait(1.0):
            for path in ("/metrics", "/status"):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=1) as r:
                        r.read()
                    self.replies += 1
                except OSError:
                    self.failures += 1  # before the server is up and after the process ends


def run_worker(mode: str, variant: str, args: argparse.Namespace, kwargs: str | None = None) -> dict:
    pkg = os.environ.get("STRAGGLER_PROBE_PYTHONPATH") or str(REPO / "build" / "python")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRAGGLER_PROBE_")}
    env.update(OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               PYTHONPATH=pkg if mode == "probe" else "")
    with tempfile.TemporaryDirectory(prefix="sp-step-cost-") as cwd:  # the probe's out_dir
        proc = subprocess.run([sys.executable, __file__, "--worker", mode, "--variant", variant,
                               "--steps", str(args.steps), "--warmup", str(args.warmup),
                               "--b-kwargs", args.b_kwargs if kwargs is None else kwargs],
                              env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode}/{variant} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def t95(df: int) -> float:
    keys = sorted(_T95)
    return _T95[max(k for k in keys if k <= df)] if df >= 1 else float("nan")


def ratio_interval(ratios: list[float], seed: int = 1) -> dict:
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t95(n - 1) * statistics.stdev(logs) / math.sqrt(n) if n > 1 else float("nan")
    rng = random.Random(seed)
    boots = sorted(math.exp(statistics.fmean(rng.choices(logs, k=n))) for _ in range(10000))
    return {"ratio": math.exp(mean), "t95": [math.exp(mean - half), math.exp(mean + half)],
            "boot95": [boots[249], boots[9749]], "rounds": n}


def hooks_untouched(result: dict) -> bool:
    states = [result.get(k) for k in ("hooks_before", "hooks_after_steps", "hooks_after_shutdown")]
    return all(s == {"comm_hooks": [], "register_is_torch": True} for s in states if s is not None)


def run_arm(arm: str, variant: str, args: argparse.Namespace, scraper: Scraper | None) -> dict:
    if arm == "A":
        return run_worker("none", variant, args)
    if arm == "B":
        return run_worker("probe", variant, args)
    if scraper is None:
        return run_worker("probe", variant, args, args.c_kwargs)
    with scraper:
        return run_worker("probe", variant, args, args.c_kwargs)


def measure(variant: str, args: argparse.Namespace) -> dict:
    arms = ("A", "B", "C") if args.c_kwargs else ("A", "B")
    scraper = Scraper(args.scrape_port) if args.scrape_port else None
    rows, problems = [], []
    for r in range(args.rounds):
        # A,B / B,A for two arms; the three rotations for three, so a drift within a round
        # falls on every arm alike over the rounds
        k = r % len(arms)
        order = arms[k:] + arms[:k] if len(arms) == 3 else (arms if r % 2 == 0 else arms[::-1])
        got = {arm: run_arm(arm, variant, args, scraper) for arm in order}
        a = got["A"]
        if not a.get("never_imported"):
            problems.append(f"round {r}: A imported straggler_probe")
        for arm in arms[1:]:
            b = got[arm]
            if not b.get("recording"):
                problems.append(f"round {r}: {arm} was not recording")
            if variant == "ddp" and not hooks_untouched(b):
                problems.append(f"round {r}: {arm}: comm hook state changed: " + json.dumps(
                    {k: b.get(k) for k in ("hooks_before", "hooks_after_steps", "hooks_after_shutdown")}))
        if variant == "ddp" and not hooks_untouched(a):
            problems.append(f"round {r}: A: comm hook state changed")
        rows.append(got)
        print(f"  {variant} round {r}: " + "  ".join(
            f"{arm} {got[arm]['median_wall_ns'] / 1e3:8.1f} us" for arm in arms) + "  " + "  ".join(
            f"{arm}/A {got[arm]['median_wall_ns'] / a['median_wall_ns']:.4f}" for arm in arms[1:]),
            flush=True)
    out = {"variant": variant, "steps": args.steps, "warmup": args.warmup, "problems": problems,
           "b_kwargs": json.loads(args.b_kwargs)}
    for key in ("median_wall_ns", "median_cpu_ns"):
        out[key] = ratio_interval([g["B"][key] / g["A"][key] for g in rows])
        out[key]["A_us"] = statistics.median(g["A"][key] for g in rows) / 1e3
        out[key]["B_us"] = statistics.median(g["B"][key] for g in rows) / 1e3
        if "C" in arms:
            out["C_" + key] = ratio_interval([g["C"][key] / g["A"][key] for g in rows])
            out["C_" + key]["C_us"] = statistics.median(g["C"][key] for g in rows) / 1e3
            out["CB_" + key] = ratio_interval([g["C"][key] / g["B"][key] for g in rows])
    if "C" in arms:
        out["c_kwargs"] = json.loads(args.c_kwargs)
        if scraper is not None:
            out["scrapes_answered"], out["scrapes_failed"] = scraper.replies, scraper.failures
    out["events_per_step"] = statistics.median(
        (g["B"].get("events_recorded") or 0) / (args.steps + args.warmup) for g in rows)
    return out


def print_table(results: list[dict], b_label: str = "init() defaults") -> None:
    print(f"| model | A: never probed (µs/step) | B: {b_label} (µs/step) | B/A | 95% t | "
          "95% bootstrap | rounds | comm hook untouched |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for res in results:
        for key, label in (("median_wall_ns", "wall"), ("median_cpu_ns", "thread CPU")):
            m = res[key]
            hook = "—" if res["variant"] != "ddp" else (
                "yes" if not any("comm hook" in p for p in res["problems"]) else "NO")
            print(f"| {res['variant']} ({label}) | {m['A_us']:.0f} | {m['B_us']:.0f} | "
                  f"{m['ratio']:.4f} | {m['t95'][0]:.4f}–{m['t95'][1]:.4f} | "
                  f"{m['boot95'][0]:.4f}–{m['boot95'][1]:.4f} | {m['rounds']} | {hook} |")
    for res in results:
        if "c_kwargs" not in res:
            continue
        print(f"\nC: init(**{json.dumps(res['c_kwargs'])})"
              + (f", {res['scrapes_answered']} scrapes answered" if "scrapes_answered" in res else ""))
        print("| model | C (µs/step) | C/A | 95% t | 95% bootstrap | C/B | 95% t | 95% bootstrap |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for key, label in (("median_wall_ns", "wall"), ("median_cpu_ns", "thread CPU")):
            ca, cb = res["C_" + key], res["CB_" + key]
            print(f"| {res['variant']} ({label}) | {ca['C_us']:.0f} | {ca['ratio']:.4f} | "
                  f"{ca['t95'][0]:.4f}–{ca['t95'][1]:.4f} | {ca['boot95'][0]:.4f}–{ca['boot95'][1]:.4f} | "
                  f"{cb['ratio']:.4f} | {cb['t95'][0]:.4f}–{cb['t95'][1]:.4f} | "
                  f"{cb['boot95'][0]:.4f}–{cb['boot95'][1]:.4f} |")
    for res in results:
        for p in res["problems"]:
            print("problem:", p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["none", "probe"])
    ap.add_argument("--variant", default="single", choices=["single", "ddp"])
    ap.add_argument("--variants", nargs="+", default=["single", "ddp"], choices=["single", "ddp"])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--json", default=None, help="write the results here too")
    ap.add_argument("--b-kwargs", default="{}",
                    help="init() keywords of B as JSON, to attribute a cost (default: none)")
    ap.add_argument("--c-kwargs", default=None,
                    help="a third arm C: init() keywords as JSON (compared with A and with B)")
    ap.add_argument("--scrape-port", type=int, default=None,
                    help="GET /metrics and /status on this port once a second while C runs")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.variant, args.steps, args.warmup,
                                json.loads(args.b_kwargs))))
        return
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    results = [measure(v, args) for v in args.variants]
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if any(r["problems"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
