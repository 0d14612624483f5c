#!/usr/bin/env bash
# Stages everything the bare, offline GPU machine needs for tests/gpu/run.sh into ONE git-ignored
# folder, .gpu-stage/ (at most 64 MiB with the working tree; the device tool carries it), and
# prints the exact device call. Runs here, on the development machine (Debian 12, network to
# Debian's registry).
#
#   .gpu-stage/prefix/   Debian's dev packages, downloaded with `apt-get download` and unpacked
#                        (dpkg-deb -x): spdlog, fmt, nlohmann-json, CLI11, zlib headers and the
#                        small shared libraries their CMake configs name; the device image has
#                        none of them. GoogleTest is not staged: run.sh builds no tests.
#   .gpu-stage/lib/      libstraggler_probe.so built here (+ straggler_probe_autoload/), the
#                        fallback when the build on the device fails.
#   .gpu-stage/MANIFEST  what is there, with versions and sizes.
# The device builds the library and the Python 3.12 extension itself against prefix/ (run.sh);
# the image brings nvcc 13.0, CMake, ninja, Python 3.12 with torch, pybind11 and pytest.
#
# Usage: tests/gpu/prepare.sh [--no-build]   (--no-build: stage the library already in build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
STAGE=$ROOT/.gpu-stage
LIMIT_MIB=64
DEBS=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev zlib1g-dev zlib1g)

say() { echo "[prepare] $*"; }

if ! git check-ignore -q "$STAGE/MANIFEST"; then
  echo "[prepare] .gpu-stage/ is not git-ignored (.gitignore): refusing to stage into the tree" >&2
  exit 2
fi

# 1. The library, built here (Release, as scripts/build.sh configures it).
if [ "${1:-}" != "--no-build" ]; then
  say "building libstraggler_probe.so (build/)"
  nice -n 15 ./scripts/build.sh --target straggler_probe >/dev/null
fi
LIB=$ROOT/build/runtime/libstraggler_probe.so
[ -f "$LIB" ] || { echo "[prepare] $LIB missing (run without --no-build)" >&2; exit 3; }

rm -rf "$STAGE"
mkdir -p "$STAGE/debs" "$STAGE/prefix" "$STAGE/lib"

# 2. Debian's dev packages as .debs, unpacked into the prefix.
say "downloading ${DEBS[*]}"
(cd "$STAGE/debs" && apt-get download "${DEBS[@]}" >/dev/null 2>"$STAGE/debs/apt.log") || {
  cat "$STAGE/debs/apt.log" >&2
  echo "[prepare] apt-get download failed (run 'apt-get update' first?)" >&2
  exit 4
}
: >"$STAGE/debs.list"
for deb in "$STAGE"/debs/*.deb; do
  dpkg-deb -x "$deb" "$STAGE/prefix"
  echo "deb $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$STAGE/debs.list"
done
# zlib1g-dev's libz.so points at /lib/...: make it point inside the prefix.
ln -sfn ../../../lib/x86_64-linux-gnu/libz.so.1 "$STAGE/prefix/usr/lib/x86_64-linux-gnu/libz.so"
rm -rf "$STAGE/prefix/usr/share/doc" "$STAGE/prefix/usr/share/lintian" "$STAGE/debs"

# 3. The library built here, with what sits next to it.
cp -a "$LIB" "$STAGE/lib/"
cp -a "$(dirname "$LIB")/straggler_probe_autoload" "$STAGE/lib/"

# 4. Manifest and size: the stage travels with the working tree (tracked and untracked files).
{
  echo "# .gpu-stage, made $(date -u +%FT%TZ) by tests/gpu/prepare.sh from $(git rev-parse --short HEAD)"
  cat "$STAGE/debs.list"
  echo "lib $(basename "$LIB") $(stat -c %s "$LIB") bytes, built with $(c++ --version | head -1)"
} >"$STAGE/MANIFEST"
rm -f "$STAGE/debs.list"
stage_bytes=$(du -sb "$STAGE" | cut -f1)
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$((stage_bytes + tree_bytes))
say "staged $(numfmt --to=iec "$stage_bytes") in .gpu-stage/; with the working tree $(numfmt --to=iec "$total") (limit ${LIMIT_MIB} MiB)"
if [ "$total" -gt $((LIMIT_MIB * 1024 * 1024)) ]; then
  echo "[prepare] over the ${LIMIT_MIB} MiB the device tool carries" >&2
  exit 5
fi
echo "$stage_bytes" >"$STAGE/SIZE_BYTES"

cat <<EOF
[prepare] ready. The device check, as one call of the device tool (from this checkout's root):
  run(command="bash tests/gpu/run.sh", carry=[".gpu-stage"], timeout_s=330)
  (run.sh's own timeouts add up to 295 s; 330 leaves room for the start and the transfer, and
  two such runs fit a 15-minute device budget.) Figures come back in \$OUT: gpu_figures.json
  (rewritten after each check), gpu_checks.log, and the jobs' own outputs (sp_out_*/).
  Rehearse it here first (no GPU, Debian's dev packages hidden): bash tests/gpu/rehearse.sh
EOF
