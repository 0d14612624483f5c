"""Per-step cost against a never-probed process, the two processes taking turns in short blocks.

step_cost.py runs A (never imports straggler_probe) and B (init() with every default) one after
the other; a round's ratio then carries whatever the machine did between the two processes (on
this shared 2-core VM, a few percent: more than the cost being measured). Here both processes
of a round are alive at once and take turns, `--block` steps each, so that a drift of the
machine falls on both within a fraction of a second:

  A: block | pause | B: block | pause | A: block | ...     (the first of each round alternates)

The process not running waits on a blocking read (no CPU). The pause (`--settle-ms`) lets B's
own threads finish the analysis of its block before A runs, so that A is never charged with B's
work; what B's threads do *during* its block (the analysis of each step as it comes, its
transport) stays in B, as in a real job. Warm-up blocks are dropped. A round's figure is the
median step time over all of B's timed steps over that of A's; the estimate is the geometric mean
of the rounds' ratios with a 95% t interval on their logs and a bootstrap interval (step_cost.py's
ratio_interval). Still separate processes, each fresh per round; same job, same checks (A never
imported the probe; B recorded; under DDP, the model's comm hook state is DDP's own).

Usage (one timing run at a time on a shared machine):
  flock /tmp/sp-heavy.lock .venv/bin/python bench/step_cost/lockstep.py [--rounds 16]
      [--variants single] [--steps 240] [--block 20] [--warmup 40] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_cost import (REPO, build_job, comm_hook_state, free_port, hooks_untouched,  # noqa: E402
                       print_table, ratio_interval, timed_step)

REPLY_TIMEOUT_S = 120.0  # a block is a few seconds; start-up and shut-down under 30


# ---- one process: runs blocks when told on stdin, answers on stdout ---------------------------
def worker(mode: str, variant: str, probe_kwargs: dict) -> None:
    if mode in ("probe", "import", "residue"):
        import straggler_probe
        if mode != "import":
            straggler_probe.init(**probe_kwargs)  # every default unless --b-kwargs
    model, ddp, opt, data = build_job(variant, seed=0)
    before = comm_hook_state(ddp) if ddp is not None else None
    it = iter(data)
    if mode == "residue":  # what shutdown() leaves behind, after a few steps recorded
        for _ in range(5):
            it, _, _ = timed_step(model, opt, data, it)
        straggler_probe.shutdown()
    wall: list[int] = []
    cpu: list[int] = []
    print("@@ready", flush=True)
    for line in sys.stdin:
        cmd, _, n = line.strip().partition(" ")
        if cmd == "end":
            break
        for _ in range(int(n)):
            it, dt_wall, dt_cpu = timed_step(model, opt, data, it)
            if cmd == "timed":
                wall.append(dt_wall)
                cpu.append(dt_cpu)
        print("@@ok", flush=True)
    out = {"mode": mode, "median_wall_ns": statistics.median(wall),
           "median_cpu_ns": statistics.median(cpu), "steps": len(wall)}
    if ddp is not None:
        out["hooks_before"] = before
        out["hooks_after_steps"] = comm_hook_state(ddp)
    if mode in ("import", "residue"):
        out["recording"] = True  # not recording, by design: the cost of what is left
    if mode == "probe":
        import straggler_probe
        stats = straggler_probe.stats()
        out["recording"] = stats.get("recording")
        straggler_probe.shutdown()
        if ddp is not None:
            out["hooks_after_shutdown"] = comm_hook_state(ddp)
    else:
        out["never_imported"] = not any(m.startswith("straggler_probe") for m in sys.modules)
    print("@@" + json.dumps(out), flush=True)


# ---- the driver ----------------------------------------------------------------------------
class Turn:
    """One worker process of a round, driven line by line."""

    def __init__(self, mode: str, variant: str, cwd: str, b_kwargs: str):
        pkg = os.environ.get("STRAGGLER_PROBE_PYTHONPATH") or str(REPO / "build" / "python")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRAGGLER_PROBE_")}
        env.update(OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   PYTHONPATH="" if mode == "none" else pkg)
        self.mode = mode
        self._pending = b""  # bytes read from the worker's stdout, not yet a whole line
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", mode, "--variant", variant,
                                      "--b-kwargs", b_kwargs],
                                     env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def reply(self) -> str:
        """The worker's next reply ("@@" lines; the probe's own per-step lines pass by). A worker
        silent for REPLY_TIMEOUT_S is stuck: its threads' stacks go to stuck-<pid>.txt (gdb)."""
        # Read the pipe's bytes ourselves: a buffered readline() may take the reply into its
        # buffer together with a probe line before it, and select() on the descriptor would then
        # wait for bytes that already arrived.
        fd = self.proc.stdout.fileno()
        while True:
            newline = self._pending.find(b"\n")
            if newline >= 0:
                line = self._pending[:newline].decode(errors="replace")
                self._pending = self._pending[newline + 1:]
                if line.startswith("@@"):
                    return line[2:].strip()
                continue
            ready, _, _ = select.select([fd], [], [], REPLY_TIMEOUT_S)
            if not ready:
                dump = Path(f"stuck-{self.proc.pid}.txt").resolve()
                subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex", "thread apply all bt"],
                               stdout=dump.open("w"), stderr=subprocess.STDOUT, timeout=120, check=False)
                raise RuntimeError(f"{self.mode}: no reply in {REPLY_TIMEOUT_S} s; stacks in {dump}")
            chunk = os.read(fd, 65536)
            if not chunk:
                return ""
            self._pending += chunk

    def expect(self, word: str) -> None:
        got = self.reply()
        if got != word:
            err = self.proc.stderr.read()[-3000:] if self.proc.poll() is not None else ""
            raise RuntimeError(f"{self.mode}: expected {word!r}, got {got!r}\n{err}")

    def run(self, cmd: str, steps: int) -> None:
        self.proc.stdin.write(f"{cmd} {steps}\n")
        self.proc.stdin.flush()
        self.expect("ok")

    def finish(self) -> dict:
        self.proc.stdin.write("end\n")
        self.proc.stdin.flush()
        out = self.reply()
        self.proc.wait(timeout=120)
        if self.proc.returncode != 0:
            raise RuntimeError(f"{self.mode} failed:\n{self.proc.stderr.read()[-3000:]}")
        return json.loads(out)


def one_round(variant: str, args: argparse.Namespace, b_first: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="sp-lockstep-") as cwd:  # the probe's out_dir
        turns = {"A": Turn("none", variant, cwd, "{}"), "B": Turn(args.b_mode, variant, cwd, args.b_kwargs)}
        try:
            for t in turns.values():
                t.expect("ready")
            order = ["B", "A"] if b_first else ["A", "B"]
            for cmd, total in (("warm", args.warmup), ("timed", args.steps)):
                done = 0
                while done < total:
                    n = min(args.block, total - done)
                    for name in order:
                        turns[name].run(cmd, n)
                        time.sleep(args.settle_ms / 1000)
                    done += n
            return {name: t.finish() for name, t in turns.items()}
        finally:
            for t in turns.values():
                if t.proc.poll() is None:
                    t.proc.kill()


def measure(variant: str, args: argparse.Namespace) -> dict:
    rows, problems = [], []
    for r in range(args.rounds):
        got = one_round(variant, args, b_first=r % 2 == 1)
        a, b = got["A"], got["B"]
        if not a.get("never_imported"):
            problems.append(f"round {r}: A imported straggler_probe")
        if not b.get("recording"):
            problems.append(f"round {r}: B was not recording")
        if variant == "ddp" and not (hooks_untouched(a) and hooks_untouched(b)):
            problems.append(f"round {r}: comm hook state changed")
        rows.append(got)
        print(f"  {variant} round {r}: A {a['median_wall_ns'] / 1e3:8.1f} us  "
              f"B {b['median_wall_ns'] / 1e3:8.1f} us  B/A {b['median_wall_ns'] / a['median_wall_ns']:.4f}",
              flush=True)
    out = {"variant": variant, "method": "lockstep", "b_kwargs": json.loads(args.b_kwargs), "block": args.block, "steps": args.steps,
           "warmup": args.warmup, "settle_ms": args.settle_ms, "problems": problems,
           "load_average_end": os.getloadavg()[0]}
    for key in ("median_wall_ns", "median_cpu_ns"):
        out[key] = ratio_interval([g["B"][key] / g["A"][key] for g in rows])
        out[key]["A_us"] = statistics.median(g["A"][key] for g in rows) / 1e3
        out[key]["B_us"] = statistics.median(g["B"][key] for g in rows) / 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["none", "probe", "import", "residue"])
    ap.add_argument("--b-mode", default="probe", choices=["probe", "import", "residue"],
                    help="B calls init() (probe); only imports straggler_probe (import: the cost of "
                         "loading it); or init() and shutdown() after 5 steps (residue: what is left)")
    ap.add_argument("--variant", default="single", choices=["single", "ddp"])
    ap.add_argument("--variants", nargs="+", default=["single"], choices=["single", "ddp"])
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--steps", type=int, default=240, help="timed steps per process")
    ap.add_argument("--warmup", type=int, default=40, help="dropped steps per process, in blocks too")
    ap.add_argument("--block", type=int, default=20, help="steps per turn")
    ap.add_argument("--settle-ms", type=float, default=50.0, help="pause between turns")
    ap.add_argument("--b-kwargs", default="{}", help="init() keywords of B as JSON (default: none)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.variant, json.loads(args.b_kwargs))
        return
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    results = [measure(v, args) for v in args.variants]
    # step_cost.py's table (the same keys), B named by what it ran
    b_label = {"probe": "init(" + (args.b_kwargs if args.b_kwargs not in ("", "{}") else "") + ")",
               "import": "import only", "residue": "init() then shutdown()"}[args.b_mode]
    print_table(results, b_label)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if any(r["problems"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
