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

# The optional CUDA build (-DTARN_CUDA=ON, issue 7) whenever nvcc is present:
# a second configure that builds only the CUDA targets (and the runtime they
# need) and runs their tests (label `cuda`), on the goldens made above.
# Without a GPU the CUDA tests report SKIPPED ("no CUDA device").
if command -v nvcc >/dev/null 2>&1; then
  cuda_build=${TARN_CUDA_BUILD_DIR:-$build-cuda}
  goldens=$(cd "$build" && pwd)/tests/goldens
  cmake -S . -B "$cuda_build" -DCMAKE_BUILD_TYPE=Release -DTARN_CUDA=ON \
    -DTARN_CUDA_GOLDENS="$goldens"
  cmake --build "$cuda_build" -j"$(nproc)" --target tarn_cuda_logic_test \
    tarn_cuda_kernels_test tarn_cuda_backend_test tarn_cuda_bench
  ctest --test-dir "$cuda_build" -L cuda -j"$(nproc)" --output-on-failure
fi
