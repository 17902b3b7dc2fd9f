#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tarn and runs every test:
# the C++ tests, the Python tests and the golden comparisons (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${TARN_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure
