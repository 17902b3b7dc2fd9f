// LayerNorm (layer_norm.h): one block per row; each thread keeps Welford
// statistics of its strided elements, the block merges them (warp shuffles,
// then across warps), so the row is read once for the statistics.
#include "runtime/cuda/kernels/layer_norm.h"

namespace tarn {
namespace cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int kWarp = 32;

__device__ __forceinline__ RowStats ShuffleStats(RowStats s, int offset) {
  RowStats o;
  o.count = __shfl_xor_sync(0xffffffffu, s.count, offset);
  o.mean = __shfl_xor_sync(0xffffffffu, s.mean, offset);
  o.m2 = __shfl_xor_sync(0xffffffffu, s.m2, offset);
  return o;
}

// The statistics of the whole row, to every thread.
__device__ RowStats BlockStats(RowStats s) {
  __shared__ RowStats warp_stats[kNormThreads / kWarp];
  __shared__ RowStats row;
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    s = MergeStats(s, ShuffleStats(s, offset));
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) warp_stats[warp] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    RowStats all = warp_stats[0];
    for (int w = 1; w < static_cast<int>(blockDim.x) / kWarp; ++w)
      all = MergeStats(all, warp_stats[w]);
    row = all;
  }
  __syncthreads();
  return row;
}

// With `residual`, x += residual first (each thread its own elements).
__global__ void __launch_bounds__(kNormThreads)
    LayerNormKernel(int n, float* x, const float* residual, const float* gamma,
                    const float* beta, float eps, float* y) {
  const size_t base = size_t(blockIdx.x) * n;
  float* xr = x + base;
  const int t = threadIdx.x, threads = blockDim.x;
  if (residual != nullptr) {
    for (int i = t; i < n; i += threads) xr[i] += residual[base + i];
  }
  const RowStats s = BlockStats(ThreadStats(t, threads, n, xr));
  const float inv_std = InverseStd(s, eps);
  for (int i = t; i < n; i += threads)
    y[base + i] = Normalize(xr[i], s.mean, inv_std, gamma[i], beta[i]);
}

__global__ void AddKernel(size_t count, const float* a, const float* b,
                          float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = a[i] + b[i];
}

KernelStatus Norm(const char* name, cudaStream_t stream, size_t rows, size_t n,
                  float* x, const float* residual, const float* gamma,
                  const float* beta, float eps, float* y) {
  if (n == 0 || n > 0x7fffffffu || rows > 0x7fffffffu) {
    return KernelStatus::Error(std::string(name) + ": rows of " +
                               std::to_string(n) + " (of " +
                               std::to_string(rows) + " rows) are unsupported");
  }
  if (rows == 0) return KernelStatus::Ok();
  if (x == nullptr || gamma == nullptr || beta == nullptr || y == nullptr) {
    return KernelStatus::Error(std::string(name) + ": a null buffer");
  }
  // Whole warps, no more than the row needs.
  int threads = static_cast<int>((n + kWarp - 1) / kWarp) * kWarp;
  if (threads > kNormThreads) threads = kNormThreads;
  LayerNormKernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(
      static_cast<int>(n), x, residual, gamma, beta, eps, y);
  return KernelStatus::FromCuda(cudaGetLastError(), name);
}

}  // namespace

KernelStatus LayerNorm(cudaStream_t stream, size_t rows, size_t n,
                       const float* x, const float* gamma, const float* beta,
                       float eps, float* y) {
  // Without a residual the kernel only reads x.
  return Norm("LayerNorm", stream, rows, n, const_cast<float*>(x), nullptr,
              gamma, beta, eps, y);
}

KernelStatus AddLayerNorm(cudaStream_t stream, size_t rows, size_t n, float* x,
                          const float* residual, const float* gamma,
                          const float* beta, float eps, float* y) {
  if (residual == nullptr) return KernelStatus::Error("AddLayerNorm: null");
  return Norm("AddLayerNorm", stream, rows, n, x, residual, gamma, beta, eps,
              y);
}

KernelStatus Add(cudaStream_t stream, size_t count, const float* a,
                 const float* b, float* y) {
  if (count == 0) return KernelStatus::Ok();
  if (a == nullptr || b == nullptr || y == nullptr) {
    return KernelStatus::Error("Add: a null buffer");
  }
  const size_t blocks = (count + 255) / 256;
  AddKernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0,
              stream>>>(count, a, b, y);
  return KernelStatus::FromCuda(cudaGetLastError(), "Add");
}

}  // namespace cuda
}  // namespace tarn
