#!/usr/bin/env bash
# The device check rehearsed here, on a machine without a GPU, with Debian's dev packages hidden:
# a private mount namespace (unshare -m) binds empty directories over their include and CMake
# directories (and empty files over zlib.h / zconf.h), so the configure and the build can only
# succeed through .gpu-stage/prefix, exactly as on the bare device image; then run.sh runs its
# whole flow as a CPU smoke (SP_GPU_CHECK_CPU_SMOKE=1: tiny CPU shapes, gloo, no GPU asserts).
# Figures land in sp-out-rehearsal/ (git-ignored). Needs root (unshare, mount). Takes long on 2
# cores (a fresh build of the library and the package).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -d .gpu-stage ] || tests/gpu/prepare.sh
exec unshare -m bash -euo pipefail -c '
  empty=$(mktemp -d)
  blank=$(mktemp)
  hidden=0
  for d in /usr/include/spdlog /usr/include/fmt /usr/include/nlohmann /usr/include/CLI \
           /usr/include/gtest /usr/include/gmock /usr/lib/x86_64-linux-gnu/cmake/spdlog \
           /usr/lib/x86_64-linux-gnu/cmake/fmt /usr/lib/x86_64-linux-gnu/cmake/GTest \
           /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11; do
    if [ -d "$d" ]; then mount --bind "$empty" "$d"; hidden=$((hidden + 1)); fi
  done
  for f in /usr/include/zlib.h /usr/include/zconf.h; do
    if [ -f "$f" ]; then mount --bind "$blank" "$f"; hidden=$((hidden + 1)); fi
  done
  test ! -e /usr/include/spdlog/spdlog.h && test ! -s /usr/include/zlib.h
  echo "[rehearse] $hidden Debian dev package paths hidden; building with .gpu-stage/ only"
  rm -rf build-device sp-out-rehearsal
  SP_GPU_CHECK_CPU_SMOKE=1 SP_GPU_TIME_SCALE=${SP_GPU_TIME_SCALE:-10} PYTHON="$PWD/.venv/bin/python" OUT="$PWD/sp-out-rehearsal" \
    SP_GPU_BUILD_TIMEOUT=${SP_GPU_BUILD_TIMEOUT:-2400} bash tests/gpu/run.sh
'
