"""Prints bench/scale's results (run_scale.sh OUT) as the markdown tables of bench/README.md."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def load(out: Path, name: str) -> dict | None:
    f = out / name / "row.json"
    return json.loads(f.read_text()) if f.exists() else None


def fmt(v: float, digits: int = 1) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def main(out: Path) -> None:
    rows = [(n, load(out, n)) for n in
            ("host-64", "host-512", "host-4096", "host-4096-own-core", "rank-64", "rank-512",
             "rank-4096")]
    rows = [(n, r) for n, r in rows if r]
    print("| run | ranks | rank 0's core | analysed / steps | analysis per step (mean, max) | latency "
          "last summary -> line (median, max) | the same, analysed steps | rank 0: store ops / bytes "
          "per step | store: ops / bytes per step | store CPU per step | rank-0 CPU per step | rank-0 "
          "peak RSS |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows:
        r0, st = r["rank0_store_per_step"], r["store_per_step"]
        core = "own" if r.get("rank0_core", -1) >= 0 else "shared"
        print(f"| {r['protocol']} | {r['ranks']} | {core} | {int(r['steps_analyzed'])} / {r['steps']} "
              f"| {fmt(r['analysis_ms_mean'])} ms, {fmt(r['analysis_ms_max'])} ms "
              f"| {fmt(r['latency_ms_median'])} ms, {fmt(r['latency_ms_max'])} ms "
              f"| {fmt(r.get('analysed_latency_ms_median'))} ms, {fmt(r.get('analysed_latency_ms_max'))} ms "
              f"| {fmt(r0['ops'])} / {fmt(r0['bytes'] / 1024)} KiB "
              f"| {fmt(st['ops'])} / {fmt(st['bytes'] / 1024)} KiB "
              f"| {fmt(r['store_cpu_ms_per_step'])} ms | {fmt(r['rank0_cpu_ms_per_step'])} ms "
              f"| {fmt(r['rank0_max_rss_mb'], 0)} MiB |")
    for name, r in rows:
        if r.get("rank0_core", -1) >= 0 and "latency_by_step" in r:
            print(f"\n{name}, each step's line (ms after its last summary; * = skipped, said so):")
            print(" ".join(f"{e['step']}:{e['latency_ms']:,.0f}{'' if e['analysed'] else '*'}"
                           for e in r["latency_by_step"]))
    host = {r["ranks"]: r for n, r in rows if n.startswith("host") and r.get("rank0_core", -1) < 0}
    for a, b in ((64, 512), (512, 4096)):
        if a in host and b in host and host[a]["analysis_ms_mean"] > 0:
            k = math.log(host[b]["analysis_ms_mean"] / host[a]["analysis_ms_mean"]) / math.log(b / a)
            print(f"\nanalysis growth {a} -> {b} ranks: exponent {k:.2f} "
                  f"({host[b]['analysis_ms_mean'] / host[a]['analysis_ms_mean']:.1f}x for {b // a}x the ranks)")
    print("\n| store operations per step, by kind | " + " | ".join(n for n, _ in rows) + " |")
    print("| --- |" + " ---: |" * len(rows))
    for who in ("rank0_store_per_step", "store_per_step"):
        for kind in ("append", "add", "get", "set", "delete", "compare_set"):
            print(f"| {'rank 0' if who.startswith('rank0') else 'store'}: {kind} | "
                  + " | ".join(fmt(r[who][kind]) for _, r in rows) + " |")
    for f in ("bytes-cpu.json", "bytes-gpu.json"):
        p = out / f
        if p.exists():
            b = json.loads(p.read_text())
            print(f"\nbytes per rank and step, {'with GPU records' if b['gpu'] else 'CPU only'} "
                  f"(dp {b['dp']} x pp {b['pp']}, {b['ops_per_rank_step']:.0f} ops): version 2 "
                  f"{b['v2_bytes_mean']:.0f} mean / {b['v2_bytes_max']:.0f} max; version 1 "
                  f"{b['v1_bytes_mean']:.0f} / {b['v1_bytes_max']:.0f}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "build/bench/scale/out"))
