#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tarn and runs every test:
# the C++ tests, the Python tests and the golden comparisons (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# Every CMake build below, and those the tests and pip start, with Ninja:
# make leaves a core idle at each target's link, Ninja goes on compiling.
export CMAKE_GENERATOR=Ninja
# The Python package (issue 16): `pip install .` builds the core, speech and
# the extension only (pyproject.toml) into the project's venv, which also
# sees Debian's numpy, torch and pytest; ctest runs its tests
# (pytest_python_api) from there. Then Ray Data for the batch example
# (examples/batch/, test pytest_ray_batch), held to Debian's numpy (which
# torch and scipy were built with) and to a pyarrow that runs on it. Both run
# beside the main build (their downloads and pip's own steps leave the cores
# idle); ctest waits for them.
/usr/bin/python3 -m venv --system-site-packages .venv
numpy_version=$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')
python_log=$(mktemp)
(
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) .venv/bin/pip install --quiet . &&
    .venv/bin/pip install --quiet "ray[data]==2.60.0" "numpy==$numpy_version" "pyarrow<21"
) >"$python_log" 2>&1 &
python_setup=$!
# With nvcc present the same build adds the CUDA backend (-DTARN_CUDA=ON,
# issue 7) and its tests (label `cuda`), so the core is compiled once; without
# a GPU the CUDA tests report SKIPPED ("no CUDA device"). The builds without
# CUDA are the package's above, the sanitizers' below and the subproject and
# install tests'.
cuda=OFF
if command -v nvcc >/dev/null 2>&1; then cuda=ON; fi
build=${TARN_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTARN_BUILD_TESTS=ON -DTARN_BUILD_BENCH=ON \
  -DTARN_CUDA=$cuda
cmake --build "$build" -j"$(nproc)"
if ! wait "$python_setup"; then
  cat "$python_log"
  echo "test.sh: installing the Python package or Ray into .venv failed (above)" >&2
  exit 1
fi
cat "$python_log"
rm -f "$python_log"
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure

# Reliability (issue 8), with clang: the whole suite again, built with
# AddressSanitizer + UndefinedBehaviorSanitizer (its ctest adds a short run
# of each fuzzer, fuzz_*_smoke), then the concurrency test built with
# ThreadSanitizer. Both read the goldens made above (the PyTorch reference
# is not rebuilt, so making them again would check nothing new: -FS).
# TARN_SANITIZERS=0 skips both.
if [ "${TARN_SANITIZERS:-1}" != 0 ]; then
  goldens=$(cd "$build" && pwd)/tests/goldens
  asan=${TARN_ASAN_BUILD_DIR:-$build-asan}
  CC=clang CXX=clang++ cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTARN_SANITIZE=address,undefined -DTARN_FUZZ=ON -DTARN_BUILD_BENCH=OFF \
    -DTARN_GOLDENS="$goldens"
  cmake --build "$asan" -j"$(nproc)"
  # Left to the build above, where they ran:
  # - install_and_consume links the installed static libraries into
  #   consumers built without sanitizers; subproject_consumer builds the
  #   core again, without them;
  # - speech_long_stream bounds the resident set, which the sanitizer's
  #   allocator grows by design;
  # - drift_long_stream and drift_state_compensated repeat one model's step
  #   a million times against fp64 sums: numerics, which the sanitizers do
  #   not change; the same step runs here in drift_agrees_* and the goldens;
  # - tarn_kernels_neon_qemu cross-builds the kernels with aarch64 g++,
  #   without sanitizers, and runs them under qemu: the same run again;
  # - goldens_kernels_* rerun the model goldens with each kernel variant
  #   forced (minutes each under ASan): here every variant this CPU has runs
  #   under the sanitizers in tarn_kernels_test (sizes around each tile),
  #   and the model goldens once, in pytest, with the variant it picks;
  # - pytest_python_api and pytest_ray_batch compare the package pip built
  #   with gcc above with this build's CLI, another compiler's;
  # - golden_* make the goldens with PyTorch alone (-FS keeps ctest from
  #   adding them, -E from running them for being in the test set), and
  #   pytest_converter tests Python alone.
  ctest --test-dir "$asan" -j"$(nproc)" --output-on-failure -FS goldens \
    -E '^(golden_.*|pytest_converter|drift_long_stream|drift_state_compensated|install_and_consume|subproject_consumer|speech_long_stream|pytest_python_api|pytest_ray_batch|tarn_kernels_neon_qemu|goldens_kernels_.*)$'
  tsan=${TARN_TSAN_BUILD_DIR:-$build-tsan}
  CC=clang CXX=clang++ cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTARN_SANITIZE=thread -DTARN_BUILD_BENCH=OFF
  cmake --build "$tsan" -j"$(nproc)" --target tarn_concurrency_test
  TARN_GOLDENS="$goldens" "$tsan/tests/reliability/tarn_concurrency_test"
fi
