#!/usr/bin/env python3
"""Runs `straggler-probe analyze` on a reference trace and checks what it writes.

Standard library only (CTest runs it with any python3). Checks:
- exit code 0 and a summary with S, waste, worst stage/rank/op type, M_S, M_W and a verdict;
- result.json / ms.json / mw.json parse and match the summary's S;
- timeline.json is a Chrome trace object: one real and one ideal process per traced rank,
  named and sorted, five stream threads each, and one "X" event per analysed row and
  timeline (real + ideal), with ts/dur in microseconds;
- heatmap.svg is well-formed XML with one cell per (dp rank, stage) worker;
- lost.json (the ledger, issue 25): (traced - ideal step time) x GPUs summed over the analysed
  steps of result.json within 1%, its sums consistent, what it charges at most the loss, and the
  last line printed `straggler_probe lost X% of GPU time ...` with that share.

usage: check_outputs.py CLI DATA_DIR OUT_DIR [--steps TOKENS...] [--expect-verdict TEXT]
"""

import argparse
import csv
import gzip
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def expand_steps(tokens):
    steps = set()
    for tok in tokens:
        for item in tok.split(","):
            lo, _, hi = item.partition("-")
            steps.update(range(int(lo), int(hi or lo) + 1))
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--steps", nargs="+")
    ap.add_argument("--expect-verdict")
    a = ap.parse_args()

    cmd = [a.cli, "analyze", "--trace", f"{a.data}/trace.csv.gz", "--meta", f"{a.data}/meta.yaml", "--out", a.out]
    if a.steps:
        cmd += ["--steps", *a.steps]
    run = subprocess.run(cmd, capture_output=True, text=True)
    check(run.returncode == 0, f"exit code {run.returncode}, stderr: {run.stderr}")
    summary = run.stdout
    print(summary)
    for label in ("slowdown S", "waste", "worst stage", "worst dp rank", "worst op type", "M_S", "M_W", "verdict"):
        check(label in summary, f"summary lacks '{label}'")
    if a.expect_verdict:
        check(a.expect_verdict in summary, f"verdict should say '{a.expect_verdict}'")

    result = json.load(open(f"{a.out}/result.json"))
    json.load(open(f"{a.out}/ms.json"))
    json.load(open(f"{a.out}/mw.json"))
    s_printed = float(re.search(r"slowdown S\s+([0-9.]+)", summary).group(1))
    check(abs(s_printed - result["blocking_slowdown"]) < 1e-4, "summary S differs from result.json")
    meta = result["job_meta"]
    dp, pp, world = meta["dp_size"], meta["pp_size"], meta["world_size"]

    # The trace's rows, to count the events each timeline must hold.
    with gzip.open(f"{a.data}/trace.csv.gz", "rt") as f:
        rows = list(csv.DictReader(f))
    wanted = expand_steps(a.steps) if a.steps else None
    analysed = [r for r in rows if wanted is None or int(r["step"]) in wanted]
    places = {int(r["rank"]): (int(r["dp_rank"]), int(r["stage"])) for r in rows}

    tl = json.load(open(f"{a.out}/timeline.json"))
    check(isinstance(tl, dict) and tl.get("displayTimeUnit") == "ms", "timeline is not a Chrome trace object")
    events = tl["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    expected = {}
    for rank, (d, s) in places.items():
        expected[rank] = f"rank {rank} (dp {d}, stage {s})"
        expected[world + rank] = f"rank {rank} (ideal)"
    check(names == expected, f"process names differ: {sorted(names.items())[:4]} ...")
    threads = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            threads.setdefault(e["pid"], set()).add(e["args"]["name"])
    streams = {"compute", "pp send", "pp recv", "dp comm", "sync comm"}
    for pid in expected:
        names_of_pid = threads.get(pid, set())
        check(streams <= names_of_pid, f"pid {pid} lacks stream threads: {names_of_pid}")
        check(all(re.fullmatch(r"(.+?)( \(overlap \d+\))?", n).group(1) in streams for n in names_of_pid),
              f"pid {pid} has unexpected threads: {names_of_pid}")
    # Slices on one thread must nest (Perfetto's rule): overlapping ops are on separate threads.
    by_thread = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in by_thread.items():
        spans.sort()
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            check(s1 >= e0 - 1e-3, f"overlapping slices on pid/tid {key}: {s0}-{e0} and {s1}")
    complete = [e for e in events if e["ph"] == "X"]
    real = [e for e in complete if e["pid"] < world]
    ideal = [e for e in complete if e["pid"] >= world]
    check(len(real) == len(analysed), f"{len(real)} real events for {len(analysed)} analysed rows")
    check(len(ideal) == len(analysed), f"{len(ideal)} ideal events for {len(analysed)} analysed rows")
    check(all(e["dur"] >= 0 and e["ts"] >= 0 for e in complete), "negative ts or dur")
    # Real events keep the trace's durations (seconds -> microseconds).
    total_real_us = sum(e["dur"] for e in real)
    total_trace_us = sum(float(r["duration"]) for r in analysed) * 1e6
    check(abs(total_real_us - total_trace_us) <= 1e-6 * total_trace_us + 1, "real durations differ from the trace")

    svg = ET.parse(f"{a.out}/heatmap.svg").getroot()
    check(svg.tag == "{http://www.w3.org/2000/svg}svg", "heatmap root is not <svg>")
    cells = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "cell"]
    check(len(cells) == dp * pp, f"{len(cells)} heatmap cells for {dp}x{pp} workers")
    check({(int(c.get("data-dp")), int(c.get("data-stage"))) for c in cells} == {(d, s) for d in range(dp) for s in range(pp)},
          "heatmap cells do not cover every worker once")
    title = "".join(svg.find("{http://www.w3.org/2000/svg}text").itertext())
    check(meta["trial_name"] in title and "S = " in title, f"heatmap title: {title}")
    check_ledger(a.out, result, summary)
    print("OK")


def check_ledger(out, result, summary):
    lost = json.load(open(f"{out}/lost.json"))["lost"]
    gpus = result["job_meta"]["world_size"]
    base = result["step_t_base"]
    ideal = result["step_t_noblk"]
    expected = sum(max(0.0, base[s] - ideal[s]) * gpus for s in base)
    check(lost["gpus"] == gpus and lost["analyzed_steps"] == len(base), f"ledger: {lost}")
    check(abs(lost["lost_gpu_seconds"] - expected) <= 0.01 * expected, f"ledger {lost['lost_gpu_seconds']} vs {expected}")
    check(abs(sum(lost["by_cause"].values()) - lost["lost_gpu_seconds"]) <= 1e-9 * expected, "by_cause does not sum")
    check(0 <= lost["fixable_gpu_seconds"] <= lost["lost_gpu_seconds"] + 1e-9, "fixable above the loss")
    for key in ("by_host", "by_stage", "top_ranks", "lost_share", "gpu_seconds"):
        check(key in lost, f"ledger lacks {key}")
    last = summary.strip().splitlines()[-1]
    check(last.startswith("straggler_probe lost "), f"last line: {last}")
    check(f"lost {100 * lost['lost_share']:.1f}% of GPU time" in last, f"last line: {last}")


if __name__ == "__main__":
    main()
