#!/bin/sh
# run.sh TARN_SOURCE_DIR WORK_DIR MODEL
#
# Configures tests/packaging/subproject (an app that add_subdirectory()s
# tarn) with every dependency of tarn's apps, tests and benchmarks disabled,
# builds everything it builds by default, and steps MODEL with it. The
# dependencies found by find_path/find_library rather than find_package
# (libsndfile for the CLI, XNNPACK for bench/) sit behind TARN_BUILD_CLI and
# TARN_BUILD_BENCH: the cache must not mention them.
set -eu
src=$1 work=$2 model=$3

rm -rf "$work"
disabled=
for package in CLI11 nlohmann_json PNG ZLIB GTest benchmark kissfft \
               CUDAToolkit Python3 Python; do
  disabled="$disabled -DCMAKE_DISABLE_FIND_PACKAGE_$package=ON"
done
echo "== configure (no build type; disabled:$disabled)"
# shellcheck disable=SC2086
cmake -S "$src/tests/packaging/subproject" -B "$work" \
  -DTARN_SOURCE_DIR="$src" $disabled > "$work.configure.log" 2>&1 ||
  { cat "$work.configure.log"; exit 1; }
if grep -inE '^(SNDFILE|xnnpack|benchmark|GTest|kissfft|CLI11|nlohmann|PNG|ZLIB)[A-Za-z_]*:' \
    "$work/CMakeCache.txt"; then
  echo "the subproject build looked for an app dependency (above)" >&2
  exit 1
fi
echo "== build"
cmake --build "$work" > "$work.build.log" 2>&1 ||
  { tail -n 50 "$work.build.log"; exit 1; }
echo "== run"
"$work/step_model" "$model"
