#!/usr/bin/env python3
"""`straggler-probe analyze` against the paper artifact's Python, side by side, end to end.

For each trace of the artifact (data/trace-<T>.parquet, data/meta-<T>.yaml) it runs, in turn and
interleaved over --reps rounds (so both see the same machine load):

- ours: `straggler-probe analyze --trace T.csv.gz --meta meta.yaml --out DIR`, its default
  outputs (result.json, ms.json, mw.json, timeline.json, heatmap.svg) and printed summary;
- the artifact, as its run_all.sh does: wia.py (result.json), compute_ms.py, compute_mw.py,
  heatmap.py (PNG) and to_timeline.py (the ideal timeline, json.gz).

Each process is timed from outside: wall time, and CPU time (user + system of the process and
its threads, from wait4). Reported per trace: the best round of each (the least disturbed by
other load), the artifact's analysis alone (wia + ms + mw) and with its two report scripts,
and the ratios. The artifact reads Parquet; ours reads the same trace as CSV.gz, converted once
before timing with python/straggler_probe/trace_io.py (exact: float32 printed with 17 digits).
With --synthetic, also our command alone on the 4096-GPU synthetic trace of bench/README.md.

Standard library only. Needs the artifact checkout (never copied into this repository) and a
Python with its dependencies: see bench/README.md, "Against the artifact, end to end".

usage: compare_artifact.py --artifact DIR --artifact-python PY --cli straggler-probe
                           [--traces SE AR ST] [--reps 3] [--synthetic --gen-trace sp_gen_trace]
"""

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE_IO = os.path.join(REPO, "python", "straggler_probe", "trace_io.py")

# bench/README.md's 4096-GPU job: dp 64 x pp 8 x tp 8, 32 micro-batches, 20 steps.
SYNTHETIC = ["--dp", "64", "--pp", "8", "--tp", "8", "--mb", "32", "--steps", "20", "--seed", "7",
             "--seqlen-sigma", "0.02", "--slow-worker", "32,3:1.3"]


class Run:
    def __init__(self, wall, cpu, max_rss_kib):
        self.wall, self.cpu, self.max_rss_kib = wall, cpu, max_rss_kib


def timed(cmd, cwd=None, env=None, log=None):
    """Runs cmd; returns its Run (wall s, CPU s, max RSS KiB). Fails loudly on a non-zero exit."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if log:
        out.close()
    if proc.returncode != 0:
        sys.exit(f"failed (exit {proc.returncode}): {' '.join(cmd)}" + (f"; see {log}" if log else ""))
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def to_csv_gz(py, parquet, dst):
    """The artifact's Parquet as our CSV.gz (once, before any timing)."""
    csv = dst[:-3]
    subprocess.run([py, TRACE_IO, "to-csv", parquet, csv], check=True)
    with open(csv, "rb") as src, gzip.open(dst, "wb", compresslevel=6) as out:
        shutil.copyfileobj(src, out)
    os.remove(csv)


def artifact_steps(a, py, trace, work):
    """The artifact's five commands for one trace, as run_all.sh runs them: (name, argv)."""
    meta = os.path.join(a, "data", f"meta-{trace}.yaml")
    parquet = os.path.join(a, "data", f"trace-{trace}.parquet")
    result = os.path.join(work, f"{trace}.json")
    common = ["--dump-dir", work, "--root", work]
    return [
        ("wia", [py, "analyzer/wia.py", "--metadata", meta, "--trace", parquet, *common]),
        ("ms", [py, "analyzer/compute_ms.py", "--trial", trace, "--analysis-result", result, *common]),
        ("mw", [py, "analyzer/compute_mw.py", "--trial", trace, "--analysis-result", result, *common]),
        ("heatmap", [py, "analyzer/heatmap.py", "--trial", trace, "--dump-dir", work, "--analysis-result", result]),
        ("timeline", [py, "analyzer/to_timeline.py", os.path.join(work, "dataframe", f"{trace}-0-no-blocking.parquet"),
                      "-o", work, "--reset-step-start", "--step-st", "0", "--step-ed", "999999"]),
    ]


def best(runs, attr):
    return min(getattr(r, attr) for r in runs)


def fmt_s(x):
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--artifact", required=True, help="checkout of ByteDance-Seed/StragglerAnalysis")
    ap.add_argument("--artifact-python", required=True, help="a python with the artifact's dependencies")
    ap.add_argument("--cli", required=True, help="the straggler-probe binary (Release build)")
    ap.add_argument("--traces", nargs="+", default=["SE", "AR", "ST"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true", help="also the 4096-GPU synthetic trace (ours only)")
    ap.add_argument("--gen-trace", help="sp_gen_trace binary, for --synthetic")
    ap.add_argument("--keep", help="keep inputs and outputs in this directory")
    a = ap.parse_args()

    work = a.keep or tempfile.mkdtemp(prefix="sp_compare_")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(a.artifact))
    inputs = {}
    for t in a.traces:
        dst = os.path.join(work, f"trace-{t}.csv.gz")
        if not os.path.exists(dst):
            to_csv_gz(a.artifact_python, os.path.join(a.artifact, "data", f"trace-{t}.parquet"), dst)
        inputs[t] = dst

    ours = {t: [] for t in a.traces}
    theirs = {t: {} for t in a.traces}
    for rep in range(a.reps):
        for t in a.traces:
            meta = os.path.join(a.artifact, "data", f"meta-{t}.yaml")
            out = os.path.join(work, f"ours-{t}")
            ours[t].append(timed([a.cli, "analyze", "--trace", inputs[t], "--meta", meta, "--out", out],
                                 log=os.path.join(work, f"ours-{t}.log")))
            art = os.path.join(work, f"artifact-{t}")
            shutil.rmtree(art, ignore_errors=True)
            os.makedirs(art)
            for name, cmd in artifact_steps(a.artifact, a.artifact_python, t, art):
                theirs[t].setdefault(name, []).append(
                    timed(cmd, cwd=a.artifact, env=env, log=os.path.join(work, f"artifact-{t}.log")))
            print(f"round {rep + 1}/{a.reps} {t}: ours {ours[t][-1].wall:.3f} s, artifact "
                  f"{sum(r[-1].wall for r in theirs[t].values()):.1f} s", file=sys.stderr, flush=True)

    print(f"load average at end: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; best of {a.reps} rounds\n")
    print("| trace | measure | ours (all 5 outputs) | artifact wia+ms+mw | ratio | artifact all 5 | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for t in a.traces:
        for attr, label in (("wall", "wall"), ("cpu", "CPU")):
            mine = best(ours[t], attr)
            analysis = sum(best(theirs[t][n], attr) for n in ("wia", "ms", "mw"))
            everything = analysis + best(theirs[t]["heatmap"], attr) + best(theirs[t]["timeline"], attr)
            print(f"| {t} | {label} | {fmt_s(mine)} | {fmt_s(analysis)} | {analysis / mine:.0f}x | "
                  f"{fmt_s(everything)} | {everything / mine:.0f}x |")
    print("\nartifact per script (best wall / best CPU):")
    for t in a.traces:
        parts = ", ".join(f"{n} {best(r, 'wall'):.2f}/{best(r, 'cpu'):.2f} s" for n, r in theirs[t].items())
        print(f"  {t}: {parts}")
    print("ours, median wall: " + ", ".join(f"{t} {statistics.median(r.wall for r in ours[t]):.3f} s" for t in a.traces))

    if a.synthetic:
        if not a.gen_trace:
            sys.exit("--synthetic needs --gen-trace")
        trace, meta = os.path.join(work, "synthetic-4096.csv.gz"), os.path.join(work, "synthetic-4096.yaml")
        if not os.path.exists(trace):
            subprocess.run([a.gen_trace, *SYNTHETIC, "--out", trace, "--meta", meta], check=True,
                           stdout=subprocess.DEVNULL)
        out = os.path.join(work, "ours-synthetic-4096")
        runs = [timed([a.cli, "analyze", "--trace", trace, "--meta", meta, "--out", out],
                      log=os.path.join(work, "ours-synthetic.log")) for _ in range(a.reps)]
        size = os.path.getsize(os.path.join(out, "timeline.json"))
        print(f"\n4096 GPUs (dp 64 x pp 8 x tp 8, 32 micro-batches, 20 steps; {os.path.getsize(trace) / 2**20:.0f} MiB "
              f"csv.gz): best wall {best(runs, 'wall'):.2f} s (median "
              f"{statistics.median(r.wall for r in runs):.2f} s), CPU {best(runs, 'cpu'):.2f} s, "
              f"peak RSS {max(r.max_rss_kib for r in runs) / 1024:.0f} MiB, timeline.json {size / 2**20:.0f} MiB")
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
