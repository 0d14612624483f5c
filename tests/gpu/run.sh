#!/usr/bin/env bash
# The probe's GPU checks, for one lent GPU (the `device` tool), in one run of under 8 minutes:
#   1. the library: the carried build (build-gpu/runtime/libstraggler_probe.so, or $SP_LIB), else
#      built here (needs the project's build dependencies on the machine);
#   2. CUPTI kernel times against CUDA events around the same GEMMs: within 1%;
#   3. NCCL collectives at world size 1 under LD_PRELOAD: recorded with GPU times (CUDA events),
#      NCCL kernels seen by CUPTI; then the same through NCCL_PROFILER_PLUGIN (informational);
#   4. the probe's overhead on a GPT-style training step (DDP, bf16): base and probe runs
#      alternated, target <= 1% of the step time.
# Prints every figure; with $OUT set also writes $OUT/gpu_figures.json and $OUT/gpu_checks.log.
# Exit status: the number of failed checks (0 = all passed).
# SP_GPU_CHECK_CPU_SMOKE=1 runs the whole flow on a machine without a GPU (tiny CPU shapes, no
# GPU assertions), to check the script itself.
#
# Carry the library when calling the device tool, e.g.
#   run(command="bash tests/gpu/run.sh", carry=["build-gpu/runtime/libstraggler_probe.so"])
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${PYTHON:-python3}
OUTDIR=${OUT:-/tmp/sp-gpu-out}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/gpu_checks.log
: >"$LOG"
START=$(date +%s)
failures=0
declare -A FIG

say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }

# run_check <name> <timeout s> <command...>: runs, keeps its RESULT line in FIG[name].
run_check() {
  local name=$1 limit=$2
  shift 2
  local out rc
  out=$(timeout "$limit" "$@" 2>&1)
  rc=$?
  echo "$out" >>"$LOG"
  FIG[$name]=$(echo "$out" | grep '^RESULT ' | tail -1 | cut -c8-)
  if [ $rc -eq 124 ]; then say "$name: TIMEOUT after ${limit}s"; fi
  echo "$out" | grep -E '^RESULT |straggler_probe\] warning|Error|error:' | cut -c1-1500
  return $rc
}

SMOKE=()
if [ "${SP_GPU_CHECK_CPU_SMOKE:-0}" = 1 ]; then
  SMOKE=(--cpu-smoke)
  PY=${PYTHON:-$ROOT/.venv/bin/python}
  say "CPU smoke run: the flow only, no GPU figures"
fi

# ---- 0. the machine ---------------------------------------------------------------------------
if [ ${#SMOKE[@]} -eq 0 ] && ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"; then
  say "no GPU visible: nothing to check"
  exit 2
fi
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpu", torch.cuda.is_available())' 2>&1 | tee -a "$LOG"

# ---- 1. the library ---------------------------------------------------------------------------
LIB=${SP_LIB:-}
if [ -z "$LIB" ]; then
  for c in build-gpu/runtime/libstraggler_probe.so build/runtime/libstraggler_probe.so; do
    if [ -f "$c" ]; then LIB=$ROOT/$c; break; fi
  done
fi
if [ -n "$LIB" ]; then
  say "using the carried library $LIB"
else
  say "no carried library: building libstraggler_probe.so here"
  PYBIND_DIR=$($PY -m pybind11 --cmakedir 2>/dev/null || true)
  if timeout 240 cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DSP_BUILD_TESTS=OFF -DSP_BUILD_BENCH=OFF -DSP_BUILD_PYTHON=OFF \
       ${PYBIND_DIR:+-Dpybind11_DIR=$PYBIND_DIR} >>"$LOG" 2>&1 &&
     timeout 240 cmake --build build-device -j16 --target straggler_probe >>"$LOG" 2>&1; then
    LIB=$ROOT/build-device/runtime/libstraggler_probe.so
  else
    say "build failed (see $LOG); carry build-gpu/runtime/libstraggler_probe.so instead"
    tail -20 "$LOG"
    exit 3
  fi
fi
ldd "$LIB" | tee -a "$LOG"
export SP_LIB=$LIB
CHECKS=tests/gpu/gpu_checks.py

# ---- 2. CUPTI vs CUDA events ------------------------------------------------------------------
say "CUPTI kernel times vs CUDA events"
if ! run_check cupti 120 env LD_PRELOAD="$LIB" "$PY" "$CHECKS" cupti --iters 40 "${SMOKE[@]}"; then
  failures=$((failures + 1)); say "FAIL cupti"
fi

# ---- 3. NCCL at world size 1 ------------------------------------------------------------------
say "NCCL all-reduce at world size 1 (interposer, LD_PRELOAD)"
if ! run_check nccl 120 env LD_PRELOAD="$LIB" "$PY" "$CHECKS" nccl --iters 20 "${SMOKE[@]}"; then
  failures=$((failures + 1)); say "FAIL nccl"
fi
say "NCCL all-reduce at world size 1 (NCCL_PROFILER_PLUGIN)"
run_check nccl_plugin 120 env NCCL_PROFILER_PLUGIN="$LIB" "$PY" "$CHECKS" nccl-plugin --iters 20 "${SMOKE[@]}" ||
  say "nccl-plugin did not complete (informational)"

# ---- 4. overhead on a GPT-style step ----------------------------------------------------------
say "GPT-style step: base / probe, alternated"
base_ms=() probe_ms=()
for rep in 1 2; do
  if run_check "gpt_base_$rep" 90 "$PY" "$CHECKS" gpt --warmup 8 --steps 30 "${SMOKE[@]}"; then
    base_ms+=("$(echo "${FIG[gpt_base_$rep]}" | $PY -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
  fi
  if run_check "gpt_probe_$rep" 90 env LD_PRELOAD="$LIB" "$PY" "$CHECKS" gpt --probe --warmup 8 --steps 30 "${SMOKE[@]}"; then
    probe_ms+=("$(echo "${FIG[gpt_probe_$rep]}" | $PY -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
  fi
done
overhead=$($PY - "${base_ms[*]:-}" "${probe_ms[*]:-}" <<'PYEOF'
import sys
base = [float(x) for x in sys.argv[1].split()]
probe = [float(x) for x in sys.argv[2].split()]
if not base or not probe:
    print("nan")
else:
    b, p = min(base), min(probe)
    print(f"{(p - b) / b * 100:.3f}")
PYEOF
)
say "GPT step median ms: base ${base_ms[*]:-none}, probe ${probe_ms[*]:-none}: overhead ${overhead}% (target <= 1%)"
if [ ${#SMOKE[@]} -gt 0 ]; then
  say "(CPU smoke: overhead not judged)"
elif [ "$overhead" = nan ] || $PY -c "import sys; sys.exit(0 if float('$overhead') <= 1.0 else 1)"; then
  [ "$overhead" = nan ] && { failures=$((failures + 1)); say "FAIL gpt: no figures"; }
else
  failures=$((failures + 1)); say "FAIL overhead ${overhead}% > 1%"
fi

# ---- figures ----------------------------------------------------------------------------------
{
  echo "{"
  echo "  \"overhead_percent\": \"$overhead\","
  echo "  \"gpt_base_median_ms\": \"${base_ms[*]:-}\","
  echo "  \"gpt_probe_median_ms\": \"${probe_ms[*]:-}\","
  first=1
  for k in "${!FIG[@]}"; do
    [ -n "${FIG[$k]}" ] || continue
    echo "  \"$k\": ${FIG[$k]},"
  done
  echo "  \"failures\": $failures, \"seconds\": $(($(date +%s) - START))"
  echo "}"
} >"$OUTDIR/gpu_figures.json"
say "figures in $OUTDIR/gpu_figures.json; $failures check(s) failed"
cat "$OUTDIR/gpu_figures.json" | cut -c1-3000
exit $failures
