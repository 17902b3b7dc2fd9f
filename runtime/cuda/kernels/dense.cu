// Dense layers (dense.h). cuBLAS is column-major: the row-major y [rows][out]
// is its out x rows matrix, y = W x^T with W^T stored as an in x out
// column-major matrix, hence op(A) = transpose.
#include <climits>
#include <cstdint>

#include "runtime/cuda/kernels/activation.h"
#include "runtime/cuda/kernels/block.cuh"
#include "runtime/cuda/kernels/dense.h"

namespace tarn {
namespace cuda {
namespace {

// Up to this many rows a dense layer is one kernel of our own, not cuBLAS.
constexpr size_t kSmallRows = 8;
// 64, 128 and 256 threads a block measured alike on an H100.
constexpr int kSmallThreads = 128, kWarp = 32;

// A few rows (a step of a few streams): a warp per output reads that
// output's weight row once, coalesced (16 bytes a lane where rows are whole
// float4s), for every row of x, and adds the bias and applies the
// activation itself. cuBLAS's GEMV and the separate bias kernel are two
// launches of a few microseconds each, for 1 MB of weights the GPU reads in
// under one.
template <bool kFloat4>
__global__ void __launch_bounds__(kSmallThreads)
    SmallDenseKernel(int rows, int inputs, int outputs, const float* x,
                     const float* weight, const float* bias, ActivationKind act,
                     float* y) {
  const int lane = threadIdx.x % kWarp;
  const int o = blockIdx.x * (kSmallThreads / kWarp) + threadIdx.x / kWarp;
  if (o >= outputs) return;
  const float* w = weight + size_t(o) * inputs;
  float sum[kSmallRows] = {};
  if (kFloat4) {
    const int quads = inputs / 4;
    for (int i = lane; i < quads; i += kWarp) {
      const float4 wi = __ldg(reinterpret_cast<const float4*>(w) + i);
#pragma unroll
      for (int r = 0; r < int(kSmallRows); ++r) {
        if (r >= rows) break;
        const float4 xi =
            __ldg(reinterpret_cast<const float4*>(x + size_t(r) * inputs) + i);
        sum[r] = fmaf(wi.x, xi.x, sum[r]);
        sum[r] = fmaf(wi.y, xi.y, sum[r]);
        sum[r] = fmaf(wi.z, xi.z, sum[r]);
        sum[r] = fmaf(wi.w, xi.w, sum[r]);
      }
    }
  } else {
    for (int i = lane; i < inputs; i += kWarp) {
      const float wi = __ldg(w + i);
#pragma unroll
      for (int r = 0; r < int(kSmallRows); ++r) {
        if (r >= rows) break;
        sum[r] = fmaf(wi, __ldg(x + size_t(r) * inputs + i), sum[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < int(kSmallRows); ++r) {
    if (r >= rows) break;  // the same for the whole warp
    sum[r] = device::WarpSum(sum[r]);
  }
  if (lane != 0) return;
  const float b = bias != nullptr ? bias[o] : 0.0f;
  for (int r = 0; r < rows; ++r)
    y[size_t(r) * outputs + o] = Activate(act, sum[r] + b);
}

}  // namespace

KernelStatus FromCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return KernelStatus::Ok();
  return KernelStatus::Error(std::string(what) + ": " +
                             cublasGetStatusName(status) + ": " +
                             cublasGetStatusString(status));
}

KernelStatus Dense(cublasHandle_t handle, cudaStream_t stream, size_t rows,
                   size_t inputs, size_t outputs, const float* x,
                   const float* weight, const float* bias, ActivationKind act,
                   float* y) {
  if (rows > INT_MAX || inputs > INT_MAX || outputs > INT_MAX || inputs == 0 ||
      outputs == 0) {
    return KernelStatus::Error("Dense: " + std::to_string(rows) + " rows of " +
                               std::to_string(inputs) + " -> " +
                               std::to_string(outputs) +
                               " exceed cuBLAS's int sizes or are empty");
  }
  if (rows == 0) return KernelStatus::Ok();
  if (handle == nullptr || x == nullptr || weight == nullptr || y == nullptr) {
    return KernelStatus::Error("Dense: a null handle or buffer");
  }
  if (rows <= kSmallRows) {
    const int warps = kSmallThreads / kWarp;
    const unsigned blocks =
        static_cast<unsigned>((outputs + warps - 1) / warps);
    const auto aligned = [](const float* p) {
      return reinterpret_cast<uintptr_t>(p) % 16 == 0;
    };
    const auto kernel = inputs % 4 == 0 && aligned(x) && aligned(weight)
                            ? SmallDenseKernel<true>
                            : SmallDenseKernel<false>;
    kernel<<<blocks, kSmallThreads, 0, stream>>>(
        static_cast<int>(rows), static_cast<int>(inputs),
        static_cast<int>(outputs), x, weight, bias, act, y);
    return KernelStatus::FromCuda(cudaGetLastError(), "Dense (small)");
  }
  // Setting the stream resets cuBLAS's workspace to its default pool (which
  // may allocate, refused while a step is captured): only when it changes.
  cudaStream_t current = nullptr;
  KernelStatus status =
      FromCublas(cublasGetStream(handle, &current), "Dense: cublasGetStream");
  if (status.ok() && current != stream) {
    status =
        FromCublas(cublasSetStream(handle, stream), "Dense: cublasSetStream");
  }
  if (!status.ok()) return status;
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(outputs), n = static_cast<int>(rows),
            k = static_cast<int>(inputs);
  status = FromCublas(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k,
                                  &one, weight, k, x, k, &zero, y, m),
                      "Dense: cublasSgemm");
  if (!status.ok()) return status;
  return BiasActivation(stream, rows, outputs, bias, act, y);
}

}  // namespace cuda
}  // namespace tarn
