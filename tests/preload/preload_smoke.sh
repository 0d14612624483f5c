#!/usr/bin/env bash
# LD_PRELOAD of the real libstraggler_probe.so into processes that were never changed for it, on a
# machine without a CUDA driver: each must exit 0 with its normal output, print at most one
# warning of ours, and print nothing at all when it is not a training rank.
#   preload_smoke.sh <libstraggler_probe.so> <plain_program> <nccl_program> [venv python]
set -u
LIB=$1 PLAIN=$2 NCCLPROG=$3 VENV_PY=${4:-}
failures=0

# run <label> <rank|norank> <expected stdout substring> <command...>
run() {
  local label=$1 mode=$2 expect=$3
  shift 3
  local out err rc
  out=$(mktemp) err=$(mktemp)
  if [ "$mode" = rank ]; then
    env LD_PRELOAD="$LIB" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "$@" >"$out" 2>"$err"
  else
    env -u RANK -u WORLD_SIZE LD_PRELOAD="$LIB" "$@" >"$out" 2>"$err"
  fi
  rc=$?
  local ours warnings
  ours=$(grep -c '\[straggler_probe\]' "$err")
  warnings=$(grep -ci '\[straggler_probe\].*warn' "$err")
  local verdict=ok
  if [ $rc -ne 0 ]; then verdict="exit code $rc"; fi
  if [ -n "$expect" ] && ! grep -q -- "$expect" "$out"; then verdict="output lacks '$expect'"; fi
  if [ "$mode" = norank ] && [ "$ours" -ne 0 ]; then verdict="not silent ($ours lines)"; fi
  if [ "$warnings" -gt 1 ]; then verdict="$warnings warnings"; fi
  if [ "$verdict" != ok ]; then
    failures=$((failures + 1))
    echo "FAIL $label ($mode): $verdict"
    sed 's/^/  stderr: /' "$err" | head -20
  else
    echo "ok   $label ($mode): $ours probe line(s), $warnings warning(s)"
  fi
  rm -f "$out" "$err"
}

for mode in norank rank; do
  run "plain C program" $mode "plain ok" "$PLAIN"
  run "/bin/true" $mode "" /bin/true
  run "NCCL program (fake NCCL)" $mode "nccl ok" "$NCCLPROG"
  if command -v python3 >/dev/null; then
    run "python3" $mode "py ok" python3 -c 'print("py ok")'
  fi
  if [ -n "$VENV_PY" ] && [ -x "$VENV_PY" ] && "$VENV_PY" -c 'import torch' 2>/dev/null; then
    run "python + torch" $mode "8.0" "$VENV_PY" -c \
      'import torch; x = torch.ones(4) * 2; print(float(x.sum())); print(torch.cuda.is_available())'
    # torch has loaded CUPTI: starting GPU capture must refuse it before any CUPTI call (some
    # CUPTI releases crash without a driver) and say so once. (Asked for explicitly, so it may
    # speak even outside a rank: run in rank mode only.)
    # The autoload hands CUPTI to torch.profiler sessions (pause/resume around profile.start/stop).
    [ "$mode" = rank ] && run "python + torch.profiler (autoload hook)" $mode "profiled 24.0 True" \
      "$VENV_PY" -c 'import torch, torch.profiler as tp
with tp.profile(activities=[tp.ProfilerActivity.CPU]):
    x = torch.ones(8) * 3
print("profiled", float(x.sum()), getattr(tp.profile.start, "_straggler_probe_autoload", False))'
    [ "$mode" = rank ] && run "python + torch, GPU capture asked for" $mode "start 1" env SP_LIB="$LIB" "$VENV_PY" -c \
      'import os, ctypes, torch; l = ctypes.CDLL(os.environ["SP_LIB"]); print("start", l.sp_cupti_start()); l.sp_cupti_region_push(1, 0, 0); l.sp_cupti_region_pop()'
  fi
done
exit $failures
