#!/usr/bin/env bash
# The probe's GPU checks on a lent, bare, offline GPU machine, in ONE device command (10 minutes
# at most; the timeouts below add up to 570 s: machine 30, configure 60, build 150, three C-ABI
# checks 50 each, gpt 80, overhead 100). Uses only .gpu-stage/ (made here by
# tests/gpu/prepare.sh, carried by the device tool) and the machine's image (nvcc, CMake, ninja,
# python3 with torch, pybind11): no Debian dev packages, no network, no .venv. See README.md.
#
#   0. the machine (GPU, driver, torch, NCCL)
#   1. build, for the machine's python3: libstraggler_probe.so and the package (_core, _c10d)
#      against .gpu-stage/prefix; if that fails, the carried .gpu-stage/lib/libstraggler_probe.so
#      still runs the C-ABI checks (the package checks are then "skipped")
#   2. cupti        CUPTI vs CUDA events, kernels attributed to regions     (gpu_checks.py)
#   3. nccl         NCCL at world size 1 through the interposer             (gpu_checks.py)
#   4. nccl-plugin  the same library as NCCL_PROFILER_PLUGIN                (gpu_checks.py)
#   5. gpt          straggler_probe.init() + a torch.profiler session        (gpt_checks.py)
#   6. overhead     probe on/off interleaved in blocks, ratio + 95% CI       (gpt_checks.py)
#
# $OUT/gpu_figures.json is rewritten after every step (a hang still returns what came before);
# $OUT/gpu_checks.log has every line. Exit status: the number of failed checks.
# SP_GPU_CHECK_CPU_SMOKE=1 runs the same flow without a GPU (tiny CPU shapes, no GPU asserts).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
STAGE=$ROOT/.gpu-stage
PREFIX=$STAGE/prefix/usr
ARCH_LIB=$PREFIX/lib/x86_64-linux-gnu
BUILD=$ROOT/build-device
OUTDIR=${OUT:-/tmp/sp-gpu-out}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/gpu_checks.log
FIGS=$OUTDIR/gpu_figures.json
PY=${PYTHON:-python3}
SMOKE=${SP_GPU_CHECK_CPU_SMOKE:-0}
SMOKE_ARG=()
[ "$SMOKE" = 1 ] && SMOKE_ARG=(--cpu-smoke)
START=$(date +%s)
: >"$LOG"
export PYTHONUNBUFFERED=1

say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
figure() { "$PY" tests/gpu/figures.py "$FIGS" add "$@"; }
"$PY" tests/gpu/figures.py "$FIGS" start

# run_check NAME TIMEOUT_S CMD...: runs it, files its RESULT line under NAME.
run_check() {
  local name=$1 limit=$2 out rc status
  shift 2
  say "$name (at most ${limit}s)"
  out=$(timeout -k 5 "$limit" "$@" 2>&1)
  rc=$?
  echo "$out" >>"$LOG"
  local res
  res=$(echo "$out" | grep '^RESULT ' | tail -1 | cut -c8-)
  case $rc in
    0) status=pass ;;
    1) status=fail ;;
    2) status=skipped ;;
    124 | 137) status=timeout ;;
    *) status=error ;;
  esac
  [ -z "$res" ] && res=$(echo "$out" | tail -15)
  figure "$name" "$status" "$res"
  say "$name: $status"
  echo "$out" | grep -E '^RESULT |straggler_probe\] warning|Error|error:' | cut -c1-1200
}

# ---- 0. the machine ----------------------------------------------------------------------------
[ -d "$STAGE" ] || { say "no .gpu-stage/: run tests/gpu/prepare.sh here and carry it"; exit 3; }
if [ "$SMOKE" != 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1 ||
    { say "no GPU visible"; figure machine error "nvidia-smi failed"; exit 2; }
fi
machine=$(timeout 30 "$PY" - <<'EOF' 2>&1
import json, platform, torch
info = {"python": platform.python_version(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "gpu": torch.cuda.is_available()}
if torch.cuda.is_available():
    info.update(device=torch.cuda.get_device_name(0), nccl=".".join(map(str, torch.cuda.nccl.version())))
print(json.dumps(info))
EOF
)
figure machine pass "$(echo "$machine" | tail -1)"
say "machine: $(echo "$machine" | tail -1)"

# ---- 1. build for this machine's python3, against the staged prefix ----------------------------
LIB=$STAGE/lib/libstraggler_probe.so
PKG=""
BUILD_LIMIT=${SP_GPU_BUILD_TIMEOUT:-150}  # the rehearsal on 2 cores needs longer
say "build (at most $((60 + BUILD_LIMIT))s)"
pybind=$("$PY" -m pybind11 --cmakedir 2>/dev/null)
if timeout 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DSP_BUILD_TESTS=OFF -DSP_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$(command -v "$PY")" \
     ${pybind:+-Dpybind11_DIR=$pybind} -DCMAKE_PREFIX_PATH="$PREFIX" \
     -Dfmt_DIR="$ARCH_LIB/cmake/fmt" -Dspdlog_DIR="$ARCH_LIB/cmake/spdlog" \
     -Dnlohmann_json_DIR="$PREFIX/share/cmake/nlohmann_json" -DCLI11_DIR="$PREFIX/share/cmake/CLI11" \
     -DZLIB_INCLUDE_DIR="$PREFIX/include" -DZLIB_LIBRARY="$ARCH_LIB/libz.so" >>"$LOG" 2>&1 &&
   timeout "$BUILD_LIMIT" cmake --build "$BUILD" -j"$(nproc)" --target straggler_probe sp_python_modules \
     >>"$LOG" 2>&1; then
  LIB=$BUILD/runtime/libstraggler_probe.so
  PKG=$BUILD/python
  figure build pass "{\"library\": \"$LIB\", \"package\": \"$PKG\"}"
  say "built here: $LIB and the package in $PKG"
else
  figure build fail "$(grep -E 'error|Error|skipped' "$LOG" | tail -8)"
  say "build failed (see gpu_checks.log); the carried library runs the C-ABI checks"
fi
export SP_LIB=$LIB
ldd "$LIB" >>"$LOG" 2>&1

# ---- 2-4. the C ABI through ctypes -------------------------------------------------------------
run_check cupti 50 env LD_PRELOAD="$LIB" "$PY" tests/gpu/gpu_checks.py cupti --iters 40 "${SMOKE_ARG[@]}"
run_check nccl 50 env LD_PRELOAD="$LIB" "$PY" tests/gpu/gpu_checks.py nccl --iters 20 "${SMOKE_ARG[@]}"
run_check nccl-plugin 50 env NCCL_PROFILER_PLUGIN="$LIB" "$PY" tests/gpu/gpu_checks.py nccl-plugin \
  --iters 20 "${SMOKE_ARG[@]}"

# ---- 5-6. the package ---------------------------------------------------------------------------
if [ -n "$PKG" ]; then
  run_check gpt 80 env LD_PRELOAD="$LIB" PYTHONPATH="$PKG" "$PY" tests/gpu/gpt_checks.py gpt \
    --warmup 5 --steps 20 "${SMOKE_ARG[@]}"
  run_check overhead 100 env LD_PRELOAD="$LIB" PYTHONPATH="$PKG" "$PY" tests/gpu/gpt_checks.py \
    overhead --warmup 8 --blocks 10 --block-steps 10 "${SMOKE_ARG[@]}"
else
  figure gpt skipped "the package was not built for this python3 (see build)"
  figure overhead skipped "the package was not built for this python3 (see build)"
fi

# ---- figures ------------------------------------------------------------------------------------
say "figures in $FIGS:"
"$PY" tests/gpu/figures.py "$FIGS" summary | tee -a "$LOG"
failures=${PIPESTATUS[0]}
say "$failures check(s) failed; $(($(date +%s) - START)) s in all"
exit "$failures"
