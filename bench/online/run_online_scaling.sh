#!/usr/bin/env bash
# Rank 0's per-step online analysis, 64 to 4096 ranks (bench/README.md, "Online analysis"):
# 1. CPU and wall time and phases per step (sp_bench_online_analysis), then allocations and
#    memory per step (sp_bench_online_memory, the same with the counting allocator);
# 2. with --callgrind, the instructions of one analysed step under callgrind for each size
#    (repeatable on a shared machine, unlike times), and their growth exponent.
# Extra arguments go to the benchmark: e.g. --noise off (the noise model is on by default),
# --layout pp --ranks 512,4096; with --callgrind, SP_CALLGRIND_LAYOUTS="pp" and
# SP_CALLGRIND_RANKS="512 4096" pick the cells.
# Build directory: $SP_BENCH_BUILD_DIR, default build-bench/ at the repository root.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SP_BENCH_BUILD_DIR:-$root/build-bench}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSP_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j"${SP_BENCH_JOBS:-2}" --target sp_bench_online_analysis sp_bench_online_memory >/dev/null
bench=$build/bench/online/sp_bench_online_analysis

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(date -u +%Y-%m-%d)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ "${1:-}" != "--callgrind" ]]; then
  "$bench" "$@"
  "$build/bench/online/sp_bench_online_memory" --measure 2 "$@"
  exit 0
fi
shift
# One measured step per size after a full window (20 steps, not instrumented).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| layout | ranks | instructions per step | op model | ideals | what-if metrics | noise window | noise tests |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
phase() {  # inclusive instructions of one function in the measured step
  callgrind_annotate --inclusive=yes "$tmp/cg.out" 2>/dev/null | grep -m1 "$1" | awk '{print $1}'
}
declare -A first
for layout in ${SP_CALLGRIND_LAYOUTS:-dp pp}; do
  for n in ${SP_CALLGRIND_RANKS:-64 128 256 512 1024 2048 4096}; do
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg.out" \
      "$bench" --layout "$layout" --ranks "$n" --measure 1 --callgrind "$@" >/dev/null 2>"$tmp/log"
    ir=$(grep -m1 '^totals:' "$tmp/cg.out" | awk '{print $2}')
    echo "| $([[ $layout == pp ]] && echo 'dp x pp' || echo dp) | $n | $ir | $(phase 'sp::online::build_step_model(') | $(phase 'sp::online::IdealWindow::ideals(') | $(phase 'sp::online::SlowdownAnalysis::compute(') | $(phase 'sp::online::NoiseWindow::push(') | $(phase 'sp::online::NoiseVerdict::judge(') |"
  done
done
