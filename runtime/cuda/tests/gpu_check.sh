#!/usr/bin/env bash
# The CUDA backend's checks on a machine with a GPU, from binaries built
# elsewhere (-DTARN_CUDA=ON): the kernels and backend tests, the benchmark at
# B = 1, 64, 1024 (MNIST shape, FP32 and TF32), and compute-sanitizer's
# memcheck and racecheck over the kernels test when it is installed
# (RACECHECK=0 skips the racecheck, a minute or more).
#
#   runtime/cuda/tests/gpu_check.sh BIN_DIR GOLDENS_DIR LOG_DIR
#
# BIN_DIR holds tarn_cuda_{kernels,backend,logic}_test and tarn_cuda_bench
# (and, in BIN_DIR/lib, any shared library the GPU machine lacks);
# GOLDENS_DIR is a build's tests/goldens. Every log lands in LOG_DIR; the
# exit status is the number of steps that failed. A step that saw no CUDA
# device fails here, where the tests and the benchmark skip it and exit 0.
set -u
bin=$1 goldens=$2 logs=$3
mkdir -p "$logs"
cuda_lib=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/lib64
export LD_LIBRARY_PATH="$bin/lib:$cuda_lib:${LD_LIBRARY_PATH:-}"
failed=0
step() { # step NAME SECONDS COMMAND...: runs it, logs it, counts a failure
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS
  timeout "$seconds" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  if [ $rc = 0 ] && grep -q "no CUDA device" "$logs/$name.log"; then
    echo "$name: no CUDA device"
    rc=1
  fi
  echo "$name: exit $rc in $((SECONDS - start)) s"
  if [ $rc != 0 ]; then
    failed=$((failed + 1))
    tail -n 30 "$logs/$name.log"
  fi
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv >"$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"
step logic 60 "$bin/tarn_cuda_logic_test"
step kernels 120 "$bin/tarn_cuda_kernels_test"
step backend 180 env TARN_GOLDENS="$goldens" "$bin/tarn_cuda_backend_test"
step bench 120 "$bin/tarn_cuda_bench" --streams 1,64,1024
step bench_tf32 120 "$bin/tarn_cuda_bench" --streams 1,64,1024 --tf32
grep -v '^$' "$logs/bench.log" | tail -n 12
if command -v compute-sanitizer >/dev/null 2>&1; then
  step memcheck 240 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$bin/tarn_cuda_kernels_test"
  if [ "${RACECHECK:-1}" != 0 ]; then
    step racecheck 240 compute-sanitizer --tool racecheck --error-exitcode 1 \
      "$bin/tarn_cuda_kernels_test"
  fi
fi
exit $failed
