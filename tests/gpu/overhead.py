"""The overhead check (run by tests/gpu/run.sh): the GPT model's step time (gpt_model.py, batch 8:
the launch-bound ~25 ms step) in a process that NEVER loaded the probe against one that runs it.

Arms, each a separate process per round (warm-up, then N timed steps, each synchronised at its
end as a loop logging its loss is; the round's figure is the median step):
  A  baseline: no LD_PRELOAD, straggler_probe never imported, no STRAGGLER_PROBE_* variable
  B  the probe: libstraggler_probe.so preloaded and straggler_probe.init() (CUPTI attribution by
     launch markers, the default)
  C  as B with STRAGGLER_PROBE_CUPTI_ATTRIBUTION=external (informational, while time allows)
Rounds interleave the arms (order rotating, so drift favours none). Each process is started one
slot ahead and waits, imported, for its turn: only its imports overlap the previous process's
run; CUDA, NCCL and the model start after the go. Result: per arm the per-round medians, and
B/A (C/A) as the geometric mean of the paired per-round ratios with a 95% t interval over the
per-round log ratios; PASS when B/A's upper end is <= 1.01. At least --min-rounds rounds of A and
B are kept within the deadline; C runs only in rounds whose time is left over.

  overhead.py run [--rounds 8 --min-rounds 6 --warmup 10 --steps 30 --budget-s 85]   (parent)
  overhead.py worker ARM                                                             (child)
"""
from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_common import free_port, ratio_interval, result  # noqa: E402

ARMS = ("A", "B", "C")


def arm_env(arm: str, lib: str, pkg: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("STRAGGLER_PROBE_") and k not in ("LD_PRELOAD", "SP_LIB", "PYTHONPATH")}
    env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               PYTHONUNBUFFERED="1")
    if arm != "A":
        env.update(LD_PRELOAD=lib, SP_LIB=lib, PYTHONPATH=pkg, STRAGGLER_PROBE_LIB=lib)
    if arm == "C":
        env["STRAGGLER_PROBE_CUPTI_ATTRIBUTION"] = "external"
    return env


def worker(args) -> int:
    import torch  # noqa: F401 - the imports are what may overlap another process's run
    if args.arm != "A":
        import straggler_probe
    from gpt_model import Trainer
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return 3
    os.environ["MASTER_PORT"] = str(free_port())
    cuda = not args.cpu_smoke
    t0 = time.perf_counter()
    if args.arm != "A":
        straggler_probe.init(out_dir=os.path.join(args.out_dir, f"arm{args.arm}"), log_lines=False)
    trainer = Trainer("gpt" if cuda else "smoke", args.batch if cuda else 2, cuda)
    for _ in range(args.warmup):
        trainer.timed_step()
    times = [trainer.timed_step() for _ in range(args.steps)]
    out = {"arm": args.arm, "median_ms": round(statistics.median(times), 4),
           "mean_ms": round(statistics.fmean(times), 4), "steps": len(times),
           "setup_and_warmup_s": round(time.perf_counter() - t0 - sum(times) / 1000, 2)}
    if args.arm != "A":
        from straggler_probe import _native
        st = _native.core.cupti_stats() or {}
        out["cupti"] = {k: st.get(k) for k in ("active", "attribution", "kernels", "markers_issued",
                                               "tagged_activities")}
        out["region_timer"] = straggler_probe.stats().get("region_timer")
    print("WORKER " + json.dumps(out), flush=True)
    os._exit(0)  # the teardown (NCCL, the probe's report) is no part of the measurement


class Slot:
    """One worker process, started ahead and waiting for GO."""

    def __init__(self, rnd: int, arm: str, args):
        cmd = [sys.executable, os.path.abspath(__file__), "worker", arm,
               "--warmup", str(args.warmup), "--steps", str(args.steps), "--batch", str(args.batch),
               "--out-dir", args.out_dir] + (["--cpu-smoke"] if args.cpu_smoke else [])
        self.round, self.arm = rnd, arm
        self.proc = subprocess.Popen(cmd, env=arm_env(arm, args.lib, args.pkg), cwd=HERE,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._buf = b""

    def _read_until(self, prefix: str, deadline: float) -> str | None:
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                raw, self._buf = self._buf.split(b"\n", 1)
                line = raw.decode(errors="replace")
                self.lines.append(line)
                if line.startswith(prefix):
                    return line
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk

    def run(self, limit_s: float) -> dict:
        deadline = time.monotonic() + limit_s
        if self._read_until("READY", deadline) is None:
            return self.fail("never ready")
        t0 = time.monotonic()
        self.proc.stdin.write(b"GO\n")
        self.proc.stdin.flush()
        line = self._read_until("WORKER ", deadline)
        if line is None:
            return self.fail("no result in time")
        out = json.loads(line[7:])
        out.update(round=self.round, run_s=round(time.monotonic() - t0, 2))
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        return out

    def fail(self, why: str) -> dict:
        self.kill()
        return {"arm": self.arm, "round": self.round, "error": why, "tail": self.lines[-12:]}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def plan(args) -> list[tuple[int, str]]:
    """Round-major; each round's order rotated, so that no arm is always first or last."""
    order = []
    for r in range(args.rounds):
        arms = list(ARMS) if args.external else ["A", "B"]
        k = r % len(arms)
        order += [(r, a) for a in arms[k:] + arms[:k]]
    return order


def run(args) -> int:
    start = time.monotonic()
    deadline = start + args.budget_s
    slots = plan(args)
    mandatory = [a != "C" and r < args.min_rounds for r, a in slots]
    done: list[dict] = []
    skipped: list[str] = []
    took: list[float] = []  # seconds each slot took; the largest of the last three estimates the next
    nxt: Slot | None = Slot(*slots[0], args) if slots else None
    for i, (rnd, arm) in enumerate(slots):
        cur, nxt = nxt, None
        est = max(took[-3:]) if took else args.first_estimate_s
        left = deadline - time.monotonic()
        still_needed = sum(mandatory[i + 1:]) * est
        runs = left >= 0.6 * est if mandatory[i] else left - est >= still_needed
        if i + 1 < len(slots):
            nxt = Slot(*slots[i + 1], args)  # its imports overlap this slot's run
        if not runs:
            skipped.append(f"{arm}{rnd}")
            cur.kill()
            continue
        t0 = time.monotonic()
        done.append(cur.run(min(args.slot_limit_s, max(5.0, left))))
        took.append(time.monotonic() - t0)
    if nxt is not None:
        nxt.kill()
    return summarise(args, done, skipped, time.monotonic() - start)


def summarise(args, done: list[dict], skipped: list[str], elapsed: float) -> int:
    med = {a: {d["round"]: d["median_ms"] for d in done if d["arm"] == a and "median_ms" in d}
           for a in ARMS}
    errors = [d for d in done if "error" in d]

    def paired(arm: str) -> dict:
        rounds = sorted(set(med[arm]) & set(med["A"]))
        out = ratio_interval([(med[arm][r], med["A"][r]) for r in rounds])
        if out.get("ratio"):
            out["overhead_percent"] = round((out["ratio"] - 1) * 100, 3)
            upper = (out.get("ci95") or [None, None])[1]
            out["upper_within_1pct"] = upper is not None and upper <= 1.01
        return out
    b, c = paired("B"), paired("C")
    fields = dict(check="overhead", batch=args.batch, warmup_steps=args.warmup,
                  timed_steps=args.steps, elapsed_s=round(elapsed, 1),
                  arms={"A": "never loaded the probe (no import, no LD_PRELOAD)",
                        "B": "LD_PRELOAD + straggler_probe.init(), attribution markers",
                        "C": "as B, STRAGGLER_PROBE_CUPTI_ATTRIBUTION=external (informational)"},
                  per_round_median_ms={a: med[a] for a in ARMS if med[a]},
                  median_of_rounds_ms={a: round(statistics.median(med[a].values()), 3)
                                       for a in ARMS if med[a]},
                  B_over_A=b, C_over_A=c, skipped=skipped, errors=errors[:4],
                  probe_state=[{k: d.get(k) for k in ("arm", "round", "cupti", "region_timer",
                                                       "setup_and_warmup_s", "run_s")}
                               for d in done if d.get("arm") != "A"][:3],
                  rule="PASS when the upper end of B/A's 95% interval is <= 1.01, over >= "
                       f"{args.min_rounds} paired rounds")
    if args.cpu_smoke:
        return result(True, smoke=True, **fields)
    ok = b.get("rounds", 0) >= args.min_rounds and bool(b.get("upper_within_1pct")) and \
        not [e for e in errors if e["arm"] != "C"]
    return result(ok, **fields)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "worker"])
    p.add_argument("arm", nargs="?", default="A")
    p.add_argument("--cpu-smoke", action="store_true")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--min-rounds", type=int, default=6)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--budget-s", type=float, default=85.0)
    p.add_argument("--slot-limit-s", type=float, default=25.0)
    p.add_argument("--first-estimate-s", type=float, default=5.0)
    p.add_argument("--no-external", dest="external", action="store_false")
    p.add_argument("--out-dir", default=os.path.join(os.environ.get("OUT", "/tmp"), "sp_out_overhead"))
    args = p.parse_args()
    if args.mode == "worker":
        return worker(args)
    args.lib = os.environ.get("SP_LIB", "")
    args.pkg = os.environ.get("SP_PKG", "")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
