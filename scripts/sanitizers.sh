#!/usr/bin/env bash
# The C++ suites under sanitizers, each in a build directory of its own (tests/fuzz/README.md).
#
#   scripts/sanitizers.sh            CI's share (scripts/test.sh runs it):
#       asan  ASan + UBSan: the fuzzers of every decoder that reads another process's bytes
#             (fuzz_tests, 10,000+ cases each), the runtime (rings, queue, codec, C ABI) and
#             rank_pipeline (wire formats, transport, hang watch, clock sync, the HTTP server's
#             request parser)
#       tsan  ThreadSanitizer: the runtime's rings, queue and consumer thread, and
#             rank_pipeline's transport threads (host leader, members, analysis worker) and the
#             metrics/status server's thread
#   scripts/sanitizers.sh --all      every C++ suite under ASan + UBSan, then the TSan share
#   scripts/sanitizers.sh asan|tsan  one of the two (with --all: every suite for asan)
#
# Each build is Release (-O3, the code users run) with -g1 and frame pointers; every UBSan report
# is fatal. Exits non-zero if a build or a test fails; the fuzzers' case counts are in the log
# ("fuzz: decoder ...").
set -uo pipefail
cd "$(dirname "$0")/.."

all=0
modes=()
for a in "$@"; do
  case "$a" in
    --all) all=1 ;;
    asan|tsan) modes+=("$a") ;;
    *) echo "sanitizers.sh: unknown argument '$a' (expected asan, tsan or --all)" >&2; exit 2 ;;
  esac
done
((${#modes[@]})) || modes=(asan tsan)

jobs=$(nproc)
status=0

# The build's output goes to DIR/build.log; its tail is printed when it fails.
build() {  # dir targets...
  local dir=$1; shift
  cmake --build "$dir" -j"$jobs" --target "$@" >"$dir/build.log" 2>&1 \
    || { tail -n 40 "$dir/build.log" >&2; return 1; }
}

configure() {  # dir sanitizers
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSP_SANITIZE="$2" \
        -DSP_BUILD_PYTHON=OFF -DSP_BUILD_BENCH=OFF >/dev/null
}

# The summary of a ctest run; on failure every line but the passes (the failures' output).
report() {  # dir rc
  if [ "$2" -ne 0 ]; then grep -v " Passed " "$1/ctest.log"; else
    grep -E "tests passed|did not run|\(Skipped\)" "$1/ctest.log"; fi
}

run_asan() {
  local dir=build-asan targets=(fuzz_tests runtime_tests rank_pipeline_tests rank_pipeline_http_tests)
  local filter='^(fuzz_|runtime_|rank_pipeline_)'
  if ((all)); then targets=(all); filter='.'; fi
  echo "sanitizers: ASan + UBSan: building ${targets[*]}"
  configure "$dir" "address,undefined" && build "$dir" "${targets[@]}" \
    || { echo "sanitizers: the ASan build failed" >&2; return 1; }
  # detect_leaks: the suites start and stop the probe many times; a leak is a finding.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "$filter" \
          -O "$dir/ctest.log" >/dev/null
  local rc=$?
  report "$dir" "$rc"
  # The fuzzers print one line per decoder; ctest keeps them in its log.
  grep -h "fuzz: decoder" "$dir/Testing/Temporary/LastTest.log" | sort -u || true
  return "$rc"
}

run_tsan() {
  local dir=build-tsan
  # The threads: the runtime's SPSC rings, the summary queue and its consumer thread, the C ABI
  # used from several threads; rank_pipeline's transport, host leader and members, hang watch.
  local filter='^(runtime_|rank_pipeline_)'
  local targets=(runtime_tests rank_pipeline_tests rank_pipeline_http_tests)
  echo "sanitizers: ThreadSanitizer: building ${targets[*]}"
  configure "$dir" "thread" && build "$dir" "${targets[@]}" \
    || { echo "sanitizers: the TSan build failed" >&2; return 1; }
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "$filter" -O "$dir/ctest.log" >/dev/null
  local rc=$?
  report "$dir" "$rc"
  return "$rc"
}

for m in "${modes[@]}"; do
  "run_$m" || { echo "sanitizers: $m FAILED" >&2; status=1; }
done
[ "$status" -eq 0 ] && echo "sanitizers: all passed (${modes[*]})"
exit "$status"
