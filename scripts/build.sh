#!/usr/bin/env bash
# Configure and build straggler_probe into build/ (Release) with the project's virtualenv Python.
# Usage: scripts/build.sh [cmake --build arguments, e.g. --target sp_python_core]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build -j"$(nproc)" "$@"
