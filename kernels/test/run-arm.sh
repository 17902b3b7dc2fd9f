#!/usr/bin/env bash
# Cross-builds the kernels for AArch64 and runs their tests under qemu-user,
# so the NEON variants are exercised on an x86 machine.
#   kernels/test/run-arm.sh [build-dir] [gtest args...]
# Needs g++-aarch64-linux-gnu, qemu-user and libgtest-dev (for its sources);
# exits 77 (ctest's SKIP_RETURN_CODE convention) when one is missing.
set -euo pipefail

for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  if ! command -v "$tool" >/dev/null; then
    echo "run-arm.sh: $tool not found; skipping the AArch64 kernel tests" >&2
    exit 77
  fi
done
if [ ! -f /usr/src/googletest/CMakeLists.txt ]; then
  echo "run-arm.sh: /usr/src/googletest missing (libgtest-dev); skipping" >&2
  exit 77
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${TMPDIR:-/tmp}/tarn-kernels-arm}"
shift || true

cmake -S "$repo/kernels" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"
# qemu's default CPU has the dot-product extension: its variant must be
# there (another CPU, QEMU_CPU, may lack it; and /proc/cpuinfo is the host's).
if [ -z "${QEMU_CPU:-}" ]; then
  export TARN_EXPECT_VARIANTS=${TARN_EXPECT_VARIANTS:-neon,neondot}
fi
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$build/tarn_kernels_test" "$@"
