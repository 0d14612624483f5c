#!/usr/bin/env bash
# Builds the benchmarks (Release) and prints their tables: the full what-if analysis on the
# reference traces (speedup over the paper artifact's Python) and on synthetic jobs up to
# 4096 GPUs. Arguments are passed to sp_bench_analysis (e.g. --skip-scale, --dp 64).
# Build directory: $SP_BENCH_BUILD_DIR, default build-bench/ at the repository root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SP_BENCH_BUILD_DIR:-$root/build-bench}
jobs=${SP_BENCH_JOBS:-2}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DSP_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target sp_bench_analysis sp_gen_trace >/dev/null

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%Y-%m-%d)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$build/bench/sp_bench_analysis" "$@"
