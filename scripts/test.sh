#!/usr/bin/env bash
# All the tests: the C++ GoogleTest suites through CTest, then the Python suites (pytest, incl.
# the 4-process training jobs), then CI's share of the sanitizer runs (scripts/sanitizers.sh: the
# fuzzers and the runtime/pipeline suites under ASan + UBSan, their threads under TSan; set
# SP_SKIP_SANITIZERS=1 to leave them out of a local run). Exits non-zero if anything fails, including pytest finding no
# tests at all (its exit code 5 counts as a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit 1
./scripts/build.sh || exit 1

status=0
(cd build && ctest --output-on-failure -j"$(nproc)") || status=1

export STRAGGLER_PROBE_PYTHONPATH="$PWD/build/python"
if [ -x build/cli/straggler-probe ]; then
  export STRAGGLER_PROBE_CLI="$PWD/build/cli/straggler-probe"
fi
.venv/bin/python -m pytest -q tests/python
rc=$?
# The multi-process jobs measure real step times on whatever host runs them; on a shared 2-core
# machine one gloo hiccup can push a single step past a threshold. Failures (exit 1) get exactly
# one visible re-run of the failed tests; a test that fails twice fails the suite.
if [ "$rc" -eq 1 ]; then
  echo "test.sh: re-running the failed Python tests once (timing-sensitive multi-process jobs)" >&2
  .venv/bin/python -m pytest -q --last-failed --last-failed-no-failures none tests/python
  rc=$?
  [ "$rc" -eq 0 ] && echo "test.sh: WARNING: some Python tests passed only on the re-run" >&2
fi
if [ "$rc" -ne 0 ]; then
  [ "$rc" -eq 5 ] && echo "test.sh: pytest collected no tests" >&2
  status=1
fi
if [ "${SP_SKIP_SANITIZERS:-0}" != 1 ]; then
  ./scripts/sanitizers.sh || status=1
fi
[ "$status" -eq 0 ] && echo "test.sh: all tests passed" || echo "test.sh: FAILED" >&2
exit "$status"
