#!/usr/bin/env bash
# The probe's GPU checks on a lent, bare, offline GPU machine, in ONE device command of at most
# ~5 minutes: the timeouts on the serial path add up to 295 s (build 20 + 50, cupti 15, the
# parallel phase 25, gpt 35, overhead 90, live 60), so that a rerun still fits a 15-minute
# device budget. Uses only .gpu-stage/ (made here by tests/gpu/prepare.sh, carried by the device
# tool) and the machine's image (nvcc, CMake, ninja, python3 with torch, pybind11): no Debian dev
# packages, no network, no .venv. See README.md.
#
#   0. the machine (GPU, driver, torch, NCCL), while the build runs
#   1. build, for the machine's python3: libstraggler_probe.so and the package (_core, _c10d)
#      against .gpu-stage/prefix; if that fails, the carried .gpu-stage/lib/libstraggler_probe.so
#      still runs the C-ABI checks (the package checks are then "skipped")
#   2. cupti           kernels attributed per region (launch markers), CUPTI vs CUDA events
#   3. in parallel     cupti-external (the external-correlation mode, attribution only),
#                      nccl (interposer), nccl-plugin (profiler plugin)        (gpu_checks.py)
#   4. gpt             init() on the GPT under DDP: coverage, region times, torch.profiler,
#                      the clock after the take-back, DDP's comm hook          (gpt_checks.py)
#   5. overhead        separate processes A (never loaded) / B (probe) / C (external)
#                      interleaved, B/A with a 95% interval                    (overhead.py)
#   6. live            4 ranks on the GPU over gloo: a slow rank named, a clean twin (live.py)
#
# $OUT/gpu_figures.json is rewritten after every check (a hang still returns what came before);
# $OUT/gpu_checks.log has every line. Exit status: the number of failed checks.
# SP_GPU_CHECK_CPU_SMOKE=1 runs the same flow without a GPU (tiny CPU shapes, no GPU asserts);
# SP_GPU_TIME_SCALE multiplies every check's timeout (the rehearsal on 2 shared cores);
# SP_GPU_BUILD_TIMEOUT replaces the build's.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 3
ROOT=$PWD
STAGE=$ROOT/.gpu-stage
PREFIX=$STAGE/prefix/usr
ARCH_LIB=$PREFIX/lib/x86_64-linux-gnu
BUILD=$ROOT/build-device
OUTDIR=${OUT:-/tmp/sp-gpu-out}
mkdir -p "$OUTDIR"
export OUT=$OUTDIR
LOG=$OUTDIR/gpu_checks.log
FIGS=$OUTDIR/gpu_figures.json
TMPD=$(mktemp -d)
PY=${PYTHON:-python3}
SMOKE=${SP_GPU_CHECK_CPU_SMOKE:-0}
SCALE=${SP_GPU_TIME_SCALE:-1}
SMOKE_ARG=()
[ "$SMOKE" = 1 ] && SMOKE_ARG=(--cpu-smoke)
START=$(date +%s)
: >"$LOG"
export PYTHONUNBUFFERED=1
G=tests/gpu

say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
figure() { "$PY" $G/figures.py "$FIGS" add "$@"; }
limit() { echo $(($1 * SCALE)); }
"$PY" $G/figures.py "$FIGS" start smoke="$SMOKE" budget_s=295 || { echo "no python" >&2; exit 3; }

# file_check NAME RC OUTFILE SECONDS: files a finished check's RESULT line under NAME.
file_check() {
  local name=$1 rc=$2 out=$3 secs=$4 status
  cat "$out" >>"$LOG"
  grep '^RESULT ' "$out" | tail -1 | cut -c8- >"$out.result"
  case $rc in
    0) status=pass ;;
    1) status=fail ;;
    2) status=skipped ;;
    124 | 137) status=timeout ;;
    *) status=error ;;
  esac
  [ -s "$out.result" ] || tail -15 "$out" >"$out.result"
  figure "$name" "$status" "@$out.result" "$secs"
  say "$name: $status (${secs}s)"
  grep -E '^RESULT |straggler_probe\] (warning|error)|Traceback|Error' "$out" | cut -c1-1000 | head -12
}

# run_check NAME TIMEOUT_S CMD...: runs it now and files its RESULT line under NAME.
run_check() {
  local name=$1 lim t0 rc
  lim=$(limit "$2")
  shift 2
  say "$name (at most ${lim}s)"
  t0=$(date +%s)
  timeout -k 5 "$lim" "$@" >"$TMPD/$name.out" 2>&1
  rc=$?
  file_check "$name" "$rc" "$TMPD/$name.out" $(($(date +%s) - t0))
}

# start_check NAME TIMEOUT_S CMD... / finish_checks NAME...: checks that run side by side.
start_check() {
  local name=$1 lim
  lim=$(limit "$2")
  shift 2
  say "$name (at most ${lim}s, in parallel)"
  (t0=$(date +%s); timeout -k 5 "$lim" "$@" >"$TMPD/$name.out" 2>&1
   echo "$? $(($(date +%s) - t0))" >"$TMPD/$name.rc") &
}
finish_checks() {
  wait
  for name in "$@"; do
    read -r rc secs <"$TMPD/$name.rc"
    file_check "$name" "$rc" "$TMPD/$name.out" "$secs"
  done
}

# ---- 0 + 1. the machine, while the library and the package build for this python3 -----------
[ -d "$STAGE" ] || { say "no .gpu-stage/: run tests/gpu/prepare.sh here and carry it"; exit 3; }
if [ "$SMOKE" != 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1 ||
    { say "no GPU visible"; figure machine error "nvidia-smi failed"; exit 2; }
fi
(timeout 30 "$PY" - >"$TMPD/machine" 2>&1 <<'EOF'
import json, os, platform, torch
info = {"python": platform.python_version(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "gpu": torch.cuda.is_available(), "cpus": os.cpu_count()}
if torch.cuda.is_available():
    info.update(device=torch.cuda.get_device_name(0), gpus=torch.cuda.device_count(),
                nccl=".".join(map(str, torch.cuda.nccl.version())))
print(json.dumps(info))
EOF
) &
MACHINE_PID=$!

LIB=$STAGE/lib/libstraggler_probe.so
PKG=""
BUILD_LIMIT=${SP_GPU_BUILD_TIMEOUT:-50}
say "build (at most $((20 + BUILD_LIMIT))s)"
t0=$(date +%s)
pybind=$("$PY" -m pybind11 --cmakedir 2>/dev/null)
if timeout 20 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DSP_BUILD_TESTS=OFF -DSP_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$(command -v "$PY")" \
     ${pybind:+-Dpybind11_DIR=$pybind} -DCMAKE_PREFIX_PATH="$PREFIX" \
     -Dfmt_DIR="$ARCH_LIB/cmake/fmt" -Dspdlog_DIR="$ARCH_LIB/cmake/spdlog" \
     -Dnlohmann_json_DIR="$PREFIX/share/cmake/nlohmann_json" -DCLI11_DIR="$PREFIX/share/cmake/CLI11" \
     -DZLIB_INCLUDE_DIR="$PREFIX/include" -DZLIB_LIBRARY="$ARCH_LIB/libz.so" >>"$LOG" 2>&1 &&
   timeout "$BUILD_LIMIT" cmake --build "$BUILD" -j"$(nproc)" --target straggler_probe sp_python_modules \
     >>"$LOG" 2>&1; then
  LIB=$BUILD/runtime/libstraggler_probe.so
  PKG=$BUILD/python
  figure build pass "{\"library\": \"$LIB\", \"package\": \"$PKG\"}" $(($(date +%s) - t0))
  say "built here: $LIB and the package in $PKG"
else
  figure build fail "$(grep -E 'error|Error|skipped' "$LOG" | tail -8)" $(($(date +%s) - t0))
  say "build failed (see gpu_checks.log); the carried library runs the C-ABI checks"
fi
wait "$MACHINE_PID"
figure machine pass "$(tail -1 "$TMPD/machine")"
say "machine: $(tail -1 "$TMPD/machine")"
export SP_LIB=$LIB SP_PKG=$PKG
ldd "$LIB" >>"$LOG" 2>&1

# ---- 2. cupti alone (its 1% timing needs a quiet GPU) -------------------------------------------
run_check cupti 15 env LD_PRELOAD="$LIB" "$PY" $G/gpu_checks.py cupti --iters 100 "${SMOKE_ARG[@]}"

# ---- 3. side by side: the external-correlation cross-check (attribution asserted, its timing
#         only reported), the interposer, the profiler plugin ---------------------------------------
start_check cupti-external 25 env LD_PRELOAD="$LIB" STRAGGLER_PROBE_CUPTI_ATTRIBUTION=external \
  "$PY" $G/gpu_checks.py cupti-external --iters 100 --no-timing-assert "${SMOKE_ARG[@]}"
start_check nccl 25 env LD_PRELOAD="$LIB" "$PY" $G/gpu_checks.py nccl --iters 20 "${SMOKE_ARG[@]}"
start_check nccl-plugin 25 env NCCL_PROFILER_PLUGIN="$LIB" STRAGGLER_PROBE_LOG_LEVEL=info \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,PROFILE \
  "$PY" $G/gpu_checks.py nccl-plugin --iters 20 --rank-timeout 20 "${SMOKE_ARG[@]}"
finish_checks cupti-external nccl nccl-plugin

# ---- 4-6. the package ---------------------------------------------------------------------------
if [ -n "$PKG" ]; then
  run_check gpt 35 env LD_PRELOAD="$LIB" PYTHONPATH="$PKG" "$PY" $G/gpt_checks.py gpt \
    "${SMOKE_ARG[@]}"
  if [ "$SMOKE" = 1 ]; then
    OVERHEAD_ARGS=(--rounds 2 --min-rounds 2 --warmup 2 --steps 4 --budget-s $((80 * SCALE))
                   --slot-limit-s $((25 * SCALE)) --first-estimate-s 10)
    LIVE_ARGS=(--steps 14 --from-step 4 --job-timeout $((27 * SCALE)))
  else
    OVERHEAD_ARGS=(--rounds 8 --min-rounds 6 --warmup 10 --steps 30 --budget-s 82)
    LIVE_ARGS=(--steps 36 --from-step 10 --job-timeout 27)
  fi
  run_check overhead 90 "$PY" $G/overhead.py run "${OVERHEAD_ARGS[@]}" "${SMOKE_ARG[@]}"
  run_check live 60 "$PY" $G/live.py run "${LIVE_ARGS[@]}" "${SMOKE_ARG[@]}"
else
  for c in gpt overhead live; do
    figure $c skipped "the package was not built for this python3 (see build)"
  done
fi

# ---- figures ------------------------------------------------------------------------------------
say "figures in $FIGS:"
"$PY" $G/figures.py "$FIGS" summary | tee -a "$LOG"
failures=${PIPESTATUS[0]}
rm -rf "$TMPD"
say "$failures check(s) failed; $(($(date +%s) - START)) s in all"
exit "$failures"
