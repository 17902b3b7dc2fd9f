#!/usr/bin/env bash
# Cross-builds the kernels for AArch64 and runs their tests under qemu-user,
# so the NEON variants are exercised on an x86 machine.
#   kernels/test/run-arm.sh [build-dir] [gtest args...]
# Needs g++-aarch64-linux-gnu, qemu-user and libgtest-dev (for its sources).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${TMPDIR:-/tmp}/tarn-kernels-arm}"
shift || true

cmake -S "$repo/kernels" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$build/tarn_kernels_test" "$@"
