#!/bin/sh
# `straggler-probe analyze-dir` on the per-rank summary files of a preloaded non-Python run:
# it must exit 0 and print at least one analysed per-step line (not only skipped ones).
# usage: analyze_summary_dir.sh CLI SUMMARY_DIR OUT_DIR
set -u
cli=$1
dir=$2
out=$3
lines=$("$cli" analyze-dir "$dir" --out "$out")
rc=$?
printf '%s\n' "$lines"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: straggler-probe analyze-dir exited with $rc"
  exit 1
fi
if ! printf '%s\n' "$lines" | grep -q '^straggler_probe step=[0-9]* time='; then
  echo "FAIL: no analysed step line"
  exit 1
fi
for f in report.json timeline.json heatmap.svg straggler_probe_steps.jsonl; do
  if [ ! -s "$out/$f" ]; then
    echo "FAIL: $out/$f not written"
    exit 1
  fi
done
echo "ok"
