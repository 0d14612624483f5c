#!/usr/bin/env python3
"""Two builds of the tree, side by side: are their answers the same, and is one slower?

For changes that must not change behaviour (moves, renames, plumbing; issue 24's "byte-identical
before and after"). Both builds write the same outputs (the detection bench at 4 and 64 ranks,
dp and pp; `straggler-probe analyze` on the reference traces in tests/data; `analyze-dir` on the
recorded jobs of tests/data/online_jobs), then every file of one is compared with the same file
of the other: byte for byte, and where they differ, again with the fields that change from run to
run blanked (VOLATILE below: when a report was written, the analysis's CPU seconds). A
difference that remains is printed and the exit status is 1.

--speed then times both, interleaved (base, main, base, ...) so that the machine's load falls on
both alike: `analyze` on SE and ST (whole process, wall, median of --reps) and the online
analysis at 512 and 4096 ranks (sp_bench_online_analysis, dp x pp, the median step's CPU).

Usage: bench/compare_builds.py BASE_BUILD MAIN_BUILD OUT [--speed] [--reps 5] [--compare-only]
(each BUILD a CMake build folder with straggler-probe, sp_detection_bench and
sp_bench_online_analysis built; OUT is replaced)."""
from __future__ import annotations

import argparse
import filecmp
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

# What differs between two runs of the same build, and nothing more (a wider pattern would hide
# a real difference, e.g. a step's time_s): blanked before the second comparison.
VOLATILE = [
    re.compile(rb'"(written_unix_s|analysis_cpu_s|analysis_cpu_max_s)"\s*:\s*[-0-9.eE+]+'),
]
# Words a change renamed on purpose, (old, new): read as the new ones in the second comparison.
# Keep only the renames between the bases you compare (issue 24: report.html's box of totals).
RENAMED = [
    (b'class="summary"', b'class="overview"'),
    (b".summary table", b".overview table"),
    (b'{ class: "summary" }', b'{ class: "overview" }'),
]

def tool(build: Path, name: str) -> Path:
    for path in (build / "cli" / name, build / "bench" / "detection" / name,
                 build / "bench" / "online" / name):
        if path.is_file():
            return path
    sys.exit(f"compare_builds: {name} is not built in {build}")


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, check=False, **kw)


def outputs(build: Path, out: Path) -> None:
    """Every output this comparison reads, written by `build` under `out`."""
    out.mkdir(parents=True)
    cli = tool(build, "straggler-probe")
    bench = run([tool(build, "sp_detection_bench"), "run", "--out", out / "detection",
                 "--sizes", 4, 64, "--shapes", "dp", "pp"])
    (out / "detection.stdout").write_bytes(bench.stdout)
    for trace in ("SE", "ST"):
        r = run([cli, "analyze", "--trace", DATA / trace / "trace.csv.gz",
                 "--meta", DATA / trace / "meta.yaml", "--out", out / "analyze" / trace])
        (out / "analyze" / f"{trace}.stdout").write_bytes(r.stdout)
    for job in sorted((DATA / "online_jobs").iterdir()):
        if job.is_dir():
            r = run([cli, "analyze-dir", job, "--out", out / "analyze_dir" / job.name])
            (out / "analyze_dir" / f"{job.name}.stdout").write_bytes(r.stdout)


def blanked(path: Path, out: Path) -> bytes:
    """The file with its run-dependent fields blanked, its own output folder (base or main)
    written as <out>, and the renamed words read as the new ones."""
    data = path.read_bytes().replace(str(out).encode(), b"<out>")
    for old, new in RENAMED:
        data = data.replace(old, new)
    for pattern in VOLATILE:
        data = pattern.sub(b"<run-dependent>", data)
    return data


def compare(base: Path, main: Path) -> int:
    files = sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())
    theirs = {p.relative_to(main) for p in main.rglob("*") if p.is_file()}
    only = sorted(set(files) ^ theirs)
    same = blanked_same = 0
    differ = []
    for rel in files:
        if rel not in theirs:
            continue
        if filecmp.cmp(base / rel, main / rel, shallow=False):
            same += 1
        elif blanked(base / rel, base) == blanked(main / rel, main):
            blanked_same += 1
        else:
            differ.append(rel)
    print(f"{len(files)} files: {same} byte-identical, {blanked_same} identical once the "
          f"run-dependent fields are blanked (and the renamed words read as the new), {len(differ)} different, {len(only)} in one only")
    for rel in only:
        print(f"  only in {'base' if (base / rel).exists() else 'main'}: {rel}")
    for rel in differ:
        print(f"  differs: {rel}")
    return 1 if differ or only else 0


def median_wall(cmd: list) -> float:
    t0 = time.perf_counter()
    r = run(cmd)
    if r.returncode != 0:
        sys.exit(f"compare_builds: {cmd[0]} failed: {r.stderr.decode(errors='replace')[-300:]}")
    return (time.perf_counter() - t0) * 1e3


def online_cpu_ms(build: Path, ranks: int) -> float:
    r = run([tool(build, "sp_bench_online_analysis"), "--layout", "pp", "--ranks", ranks,
             "--measure", 7])
    # The bench's table row for the size ("| dp x pp | 512 (64 x 8, 8) | nodes | 34.7 ms | ..."):
    # its "analysis CPU" column, the median measured step.
    for line in r.stdout.decode().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[1].startswith(f"{ranks} ("):
            m = re.fullmatch(r"([0-9.]+) ms", cells[3])
            if m:
                return float(m.group(1))
    sys.exit(f"compare_builds: no {ranks}-rank row in the online bench's output:\n"
             + r.stdout.decode()[-800:])


def speed(base: Path, main: Path, out: Path, reps: int) -> None:
    rows = []
    for trace in ("SE", "ST"):
        times = {"base": [], "main": []}
        for _ in range(reps):
            for name, build in (("base", base), ("main", main)):
                times[name].append(median_wall(
                    [tool(build, "straggler-probe"), "analyze", "--trace",
                     DATA / trace / "trace.csv.gz", "--meta", DATA / trace / "meta.yaml",
                     "--out", out / "speed" / name / trace]))
        rows.append((f"`analyze` {trace}, median of {reps} (wall, whole process)",
                     f"{statistics.median(times['base']):.1f} ms",
                     f"{statistics.median(times['main']):.1f} ms"))
    for ranks in (512, 4096):
        got = {"base": [], "main": []}
        for _ in range(2):
            for name, build in (("base", base), ("main", main)):
                got[name].append(online_cpu_ms(build, ranks))
        rows.append((f"online step, {ranks} ranks (pp 8), analysis CPU, run 1 / 2",
                     " / ".join(f"{v:.1f}" for v in got["base"]) + " ms",
                     " / ".join(f"{v:.1f}" for v in got["main"]) + " ms"))
    print("| what | base | main |\n| --- | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("main", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--compare-only", action="store_true",
                    help="compare the outputs already in OUT (after editing RENAMED, say)")
    a = ap.parse_args()
    a.out = a.out.resolve()
    if not a.compare_only:
        shutil.rmtree(a.out, ignore_errors=True)
        outputs(a.base.resolve(), a.out / "base")
        outputs(a.main.resolve(), a.out / "main")
    status = compare(a.out / "base", a.out / "main")
    if a.speed:
        speed(a.base.resolve(), a.main.resolve(), a.out, a.reps)
    return status


if __name__ == "__main__":
    sys.exit(main())
