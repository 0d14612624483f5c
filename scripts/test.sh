#!/usr/bin/env bash
# All the tests: the C++ GoogleTest suites through CTest, then the Python suites (pytest, incl.
# the 4-process training jobs). Exits non-zero if anything fails, including pytest finding no
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
if [ "$rc" -ne 0 ]; then
  [ "$rc" -eq 5 ] && echo "test.sh: pytest collected no tests" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "test.sh: all tests passed" || echo "test.sh: FAILED" >&2
exit "$status"
