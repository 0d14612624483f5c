#!/usr/bin/env bash
# Installs what straggler_probe needs on a fresh Debian 12 machine, idempotently and quietly:
# the Debian build packages, then a virtualenv (.venv) with PyTorch, pybind11, pytest, pyarrow
# and scikit-build-core. Safe to run again: it skips whatever is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# prometheus: tests/python/test_metrics.py scrapes the demo with a server of its own (own port and data).
# chromium: tests/python/test_html_report.py opens report.html in it, headless.
DEB_PACKAGES=(cmake ninja-build g++ zlib1g-dev libdeflate-dev libspdlog-dev libgtest-dev nlohmann-json3-dev libcli11-dev libbenchmark-dev prometheus chromium)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.straggler_probe_deps
reqs=requirements.txt
nodeps=requirements-nodeps.txt
if [ ! -f "$stamp" ] || [ "$reqs" -nt "$stamp" ] || [ "$nodeps" -nt "$stamp" ]; then
  echo "setup: installing Python packages from $reqs (PyTorch is large: this takes a while once)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  # DeepSpeed (framework tests) builds from source: its compiled ops are for GPUs, not wanted here
  DS_BUILD_OPS=0 .venv/bin/python -m pip install -q --disable-pip-version-check -r "$reqs"
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r "$nodeps"
  touch "$stamp"
fi
echo "setup: ready"
