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

# Reliability (issue 8), with clang: the whole suite again, built with
# AddressSanitizer + UndefinedBehaviorSanitizer (its ctest adds a short run
# of each fuzzer, fuzz_*_smoke), then the concurrency test built with
# ThreadSanitizer, on the goldens made above. TARN_SANITIZERS=0 skips both.
if [ "${TARN_SANITIZERS:-1}" != 0 ]; then
  goldens=$(cd "$build" && pwd)/tests/goldens
  asan=${TARN_ASAN_BUILD_DIR:-$build-asan}
  CC=clang CXX=clang++ cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTARN_SANITIZE=address,undefined -DTARN_FUZZ=ON -DTARN_BUILD_BENCH=OFF
  cmake --build "$asan" -j"$(nproc)"
  # Not under sanitizers: install_and_consume links the installed static
  # libraries into consumers built without them; speech_long_stream bounds
  # the resident set, which the sanitizer's allocator grows by design (both
  # run in the build above).
  ctest --test-dir "$asan" -j"$(nproc)" --output-on-failure \
    -E '^(install_and_consume|speech_long_stream)$'
  tsan=${TARN_TSAN_BUILD_DIR:-$build-tsan}
  CC=clang CXX=clang++ cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTARN_SANITIZE=thread -DTARN_BUILD_BENCH=OFF
  cmake --build "$tsan" -j"$(nproc)" --target tarn_concurrency_test
  TARN_GOLDENS="$goldens" "$tsan/tests/reliability/tarn_concurrency_test"
fi
