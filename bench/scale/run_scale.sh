#!/usr/bin/env bash
# The scale harness's table (bench/README.md): N = 64, 512, 4096 ranks (dp x 8 stages, 8
# micro-batches, 8 ranks per host, 1 s steps) through the host-aggregated transport, 64 and 512
# through the per-rank fallback, and the bytes per rank and step. Each run goes to
# OUT/<name>/row.json; a summary table is printed at the end.
#
# As root it runs inside a fresh network namespace with only loopback: the TCPStore server looks
# up every client's host name, and without a reachable DNS server each lookup waits out the
# resolver's timeout (5 s) unless the network is unreachable at once. Run it under the shared
# lock: flock /tmp/sp-heavy.lock bench/scale/run_scale.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/bench/scale/sp_scale_bench}
OUT=${1:-build/bench/scale/out}
STEPS=${STEPS:-12}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "run_scale.sh: build $BIN first (scripts/build.sh --target sp_scale_bench)" >&2; exit 1; }

NS=""
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add "sp_scale_$$" 2>/dev/null; then
  NS="sp_scale_$$"
  ip -n "$NS" link set lo up
  trap 'ip netns del "$NS"' EXIT
fi
run() {  # name, then sp_scale_bench arguments
  local name=$1; shift
  echo "run_scale.sh: $name" >&2
  rm -rf "${OUT:?}/$name"
  if [ -n "$NS" ]; then ip netns exec "$NS" "$BIN" "$@" --out "$OUT/$name" >/dev/null
  else "$BIN" "$@" --out "$OUT/$name" >/dev/null; fi
}

run host-64 run --dp 8 --pp 8 --steps "$STEPS"
run host-512 run --dp 64 --pp 8 --steps "$STEPS"
run host-4096 run --dp 512 --pp 8 --steps "$STEPS" --procs 8
# The same with rank 0 alone on the last core (the simulated ranks and the store on the others): a
# real rank 0 shares its host with its own training, not with 4095 simulated ranks.
if [ "$(nproc)" -ge 2 ]; then
  run host-4096-own-core run --dp 512 --pp 8 --steps "${OWN_CORE_STEPS:-30}" --procs 8 --rank0-core "$(($(nproc) - 1))"
fi
run rank-64 run --dp 8 --pp 8 --steps "$STEPS" --protocol rank
run rank-512 run --dp 64 --pp 8 --steps "$STEPS" --protocol rank
"$BIN" bytes --dp 512 --pp 8 --steps 4 > "$OUT/bytes-cpu.json"
"$BIN" bytes --dp 512 --pp 8 --steps 4 --gpu > "$OUT/bytes-gpu.json"
.venv/bin/python bench/scale/table.py "$OUT"
