#!/usr/bin/env bash
# The main job: a 4-rank CPU training run (a small GPT on synthetic data, DDP over gloo) with an
# injected straggler (rank 2, 30% slower). Shows rank 0's straggler_probe line for every step,
# then the report. Extra arguments go to examples/gpt_demo.py (e.g. --slow-rank -1, --steps 100).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "demo: building (Release) ..."
mkdir -p build
if ! ./scripts/build.sh --target sp_python_modules >build/demo-build.log 2>&1; then
  tail -40 build/demo-build.log >&2
  echo "demo: the build failed (full log: build/demo-build.log)" >&2
  exit 1
fi
out=sp-out-demo
rm -rf "$out"
# One thread per rank: four ranks share this machine's cores.
PYTHONPATH="$PWD/build/python" OMP_NUM_THREADS=1 \
  .venv/bin/torchrun --standalone --nproc_per_node 4 examples/gpt_demo.py --out "$out" "$@"
echo
.venv/bin/python examples/show_report.py "$out"
